"""WorkingSet forgets by value: importance first, then recency; goal and safety never."""

import math
import random
from dataclasses import dataclass

import pytest
from hypothesis import event, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from working_memory.core.eviction import (
    EvictionRecord, HalfLifeBlend, ImportanceLRU, PyWorkingSet, Settlement, WorkingSet)
from working_memory.core.items import Source, json_size
from working_memory.core.ranking import HeapRanking
from working_memory.core.timebase import TimeBase


def put(working_set, key, importance, now, value=0, **fields):
    return working_set.put(key, value, importance=importance, now=now, **fields)


def evicted_keys(records):
    return [record.key for record in records]


def test_fresh_constraint_survives_high_rate_readings():
    working_set = WorkingSet(capacity=8)
    put(working_set, 'constraint:max_speed', 0.8, now=0.0, value={'max_speed': 0.5})
    evicted = []
    for step in range(1000):
        # 20 sensor readings refreshed round-robin at 100 Hz: newer than the constraint every time.
        evicted += put(working_set, f'reading:range_{step % 20}', 0.2, now=0.01 * (step + 1),
                       value=step)
    assert 'constraint:max_speed' in working_set
    assert working_set.get('constraint:max_speed').value == {'max_speed': 0.5}
    assert 'constraint:max_speed' not in evicted_keys(evicted)
    assert len(working_set) == 8


def test_lower_importance_goes_first_even_when_it_is_the_newest():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'old_important', 0.9, now=0.0)
    put(working_set, 'old_medium', 0.5, now=1.0)
    records = put(working_set, 'new_trivial', 0.1, now=2.0)
    assert evicted_keys(records) == ['new_trivial']
    assert working_set.keys() == ['old_important', 'old_medium']


def test_equal_importance_evicts_least_recently_used_first():
    working_set = WorkingSet(capacity=3)
    for now, key in enumerate(('a', 'b', 'c')):
        put(working_set, key, 0.5, now=float(now))
    working_set.touch('a', now=3.0)
    assert evicted_keys(put(working_set, 'd', 0.5, now=4.0)) == ['b']
    assert evicted_keys(put(working_set, 'e', 0.5, now=5.0)) == ['c']
    assert evicted_keys(put(working_set, 'f', 0.5, now=6.0)) == ['a']


def test_update_replaces_value_and_refreshes_last_used():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'pose', 0.5, now=1.0, value={'x': 0.0}, stamp=0.9)
    put(working_set, 'route', 0.5, now=2.0)
    put(working_set, 'pose', 0.5, now=3.0, value={'x': 12.5}, stamp=2.9)
    item = working_set.get('pose')
    assert (item.value, item.stamp, item.last_used) == ({'x': 12.5}, 2.9, 3.0)
    assert len(working_set) == 2
    assert working_set.size_bytes == json_size({'x': 12.5}) + json_size(0)
    # The refreshed key is now the most recently used one.
    assert evicted_keys(put(working_set, 'map', 0.5, now=4.0)) == ['route']


def test_update_takes_the_new_importance():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'a', 0.9, now=0.0)
    put(working_set, 'b', 0.5, now=1.0)
    put(working_set, 'a', 0.1, now=2.0)
    assert working_set.get('a').importance == 0.1
    assert evicted_keys(put(working_set, 'c', 0.5, now=3.0)) == ['a']


def test_goal_and_safety_items_survive_an_overflow():
    capacity = 64
    working_set = WorkingSet(capacity)
    put(working_set, 'goal:deliver', 1.0, now=0.0, value='loading dock')
    put(working_set, 'safety:forbidden_zone', 1.0, now=0.0, value='high voltage')
    for i in range(capacity + 4):
        put(working_set, f'noise:{i}', 0.1, now=1.0 + i)
    assert 'goal:deliver' in working_set
    assert 'safety:forbidden_zone' in working_set
    assert len(working_set) == capacity
    assert working_set.evictions_total == 6


def test_exempt_items_beyond_capacity_are_all_kept_and_raise_the_alarm():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'goal:1', 1.0, now=0.0)
    put(working_set, 'goal:2', 1.0, now=0.0)
    assert not working_set.capacity_alarm
    assert put(working_set, 'safety:3', 1.0, now=0.0) == []
    assert working_set.capacity_alarm
    assert len(working_set) == 3
    # A non-exempt newcomer is the only legal victim.
    assert evicted_keys(put(working_set, 'reading', 0.9, now=1.0)) == ['reading']
    working_set.remove('goal:1')
    assert not working_set.capacity_alarm


