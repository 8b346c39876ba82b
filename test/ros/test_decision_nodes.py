"""Planner, executor and monitor nodes over real DDS, driven by published ContextFrames."""

import time

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import Twist
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from working_memory.core.frames import make_frame, make_pack
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import (BoardEntry, Event, EventKind, Item, Missing, MissingReason,
                                       Source)
from working_memory.decision.conversions import (decision_detail_from_msg,
                                                 decision_status_msg)
from working_memory.decision.executor_node import ExecutorNode
from working_memory.decision.monitor_node import MonitorNode
from working_memory.decision.planner_node import PlannerNode
from working_memory.msg import BoardUpdate, ContextFrame, DecisionStatus, LogEvent
from working_memory.ros.conversions import (board_batch_from_msg, board_update_msg,
                                            context_frame_msg, event_from_msg,
                                            grid_msg_from_window, seconds_from_time,
                                            time_from_seconds)
from working_memory.ros.qos import frame_qos, stream_qos
from working_memory.trees.planner_tree_node import PlannerTreeNode

ZONE = {'polygon': [[4.0, 1.5], [6.0, 1.5], [6.0, 3.5], [4.0, 3.5]]}
DOOR = {'state': 'closed', 'x': 8.0, 'y': 2.5, 'width': 1.2}
AT_DOOR = {'x': 7.3, 'y': 2.5, 'yaw': 0.0}
ROUTE = {'waypoints': [[1.0, 2.5], [9.0, 2.5]], 'reaches_goal': True, 'tick': 1, 'digest': 'x'}


def room():
    """Return a 10 m x 5 m room with walls, 0.1 m cells, as a map window at the origin."""
    grid = np.zeros((50, 100), dtype=np.int8)
    grid[0, :] = grid[-1, :] = grid[:, 0] = grid[:, -1] = 100
    return MapWindow(grid, (0.0, 0.0), 0.1)


def pack(cabin, tick, values, events=(), missing=(), window=None, stamp=None):
    stamp = float(tick) if stamp is None else stamp
    items = [Item(key, value, Source.BOARD, 0.5, stamp, stamp) for key, value in values.items()]
    return make_pack(cabin, tick, stamp, items, events, window, missing)


def frame(tick, planner=None, executor=None, monitor=None):
    """Return (ContextFrame, digest) of `tick`; per cabin: values or (values, events, missing).

    Stamped now: the frame of a working memory that is alive (WorkingMemoryClient).
    """
    stamp = time.time()
    packs = []
    for cabin, content in (('planner', planner), ('executor', executor), ('monitor', monitor)):
        if content is not None:
            values, events, missing = content if isinstance(content, tuple) else (content, (), ())
            window = room() if cabin == 'planner' else None
            packs.append(pack(cabin, tick, values, events, missing, window, stamp))
    core = make_frame(tick, stamp, packs)
    return context_frame_msg(core, 'map'), core.digest


PLANNER_VALUES = {'pose': {'x': 1.0, 'y': 2.5, 'yaw': 0.0}, 'goal:deliver': {'x': 9.0, 'y': 2.5},
                  'safety:zone/high_voltage': ZONE}


class Probe:
    """Publishes frames (latched) and records what the decision nodes publish in namespace `ns`."""

    def __init__(self, context, ns):
        self.node = rclpy.create_node('probe', namespace=ns, context=context)
        self.frames = self.node.create_publisher(ContextFrame, 'working_memory/frame',
                                                 frame_qos())
        self.statuses = {'planner': [], 'executor': [], 'monitor': []}
        for cabin, received in self.statuses.items():
            self.node.create_subscription(DecisionStatus, f'{cabin}/status', received.append,
                                          stream_qos())
        self.board, self.events, self.cmd_vel = {}, [], []
        self.node.create_subscription(BoardUpdate, 'board', self._on_board, stream_qos())
        self.node.create_subscription(LogEvent, 'log',
                                      lambda m: self.events.append(event_from_msg(m, 0.0)),
                                      stream_qos())
        self.node.create_subscription(Twist, 'cmd_vel', self.cmd_vel.append, stream_qos())
        self.status_pub = self.node.create_publisher(DecisionStatus, 'planner/status',
                                                     stream_qos())

    def _on_board(self, msg):
        for entry in board_batch_from_msg(msg, 0.0).entries:
            self.board[entry.key] = entry.value

    def status(self, cabin, tick):
        return next((s for s in self.statuses[cabin] if s.tick == tick), None)

    def events_of(self, kind, key):
        return [event for event in self.events if event.kind == kind and event.key == key]


@pytest.fixture
def probe(context, add_node, namespace):
    probe = Probe(context, namespace)
    add_node(probe.node)
    return probe


@pytest.fixture
def start(context, add_node, namespace):
    """Return make(NodeClass, **params): a decision node in this test's namespace.

    Its default working_memory_namespace is relative: it reads `<namespace>/working_memory/frame`.
    """
    def make(node_class, **params):
        overrides = [Parameter(name, value=value) for name, value in params.items()]
        return add_node(node_class(context=context, namespace=namespace,
                                   parameter_overrides=overrides))
    return make


