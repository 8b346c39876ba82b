"""The simulator node over real DDS: /clock advances, /map is latched, the board and log respond.

The fixtures (context, add_node, spin_until, namespace) come from test/ros/conftest.py; the
relative topics (board, log, ~/status) live in the test's namespace.
"""

import pytest
import rclpy
from geometry_msgs.msg import Twist
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.exceptions import ParameterException
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from working_memory.core.items import Event, EventKind
from working_memory.msg import BoardUpdate, LogEvent, Resync, ResyncAnswer
from working_memory.ros.conversions import (board_batch_from_msg, event_from_msg, grid_from_msg,
                                            log_event_msg, pose_from_odometry, resync_msg,
                                            seconds_from_time)
from working_memory.ros.qos import ANSWERS_KEPT, latched_qos, map_qos, stream_qos
from working_memory.sim.conversions import json_from_string_msg
from working_memory.sim.sim_node import SimWorldNode
from working_memory.sim.world import WorldConfig

NEAR_DOOR = WorldConfig(start=(9.3, 6.0, 0.0))
MALFORMED_DETAIL = '{not json'


class Probe:
    """A test node that records what the simulator publishes."""

    def __init__(self, context, namespace, spin_until):
        self.node = rclpy.create_node('sim_probe', namespace=namespace, context=context)
        self.spin_until = spin_until
        self.clock, self.board, self.events, self.status, self.odom, self.maps = ([], {}, [], [],
                                                                                  [], [])
        self.node.create_subscription(Clock, '/clock',
                                      lambda m: self.clock.append(seconds_from_time(m.clock)),
                                      stream_qos())
        self.node.create_subscription(BoardUpdate, 'board', self._on_board, stream_qos())
        self.node.create_subscription(LogEvent, 'log', self._on_log, stream_qos())
        self.node.create_subscription(String, 'sim_world/status', lambda m: self.status.append(
            json_from_string_msg(m, 'status')), latched_qos())
        self.node.create_subscription(Odometry, '/odom',
                                      lambda m: self.odom.append(pose_from_odometry(m, 'map')),
                                      stream_qos())
        self.cmd_vel = self.node.create_publisher(Twist, '/cmd_vel', 10)
        self.log = self.node.create_publisher(LogEvent, 'log', stream_qos())

    def _on_log(self, msg):
        if msg.detail != MALFORMED_DETAIL:  # the probe skips what a test sends malformed
            self.events.append(event_from_msg(msg, 0.0))

    def _on_board(self, msg):
        for entry in board_batch_from_msg(msg, 0.0).entries:
            self.board.setdefault(entry.key, []).append(entry)

    def subscribe_map(self):
        self.node.create_subscription(OccupancyGrid, '/map',
                                      lambda m: self.maps.append(grid_from_msg(m, 'map')),
                                      map_qos())

    def request(self, strategy):
        event = Event(stamp=0.0, kind=EventKind.ACTION, source='executor', key='open_door',
                      detail={'strategy': strategy, 'attempt': 1})
        # The sim's `log` subscription must have matched, or the (volatile) request is lost;
        # the probe's own subscription is the other match.
        self.spin_until(lambda: self.log.get_subscription_count() >= 2)
        self.log.publish(log_event_msg(event))

    def events_of(self, kind, key):
        return [event for event in self.events if event.kind is kind and event.key == key]


@pytest.fixture
def start_stack(context, namespace, add_node, spin_until):
    """Return start(world_config=None, **parameters) -> (sim node, probe, spin_until).

    This spin_until asserts that the condition was reached within the spin limit.
    """
    def spin(condition, on_spin=None):
        assert spin_until(condition, on_spin=on_spin), 'condition not reached in the spin limit'

    def start(world_config=None, **parameters):
        sim = add_node(SimWorldNode(
            world_config, namespace=namespace, context=context,
            parameter_overrides=[Parameter(name, value=value)
                                 for name, value in parameters.items()]))
        probe = Probe(context, namespace, spin)
        add_node(probe.node)
        return sim, probe, spin
    return start


@pytest.fixture
def stack(start_stack):
    """Return the simulator with default parameters, a probe and spin_until."""
    return start_stack()


def test_clock_advances_in_sim_dt_steps(stack):
    sim, probe, spin_until = stack
    spin_until(lambda: len(probe.clock) >= 5)
    assert probe.clock == sorted(probe.clock) and probe.clock[-1] > probe.clock[0]
    steps = [round((b - a) / 0.02) for a, b in zip(probe.clock, probe.clock[1:])]
    assert all(step >= 1 for step in steps)


def test_late_subscriber_receives_the_latched_map(stack):
    sim, probe, spin_until = stack
    spin_until(lambda: probe.clock and probe.clock[-1] > 0.3)
    probe.subscribe_map()
    spin_until(lambda: probe.maps)
    grid = probe.maps[-1]
    assert grid.data.shape == (120, 200)
    assert grid.resolution == pytest.approx(0.1)
    assert (grid.data == sim.world.grid).all()


