"""The delivery world standing in for Gazebo: pure world and mission, and their nodes."""
