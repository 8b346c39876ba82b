"""A robot's own params file and a suggest patch after the packaged one, in a namespace.

working_memory.launch.py namespace:=robot1 extra_params:=robot.yaml,patch.yaml: the node
takes the three files in order (later win), the patch's `drop: []` included, and runs.
"""

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from launch import LaunchDescription  # noqa: E402

NODE = '/robot1/working_memory'
ROBOT = """\
/**/working_memory:
  ros__parameters:
    capacity: 30
    cabins:
      planner:
        board_keys: ["goal:*", "pose", "route"]
        drop: ["door:*"]
"""
# What `wm-inspect suggest --out` writes: each field with its full new value.
PATCH = """\
/**/working_memory:
  ros__parameters:
    cabins:
      planner:
        drop: []
        board_keys: ['goal:*', pose, route, 'safety:*']
        events:
          kinds: [CONSTRAINT, FAILURE]
"""


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp('robot1')
    (folder / 'robot.yaml').write_text(ROBOT)
    (folder / 'patch.yaml').write_text(PATCH)
    return folder / 'robot.yaml', folder / 'patch.yaml'


@launch_pytest.fixture(scope='module')
def launch_description(include, processes, files):
    robot, patch = files
    return LaunchDescription([
        *processes.handlers(),
        include('working_memory.launch.py', namespace='robot1', extra_params=f'{robot},{patch}'),
        launch_pytest.actions.ReadyToTest()])


@pytest.mark.launch(fixture=launch_description)
def test_the_packaged_the_robots_and_the_patchs_values_reach_the_namespaced_node(probe):
    probe.wait_for_state(NODE, 'active')
    assert probe.parameters(NODE, [
        'capacity', 'cabins.planner.board_keys', 'cabins.planner.drop',
        'cabins.planner.events.kinds', 'cabins.planner.events.window_s', 'tick_hz']) == {
        'capacity': 30,                                              # the robot's
        'cabins.planner.board_keys': ['goal:*', 'pose', 'route', 'safety:*'],   # the patch's
        'cabins.planner.drop': [],                                   # the patch's empty list
        'cabins.planner.events.kinds': ['CONSTRAINT', 'FAILURE'],    # the patch's
        'cabins.planner.events.window_s': 120.0,                     # the packaged file's
        'tick_hz': 10.0}


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_the_node_exits_cleanly(processes):
    assert processes.exits and all(code == 0 for _, code in processes.exits), processes.exits
