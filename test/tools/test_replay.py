"""Offline replay on a synthetic run: the node's path emulated through the core, then replayed.

`write_run` plays the node: it applies each input message exactly as the node's callbacks
do (ros/conversions), assembles a frame per tick and records it with its receipt, while
the "recorder" writes every message into the bag, sometimes before the node got it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from rclpy.serialization import deserialize_message, serialize_message

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import manifests_from_params
from working_memory.decision.conversions import decision_status_msg
from working_memory.ros import conversions as conv
from working_memory.tools import inspect
from working_memory.tools.bag import BagWriter, full_typestore
from working_memory.tools.recording import frames_whole, load_recording, load_run
from working_memory.tools.replay import agreement, format_agreement, recorded_settings, what_if

TICKS = 12
PERIOD_NS = 100_000_000
CABINS = {'planner': {'board_keys': ['goal:*', 'safety:*', 'pose', 'sensor:*'],
                      'weights': ['sensor:*=0.1', 'pose=0.9'],
                      'map': {'radius_m': 0.5},
                      'events': {'window_s': 5.0, 'kinds': ['CONSTRAINT', 'FAILURE']}}}
TOPICS = {'/board': 'working_memory/msg/BoardUpdate', '/log': 'working_memory/msg/LogEvent',
          '/planner/status': 'working_memory/msg/DecisionStatus',
          '/map': 'nav_msgs/msg/OccupancyGrid',
          '/working_memory/frame': 'working_memory/msg/ContextFrame',
          '/parameter_events': 'rcl_interfaces/msg/ParameterEvent'}


def board_msg(tick: int, now: float, stamped: bool = True, growing: int = 0):
    """Return the tick's update; `growing` new sensor keys a tick that soon go stale (0.12 s)."""
    stamp = now if stamped else 0.0   # unstamped: the node stamps it when it takes it
    entries = [BoardEntry('pose', {'x': 1.0 + 0.01 * tick, 'y': 1.0}, stamp, None, 0.0, ()),
               BoardEntry(f'sensor:{tick % 4}', {'reading': float(tick)}, stamp, None, 1.0, ())]
    entries += [BoardEntry(f'sensor:obj{tick}_{n}', {'n': n}, stamp, 0.01 * n, 0.12, ())
                for n in range(growing)]
    if tick == 1:
        entries += [BoardEntry('goal:deliver', {'x': 2, 'y': 1}, stamp, 1.0, 0.0, ()),
                    BoardEntry('safety:zone/a', {'polygon': [[0, 0], [1, 0], [1, 1]]}, stamp,
                               1.0, 0.0, ('safety',))]
    return conv.board_update_msg(entries, stamp)


def parameter_event(stamp_ns: int, name: str, value) -> bytes:
    """Return the CDR ParameterEvent the node publishes when it declares or sets one parameter.

    Serialized with rosbags: rclpy's serialize_message pads empty 8-byte sequences in a way
    rosbags cannot decode (messages the node publishes over DDS decode fine).
    """
    store = full_typestore()
    types = store.types
    empty = {'byte_array_value': np.array([], dtype=np.uint8),
             'bool_array_value': np.array([], dtype=bool),
             'integer_array_value': np.array([], dtype=np.int64),
             'double_array_value': np.array([], dtype=np.float64)}
    fields = dict(type=9, bool_value=False, integer_value=0, double_value=0.0, string_value='',
                  string_array_value=[], **empty)
    if isinstance(value, float):
        fields.update(type=3, double_value=value)
    elif isinstance(value, int):
        fields.update(type=2, integer_value=value)
    else:
        fields.update(string_array_value=list(value))
    parameter = types['rcl_interfaces/msg/Parameter'](
        name=name, value=types['rcl_interfaces/msg/ParameterValue'](**fields))
    event = types['rcl_interfaces/msg/ParameterEvent'](
        stamp=types['builtin_interfaces/msg/Time'](*divmod(stamp_ns, 1_000_000_000)),
        node='/working_memory', new_parameters=[parameter], changed_parameters=[],
        deleted_parameters=[])
    return bytes(store.serialize_cdr(event, 'rcl_interfaces/msg/ParameterEvent'))


