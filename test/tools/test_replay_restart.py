"""Replay across a restart on a synthetic run of two node starts.

The node's own memory (engine/engine.py) is fed as its callbacks feed it, one start and then
another; the "recorder" writes every message, with its publisher and number (RecordedIds),
into the bag.

The restarted node misses a plain writer's update published after it started (discovery had
not matched them yet), and takes two writers' answers in the order opposite to the bag's: the
receipts (input starts) and the message ids make the replay exact; a bag without the ids cannot
tell, and the replay says so.
"""

from __future__ import annotations

from functools import partial

from rclpy.serialization import serialize_message

from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import manifests_from_params
from working_memory.engine.config import config_from_values, default_values
from working_memory.engine.engine import Arrival, build_engine
from working_memory.msg import RecordedIds
from working_memory.ros import conversions as conv
from working_memory.tools.bag import BagWriter, IDS_TOPIC_SUFFIX, IDS_TYPE, MessageIds
from working_memory.tools.recording import load_run, message_ids
from working_memory.tools.replay import Settings, agreement, format_agreement, replay

CABIN = {'board_keys': ['goal:*', 'safety:*', 'sensor:*'],
         'events': {'window_s': 5.0, 'kinds': ['CONSTRAINT', 'FAILURE']}}
VALUES = {'capacity': 10, 'cabin_names': ['planner'],
          'cabins.planner.board_keys': CABIN['board_keys'],
          'cabins.planner.events.window_s': 5.0,
          'cabins.planner.events.kinds': CABIN['events']['kinds']}
TYPES = {'/board': 'working_memory/msg/BoardUpdate',
         '/resync/answer': 'working_memory/msg/ResyncAnswer',
         '/working_memory/frame': 'working_memory/msg/ContextFrame'}
# The writers' gids: two plain ones, and two that answer a resync.
PLAIN, OTHER, GOALS, SAFETY = b'\xaa' * 16, b'\xdd' * 16, b'\xbb' * 16, b'\xcc' * 16


def sensor(key: str, reading: float, stamp: float):
    return conv.board_update_msg([BoardEntry(key, {'reading': reading}, stamp, None, 0.0, ())],
                                 stamp)


def answer(start_id: str, writer: str, entry: BoardEntry, event: Event, stamp: float):
    request = conv.resync_msg('/working_memory', stamp, 5.0, start_id)
    return conv.resync_answer_msg(request, writer, [entry], [event], stamp)


