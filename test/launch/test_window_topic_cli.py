"""README's `ros2 topic echo --once /working_memory/planner/window`, with the real ros2 CLI.

The node (working_memory.launch.py, the packaged params) gets a map and a pose; the
planner's window is latched on its topic, so the CLI prints it at once.
"""

import array
import json
import shutil
import subprocess

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')
if shutil.which('ros2') is None:
    pytest.skip('the ros2 CLI comes from ../shared/wheels (make installs it there)',
                allow_module_level=True)

from launch import LaunchDescription  # noqa: E402
from nav_msgs.msg import OccupancyGrid  # noqa: E402

from working_memory.core.windows import WINDOWS_KEPT  # noqa: E402
from working_memory.msg import BoardEntry, BoardUpdate, MapWindow  # noqa: E402
from working_memory.ros.qos import latched_qos, map_qos, stream_qos  # noqa: E402

COMMAND_TIMEOUT_S = 30.0   # bounds a hung command, never a timing assertion
TOPIC = '/working_memory/planner/window'


@pytest.fixture(autouse=True)
def ros2_daemon():
    """Start the ros2 daemon of this domain; stop it after the test."""
    subprocess.run(['ros2', 'daemon', 'start'], capture_output=True, timeout=COMMAND_TIMEOUT_S,
                   check=True)
    yield
    subprocess.run(['ros2', 'daemon', 'stop'], capture_output=True, timeout=COMMAND_TIMEOUT_S)


@launch_pytest.fixture(scope='module')
def launch_description(include, processes, params_file):
    return LaunchDescription([*processes.handlers(),
                              include('working_memory.launch.py', params_file=params_file),
                              launch_pytest.actions.ReadyToTest()])


def free_map(side=100, resolution=0.1):
    msg = OccupancyGrid()
    msg.header.frame_id = 'map'
    msg.info.resolution = resolution
    msg.info.width = msg.info.height = side
    msg.info.origin.orientation.w = 1.0
    msg.data = array.array('b', bytes(side * side))
    return msg


@pytest.mark.launch(fixture=launch_description)
def test_ros2_topic_echo_once_prints_the_planners_latched_window(probe):
    probe.wait_for_state('/working_memory', 'active')
    board = probe.node.create_publisher(BoardUpdate, '/board', stream_qos())
    grid = probe.node.create_publisher(OccupancyGrid, '/map', map_qos())
    windows = probe.collect(MapWindow, TOPIC, latched_qos(WINDOWS_KEPT))
    grid.publish(free_map())
    pose = BoardUpdate(entries=[BoardEntry(key='pose', value=json.dumps(
        {'x': 5.0, 'y': 5.0, 'yaw': 0.0}), importance=float('nan'))])

    def window_seen():
        board.publish(pose)   # volatile: again until the node has taken it
        return bool(windows)
    probe.wait_for(window_seen, 'the planner window')

    # As in a terminal: the ros2 daemon knows the graph, so the CLI finds the topic's type
    # (a CLI process without it may start before discovery reaches the topic).
    def daemon_sees_topic():
        listed = subprocess.run(['ros2', 'topic', 'list'], capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT_S)
        return TOPIC in listed.stdout.split()
    probe.wait_for(daemon_sees_topic, f'{TOPIC} in ros2 topic list')
    result = subprocess.run(['ros2', 'topic', 'echo', '--once', TOPIC],
                            capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert 'cabin: planner' in result.stdout
    assert windows[-1].digest in result.stdout
