"""Inputs to frames, the latched frame, and the assemble/explain services, over real DDS."""

import array
import json
import math

import pytest
import rclpy
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.parameter import Parameter

from working_memory.client import WorkingMemoryClient
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.windows import WINDOWS_KEPT, window_digest
from working_memory.msg import BoardEntry as BoardEntryMsg
from working_memory.msg import BoardUpdate, ContextFrame, Eviction, LogEvent, MissingItem
from working_memory.msg import MapWindow as MapWindowMsg
from working_memory.ros import qos
from working_memory.ros.conversions import (board_update_msg, log_event_msg, pack_view_from_msg,
                                            time_from_seconds)
from working_memory.sim.conversions import odometry_msg

OBSTACLE = (10, 12)  # (row, col) of the one occupied cell


def grid_msg(width=40, height=30, resolution=0.1):
    """Return a free width x height map at the origin with one occupied cell at OBSTACLE."""
    cells = bytearray(width * height)
    cells[OBSTACLE[0] * width + OBSTACLE[1]] = 100
    msg = OccupancyGrid()
    msg.header.frame_id = 'map'
    msg.info.resolution = resolution
    msg.info.width, msg.info.height = width, height
    msg.info.origin.orientation.w = 1.0
    msg.data = array.array('b', bytes(cells))
    return msg


def now_s(node):
    return node.get_clock().now().nanoseconds * 1e-9


def publish_board(probe, node, *entries, removed=()):
    probe.board.publish(board_update_msg(entries, now_s(node), removed))


def publish_event(probe, kind, key, detail=None, importance=None, tags=()):
    probe.log.publish(log_event_msg(Event(stamp=0.0, kind=kind, source='test', key=key,
                                          detail=detail, importance=importance, tags=tags)))


def entry(key, value, importance=None, **fields):
    return BoardEntry(key, value, stamp=0.0, importance=importance, **fields)


def pack(frame, cabin):
    return next(p for p in frame.packs if p.cabin == cabin)


def keys(pack_msg):
    return {item.key for item in pack_msg.items}


def feed_delivery_scene(probe, node):
    """Map, goal, safety constraint, pose, current action, and three events."""
    probe.wait_matched(probe.board, probe.log)
    probe.map.publish(grid_msg())
    publish_board(probe, node, entry('goal:deliver', {'to': 'dock'}),
                  entry('safety:zone', {'x': 3.0}),
                  entry('pose', {'x': 1.25, 'y': 1.05, 'yaw': 0.0}),
                  entry('action:current', {'name': 'drive'}))
    publish_event(probe, EventKind.CONSTRAINT, 'door:main', {'closed': True}, importance=0.8)
    publish_event(probe, EventKind.FAILURE, 'open_door', {'attempt': 1}, importance=0.7)
    publish_event(probe, EventKind.ACTION, 'drive', None, importance=0.4)


# These tests read each pack's window in the frame itself (test_windows.py: by reference).
INLINE = {'map_windows': 'inline'}


def complete(frame):
    planner, executor = pack(frame, 'planner'), pack(frame, 'executor')
    return (len(planner.recent_events) == 2 and len(executor.recent_events) == 3
            and planner.nearby_map.info.width and 'action:current' in keys(executor))


def test_board_map_and_log_inputs_reach_every_pack_of_the_frame(start_memory):
    node, probe = start_memory(INLINE)
    feed_delivery_scene(probe, node)
    frame = probe.wait_frame(complete)
    planner, executor = pack(frame, 'planner'), pack(frame, 'executor')
    assert [p.cabin for p in frame.packs] == ['planner', 'executor']
    assert planner.tick == executor.tick == frame.tick and frame.digest
    assert keys(planner) == {'goal:deliver', 'safety:zone', 'pose'}
    assert keys(executor) == {'action:current', 'pose'}
    items = {item.key: item for item in planner.items}
    assert json.loads(items['pose'].value) == {'x': 1.25, 'y': 1.05, 'yaw': 0.0}
    assert items['pose'].importance == 0.9 and not items['pose'].exempt
    assert items['goal:deliver'].exempt and items['safety:zone'].exempt
    assert [e.key for e in planner.recent_events] == ['door:main', 'open_door']
    assert planner.recent_events[0].kind == LogEvent.CONSTRAINT
    assert json.loads(planner.recent_events[0].detail) == {'closed': True}
    assert not planner.missing and not executor.missing
    # The 1 m window around (1.25, 1.05) m: columns 2..22, rows 0..20 of the 0.1 m grid.
    window = planner.nearby_map
    assert (window.info.width, window.info.height) == (21, 21)
    assert math.isclose(window.info.origin.position.x, 0.2, abs_tol=1e-6)
    assert window.info.origin.position.y == 0.0
    assert window.header.frame_id == 'map'
    row, col = OBSTACLE[0] - 0, OBSTACLE[1] - 2
    assert window.data[row * 21 + col] == 100 and sum(window.data) == 100
    assert not executor.nearby_map.info.width   # the executor manifest has no map scope


