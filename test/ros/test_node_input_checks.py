"""Unusable keys, negative stamps, non-rotations: rejected, counted and named over real DDS."""

import math

import pytest
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry

from working_memory.msg import BoardEntry as BoardEntryMsg
from working_memory.msg import BoardUpdate, LogEvent
from working_memory.ros.conversions import time_from_seconds

# `ros2 topic pub` wraps `sec: 4000000000` into this int32.
WRAPPED = 4_000_000_000 - 2**32
FUTURE = 2**31 - 1


def now_s(node):
    return node.get_clock().now().nanoseconds * 1e-9


def pack(frame, cabin):
    return next(p for p in frame.packs if p.cabin == cabin)


def event(key, sec):
    msg = LogEvent(kind=LogEvent.FAILURE, source='test', key=key, importance=0.5)
    msg.header.stamp.sec = sec
    return msg


def test_a_log_event_stamped_before_zero_is_rejected_and_one_in_the_future_is_shown(
        start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.log)
    probe.log.publish(event('slip:past', -100))
    probe.log.publish(event('slip:wrapped', WRAPPED))
    probe.log.publish(event('slip:future', FUTURE))
    frame = probe.wait_frame(lambda f: any(e.key == 'slip:future'
                                           for e in pack(f, 'planner').recent_events))
    assert [e.key for e in pack(frame, 'planner').recent_events] == ['slip:future']
    status = probe.status('inputs', lambda s: probe.values(s)['log.rejected'] == '2')
    assert probe.values(status)['log.last_rejection'] == (
        "log event 'slip:wrapped': header.stamp: must not be negative, got -294967296.0 s")


def test_a_negative_board_stamp_rejects_its_entry_or_with_the_header_its_update(start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.board)
    update = BoardUpdate(entries=[BoardEntryMsg(key='reading:past', value='1', importance=0.5),
                                  BoardEntryMsg(key='reading:ok', value='2', importance=0.5)])
    update.header.stamp = time_from_seconds(now_s(node))
    update.entries[0].stamp.sec = -100
    probe.board.publish(update)
    whole = BoardUpdate(entries=[BoardEntryMsg(key='reading:unsent', value='3', importance=0.5)])
    whole.header.stamp.sec = -100
    probe.board.publish(whole)
    status = probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '2')
    assert probe.values(status)['board.last_rejection'] == (
        'header.stamp: must not be negative, got -100.0 s (the whole update is rejected)')
    # A frame from after both updates were taken: the good entry in, the rejected ones not.
    frame = probe.wait_frame()
    assert any(i.key == 'reading:ok' for i in frame.packs[0].items)
    assert not any(i.key in ('reading:past', 'reading:unsent')
                   for p in frame.packs for i in p.items)


def test_unusable_board_keys_and_a_key_set_twice_are_rejected_and_counted_the_rest_applies(
        start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.board)
    probe.wait_matched(probe.log)
    entries = [BoardEntryMsg(key='reading:a\nb', value='1'),
               BoardEntryMsg(key='reading:' + 'k' * 300, value='2'),
               BoardEntryMsg(key='event:FAILURE:door#1', value='3'),
               BoardEntryMsg(key='reading:tagged', value='4', tags=['']),
               BoardEntryMsg(key='reading:twice', value='5'),
               BoardEntryMsg(key='reading:ok', value='6'),
               BoardEntryMsg(key='reading:twice', value='7')]
    for entry in entries:
        entry.importance = 0.5
    update = BoardUpdate(entries=entries)
    update.header.stamp = time_from_seconds(now_s(node))
    probe.board.publish(update)
    probe.log.publish(event('door\tjammed', 0))
    status = probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '5'
                          and probe.values(s)['log.rejected'] == '1')
    assert probe.values(status)['board.last_rejection'] == (
        "entries[4] board entry 'reading:twice': key set again by entries[6] of the same update, "
        'which applies')
    assert probe.values(status)['log.last_rejection'] == (
        "event: key 'door\\tjammed' holds the unprintable character '\\t'")
    frame = probe.wait_frame(lambda f: any(i.key == 'reading:ok' for i in pack(f, 'planner').items))
    items = {i.key: i.value for p in frame.packs for i in p.items}
    assert items['reading:ok'] == '6' and items['reading:twice'] == '7'
    assert not [key for key in items if key.startswith(('reading:a', 'reading:k', 'event:',
                                                        'reading:tagged'))]


def odometry(q):
    msg = Odometry()
    msg.header.frame_id = 'map'
    o = msg.pose.pose.orientation
    o.x, o.y, o.z, o.w = q
    return msg


def pose_stamped(q):
    msg = PoseStamped()
    msg.header.frame_id = 'map'
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = q
    return msg


@pytest.mark.parametrize('source, topic, field, msg_type, make', [
    ('odometry', 'odom', 'pose.pose', Odometry, odometry),
    ('pose_stamped', 'pose', 'pose', PoseStamped, pose_stamped)])
def test_a_pose_whose_orientation_is_no_rotation_is_rejected_naming_the_field(
        start_memory, source, topic, field, msg_type, make):
    node, probe = start_memory({'pose_source': source})
    publisher = probe.node.create_publisher(msg_type, topic, 10)
    probe.wait_matched(publisher)
    # Pose topics are best effort: publish until the node names the fault.
    for q, reason in (((math.nan, 0.0, 0.0, 1.0), 'must be finite, got (nan, 0.0, 0.0, 1.0)'),
                      ((0.0, 0.0, 0.0, 0.0),
                       'must be a quaternion of nonzero norm, got (0.0, 0.0, 0.0, 0.0)')):
        expected = f'{topic}: {field}.orientation {reason}'
        probe.status('inputs',
                     lambda s, expected=expected: probe.values(s).get(
                         f'{topic}.last_rejection') == expected,
                     on_spin=lambda q=q: publisher.publish(make(q)))