def write_run(path, *, capacity=4, late_board_at=(), missed_board_at=(), shrink_at=None,
              receipts=True, torn_at=None, unrecorded=(), declared=True, unstamped_at=(),
              growing=0):
    """Write a synthetic run; return its bag.

    late_board_at: ticks whose board message the recorder writes before the frame although
    the node only takes it after the tick. missed_board_at: ticks whose board message the
    node got but the recorder did not. unrecorded: topics the recorder never subscribed
    to (the node got their messages). shrink_at: tick before which capacity drops to 2.
    The planner reports each frame it decided on; at `torn_at` a second report (as if from
    another planner process) names an older frame. declared False: the recorder heard only
    the capacity, not the parameters the node declared as it started. unstamped_at: ticks
    whose board message has no stamp; the node takes it 1 ms after the recorder does.
    growing: new sensor keys per tick that go stale and stay (counted in a summary).
    """
    manifests = manifests_from_params({'cabins': CABINS})
    working_set = WorkingSet(capacity)
    assembler = Assembler(manifests, working_set)
    board, log, grid = BoardSnapshot(), EventLog(100), None
    received = {'/board': 0, '/log': 0, '/map': 0}
    pending = []
    with BagWriter(path) as writer:
        for topic, msgtype in TOPICS.items():
            if topic not in unrecorded:
                writer.add_topic(topic, msgtype)

        def write(topic, msg, stamp_ns):
            if topic not in unrecorded:
                writer.write(topic, TOPICS[topic], serialize_message(msg), stamp_ns)

        configuration = {'capacity': capacity, 'cabin_names': ['planner'],
                         'cabins.planner.board_keys': CABINS['planner']['board_keys'],
                         'cabins.planner.weights': CABINS['planner']['weights'],
                         'cabins.planner.map.radius_m': CABINS['planner']['map']['radius_m'],
                         'cabins.planner.events.window_s': 5.0,
                         'cabins.planner.events.kinds': CABINS['planner']['events']['kinds']}
        if not declared:
            configuration = {'capacity': capacity}
        for name, value in configuration.items():
            writer.write('/parameter_events', TOPICS['/parameter_events'],
                         parameter_event(0, name, value), 0)

        def node_takes(topic, msg, now):
            nonlocal grid
            received[topic] += 1
            # As the node gets it: through DDS (float32 fields such as the map resolution).
            msg = deserialize_message(serialize_message(msg), type(msg))
            if topic == '/board':
                batch = conv.board_batch_from_msg(msg, now)
                board.apply(batch.entries, batch.removed_keys)
            elif topic == '/log':
                log.append(conv.event_from_msg(msg, now))
            else:
                grid = conv.grid_from_msg(msg, 'map')

        cells = np.zeros((20, 20), dtype=np.int8)
        cells[5, 5] = 100
        map_msg = conv.grid_msg_from_window(MapWindow(cells, (0.0, 0.0), 0.1), 'map', 0.0)
        write('/map', map_msg, 1)
        node_takes('/map', map_msg, 0.0)
        previous = None  # the previous tick's frame digest: what a torn report names
        for tick in range(1, TICKS + 1):
            stamp_ns = tick * PERIOD_NS
            now = stamp_ns * 1e-9
            for topic, msg in pending:
                node_takes(topic, msg, now - 0.05)
            pending.clear()
            msg = board_msg(tick, now - 0.05, tick not in unstamped_at, growing)
            if tick not in missed_board_at:
                write('/board', msg, stamp_ns - 50_000_000)
            if tick in late_board_at:
                pending.append(('/board', msg))
            else:
                node_takes('/board', msg, now - (0.049 if tick in unstamped_at else 0.05))
            if tick == 3:
                event = conv.log_event_msg(Event(now - 0.02, EventKind.CONSTRAINT, 'world',
                                                 'safety:zone/a', {'why': 'test'}))
                write('/log', event, stamp_ns - 20_000_000)
                node_takes('/log', event, now - 0.02)
            if tick == shrink_at:
                writer.write('/parameter_events', TOPICS['/parameter_events'],
                             parameter_event(stamp_ns - 10_000_000, 'capacity', 2), stamp_ns)
                assembler.set_limits(2, None)
            frame = assembler.assemble(tick, now, board, log, grid)
            write('/working_memory/frame',
                  conv.context_frame_msg(frame, 'map', dict(received) if receipts else None),
                  stamp_ns + 1_000_000)
            reports = [frame.digest] + ([previous] if tick == torn_at else [])
            for digest in reports:
                write('/planner/status', decision_status_msg('planner', tick, digest, 'route',
                                                             {}, now), stamp_ns + 2_000_000)
            previous = frame.digest
    return path


def replayed(bag):
    run = load_run(bag)
    return run, agreement(run, recorded_settings(run))


