"""Start the decision loop: working memory (auto-activated) plus planner, executor and monitor.

Every node gets the same namespace, parameter file and use_sim_time; `cabins:=trees` runs the
planner as a py_trees behaviour tree (planner_tree_node), same name and topics. The
decision nodes read `<namespace>/working_memory/frame`; the simulator (or a
real robot) provides board, log, map, /clock and consumes cmd_vel. With `profile:=nav2`
Nav2's controller drives: the reference executor (which publishes cmd_vel) does not run,
the planner advises beside Nav2 (its route on route:reference, config/profiles/nav2.yaml).
"""

import importlib.util
import pathlib

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node

HERE = pathlib.Path(__file__).resolve().parent
WORKING_MEMORY_LAUNCH = HERE / 'working_memory.launch.py'
DECISION_NODES = ('planner', 'executor', 'monitor')


def _working_memory_launch():
    """Load working_memory.launch.py as a module: one definition of the shared arguments."""
    spec = importlib.util.spec_from_file_location('working_memory_launch', WORKING_MEMORY_LAUNCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_launch_description() -> LaunchDescription:
    """Return working memory plus the three reference decision nodes."""
    working_memory = _working_memory_launch()
    arguments = working_memory.declare_common_arguments()
    include = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(WORKING_MEMORY_LAUNCH)),
        launch_arguments={argument.name: LaunchConfiguration(argument.name)
                          for argument in arguments}.items())
    cabins = DeclareLaunchArgument(
        'cabins', default_value='plain', choices=['plain', 'trees'],
        description='Decision nodes: the plain reference cabins, or the planner as a py_trees '
                    'behaviour tree (planner_tree_node) beside the plain executor and monitor')
    # The launch argument's choices are checked before this expression is evaluated.
    planner = PythonExpression(["'planner_tree_node' if '", LaunchConfiguration('cabins'),
                                "' == 'trees' else 'planner_node'"])

    def decision_nodes(context) -> list[Node]:
        # On a Nav2 robot Nav2's controller drives: no second writer of cmd_vel.
        nav2 = LaunchConfiguration('profile').perform(context) == 'nav2'
        return [Node(package='working_memory',
                     executable=planner if name == 'planner' else f'{name}_node', name=name,
                     namespace=LaunchConfiguration('namespace'),
                     parameters=working_memory.common_parameters(context), output='screen')
                for name in DECISION_NODES if not (nav2 and name == 'executor')]
    return LaunchDescription([*arguments, cabins, include, OpaqueFunction(function=decision_nodes)])
