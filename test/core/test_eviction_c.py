"""WorkingSet's put in C (core/_evict.c) behaves exactly as the pure-Python PyWorkingSet."""

import copy
import math
import pickle

import pytest
from hypothesis import given, settings, strategies as st

from working_memory.core import eviction
from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import (HalfLifeBlend, ImportanceLRU, PyWorkingSet,
                                          WorkingSet)
from working_memory.core.frozen import deep_freeze
from working_memory.core.items import BoardEntry, Event, EventKind, Source, prepare_text
from working_memory.core.manifest import Manifest
from working_memory.core.ranking import LevelRanking, SEQ
from working_memory.core.timebase import TimeBase


def test_the_built_package_puts_in_c():
    # CI must notice a build that silently falls back to the reference: this one fails then.
    assert eviction.ACCELERATED, (
        'working_memory.core._evict is not importable: the package was imported from a tree '
        'without the built extension (make build, pip install .)')
    from working_memory.core import _evict
    assert WorkingSet.put is _evict.WorkingSetCore.__dict__['put'].__get__(None, WorkingSet)
    working_set = WorkingSet(capacity=4)
    working_set.put('first', 0, importance=0.5, now=0.0)   # a fresh timeline: the reference's
    before = _evict.counts()
    for step in range(1, 101):
        working_set.put(f'key:{step}', step, importance=0.5, now=float(step))
    after = _evict.counts()
    assert after['fast'] - before['fast'] == 100
    assert after['reference'] == before['reference']
    assert len(working_set.eviction_log) == 97


def test_a_c_put_measures_a_frozen_value_by_its_kept_text():
    # The text a frozen value keeps is its text: the put takes its length, not encoding again.
    value = deep_freeze({'reading': 0.25})
    value.json_text = '{"kept":1}'
    for working_set in (WorkingSet(capacity=4), PyWorkingSet(capacity=4)):
        working_set.put('k', value, importance=0.5, now=0.0)
        assert working_set.get('k').size == 10


def test_the_built_package_hands_out_the_served_items_in_c_and_keeps_them():
    from working_memory.core import _evict
    working_set = WorkingSet(capacity=4)
    for key in ('a', 'b'):
        working_set.put(key, key, importance=0.5, now=1.0)
    before = _evict.counts()
    first = working_set.items_of(['a', 'b', 'never'])
    assert [item and item.key for item in first] == ['a', 'b', None]
    assert working_set.items_of(('a', 'b'))[0] is first[0] is working_set.get('a')
    after = _evict.counts()
    assert after['fast_items_of'] - before['fast_items_of'] == 2
    assert after['reference_items_of'] == before['reference_items_of']


def test_the_built_package_touches_the_served_set_in_c():
    from working_memory.core import _evict
    working_set = WorkingSet(capacity=3)
    for step in range(5):
        working_set.put(f'k{step}', step, importance=0.5, now=float(step))
    before = _evict.counts()
    working_set.touch_present(['k2', 'gone', 'k4'], 9.0)
    after = _evict.counts()
    assert after['fast_touches'] - before['fast_touches'] == 1
    assert after['reference_touches'] == before['reference_touches']
    assert [item.last_used for item in working_set.items()] == [9.0, 3.0, 9.0]
    # k3 was used least recently: the next eviction takes it.
    assert [record.key for record in working_set.put('k5', 5, importance=0.5, now=10.0)] == [
        'k3']


def test_touch_present_takes_its_arguments_as_the_reference_does():
    fast, reference = WorkingSet(capacity=3), PyWorkingSet(capacity=3)
    for working_set in (fast, reference):
        working_set.put('a', 1, importance=0.5, now=1.0)
        working_set.touch_present(keys=['a'], now=2.0)
        working_set.touch_present(('a',), now=3.0)
        with pytest.raises(TypeError):
            working_set.touch_present(['a'], 4.0, 'one too many')
    assert _state(fast) == _state(reference)
    assert fast.get('a').last_used == 3.0


def test_the_record_a_c_put_returns_is_the_one_logged_and_kept_by_the_evicted_item():
    working_set = WorkingSet(capacity=2)
    for now, key in enumerate(('a', 'b', 'goal:g')):
        records = working_set.put(key, now, importance=0.5, now=float(now))
    (record,) = records
    assert record.key == 'a' and record.reason == 'capacity' and record.stamp == 2.0
    assert working_set.eviction_log[-1] is record
    assert working_set.eviction_of('a') is record
    assert working_set.last_eviction('a') is record
    assert working_set.evicted_item('a').value == 0


def test_exempt_items_put_in_c_are_never_evicted_and_raise_the_alarm():
    working_set = WorkingSet(capacity=2)
    working_set.put('x', 1, importance=0.0, now=0.0)
    for step in range(1, 5):
        working_set.put(f'safety:{step}', step, importance=0.0, now=float(step))
    assert sorted(working_set.keys()) == ['safety:1', 'safety:2', 'safety:3', 'safety:4']
    assert working_set.capacity_alarm


