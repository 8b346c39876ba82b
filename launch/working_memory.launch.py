"""Start the working-memory lifecycle node and bring it to active (configure, then activate).

The node is a launch_ros LifecycleNode: once its process is up the launch emits
a ChangeState(configure) event; when the node reports the transition to
`inactive`, an OnStateTransition handler emits ChangeState(activate), once: later
transitions (a cleanup and configure to reconfigure it) are the user's. A failed
configure (bad parameters, bad manifest) leaves the node unconfigured, logged and
reported as an ERROR on /diagnostics. With `namespace:=robot1` the node is
/robot1/working_memory, its topics and services below it; the packaged params file
(keys /**/working_memory) configures it all the same. `sources_file:=<file>` gives the
node typed-topic sources (the robot's own topics as board entries and events, e.g.
config/sources/nav2.yaml; docs/SOURCES.md). `profile:=nav2` starts from the Nav2 profile
(config/profiles/nav2.yaml with config/sources/nav2.yaml; docs/CONNECT.md) instead of the
delivery robot's config/working_memory.yaml.

With `respawn:=true` launch starts the node again when its process ends (a crash,
an out-of-memory kill), after `respawn_delay` seconds. Launch's lifecycle events
would bring up only the first process, so then each process configures and
activates itself (`--autostart`); the new node re-reads the writers (docs/NODE.md,
"After a restart").
"""

import pathlib

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessStart
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare
from lifecycle_msgs.msg import Transition

# Per profile, its params file and sources file under the package's share (None: none).
PROFILES = {'delivery': (('config', 'working_memory.yaml'), None),
            'nav2': (('config', 'profiles', 'nav2.yaml'), ('config', 'sources', 'nav2.yaml'))}


def declare_common_arguments() -> list[DeclareLaunchArgument]:
    """Return the arguments shared with bringup: namespace, params_file, sources_file, ..."""
    return [
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of every node (empty: the root namespace)'),
        DeclareLaunchArgument(
            'profile', default_value='delivery', choices=list(PROFILES),
            description='The packaged starting point: delivery (the built-in delivery robot, '
                        'config/working_memory.yaml) or nav2 (a Nav2 robot: '
                        'config/profiles/nav2.yaml with config/sources/nav2.yaml); its files '
                        'are the defaults of params_file and sources_file'),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description='YAML parameter file with the cabin manifests, keyed /**/<node name> '
                        "so that a node in any namespace picks it up; '' is the profile's"),
        DeclareLaunchArgument(
            'extra_params', default_value='',
            description='Params files loaded after params_file by every node, comma-separated, '
                        "later files winning: a robot's own manifests, the patch "
                        '`wm-inspect suggest --out` wrote'),
        DeclareLaunchArgument(
            'sources_file', default_value='',
            description="YAML file of typed-topic sources: the robot's own topics mapped to "
                        'board entries and events (e.g. the packaged config/sources/nav2.yaml, '
                        "docs/SOURCES.md); '' is the profile's (nav2: that file; delivery: "
                        "none, params_file's sources_file stands)"),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Run every node on /clock (sim time) instead of the system clock'),
        DeclareLaunchArgument(
            'respawn', default_value='false', choices=['true', 'false'],
            description='Start the working-memory node again when its process ends; each '
                        'process then configures and activates itself'),
        DeclareLaunchArgument(
            'respawn_delay', default_value='1.0',
            description='Seconds between the end of the process and its respawn'),
    ]


def profile_file(context, argument: str) -> str:
    """Return the file `argument` (params_file, sources_file) names, else the profile's ('')."""
    given = LaunchConfiguration(argument, default='').perform(context)
    if given:
        return given
    params, sources = PROFILES[LaunchConfiguration('profile', default='delivery').perform(context)]
    parts = params if argument == 'params_file' else sources
    if parts is None:
        return ''
    return str(pathlib.Path(FindPackageShare('working_memory').perform(context), *parts))


def common_parameters(context) -> list:
    """Return the parameters every node gets: the params files, in order, and use_sim_time."""
    extra = LaunchConfiguration('extra_params', default='').perform(context)
    return [profile_file(context, 'params_file'),
            *(path.strip() for path in extra.split(',') if path.strip()),
            {'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'), value_type=bool)}]


def change_state(node: LifecycleNode, transition_id: int) -> EmitEvent:
    """Return the action asking `node` for one lifecycle transition."""
    return EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(node),
                                       transition_id=transition_id))


def node_and_transitions(context) -> list:
    """Return the node and what brings it to active, as `respawn` says."""
    respawn = LaunchConfiguration('respawn').perform(context) == 'true'
    sources_file = profile_file(context, 'sources_file')
    # Given (or the profile's), it overrides the params file's; else the params file's stands.
    sources = [{'sources_file': sources_file}] if sources_file else []
    node = LifecycleNode(
        package='working_memory', executable='working_memory_node', name='working_memory',
        namespace=LaunchConfiguration('namespace'),
        parameters=[*common_parameters(context), *sources],
        output='screen', respawn=respawn,
        respawn_delay=float(LaunchConfiguration('respawn_delay').perform(context)),
        arguments=['--autostart'] if respawn else [])
    if respawn:
        return [node]
    configure_at_start = RegisterEventHandler(OnProcessStart(
        target_action=node, on_start=[change_state(node, Transition.TRANSITION_CONFIGURE)]))
    # Once: a user's later configure (after a cleanup) leaves the node inactive.
    activate_when_configured = RegisterEventHandler(OnStateTransition(
        target_lifecycle_node=node, start_state='configuring', goal_state='inactive',
        entities=[change_state(node, Transition.TRANSITION_ACTIVATE)], handle_once=True))
    # Handlers first, so no transition event can pass before they listen.
    return [activate_when_configured, configure_at_start, node]


def generate_launch_description() -> LaunchDescription:
    """Return the working-memory node with its automatic configure -> activate."""
    return LaunchDescription([*declare_common_arguments(),
                              OpaqueFunction(function=node_and_transitions)])
