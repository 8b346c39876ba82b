"""Why-not answers for every reason a key can be in or out of a cabin's pack."""

import numpy as np
import pytest

from working_memory.core.assembly import Assembler, event_item_key
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.explain import explain
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import manifests_from_params
from working_memory.core.refusals import Refusal, Refusals

MANIFESTS = manifests_from_params({'cabins': {
    'planner': {
        'board_keys': ['goal:*', 'pose', 'reading:*', 'station:*', 'door:*', 'battery'],
        'weights': ['reading:*=0.1', 'goal:*=1.0'],
        'map': {'radius_m': 1.0},
        'events': {'window_s': 10.0, 'kinds': ['FAILURE', 'CONSTRAINT']},
        'tags': {'exclude': ['charging']},
        'drop': ['door:*'],
    },
    'monitor': {'board_keys': ['battery']},
    'blind': {'events': {'window_s': 10.0}, 'drop': ['events:*']},
}})


@pytest.fixture(scope='module')
def frame_and_events():
    board, log = BoardSnapshot(), EventLog(100)
    board.apply([
        BoardEntry('goal:deliver', {'to': 'A'}, 0.0),
        BoardEntry('pose', {'x': 1.0, 'y': 1.0}, 0.0, ttl=2.0),
        BoardEntry('reading:1', 1, 0.0), BoardEntry('reading:2', 2, 0.0),
        BoardEntry('station:3', {}, 0.0, tags=('charging',)),
        BoardEntry('door:1', 'open', 0.0),
    ])
    failure = log.append(Event(8.0, EventKind.FAILURE, key='open_door'))
    old = log.append(Event(1.0, EventKind.CONSTRAINT, key='lane_closed'))
    grid = GridMap(np.zeros((10, 10), dtype=np.int8), (0.0, 0.0), 1.0)
    # Capacity 3: goal (exempt), the failure event and one reading fit; reading:1 is put
    # first (keys in order), so among the equal readings it is the least recently used.
    assembler = Assembler(MANIFESTS, WorkingSet(3))
    frame = assembler.assemble(7, 12.0, board, log, grid, pose=(1.0, 1.0))
    return frame, failure, old


@pytest.mark.parametrize('cabin, key, present, reason, detail', [
    ('planner', 'goal:deliver', True, 'PRESENT', 'board item, importance 1.00, exempt'),
    ('planner', 'map', True, 'PRESENT', 'map window 3 x 3 cells at (0.00, 0.00) m'),
    ('planner', 'events:FAILURE', True, 'PRESENT', '1 FAILURE event(s) in the window'),
    ('planner', 'pose', False, 'STALE', 'stale: its ttl of 2.0 s ran out 10.0 s ago'),
    ('planner', 'reading:1', False, 'EVICTED', 'evicted at tick 7 (capacity): importance 0.10'),
    ('planner', 'station:3', False, 'OUT_OF_SCOPE', "tags ['charging'] excluded"),
    ('planner', 'door:1', False, 'INJECTED_DROP', 'withheld by an injected drop'),
    ('planner', 'door:*', False, 'INJECTED_DROP', 'injected drop: 1 item(s) withheld: door:1'),
    ('planner', 'battery', False, 'NEVER_SEEN', 'not on the board at tick 7'),
    ('planner', 'events:CONSTRAINT', False, 'OUT_OF_SCOPE', 'not in the event window of tick 7'),
    ('planner', 'route', False, 'NOT_IN_MANIFEST', "planner manifest does not select 'route'"),
    ('planner', 'events:ALARM', False, 'NOT_IN_MANIFEST', 'events: FAILURE, CONSTRAINT'),
    ('monitor', 'map', False, 'NOT_IN_MANIFEST', 'board keys: battery; events: none'),
    ('blind', 'events:*', False, 'INJECTED_DROP', 'injected drop: * events withheld'),
    ('blind', 'events:FAILURE', False, 'INJECTED_DROP', 'FAILURE events withheld by an injected'),
])
def test_explain_answers_each_reason_with_detail(frame_and_events, cabin, key, present, reason,
                                                 detail):
    frame, _, _ = frame_and_events
    answer = explain(frame, MANIFESTS, cabin, key)
    assert (answer.present, answer.reason) == (present, reason), answer
    assert detail in answer.detail


def test_explain_event_items_in_and_out_of_the_window(frame_and_events):
    frame, failure, old = frame_and_events
    assert explain(frame, MANIFESTS, 'planner', event_item_key(failure)).present
    answer = explain(frame, MANIFESTS, 'planner', event_item_key(old))
    assert (answer.present, answer.reason) == (False, 'OUT_OF_SCOPE')
    assert answer.detail == 'not in the event window of tick 7 (last 10.0 s)'
    answer = explain(frame, MANIFESTS, 'blind', event_item_key(failure))
    assert (answer.present, answer.reason) == (False, 'INJECTED_DROP')