def test_removed_board_key_leaves_the_next_frames(start_memory):
    node, probe = start_memory()
    feed_delivery_scene(probe, node)
    probe.wait_frame(lambda f: 'safety:zone' in keys(pack(f, 'planner')))
    publish_board(probe, node, removed=['safety:zone'])
    probe.wait_frame(lambda f: 'safety:zone' not in keys(pack(f, 'planner')))


def test_late_subscriber_gets_the_latched_current_frame(start_memory, context, add_node,
                                                        spin_until, namespace):
    node, probe = start_memory()
    probe.wait_frame()
    node.trigger_deactivate()   # no new frames: the latched one is the last published
    last = probe.frames[-1]
    late_node = add_node(rclpy.create_node('late', namespace=namespace, context=context))
    late = []
    late_node.create_subscription(ContextFrame, 'working_memory/frame', late.append,
                                  qos.frame_qos())
    assert spin_until(lambda: late)
    assert late[0].tick == last.tick and late[0].digest == last.digest


@pytest.mark.parametrize('map_windows', ['inline', 'reference'])
def test_assemble_returns_exactly_the_pack_published_in_that_tick(start_memory, map_windows):
    node, probe = start_memory({'map_windows': map_windows})
    feed_delivery_scene(probe, node)
    frame = probe.wait_frame(lambda f: pack(f, 'planner').map_window_digest
                             and 'action:current' in keys(pack(f, 'executor')))
    for index, cabin in enumerate(('planner', 'executor')):
        response = probe.assemble(cabin, frame.tick)
        assert response.success and response.message == ''
        published = frame.packs[index]
        if map_windows == 'reference' and published.map_window_digest:
            # The service answers the window inline: the one the frame names by digest.
            view = pack_view_from_msg(response.pack, None)
            assert view.map_window is not None and not published.nearby_map.info.width
            response.pack.nearby_map = published.nearby_map
        assert response.pack == published
    latest = probe.assemble('planner', 0)
    assert latest.success and latest.pack.tick >= frame.tick


def test_bad_requests_fail_with_a_message_saying_what_is_valid(start_memory):
    node, probe = start_memory({'frames_kept': 3})
    first = probe.wait_frame()
    probe.wait_frame(lambda frame: frame.tick >= first.tick + 5)
    unknown = probe.assemble('navigator')
    assert not unknown.success
    assert 'navigator' in unknown.message and 'planner, executor' in unknown.message
    gone = probe.assemble('planner', first.tick)
    assert not gone.success and 'retained ticks' in gone.message
    future = probe.assemble('planner', 10**12)
    assert not future.success and 'retained ticks' in future.message
    no_key = probe.explain('planner', '')
    assert not no_key.success and no_key.message.startswith('key:')
    unknown = probe.explain('navigator', 'pose')
    assert not unknown.success and 'planner, executor' in unknown.message
    probe.wait_frame()   # still ticking


def test_explain_answers_every_reason(start_memory):
    node, probe = start_memory({'capacity': 4})
    probe.wait_matched(probe.board)
    now = now_s(node)
    readings = [entry(f'reading:{n}', n) for n in range(6)]
    publish_board(probe, node, entry('goal:deliver', {'to': 'dock'}),
                  entry('pose', {'x': 1.0, 'y': 1.0}), *readings,
                  entry('reading:charger', 1, tags=('charging',)),
                  BoardEntry('reading:old', 0, stamp=now - 100.0, ttl=1.0))
    frame = probe.wait_frame(lambda f: 'pose' in keys(pack(f, 'planner'))
                             and any(m.key == 'reading:old' for m in pack(f, 'planner').missing))
    served = keys(pack(frame, 'planner'))
    evicted = next(r.key for r in readings if r.key not in served)
    expected = {'pose': 'PRESENT', 'battery': 'NEVER_SEEN', 'reading:old': 'STALE',
                evicted: 'EVICTED', 'reading:charger': 'OUT_OF_SCOPE',
                'action:current': 'NOT_IN_MANIFEST'}
    for key, reason in expected.items():
        answer = probe.explain('planner', key, frame.tick)
        assert answer.success, answer.message
        assert (answer.reason, answer.present) == (reason, reason == 'PRESENT'), (key, answer)
        assert answer.detail
    assert probe.spin_until(lambda: any(e.key.startswith('reading:') for e in probe.evictions))
    record = next(e for e in probe.evictions if e.key.startswith('reading:'))
    assert record.reason == Eviction.CAPACITY and record.importance == 0.1

    drop = Parameter('cabins.planner.drop', value=['board:pose'])
    assert node.set_parameters([drop])[0].successful
    dropped = probe.wait_frame(lambda f: 'pose' not in keys(pack(f, 'planner')))
    answer = probe.explain('planner', 'pose', dropped.tick)
    assert (answer.present, answer.reason) == (False, 'INJECTED_DROP')
    # Frozen frames keep their answer; the other cabin is untouched by the planner's drop.
    assert probe.explain('planner', 'pose', frame.tick).reason == 'PRESENT'
    assert 'pose' in keys(pack(dropped, 'executor'))


