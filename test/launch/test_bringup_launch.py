"""working_memory.launch.py and bringup.launch.py build: arguments, lifecycle handlers, nodes.

Only the descriptions are built (no process starts); skipped where launch_ros is not installed.
"""

import importlib.util
import pathlib

import pytest

pytest.importorskip('launch_ros')

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription  # noqa: E402
from launch.actions import RegisterEventHandler  # noqa: E402
from launch.event_handlers import OnProcessStart  # noqa: E402
from launch_ros.actions import LifecycleNode, Node  # noqa: E402
from launch_ros.event_handlers import OnStateTransition  # noqa: E402

LAUNCH_DIR = pathlib.Path(__file__).resolve().parents[2] / 'launch'


def load_description(file_name):
    spec = importlib.util.spec_from_file_location(file_name.replace('.', '_'),
                                                  LAUNCH_DIR / file_name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def of_type(entities, kind):
    return [entity for entity in entities if isinstance(entity, kind)]


@pytest.mark.parametrize('file_name', ['working_memory.launch.py', 'bringup.launch.py'])
def test_launch_arguments_are_declared_with_descriptions(file_name):
    arguments = of_type(load_description(file_name).entities, DeclareLaunchArgument)
    assert {argument.name for argument in arguments} == {'namespace', 'params_file',
                                                         'use_sim_time'}
    assert all(argument.description for argument in arguments)


def test_working_memory_node_is_configured_then_activated_by_event_handlers():
    entities = load_description('working_memory.launch.py').entities
    (node,) = of_type(entities, LifecycleNode)
    assert (node.node_package, node.node_executable) == ('working_memory', 'working_memory_node')
    handlers = [entity.event_handler for entity in of_type(entities, RegisterEventHandler)]
    assert {type(handler) for handler in handlers} == {OnProcessStart, OnStateTransition}


def test_bringup_includes_working_memory_and_starts_the_decision_nodes():
    entities = load_description('bringup.launch.py').entities
    assert len(of_type(entities, IncludeLaunchDescription)) == 1
    executables = {node.node_executable for node in of_type(entities, Node)}
    assert executables == {'planner_node', 'executor_node', 'monitor_node'}
