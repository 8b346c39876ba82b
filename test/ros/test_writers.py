"""BoardWriter and EventLogger over real DDS: what they send, what they refuse, how they answer.

A working-memory node that starts from an empty memory asks on `resync/request`; each writer
answers each request once on `resync/answer`, with the truth it holds now (msg/Resync.msg,
msg/ResyncAnswer.msg, core/resync.py).
"""

import json
import math

import pytest
import rclpy
from rclpy.lifecycle import TransitionCallbackReturn

from working_memory.client import BoardWriter, EventLogger
from working_memory.core.items import BoardEntry
from working_memory.msg import BoardUpdate, LogEvent, Resync, ResyncAnswer
from working_memory.ros import qos
from working_memory.ros.conversions import resync_msg, seconds_from_time


@pytest.fixture
def wire(context, add_node, namespace):
    """Return (writer node, a probe recording board, log and answers, publish(request))."""
    writer = add_node(rclpy.create_node('writer', namespace=namespace, context=context))
    probe = add_node(rclpy.create_node('probe', namespace=namespace, context=context))
    probe.board, probe.log, probe.answers = [], [], []
    probe.create_subscription(BoardUpdate, 'board', probe.board.append, qos.input_qos())
    probe.create_subscription(LogEvent, 'log', probe.log.append, qos.input_qos())
    probe.create_subscription(ResyncAnswer, 'resync/answer', probe.answers.append,
                              qos.latched_qos(qos.ANSWERS_KEPT))
    requests = probe.create_publisher(Resync, 'resync/request', qos.latched_qos(1))
    return writer, probe, requests.publish


def matched(spin_until, *publishers):
    assert spin_until(lambda: all(p.get_subscription_count() for p in publishers))


def test_the_board_writer_sends_strict_json_and_answers_a_resync_once(wire, spin_until):
    node, probe, request = wire
    board = BoardWriter(node)
    matched(spin_until, board._publisher)
    board.set('goal:deliver', {'x': 16.0, 'y': 3.0}, importance=1.0, tags=['delivery'])
    board.update({'pose': {'x': 1.0, 'y': 2.0}, 'door:a': 'closed'}, ttl_s=2.0, stamp=50.0)
    board.remove('door:a')
    assert spin_until(lambda: len(probe.board) == 3)
    first = probe.board[0].entries[0]
    assert (first.key, json.loads(first.value), first.importance, list(first.tags)) == (
        'goal:deliver', {'x': 16.0, 'y': 3.0}, 1.0, ['delivery'])
    assert math.isnan(probe.board[1].entries[0].importance)
    assert list(probe.board[2].removed_keys) == ['door:a']
    # The request of a node that started: one answer with what the writer holds now.
    request(resync_msg('/wm', 60.0, 10.0, 'start-1'))
    assert spin_until(lambda: probe.answers)
    answer = probe.answers[0]
    assert (answer.node, seconds_from_time(answer.request_stamp), answer.start_id) == (
        '/wm', 60.0, 'start-1')
    assert answer.writer.startswith(f'{node.get_fully_qualified_name()}#')
    assert {entry.key: seconds_from_time(entry.stamp) for entry in answer.entries} == {
        'goal:deliver': pytest.approx(seconds_from_time(first.stamp)), 'pose': 50.0}
    assert not answer.events
    request(resync_msg('/wm', 60.0, 10.0, 'start-1'))   # the same start again: answered already
    request(resync_msg('/wm', 60.0, 10.0, 'start-2'))   # started again, the same stamp (sim time)
    assert spin_until(lambda: len(probe.answers) == 2)
    spin_until(lambda: False, timeout=0.3)
    assert len(probe.answers) == 2 and len(probe.board) == 3   # answers never go on `board`


def test_an_answer_reaches_a_node_that_matches_the_writer_only_later(
        context, add_node, spin_until, namespace):
    # The answer is latched: a node whose subscription is discovered after the answer went
    # out still gets it (the race a volatile answer would lose on a restart).
    node = add_node(rclpy.create_node('writer', namespace=namespace, context=context))
    board = BoardWriter(node)
    board.set('pose', {'x': 1.0, 'y': 2.0})
    board._on_request(resync_msg('/wm', 70.0, 0.0, 'start-1'))   # as if the request had come
    late = add_node(rclpy.create_node('late', namespace=namespace, context=context))
    answers = []
    late.create_subscription(ResyncAnswer, 'resync/answer', answers.append,
                             qos.latched_qos(qos.ANSWERS_KEPT))
    assert spin_until(lambda: answers)
    assert [entry.key for entry in answers[0].entries] == ['pose']


