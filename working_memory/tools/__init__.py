"""Offline tools: rosbag2 reading/writing of working-memory topics and the wm-inspect CLI.

Nothing here needs rclpy: `pip install working_memory[tools]` is enough to inspect a bag.
"""
