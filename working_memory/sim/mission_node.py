"""The mission for a robot that is not the delivery simulator (Gazebo, hardware).

Publishes what sim_world_node publishes as the mission owner: the static board keys
(goal, high-voltage zone, door) and the opening GOAL and CONSTRAINT events. The pose
is no mission's: the working memory takes it from odometry itself (a typed-topic
source, config/sources/gazebo.yaml). Defaults are the delivery world's
(working_memory.sim.world).
"""

from __future__ import annotations

import sys

from rclpy.node import Node

from working_memory.client import BoardWriter, EventLogger
from working_memory.engine.config import ParamSpec, ParamType, check_value
from working_memory.ros.parameters import declare_double_array, declare_parameters
from working_memory.ros.qos import event_log_qos, stream_qos
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.usage import parse_node_options
from working_memory.sim.mission import DOOR_STATES, Mission, polygon_from_flat
from working_memory.sim.world import WorldConfig, delivery_mission

_DELIVERY = delivery_mission(WorldConfig())
# How often the mission looks for its `log` listeners before it starts [s].
START_POLL_S = 0.1

MISSION_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec('goal_x', ParamType.DOUBLE, _DELIVERY.goal_x, 'Goal x in the map frame [m]',
              read_only=True),
    ParamSpec('goal_y', ParamType.DOUBLE, _DELIVERY.goal_y, 'Goal y in the map frame [m]',
              read_only=True),
    ParamSpec('goal_target', ParamType.STRING, _DELIVERY.target, 'Name of the goal place',
              read_only=True),
    ParamSpec('goal_tags', ParamType.STRING_ARRAY, list(_DELIVERY.goal_tags),
              'Tags of the goal: the semantic filter of every cabin', read_only=True),
    ParamSpec('door_x', ParamType.DOUBLE, _DELIVERY.door_x, 'Door centre x [m]', read_only=True),
    ParamSpec('door_y', ParamType.DOUBLE, _DELIVERY.door_y, 'Door centre y [m]', read_only=True),
    ParamSpec('door_width', ParamType.DOUBLE, _DELIVERY.door_width, 'Door width [m]',
              range=(0.01, 100.0), read_only=True),
    ParamSpec('door_state', ParamType.STRING, _DELIVERY.door_state,
              'Door state published on door:main', choices=DOOR_STATES, read_only=True),
    ParamSpec('log_listeners', ParamType.INTEGER, 1,
              'Subscribers of log to wait for before GOAL and CONSTRAINT are logged; 0 logs '
              'them at start', range=(0, 100), read_only=True),
)
ZONE_PARAM = 'zone_polygon'


def mission_from_values(values, zone_flat) -> Mission:
    """Build the Mission from parameter values, raising ValueError naming the bad one."""
    checked = {spec.name: check_value(spec, values[spec.name]) for spec in MISSION_PARAMS}
    return Mission(checked['goal_x'], checked['goal_y'], checked['goal_target'],
                   checked['goal_tags'], polygon_from_flat(zone_flat), checked['door_x'],
                   checked['door_y'], checked['door_width'], checked['door_state'])


class MissionNode(Node):
    """Owns the mission's board keys and opening events.

    ROS Parameters: MISSION_PARAMS (goal_x, goal_y, goal_target, goal_tags, door_x,
    door_y, door_width, door_state, log_listeners) and zone_polygon
    ([x0, y0, x1, y1, ...] [m]); all read-only, defaults the delivery world's.

    Publishers:
        board (BoardUpdate): goal:deliver, safety:zone/high_voltage, door:main at start
            and again for each new subscriber (a working memory's resync).
        log (LogEvent, latched): GOAL and CONSTRAINT once log_listeners subscribers listen.
    """

    def __init__(self, **kwargs):
        super().__init__('mission', **kwargs)
        values = declare_parameters(self, MISSION_PARAMS)
        zone = declare_double_array(
            self, ZONE_PARAM, [c for vertex in _DELIVERY.zone_polygon for c in vertex],
            'High-voltage zone (forbidden) polygon as x0, y0, x1, y1, ... [m]')
        self._mission = mission_from_values(values, zone)
        self._log_listeners = values['log_listeners']
        # A restarted working memory asks them for what they hold (client.py writers).
        self._board = BoardWriter(self, qos_profile=stream_qos())
        self._log = EventLogger(self, qos_profile=event_log_qos())
        now = self._now()
        self._board.put(self._mission.static_entries(now), stamp=now)
        self._start_timer = self.create_timer(START_POLL_S, self._start_when_heard)
        mission = self._mission
        self.get_logger().info(f'mission: deliver to {mission.target} at '
                               f'({mission.goal_x:.2f}, {mission.goal_y:.2f}) m')

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _start_when_heard(self) -> None:
        # Most `log` subscribers are volatile: log the opening events once the expected
        # listeners matched, then late joiners asking for transient local still get them.
        if self._log.subscription_count < self._log_listeners:
            return
        self.destroy_timer(self._start_timer)
        for event in self._mission.start_events(self._now()):
            self._log.put(event)


USAGE = (
    'The mission for a robot that is not the delivery simulator (Gazebo, hardware): publishes '
    'the goal (goal:deliver), the high-voltage zone (safety:zone/high_voltage) and the door '
    '(door:main) on board, logs the opening GOAL and CONSTRAINT events on log once log_listeners '
    'subscribers listen. The working memory takes the pose from /odom itself '
    "(config/sources/gazebo.yaml). The defaults are the delivery world's.")


def main(args: list[str] | None = None) -> int:
    """Run the mission node until shutdown; `-h/--help` prints its usage."""
    parse_node_options('mission_node', USAGE, 'mission',
                       [spec.name for spec in MISSION_PARAMS] + [ZONE_PARAM],
                       own_arguments(sys.argv if args is None else args))
    return run_node(MissionNode, args)