def test_injected_drop_is_visible_in_packs_and_switchable_at_runtime(start_memory):
    node, probe = start_memory(INLINE)
    feed_delivery_scene(probe, node)
    probe.wait_frame(complete)
    node.set_parameters([Parameter('cabins.planner.drop', value=['events:FAILURE', 'map'])])
    frame = probe.wait_frame(lambda f: not pack(f, 'planner').nearby_map.info.width)
    planner = pack(frame, 'planner')
    assert [e.key for e in planner.recent_events] == ['door:main']
    drops = {(m.key, m.reason) for m in planner.missing}
    assert {('events:FAILURE', MissingItem.INJECTED_DROP),
            ('map', MissingItem.INJECTED_DROP)} <= drops
    node.set_parameters([Parameter('cabins.planner.drop', Parameter.Type.STRING_ARRAY, [])])
    probe.wait_frame(complete)


def test_bad_inputs_are_counted_in_diagnostics_and_good_ones_still_apply(start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.board, probe.log)
    update = BoardUpdate(entries=[
        BoardEntryMsg(key='battery', value='0.8', importance=0.5),
        BoardEntryMsg(key='goal:broken', value='{oops', importance=float('nan')),
        BoardEntryMsg(key='pose', value='{"x": 1, "y": 1}', importance=1.5),
    ])
    update.header.stamp = time_from_seconds(now_s(node))
    probe.board.publish(update)
    malformed = grid_msg()
    malformed.info.width = 7
    probe.map.publish(malformed)
    probe.log.publish(LogEvent(kind=42, key='what'))
    status = probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '2'
                          and probe.values(s)['map.rejected'] == '1'
                          and probe.values(s)['log.rejected'] == '1')
    values = probe.values(status)
    assert status.level == b'\x01'
    # Entries are checked in order: the JSON error first, then the importance.
    assert "entries[2] board entry 'pose': importance" in values['board.last_rejection']
    assert 'width 7' in values['map.last_rejection']
    assert 'kind 42' in values['log.last_rejection']
    frame = probe.wait_frame(lambda f: 'battery' in keys(pack(f, 'planner')))
    assert 'goal:broken' not in keys(pack(frame, 'planner'))


def odometry(x, y, stamp, frame_id):
    return odometry_msg(x, y, 0.0, 0.0, 0.0, stamp, frame_id, 'base_link')


def pose_stamped(x, y, stamp, frame_id):
    msg = PoseStamped()
    msg.header.stamp, msg.header.frame_id = time_from_seconds(stamp), frame_id
    msg.pose.position.x, msg.pose.position.y = x, y
    return msg


def test_with_a_pose_topic_a_board_pose_does_not_place_the_map_window(start_memory):
    node, probe = start_memory({'pose_source': 'odometry', **INLINE})
    probe.wait_matched(probe.board)
    probe.map.publish(grid_msg())
    publish_board(probe, node, entry('pose', {'x': 1.25, 'y': 1.05, 'yaw': 0.0}))

    def pose_and_map_in(frame):
        planner = pack(frame, 'planner')
        return 'pose' in keys(planner) and not any(
            m.key == 'map' and 'no map' in m.detail for m in planner.missing)
    planner = pack(probe.wait_frame(pose_and_map_in), 'planner')
    assert planner.nearby_map.info.width == 0
    (report,) = [m for m in planner.missing if m.key == 'map']
    assert 'does not come from the board' in report.detail


@pytest.mark.parametrize('source, topic, msg_type, make', [
    ('odometry', 'odom', Odometry, odometry), ('pose_stamped', 'pose', PoseStamped, pose_stamped)])
