"""Message conversions of the reference decision nodes: DecisionStatus in and out, cmd_vel out.

Packs arrive through the client (ros/conversions.py reads ContextPack); this
module owns only the messages the reference cabins add. Input conversions raise
ValueError naming the message field at fault.
"""

from __future__ import annotations

import math
from typing import Any

from geometry_msgs.msg import Twist

from working_memory.msg import DecisionStatus
from working_memory.ros.conversions import json_field, json_text, time_from_seconds


def decision_status_msg(cabin: str, tick: int, digest: str, decision: str, detail: Any,
                        stamp: float) -> DecisionStatus:
    """Return a DecisionStatus at `stamp` [s]; `detail` is JSON-able."""
    msg = DecisionStatus(cabin=cabin, tick=tick, digest=digest, decision=decision,
                         detail=json_text(detail))
    msg.header.stamp = time_from_seconds(stamp)
    return msg


def decision_status_from_msg(msg) -> tuple[str, int, str, str]:
    """Return (cabin, tick, digest, decision) of a DecisionStatus, ValueError on an empty cabin."""
    if not msg.cabin:
        raise ValueError(f'status of tick {msg.tick}: cabin must not be empty')
    return msg.cabin, msg.tick, msg.digest, msg.decision


def decision_detail_from_msg(msg) -> Any:
    """Return the decoded JSON detail of a DecisionStatus (None when empty), ValueError if bad."""
    if not msg.detail:
        return None
    return json_field(msg.detail, f'status of {msg.cabin!r} tick {msg.tick}: detail')


def twist_msg(linear: float, angular: float) -> Twist:
    """Return (v [m/s], w [rad/s]) as a planar geometry_msgs/Twist."""
    if not (math.isfinite(linear) and math.isfinite(angular)):
        raise ValueError(f'cmd_vel: v and w must be finite, got {linear}, {angular}')
    msg = Twist()
    msg.linear.x, msg.angular.z = float(linear), float(angular)
    return msg