# The planner rebuilt as a py_trees tree (working_memory/trees) must decide as the plain one.
@pytest.fixture(params=[PlannerNode, PlannerTreeNode], ids=['plain', 'tree'])
def planner_class(request):
    return request.param


def test_planner_and_executor_report_the_frame_they_used(start, probe, spin_until,
                                                         planner_class):
    msg, digest = frame(11, planner=PLANNER_VALUES,
                        executor={'pose': {'x': 1.0, 'y': 2.5, 'yaw': 0.0}, 'route': ROUTE})
    probe.frames.publish(msg)
    start(planner_class)
    start(ExecutorNode)
    assert spin_until(lambda: probe.status('planner', 11) and probe.status('executor', 11))
    planner, executor = probe.status('planner', 11), probe.status('executor', 11)
    assert (planner.cabin, planner.digest, planner.decision) == ('planner', digest, 'route')
    assert (executor.cabin, executor.digest, executor.decision) == ('executor', digest,
                                                                    'follow_route')
    assert '"retry_policy":"adaptive"' in executor.detail
    assert spin_until(lambda: 'route' in probe.board and probe.cmd_vel)
    assert (probe.board['route']['tick'], probe.board['route']['digest']) == (11, digest)
    assert probe.cmd_vel[-1].linear.x > 0.0


def test_planner_route_detours_around_the_zone_in_its_pack(start, probe, spin_until,
                                                           planner_class):
    probe.frames.publish(frame(3, planner=PLANNER_VALUES)[0])
    start(planner_class, robot_radius_m=0.25)
    assert spin_until(lambda: 'route' in probe.board)
    waypoints = np.array(probe.board['route']['waypoints'])
    assert len(waypoints) > 2   # the straight line crosses the zone at y = 2.5
    assert probe.board['route']['reaches_goal'] is True


def test_planner_alarms_and_holds_when_constraints_were_dropped(start, probe, spin_until,
                                                                planner_class):
    dropped = (Missing('board:safety:*', MissingReason.INJECTED_DROP, 'manifest drop'),)
    values = {key: value for key, value in PLANNER_VALUES.items() if not key.startswith('safety')}
    probe.frames.publish(frame(4, planner=(values, (), dropped))[0])
    start(planner_class)
    assert spin_until(lambda: probe.events_of(EventKind.ALARM, 'constraint_validation'))
    alarm = probe.events_of(EventKind.ALARM, 'constraint_validation')[0]
    assert alarm.detail['missing'] == [{'key': 'board:safety:*', 'reason': 'INJECTED_DROP',
                                        'detail': 'manifest drop'}]
    assert alarm.detail['tick'] == 4 and alarm.source == 'planner'
    probe.frames.publish(frame(5, planner=(values, (), dropped))[0])
    assert spin_until(lambda: probe.status('planner', 5))
    assert probe.status('planner', 5).decision == 'alarm'
    assert 'route' not in probe.board
    # One alarm per episode, not one per tick.
    assert len(probe.events_of(EventKind.ALARM, 'constraint_validation')) == 1


def test_executor_stops_the_robot_when_packs_stop_coming(start, probe, spin_until):
    probe.frames.publish(frame(1, executor={'pose': {'x': 1.0, 'y': 2.5, 'yaw': 0.0},
                                            'route': ROUTE})[0])
    start(ExecutorNode, pack_timeout_s=0.3)
    assert spin_until(lambda: any(twist.linear.x > 0.0 for twist in probe.cmd_vel))
    # No further frame comes: only the watchdog can publish the stop.
    moving = len(probe.cmd_vel)
    assert spin_until(lambda: any(twist.linear.x == 0.0 and twist.angular.z == 0.0
                                  for twist in probe.cmd_vel[moving:]))


def test_executor_switches_to_remote_open_after_a_failure(start, probe, spin_until):
    values = {'pose': AT_DOOR, 'route': ROUTE, 'door:main': DOOR}
    probe.frames.publish(frame(1, executor=values)[0])
    start(ExecutorNode)
    assert spin_until(lambda: probe.events_of(EventKind.ACTION, 'open_door'))
    push = probe.events_of(EventKind.ACTION, 'open_door')[0]
    assert push.detail == {'strategy': 'push', 'attempt': 1}
    assert probe.board.get('action:current') == {'name': 'open_door', 'strategy': 'push',
                                                 'attempt': 1}
    failure = Event(push.stamp + 0.1, EventKind.FAILURE, 'world', 'open_door',
                    {'strategy': 'push', 'reason': 'door stuck'})
    probe.frames.publish(frame(2, executor=(values, (failure,), ()))[0])
    assert spin_until(lambda: len(probe.events_of(EventKind.ACTION, 'open_door')) == 2)
    assert probe.events_of(EventKind.ACTION, 'open_door')[1].detail == {'strategy': 'remote_open',
                                                                        'attempt': 2}
    # The status is another topic: it may arrive after the action event.
    assert spin_until(lambda: probe.status('executor', 2))
    assert '"retry_policy":"adaptive"' in probe.status('executor', 2).detail