def test_replay_reproduces_every_frame_of_the_run(tmp_path):
    run, result = replayed(write_run(tmp_path / 'run'))
    assert (result.ticks, result.agreeing) == (TICKS, TICKS)
    assert recorded_settings(run).source == 'parameter events of /working_memory in the bag'


def _projection(frame):
    """Return what a recorded frame holds, its map windows as bytes (arrays do not compare)."""
    return (frame.start_id, frame.tick, frame.stamp_ns, frame.digest, dict(frame.inputs),
            frame.input_starts, frame.taken, {
                cabin: (pack.items, pack.events, pack.missing, pack.summaries, pack.digest,
                        pack.map_window.cells.tobytes(), pack.map_window.cells.shape)
                for cabin, pack in frame.packs.items()})


def test_a_run_holds_an_index_of_its_frames_and_reads_them_whole_again_one_at_a_time(tmp_path):
    bag = write_run(tmp_path / 'run', growing=5)
    run, whole = load_run(bag), load_recording(bag)
    assert whole.whole and not run.recording.whole
    # The index: every frame's receipt and digests, no pack's content.
    assert [(f.start_id, f.tick, f.digest, f.inputs, f.input_starts, f.taken,
             {c: p.digest for c, p in f.packs.items()}) for f in run.recording.frames] == [
        (f.start_id, f.tick, f.digest, f.inputs, f.input_starts, f.taken,
         {c: p.digest for c, p in f.packs.items()}) for f in whole.frames]
    assert not any(p.items or p.events or p.missing or p.map_window.cells.size
                   for f in run.recording.frames for p in f.packs.values())
    # Read again, the frames are the whole recording's, windows included.
    assert any(p.map_window.cells.size for f in whole.frames for p in f.packs.values())
    assert [_projection(f) for f in frames_whole(run.recording)] == [
        _projection(f) for f in whole.frames]
    # The inputs are held as bytes and decoded when read.
    board = run.inputs['/board']
    assert [stamp for stamp, _ in board] == board.stamps and len(board) == TICKS
    assert board[3][1].entries[1].key == 'sensor:0'   # tick 4's update
    picked = board.subset([4, 2])
    assert picked.stamps == [board.stamps[4], board.stamps[2]]
    assert [msg.entries[1].key for _, msg in picked[0:2]] == ['sensor:1', 'sensor:3']


def test_a_glob_of_keys_that_keep_going_stale_replays_exactly_and_why_reads_its_summary(
        tmp_path, capsys):
    bag = write_run(tmp_path / 'run', growing=25)
    run, result = replayed(bag)
    assert (result.ticks, result.agreeing) == (TICKS, TICKS)
    pack = load_recording(bag).frames[-1].packs['planner']
    (summary,) = pack.summaries
    # Tick 12: the 25 keys of each tick up to 11 went stale; the most valuable listed are
    # the three of importance 0.24 that went stale last.
    assert (summary.pattern, summary.reason, summary.count, summary.listed) == (
        'sensor:*', 'STALE', 25 * 11, 3)
    assert [m.key for m in pack.missing] == ['sensor:obj10_24', 'sensor:obj11_24',
                                             'sensor:obj9_24']
    assert inspect.main([str(bag), '--tick', str(TICKS), '--cabin', 'planner']) == 0
    out = capsys.readouterr().out
    assert ('missing, counted per glob (1):\n  sensor:*  STALE  275 key(s) under sensor:* '
            'STALE: their ttl ran out 1.0 s to 0.0 s ago; the 3 most valuable listed') in out
    # A key the packs count but never list: its timeline says so, with the summary.
    assert inspect.main([str(bag), '--why', 'sensor:obj1_3']) == 0
    out = capsys.readouterr().out
    assert ('  ticks 2-12: missing STALE (not listed: under sensor:*, whose STALE keys the '
            'pack counts') in out
    assert '  stale since tick 2' in out


def test_a_message_recorded_before_the_tick_but_received_after_it_waits_for_the_receipt(
        tmp_path):
    bag = write_run(tmp_path / 'run', late_board_at=(4, 7))
    _, result = replayed(bag)
    assert result.mismatches == ()
    assert result.late == {'/board': 2}
    # Without receipts, bag time is all a replay has: the late messages come too early.
    _, guessed = replayed(write_run(tmp_path / 'guess', late_board_at=(4, 7), receipts=False))
    assert {m.tick for m in guessed.mismatches} >= {4, 7}
    assert all('no receipt in the frame' in ' '.join(m.notes) for m in guessed.mismatches)