def test_exempt_flag_protects_keys_without_an_exempt_prefix():
    working_set = WorkingSet(capacity=1, exempt_prefixes=('mission/',))
    put(working_set, 'mission/target', 0.1, now=0.0)
    put(working_set, 'pinned', 0.1, now=1.0, exempt=True)
    assert working_set.get('pinned').exempt
    records = put(working_set, 'goal:not_exempt_here', 1.0, now=2.0)
    assert evicted_keys(records) == ['goal:not_exempt_here']
    assert working_set.keys() == ['mission/target', 'pinned']


def test_item_that_loses_exemption_becomes_evictable():
    working_set = WorkingSet(capacity=1)
    put(working_set, 'pinned', 0.1, now=0.0, exempt=True)
    put(working_set, 'other', 0.5, now=1.0)
    assert working_set.keys() == ['pinned']
    records = put(working_set, 'pinned', 0.1, now=2.0, exempt=False)
    assert records == []
    assert evicted_keys(put(working_set, 'other', 0.5, now=3.0)) == ['pinned']


def test_time_going_backwards_gives_no_negative_ages_and_keeps_recency_order():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'before_reset', 0.5, now=100.0)
    # Gazebo world reset: ROS time restarts near zero.
    put(working_set, 'after_reset', 0.5, now=2.0)
    assert working_set.timebase.epoch == 1
    records = put(working_set, 'later', 0.5, now=3.0)
    assert evicted_keys(records) == ['before_reset']
    # Every time is effective: the reset at 2.0 continues from 100 s.
    assert (records[0].last_used, records[0].stamp) == (100.0, 101.0)
    assert working_set.get('after_reset').last_used == 100.0
    assert working_set.get('later').last_used == 101.0


def test_set_limits_shrinks_and_records_the_evictions():
    working_set = WorkingSet(capacity=6)
    for i in range(5):
        put(working_set, f'k{i}', 0.1 * (i + 1), now=float(i))
    put(working_set, 'goal:x', 1.0, now=5.0)
    working_set.tick = 7
    records = working_set.set_limits(2, None)
    assert evicted_keys(records) == ['k0', 'k1', 'k2', 'k3']
    assert all(record.reason == 'capacity' and record.tick == 7 for record in records)
    assert working_set.keys() == ['k4', 'goal:x']
    assert working_set.capacity == 2


def test_set_limits_with_size_budget_evicts_lowest_value_for_size():
    working_set = WorkingSet(capacity=10)
    put(working_set, 'big_low', 0.1, now=0.0, value='x' * 100)
    put(working_set, 'small_high', 0.9, now=1.0, value='y')
    records = working_set.set_limits(10, 50)
    assert [(r.key, r.reason) for r in records] == [('big_low', 'size_budget')]
    assert working_set.size_bytes == json_size('y') <= working_set.size_budget


def test_size_budget_evicts_in_value_order_on_put():
    size = json_size('0123456789')
    working_set = WorkingSet(capacity=100, size_budget=3 * size)
    for now, (key, importance) in enumerate([('a', 0.5), ('b', 0.2), ('c', 0.5)]):
        put(working_set, key, importance, now=float(now), value='0123456789')
    records = put(working_set, 'd', 0.5, now=3.0, value='0123456789')
    assert [(r.key, r.reason) for r in records] == [('b', 'size_budget')]
    records = put(working_set, 'e', 0.5, now=4.0, value='0123456789' * 2)
    assert evicted_keys(records) == ['a', 'c']


def test_remove_is_not_an_eviction():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'a', 0.5, now=0.0, value='abc')
    removed = working_set.remove('a')
    assert removed.value == 'abc'
    assert working_set.remove('a') is None
    assert 'a' not in working_set and len(working_set) == 0
    assert working_set.size_bytes == 0
    assert working_set.eviction_log == () and working_set.evictions_total == 0
    assert working_set.last_eviction('a') is None


def test_touch_refreshes_last_used_and_keeps_the_value():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'a', 0.5, now=0.0, value=[1, 2], source='map', stamp=-1.0)
    working_set.touch('a', now=4.0)
    item = working_set.get('a')
    assert (item.value, item.source, item.stamp, item.last_used) == ([1, 2], Source.MAP, -1.0, 4.0)


