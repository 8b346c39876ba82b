"""The delivery mission as board entries and events: goal, high-voltage zone, door, pose.

Pure Python. The simulator and the mission node (for a real or Gazebo robot)
publish the same keys with the same importance, ttl and tags through this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from working_memory.core.items import BoardEntry, Event, EventKind

SOURCE = 'world'
DOOR_KEY = 'door:main'
GOAL_KEY = 'goal:deliver'
ZONE_KEY = 'safety:zone/high_voltage'
POSE_KEY = 'pose'
DOOR_STATES = ('closed', 'open')
POSE_TTL_S = 0.5


@dataclass(frozen=True, slots=True)
class Mission:
    """Where to deliver, what not to cross, and the door on the way; lengths [m]."""

    goal_x: float
    goal_y: float
    target: str
    goal_tags: tuple[str, ...]
    zone_polygon: tuple[tuple[float, float], ...]
    door_x: float
    door_y: float
    door_width: float
    door_state: str

    def __post_init__(self):
        numbers = {'goal_x': self.goal_x, 'goal_y': self.goal_y, 'door_x': self.door_x,
                   'door_y': self.door_y, 'door_width': self.door_width}
        for name, value in numbers.items():
            if not math.isfinite(value):
                raise ValueError(f'mission {name}: must be finite, got {value!r}')
        if not self.door_width > 0.0:
            raise ValueError(f'mission door_width: must be > 0 m, got {self.door_width!r}')
        if not self.target:
            raise ValueError('mission target: must not be empty')
        if self.door_state not in DOOR_STATES:
            raise ValueError(f'mission door_state: must be one of {", ".join(DOOR_STATES)}, '
                             f'got {self.door_state!r}')
        if len(self.zone_polygon) < 3:
            raise ValueError('mission zone_polygon: needs at least 3 vertices')
        if not all(math.isfinite(c) for vertex in self.zone_polygon for c in vertex):
            raise ValueError(f'mission zone_polygon: must be finite, got {self.zone_polygon!r}')

    def goal_value(self) -> dict:
        """Return the `goal:deliver` value."""
        return {'target': self.target, 'x': self.goal_x, 'y': self.goal_y,
                'tags': list(self.goal_tags)}

    def zone_value(self) -> dict:
        """Return the high-voltage zone value: its polygon [[x, y], ...]."""
        return {'polygon': [[x, y] for x, y in self.zone_polygon]}

    def door_value(self) -> dict:
        """Return the `door:main` value: state, centre and width."""
        return {'state': self.door_state, 'x': self.door_x, 'y': self.door_y,
                'width': self.door_width}

    def static_entries(self, now: float) -> list[BoardEntry]:
        """Return the board keys that change rarely: goal, zone and door, stamped `now` [s]."""
        return [
            BoardEntry(GOAL_KEY, self.goal_value(), now, 1.0, 0.0, ('delivery',)),
            BoardEntry(ZONE_KEY, self.zone_value(), now, 1.0, 0.0, ('safety', 'delivery')),
            BoardEntry(DOOR_KEY, self.door_value(), now, 0.7, 0.0, ('delivery', 'navigation')),
        ]

    def start_events(self, now: float) -> list[Event]:
        """Return the mission's opening events: the GOAL and the zone CONSTRAINT."""
        return [
            Event(stamp=now, kind=EventKind.GOAL, source=SOURCE, key=GOAL_KEY,
                  detail=self.goal_value(), importance=1.0, tags=('delivery',)),
            Event(stamp=now, kind=EventKind.CONSTRAINT, source=SOURCE, key=ZONE_KEY,
                  detail=self.zone_value(), importance=1.0, tags=('safety', 'delivery')),
        ]


def polygon_from_flat(values) -> tuple[tuple[float, float], ...]:
    """Return [x0, y0, x1, y1, ...] [m] as vertices, raising ValueError on an odd count."""
    values = [float(v) for v in values]
    if len(values) % 2:
        raise ValueError(f'mission zone_polygon: needs x, y pairs, got {len(values)} numbers')
    return tuple(zip(values[::2], values[1::2]))


def pose_entry(x: float, y: float, yaw: float, now: float) -> BoardEntry:
    """Return the `pose` board entry: position [m], heading [rad], ttl 0.5 s."""
    return BoardEntry(POSE_KEY, {'x': x, 'y': y, 'yaw': yaw}, now, 0.6, POSE_TTL_S,
                      ('navigation',))
