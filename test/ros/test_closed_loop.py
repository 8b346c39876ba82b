"""Closed-loop tests: simulator, working memory, planner, executor and monitor over real DDS.

Missing-item injection as the chapter describes it: drop a category from one
cabin's manifest and assert the downstream reaction on the nodes' own topics. The
baseline and the constraint drop are recorded once per session (`recorded_run`) and
shared with test_faults.py.
"""

import pytest

from working_memory.demo.scenario import Scenario, ScenarioOptions, parse_drops, run_scenario
from working_memory.tools import inspect
from working_memory.tools.recording import load_recording
from working_memory.tools.why import why

# Wall-time bounds only stop a hung run; the assertions are about behaviour.
WALL_LIMIT_S = 120.0


def scenario(drops=(), **options):
    return ScenarioOptions(drops=parse_drops(list(drops)), wall_time_limit_s=WALL_LIMIT_S,
                           **options)


def test_nothing_dropped_delivers_without_alarm_and_adapts_after_a_failed_push(recorded_run):
    outcome, _ = recorded_run('baseline')

    assert outcome.delivered, outcome
    assert outcome.alarms == []  # no constraint alarm, no tearing between planner and executor
    assert outcome.zone_violations == 0
    assert outcome.collisions == 0
    # The seeded door fails the first push; with the failure in its pack the executor
    # changes strategy instead of pushing again.
    assert outcome.failures >= 1
    assert outcome.door_strategies[0] == 'push'
    assert 'remote_open' in outcome.door_strategies
    assert outcome.retry_policies == {'adaptive'}


def test_dropping_constraints_from_the_planner_raises_an_alarm_instead_of_planning(
        recorded_run, capsys):
    outcome, bag = recorded_run('no_constraints')

    assert ('planner', 'constraint_validation') in outcome.alarms
    assert outcome.planner_decisions.get('alarm', 0) > 0
    assert 'route' not in outcome.planner_decisions  # it never planned through the zone
    assert outcome.zone_violations == 0
    assert not outcome.delivered

    # Archaeology on the recorded run points at the injected drop.
    answer = why(load_recording(bag), 'safety:zone/high_voltage', 'planner')
    text = inspect.format_why(answer)
    assert 'INJECTED_DROP' in text, text
    assert inspect.main([str(bag), '--why', 'safety:zone/high_voltage', '--cabin',
                         'planner']) == 0
    # The key was on the board from the first tick: the drop withheld it, the answer says so.
    out = capsys.readouterr().out
    assert '  on the board from tick 1\n' in out, out
    assert '  first seen: never (on the board from tick 1, withheld: see below)' in out, out
    assert 'INJECTED_DROP' in out, out


def test_dropping_failures_from_the_executor_degrades_its_retry_policy(context):
    outcome = run_scenario(
        scenario(['executor:failures'], sim_time_limit_s=40.0), context=context,
        until=lambda o: o.failures >= 1 and len(o.door_strategies) >= 2)

    assert outcome.retry_policies == {'conservative'}
    # Blind to the failed push, it pushes again rather than switching strategy.
    assert outcome.failures >= 1
    assert 'remote_open' not in outcome.door_strategies
    assert outcome.alarms == []


@pytest.mark.parametrize('spec', ['planner', 'planner:', ':constraints'])
def test_a_malformed_drop_spec_is_rejected_with_the_expected_form(spec):
    with pytest.raises(ValueError, match='CABIN:CATEGORY'):
        parse_drops([spec])


# The planner as a py_trees tree (`--cabins trees`) reaches the plain cabins' three outcomes.
def test_the_tree_planner_delivers_the_baseline_without_alarm(context):
    outcome = run_scenario(scenario(cabins='trees'), context=context)

    assert outcome.delivered, outcome
    assert outcome.alarms == []   # no constraint alarm, no tearing: the tree reports its frame
    assert outcome.zone_violations == 0 and outcome.collisions == 0
    assert 'remote_open' in outcome.door_strategies
    assert outcome.retry_policies == {'adaptive'}
    assert outcome.planner_decisions.get('route', 0) > 0


def test_the_tree_planner_holds_with_an_alarm_without_its_constraints(context):
    outcome = run_scenario(scenario(['planner:constraints'], cabins='trees',
                                    sim_time_limit_s=8.0), context=context)

    assert ('planner', 'constraint_validation') in outcome.alarms
    assert outcome.planner_decisions.get('alarm', 0) > 0
    assert 'route' not in outcome.planner_decisions
    assert outcome.zone_violations == 0
    assert not outcome.delivered


def test_the_tree_planner_beside_an_executor_without_failures_stays_conservative(context):
    outcome = run_scenario(
        scenario(['executor:failures'], cabins='trees', sim_time_limit_s=40.0), context=context,
        until=lambda o: o.failures >= 1 and len(o.door_strategies) >= 2)

    assert outcome.retry_policies == {'conservative'}
    assert outcome.failures >= 1
    assert 'remote_open' not in outcome.door_strategies
    assert outcome.alarms == []


def test_an_unknown_cabin_set_is_refused():
    with pytest.raises(ValueError, match='cabins: must be one of plain, trees'):
        Scenario(scenario(cabins='bushes'))
