"""The node's pure parts: the parameter table and the health summary (no DDS)."""

import math

import pytest

from working_memory.core.items import Missing, MissingReason
from working_memory.ros.diagnostics import CapacityUse, Health, Level
from working_memory.ros.params import (PARAMS, SPECS, cabin_param_specs, config_from_values,
                                       default_values, drop_cabin)

USE = CapacityUse(items=3, capacity=10, size_bytes=40, size_budget=None, alarm=False)


def statuses(health, now, capacity=USE, missing=None, stale_check=True):
    return {s.name: s for s in health.statuses(now, epoch=0, capacity=capacity,
                                               missing=missing or {}, stale_check=stale_check)}


def test_table_defaults_form_a_valid_config_once_a_cabin_is_named():
    config = config_from_values({**default_values(), 'cabin_names': ['planner']})
    assert config.size_budget is None and config.tick_period_s == pytest.approx(0.1)
    assert len(SPECS) == len(PARAMS) and all(spec.description for spec in PARAMS)


@pytest.mark.parametrize('name, value', [
    ('tick_hz', 0.05), ('tick_hz', math.inf), ('capacity', 0), ('capacity', True),
    ('eviction_policy', 'fifo'), ('exempt_prefixes', 'goal'), ('exempt_prefixes', ['goal', '']),
    ('pose_source', 'gps'), ('cabin_names', ['planner', 'planner']), ('map_frame', ''),
])
def test_invalid_values_raise_naming_the_parameter(name, value):
    values = {**default_values(), 'cabin_names': ['planner'], name: value}
    with pytest.raises(ValueError, match=f'^{name}:'):
        config_from_values(values)


def test_only_the_drop_field_of_a_cabin_is_writable_at_runtime():
    specs = cabin_param_specs('planner')
    writable = [spec.name for spec in specs if not spec.read_only]
    assert writable == ['cabins.planner.drop']
    assert drop_cabin('cabins.planner.drop') == 'planner'
    assert drop_cabin('cabins.planner.board_keys') is None and drop_cabin('tick_hz') is None


def test_a_silent_pose_topic_turns_stale_only_with_stale_check():
    health = Health({'board': None, 'odom': 1.0}, started=100.0)
    assert statuses(health, 100.5)['inputs'].level is Level.OK
    late = statuses(health, 101.5)['inputs']
    assert late.level is Level.WARN and 'odom: stale' in late.message
    assert 'board' not in late.message   # sporadic topics are never stale
    assert statuses(health, 101.5, stale_check=False)['inputs'].level is Level.OK
    health.received('odom', 101.6)
    assert statuses(health, 102.0)['inputs'].level is Level.OK


def test_rejections_warn_once_and_stay_counted():
    health = Health({'board': None}, started=0.0)
    health.rejected('board', 'bad JSON')
    first = statuses(health, 1.0)['inputs']
    assert first.level is Level.WARN and 'board: 1 rejected' in first.message
    again = statuses(health, 2.0)['inputs']
    assert again.level is Level.OK
    assert dict(again.values)['board.rejected'] == '1'
    assert dict(again.values)['board.last_rejection'] == 'bad JSON'


def test_eviction_rate_covers_the_last_window_only():
    health = Health({}, started=0.0, rate_window_s=10.0)
    health.evicted(20, now=1.0)
    health.evicted(10, now=15.0)
    assert health.evictions_per_s(15.0) == pytest.approx(1.0)   # 10 in the last 10 s
    assert health.evictions_per_s(30.0) == 0.0


def test_exempt_overflow_is_an_error_and_missing_items_a_warning():
    health = Health({}, started=0.0)
    alarm = CapacityUse(items=12, capacity=10, size_bytes=0, size_budget=None, alarm=True)
    missing = {'planner': [Missing('pose', MissingReason.STALE, 'stale for 2.0 s')],
               'executor': []}
    summary = statuses(health, 1.0, capacity=alarm, missing=missing)
    assert summary['capacity'].level is Level.ERROR
    assert summary['missing'].level is Level.WARN
    assert dict(summary['missing'].values)['planner'] == 'pose (STALE)'


def test_tick_overruns_and_clock_jumps_warn():
    health = Health({}, started=0.0)
    health.tick_done(0.001, period_s=0.01)
    assert statuses(health, 1.0)['ticks'].level is Level.OK
    health.tick_done(0.02, period_s=0.01)
    health.clock_jumped('epoch 1: -90.000 s')
    ticks = statuses(health, 2.0)['ticks']
    assert ticks.level is Level.WARN and dict(ticks.values)['overruns'] == '1'
    assert dict(ticks.values)['clock_jumps'] == 'epoch 1: -90.000 s'
