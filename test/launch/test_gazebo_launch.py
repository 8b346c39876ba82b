"""gazebo.launch.py loads: its arguments are declared and it runs Gazebo, the bridge and map_server.

Only the description is built (no process starts); skipped where launch_ros is not installed.
Its defaults are the packaged world's: the file, the robot's name and its bridged topics.
"""

import importlib.util
import pathlib

import pytest

pytest.importorskip('launch_ros')

from launch import LaunchContext  # noqa: E402
from launch.actions import (DeclareLaunchArgument, GroupAction,  # noqa: E402
                            IncludeLaunchDescription)
from launch.utilities import perform_substitutions  # noqa: E402
from launch_ros.actions import Node  # noqa: E402

from working_memory.sim.sdf_world import COMMAND_TOPIC, ODOMETRY_TOPIC, ROBOT_MODEL  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_FILE = ROOT / 'launch' / 'gazebo.launch.py'


def load_description():
    spec = importlib.util.spec_from_file_location('gazebo_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def test_gazebo_launch_declares_world_robot_and_map_arguments():
    arguments = [entity for entity in load_description().entities
                 if isinstance(entity, DeclareLaunchArgument)]
    assert {argument.name for argument in arguments} == {'world', 'robot', 'map'}
    assert all(argument.description for argument in arguments)


def test_gazebo_launch_runs_bridge_map_server_mission_and_includes_gazebo_and_bringup():
    entities = load_description().entities
    group = next(entity for entity in entities if isinstance(entity, GroupAction))
    actions = group.get_sub_entities()
    packages = {action.node_package for action in actions if isinstance(action, Node)}
    assert packages == {'ros_gz_bridge', 'nav2_map_server', 'nav2_lifecycle_manager',
                        'working_memory'}
    assert any(action.node_executable == 'mission_node' for action in actions
               if isinstance(action, Node))
    includes = [entity for entity in [*entities, *actions]
                if isinstance(entity, IncludeLaunchDescription)]
    assert len(includes) == 2


def test_gazebo_launch_defaults_to_the_packaged_world_and_bridges_its_robot_topics():
    entities = load_description().entities
    defaults = {entity.name: entity.default_value for entity in entities
                if isinstance(entity, DeclareLaunchArgument)}
    context = LaunchContext()
    world = pathlib.Path(perform_substitutions(context, defaults['world']))
    assert world.read_text() == (ROOT / 'config' / 'worlds' / 'delivery_world.sdf').read_text()
    assert perform_substitutions(context, defaults['robot']) == ROBOT_MODEL
    context.launch_configurations['robot'] = ROBOT_MODEL
    group = next(entity for entity in entities if isinstance(entity, GroupAction))
    bridge = next(action for action in group.get_sub_entities()
                  if isinstance(action, Node) and action.node_package == 'ros_gz_bridge')
    # cmd[0] is the executable, found only where ros_gz_bridge is installed.
    specs = [perform_substitutions(context, part) for part in bridge.cmd[1:4]]
    assert specs == ['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock',
                     f'{ODOMETRY_TOPIC}@nav_msgs/msg/Odometry[gz.msgs.Odometry',
                     f'{COMMAND_TOPIC}@geometry_msgs/msg/Twist]gz.msgs.Twist']


def test_gazebo_launch_gives_the_working_memory_its_odometry_source():
    entities = load_description().entities
    group = next(entity for entity in entities if isinstance(entity, GroupAction))
    bringup = next(action for action in group.get_sub_entities()
                   if isinstance(action, IncludeLaunchDescription))
    context = LaunchContext()

    def text(value):
        if isinstance(value, str):
            return value
        return perform_substitutions(context, value if isinstance(value, (list, tuple))
                                     else [value])
    arguments = {text(name): text(value) for name, value in bringup.launch_arguments}
    sources = pathlib.Path(arguments['sources_file'])
    assert sources.read_text() == (ROOT / 'config' / 'sources' / 'gazebo.yaml').read_text()
    assert arguments['use_sim_time'] == 'true'
