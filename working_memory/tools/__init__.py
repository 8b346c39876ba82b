"""Offline tools: rosbag2 reading/writing, wm-inspect and its report, and the recorder node.

Only recorder_node needs rclpy: `pip install working_memory[tools]` is enough to inspect a bag.
"""
