"""The product's ROS face: the working-memory lifecycle node, its parameters, diagnostics, QoS."""
