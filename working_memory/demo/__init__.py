"""The main job: the closed-loop delivery scenario and its command line (`make demo`)."""
