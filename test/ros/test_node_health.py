"""The node's pure parts: the parameter table and the health summary (no DDS)."""

import math

import pytest

from working_memory.core.items import Missing, MissingReason, MissingSummary
from working_memory.engine.config import (PARAMS, ParamType, SPECS, cabin_param_specs, cabin_specs,
                                          check_known, check_parameter, check_refused, coerce,
                                          config_from_values, default_values, drop_cabin,
                                          param_spec)
from working_memory.engine.health import (BoardGrowth, CapacityUse, Health, Level, idle_period_s,
                                          lifecycle_status, stall)

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


def test_capacity_description_says_exempt_items_are_counted():
    assert 'exempt items included' in SPECS['capacity'].description


def test_every_parameter_name_finds_its_row_table_and_cabin_fields_alike():
    assert param_spec('capacity') is SPECS['capacity']
    radius = param_spec('cabins.planner.map.radius_m')
    assert (radius.name, radius.type, radius.read_only) == (
        'cabins.planner.map.radius_m', ParamType.DOUBLE, True)
    assert not param_spec('cabins.monitor.drop').read_only
    assert param_spec('use_sim_time') is None and param_spec('cabins.planner.raduis') is None


def test_cabin_rows_are_declared_for_each_valid_distinct_cabin_name():
    names = {spec.name.split('.')[1] for spec in cabin_specs(['planner', 'planner', '9bad', 'x'])}
    assert names == {'planner', 'x'}
    assert len(cabin_specs(['planner'])) == len(cabin_param_specs('planner'))
    assert cabin_specs('planner') == () and cabin_specs([]) == ()


@pytest.mark.parametrize('name, value, expected', [
    ('tick_hz', 20, 20.0),                 # `ros2 param set ... tick_hz 20` sends an integer
    ('cabins.planner.drop', [], []),       # `... drop "[]"` sends an empty bool array
    ('capacity', 20, 20),
    ('capacity', 'many', 'many'),          # left for check_parameter to refuse
    ('tick_hz', True, True),
])
def test_loosely_typed_command_line_values_are_coerced_to_the_row_type(name, value, expected):
    coerced = coerce(param_spec(name), value)
    assert coerced == expected and type(coerced) is type(expected)


@pytest.mark.parametrize('name, value, message', [
    ('capacity', 'many', "capacity: must be an integer, got 'many'"),
    ('capacity', 0, 'capacity: must be in [1, 1000000], got 0'),
    ('tick_hz', 'fast', "tick_hz: must be a double, got 'fast'"),
    ('cabins.planner.drop', 'safety:*', 'cabins.planner.drop: must be a list of strings'),
    ('stale_check', 1, 'stale_check: must be a bool, got 1'),
])
def test_a_wrong_value_is_refused_naming_the_parameter_and_what_it_takes(name, value, message):
    with pytest.raises(ValueError) as error:
        check_parameter(name, value)
    assert str(error.value).startswith(message)


def test_parameters_outside_the_table_are_left_to_rclpy():
    check_parameter('use_sim_time', 'yes')


@pytest.mark.parametrize('override, suggestion', [
    ('capacty', 'capacity'),
    ('cabins.planner.default_wieght', 'cabins.planner.default_weight'),
    ('cabins.plannr.drop', 'cabins.planner.drop'),
])
def test_an_unknown_override_is_named_with_the_closest_declared_name(override, suggestion):
    declared = [*SPECS, *(spec.name for spec in cabin_specs(['planner', 'executor']))]
    with pytest.raises(ValueError) as error:
        check_known(['capacity', override], declared)
    assert str(error.value) == f'{override}: unknown parameter (did you mean {suggestion}?)'


def test_known_overrides_and_no_refusals_pass():
    check_known(['capacity'], SPECS)
    check_refused({})
    with pytest.raises(ValueError, match='^capacity: must be an integer'):
        check_refused({'capacity': "capacity: must be an integer, got 'many'"})


@pytest.mark.parametrize('state, failure, level, message', [
    ('unconfigured', None, Level.WARN, 'unconfigured: waiting for configure'),
    ('unconfigured', 'configure failed: capacty: unknown parameter', Level.ERROR,
     'unconfigured: configure failed: capacty: unknown parameter'),
    ('inactive', None, Level.WARN, 'inactive: not ticking'),
    ('active', None, Level.OK, 'active: ticking'),
    ('finalized', None, Level.WARN, 'finalized: not ticking'),
])
def test_lifecycle_status_tells_each_state_and_a_failed_configure(state, failure, level,
                                                                  message):
    status = lifecycle_status(state, failure)
    assert (status.name, status.level, status.message) == ('lifecycle', level, message)
    assert dict(status.values)['state'] == state


