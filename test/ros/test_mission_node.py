"""The mission node over real DDS: board keys and opening events arrive.

The fixtures (context, add_node, spin_until, namespace) come from test/ros/conftest.py; the
relative topics (board, log) live in the test's namespace. The pose from /odom is the
working memory's own source (config/sources/gazebo.yaml, test/ros/test_source_map.py).
"""

import pytest
import rclpy
from rclpy.parameter import Parameter

from working_memory.core.items import EventKind
from working_memory.msg import BoardUpdate, LogEvent, Resync, ResyncAnswer
from working_memory.ros.conversions import board_batch_from_msg, event_from_msg, resync_msg
from working_memory.ros.qos import ANSWERS_KEPT, latched_qos, stream_qos
from working_memory.sim.mission_node import MissionNode
from working_memory.sim.world import WorldConfig, delivery_mission

DELIVERY = delivery_mission(WorldConfig())
STATIC_KEYS = ('goal:deliver', 'safety:zone/high_voltage', 'door:main')


class Listener:
    """A test node that records the board entries and log events the mission node publishes."""

    def __init__(self, context, namespace, name='mission_listener'):
        self.node = rclpy.create_node(name, namespace=namespace, context=context)
        self.board, self.events = {}, []
        self.node.create_subscription(BoardUpdate, 'board', self._on_board, stream_qos())
        self.node.create_subscription(
            LogEvent, 'log', lambda m: self.events.append(event_from_msg(m, 0.0)), stream_qos())

    def _on_board(self, msg):
        for entry in board_batch_from_msg(msg, 0.0).entries:
            self.board.setdefault(entry.key, []).append(entry)


@pytest.fixture
def start_mission(context, namespace, add_node, spin_until):
    """Return start(**parameters) -> (listener, spin_until that asserts it got there)."""
    def spin(condition):
        assert spin_until(condition), 'condition not reached in the spin limit'

    def start(**parameters):
        listener = Listener(context, namespace)
        add_node(listener.node)
        add_node(MissionNode(
            namespace=namespace, context=context,
            parameter_overrides=[Parameter(name, value=value)
                                 for name, value in parameters.items()]))
        return listener, spin
    return start


def test_static_keys_and_opening_events_are_the_delivery_worlds(start_mission):
    listener, spin_until = start_mission()
    spin_until(lambda: all(key in listener.board for key in STATIC_KEYS)
               and len(listener.events) >= 2)
    goal = listener.board['goal:deliver'][-1]
    assert goal.value == {'target': 'loading_dock', 'x': 17.0, 'y': 3.0,
                          'tags': ['delivery', 'navigation', 'safety']}
    assert (goal.importance, goal.ttl, goal.tags) == (1.0, 0.0, ('delivery',))
    zone = listener.board['safety:zone/high_voltage'][-1]
    assert zone.value == DELIVERY.zone_value() and zone.tags == ('safety', 'delivery')
    door = listener.board['door:main'][-1]
    assert door.value == {'state': 'closed', 'x': 10.0, 'y': 6.0, 'width': 1.2}
    assert door.importance == 0.7
    assert [(e.kind, e.key) for e in listener.events] == [
        (EventKind.GOAL, 'goal:deliver'), (EventKind.CONSTRAINT, 'safety:zone/high_voltage')]
    assert listener.events[1].detail == DELIVERY.zone_value()


def test_parameters_set_goal_zone_and_door(start_mission):
    listener, spin_until = start_mission(
        goal_x=5.0, goal_y=8.0, goal_target='shelf', goal_tags=['delivery'],
        zone_polygon=[1.0, 1.0, 2.0, 1.0, 2.0, 2.0], door_state='open')
    spin_until(lambda: all(key in listener.board for key in STATIC_KEYS))
    assert listener.board['goal:deliver'][-1].value == {'target': 'shelf', 'x': 5.0, 'y': 8.0,
                                                        'tags': ['delivery']}
    assert listener.board['safety:zone/high_voltage'][-1].value == {
        'polygon': [[1.0, 1.0], [2.0, 1.0], [2.0, 2.0]]}
    assert listener.board['door:main'][-1].value['state'] == 'open'


def test_a_working_memory_that_starts_later_gets_the_mission_when_it_asks(start_mission):
    # A restarted working memory asks on resync/request; the mission answers with its static
    # keys and its opening events (BoardWriter, EventLogger).
    listener, spin_until = start_mission()
    spin_until(lambda: all(key in listener.board for key in STATIC_KEYS)
               and len(listener.events) >= 2)
    answers = []
    listener.node.create_subscription(ResyncAnswer, 'resync/answer', answers.append,
                                      latched_qos(ANSWERS_KEPT))
    ask = listener.node.create_publisher(Resync, 'resync/request', latched_qos(1))
    now = listener.node.get_clock().now().nanoseconds * 1e-9
    ask.publish(resync_msg('/restarted/working_memory', now, 60.0, 'a1'))
    spin_until(lambda: {a.writer for a in answers} and len(answers) == 2)
    keys = {entry.key for answer in answers for entry in answer.entries}
    assert set(STATIC_KEYS) <= keys
    kinds = {event.kind for answer in answers for event in answer.events}
    assert {LogEvent.GOAL, LogEvent.CONSTRAINT} <= kinds


@pytest.mark.parametrize('parameters, message', [
    ({'zone_polygon': [1.0, 1.0, 2.0, 1.0, 2.0]}, 'zone_polygon: needs x, y pairs'),
    ({'zone_polygon': [1.0, 1.0, 2.0, 1.0]}, 'zone_polygon: needs at least 3 vertices'),
    ({'goal_target': ''}, 'target: must not be empty'),
])
def test_bad_mission_parameters_are_rejected_naming_the_field(context, namespace, parameters,
                                                              message):
    with pytest.raises(ValueError, match=message):
        MissionNode(namespace=namespace, context=context,
                    parameter_overrides=[Parameter(n, value=v) for n, v in parameters.items()])