def test_what_a_board_writer_holds_goes_out_in_answers_only(wire, spin_until):
    node, probe, request = wire
    board = BoardWriter(node)
    matched(spin_until, board._publisher)
    board.hold([BoardEntry('goal:current', {'x': 4.0}, 5.0)])   # a relay's: the node has it
    board.set('pose', {'x': 1.0})
    assert spin_until(lambda: probe.board)
    assert [[entry.key for entry in update.entries] for update in probe.board] == [['pose']]
    request(resync_msg('/wm', 60.0, 10.0, 'start-1'))
    assert spin_until(lambda: probe.answers)
    board.hold((), ['goal:current'])
    request(resync_msg('/wm', 61.0, 10.0, 'start-2'))
    assert spin_until(lambda: len(probe.answers) == 2)
    assert [sorted(entry.key for entry in answer.entries) for answer in probe.answers] == [
        ['goal:current', 'pose'], ['pose']]


@pytest.mark.parametrize('call, match', [
    (lambda b: b.set('k', math.nan), "board key 'k': value is not strict JSON"),
    (lambda b: b.set('k', {'a': object()}), "board key 'k': value is not strict JSON"),
    (lambda b: b.set('', 1), 'key must not be empty'),
    (lambda b: b.set('k', 1, importance=2.0), 'importance'),
    (lambda b: b.set('k', 1, tags=[' x']), 'starts or ends with a space'),
    (lambda b: b.set('event:ACTION:x#1', 1), 'event'),
])
def test_the_board_writer_refuses_what_the_node_would_before_sending(wire, spin_until, call,
                                                                     match):
    node, probe, _ = wire
    board = BoardWriter(node)
    with pytest.raises(ValueError, match=match):
        call(board)
    assert board.standing == {}
    spin_until(lambda: False, timeout=0.2)
    assert probe.board == []


def test_the_event_logger_answers_with_its_window_oldest_first_as_first_sent(wire, spin_until):
    node, probe, request = wire
    log = EventLogger(node, source='executor')
    matched(spin_until, log._publisher)
    now = node.get_clock().now().nanoseconds * 1e-9
    log.log('ACTION', 'open_door', stamp=now - 1.0)
    log.log('FAILURE', 'open_door', {'attempt': 1}, stamp=now - 30.0)   # outside the window
    log.log(LogEvent.CONSTRAINT, 'safety:zone/high_voltage', tags=['safety'], stamp=now - 5.0)
    assert spin_until(lambda: len(probe.log) == 3)
    assert [(e.kind, e.source) for e in probe.log] == [
        (LogEvent.ACTION, 'executor'), (LogEvent.FAILURE, 'executor'),
        (LogEvent.CONSTRAINT, 'executor')]
    request(resync_msg('/wm', now, 10.0, 'start-1'))
    assert spin_until(lambda: probe.answers)
    assert [(event.key, event.header.stamp) for event in probe.answers[0].events] == [
        (probe.log[2].key, probe.log[2].header.stamp),
        (probe.log[0].key, probe.log[0].header.stamp)]
    assert probe.answers[0].events[0].tags == ['safety']


@pytest.mark.parametrize('kind, detail, match', [
    ('PANIC', None, "event kind 'PANIC': must be one of ACTION, FAILURE"),
    (99, None, 'event kind 99'),
    ('ACTION', {'x': math.inf}, 'detail is not strict JSON'),
])
def test_the_event_logger_refuses_bad_events(wire, kind, detail, match):
    node, _, _ = wire
    with pytest.raises(ValueError, match=match):
        EventLogger(node).log(kind, 'k', detail)


def test_a_writer_on_another_namespaces_topic_answers_that_namespaces_restarted_node(
        context, add_node, spin_until, start_memory, namespace):
    node, probe = start_memory()
    # A writer node in the root namespace writing the node's board by its absolute name.
    writer = BoardWriter(add_node(rclpy.create_node('root_writer', context=context)),
                         f'{namespace}/board')
    assert writer._answers.topic_name == f'{namespace}/resync/answer'
    matched(spin_until, writer._publisher)
    writer.set('goal:deliver', {'x': 16.0, 'y': 3.0})

    def holds_goal(frame):
        return 'goal:deliver' in {item.key for pack in frame.packs for item in pack.items}
    before = probe.wait_frame(holds_goal)
    # The node restarted: it holds nothing, asks on its namespace's resync/request.
    for transition in (node.trigger_deactivate, node.trigger_cleanup, node.trigger_configure,
                       node.trigger_activate):
        assert transition() == TransitionCallbackReturn.SUCCESS
    after = probe.wait_frame(lambda frame: frame.start_id != before.start_id and holds_goal(frame))
    assert after.restart


def test_a_resync_namespace_given_is_where_the_writer_answers(context, add_node, namespace):
    node = add_node(rclpy.create_node('writer', namespace=namespace, context=context))
    assert BoardWriter(node, '/robot1/board')._answers.topic_name == '/robot1/resync/answer'
    assert BoardWriter(node, 'board')._answers.topic_name == f'{namespace}/resync/answer'
    assert EventLogger(node, '/robot1/log', resync_namespace='resync')._answers.topic_name == \
        f'{namespace}/resync/answer'