def test_touch_of_an_absent_key_raises_key_error_naming_it():
    with pytest.raises(KeyError, match='ghost'):
        WorkingSet(capacity=1).touch('ghost', now=0.0)


def test_eviction_log_is_bounded_and_last_eviction_answers_within_it():
    working_set = WorkingSet(capacity=1, log_limit=3)
    for i in range(6):
        working_set.tick = i
        put(working_set, f'k{i}', 0.5, now=float(i))
    assert working_set.evictions_total == 5
    assert evicted_keys(working_set.eviction_log) == ['k2', 'k3', 'k4']
    assert working_set.last_eviction('k1') is None
    assert working_set.last_eviction('k4') == EvictionRecord(
        tick=5, key='k4', importance=0.5, last_used=4.0, reason='capacity', stamp=5.0)


def test_last_eviction_outlives_readmission_and_removal_while_in_the_log():
    working_set = WorkingSet(capacity=1, log_limit=4)
    put(working_set, 'keep', 0.9, now=0.0)
    put(working_set, 'low', 0.1, now=1.0)
    record = working_set.last_eviction('low')
    assert record.key == 'low' and working_set.eviction_of('low') is record
    working_set.remove('keep')
    working_set.settle(['low'])                  # room again: back, the record stays known
    assert 'low' in working_set and working_set.eviction_of('low') is None
    assert working_set.last_eviction('low') is record
    working_set.remove('low')
    assert working_set.last_eviction('low') is record
    put(working_set, 'low', 0.1, now=2.0)         # a new item of the same key
    assert working_set.last_eviction('low') is record
    for i in range(4):                            # four later evictions push it out of the log
        put(working_set, f'new{i}', 0.05, now=3.0 + i)
    assert working_set.last_eviction('low') is None
    assert evicted_keys(working_set.eviction_log) == ['new0', 'new1', 'new2', 'new3']


def test_items_made_on_demand_read_the_latest_state_and_stay_immutable():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'pose', 0.5, now=1.0, value={'x': 1})
    before = working_set.get('pose')
    assert working_set.get('pose') is before      # made once while nothing changes
    working_set.touch('pose', now=2.0)
    working_set.mark_stale('pose')
    after = working_set.get('pose')
    assert (before.last_used, before.stale) == (1.0, False)
    assert (after.last_used, after.stale, after.value) == (2.0, True, {'x': 1})
    assert working_set.items() == [after]
    with pytest.raises(AttributeError):
        after.last_used = 3.0
    put(working_set, 'a', 0.9, now=3.0)
    put(working_set, 'b', 0.9, now=4.0)           # 'pose' goes, as it was last used
    assert working_set.evicted_item('pose') == after
    assert working_set.evicted_items() == [after]


def test_an_evicted_key_put_again_and_still_lowest_is_not_evicted_twice():
    working_set = WorkingSet(capacity=1, log_limit=2)
    put(working_set, 'keep', 0.9, now=0.0)
    assert evicted_keys(put(working_set, 'flicker', 0.1, now=1.0)) == ['flicker']
    for now in (2.0, 3.0):
        # New content competes, loses again, and stays out: no second event.
        assert put(working_set, 'flicker', 0.1, now=now, value=now) == []
    assert working_set.evictions_total == 1
    assert working_set.eviction_of('flicker').last_used == 1.0
    assert working_set.evicted_item('flicker').value == 3.0
    assert working_set.readmission('flicker') is None


def test_an_evicted_key_returns_when_its_new_content_outranks_a_present_item():
    working_set = WorkingSet(capacity=1)
    working_set.tick = 1
    put(working_set, 'a', 0.5, now=0.0)
    assert evicted_keys(put(working_set, 'b', 0.5, now=1.0)) == ['a']
    working_set.tick = 2
    working_set.put('a', 'new', importance=0.5, now=2.0, defer_eviction=True)
    settlement = working_set.settle()
    assert evicted_keys(settlement.evicted) == ['b']
    assert [(r.key, r.tick, r.evicted_tick) for r in settlement.readmitted] == [('a', 2, 1)]
    assert working_set.readmission('a') == settlement.readmitted[0]
    assert working_set.eviction_of('a') is None and working_set.eviction_of('b') is not None


