"""One writer cannot swell every frame: a value over max_value_bytes is refused, over real DDS.

A 5 MB board value, event detail or source output is refused with its key, size and limit,
counted on /diagnostics, logged once per key while its refusals go on and told by
~/explain; the key keeps the value it had, the rest of the input is taken and the frames
keep their size (measured on the frames received).
"""

import json

import pytest
from rcl_interfaces.msg import Log
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from std_msgs.msg import String

from working_memory.client import BoardWriter, EventLogger
from working_memory.msg import BoardEntry as BoardEntryMsg
from working_memory.msg import BoardUpdate, LogEvent
from working_memory.ros.conversions import time_from_seconds
from working_memory.tools.recorder_node import RecorderNode
from working_memory.tools.recording import load_run
from working_memory.tools.replay import Settings, agreement

BIG = json.dumps('x' * 5_000_000)   # 5,000,002 bytes of JSON
OVER = '5,000,002 bytes of JSON, over max_value_bytes 262,144'
# What a frame may grow by when a small value changes, far below the 5 MB refused [bytes].
SMALL_CHANGE = 1_000


def now_s(node):
    return node.get_clock().now().nanoseconds * 1e-9


def board_update(node, values):
    """Return a BoardUpdate setting `values` ({key: JSON text}), stamped now."""
    msg = BoardUpdate(entries=[BoardEntryMsg(key=key, value=text, importance=0.5)
                               for key, text in values.items()])
    msg.header.stamp = time_from_seconds(now_s(node))
    return msg


def failure(node, key, detail):
    """Return a FAILURE event stamped now (so a replay places it where the node did)."""
    msg = LogEvent(kind=LogEvent.FAILURE, source='test', key=key, detail=detail, importance=0.5)
    msg.header.stamp = time_from_seconds(now_s(node))
    return msg


def items(frame, cabin='planner'):
    (pack,) = [pack for pack in frame.packs if pack.cabin == cabin]
    return {item.key: item.value for item in pack.items}


def events(frame, cabin='planner'):
    (pack,) = [pack for pack in frame.packs if pack.cabin == cabin]
    return [(event.key, event.detail) for event in pack.recent_events]


def frame_bytes(frame):
    return len(serialize_message(frame))


def test_a_5_mb_board_value_is_refused_and_the_key_and_the_frames_keep_theirs(start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.board)
    probe.board.publish(board_update(node, {'reading:big': '"small"'}))
    before = probe.wait_frame(lambda f: items(f).get('reading:big') == '"small"')
    probe.board.publish(board_update(node, {'reading:big': BIG, 'reading:other': '1'}))
    after = probe.wait_frame(lambda f: 'reading:other' in items(f))
    assert items(after)['reading:big'] == '"small"'
    assert frame_bytes(after) < frame_bytes(before) + SMALL_CHANGE
    status = probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '1')
    assert probe.values(status)['board.last_rejection'] == (
        f"board entry 'reading:big': value: {OVER}")
    answer = probe.explain('planner', 'reading:big')
    assert answer.present and answer.reason == 'PRESENT'
    assert '; a later value refused: 5,000,002 bytes over max_value_bytes 262,144 at t=' in (
        answer.detail) and answer.detail.endswith(' s, this one kept')
    # Never there, refused from the first: absent, and explained so.
    probe.board.publish(board_update(node, {'reading:never': BIG, 'reading:third': '3'}))
    probe.wait_frame(lambda f: 'reading:third' in items(f))
    answer = probe.explain('planner', 'reading:never')
    assert (answer.present, answer.reason) == (False, 'NEVER_SEEN')
    assert answer.detail.startswith('not on the board at tick ')
    assert '; refused: 5,000,002 bytes over max_value_bytes 262,144 at t=' in answer.detail


def test_a_keys_refusals_are_logged_once_while_they_go_on(start_memory, spin_until):
    node, probe = start_memory()
    lines = []
    probe.node.create_subscription(
        Log, '/rosout', lambda log: lines.append(log.msg) if 'reading:loud' in log.msg else None,
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL))
    probe.wait_matched(probe.board)
    for _ in range(3):
        probe.board.publish(board_update(node, {'reading:loud': BIG}))
    probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '3')
    # A value taken ends the refusals: the next one is logged again.
    probe.board.publish(board_update(node, {'reading:loud': '2'}))
    probe.wait_frame(lambda f: items(f).get('reading:loud') == '2')
    probe.board.publish(board_update(node, {'reading:loud': BIG}))
    # The node's log lines arrive in order: when the last is in, every earlier one is too.
    assert spin_until(lambda: len(lines) >= 2)
    assert len(lines) == 2
    assert all(f"board: rejected input: board entry 'reading:loud': value: {OVER}" in line
               for line in lines)