def write_run(path, *, ids: bool = True):
    """Write two starts of the node (the second a restart at 0.35 s); return the bag."""
    config = config_from_values({**default_values(), **VALUES})
    manifests = manifests_from_params({'cabins': {'planner': CABIN}})
    goal = BoardEntry('goal:deliver', {'x': 2}, 0.01, 1.0, 0.0, ())
    zone = BoardEntry('safety:zone/a', {'polygon': [[0, 0], [1, 0], [1, 1]]}, 0.01, 1.0, 0.0, ())
    constraint = Event(0.02, EventKind.CONSTRAINT, 'world', 'safety:zone/a', {'why': 'test'})
    failure = Event(0.03, EventKind.FAILURE, 'world', 'open_door', {'why': 'stuck'})
    numbers = {}   # (topic, gid) -> last sequence number written
    noted = MessageIds()
    with BagWriter(path) as writer:
        def publish(topic, gid, msg, stamp, memory=None):
            """Publish `msg`: the recorder writes it; the node takes it when given."""
            number = numbers[topic, gid] = numbers.get((topic, gid), 0) + 1
            writer.write(topic, TYPES[topic], serialize_message(msg), round(stamp * 1e9))
            noted.add(topic, gid, number)
            return (topic, gid, number, msg, stamp) if memory is None else take(
                memory, (topic, gid, number, msg, stamp))

        def take(engine, published):
            topic, gid, number, msg, stamp = published
            arrival = Arrival(stamp, stamp, gid, number)
            if topic == '/board':
                engine.take_board(arrival, partial(conv.board_batch_from_bytes,
                                                   serialize_message(msg)))
            else:
                engine.take_answer(arrival, partial(conv.answer_from_msg, msg))

        def tick(engine, start_id, tick_number, now):
            receipt = engine.tick(now, tick_number)
            msg = conv.context_frame_msg(receipt.frame, 'map', receipt.receipt.counts, True,
                                         engine.resync.started, False, start_id,
                                         receipt.receipt.starts, receipt.receipt.order)
            writer.write('/working_memory/frame', TYPES['/working_memory/frame'],
                         serialize_message(msg), round(now * 1e9) + 1_000_000)

        def start(now, start_id):
            engine = build_engine(config, manifests, now, start_id=start_id)
            engine.receipts.names.update({topic: f'/{topic}' for topic in engine.receipts.names})
            return engine

        first = start(0.0, 's1')
        for gid, entry, event in ((GOALS, goal, constraint), (SAFETY, zone, failure)):
            publish('/resync/answer', gid, answer('s1', 'w', entry, event, 0.04), 0.04, first)
        for n in range(1, 4):
            publish('/board', PLAIN, sensor('sensor:0', n, 0.1 * n - 0.05), 0.1 * n - 0.05,
                    first)
            tick(first, 's1', n, 0.1 * n)
        # The restart: the plain writer's update at 0.4 s comes before discovery matched it
        # with the new node, and the answers reach the node in the order opposite to the bag's.
        second = start(0.35, 's2')
        publish('/board', PLAIN, sensor('sensor:9', 9.0, 0.4), 0.4)
        answers = [publish('/resync/answer', gid, answer('s2', 'w', entry, event, 0.42), 0.42)
                   for gid, entry, event in ((GOALS, goal, constraint), (SAFETY, zone, failure))]
        for published in reversed(answers):
            take(second, published)
        for n in range(5, 8):
            stamp = 0.1 * n - 0.05
            plain = publish('/board', PLAIN, sensor('sensor:0', n, stamp), stamp)
            if n == 6:
                # Two writers set one key at once: the node takes them in the order opposite
                # to the recorder's, and the one it takes last holds the key.
                take(second, publish('/board', OTHER, sensor('sensor:0', -1.0, stamp), stamp))
            take(second, plain)
            tick(second, 's2', n - 4, 0.1 * n)
        for batch in noted.flush() if ids else ():
            msg = RecordedIds(topic=batch.topic, first_index=batch.first_index,
                              publishers=list(batch.publishers), publisher=list(batch.publisher),
                              sequence=list(batch.sequence))
            writer.write('/recorder_node' + IDS_TOPIC_SUFFIX, IDS_TYPE, serialize_message(msg),
                         800_000_000)
    return path


def settings():
    return Settings(VALUES, 'the test', '/working_memory')


def test_a_restarted_nodes_frames_replay_exactly_from_its_input_starts(tmp_path):
    run = load_run(write_run(tmp_path / 'run'))
    assert set(run.message_ids) == {'/board', '/resync/answer'}
    restarted = [frame for frame in run.recording.frames if frame.start_id == 's2']
    assert ('/board', PLAIN, 5) in restarted[0].input_starts
    # The restarted node took the safety writer's answer first.
    assert [publisher for topic, publisher, _ in restarted[0].input_starts
            if topic == '/resync/answer'] == [SAFETY, GOALS]
    result = agreement(run, settings())
    assert result.agreeing == result.ticks == 6, format_agreement(result, 'run', settings())
    assert not any('approximate' in note for step in replay(run, settings())
                   for note in step.notes)


def test_without_the_recorders_message_ids_the_replay_says_it_is_approximate(tmp_path):
    run = load_run(write_run(tmp_path / 'run', ids=False))
    assert run.message_ids == {}
    result = agreement(run, settings())
    # The first start replays exactly from its receipts; the restarted one does not.
    assert result.agreeing == 3 and [m.tick for m in result.mismatches] == [1, 2, 3]
    assert all(any('approximate' in note for note in m.notes) for m in result.mismatches)


def test_message_ids_of_a_topic_with_a_lost_batch_are_left_out():
    noted = MessageIds()
    for number in (1, 2):
        noted.add('/board', PLAIN, number)
    noted.add('/log', GOALS, None)
    first = noted.flush()
    noted.add('/board', SAFETY, 7)
    second = noted.flush()
    assert [(b.topic, b.first_index, b.publisher, b.sequence) for b in first + second] == [
        ('/board', 0, (0, 0), (1, 2)), ('/log', 0, (0,), (0,)), ('/board', 2, (0,), (7,))]
    assert message_ids(first + second) == {'/board': ((PLAIN, 1), (PLAIN, 2), (SAFETY, 7)),
                                           '/log': ((GOALS, 0),)}
    assert message_ids(first[1:] + second) == {'/log': ((GOALS, 0),)}
