"""Across hosts: the node, the planner and the executor in three network namespaces.

Each namespace holds only its loopback and one veth link to a bridge namespace
(10.213.0.0/24), so DDS can discover peers only over those links: inside the
namespaces alone ROS_AUTOMATIC_DISCOVERY_RANGE is SUBNET, and Fast DDS uses UDP
only (no shared memory between "hosts"). Everything outside them stays on
LOCALHOST. The reference planner and executor report the (tick, digest) of every
frame they decide on; an observer beside the node records the frames it published.
Needs root and `ip netns`; skipped with the reason where they are not permitted.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_prefix, get_package_share_directory

HOSTS = ('memory', 'planner', 'executor')
SUBNET = '10.213.0'
TICKS = 10             # ticks both cabins must report
OBSERVE_S = 90.0       # bounds a hung run; never a timing assertion
STOP_S = 10.0
OBSERVER = Path(__file__).with_name('across_hosts_observer.py')


def ip(*args, check=True):
    """Run `ip ARGS`; return the completed process."""
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check,
                          timeout=30)


def netns_refusal() -> str | None:
    """Return why network namespaces cannot be used here, or None when they can."""
    if shutil.which('ip') is None:
        return 'iproute2 (ip) is not installed'
    if os.geteuid() != 0:
        return 'ip netns needs root'
    probe = f'wm-probe-{os.getpid()}'
    result = ip('netns', 'add', probe, check=False)
    if result.returncode:
        return f'ip netns add is not permitted here: {result.stderr.strip()}'
    ip('netns', 'del', probe, check=False)
    return None


@pytest.fixture
def hosts():
    """Three namespaces on one bridge, {host: namespace}; torn down even when the test fails."""
    refusal = netns_refusal()
    if refusal:
        pytest.skip(refusal)
    prefix = f'wm{os.environ["ROS_DOMAIN_ID"]}-{os.getpid()}'
    bridge = f'{prefix}-bridge'
    names = {host: f'{prefix}-{host}' for host in HOSTS}
    created = []
    try:
        for namespace in (bridge, *names.values()):
            ip('netns', 'add', namespace)
            created.append(namespace)
        # No IGMP querier on this bridge: flood multicast (DDS discovery) to every port.
        ip('-n', bridge, 'link', 'add', 'br0', 'type', 'bridge', 'mcast_snooping', '0')
        ip('-n', bridge, 'link', 'set', 'br0', 'up')
        for index, (host, namespace) in enumerate(names.items(), start=1):
            link, peer = f'v{index}', f'p{index}'
            ip('link', 'add', link, 'netns', namespace, 'type', 'veth',
               'peer', 'name', peer, 'netns', bridge)
            ip('-n', bridge, 'link', 'set', peer, 'master', 'br0', 'up')
            ip('-n', namespace, 'addr', 'add', f'{SUBNET}.{index}/24', 'dev', link)
            ip('-n', namespace, 'link', 'set', link, 'up', 'multicast', 'on')
            ip('-n', namespace, 'link', 'set', 'lo', 'up')
            ip('-n', namespace, 'route', 'add', '224.0.0.0/4', 'dev', link)
        yield names
    finally:
        for namespace in reversed(created):
            ip('netns', 'del', namespace, check=False)


def host_env():
    """Return the environment inside a namespace: discovery on its subnet, UDP only."""
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET',
               FASTDDS_BUILTIN_TRANSPORTS='UDPv4')
    env.pop('ROS_STATIC_PEERS', None)
    return env


def start_in(namespace, *command):
    """Start `command` inside `namespace`; return the process."""
    return subprocess.Popen(['ip', 'netns', 'exec', namespace, *command], env=host_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(process):
    """SIGINT (a clean ROS shutdown), then SIGKILL; return (stdout, stderr)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()


def executable(name):
    """Return the path of the package's executable `name` as `ros2 run` finds it, or None.

    In the package's lib folder (a colcon workspace puts it there, off PATH); `make test`
    also has it on PATH.
    """
    path = Path(get_package_prefix('working_memory')) / 'lib' / 'working_memory' / name
    return str(path) if path.is_file() else shutil.which(name)


def test_frames_reach_planner_and_executor_in_other_namespaces_with_one_digest_per_tick(hosts):
    params = Path(get_package_share_directory('working_memory')) / 'config' / 'working_memory.yaml'
    executables = {name: executable(name) for name in
                   ('working_memory_node', 'planner_node', 'executor_node')}
    assert all(executables.values()), executables
    nodes = [
        start_in(hosts['memory'], executables['working_memory_node'], '--autostart',
                 '--ros-args', '--params-file', str(params)),
        start_in(hosts['planner'], executables['planner_node'],
                 '--ros-args', '--params-file', str(params)),
        start_in(hosts['executor'], executables['executor_node']),
    ]
    try:
        observer = subprocess.run(
            ['ip', 'netns', 'exec', hosts['memory'], sys.executable, str(OBSERVER),
             str(TICKS), str(OBSERVE_S)], env=host_env(), capture_output=True, text=True,
            timeout=OBSERVE_S + 30)
    finally:
        logs = [stop(process) for process in nodes]
    assert observer.returncode == 0, observer.stderr
    seen = {name: {int(tick): digest for tick, digest in ticks.items()}
            for name, ticks in json.loads(observer.stdout).items()}
    both = sorted(set(seen['planner']) & set(seen['executor']) - {0})
    assert len(both) >= TICKS, (f'ticks reported by both cabins: {both}; planner '
                                f'{len(seen["planner"])}, executor {len(seen["executor"])}, '
                                f'frames {len(seen["frames"])}; node log: {logs[0][1][-2000:]}')
    for tick in both:
        assert seen['planner'][tick] == seen['executor'][tick], tick
        if tick in seen['frames']:
            assert seen['planner'][tick] == seen['frames'][tick], tick
    assert sum(tick in seen['frames'] for tick in both) >= TICKS // 2
