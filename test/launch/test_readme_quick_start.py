"""README.md's five-minute quick start, run as a user types it, with the real ros2 CLI.

The commands are read from the section's code block, so an edit to the README that
breaks them, or a command added without an expectation here, fails this test. The
block's first line opens the shell the user types in (`tools/rosenv bash`); every other
command runs in that shell, started from the repository's root with the environment of a
fresh terminal (no venv, no ROS 2 setup on PATH; only this run's DDS domain). The one
substitution: the node's command ("terminal 1") runs in the background. Before it, the
harness starts the ros2 daemon (which the CLI verbs use) and waits until the daemon sees
the node; it stops the daemon at the end. Every command has a timeout.
"""

import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess

import pytest

if shutil.which('ros2') is None:
    pytest.skip('the ros2 CLI comes from ../shared/wheels (make installs it there)',
                allow_module_level=True)

from working_memory.msg import ContextFrame  # noqa: E402
from working_memory.ros.qos import frame_qos  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE = '/working_memory'
# A fresh terminal's PATH: ros2 and the package come from the shell the README opens.
TERMINAL_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
# What a fresh terminal keeps of this run's environment: who and where, the DDS domain, and
# the venv and build `make` chose (tools/rosenv finds them by itself without these).
KEPT = ('HOME', 'USER', 'LANG', 'LC_ALL', 'TERM', 'ROS_DOMAIN_ID',
        'ROS_AUTOMATIC_DISCOVERY_RANGE', 'WM_VENV', 'WM_BUILD')
COMMAND_TIMEOUT_S = 30.0   # bounds a hung command, never a timing assertion
# What each README command must print, by the start of the command.
EXPECTED = {
    'ros2 param describe /working_memory capacity': ['Min value: 1', 'exempt items included'],
    'ros2 lifecycle set /working_memory configure': ['Transitioning successful'],
    'ros2 lifecycle set /working_memory activate': ['Transitioning successful'],
    'ros2 topic pub --once /board': ['publishing #1'],
    'ros2 topic echo /working_memory/frame --once': ['key: goal:deliver', 'cabin: planner'],
    'ros2 service call /working_memory/assemble': ['success=True', "key='goal:deliver'"],
    'ros2 service call /working_memory/explain': ["reason='NEVER_SEEN'"],
    'ros2 param set /working_memory cabins.planner.drop': ['Set parameter successful'],
    'ros2 param set /working_memory capacity': ['Set parameter successful'],
    'ros2 service call /working_memory/explain working_memory/srv/Explain \\\n'
    '  "{cabin: executor, key: pose': ["reason='EVICTED'"],
    'ros2 topic echo /diagnostics --once': [f"name: '{NODE}: lifecycle'",
                                            f"name: '{NODE}: capacity'"],
}


def quick_start_commands():
    """Return the shell commands of README.md's quick-start code block, in order.

    The first opens the shell the others are typed in.
    """
    readme = (ROOT / 'README.md').read_text()
    section = readme.split('## Five-minute quick start', 1)[1].split('\n## ', 1)[0]
    block = re.search(r'```bash\n(.*?)```', section, re.S).group(1)
    commands, pending = [], ''
    for line in block.splitlines():
        pending = f'{pending}\n{line}' if pending else line
        if pending.endswith('\\'):
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:   # an open quote: the command goes on on the next line
            continue
        if words:
            commands.append(pending)
        pending = ''
    assert not pending, f'unterminated command in the README: {pending!r}'
    return commands


def expectation(command):
    """Return the EXPECTED key of `command` (the longest that starts it)."""
    keys = [key for key in EXPECTED if command.startswith(key)]
    assert keys, f'README command without an expectation in this test: {command!r}'
    return max(keys, key=len)


def in_shell(command):
    """Return the argv and environment of `command` typed in the README's shell.

    The shell is opened from the repository's root in a fresh terminal's environment.
    """
    shell = shlex.split(quick_start_commands()[0], comments=True)
    assert shell[0] == 'tools/rosenv', f'the quick start opens no tools/rosenv shell: {shell}'
    env = {name: os.environ[name] for name in KEPT if name in os.environ}
    return [*shell, '-c', command], {**env, 'PATH': TERMINAL_PATH}


def run(command):
    """Run `command` in the README's shell; return its output, failing on a non-zero exit."""
    argv, env = in_shell(command)
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f'{command!r} exited {done.returncode}:\n{output}'
    return output


@pytest.fixture
def ros2_daemon():
    """Start the ros2 daemon of this domain; stop it after the test."""
    run('ros2 daemon start')
    yield
    argv, env = in_shell('ros2 daemon stop')
    subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=COMMAND_TIMEOUT_S)


@pytest.fixture
def background():
    """Return start(command): `command` in the README's shell, in a session of its own.

    Stopped after the test.
    """
    started = []

    def start(command, log_path):
        argv, env = in_shell(command)
        with open(log_path, 'w') as log:
            started.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True))
        return started[-1]
    yield start
    for process in started:
        # Ctrl-C as in a terminal: SIGINT to the session's process group (bash, ros2 run, node).
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_readme_quick_start_runs_as_typed_in_the_shell_it_opens(
        probe, ros2_daemon, background, tmp_path):
    _, node_command, *commands = quick_start_commands()
    assert node_command.startswith('ros2 run working_memory working_memory_node')
    assert sorted({expectation(command) for command in commands}) == sorted(EXPECTED), \
        'an expectation here matches no README command'
    node_log = tmp_path / 'node.log'
    node = background(node_command, node_log)
    frames = probe.collect(ContextFrame, f'{NODE}/frame', frame_qos())

    def daemon_sees_node():
        assert node.poll() is None, f'the node exited:\n{node_log.read_text()}'
        return NODE in run('ros2 node list').split()
    probe.wait_for(daemon_sees_node, f'{NODE} in ros2 node list')
    for command in commands:
        key = expectation(command)
        if key == 'ros2 topic echo /working_memory/frame --once':
            # The frame echoed is the latest: wait until one holds the board update.
            probe.wait_for(lambda: any(item.key == 'goal:deliver' for frame in frames[-1:]
                                       for pack in frame.packs for item in pack.items),
                           'a frame with the board update')
        output = run(command)
        missing = [text for text in EXPECTED[key] if text not in output]
        assert not missing, f'{command!r} printed no {missing}:\n{output}'
    assert node.poll() is None, f'the node exited:\n{node_log.read_text()}'
    assert 'configured: cabins planner, executor, monitor, capacity 40' in node_log.read_text()
