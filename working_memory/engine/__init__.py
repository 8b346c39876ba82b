"""The working-memory engine: what each input does to the memory and what a tick is (no ROS)."""
