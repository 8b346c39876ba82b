"""Message conversions of the client and the decision nodes: ContextPack in, status and cmd_vel out.

Kept apart from ros/conversions.py (the working-memory node's module, whose
event and grid readers it reuses) so the client side has one owner. Input
conversions raise ValueError naming the message field at fault.
"""

from __future__ import annotations

import math
from typing import Any

from geometry_msgs.msg import Twist

from working_memory.core.gridmap import MapWindow
from working_memory.core.items import Missing, MissingReason
from working_memory.core.pack_view import PackView
from working_memory.msg import ContextFrame, DecisionStatus, MissingItem
from working_memory.ros.conversions import (event_from_msg, grid_from_msg, json_field, json_text,
                                            seconds_from_time, time_from_seconds)

_REASON_FROM_MSG = {getattr(MissingItem, reason.value): reason for reason in MissingReason}


def pack_view_from_msg(msg, frame_digest: str | None) -> PackView:
    """Return a ContextPack as a PackView; `frame_digest` is the digest of its ContextFrame."""
    where = f'pack {msg.cabin!r} tick {msg.tick}'
    stamp = seconds_from_time(msg.header.stamp)
    values = {item.key: json_field(item.value, f'{where}: items[{item.key!r}].value')
              for item in msg.items}
    events = []
    for index, event in enumerate(msg.recent_events):
        try:
            events.append(event_from_msg(event, stamp))
        except ValueError as error:
            raise ValueError(f'{where}: recent_events[{index}] {error}') from None
    missing = []
    for item in msg.missing:
        reason = _REASON_FROM_MSG.get(item.reason)
        if reason is None:
            raise ValueError(f'{where}: missing[{item.key!r}].reason {item.reason} is not one of '
                             f'{sorted(_REASON_FROM_MSG)}')
        missing.append(Missing(item.key, reason, item.detail))
    window = None
    if msg.nearby_map.info.width and msg.nearby_map.info.height:
        try:
            grid = grid_from_msg(msg.nearby_map, msg.nearby_map.header.frame_id)
        except ValueError as error:
            raise ValueError(f'{where}: nearby_{error}') from None
        window = MapWindow(grid.data, grid.origin, grid.resolution)
    return PackView(cabin=msg.cabin, tick=msg.tick, stamp=stamp, digest=msg.digest,
                    frame_digest=frame_digest, values=values, events=tuple(events),
                    missing=tuple(missing), map_window=window)


def cabin_pack_from_frame(msg: ContextFrame, cabin: str) -> PackView | None:
    """Return `cabin`'s pack of a ContextFrame as a PackView, None when the frame has none."""
    for pack in msg.packs:
        if pack.cabin == cabin:
            if pack.tick != msg.tick:
                raise ValueError(f'frame tick {msg.tick}: pack {cabin!r} has tick {pack.tick}')
            return pack_view_from_msg(pack, msg.digest)
    return None


def frame_cabins(msg: ContextFrame) -> list[str]:
    """Return the cabin names of a ContextFrame's packs."""
    return [pack.cabin for pack in msg.packs]


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
