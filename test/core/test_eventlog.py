"""EventLog: time-ordered, numbered, bounded with counted drops, windows by binary search."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.eventlog import EventLog
from working_memory.core.items import Event, EventKind
from working_memory.core.timebase import TimeBase

FAILURE, ACTION, CONSTRAINT = EventKind.FAILURE, EventKind.ACTION, EventKind.CONSTRAINT


def _stamps(events):
    return [event.stamp for event in events]


def test_seq_follows_arrival_and_late_events_are_inserted_in_time_order():
    log = EventLog(10)
    stored = log.extend([Event(1.0, ACTION, key='a'), Event(3.0, ACTION, key='c'),
                         Event(2.0, FAILURE, key='b')])
    assert [event.seq for event in stored] == [0, 1, 2]
    window = log.window(0.0, 10.0)
    assert [event.key for event in window] == ['a', 'b', 'c']


def test_window_bounds_are_inclusive_and_kinds_filter():
    log = EventLog(10)
    log.extend(Event(float(t), kind) for t, kind in enumerate([ACTION, FAILURE, ACTION, FAILURE]))
    assert _stamps(log.window(1.0, 3.0)) == [1.0, 2.0, 3.0]
    assert _stamps(log.window(1.0, 3.0, kinds=[FAILURE])) == [1.0, 3.0]
    assert log.window(3.5, 10.0) == ()
    assert log.window(3.0, 1.0) == ()


def test_max_count_keeps_the_newest_events_oldest_first():
    log = EventLog(10)
    log.extend(Event(float(t), FAILURE if t % 2 else ACTION) for t in range(8))
    assert _stamps(log.window(0.0, 10.0, max_count=3)) == [5.0, 6.0, 7.0]
    assert _stamps(log.window(0.0, 10.0, kinds=[ACTION], max_count=2)) == [4.0, 6.0]


def test_beyond_the_limit_the_oldest_are_dropped_and_counted():
    log = EventLog(3)
    log.extend(Event(float(t), ACTION) for t in range(5))
    assert len(log) == 3 and log.dropped == 2
    assert _stamps(log.window(-1.0, 10.0)) == [2.0, 3.0, 4.0]
    log.append(Event(0.5, ACTION))  # late and older than everything retained
    assert log.dropped == 3
    assert _stamps(log.window(-1.0, 10.0)) == [2.0, 3.0, 4.0]


def test_last_stamp_remembers_each_kind_even_after_drops():
    log = EventLog(1)
    log.append(Event(5.0, CONSTRAINT))
    log.append(Event(6.0, ACTION))
    assert log.last_stamp(CONSTRAINT) == 5.0
    assert log.last_stamp(FAILURE) is None


def test_stored_detail_is_frozen():
    log = EventLog(2)
    detail = {'why': ['locked']}
    stored = log.append(Event(1.0, FAILURE, detail=detail))
    detail['why'].append('jammed')
    assert stored.detail == {'why': ('locked',)}
    with pytest.raises(TypeError):
        stored.detail['why'] = ()


@pytest.mark.parametrize('make, message', [
    (lambda log: EventLog(0), 'limit: must be an integer >= 1'),
    (lambda log: log.append('boom'), 'event: must be an Event'),
    (lambda log: log.append(Event(math.nan, ACTION, key='k')),
     "event 'k': stamp must be a finite time"),
    (lambda log: log.append(Event(1.0, ACTION, key='k', detail={1, 2})),
     "event 'k': detail: must be JSON"),
    (lambda log: log.window(0.0, 1.0, max_count=-1), 'max_count: must be an integer >= 0'),
])
def test_bad_input_is_rejected_naming_the_field(make, message):
    with pytest.raises(ValueError, match=message):
        make(EventLog(5))


events = st.lists(st.tuples(st.integers(0, 40).map(lambda t: t / 4),
                            st.sampled_from([ACTION, FAILURE, CONSTRAINT])), max_size=60)


@settings(max_examples=200, deadline=None)
@given(events, st.integers(0, 40).map(lambda t: t / 4), st.integers(0, 40).map(lambda t: t / 4),
       st.none() | st.sets(st.sampled_from([ACTION, FAILURE, CONSTRAINT])),
       st.integers(0, 10))
def test_window_equals_a_brute_force_filter(arrivals, since, until, kinds, max_count):
    log = EventLog(1000)
    stored = log.extend(Event(stamp, kind) for stamp, kind in arrivals)
    expected = sorted((e for e in stored
                       if since <= e.stamp <= until and (kinds is None or e.kind in kinds)),
                      key=lambda e: (e.stamp, e.seq))
    if max_count:
        expected = expected[-max_count:]
    assert list(log.window(since, until, kinds, max_count)) == expected


def test_with_a_timebase_windows_count_effective_seconds_across_a_reset():
    timebase = TimeBase()
    log = EventLog(10, timebase)
    timebase.observe(100.0)
    before = log.append(Event(95.0, CONSTRAINT, key='zone'))
    now = timebase.observe(2.0)                    # reset: effective 100 s
    after = log.append(Event(1.5, FAILURE, key='slip'))
    assert (after.stamp, after.effective_stamp) == (1.5, 99.5)
    # Both in the last 10 effective seconds, in effective order; stamps stay as sent.
    assert log.window(now - 10.0, now) == (before, after)
    assert log.last_stamp(FAILURE) == 99.5


def test_non_finite_detail_is_rejected_naming_the_field():
    with pytest.raises(ValueError, match="event 'k': detail: must be JSON"):
        EventLog(2).append(Event(1.0, ACTION, key='k', detail={'v': math.inf}))


def test_live_events_are_all_taken_repeats_included():
    # Two identical failures in one sim step are two failures.
    log = EventLog(limit=10)
    door = Event(1.0, EventKind.FAILURE, 'executor', 'door:main', {'reason': 'stuck'})
    assert log.append(door) is not None and log.append(door) is not None
    assert len(log) == 2 and log.duplicates == 0


def test_an_answer_brings_only_what_the_log_lacks_and_its_live_copy_is_taken_once():
    # A writer re-sends its recent events to a restarted node, which took some live already;
    # one it took from the answer first may still come live.
    log = EventLog(limit=10)
    zone = Event(1.0, EventKind.CONSTRAINT, 'world', 'zone', {'why': 'wires'}, 0.9, ('safety',))
    goal = Event(0.5, EventKind.GOAL, 'world', 'goal:deliver')
    late = Event(2.0, EventKind.ACTION, 'executor', 'drive')
    assert log.append(zone) is not None                      # live, before the answer
    stored = log.take_answered([goal, zone, late])
    assert [event.key for event in stored] == ['goal:deliver', 'drive']
    assert log.append(late) is None                          # its live copy, after the answer
    assert log.append(late) is not None                      # a genuine repeat, later
    assert len(log) == 4 and log.duplicates == 2
    # An answer holding an event twice brings the copy the log lacks.
    repeated = Event(3.0, EventKind.FAILURE, 'executor', 'door')
    log.append(repeated)
    assert len(log.take_answered([repeated, repeated])) == 1


def test_another_stamp_detail_source_or_importance_is_another_event():
    log = EventLog(limit=10)
    base = Event(1.0, EventKind.CONSTRAINT, 'world', 'zone', {'why': 'wires'}, 0.9)
    log.append(base)
    others = [Event(1.5, EventKind.CONSTRAINT, 'world', 'zone', {'why': 'wires'}, 0.9),
              Event(1.0, EventKind.CONSTRAINT, 'world', 'zone', {'why': 'rain'}, 0.9),
              Event(1.0, EventKind.CONSTRAINT, 'planner', 'zone', {'why': 'wires'}, 0.9),
              Event(1.0, EventKind.CONSTRAINT, 'world', 'zone', {'why': 'wires'})]
    assert len(log.take_answered(others)) == 4 and log.duplicates == 0
    assert log.take_answered([base]) == [] and log.duplicates == 1


def test_an_event_dropped_for_the_limit_is_taken_again_when_it_comes_back():
    log = EventLog(limit=2)
    log.extend(Event(float(t), EventKind.ACTION, key=f'a{t}') for t in range(3))
    assert log.dropped == 1
    assert log.take_answered([Event(0.0, EventKind.ACTION, key='a0')]) != []
    assert log.duplicates == 0
