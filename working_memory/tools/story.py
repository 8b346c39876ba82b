"""What a demo bag holds beyond frames: the true path, the map, the event log, the outcome.

Read with rosbags like `recording.py` (this module and that one are the tools code that
reads message fields). Every part is optional: a bag from `ros2 bag record` of the
frame topic alone gives an empty Story and the report says what it could not show.
Times are float seconds of ROS time (sim time in the demo).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from working_memory.tools.bag import BagReader
from working_memory.tools.recording import (ConstantNames, EVENT_TYPE, EventRecord, MapWindow,
                                            map_window, seconds)

ODOMETRY_TYPE = 'nav_msgs/msg/Odometry'
GRID_TYPE = 'nav_msgs/msg/OccupancyGrid'
STRING_TYPE = 'std_msgs/msg/String'
MAP_TOPIC = '/map'
LOG_TOPIC = '/log'
ODOM_TOPIC = '/odom'
SIM_STATUS_TOPIC = '/sim_world/status'
SETUP_PREFIX = 'working_memory.'


@dataclass(frozen=True)
class Story:
    """The run around the frames: setup, true path (t, x, y), map, events, last world status."""

    setup: Mapping[str, str] = field(default_factory=dict)
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    world_map: MapWindow | None = None
    events: tuple[EventRecord, ...] = ()
    world_status: Mapping[str, Any] = field(default_factory=dict)
    topics: Mapping[str, str] = field(default_factory=dict)

    def events_of(self, *kinds: str) -> tuple[EventRecord, ...]:
        """Return the logged events of `kinds`, oldest first."""
        return tuple(event for event in self.events if event.kind in kinds)


def load_story(path: str | Path) -> Story:
    """Load the story parts of the bag at `path` (BagError when it is no bag)."""
    with BagReader(path) as reader:
        topics = reader.topics
        wanted = {ODOM_TOPIC: ODOMETRY_TYPE, MAP_TOPIC: GRID_TYPE, LOG_TOPIC: EVENT_TYPE,
                  SIM_STATUS_TOPIC: STRING_TYPE}
        present = [topic for topic, msgtype in wanted.items() if topics.get(topic) == msgtype]
        reader.register(present)
        names = ConstantNames(reader)
        poses: list[tuple[float, float, float]] = []
        events: dict[tuple, EventRecord] = {}
        world_map, status = None, {}
        # rosbags reads every topic when asked for none.
        for message in reader.messages(present) if present else ():
            msg = message.msg
            if message.topic == ODOM_TOPIC:
                position = msg.pose.pose.position
                poses.append((seconds(msg.header.stamp), float(position.x), float(position.y)))
            elif message.topic == MAP_TOPIC:
                world_map = map_window(msg, MAP_TOPIC)
            elif message.topic == LOG_TOPIC:
                event = EventRecord(seconds(msg.header.stamp), names.name(EVENT_TYPE, msg.kind),
                                    msg.source, msg.key, msg.detail)
                events.setdefault((event.stamp, event.kind, event.source, event.key), event)
            else:
                try:
                    status = json.loads(msg.data)
                except ValueError:
                    pass  # a malformed status: keep the last good one
        setup = {key.removeprefix(SETUP_PREFIX): value
                 for key, value in reader.custom_data.items() if key.startswith(SETUP_PREFIX)}
    path_array = np.array(sorted(poses), dtype=float) if poses else np.zeros((0, 3))
    return Story(setup, path_array, world_map,
                 tuple(sorted(events.values(), key=lambda e: e.stamp)), status, dict(topics))