def test_board_carries_pose_and_static_keys_and_log_opens_the_mission(stack):
    sim, probe, spin_until = stack
    spin_until(lambda: 'pose' in probe.board and 'goal:deliver' in probe.board
               and probe.events_of(EventKind.CONSTRAINT, 'safety:zone/high_voltage'))
    pose = probe.board['pose'][-1]
    assert (pose.value['x'], pose.value['y']) == (2.0, 6.0)
    assert pose.ttl == pytest.approx(0.5) and pose.tags == ('navigation',)
    assert probe.board['safety:zone/high_voltage'][-1].importance == 1.0
    assert probe.board['door:main'][-1].value['state'] == 'closed'
    assert probe.events_of(EventKind.GOAL, 'goal:deliver')


def test_a_working_memory_that_starts_later_gets_the_static_keys_when_it_asks(stack):
    # The board is volatile: a restarted working memory asks on resync/request, and the
    # simulator's BoardWriter answers with what it holds (client.py).
    sim, probe, spin_until = stack
    spin_until(lambda: 'goal:deliver' in probe.board and probe.clock[-1] > 0.5)
    answers = []
    probe.node.create_subscription(ResyncAnswer, 'resync/answer', answers.append,
                                   latched_qos(ANSWERS_KEPT))
    ask = probe.node.create_publisher(Resync, 'resync/request', latched_qos(1))
    ask.publish(resync_msg('/restarted/working_memory', probe.clock[-1], 30.0, 'a1'))
    spin_until(lambda: len(answers) == 2)
    keys = {entry.key for answer in answers for entry in answer.entries}
    assert {'goal:deliver', 'safety:zone/high_voltage', 'door:main', 'pose'} <= keys
    assert len(probe.board['goal:deliver']) == 1   # sent once: the answer is not on `board`


def test_mission_starts_when_the_expected_log_listeners_subscribe(start_stack):
    sim, probe, spin_until = start_stack(log_listeners=2)
    spin_until(lambda: probe.clock and probe.clock[-1] > 0.5)
    assert probe.events_of(EventKind.GOAL, 'goal:deliver') == []
    second = []
    probe.node.create_subscription(LogEvent, 'log', second.append, stream_qos())
    spin_until(lambda: probe.events_of(EventKind.GOAL, 'goal:deliver') and second)


def test_cmd_vel_moves_the_robot(stack):
    sim, probe, spin_until = stack
    spin_until(lambda: probe.odom)
    forward = Twist()
    forward.linear.x = 0.8
    spin_until(lambda: probe.odom[-1][0] > 2.5, on_spin=lambda: probe.cmd_vel.publish(forward))
    spin_until(lambda: probe.board['pose'][-1].value['x'] > 2.5)
    assert probe.odom[-1][1] == pytest.approx(6.0)


def test_non_finite_cmd_vel_is_rejected_and_the_robot_stays(stack):
    sim, probe, spin_until = stack
    bad = Twist()
    bad.linear.x = float('nan')
    spin_until(lambda: probe.clock and probe.clock[-1] > 0.5,
               on_spin=lambda: probe.cmd_vel.publish(bad))
    assert sim.world.pose.x == 2.0
    spin_until(lambda: probe.clock[-1] > 0.7)


def test_open_door_push_fails_then_remote_open_opens_it(start_stack):
    sim, probe, spin_until = start_stack(NEAR_DOOR, door_push_failures=1)
    spin_until(lambda: probe.events_of(EventKind.GOAL, 'goal:deliver'))
    probe.request('push')
    spin_until(lambda: probe.events_of(EventKind.FAILURE, 'open_door'))
    assert probe.events_of(EventKind.FAILURE, 'open_door')[0].detail['strategy'] == 'push'
    assert not sim.world.door_open
    probe.request('remote_open')
    spin_until(lambda: probe.events_of(EventKind.OBSERVATION, 'door:main'))
    spin_until(lambda: probe.board['door:main'][-1].value['state'] == 'open')
    spin_until(lambda: probe.status and probe.status[-1]['door']['state'] == 'open')
    probe.subscribe_map()
    # Under load the map from before the door opened can still be the latched one when the
    # probe subscribes; the opened map follows (the assertion fails if it never comes).
    spin_until(lambda: probe.maps and probe.maps[-1].data[60, 100] == 0)
    assert probe.maps[-1].data[60, 100] == 0


def test_out_of_range_parameter_is_rejected_naming_it(context):
    with pytest.raises(ParameterException, match='sim_dt'):
        SimWorldNode(context=context, parameter_overrides=[Parameter('sim_dt', value=0.0)])


def test_malformed_log_event_is_rejected_and_the_sim_keeps_resolving(start_stack):
    sim, probe, spin_until = start_stack(NEAR_DOOR, door_push_failures=0)
    spin_until(lambda: probe.log.get_subscription_count() >= 2)
    probe.log.publish(LogEvent(kind=LogEvent.ACTION, key='open_door', detail=MALFORMED_DETAIL))
    probe.request('push')
    spin_until(lambda: probe.events_of(EventKind.OBSERVATION, 'door:main'))
    assert probe.events_of(EventKind.FAILURE, 'open_door') == []
