"""working_memory.launch.py with respawn:=true: a killed node comes back and re-reads the truth.

The node's process is killed (SIGKILL, as a crash or an out-of-memory kill); launch starts
it again, the new process configures and activates itself, asks the writers on
resync/request, and its packs hold what the writers hold (docs/NODE.md, "After a restart").
"""

import os
import signal
import subprocess

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from launch import LaunchDescription  # noqa: E402

from working_memory.client import BoardWriter, EventLogger  # noqa: E402
from working_memory.msg import ContextFrame  # noqa: E402
from working_memory.ros.qos import frame_qos  # noqa: E402

NAMESPACE = f'/respawn_{os.getpid()}'
NODE = f'{NAMESPACE}/working_memory'
ZONE = 'safety:zone/high_voltage'


@launch_pytest.fixture(scope='module')
def launch_description(include, processes):
    return LaunchDescription([
        *processes.handlers(),
        include('working_memory.launch.py', namespace=NAMESPACE.lstrip('/'), respawn='true',
                respawn_delay='0.5'),
        launch_pytest.actions.ReadyToTest()])


def node_pid():
    """Return the pid of this test's working-memory process (its namespace is its own)."""
    found = subprocess.run(['pgrep', '-f', f'working_memory_node.*__ns:={NAMESPACE}'],
                           capture_output=True, text=True, check=False).stdout.split()
    assert len(found) == 1, found
    return int(found[0])


def held(frame):
    planner = next(pack for pack in frame.packs if pack.cabin == 'planner')
    return {item.key for item in planner.items} | {
        f'event:{event.key}' for event in planner.recent_events}


@pytest.mark.launch(fixture=launch_description)
def test_a_killed_node_is_respawned_and_reads_the_writers_again(probe):
    frames = probe.collect(ContextFrame, f'{NODE}/frame', frame_qos())
    probe.wait_for(lambda: frames, f'a frame on {NODE}/frame')
    board = BoardWriter(probe.node, f'{NAMESPACE}/board', f'{NAMESPACE}/resync')
    log = EventLogger(probe.node, f'{NAMESPACE}/log', 'world', f'{NAMESPACE}/resync')
    probe.wait_for(lambda: board.subscription_count and log.subscription_count, 'the node')
    board.set('goal:deliver', {'x': 17.0, 'y': 3.0}, importance=1.0)
    board.set(ZONE, {'polygon': [[12, 3.5], [15, 3.5], [15, 5.5]]}, tags=['safety'])
    log.log('CONSTRAINT', ZONE, tags=['safety'])
    wanted = {'goal:deliver', ZONE, f'event:{ZONE}'}
    probe.wait_for(lambda: wanted <= held(frames[-1]), 'the writers in the planner pack')
    first = frames[-1]
    os.kill(node_pid(), signal.SIGKILL)
    probe.wait_for(lambda: frames[-1].started != first.started and not frames[-1].resyncing,
                   'a frame of the respawned node, re-read', timeout=60.0)
    assert frames[-1].tick < first.tick or frames[-1].started.sec > first.started.sec
    assert wanted <= held(frames[-1])
