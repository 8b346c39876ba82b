"""The node's entry point: --autostart brings it up (in either executor), SIGINT ends it.

A clean stop prints nothing; a stop that hangs prints where (spin.STOP_DUMP_S).
"""

import signal
import subprocess
import sys
import time

import pytest
import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState

from working_memory.msg import ContextFrame
from working_memory.ros import qos

MAIN = 'import sys; from working_memory.ros.node import main; sys.exit(main())'


@pytest.mark.parametrize('kind', ['single', 'events'])
def test_main_autostarts_publishes_and_exits_cleanly_on_sigint(kind, context, add_node,
                                                               spin_until, namespace, tmp_path):
    frames = []
    probe = add_node(rclpy.create_node('main_probe', namespace=namespace, context=context))
    probe.create_subscription(ContextFrame, 'working_memory/frame', frames.append,
                              qos.frame_qos())
    # cwd away from the source tree: the interfaces are importable from the install only.
    node = subprocess.Popen(
        [sys.executable, '-c', MAIN, '--autostart', '--executor', kind,
         '--ros-args', '-r', f'__ns:={namespace}',
         '-p', 'cabin_names:=[planner]', '-p', 'cabins.planner.board_keys:=[pose]',
         '-p', 'tick_hz:=50.0'], cwd=tmp_path)
    try:
        assert spin_until(lambda: frames), 'the autostarted node published no frame'
        assert [pack.cabin for pack in frames[-1].packs] == ['planner']
    finally:
        node.send_signal(signal.SIGINT)
        exit_code = node.wait(timeout=20)
    assert exit_code == 0


def test_main_autostart_with_a_bad_parameter_exits_with_the_reason(namespace, tmp_path):
    result = subprocess.run(
        [sys.executable, '-c', MAIN, '--autostart', '--ros-args', '-r', f'__ns:={namespace}',
         '-p', 'cabin_names:=[planner]', '-p', 'capacity:=0'],
        cwd=tmp_path, capture_output=True, text=True, timeout=20)
    assert result.returncode == 1
    assert 'configure failed' in result.stderr and 'capacity' in result.stderr


def test_main_exits_cleanly_however_often_sigint_comes(context, add_node, spin_until,
                                                       namespace, tmp_path):
    # A terminal's Ctrl-C reaches the node and `ros2 launch`, which sends its own SIGINT
    # right after: a second signal may land while the interpreter shuts down.
    frames = []
    probe = add_node(rclpy.create_node('main_probe', namespace=namespace, context=context))
    probe.create_subscription(ContextFrame, 'working_memory/frame', frames.append,
                              qos.frame_qos())
    node = subprocess.Popen(
        [sys.executable, '-c', MAIN, '--autostart', '--ros-args', '-r', f'__ns:={namespace}',
         '-p', 'cabin_names:=[planner]', '-p', 'cabins.planner.board_keys:=[pose]'],
        cwd=tmp_path)
    try:
        assert spin_until(lambda: frames), 'the autostarted node published no frame'
    finally:
        deadline = time.monotonic() + 20.0   # bounds a node that hangs in its shutdown
        while node.poll() is None and time.monotonic() < deadline:
            node.send_signal(signal.SIGINT)
            time.sleep(0.005)
        if node.poll() is None:
            node.kill()
            node.wait()
    assert node.returncode == 0


def test_main_exits_cleanly_once_the_node_is_shut_down(context, add_node, spin_until,
                                                       change_state_ready, namespace, tmp_path):
    # `ros2 lifecycle set <node> shutdown`: the answer comes, then the process ends (0).
    probe = add_node(rclpy.create_node('main_probe', namespace=namespace, context=context))
    client = probe.create_client(ChangeState, 'working_memory/change_state')
    node = subprocess.Popen(
        [sys.executable, '-c', MAIN, '--autostart', '--ros-args', '-r', f'__ns:={namespace}',
         '-p', 'cabin_names:=[planner]', '-p', 'cabins.planner.board_keys:=[pose]'],
        cwd=tmp_path)
    try:
        assert change_state_ready(client), 'change_state never answered'
        future = client.call_async(ChangeState.Request(
            transition=Transition(id=Transition.TRANSITION_ACTIVE_SHUTDOWN)))
        assert spin_until(future.done) and future.result().success
        assert node.wait(timeout=20) == 0
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()


HANGING_STOP = """
import sys, time
from rclpy.node import Node
from working_memory.ros import spin

class HangsInDestroy(Node):
    def destroy_node(self):
        print('destroying', flush=True)
        time.sleep(30.0)   # a shutdown that hangs, as one that launch had to kill

spin.STOP_DUMP_S = float(sys.argv[1])
sys.exit(spin.run_node(lambda: HangsInDestroy('hangs_in_destroy'), sys.argv[2:],
                       start=lambda node: print('spinning', flush=True) or True))
"""


@pytest.mark.parametrize('hangs', [True, False])
def test_a_stop_that_hangs_prints_where_and_a_clean_stop_prints_nothing(hangs, namespace,
                                                                        tmp_path):
    # The watchdog's delay, against the time the node takes to stop cleanly (no hang).
    script = HANGING_STOP if hangs else HANGING_STOP.replace('time.sleep(30.0)', 'pass')
    node = subprocess.Popen(
        [sys.executable, '-c', script, '0.5' if hangs else '8.0', '--ros-args', '-r',
         f'__ns:={namespace}'], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        assert node.stdout.readline() == 'spinning\n'
        node.send_signal(signal.SIGINT)
        assert node.stdout.readline() == 'destroying\n'
        if hangs:
            time.sleep(2.0)   # the watchdog's 0.5 s, and time to write
    finally:
        if hangs:
            node.kill()
        _, stderr = node.communicate(timeout=20)
    if hangs:
        assert 'Timeout (0:00:00.500000)!' in stderr, stderr
        assert 'in destroy_node' in stderr and 'in run_node' in stderr, stderr
    else:
        assert node.returncode == 0
        assert 'Timeout' not in stderr, stderr


@pytest.mark.parametrize('text, reason', [
    ('capacity:\n', "Couldn't parse params file: '--params-file {path}'. Error: No value at "
                    'line 3'),
    ('cabin_names: [planner, 1]\n', 'Sequence should be of same type'),
])
def test_a_params_file_rcl_cannot_parse_exits_2_with_its_reason_and_no_traceback(
        tmp_path, text, reason):
    path = tmp_path / 'bad.yaml'
    path.write_text(f'/**/working_memory:\n  ros__parameters:\n    {text}')
    done = subprocess.run([sys.executable, '-c', MAIN, '--ros-args', '--params-file', str(path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith('cannot start: ')
    assert reason.format(path=path) in done.stderr
    assert 'Traceback' not in done.stderr and ', at /' not in done.stderr