def test_a_candidate_competes_with_the_rank_of_its_last_use():
    working_set = WorkingSet(capacity=2)
    put(working_set, 'old', 0.5, now=0.0)
    put(working_set, 'mid', 0.5, now=1.0)
    assert evicted_keys(put(working_set, 'new', 0.5, now=2.0)) == ['old']
    # Wanting it again does not refresh it: it stays below what is present.
    assert working_set.settle(['old']) == Settlement((), ())
    working_set.remove('mid')
    settlement = working_set.settle(['old', 'never_seen'])
    assert [r.key for r in settlement.readmitted] == ['old']
    assert working_set.get('old').last_used == 0.0   # back with its old rank, not used yet
    assert evicted_keys(put(working_set, 'newest', 0.5, now=3.0)) == ['old']


def held_entries(working_set):
    """Return how many entries the working set's ranking holds, stale ones included."""
    ranking = working_set._ranking
    if isinstance(ranking, HeapRanking):
        return len(ranking._heap)
    return sum(len(level.used) + len(level.returns) for level in ranking._levels.values())


@pytest.mark.parametrize('policy', [ImportanceLRU(), HalfLifeBlend(half_life_s=4.0)])
def test_many_touches_keep_the_ranking_bounded_and_the_order_exact(policy):
    working_set = WorkingSet(capacity=50, policy=policy)
    keys = [f'k{i}' for i in range(50)]
    for now, key in enumerate(keys):
        put(working_set, key, 0.5, now=float(now))
    generator = random.Random(7)
    last_touch = {}
    for now in range(50, 5050):
        key = generator.choice(keys)
        working_set.touch(key, now=float(now))
        last_touch[key] = now
        # Stale heap entries are compacted away instead of piling up with every touch.
        assert held_entries(working_set) <= 2 * len(keys) + 64
    expected = sorted(keys, key=lambda key: last_touch.get(key, keys.index(key)))
    assert evicted_keys(working_set.set_limits(1, None)) == expected[:-1]


def test_half_life_blend_lets_a_long_unused_item_go_before_a_fresh_lesser_one():
    def victims(policy):
        working_set = WorkingSet(capacity=2, policy=policy)
        put(working_set, 'important_but_unused', 0.8, now=0.0)
        put(working_set, 'fresh_minor', 0.3, now=10.0)
        return evicted_keys(put(working_set, 'newest', 0.5, now=10.0))

    # 0.8 halved 5 times (10 s at 2 s half-life) is 0.025 < 0.3.
    assert victims(HalfLifeBlend(half_life_s=2.0)) == ['important_but_unused']
    assert victims(ImportanceLRU()) == ['fresh_minor']


def test_half_life_blend_key_order_does_not_change_as_time_passes():
    policy = HalfLifeBlend(half_life_s=3.0)
    items = [(0.9, 0.0), (0.2, 5.0), (0.5, 2.0), (0.05, 9.0)]

    def decayed_order(now):
        return sorted(items, key=lambda item: item[0] * 2 ** (-(now - item[1]) / 3.0))

    key_order = sorted(items, key=lambda item: policy.sort_key(item[0], item[1], 0))
    assert decayed_order(10.0) == decayed_order(60.0) == key_order


@pytest.mark.parametrize('kwargs, name', [
    ({'capacity': 0}, 'capacity'),
    ({'capacity': 2.5}, 'capacity'),
    ({'capacity': True}, 'capacity'),
    ({'capacity': 4, 'size_budget': 0}, 'size_budget'),
    ({'capacity': 4, 'exempt_prefixes': 'goal'}, 'exempt_prefixes'),
    ({'capacity': 4, 'exempt_prefixes': ('goal', '')}, 'exempt_prefixes'),
    ({'capacity': 4, 'policy': object()}, 'policy'),
    ({'capacity': 4, 'log_limit': 0}, 'log_limit'),
])
def test_invalid_constructor_arguments_are_rejected_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        WorkingSet(**kwargs)


@pytest.mark.parametrize('half_life_s', [0.0, -1.0, math.inf, math.nan, '2'])
def test_half_life_must_be_positive_and_finite(half_life_s):
    with pytest.raises(ValueError, match='half_life_s'):
        HalfLifeBlend(half_life_s)