def test_an_active_node_without_ticks_says_since_when_and_why():
    assert stall(1.9, 0.1, 1.0) is None                    # two idle periods not yet over
    assert stall(2.5, 0.1, 1.0) == ('no tick for 2.5 s: the tick timer did not run (a '
                                    'callback holding the executor?)')
    assert stall(5.0, 3.0, 1.0) is None                    # slow ticks: two periods first
    # Sim time: not moving is a missing /clock; slow is no stall; moving on without ticks
    # is a held executor.
    assert stall(2.5, 0.1, 1.0, ros_advance_s=0.0).endswith('(is /clock published?)')
    assert stall(2.5, 1.0, 1.0, ros_advance_s=1.5) is None
    assert 'did not run' in stall(2.5, 1.0, 1.0, ros_advance_s=2.5)
    # A trigger topic: at once without any trigger, after five intervals with them.
    assert stall(2.5, None, 1.0, 'decide') == 'no tick for 2.5 s: no message on decide'
    assert stall(2.5, None, 1.0, 'decide', trigger_interval_s=1.0) is None
    assert stall(5.5, None, 1.0, 'decide', trigger_interval_s=1.0).endswith('on decide')
    status = lifecycle_status('active', None, 'no tick for 2.5 s: no message on decide')
    assert (status.level, status.message) == (Level.WARN,
                                              'active: no tick for 2.5 s: no message on decide')


def test_diagnostics_keep_a_period_while_not_ticking_even_when_every_tick_is_asked():
    assert idle_period_s(0.0) == 1.0 and idle_period_s(0.25) == 0.25


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


def test_sequence_gaps_and_middleware_losses_both_warn_without_adding_up():
    health = Health({'board': None}, started=0.0)
    for sequence in (1, 2, 6):   # 3, 4 and 5 never arrived
        health.receipts.took('board', b'writer', sequence)
    values = dict(statuses(health, 2.0)['inputs'].values)
    assert (values['board.lost_gaps'], values['board.lost_reported'], values['board.lost']) == (
        '3', '0', '3')
    health.lost('board', 2)   # the middleware saw some of the same: the larger count stands
    inputs = statuses(health, 3.0)['inputs']
    assert inputs.level is Level.WARN and 'board: 3 lost' in inputs.message
    assert dict(inputs.values)['board.lost'] == '3'


def test_eviction_rate_covers_the_last_window_only():
    health = Health({}, started=0.0, rate_window_s=10.0)
    health.evicted(20, now=1.0)
    health.evicted(10, now=15.0)
    assert health.evictions_per_s(15.0) == pytest.approx(1.0)   # 10 in the last 10 s
    assert health.evictions_per_s(30.0) == 0.0


def test_exempt_overflow_is_an_error_and_missing_items_a_warning():
    health = Health({}, started=0.0)
    alarm = CapacityUse(items=12, capacity=10, size_bytes=0, size_budget=None, alarm=True)
    missing = {'planner': [Missing('pose', MissingReason.STALE,
                                   'stale: its ttl of 2.0 s ran out', 1.0)],
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


def test_missing_status_tells_the_keys_counted_per_glob_beside_the_listed_ones():
    health = Health({}, started=0.0)
    listed = [Missing(f'obj:{n}', MissingReason.STALE, 'stale', 1.0) for n in range(3)]
    counted = {'planner': [MissingSummary('obj:*', MissingReason.STALE, 4980, 3, 0.5, 1.0)]}
    missing = health.statuses(1.0, epoch=0, capacity=USE, missing={'planner': listed},
                              stale_check=True, counted=counted)[-1]
    assert missing.level is Level.WARN
    assert missing.message == 'planner: 3 missing (4977 more counted per glob)'
    assert dict(missing.values)['planner.counted'] == 'obj:*: 4980 STALE'


def _grown(growth, seconds, per_s, prefix='obj:', removed_per_s=0, start_keys=0, start=0.0):
    """Feed `growth` one status a second for `seconds` s of a prefix arriving at `per_s`/s."""
    status = None
    for second in range(seconds + 1):
        arrived, removed = start_keys + per_s * second, removed_per_s * second
        status = growth.status(start + second, 10 + arrived - removed,
                               {prefix: (arrived, removed), 'pose': (10, 0)})
    return status


def test_board_growth_names_the_prefix_whose_keys_pile_up_and_nobody_removes():
    status = _grown(BoardGrowth(window_s=30.0, warn_keys=1000), 40, per_s=100)
    assert status.level is Level.WARN
    values = dict(status.values)
    assert (values['keys'], values['growth_keys_per_s'], values['growth_window_s']) == (
        '4010', '100.00', '30.0')
    assert values['grows.obj:'] == '+3000 keys in 30 s, 0 removed'
    assert 'keys accumulate that nobody removes: obj: +3000 (0 removed)' in status.message
    assert 'pose' not in status.message


def test_a_board_filled_once_or_whose_keys_are_removed_as_they_come_is_no_warning():
    # 50,000 keys in the first second, none after: large, not growing.
    filled = _grown(BoardGrowth(window_s=30.0, warn_keys=1000), 40, per_s=0,
                    start_keys=50_000)
    assert filled.level is Level.OK and dict(filled.values)['keys'] == '50010'
    # Keys that arrive at 100/s and are removed at 100/s: the board does not grow.
    balanced = _grown(BoardGrowth(window_s=30.0, warn_keys=1000), 40, per_s=100,
                      removed_per_s=100)
    assert balanced.level is Level.OK
    # Growth that stopped half a window ago: no longer piling up.
    growth = BoardGrowth(window_s=30.0, warn_keys=1000)
    _grown(growth, 20, per_s=200)
    stopped = _grown(growth, 20, per_s=0, start_keys=4000, start=20.0)
    assert stopped.level is Level.OK
    # Too short a history to tell.
    assert _grown(BoardGrowth(window_s=30.0, warn_keys=1000), 10, per_s=500).level is Level.OK
