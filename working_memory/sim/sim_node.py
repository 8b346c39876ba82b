"""ROS adapter of the delivery world: the stand-in for Gazebo + ros_gz_bridge (and the mission)."""

from __future__ import annotations

import dataclasses
import sys

from geometry_msgs.msg import Twist
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.clock import Clock as TimerClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from working_memory.client import BoardWriter, EventLogger
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import Event, EventKind
from working_memory.msg import LogEvent
from working_memory.ros.conversions import event_from_msg, grid_msg_from_window
from working_memory.ros.parameters import declare_parameters
from working_memory.ros.qos import command_qos, event_log_qos, latched_qos, map_qos, stream_qos
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.usage import parse_node_options
from working_memory.sim.cadence import Cadence, ChangedEntries
from working_memory.sim.conversions import clock_msg, json_string_msg, odometry_msg, twist_from_msg
from working_memory.sim.sim_params import SIM_PARAMS, sim_config_from_values
from working_memory.sim.world import DeliveryWorld, WorldConfig


class SimWorldNode(Node):
    """Steps the seeded delivery world on a wall-clock timer and publishes it as ROS topics.

    This node is the clock source: it never uses sim time itself. Its step timer
    runs on the steady clock (period sim_dt / real_time_factor) and every
    message is stamped with world time.

    ROS Parameters: see `working_memory.sim.sim_params.SIM_PARAMS` (seed,
    real_time_factor, sim_dt, rates, sensor_count, door_push_failures, ...).

    Subscriptions:
        /cmd_vel (geometry_msgs/Twist): linear.x [m/s] and angular.z [rad/s]; the robot
            stops when it is silent for cmd_vel_timeout_s or a command is not finite.
        log (LogEvent): ACTION events; `open_door` with detail {"strategy"} is resolved.

    Publishers:
        /clock (rosgraph_msgs/Clock): every step.
        /odom (nav_msgs/Odometry): ground truth in map_frame, at odom_rate_hz.
        /map (nav_msgs/OccupancyGrid, latched): at start and whenever the door opens.
        board (BoardUpdate): goal, zone, door, charging stations at start, on change and
            again for each new subscriber; pose, battery, sensor:<n> at their rates.
        log (LogEvent): GOAL and CONSTRAINT once log_listeners subscribers listen; FAILURE and
            OBSERVATION outcomes of actions, door opened, delivered; a FAILURE of the action
            in force (the latest ACTION) on each new collision, as a bumper reports it.
        ~/status (std_msgs/String, latched): JSON of the outcome (time, pose, delivered,
            zone_violations, collisions, door).
    """

    def __init__(self, world_config: WorldConfig | None = None, **kwargs):
        super().__init__('sim_world', **kwargs)
        self._config = sim_config_from_values(declare_parameters(self, SIM_PARAMS))
        world_config = dataclasses.replace(world_config or WorldConfig(),
                                           sensor_count=self._config.sensor_count)
        self._world = DeliveryWorld(world_config, seed=self._config.seed,
                                    door_push_failures=self._config.push_failures_override)
        self._changed_static = ChangedEntries()
        self._mission_started = False
        self._map_version = None
        self._collisions = 0
        self._command = (0.0, 0.0)
        self._command_ns = None
        self._actions: list[Event] = []
        self._action_in_force = ('drive', '')  # (key, strategy) of the latest ACTION event
        self._cadences = {name: Cadence(getattr(self._config, f'{name}_rate_hz'))
                          for name in ('odom', 'pose', 'battery', 'sensor', 'status')}

        # Reliable keep-last-10, like ros_gz_bridge's /clock and /odom.
        self._clock_pub = self.create_publisher(Clock, '/clock', stream_qos(10))
        self._odom_pub = self.create_publisher(Odometry, '/odom', stream_qos(10))
        self._map_pub = self.create_publisher(OccupancyGrid, '/map', map_qos())
        # A restarted working memory asks them for what they hold (client.py writers).
        self._board = BoardWriter(self, qos_profile=stream_qos())
        self._log = EventLogger(self, qos_profile=event_log_qos())
        self._status_pub = self.create_publisher(String, '~/status', latched_qos())
        self.create_subscription(Twist, '/cmd_vel', self._on_cmd_vel, command_qos())
        self.create_subscription(LogEvent, 'log', self._on_log, stream_qos())
        self.create_timer(self._config.step_period_s, self._on_step,
                          clock=TimerClock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f'delivery world: seed {self._config.seed}, '
            f'{self._world.push_failures_left} failing push(es), sim_dt {self._config.sim_dt} s, '
            f'real_time_factor {self._config.real_time_factor}')

    @property
    def world(self) -> DeliveryWorld:
        """The simulated world: read it between spins (only the step timer changes it)."""
        return self._world

    def _on_cmd_vel(self, msg: Twist) -> None:
        try:
            self._command = twist_from_msg(msg)
        except ValueError as error:
            self._command = (0.0, 0.0)
            self.get_logger().warning(f'{error}; robot stopped', throttle_duration_sec=1.0)
        self._command_ns = self._world.time_ns

    def _on_log(self, msg: LogEvent) -> None:
        try:
            event = event_from_msg(msg, self._world.time)
        except ValueError as error:
            self.get_logger().warning(f'log: rejected: {error}', throttle_duration_sec=1.0)
            return
        if event.kind is EventKind.ACTION:
            self._actions.append(event)

    def _on_step(self) -> None:
        world = self._world
        report = world.step(self._config.sim_dt, *self._current_command())
        now = world.time
        events = list(report.events)
        if not self._mission_started and self._log_has_listeners():
            self._mission_started = True
            events = world.start_events(now) + events
        for action in self._actions:
            events += world.request_action(action.key, _strategy_of(action), now).events
            self._action_in_force = (action.key, _strategy_of(action))
        self._actions.clear()
        if world.collisions != self._collisions:
            self._collisions = world.collisions
            events.append(world.collision_failure(*self._action_in_force, now))
            self.get_logger().warning(f'collision at ({world.pose.x:.2f}, {world.pose.y:.2f}): '
                                      'robot stopped')
        self._publish(now, events)

    def _current_command(self) -> tuple[float, float]:
        timeout_ns = round(self._config.cmd_vel_timeout_s * 1e9)
        if self._command_ns is None or self._world.time_ns - self._command_ns > timeout_ns:
            return (0.0, 0.0)
        return self._command

    def _log_has_listeners(self) -> bool:
        # `log` is volatile for most subscribers: the mission starts (GOAL and CONSTRAINT
        # are logged) once the expected listeners matched. This node's own `log`
        # subscription is one more match.
        return self._log.subscription_count >= 1 + self._config.log_listeners

    def _publish(self, now: float, events: list[Event]) -> None:
        world, config, due = self._world, self._config, self._cadences
        self._clock_pub.publish(clock_msg(now))
        if world.map_version != self._map_version:
            self._map_version = world.map_version
            window = MapWindow(world.grid, (0.0, 0.0), world.config.resolution)
            self._map_pub.publish(grid_msg_from_window(window, config.map_frame, now))
        if due['odom'].due(world.time_ns):
            self._odom_pub.publish(odometry_msg(world.pose.x, world.pose.y, world.pose.yaw,
                                                *world.velocity, now, config.map_frame,
                                                config.base_frame))
        entries = self._changed_static.select(world.static_entries(now))
        if due['pose'].due(world.time_ns):
            entries.append(world.pose_entry(now))
        if due['battery'].due(world.time_ns):
            entries.append(world.battery_entry(now))
        if due['sensor'].due(world.time_ns):
            entries += world.sensor_entries(now)
        if entries:
            self._board.put(entries, stamp=now)
        for event in events:
            self.get_logger().info(f'{event.kind.value} {event.key}: {event.detail}')
            self._log.put(event)
        # Also on every event, so the latched status shows a door opening or a delivery at once.
        if due['status'].due(world.time_ns) or events:
            self._status_pub.publish(json_string_msg(world.status()))


def _strategy_of(action: Event) -> str:
    """Return the strategy an ACTION event asks for ('' when its detail names none)."""
    detail = action.detail
    return str(detail.get('strategy', '')) if isinstance(detail, dict) else ''


USAGE = (
    'The delivery world, the stand-in for Gazebo + ros_gz_bridge: steps the seeded world on a '
    'wall-clock timer (sim_dt, real_time_factor) and publishes /clock, /odom, the latched /map, '
    'the mission and the robot (goal, safety zone, door, pose, battery, sensors) on board and '
    'its events on log. It drives the robot by /cmd_vel, opens the door for open_door ACTION '
    'events on log, and reports the outcome (delivered, zone violations, collisions) as JSON on '
    '~/status.')


def main(args: list[str] | None = None) -> int:
    """Run the simulator node until shutdown; `-h/--help` prints its usage."""
    parse_node_options('sim_world_node', USAGE, 'sim_world', [spec.name for spec in SIM_PARAMS],
                       own_arguments(sys.argv if args is None else args))
    return run_node(SimWorldNode, args)