@pytest.mark.parametrize('key, value, fields, name', [
    ('', 1, {}, 'key'),
    (None, 1, {}, 'key'),
    ('k', 1, {'importance': 1.5}, 'importance'),
    ('k', 1, {'importance': None}, 'importance'),
    ('k', 1, {'now': math.nan}, 'now'),
    ('k', 1, {'stamp': math.inf}, 'stamp'),
    ('k', object(), {}, 'JSON'),
    ('k', 1, {'size': -1}, 'size'),
    ('k', 1, {'size': 2**63}, 'size'),   # past the set's C byte counts
    ('k', 1, {'source': 'camera'}, 'camera'),
])
def test_invalid_put_is_rejected_and_leaves_the_set_unchanged(key, value, fields, name):
    working_set = WorkingSet(capacity=1)
    put(working_set, 'present', 0.5, now=1.0)
    arguments = {'importance': 0.5, 'now': 2.0} | fields
    with pytest.raises(ValueError, match=name):
        working_set.put(key, value, **arguments)
    assert working_set.keys() == ['present']
    assert working_set.get('present').last_used == 1.0
    assert working_set.timebase.now == 1.0


def test_invalid_limits_and_tick_are_rejected_naming_them():
    working_set = WorkingSet(capacity=3)
    with pytest.raises(ValueError, match='capacity'):
        working_set.set_limits(0, None)
    with pytest.raises(ValueError, match='size_budget'):
        working_set.set_limits(2, -5)
    with pytest.raises(ValueError, match='tick'):
        working_set.tick = -1
    assert (working_set.capacity, working_set.size_budget, working_set.tick) == (3, None, 0)


# -- property tests against a brute-force reference model -------------------------------------

KEYS = ('goal:deliver', 'safety:zone', 'constraint:speed', 'pose', 'route', 'r0', 'r1', 'r2',
        'r3', 'r4', 'r5')
IMPORTANCES = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0])
VALUES = st.one_of(st.integers(), st.text(max_size=40), st.lists(st.integers(), max_size=8))
# Mostly forward steps, sometimes a reset backwards.
TIME_STEPS = st.one_of(st.floats(min_value=0.0, max_value=5.0),
                       st.floats(min_value=-500.0, max_value=0.0))


class ReferenceWorkingSet:
    """Obviously correct model: dicts and a full scan for every victim.

    Evicted items are kept with the rank of their last use. A settlement puts the
    wanted ones back and evicts lowest first; only present items evicted are events,
    and the returning items that stay are readmitted.
    """

    def __init__(self, capacity, size_budget, rank):
        self.capacity, self.size_budget, self.rank = capacity, size_budget, rank
        self.timebase = TimeBase()
        self.items = {}    # key -> dict(importance, exempt, size, effective, order)
        self.evicted = {}  # key -> the same dict as when it was evicted
        self.returning = set()
        self.order = 0

    def use(self, key, now, **fields):
        self.order += 1
        entry = self.items.setdefault(key, {})
        entry.update(fields, effective=self.timebase.observe(now), order=self.order)

    def put(self, key, now, **fields):
        if key not in self.items and key in self.evicted:
            self.items[key] = self.evicted.pop(key)
            self.returning.add(key)
        self.use(key, now, **fields)

    def remove(self, key):
        self.evicted.pop(key, None)
        self.returning.discard(key)
        return self.items.pop(key, None)

    def settle(self, candidates=()):
        for key in set(candidates) & set(self.evicted):
            self.items[key] = self.evicted.pop(key)
            self.returning.add(key)
        events = []
        while True:
            candidates = [key for key, entry in self.items.items() if not entry['exempt']]
            total = sum(entry['size'] for entry in self.items.values())
            if len(self.items) > self.capacity and candidates:
                reason = 'capacity'
            elif self.size_budget is not None and total > self.size_budget and candidates:
                reason = 'size_budget'
            else:
                break
            victim = min(candidates, key=lambda key: self.rank(self.items[key]))
            self.evicted[victim] = self.items.pop(victim)
            if victim in self.returning:
                self.returning.discard(victim)
            else:
                events.append((victim, reason))
        readmitted, self.returning = self.returning, set()
        return events, readmitted


def importance_then_recency(entry):
    return entry['importance'], entry['order']


def decayed_importance(half_life_s):
    def rank(entry):
        decay = entry['effective'] * math.log(2) / half_life_s
        score = math.log(max(entry['importance'], 1e-9)) + decay
        return score, entry['order']
    return rank