def test_executor_is_conservative_when_failures_were_dropped(start, probe, spin_until):
    dropped = (Missing('events:FAILURE', MissingReason.INJECTED_DROP, 'manifest drop'),)
    values = {'pose': AT_DOOR, 'route': ROUTE, 'door:main': DOOR}
    probe.frames.publish(frame(6, executor=(values, (), dropped))[0])
    start(ExecutorNode)
    assert spin_until(lambda: probe.status('executor', 6))
    status = probe.status('executor', 6)
    assert status.decision == 'open_door'
    assert '"retry_policy":"conservative"' in status.detail
    assert spin_until(lambda: probe.events_of(EventKind.ACTION, 'open_door'))
    assert probe.events_of(EventKind.ACTION, 'open_door')[0].detail['strategy'] == 'push'


def test_monitor_alarms_when_a_cabin_reports_another_digest_for_the_tick(start, probe,
                                                                         spin_until):
    msg, digest = frame(8, monitor={})
    probe.frames.publish(msg)
    start(MonitorNode)
    assert spin_until(lambda: probe.status('monitor', 8))
    assert probe.status('monitor', 8).decision == 'ok'
    torn = DecisionStatus(cabin='planner', tick=8, digest='not-the-frame', decision='route')

    def publish_torn():
        if probe.status_pub.get_subscription_count():
            probe.status_pub.publish(torn)
    assert spin_until(lambda: probe.events_of(EventKind.ALARM, 'tearing'), on_spin=publish_torn)
    alarm = probe.events_of(EventKind.ALARM, 'tearing')[0]
    assert alarm.detail == {'tick': 8, 'digests': {digest: ['monitor'],
                                                   'not-the-frame': ['planner']}}


def test_monitor_stays_quiet_while_all_cabins_read_the_same_frames(start, probe, spin_until,
                                                                   planner_class):
    executor_values = {'pose': {'x': 1.0, 'y': 2.5, 'yaw': 0.0}, 'route': ROUTE}
    start(planner_class)
    start(ExecutorNode)
    start(MonitorNode)
    for tick in (1, 2, 3):
        probe.frames.publish(frame(tick, PLANNER_VALUES, executor_values, {})[0])
        assert spin_until(lambda: all(probe.status(cabin, tick) for cabin in probe.statuses))
    # Statuses of ticks 1 and 2 reached the monitor before its own pack of tick 3 did.
    assert '"alarms":0' in probe.status('monitor', 3).detail
    assert probe.events_of(EventKind.ALARM, 'tearing') == []


def test_status_is_stamped_with_sim_time(context, start, probe, spin_until, namespace):
    clock = probe.node.create_publisher(Clock, '/clock', 10)
    planner = start(PlannerNode, use_sim_time=True)
    assert spin_until(lambda: planner.get_clock().now().nanoseconds == 42_500_000_000,
                      on_spin=lambda: clock.publish(Clock(clock=time_from_seconds(42.5))))
    probe.frames.publish(frame(12, planner=PLANNER_VALUES)[0])
    assert spin_until(lambda: probe.status('planner', 12))
    assert seconds_from_time(probe.status('planner', 12).header.stamp) == 42.5


def test_loop_closes_through_the_real_working_memory_node(start_memory, start, probe,
                                                          spin_until, planner_class):
    # The executor's manifest must carry the planner's route for the loop to close.
    node, memory = start_memory({'cabins.planner.map.radius_m': 12.0,
                                 'cabins.executor.board_keys': ['action:*', 'pose', 'route'],
                                 'tick_hz': 20.0})
    start(planner_class, robot_radius_m=0.2)
    start(ExecutorNode)
    memory.wait_matched(memory.board, memory.map)
    memory.map.publish(grid_msg_from_window(room(), 'map', 0.0))
    now = node.get_clock().now().nanoseconds * 1e-9
    memory.board.publish(board_update_msg([
        BoardEntry('goal:deliver', {'x': 9.0, 'y': 2.5}, now, 1.0),
        BoardEntry('safety:zone/high_voltage', ZONE, now, 1.0),
        BoardEntry('pose', PLANNER_VALUES['pose'], now, 0.6)], now))

    def following():
        return any(s.decision == 'follow_route' for s in probe.statuses['executor'])
    assert spin_until(following)
    route = probe.board['route']
    assert len(route['waypoints']) > 2 and route['reaches_goal']
    # Planner and executor read the same frame whenever they report the same tick.
    planner = {s.tick: s.digest for s in probe.statuses['planner']}
    shared = [(s.digest, planner[s.tick]) for s in probe.statuses['executor'] if s.tick in planner]
    assert shared and all(executor == planner and executor for executor, planner in shared)
    assert spin_until(lambda: any(twist.linear.x > 0.0 for twist in probe.cmd_vel))


def test_status_detail_round_trips_and_bad_detail_names_the_status():
    msg = decision_status_msg('executor', 5, 'd', 'follow', {'retry_policy': 'adaptive'}, 1.0)
    assert decision_detail_from_msg(msg) == {'retry_policy': 'adaptive'}
    msg.detail = '{oops'
    with pytest.raises(ValueError, match="status of 'executor' tick 5: detail"):
        decision_detail_from_msg(msg)