def test_pose_topic_places_the_map_window_and_rejects_other_frames(start_memory, source, topic,
                                                                   msg_type, make):
    node, probe = start_memory({'pose_source': source, **INLINE})
    pose = probe.node.create_publisher(msg_type, topic, 10)
    probe.map.publish(grid_msg())
    probe.wait_matched(pose)

    def publish(frame_id):
        pose.publish(make(2.55, 1.55, now_s(node), frame_id))

    def windows():
        return [f for f in probe.frames if pack(f, 'planner').nearby_map.info.width]
    # Pose topics are best effort: keep publishing until a frame carries the window.
    assert probe.spin_until(windows, on_spin=lambda: publish('map'))
    window = pack(windows()[0], 'planner').nearby_map
    assert math.isclose(window.info.origin.position.x, 1.5, abs_tol=1e-6)
    assert math.isclose(window.info.origin.position.y, 0.5, abs_tol=1e-6)
    status = probe.status('inputs', lambda s: probe.values(s)[f'{topic}.rejected'] != '0',
                          on_spin=lambda: publish('odom'))
    assert "'odom' is not map_frame 'map'" in probe.values(status)[f'{topic}.last_rejection']


# -- map windows by reference (map_windows: reference, the default) ------------------


def window_messages(probe, cabin='planner'):
    """Subscribe the probe to `cabin`'s window topic; return the list the messages go to."""
    received = []
    probe.node.create_subscription(MapWindowMsg, f'{probe.fully_qualified_name}/{cabin}/window',
                                   received.append, qos.latched_qos(WINDOWS_KEPT))
    return received


def names_window(frame):
    return bool(pack(frame, 'planner').map_window_digest)


def test_late_joiner_gets_a_complete_digest_checked_context_at_once(start_memory, add_node,
                                                                    context, namespace):
    node, probe = start_memory()
    feed_delivery_scene(probe, node)
    frame = probe.wait_frame(names_window)
    planner = pack(frame, 'planner')
    assert not planner.nearby_map.info.width   # by reference: the frame carries no cells
    late = WorkingMemoryClient(add_node(rclpy.create_node('late', context=context)), 'planner',
                               f'{namespace}/working_memory')
    assert probe.spin_until(lambda: late.latest() is not None)
    view = late.latest()
    assert view.map_window is not None and view.map_window_digest
    assert window_digest(view.map_window) == view.map_window_digest
    # The 1 m window around (1.25, 1.05) m of the test map: 21 x 21 cells, one obstacle.
    assert view.map_window.data.shape == (21, 21)
    assert view.map_window.data[OBSTACLE[0], OBSTACLE[1] - 2] == 100
    assert int(view.map_window.data.sum()) == 100
    assert late.rejected_windows == late.dropped_packs == 0


def test_a_window_is_not_sent_again_while_the_pose_holds_still(start_memory):
    node, probe = start_memory()
    windows = window_messages(probe)
    feed_delivery_scene(probe, node)
    first = probe.wait_frame(names_window)
    later = [probe.wait_frame() for _ in range(20)]
    digests = {pack(frame, 'planner').map_window_digest for frame in [first, *later]}
    assert len(digests) == 1
    assert [window.digest for window in windows] == list(digests)
    assert windows[0].cabin == 'planner' and windows[0].tick <= first.tick


def test_a_moved_pose_publishes_one_new_window_named_by_its_frame(start_memory, add_node,
                                                                  context, namespace):
    node, probe = start_memory()
    windows = window_messages(probe)
    packs = []
    client = WorkingMemoryClient(add_node(rclpy.create_node('planner', context=context)),
                                 'planner', f'{namespace}/working_memory', on_pack=packs.append)
    feed_delivery_scene(probe, node)
    before = pack(probe.wait_frame(names_window), 'planner').map_window_digest
    publish_board(probe, node, entry('pose', {'x': 2.05, 'y': 1.55, 'yaw': 0.0}))
    moved = probe.wait_frame(lambda f: pack(f, 'planner').map_window_digest not in ('', before))
    after = pack(moved, 'planner').map_window_digest
    assert probe.spin_until(lambda: len(windows) == 2 and any(
        view.map_window_digest == after for view in packs))
    assert [window.digest for window in windows] == [before, after]
    # Published in the tick that first named it, before that tick's frame.
    first_naming = min(f.tick for f in probe.frames
                       if pack(f, 'planner').map_window_digest == after)
    assert windows[1].tick == first_naming
    # The client never hands out a pack without the window it names.
    assert packs and all(window_digest(view.map_window) == view.map_window_digest
                         for view in packs if view.map_window_digest)
    assert client.dropped_packs == client.rejected_windows == 0
