"""ROS 2 adapter: the only package that touches rclpy and message types."""