def _prepared():
    value = deep_freeze({'reading': 0.25, 'unit': 'm'})
    prepare_text(value)
    return value


KEYS = st.sampled_from(['a', 'b', 'c', 'd', 'e', 'goal:g', 'safety:s', ''])
IMPORTANCES = st.sampled_from([0.0, 0.1, 0.5, 0.5, 0.9, 1.0, 1, 1.5, math.nan, True])
VALUES = st.one_of(st.integers(min_value=-10**25, max_value=10**25), st.floats(),
                   st.text(max_size=5), st.none(), st.booleans(),
                   st.lists(st.integers(), max_size=3), st.just({'x': [1, 2]}),
                   st.just(object()), st.just(Source.BOARD),
                   # Frozen values with and without their kept text (read from its slot in C).
                   st.builds(lambda: deep_freeze({'x': [1, 2.5]})), st.builds(_prepared))
FIELDS = st.fixed_dictionaries({}, optional={
    'source': st.sampled_from([Source.BOARD, Source.LOG, 'board', 'nonsense']),
    'stamp': st.sampled_from([None, 1.5, -2.0, 0.0, 3, math.inf, math.nan, 'x']),
    'stale': st.sampled_from([False, True, 0, 1]),
    'exempt': st.sampled_from([False, True, 0, 'yes']),
    'size': st.sampled_from([None, 0, 7, 500, -1]),
    'defer_eviction': st.sampled_from([False, True, 0, 1]),
})
# A clock step [s]: mostly forward, sometimes still or backwards (a reset), sometimes an int.
STEPS = st.sampled_from([1.0, 1.0, 1.0, 0.5, 0.0, -3.0, 'int', 'nan'])

# The common call (the C path), drawn most often, beside every other kind of put.
# The assembler's put: value by keyword, a float stamp, eviction deferred to its settle().
ASSEMBLER_FIELDS = st.fixed_dictionaries({
    'stamp': st.sampled_from([0.25, 7.5, -1.0]), 'defer_eviction': st.just(True),
    'source': st.sampled_from([Source.BOARD, Source.LOG]), 'exempt': st.booleans()})
COMMON_PUT = st.tuples(st.just('put'), KEYS,
                       st.integers(-5, 5) | st.floats(0, 9) | st.text(max_size=3)
                       | st.just({'x': [1, 2]}),
                       st.sampled_from([0.1, 0.5, 0.9]), st.just(1.0),
                       st.sampled_from([{}, {}, {'defer_eviction': True}, {'exempt': True},
                                        {'stamp': 0.5}]) | ASSEMBLER_FIELDS,
                       st.booleans())
OPERATIONS = st.one_of(
    COMMON_PUT, COMMON_PUT, COMMON_PUT, COMMON_PUT, COMMON_PUT, COMMON_PUT,
    st.tuples(st.just('put'), KEYS, VALUES, IMPORTANCES, STEPS, FIELDS, st.booleans()),
    st.tuples(st.just('touch'), st.lists(KEYS, max_size=3), STEPS),
    # The assembler's touch of its served set: a list (the C path) or another iterable.
    st.tuples(st.just('touch_present'), st.lists(KEYS, max_size=6),
              st.sampled_from([list, list, tuple, iter]), STEPS),
    # The assembler's items of a served set: a list (the C path) or another iterable.
    st.tuples(st.just('items_of'), st.lists(KEYS, max_size=6),
              st.sampled_from([list, list, tuple, iter])),
    st.tuples(st.just('remove'), KEYS),
    st.tuples(st.just('mark_stale'), KEYS),
    st.tuples(st.just('settle'), st.lists(KEYS, max_size=4)),
    st.tuples(st.just('evict_to_fit')),
    st.tuples(st.just('set_limits'), st.integers(1, 6), st.sampled_from([None, 8, 20, 60])),
    st.tuples(st.just('tick'), st.integers(0, 5)),
)


def _now(clock, step):
    if step == 'int':
        return int(clock) + 1
    if step == 'nan':
        return math.nan
    return clock + step


def _apply(working_set, operation, now):
    """Run one operation; return its result or the exception it raised (type and text)."""
    name, *arguments = operation
    try:
        if name == 'put':
            key, value, importance, _, fields, by_keyword = arguments
            if by_keyword:   # as the assembler calls it
                return working_set.put(key, now=now, value=value, importance=importance,
                                       **fields)
            return working_set.put(key, value, importance=importance, now=now, **fields)
        if name == 'touch':
            return working_set.touch_many(arguments[0], now)
        if name == 'touch_present':
            keys, kind, _ = arguments
            return working_set.touch_present(kind(keys), now)
        if name == 'items_of':
            keys, kind = arguments
            return working_set.items_of(kind(keys))
        if name == 'tick':
            working_set.tick = arguments[0]
            return None
        if name == 'settle':
            return working_set.settle(arguments[0])
        return getattr(working_set, name)(*arguments)
    except (ValueError, KeyError, TypeError) as error:
        return (type(error), str(error))


