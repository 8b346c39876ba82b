"""Lightweight deterministic delivery world standing in for Gazebo (pure Python + numpy, no rclpy)."""
