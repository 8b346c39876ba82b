"""README's `ros2 topic echo --once` of `/working_memory/planner/window`, with the real ros2 CLI.

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

    # As in a terminal: the ros2 daemon knows the graph. `echo` asks it for the topic's
    # publishers and matches their QoS; only a transient-local publisher the daemon has seen
    # makes echo's subscription latched. The topic alone in `ros2 topic list` is not enough
    # (the probe's own subscription puts it there), and with no publisher known echo takes
    # the volatile sensor-data profile and waits for a window that is not published again.
    def daemon_sees_latched_publisher():
        info = subprocess.run(['ros2', 'topic', 'info', '--verbose', TOPIC],
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        publisher = info.stdout.partition('Subscription count:')[0]
        return 'Publisher count: 1' in publisher and 'TRANSIENT_LOCAL' in publisher
    probe.wait_for(daemon_sees_latched_publisher, f'the latched {TOPIC} publisher in the daemon')
    result = subprocess.run(['ros2', 'topic', 'echo', '--once', TOPIC],
                            capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert 'cabin: planner' in result.stdout
    assert windows[-1].digest in result.stdout

    # README's form that names type and QoS asks nothing of the graph: a daemon started
    # afresh, which has seen nothing yet, does not matter to it.
    subprocess.run(['ros2', 'daemon', 'stop'], capture_output=True, timeout=COMMAND_TIMEOUT_S)
    result = subprocess.run(['ros2', 'topic', 'echo', '--once', '--qos-durability',
                             'transient_local', '--qos-reliability', 'reliable', TOPIC,
                             'working_memory/msg/MapWindow'],
                            capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    assert windows[-1].digest in result.stdout