def test_explain_unknown_cabin_names_the_known_ones(frame_and_events):
    frame, _, _ = frame_and_events
    with pytest.raises(ValueError, match='cabin .executor.: unknown .known: planner, monitor, bl'):
        explain(frame, MANIFESTS, 'executor', 'pose')


def test_an_event_item_key_the_log_never_had_is_never_seen_and_one_it_had_out_of_scope():
    log = EventLog(2)
    old = log.append(Event(1.0, EventKind.CONSTRAINT, key='lane_closed'))
    for stamp in (2.0, 3.0):   # the log holds two: the constraint's number is gone from it
        log.append(Event(stamp, EventKind.FAILURE, key='open_door'))
    frame = Assembler(MANIFESTS, WorkingSet(3)).assemble(7, 20.0, BoardSnapshot(), log, None)
    never = explain(frame, MANIFESTS, 'planner', 'event:FAILURE:zzz#99', log)
    assert (never.reason, never.detail) == ('NEVER_SEEN', "no FAILURE event 'zzz' numbered 99 "
                                                          'was ever logged')
    # Number 1 was logged, as a FAILURE of open_door, not of another key or kind.
    assert explain(frame, MANIFESTS, 'planner', 'event:FAILURE:other#1', log).reason == \
        'NEVER_SEEN'
    assert explain(frame, MANIFESTS, 'planner', 'event:CONSTRAINT:open_door#1', log).reason == \
        'NEVER_SEEN'
    assert explain(frame, MANIFESTS, 'planner', 'event:FAILURE:open_door#1', log).reason == \
        'OUT_OF_SCOPE'   # logged, out of the 10 s window at t = 20 s
    # Gone from the log: it was logged, so it is out of the window, not never seen.
    assert explain(frame, MANIFESTS, 'planner', event_item_key(old), log).reason == 'OUT_OF_SCOPE'
    # Without the log the answer is what the pack alone can say.
    assert explain(frame, MANIFESTS, 'planner', 'event:FAILURE:zzz#99').reason == 'OUT_OF_SCOPE'


# -- values refused for their size: the answer says so, by the frame's time -------------------

def refused(key, stamp=11.0, effective=11.0):
    refusals = Refusals()
    refusals.refuse(Refusal(key, 5_000_002, 262_144, stamp, effective))
    return refusals


@pytest.mark.parametrize('key, present, reason, detail', [
    ('goal:deliver', True, 'PRESENT',
     'board item, importance 1.00, exempt, stamp t=0.0 s; a later value refused: 5,000,002 '
     'bytes over max_value_bytes 262,144 at t=11.0 s, this one kept'),
    ('battery', False, 'NEVER_SEEN', 'not on the board at tick 7; refused: 5,000,002 bytes '
                                     'over max_value_bytes 262,144 at t=11.0 s'),
    ('reading:1', False, 'EVICTED', 'ago; refused: 5,000,002 bytes over max_value_bytes 262,144 '
                                    'at t=11.0 s'),
])
def test_a_key_whose_values_are_refused_for_their_size_is_explained_so(
        frame_and_events, key, present, reason, detail):
    frame, _, _ = frame_and_events
    answer = explain(frame, MANIFESTS, 'planner', key, refusals=refused(key))
    assert (answer.present, answer.reason) == (present, reason)
    assert answer.detail.endswith(detail), answer.detail


def test_a_refused_event_is_explained_for_any_number_of_its_kind_and_key(frame_and_events):
    frame, _, _ = frame_and_events
    refusals, log = refused('event:FAILURE:slip'), EventLog(100)
    answer = explain(frame, MANIFESTS, 'planner', 'event:FAILURE:slip#99', log, refusals)
    assert (answer.present, answer.reason) == (False, 'NEVER_SEEN')
    assert answer.detail == ("no FAILURE event 'slip' numbered 99 was ever logged; refused: "
                             '5,000,002 bytes over max_value_bytes 262,144 at t=11.0 s')
    other = explain(frame, MANIFESTS, 'planner', 'event:FAILURE:slipped#99', log, refusals)
    assert 'refused' not in other.detail


def test_a_refusal_after_the_frames_time_is_not_told_for_that_frame(frame_and_events):
    frame, _, _ = frame_and_events
    answer = explain(frame, MANIFESTS, 'planner', 'battery',
                     refusals=refused('battery', 13.0, frame.effective + 1.0))
    assert answer.detail == 'not on the board at tick 7'
