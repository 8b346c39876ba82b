"""The demo as a newcomer meets it, and one real run interrupted with Ctrl-C.

--drop checked at once, verdict and exit status, progress, summary and hints.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from working_memory.core.manifest import load_manifests
from working_memory.demo.cli import (EXIT_INTERRUPTED, EXIT_NOT_AS_INTENDED, EXIT_OK,
                                     EXIT_USAGE, Progress, drops_from_specs, exit_code,
                                     parse_args, summary, verdict)
from working_memory.demo.demo import main
from working_memory.demo.scenario import Outcome, default_params_file

MANIFESTS = load_manifests(str(default_params_file()))
WALL_LIMIT_S = 120.0  # bounds a hung run; never a timing assertion


@pytest.mark.parametrize('spec, named', [
    ('pilot:constraints', 'cabins: planner, executor, monitor'),
    ('planner:constraint', 'categories: constraints, failures, actions, goals, map'),
    ('planner:events:BOGUS', 'ACTION, FAILURE, CONSTRAINT'),
    ('executor:battery', 'the executor manifest selects (action:*, pose, route'),
])
def test_an_unknown_drop_fails_naming_the_valid_names(spec, named):
    with pytest.raises(ValueError, match=f'--drop {spec}: unknown') as error:
        drops_from_specs([spec], MANIFESTS)
    assert named in str(error.value)


@pytest.mark.parametrize('spec, entries', [
    ('planner:constraints', ('safety:*', 'events:CONSTRAINT')),
    ('monitor:battery', ('battery',)),
    ('planner:board:batt*', ('board:batt*',)),
    ('executor:events:FAILURE', ('events:FAILURE',)),
    ('planner:safety:zone/high_voltage', ('safety:zone/high_voltage',)),
    ('planner:map', ('map',)),
])
def test_known_categories_and_raw_entries_are_accepted(spec, entries):
    cabin = spec.partition(':')[0]
    assert drops_from_specs([spec], MANIFESTS) == {cabin: entries}


def test_the_demo_refuses_a_bad_drop_before_starting_anything(capsys, tmp_path):
    started = time.monotonic()
    assert main(['--drop', 'pilot:constraints', '--out', str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("demo: --drop pilot:constraints: unknown cabin 'pilot'")
    assert not any(tmp_path.iterdir())  # no bag, no report: nothing ran
    assert time.monotonic() - started < WALL_LIMIT_S


def outcome(**fields):
    return Outcome(**{'sim_time_s': 12.0, 'ticks': 120, **fields})


def test_a_baseline_that_does_not_deliver_exits_non_zero():
    assert exit_code(outcome(delivered=True), {}, False, True) == EXIT_OK
    assert exit_code(outcome(delivered=False, timed_out=True), {}, False, True) == \
        EXIT_NOT_AS_INTENDED
    assert 'not delivered within the time limit' in verdict(outcome(timed_out=True), {}, False)[1]


def test_the_summary_names_the_time_limit_that_stopped_an_undelivered_run():
    stopped = outcome(timed_out=True, limit='the wall-time limit (80 s)', wall_time_s=80.0)
    assert verdict(stopped, {}, False)[1] == ('not delivered within the wall-time limit (80 s), '
                                              'though nothing was dropped')
    assert ', stopped by the wall-time limit (80 s)' in summary(stopped, {}, False).splitlines()[1]
    assert 'stopped by' not in summary(outcome(delivered=True), {}, False)
    assert parse_args(['--wall-time-limit', '30']).wall_time_limit == 30.0
    assert parse_args([]).wall_time_limit == 80.0


def test_a_delivery_is_told_at_its_event_time_and_the_run_end_beside_it():
    delivered = outcome(delivered=True, delivered_at_s=35.62, sim_time_s=37.8,
                        wall_time_s=20.0, ticks=376)
    assert summary(delivered, {}, False).splitlines()[1] == (
        '== DELIVERED at 35.6 s sim time (run stopped at 37.8 s, 20.0 s wall), 376 ticks')
    unseen = outcome(delivered=True, sim_time_s=37.8, wall_time_s=20.0, ticks=376)
    assert summary(unseen, {}, False).splitlines()[1] == (
        '== DELIVERED (run stopped at 37.8 s sim time, 20.0 s wall), 376 ticks')
    assert summary(outcome(wall_time_s=3.0), {}, False).splitlines()[1] == (
        '== NOT DELIVERED after 12.0 s sim time (3.0 s wall), 120 ticks')


def test_a_drop_run_ends_as_intended_when_the_robot_stays_safe():
    drops = {'planner': ('safety:*',)}
    assert exit_code(outcome(delivered=False), drops, False, True) == EXIT_OK
    assert exit_code(outcome(zone_violations=2), drops, False, True) == EXIT_NOT_AS_INTENDED
    assert exit_code(outcome(delivered=True), drops, False, False) == EXIT_NOT_AS_INTENDED


def test_an_interrupted_run_says_so_and_exits_130():
    text = summary(outcome(delivered=False), {}, interrupted=True)
    assert '== INTERRUPTED after 12.0 s sim time' in text
    assert 'ended as intended: NO (interrupted before the run ended)' in text
    assert exit_code(outcome(), {}, True, True) == EXIT_INTERRUPTED


def test_progress_waits_for_the_true_pose_and_never_repeats_a_line():
    lines = []
    progress = Progress(lines.append)
    progress(outcome(), {})
    status = {'pose': {'x': 2.0, 'y': 6.0, 'yaw': 0.0}}
    progress(outcome(), status)
    progress(outcome(), status)
    progress(outcome(sim_time_s=13.0), status)
    assert len(lines) == 2 and 'pose=( 2.00, 6.00)' in lines[0]


def test_a_real_run_shows_progress_from_the_first_pose_and_says_it_was_interrupted(tmp_path):
    process = subprocess.Popen(
        [sys.executable, '-P', '-m', 'working_memory.demo', '--out', str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ))
    try:
        lines = []
        deadline = time.monotonic() + WALL_LIMIT_S
        while sum(line.startswith('t=') for line in lines) < 2 and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip('\n'))
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=WALL_LIMIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines += rest.splitlines()
    progress = [line for line in lines if line.startswith('t=')]
    assert progress and 'pose=( 2.00, 6.00)' in progress[0], lines  # the start pose, not 0,0
    assert process.returncode == EXIT_INTERRUPTED
    assert any(line.startswith('== INTERRUPTED after') for line in lines), lines
    printed = [line for line in lines if line.strip()]
    assert len(printed) == len(set(printed)), 'a line was printed twice'
    assert (tmp_path / 'delivery_baseline' / 'metadata.yaml').is_file()
    assert (tmp_path / 'delivery_baseline.html').is_file()


def test_the_cabins_option_picks_plain_or_trees_and_refuses_others(capsys):
    assert parse_args([]).cabins == 'plain'
    assert parse_args(['--cabins', 'trees']).cabins == 'trees'
    with pytest.raises(SystemExit) as exited:
        parse_args(['--cabins', 'bushes'])
    assert exited.value.code == EXIT_USAGE
    assert "invalid choice: 'bushes' (choose from 'plain', 'trees')" in capsys.readouterr().err


def test_the_demo_refuses_to_start_beside_a_working_memory_of_its_namespace(
        start_memory, namespace, capsys, tmp_path):
    start_memory(configure=False)   # a user's own node, not even configured, is enough
    assert main(['--robot', namespace.lstrip('/'), '--out', str(tmp_path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f'demo: {namespace}/working_memory already runs in ROS_DOMAIN_ID=')
    assert 'would mix their frames' in err
    assert not any((tmp_path / namespace.lstrip('/')).iterdir())   # no bag: nothing ran
