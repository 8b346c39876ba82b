"""Benchmark of typed-topic sources: a robot's six topics, typed or as equivalent BoardUpdates.

`make bench-ros` (group `sources`, bench/ros_bench.py, which writes the sources file) runs
the node fed by the `robot` role of bench/roles_node.py at robot rates while it ticks at
100 Hz, once with the six typed topics as sources and once with the same board entries and
events published as BoardUpdate and LogEvent (converted in the robot's process, by the same
mappings), and compares the node's CPU. `conversion_costs()` (the `convert` role) times one
message's conversion by source_map beside `rosidl_runtime_py.convert.message_to_ordereddict`
of the same message.
"""

from __future__ import annotations

import math
import pathlib
import time
from typing import Any

from action_msgs.msg import GoalStatus, GoalStatusArray
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry, Path
from rosidl_runtime_py.convert import message_to_ordereddict
from sensor_msgs.msg import BatteryState

from working_memory.bench.ros_bench import DIAGNOSTIC_STATUSES, PLAN_POSES
from working_memory.engine.source_map import SourceMap, load_sources
from working_memory.ros.conversions import time_from_seconds
from working_memory.ros.sources import describe


def _stamp(msg: Any, seconds: float, frame: str = 'map') -> Any:
    msg.header.stamp = time_from_seconds(seconds)
    msg.header.frame_id = frame
    return msg


def robot_message(name: str, now: float, step: int) -> Any:
    """Return source `name`'s message at time `now` [s], the `step`-th of its topic."""
    x = 2.0 + 0.01 * step
    if name == 'odometry':
        msg = _stamp(Odometry(child_frame_id='base_link'), now)
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, 6.0
        msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(0.1), math.cos(0.1)
        msg.twist.twist.linear.x = 0.5
        return msg
    if name == 'amcl':
        msg = _stamp(PoseWithCovarianceStamped(), now)
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, 6.0
        msg.pose.pose.orientation.w = 1.0
        return msg
    if name == 'plan':
        msg = _stamp(Path(), now)
        msg.poses = [_stamp(PoseStamped(), now) for _ in range(PLAN_POSES)]
        for index, pose in enumerate(msg.poses):
            pose.pose.position.x, pose.pose.position.y = x + 0.03 * index, 6.0
        return msg
    if name == 'battery':
        return _stamp(BatteryState(percentage=0.9 - 0.001 * step, voltage=24.0,
                                   power_supply_status=2), now, '')
    if name == 'diagnostics':
        return _stamp(DiagnosticArray(status=[
            DiagnosticStatus(name=f'robot: sensor {index}', level=DiagnosticStatus.OK,
                             message='ok', hardware_id=f'hw{index}',
                             values=[KeyValue(key='rate', value='10.0')])
            for index in range(DIAGNOSTIC_STATUSES)]), now, '')
    msg = GoalStatusArray(status_list=[GoalStatus(status=GoalStatus.STATUS_EXECUTING)])
    msg.status_list[0].goal_info.goal_id.uuid[0] = 1
    msg.status_list[0].goal_info.stamp = time_from_seconds(now)
    return msg


def source_maps(path: pathlib.Path) -> dict[str, SourceMap]:
    """Return the bench file's sources by name, ready to convert."""
    return {spec.name: SourceMap(spec) for spec in load_sources(str(path), describe)}


def conversion_costs(path: pathlib.Path, turns: int = 200) -> dict[str, tuple[float, float]]:
    """Return {source: (source_map's conversion [us], message_to_ordereddict [us])} per message.

    Each the best of three runs of `turns` conversions of the same message.
    """
    costs = {}
    for name, source in source_maps(path).items():
        msg = robot_message(name, 100.0, 0)
        costs[name] = (_best_us(lambda: source.convert(msg, 100.0), turns),
                       _best_us(lambda: message_to_ordereddict(msg), turns))
    return costs


def _best_us(call, turns: int) -> float:
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(turns):
            call()
        best = min(best, (time.perf_counter() - started) / turns)
    return best * 1e6
