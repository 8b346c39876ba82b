"""Two robots side by side from one params file: working_memory.launch.py namespace:=robotN.

Each node is configured as the packaged file says, publishes its own frames and
diagnostics, and sees only its own robot's board.
"""

import json

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from launch import LaunchDescription  # noqa: E402

from working_memory.msg import BoardEntry, BoardUpdate, ContextFrame  # noqa: E402
from working_memory.ros.qos import diagnostics_qos, frame_qos, stream_qos  # noqa: E402

ROBOTS = ('robot1', 'robot2')
GOAL = 'goal:deliver'
FRAMES_AFTER = 5   # robot2 frames, ticked after robot1 held the goal, that must not hold it


@launch_pytest.fixture(scope='module')
def launch_description(include, processes, params_file):
    robots = [include('working_memory.launch.py', namespace=robot, params_file=params_file)
              for robot in ROBOTS]
    return LaunchDescription([*processes.handlers(), *robots,
                              launch_pytest.actions.ReadyToTest()])


def planner_keys(frame):
    pack = next(pack for pack in frame.packs if pack.cabin == 'planner')
    return {item.key for item in pack.items}


@pytest.mark.launch(fixture=launch_description)
def test_each_robot_is_configured_as_the_params_file_says(probe):
    for robot in ROBOTS:
        node = f'/{robot}/working_memory'
        probe.wait_for_state(node, 'active')
        assert probe.parameters(node, ['capacity', 'cabin_names',
                                       'cabins.executor.map.corridor_m']) == {
            'capacity': 40, 'cabin_names': ['planner', 'executor', 'monitor'],
            'cabins.executor.map.corridor_m': 1.5}, robot


@pytest.mark.launch(fixture=launch_description)
def test_diagnostics_tell_the_two_robots_apart(probe):
    diagnostics = probe.collect(DiagnosticArray, '/diagnostics', diagnostics_qos())
    for robot in ROBOTS:
        status = probe.status(diagnostics, f'/{robot}/working_memory: capacity')
        assert status.hardware_id == f'/{robot}/working_memory'
        assert status.message.endswith('/40 items')


@pytest.mark.launch(fixture=launch_description)
def test_a_board_update_shows_in_its_own_robots_frames_only(probe):
    frames = {robot: probe.collect(ContextFrame, f'/{robot}/working_memory/frame', frame_qos())
              for robot in ROBOTS}
    probe.wait_for(lambda: all(frames.values()), 'frames from both robots')
    board = probe.node.create_publisher(BoardUpdate, '/robot1/board', stream_qos())
    probe.wait_for(lambda: board.get_subscription_count() > 0, '/robot1/board subscribed')
    board.publish(BoardUpdate(entries=[BoardEntry(key=GOAL, value=json.dumps({'x': 17, 'y': 3}),
                                                  importance=1.0)]))
    probe.wait_for(lambda: GOAL in planner_keys(frames['robot1'][-1]), 'the goal in robot1')
    seen = len(frames['robot2'])
    probe.wait_for(lambda: len(frames['robot2']) >= seen + FRAMES_AFTER, 'more robot2 frames')
    assert not [frame.tick for frame in frames['robot2'] if GOAL in planner_keys(frame)]


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_both_robots_exit_cleanly(processes):
    assert len(processes.exits) == len(ROBOTS)
    assert all(code == 0 for _, code in processes.exits), processes.exits
