"""Message fields the mission node reads beyond ros/conversions.py: odometry heading, array params."""

from __future__ import annotations

import math

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.parameter import Parameter

from working_memory.ros.conversions import pose_from_odometry


def planar_pose_from_odometry(msg, map_frame: str) -> tuple[float, float, float]:
    """Return (x [m], y [m], yaw [rad]) of a nav_msgs/Odometry given in `map_frame`."""
    x, y = pose_from_odometry(msg, map_frame)
    q = msg.pose.pose.orientation
    if not all(math.isfinite(c) for c in (q.x, q.y, q.z, q.w)):
        raise ValueError(f'odom: pose.orientation must be finite, got ({q.x}, {q.y}, {q.z}, {q.w})')
    # Heading about z of a unit quaternion (roll and pitch are ignored on a planar robot).
    yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
    return x, y, yaw


def declare_double_array(node, name: str, default: list[float], description: str) -> list[float]:
    """Declare a read-only double-array parameter (launch overrides win); return its value."""
    descriptor = ParameterDescriptor(name=name, type=Parameter.Type.DOUBLE_ARRAY.value,
                                     description=description, read_only=True)
    return list(node.declare_parameter(name, default, descriptor).value)
