"""What the RViz2 / Foxglove views show of one frame: pose, route, zones, goals, doors, windows.

Pure (no message types): `views.py` turns a Scene into nav_msgs / visualization_msgs.
Values are read the way the delivery world's board keys carry them (docs/DELIVERY_WORLD.md):
`pose` {x, y, yaw}, `route` {waypoints}, `safety:zone/*` {polygon}, `goal:*` and `door:*`
{x, y, state}; anything else, or a malformed value, is simply not drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from working_memory.core.frames import Frame
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import EventKind

POSE_KEY = 'pose'
ROUTE_KEY = 'route'
ZONE_PREFIX = 'safety:zone/'
GOAL_PREFIX = 'goal:'
DOOR_PREFIX = 'door:'
NOTE_LIMIT = 4   # missing items / alarms per cabin note


@dataclass(frozen=True, slots=True)
class Place:
    """A named point of the world [m]; `state` e.g. 'open' / 'closed' for a door."""

    key: str
    x: float
    y: float
    state: str = ''


@dataclass(frozen=True)
class Scene:
    """One frame as drawable geometry [m, rad] and one text note per cabin."""

    stamp: float
    pose: tuple[float, float, float] | None
    route: tuple[tuple[float, float], ...]
    zones: tuple[tuple[str, tuple[tuple[float, float], ...]], ...]
    goals: tuple[Place, ...]
    doors: tuple[Place, ...]
    windows: Mapping[str, MapWindow | None]
    notes: Mapping[str, str]
    alarm: bool


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _point(value: Any) -> tuple[float, float] | None:
    """Return (x, y) of [x, y] or {x, y}, None when it is neither."""
    if isinstance(value, Mapping):
        value = (value.get('x'), value.get('y'))
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        return None
    x, y = _number(value[0]), _number(value[1])
    return None if x is None or y is None else (x, y)


def _points(values: Any) -> tuple[tuple[float, float], ...]:
    if not isinstance(values, (list, tuple)):
        return ()
    points = tuple(_point(value) for value in values)
    return () if any(point is None for point in points) else points


def cabin_note(cabin: str, pack) -> str:
    """Return e.g. 'planner: missing safety:* INJECTED_DROP; ALARM constraint_validation'."""
    parts = [f'missing {m.key} {m.reason.value}' for m in pack.missing]
    parts += [f'ALARM {event.key}' for event in pack.events if event.kind is EventKind.ALARM]
    shown = parts[:NOTE_LIMIT] + ([f'+{len(parts) - NOTE_LIMIT} more']
                                  if len(parts) > NOTE_LIMIT else [])
    return f'{cabin}: ' + ('; '.join(shown) if shown else 'ok')


def scene_from_frame(frame: Frame, pose: tuple[float, float] | None = None) -> Scene:
    """Return what to draw of `frame`; `pose` (x, y) [m] from a pose topic wins over the board's."""
    values: dict[str, Any] = {}
    for pack in frame.packs.values():
        for item in pack.items:
            values.setdefault(item.key, item.value)
    board_pose = values.get(POSE_KEY)
    yaw = _number(board_pose.get('yaw', 0.0)) if isinstance(board_pose, Mapping) else None
    xy = pose if pose is not None else _point(board_pose)
    route = values.get(ROUTE_KEY)
    zones = tuple((key, polygon) for key, value in sorted(values.items())
                  if key.startswith(ZONE_PREFIX) and isinstance(value, Mapping)
                  and len(polygon := _points(value.get('polygon'))) >= 3)
    return Scene(
        stamp=frame.stamp,
        pose=None if xy is None else (xy[0], xy[1], yaw or 0.0),
        route=_points(route.get('waypoints')) if isinstance(route, Mapping) else (),
        zones=zones,
        goals=_places(values, GOAL_PREFIX),
        doors=_places(values, DOOR_PREFIX),
        windows={cabin: pack.map_window for cabin, pack in frame.packs.items()},
        notes={cabin: cabin_note(cabin, pack) for cabin, pack in frame.packs.items()},
        alarm=frame.capacity_alarm or any(event.kind is EventKind.ALARM
                                          for pack in frame.packs.values()
                                          for event in pack.events))


def _places(values: Mapping[str, Any], prefix: str) -> tuple[Place, ...]:
    places = []
    for key, value in sorted(values.items()):
        point = _point(value) if key.startswith(prefix) else None
        if point is not None:
            places.append(Place(key, *point, str(value.get('state', ''))))
    return tuple(places)
