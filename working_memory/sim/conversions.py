"""Message conversions only the simulator uses: /clock, /odom, /cmd_vel, status.

The working_memory messages (board, log, map) convert through ros/conversions.py,
as for every other board owner. Input conversions raise ValueError naming the
field at fault.
"""

from __future__ import annotations

import math
from typing import Any

from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from working_memory.ros.conversions import json_field, json_text, time_from_seconds


def clock_msg(seconds: float) -> Clock:
    """Return sim time [s] as a rosgraph_msgs/Clock."""
    return Clock(clock=time_from_seconds(seconds))


def odometry_msg(x: float, y: float, yaw: float, v: float, w: float, stamp: float,
                 frame_id: str, child_frame_id: str) -> Odometry:
    """Return a planar pose ([m], yaw [rad]) and velocity (v [m/s], w [rad/s]) as Odometry."""
    msg = Odometry(child_frame_id=child_frame_id)
    msg.header.stamp = time_from_seconds(stamp)
    msg.header.frame_id = frame_id
    pose = msg.pose.pose
    pose.position.x, pose.position.y = x, y
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2.0), math.cos(yaw / 2.0)
    msg.twist.twist.linear.x, msg.twist.twist.angular.z = v, w
    return msg


def twist_from_msg(msg) -> tuple[float, float]:
    """Return (v [m/s], w [rad/s]) of a geometry_msgs/Twist, raising ValueError if not finite."""
    v, w = msg.linear.x, msg.angular.z
    if not (math.isfinite(v) and math.isfinite(w)):
        raise ValueError(f'cmd_vel: linear.x and angular.z must be finite, got {v}, {w}')
    return v, w


def json_string_msg(value: Any) -> String:
    """Return a JSON-able value as a std_msgs/String (canonical compact JSON)."""
    return String(data=json_text(value))


def json_from_string_msg(msg, what: str) -> Any:
    """Parse a std_msgs/String holding JSON, raising ValueError naming `what`."""
    return json_field(msg.data, what)
