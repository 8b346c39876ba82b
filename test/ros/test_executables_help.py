"""Every node executable prints its usage on `--help` and refuses an unknown option, never starting.

Each runs as `ros2 run` runs it, a process of its own in an empty directory: the
directory must stay empty (a recorder that started would have created its bag there).
"""

import os
import subprocess
import sys

import pytest

# (module of the main, executable, one parameter the usage names)
EXECUTABLES = [
    ('working_memory.decision.planner_node', 'planner_node', 'replan_period_s'),
    ('working_memory.decision.executor_node', 'executor_node', 'pack_timeout_s'),
    ('working_memory.decision.monitor_node', 'monitor_node', 'status_topics'),
    ('working_memory.trees.planner_tree_node', 'planner_tree_node', 'replan_period_s'),
    ('working_memory.sim.sim_node', 'sim_world_node', 'real_time_factor'),
    ('working_memory.sim.mission_node', 'mission_node', 'zone_polygon'),
    ('working_memory.tools.recorder_node', 'recorder_node', 'bag_path'),
    ('working_memory.relay.goal_relay_node', 'goal_relay_node', 'sources_file'),
]
# [s] bounds an executable that started instead of answering; rclpy's import takes seconds
TIMEOUT_S = 60.0


def run_main(module: str, cwd, *args: str) -> subprocess.CompletedProcess:
    """Run `module`'s main in `cwd` with `args`, on loopback in domain 63; return the result."""
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', ROS_DOMAIN_ID='63')
    return subprocess.run(
        [sys.executable, '-c', f'import sys; from {module} import main; sys.exit(main())', *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.mark.parametrize('module, executable, parameter', EXECUTABLES,
                         ids=[executable for _, executable, _ in EXECUTABLES])
def test_help_prints_the_usage_and_exits_without_starting_the_node(
        module, executable, parameter, tmp_path):
    result = run_main(module, tmp_path, '--help')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f'usage: {executable} [-h] [--ros-args'), result.stdout
    assert parameter in result.stdout and '--params-file' in result.stdout, result.stdout
    assert result.stderr == ''   # no node logged a start
    assert not list(tmp_path.iterdir())


def test_help_before_ros_arguments_still_prints_the_usage(tmp_path):
    result = run_main('working_memory.tools.recorder_node', tmp_path, '-h', '--ros-args',
                      '-p', f'bag_path:={tmp_path / "bag"}')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('usage: recorder_node')
    assert not list(tmp_path.iterdir())


def test_an_unknown_option_exits_2_with_argparse_message_and_records_nothing(tmp_path):
    result = run_main('working_memory.tools.recorder_node', tmp_path, '--bag', 'run1')
    assert result.returncode == 2
    assert result.stderr.startswith('usage: recorder_node')
    assert 'recorder_node: error: unrecognized arguments: --bag run1' in result.stderr
    assert not list(tmp_path.iterdir())


def test_ros_arguments_still_reach_the_node(tmp_path):
    # A parameter the node refuses: it was built with it (exit 2, the node's reason, no usage).
    result = run_main('working_memory.tools.recorder_node', tmp_path, '--ros-args',
                      '-p', 'discovery_period_s:=0.0', '-r', '__ns:=/wm_help_test')
    assert result.returncode == 2
    assert 'discovery_period_s: must be > 0 s' in result.stderr
    assert 'usage:' not in result.stderr
    assert not list(tmp_path.iterdir())