def test_a_message_the_recorder_missed_is_named_as_the_cause(tmp_path):
    _, result = replayed(write_run(tmp_path / 'run', missed_board_at=(5,)))
    first = result.mismatches[0]
    assert first.tick == 5
    assert first.notes == ('/board: the node had received 5 messages, the bag only 4 before '
                           'this frame (missed by the recorder, or late to it)',)
    assert any('planner:' in line for line in first.differences)


def test_a_topic_the_recorder_never_subscribed_to_is_named_as_the_cause(tmp_path):
    # As a `ros2 topic pub --once` gone before the recorder's discovery found /board.
    _, result = replayed(write_run(tmp_path / 'run', unrecorded=('/board',)))
    first = result.mismatches[0]
    assert first.tick == 1
    assert first.notes == ('/board: the node had received 1 messages, the bag holds none (the '
                           "recorder never subscribed: a publisher gone before the recorder's "
                           'discovery reached it, or a topic left out)',)


def test_a_capacity_set_at_runtime_is_replayed_at_its_tick(tmp_path):
    _, result = replayed(write_run(tmp_path / 'run', shrink_at=6))
    assert result.mismatches == ()


def test_what_if_a_smaller_capacity_says_which_items_would_be_absent(tmp_path):
    run = load_run(write_run(tmp_path / 'run'))
    settings = recorded_settings(run)
    result = what_if(run, settings, settings.with_values({'capacity': 2}, 'capacity=2'))
    absent = {change.key for change in result.changes if change.sign == '-'}
    assert absent and all(key.startswith(('sensor:', 'pose')) for key in absent), absent
    assert result.evictions > result.recorded_evictions
    # Exempt alone: goal and safety fit in 2, with the CONSTRAINT event of tick 3 they do not.
    assert result.alarm_ticks == tuple(range(3, TICKS + 1))
    assert not result.recorded_alarm_ticks


def test_params_file_stands_in_for_missing_parameter_events(tmp_path):
    run = load_run(write_run(tmp_path / 'run'))
    params = tmp_path / 'params.yaml'
    params.write_text(yaml.safe_dump({'working_memory': {'ros__parameters': {
        'capacity': 4, 'cabin_names': ['planner'], 'cabins': CABINS}}}))
    settings = recorded_settings(run, params_file=params)
    assert settings.manifests()['planner'].map.radius_m == 0.5
    assert agreement(run, settings).mismatches == ()


def test_events_without_the_nodes_start_go_over_the_packaged_config(tmp_path):
    # The recorder matched the node after it declared its parameters: a later set alone.
    run = load_run(write_run(tmp_path / 'run', capacity=3, declared=False))
    settings = recorded_settings(run)
    assert settings.values['cabin_names'] == ['planner', 'executor', 'monitor']
    assert settings.values['capacity'] == 3
    assert settings.source.startswith('the packaged config (the bag has not the parameters')
    assert set(settings.manifests()) == {'planner', 'executor', 'monitor'}


def test_a_disagreement_from_inputs_the_node_stamped_on_receipt_is_explained(tmp_path):
    # The node stamped tick 4's board entries when it took them, 1 ms after the recorder.
    _, result = replayed(write_run(tmp_path / 'run', unstamped_at=(4,)))
    assert [mismatch.tick for mismatch in result.mismatches][:1] == [4]
    notes = result.mismatches[0].notes
    assert any(note.startswith('board: 2 key(s) set without a stamp (pose, sensor:0): the node '
                               'stamped them when it took them') for note in notes), notes
    text = format_agreement(result, 'run', recorded_settings(load_run(tmp_path / 'run')))
    assert 'stamp the entries or the header for an exact replay' in text
    # The next stamped pose takes the note away; sensor:0 is stamped again at tick 8.
    later = {mismatch.tick: mismatch.notes for mismatch in result.mismatches}
    assert all('pose' not in ' '.join(notes) for tick, notes in later.items() if tick > 4)


