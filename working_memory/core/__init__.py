"""Pure working-memory core: no rclpy or message imports."""