def _order(working_set):
    """Return the order the next evictions follow: the seq counter, each slot's, each level's."""
    ranking = working_set._ranking
    levels = None if not isinstance(ranking, LevelRanking) else {
        importance: (list(level.used), sorted(level.returned))
        for importance, level in ranking._levels.items()}
    return (working_set._seq, {key: slot[SEQ] for key, slot in working_set._slots.items()},
            levels)


def _state(working_set):
    """Everything the working set shows: items, evicted items, records, alarms, counts, order."""
    keys = ['a', 'b', 'c', 'd', 'e', 'goal:g', 'safety:s']
    return (_order(working_set), working_set.keys(), working_set.items(),
            working_set.evicted_items(),
            working_set.eviction_log, working_set.evictions_total, working_set.size_bytes,
            working_set.capacity_alarm, len(working_set), working_set.capacity,
            working_set.size_budget, working_set.timebase.now, working_set.timebase.epoch,
            [(working_set.get(key), working_set.eviction_of(key), working_set.readmission(key),
              working_set.last_eviction(key), working_set.evicted_item(key), key in working_set)
             for key in keys])


@settings(max_examples=1000, deadline=None)
@given(capacity=st.integers(1, 5), size_budget=st.sampled_from([None, 10, 30]),
       log_limit=st.integers(1, 6), policy=st.sampled_from([ImportanceLRU(), HalfLifeBlend(4.0)]),
       operations=st.lists(OPERATIONS, min_size=10, max_size=80))
def test_c_put_and_python_reference_make_the_same_items_victims_records_and_alarms(
        capacity, size_budget, log_limit, policy, operations):
    fast = WorkingSet(capacity, size_budget, policy=policy, log_limit=log_limit)
    reference = PyWorkingSet(capacity, size_budget, policy=policy, log_limit=log_limit)
    clock = 0.0
    for operation in operations:
        now = clock
        if operation[0] in ('put', 'touch', 'touch_present'):
            now = _now(clock, operation[4] if operation[0] == 'put' else operation[-1])
            if not math.isnan(now):
                clock = max(0.0, float(now))
        assert _apply(fast, operation, now) == _apply(reference, operation, now), operation
        assert _state(fast) == _state(reference), operation


@pytest.mark.parametrize('capacity', [1, 3, 50])
def test_a_long_churn_evicts_the_same_victims_in_c_and_in_python(capacity):
    fast, reference = WorkingSet(capacity, log_limit=40), PyWorkingSet(capacity, log_limit=40)
    for step in range(3000):
        key = f'k{(step * 7919) % 400}'
        importance = (0.1, 0.5, 0.9)[step % 3]
        now = float(step)
        for working_set in (fast, reference):
            if step % 5 == 0 and key in working_set:
                working_set.touch(key, now)
        assert fast.put(key, step, importance=importance, now=now) == reference.put(
            key, step, importance=importance, now=now)
        if step % 97 == 0:
            candidates = [f'k{i}' for i in range(0, 400, 13)]
            assert fast.settle(candidates) == reference.settle(candidates)
    assert _state(fast) == _state(reference)
    assert fast.evictions_total == reference.evictions_total > 1000


def test_a_c_put_on_a_set_missing_a_field_raises_instead_of_crashing():
    working_set = WorkingSet(capacity=2)
    working_set.put('a', 1, importance=0.5, now=0.0)
    del working_set._slots
    with pytest.raises(AttributeError):
        working_set.put('b', 1, importance=0.5, now=1.0)


def _assemble_ticks(working_set, ticks):
    """Run `ticks` ticks of three cabins over a changing board and log; return the frames."""
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in {
        'planner': {'board_keys': ['goal:*', 'pose', 'route', 'door:*'],
                    'events': {'window_s': 5.0}},
        'executor': {'board_keys': ['pose', 'action:*', 'door:*'], 'events': {'window_s': 2.0},
                     'weights': ['action:*=0.8']},
        'monitor': {'board_keys': ['sensor:*', 'pose'], 'events': {'window_s': 5.0},
                    'weights': ['sensor:*=0.1']},
    }.items()}
    board, log = BoardSnapshot(working_set.timebase), EventLog(1000, working_set.timebase)
    assembler = Assembler(manifests, working_set)
    board.apply([BoardEntry('goal:deliver', {'target': 'dock_3'}, 0.0),
                 BoardEntry('route', [[0, 0], [1, 1]], 0.0)]
                + [BoardEntry(f'door:d{n}', {'open': n % 2 == 0}, 0.0) for n in range(5)])
    frames = []
    for tick in range(1, ticks + 1):
        now = 0.1 * tick
        working_set.timebase.observe(now)
        board.apply([BoardEntry('pose', {'x': now, 'y': 0.0}, now),
                     BoardEntry(f'action:step_{tick % 3}', {'done': False}, now)]
                    + [BoardEntry(f'sensor:{n}', now + n, now) for n in range(12)])
        log.append(Event(now, (EventKind.ACTION, EventKind.FAILURE)[tick % 2], 'test',
                         f'e{tick}', {'tick': tick}))
        frames.append(assembler.assemble(tick, now, board, log, None))
    return frames


