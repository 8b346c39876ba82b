"""gazebo.launch.py loads: its arguments are declared and it runs Gazebo, the bridge and map_server.

Only the description is built (no process starts); skipped where launch_ros is not installed.
"""

import importlib.util
import pathlib

import pytest

pytest.importorskip('launch_ros')

from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription  # noqa: E402
from launch_ros.actions import Node  # noqa: E402

LAUNCH_FILE = pathlib.Path(__file__).resolve().parents[2] / 'launch' / 'gazebo.launch.py'


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