def test_a_5_mb_event_detail_is_refused_and_the_events_and_frames_stay_as_they_were(
        start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.log)
    probe.log.publish(failure(node, 'slip', '{"small": 1}'))
    before = probe.wait_frame(lambda f: [key for key, _ in events(f)] == ['slip'])
    probe.log.publish(failure(node, 'slip', BIG))
    probe.log.publish(failure(node, 'jam', '{"small": 2}'))
    after = probe.wait_frame(lambda f: 'jam' in [key for key, _ in events(f)])
    assert events(after) == [('slip', '{"small":1}'), ('jam', '{"small":2}')]
    assert frame_bytes(after) < frame_bytes(before) + SMALL_CHANGE
    status = probe.status('inputs', lambda s: probe.values(s)['log.rejected'] == '1')
    assert probe.values(status)['log.last_rejection'] == f"log event 'slip': detail: {OVER}"
    answer = probe.explain('planner', 'event:FAILURE:slip#99')
    assert (answer.present, answer.reason) == (False, 'NEVER_SEEN')
    assert answer.detail.startswith(
        "no FAILURE event 'slip' numbered 99 was ever logged; refused: 5,000,002 bytes over "
        'max_value_bytes 262,144 at t=')


NOTES = ('sources:\n  note:\n    topic: note\n    type: std_msgs/msg/String\n'
         "    board: [{key: 'reading:note', value: data, importance: 0.5}]\n"
         '    events: [{key: note, kind: FAILURE, detail: {text: data}}]\n')


def test_a_5_mb_source_output_is_refused_and_counted_per_topic_and_per_source(
        start_memory, tmp_path):
    path = tmp_path / 'notes.yaml'
    path.write_text(NOTES)
    node, probe = start_memory({'sources_file': str(path)})
    notes = probe.node.create_publisher(String, 'note', 10)
    probe.wait_matched(notes)
    notes.publish(String(data='small'))
    before = probe.wait_frame(lambda f: items(f).get('reading:note') == '"small"'
                              and [key for key, _ in events(f)] == ['note'])
    notes.publish(String(data='x' * 5_000_000))
    sources = probe.status('sources', lambda s: probe.values(s)['note.rejected'] == '1')
    assert probe.values(sources)['note.last_rejection'] == (
        "events[0]: log event 'note': detail: "
        '5,000,011 bytes of JSON, over max_value_bytes 262,144')
    status = probe.status('inputs', lambda s: probe.values(s)['note.rejected'] == '2')
    assert probe.values(status)['note.last_rejection'] == probe.values(sources)[
        'note.last_rejection']
    after = probe.wait_frame()
    assert items(after)['reading:note'] == '"small"' and len(events(after)) == 1
    assert frame_bytes(after) < frame_bytes(before) + SMALL_CHANGE
    answer = probe.explain('planner', 'reading:note')
    assert answer.present and '; a later value refused: 5,000,002 bytes' in answer.detail


def test_the_writers_raise_before_sending_a_value_the_node_would_refuse(start_memory):
    node, probe = start_memory()
    board, log = BoardWriter(probe.node), EventLogger(probe.node)
    with pytest.raises(ValueError, match="board key 'reading:big': value: 300,002 bytes of "
                                         'JSON, over max_value_bytes 262,144'):
        board.set('reading:big', 'x' * 300_000)
    with pytest.raises(ValueError, match="event 'slip': detail: 300,002 bytes of JSON, over "
                                         'max_value_bytes 262,144'):
        log.log('FAILURE', 'slip', 'x' * 300_000)
    assert 'reading:big' not in board.standing
    # A writer told of a larger limit sends it: this node refuses it, counted.
    lenient = BoardWriter(probe.node, max_value_bytes=1_000_000)
    probe.wait_matched(lenient._publisher)
    lenient.set('reading:big', 'x' * 300_000)
    status = probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '1')
    assert '300,002 bytes of JSON' in probe.values(status)['board.last_rejection']


def test_replay_refuses_what_the_node_refused_and_agrees_on_every_tick(
        start_memory, tmp_path, add_node, spin_until, context):
    node, probe = start_memory()
    namespace = probe.node.get_namespace()
    topics = [f'{namespace}/working_memory/frame', f'{namespace}/board', f'{namespace}/log']
    recorder = add_node(RecorderNode(context=context, parameter_overrides=[
        Parameter('bag_path', value=str(tmp_path / 'bag')), Parameter('topics', value=topics)]))
    assert spin_until(lambda: not recorder.waiting_for and all(
        pub.get_subscription_count() == 2 for pub in (probe.board, probe.log)))
    probe.board.publish(board_update(node, {'reading:big': '"small"'}))
    probe.log.publish(failure(node, 'slip', '{"small": 1}'))
    probe.wait_frame(lambda f: 'reading:big' in items(f) and events(f))
    probe.board.publish(board_update(node, {'reading:big': BIG, 'reading:other': '1'}))
    probe.log.publish(failure(node, 'slip', BIG))
    probe.log.publish(failure(node, 'jam', '{"small": 2}'))
    probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '1'
                 and probe.values(s)['log.rejected'] == '1')
    after = probe.wait_frame(lambda f: 'reading:other' in items(f)
                             and 'jam' in [key for key, _ in events(f)])
    # Frames reach the recorder in order: one after it, and it is in the bag.
    recorded = recorder.counts[topics[0]]
    assert spin_until(lambda: recorder.counts[topics[0]] > recorded)
    recorder.close()
    values = {name: parameter.value
              for name, parameter in node.get_parameters_by_prefix('').items()}
    run = load_run(recorder.bag_path)
    assert after.tick in [frame.tick for frame in run.recording.frames]
    result = agreement(run, Settings(values, 'the node', f'{namespace}/working_memory'))
    assert result.agreeing == result.ticks, result.mismatches[:2]
