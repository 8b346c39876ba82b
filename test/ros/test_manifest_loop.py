"""From a fault to a fixed manifest as a user runs it: demo, `wm-inspect suggest --out`, demo again.

A robot's own params file leaves out of a cabin's manifest what its decisions need; the
demo with it goes wrong, `suggest` on its bag writes a patch, and the demo with the
robot's file and the patch delivers. Every step is the real command line.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from working_memory.demo.scenario import PARAMS_FILES_KEY
from working_memory.tools.recording import load_run

RUN_LIMIT_S = 300.0   # bounds a hung command, never a timing assertion

EXAMPLES = Path(__file__).resolve().parents[2] / 'config' / 'examples'


def demo(out, *params):
    """Run `make demo`'s command with `params` files; return (exit status, stdout)."""
    command = [sys.executable, '-P', '-m', 'working_memory.demo', '--out', str(out)]
    for path in params:
        command += ['--params', str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_LIMIT_S)
    assert 'Traceback' not in done.stderr, done.stderr
    return done.returncode, done.stdout


def suggest(bag, patch):
    """Run `wm-inspect suggest BAG --out PATCH`; return its stdout."""
    # `ros2 run working_memory wm-inspect` is this module; a workspace has no wm-inspect on PATH.
    done = subprocess.run([sys.executable, '-m', 'working_memory.tools.inspect', 'suggest',
                           str(bag), '--out', str(patch)],
                          capture_output=True, text=True, timeout=RUN_LIMIT_S)
    assert done.returncode in (0, 3), done.stderr
    return done.stdout


def summary_line(stdout, label):
    return next(line for line in stdout.splitlines() if line.strip().startswith(label))


def test_a_planner_manifest_without_safety_is_found_patched_and_delivers(tmp_path):
    # The README's three commands, with the example file it names.
    robot = EXAMPLES / 'planner_without_safety.yaml'
    status, out = demo(tmp_path / 'out', robot)
    assert status == 1 and '== NOT DELIVERED' in out, out
    assert 'constraint_validation (from planner)' in summary_line(out, 'alarms:')
    bag = tmp_path / 'out' / 'delivery_planner_without_safety'
    assert load_run(bag).custom_data[PARAMS_FILES_KEY] == f'["{robot}"]'

    patch = tmp_path / 'patch.yaml'
    found = suggest(bag, patch)
    assert 'safety:zone/high_voltage  NOT_IN_MANIFEST' in found, found
    assert 'event:CONSTRAINT:safety:zone/high_voltage#1  NOT_IN_MANIFEST' in found, found
    assert 'does NOT fix' not in found and 'capacity alarm never fires' in found, found
    planner = yaml.safe_load(patch.read_text())['/**/working_memory']['ros__parameters'][
        'cabins']['planner']
    assert planner['board_keys'][-1] == 'safety:*'
    assert planner['events']['kinds'] == ['FAILURE', 'CONSTRAINT']

    status, out = demo(tmp_path / 'out', robot, patch)
    assert status == 0 and '== DELIVERED' in out, out
    assert summary_line(out, 'alarms:').split(':', 1)[1].strip() == 'none'
    assert summary_line(out, 'zone violations:').split()[2] == '0'


def test_an_executor_manifest_without_failures_repeats_the_push_and_the_patch_adapts(tmp_path):
    robot = EXAMPLES / 'executor_without_failures.yaml'
    _, out = demo(tmp_path / 'out', robot)
    # The executor never sees the push fail, so it pushes again.
    assert 'push, push' in summary_line(out, 'door attempts:'), out

    patch = tmp_path / 'patch.yaml'
    found = suggest(tmp_path / 'out' / 'delivery_executor_without_failures', patch)
    assert 'executor: FAILURE of open_door (push): door stuck; repeated after it' in found, found
    assert 'NOT_IN_MANIFEST' in found and 'does NOT fix' not in found, found
    executor = yaml.safe_load(patch.read_text())['/**/working_memory']['ros__parameters'][
        'cabins']['executor']
    assert executor == {'events': {'kinds': ['ACTION', 'FAILURE']}}

    status, out = demo(tmp_path / 'out', robot, patch)
    assert status == 0 and '== DELIVERED' in out, out
    assert summary_line(out, 'door attempts:').split(':', 1)[1].strip().startswith(
        'push, remote_open'), out


@pytest.mark.parametrize('args, error', [
    (['--params', 'missing.yaml'], '--params missing.yaml: missing.yaml: cannot read parameters'),
])
def test_a_params_file_the_demo_cannot_read_is_bad_usage(tmp_path, args, error):
    done = subprocess.run([sys.executable, '-P', '-m', 'working_memory.demo', *args],
                          capture_output=True, text=True, timeout=RUN_LIMIT_S, cwd=tmp_path)
    assert done.returncode == 2 and error in done.stderr, done.stderr