def test_replay_cli_reports_agreement_and_rejects_bad_what_ifs(tmp_path, capsys):
    bag = write_run(tmp_path / 'run', missed_board_at=(5,))
    assert inspect.main(['replay', str(bag)]) == inspect.DISAGREES
    out = capsys.readouterr().out
    assert f'/{TICKS} ticks' in out and 'tick 5: digest differs' in out
    assert 'missed by the recorder' in out
    assert inspect.main(['replay', str(bag), '--set', 'capacity']) == 1
    assert 'expected NAME=VALUE' in capsys.readouterr().err
    assert inspect.main(['replay', str(tmp_path / 'nothing')]) == 1
    assert inspect.main(['replay', str(bag), '--set', 'capacity=0']) == 1
    assert 'capacity' in capsys.readouterr().err
    # A typo fails, naming the parameter it was likely meant to be, as the node does.
    assert inspect.main(['replay', str(bag), '--set', 'capacty=5']) == 1
    assert '--set capacty: unknown parameter (did you mean capacity?)' in capsys.readouterr().err
    assert inspect.main(['replay', str(bag), '--set', 'cabins.planner.map.radius=1.0']) == 1
    assert 'did you mean cabins.planner.map.radius_m?' in capsys.readouterr().err


def test_the_frame_time_is_the_nodes_to_the_nanosecond(tmp_path):
    run = load_run(write_run(tmp_path / 'run'))
    frame = run.recording.frames[2]
    assert frame.stamp_ns == 3 * PERIOD_NS and math.isclose(frame.stamp, 0.3)
    assert frame.inputs == {'/board': 3, '/log': 1, '/map': 1}


def test_doctor_finds_capacity_alarms_and_the_smallest_capacity_that_ends_them(
        tmp_path, capsys):
    from working_memory.tools.doctor import doctor
    run = load_run(write_run(tmp_path / 'run', capacity=2))
    result = doctor(run, recorded_settings(run))

    assert result.pressure.alarm_ticks == tuple(range(3, TICKS + 1))
    assert result.found and not result.dumb.findings and not result.drift.found
    assert result.pressure.losses == {'pose': 'importance 0.90'}
    # Goal and safety are never offered for removal, and the 5 s event window is already at
    # the floor: growing the capacity is what is left, to the smallest that ends it all.
    (fix,) = result.pressure.fixes
    assert (fix.kind, fix.values) == ('capacity', {'capacity': 4})
    assert not fix.alarm_ticks and not fix.losses
    assert inspect.main(['doctor', str(tmp_path / 'run')]) == inspect.FINDS
    out = capsys.readouterr().out
    assert 'found: capacity alarms, costly evictions' in out
    assert 'capacity 2 -> 4 (the smallest that keeps every costly item, by replay' in out


@pytest.mark.parametrize('ages, window_s, needed, floor, expected', [
    ((1.0, 8.0, 20.0, 40.0), 60.0, 2, 0.0, 8.0),    # keeps the two newest
    ((1.0, 8.0, 20.0, 40.0), 60.0, 2, 24.5, 25.0),  # never shorter than a decision's event
    ((1.0, 8.0, 20.0, 40.0), 60.0, 4, 0.0, 5.0),    # never under MIN_EVENT_WINDOW_S
    ((1.0, 2.0), 5.0, 1, 0.0, None),                # already at the floor: no fix
    ((1.0, 8.0, 20.0, 40.0), 60.0, 1, 50.0, None),  # the decisions needed it all
])
def test_an_event_window_is_shortened_only_as_far_as_the_decisions_allow(
        ages, window_s, needed, floor, expected):
    from types import SimpleNamespace
    from working_memory.tools.doctor import Scope, _shorter_window
    events = [Event(100.0 - age, EventKind.FAILURE, 'world', f'k{n}', None, seq=n)
              for n, age in enumerate(ages, 1)]
    manifest = SimpleNamespace(events=SimpleNamespace(window_s=window_s))
    step = SimpleNamespace(manifests={'executor': manifest}, frame=SimpleNamespace(
        stamp=100.0, packs={'executor': SimpleNamespace(events=events)}))
    keys = tuple(f'event:FAILURE:{e.key}#{e.seq}' for e in events)
    scope = Scope('executor', 'events', keys, keys, (), 0.4)
    assert _shorter_window(scope, step, needed, floor) == expected


def test_doctor_sees_a_decision_on_a_frame_that_was_not_the_ticks_as_drift(tmp_path, capsys):
    from working_memory.tools.doctor import doctor
    run = load_run(write_run(tmp_path / 'run', torn_at=6))
    drift = doctor(run, recorded_settings(run)).drift

    ((tick, digests),) = drift.tearing
    assert tick == 6 and sorted(digests.values()) == [('planner',), ('planner',)]
    ((tick, cabin, digest),) = drift.unfrozen
    assert (tick, cabin) == (6, 'planner') and digest == run.recording.frame(5).digest
    assert inspect.main(['doctor', str(tmp_path / 'run')]) == inspect.FINDS
    out = capsys.readouterr().out
    assert 'tearing at tick 6' in out and 'found: decision drift' in out