def test_the_assemblers_puts_of_a_realistic_tick_run_in_c_with_the_references_result():
    from working_memory.core import _evict
    fast, reference = WorkingSet(16), PyWorkingSet(16)
    _assemble_ticks(fast, 1)   # the first puts meet a fresh timeline: the reference's
    before = _evict.counts()
    fast_frames = _assemble_ticks(fast, 20)
    after = _evict.counts()
    # Each tick puts its 12 changed sensors, the pose, an action and an event, all in C.
    assert after['fast'] - before['fast'] >= 20 * 15
    assert after['reference'] == before['reference']
    _assemble_ticks(reference, 1)
    reference_frames = _assemble_ticks(reference, 20)
    assert [frame.evictions for frame in fast_frames] == [
        frame.evictions for frame in reference_frames]
    assert any(frame.evictions for frame in fast_frames)
    assert _state(fast) == _state(reference)


def test_a_prefix_that_is_no_string_raises_the_references_error_from_the_same_state():
    fast, reference = WorkingSet(3), PyWorkingSet(3)
    errors = []
    for working_set in (fast, reference):
        working_set.put('a', 1, importance=0.5, now=0.0)
        working_set._exempt_prefixes = ('goal', 3)
        with pytest.raises(TypeError) as error:
            working_set.put('b', 2, importance=0.5, now=1.0)
        errors.append(str(error.value))
    assert errors[0] == errors[1]
    assert _state(fast) == _state(reference) and fast.keys() == ['a']


class _Stop(BaseException):
    """Not an error the reference catches (as KeyboardInterrupt)."""


class _HookKey(str):
    """A dict key whose comparison, while the JSON encoder sorts keys, runs `hook`."""

    hook = None

    def __eq__(self, other):
        type(self).hook()
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_an_interrupt_while_measuring_a_value_propagates_and_changes_nothing():
    from working_memory.core import _evict

    def interrupt():
        raise _Stop

    _HookKey.hook = staticmethod(interrupt)
    value = {_HookKey('a'): 1, _HookKey('b'): 2}
    working_set = WorkingSet(3)
    working_set.put('a', 1, importance=0.5, now=0.0)
    before = _evict.counts()
    with pytest.raises(_Stop):
        working_set.put('b', value, importance=0.5, now=1.0)
    assert _evict.counts()['reference'] == before['reference']   # not swallowed into a retry
    assert working_set.keys() == ['a'] and working_set.timebase.now == 0.0


def test_a_value_whose_measuring_replaces_the_timebase_puts_as_the_reference_does():
    results, states = [], []
    for working_set in (WorkingSet(3), PyWorkingSet(3)):
        working_set.put('a', 1, importance=0.5, now=0.0)

        def replace_timebase(working_set=working_set):
            working_set._time = TimeBase()

        _HookKey.hook = staticmethod(replace_timebase)
        results.append(working_set.put('b', {_HookKey('a'): 1, _HookKey('b'): 2},
                                       importance=0.5, now=1.0, stamp=0.5))
        states.append(_state(working_set))
    assert results[0] == results[1] and states[0] == states[1]


@pytest.mark.parametrize('clone', [copy.deepcopy, lambda ws: pickle.loads(pickle.dumps(ws))],
                         ids=['deepcopy', 'pickle'])
def test_a_copied_working_set_has_the_same_contents_and_evolves_on_its_own(clone):
    working_set = WorkingSet(3, size_budget=40, log_limit=4)
    for step in range(8):
        working_set.put(f'k{step % 5}', step, importance=(0.1, 0.9)[step % 2], now=float(step))
    working_set.put('goal:g', 'x', importance=0.5, now=9.0)
    copied = clone(working_set)
    assert type(copied) is WorkingSet and _state(copied) == _state(working_set)
    reference = copy.deepcopy(working_set)
    copied.put('new', 1, importance=0.9, now=10.0)
    assert 'new' in copied and 'new' not in working_set
    assert _state(working_set) == _state(reference)