class WorkingSetMachine(RuleBasedStateMachine):
    """Random put/touch/remove/settle/set_limits sequences, checked step by step."""

    def make_policy(self):
        return ImportanceLRU(), importance_then_recency

    @initialize(capacity=st.integers(1, 8), size_budget=st.none() | st.integers(1, 120))
    def start(self, capacity, size_budget):
        policy, rank = self.make_policy()
        self.working_set = WorkingSet(capacity, size_budget, policy=policy, log_limit=1000)
        self.model = ReferenceWorkingSet(capacity, size_budget, rank)
        self.ros_now = 0.0
        self.tick = 0
        self.out = set()   # keys evicted by a recorded event and not since readmitted

    def advance(self, step):
        self.ros_now += step
        self.tick += 1
        self.working_set.tick = self.tick

    def present_after_puts(self, keys):
        """Keys that a settlement evicts with a record if they go: present ones and new ones."""
        evicted = {item.key for item in self.working_set.evicted_items()}
        return set(self.working_set.keys()) | (set(keys) - evicted)

    def check_settlement(self, keys_before, records, readmitted=None):
        expected, expected_back = self.model.settle(getattr(self, 'offered', ()))
        self.offered = ()
        assert [(r.key, r.reason) for r in records] == expected
        assert all(r.tick == self.tick for r in records)
        if readmitted is not None:
            assert {r.key for r in readmitted} == expected_back
            assert all(r.tick == self.tick for r in readmitted)
        # Every key that vanished without remove() is in the records and the log (a returning
        # one evicted again is not: it never came back).
        vanished = keys_before - set(self.working_set.keys())
        assert sorted(vanished) == sorted(r.key for r in records)
        if records:
            assert list(self.working_set.eviction_log[-len(records):]) == records
        assert set(self.working_set.keys()) == set(self.model.items)
        assert {item.key for item in self.working_set.evicted_items()} == set(self.model.evicted)
        # Eviction is an event: a key is not evicted again until it has come back.
        for record in records:
            assert record.key not in self.out
            self.out.add(record.key)
        self.out -= set(self.model.items)
        assert self.out <= set(self.model.evicted)

    @rule(key=st.sampled_from(KEYS), importance=IMPORTANCES, value=VALUES,
          exempt=st.booleans(), step=TIME_STEPS)
    def put(self, key, importance, value, exempt, step):
        self.advance(step)
        keys_before = self.present_after_puts([key])
        total_before = self.working_set.evictions_total
        records = self.working_set.put(key, value, importance=importance, now=self.ros_now,
                                       exempt=exempt)
        self.model.put(key, self.ros_now, importance=importance, size=json_size(value),
                       exempt=exempt or key.startswith(('goal', 'safety')))
        self.check_settlement(keys_before, records)
        assert self.working_set.evictions_total == total_before + len(records)

    @rule(puts=st.lists(st.tuples(st.sampled_from(KEYS), IMPORTANCES, VALUES), max_size=6),
          offered=st.sets(st.sampled_from(KEYS)), step=TIME_STEPS)
    def batch(self, puts, offered, step):
        """One tick: deferred puts, then a settlement offering evicted keys back."""
        self.advance(step)
        keys_before = self.present_after_puts([key for key, _, _ in puts])
        for key, importance, value in puts:
            self.working_set.put(key, value, importance=importance, now=self.ros_now,
                                 defer_eviction=True)
            self.model.put(key, self.ros_now, importance=importance, size=json_size(value),
                           exempt=key.startswith(('goal', 'safety')))
        self.offered = offered
        settlement = self.working_set.settle(offered)
        self.check_settlement(keys_before, list(settlement.evicted), settlement.readmitted)
        for readmission in settlement.readmitted:
            assert self.working_set.readmission(readmission.key) == readmission
        event(f'readmitted {min(len(settlement.readmitted), 2)}')
        event(f'offered and evicted {min(len(offered & set(self.model.evicted)), 2)}')

    @precondition(lambda self: len(self.working_set) > 0)
    @rule(data=st.data(), step=TIME_STEPS)
    def touch(self, data, step):
        key = data.draw(st.sampled_from(sorted(self.working_set.keys())))
        self.advance(step)
        self.working_set.touch(key, now=self.ros_now)
        self.model.use(key, self.ros_now)
        assert self.working_set.get(key).last_used == self.model.items[key]['effective']

    @rule(key=st.sampled_from(KEYS))
    def remove(self, key):
        total_before = self.working_set.evictions_total
        removed = self.working_set.remove(key)
        assert (removed is not None) == (self.model.remove(key) is not None)
        assert self.working_set.evicted_item(key) is None
        self.out.discard(key)
        assert self.working_set.evictions_total == total_before

    @rule(capacity=st.integers(1, 8), size_budget=st.none() | st.integers(1, 120))
    def set_limits(self, capacity, size_budget):
        self.tick += 1
        self.working_set.tick = self.tick
        keys_before = set(self.working_set.keys())
        records = self.working_set.set_limits(capacity, size_budget)
        self.model.capacity, self.model.size_budget = capacity, size_budget
        self.check_settlement(keys_before, records)

    @invariant()
    def capacity_is_respected_except_exempt_overflow(self):
        working_set = self.working_set
        exempt = [item for item in working_set.items() if item.exempt]
        assert len(working_set) <= max(working_set.capacity, len(exempt))
        exempt_bytes = sum(item.size for item in exempt)
        budget = working_set.size_budget
        assert working_set.capacity_alarm == (
            len(exempt) > working_set.capacity or (budget is not None and exempt_bytes > budget))

    @invariant()
    def size_budget_is_respected_unless_only_exempt_items_remain(self):
        working_set = self.working_set
        assert working_set.size_bytes == sum(item.size for item in working_set.items())
        budget = working_set.size_budget
        if budget is not None and working_set.size_bytes > budget:
            assert all(item.exempt for item in working_set.items())

    @invariant()
    def exempt_items_are_never_evicted(self):
        for key, entry in self.model.items.items():
            if entry['exempt']:
                assert self.working_set.get(key).exempt
        assert not any(record.key.startswith(('goal', 'safety'))
                       for record in self.working_set.eviction_log)

    @invariant()
    def ages_are_never_negative(self):
        now = self.working_set.timebase.now
        assert all(record.last_used <= record.stamp <= now
                   for record in self.working_set.eviction_log)
        assert all(item.last_used <= now for item in self.working_set.items())


@dataclass(frozen=True, slots=True)
class ImportanceLRUByHeap(ImportanceLRU):
    """ImportanceLRU's order through the generic heap ranking (only the exact class gets levels)."""


class ImportanceLRUByHeapMachine(WorkingSetMachine):
    """The same checks with ImportanceLRU's keys ranked by the heap, as any other policy is."""

    def make_policy(self):
        return ImportanceLRUByHeap(), importance_then_recency


class HalfLifeBlendMachine(WorkingSetMachine):
    """The same checks with the half-life policy (its model uses effective times)."""

    def make_policy(self):
        return HalfLifeBlend(half_life_s=4.0), decayed_importance(4.0)


MACHINE_SETTINGS = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestWorkingSetMatchesReference = WorkingSetMachine.TestCase
TestWorkingSetMatchesReference.settings = MACHINE_SETTINGS
TestImportanceLRUByHeapMatchesReference = ImportanceLRUByHeapMachine.TestCase
TestImportanceLRUByHeapMatchesReference.settings = MACHINE_SETTINGS
TestHalfLifeBlendMatchesReference = HalfLifeBlendMachine.TestCase
TestHalfLifeBlendMatchesReference.settings = MACHINE_SETTINGS


@pytest.mark.parametrize('make', [PyWorkingSet, WorkingSet])
def test_holding_says_present_or_evicted_only_for_the_very_value_stamp_and_importance(make):
    working_set = make(capacity=1)
    value, other = {'reading': 1.0}, {'reading': 1.0}
    working_set.put('a', value, importance=0.2, now=1.0, stamp=0.5)
    assert working_set.holding('a', value, 0.5, 0.2) is True
    assert working_set.holding('a', other, 0.5, 0.2) is None     # equal is not the same value
    assert working_set.holding('a', value, 0.6, 0.2) is None
    assert working_set.holding('a', value, 0.5, 0.3) is None
    assert working_set.holding('never', value, 0.5, 0.2) is None
    working_set.put('b', 2, importance=0.9, now=2.0)             # evicts a
    assert 'a' not in working_set
    assert working_set.holding('a', value, 0.5, 0.2) is False
    working_set.mark_stale('b')
    assert working_set.holding('b', 2, 2.0, 0.9) is None          # a stale item is no holding
