"""Run the working-memory stack against a real Gazebo Sim instead of sim_world_node.

Gazebo Sim (ros_gz_sim) runs the given SDF world; ros_gz_bridge carries /clock
(Gazebo -> ROS), the robot's odometry to /odom and /cmd_vel to the robot; nav2's
map_server serves /map (latched) from a map_server YAML, by default the delivery
world's grid (config/maps, door closed); mission_node publishes the delivery
mission (goal, high-voltage zone, door on `board`, GOAL and CONSTRAINT on `log`)
and /odom as the board pose. bringup.launch.py then starts working memory,
planner and executor, every node on sim time. Nothing resolves `open_door`
(the world has no door model): the door stays as mission_node's door_state says.

Not exercised in this repository's tests (Gazebo is not installed there); the
world file must hold a diff-drive robot whose odometry and command topics are
/model/<robot>/odometry and /model/<robot>/cmd_vel (Gazebo's DiffDrive defaults),
and the odometry must be the map pose stamped in frame `map` (mission_node does no
TF lookup and rejects other frames).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    """Return Gazebo Sim + bridge + map_server + the working-memory bringup."""
    world = LaunchConfiguration('world')
    robot = LaunchConfiguration('robot')
    map_yaml = LaunchConfiguration('map')
    share = FindPackageShare('working_memory')
    odometry_topic = ['/model/', robot, '/odometry']
    command_topic = ['/model/', robot, '/cmd_vel']

    arguments = [
        DeclareLaunchArgument(
            'world',
            description='SDF world file for Gazebo Sim: the delivery layout and a diff-drive robot'),
        DeclareLaunchArgument(
            'robot', default_value='robot',
            description='Model name of the robot in the world (names its Gazebo topics)'),
        DeclareLaunchArgument(
            'map', default_value=PathJoinSubstitution([share, 'config', 'maps',
                                                       'delivery_world.yaml']),
            description='map_server YAML of the static map published on /map'),
    ]
    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py'])),
        launch_arguments={'gz_args': ['-r ', world]}.items())
    # Bridge direction: '[' Gazebo -> ROS, ']' ROS -> Gazebo.
    bridge = Node(
        package='ros_gz_bridge', executable='parameter_bridge', name='gz_bridge', output='screen',
        arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock',
                   [*odometry_topic, '@nav_msgs/msg/Odometry[gz.msgs.Odometry'],
                   [*command_topic, '@geometry_msgs/msg/Twist]gz.msgs.Twist']],
        remappings=[(odometry_topic, '/odom'), (command_topic, '/cmd_vel')])
    map_server = Node(
        package='nav2_map_server', executable='map_server', name='map_server', output='screen',
        parameters=[{'yaml_filename': map_yaml, 'topic_name': 'map', 'frame_id': 'map'}])
    # map_server is a lifecycle node: configure and activate it at start.
    map_lifecycle = Node(
        package='nav2_lifecycle_manager', executable='lifecycle_manager',
        name='map_lifecycle_manager', output='screen',
        parameters=[{'node_names': ['map_server'], 'autostart': True}])
    # The mission's defaults are the delivery world's; pass parameters for another layout.
    mission = Node(
        package='working_memory', executable='mission_node', name='mission', output='screen')
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([share, 'launch',
                                                            'bringup.launch.py'])),
        launch_arguments={'use_sim_time': 'true'}.items())

    return LaunchDescription([
        *arguments,
        gazebo,
        # Every node below runs on Gazebo's /clock.
        GroupAction([SetParameter(name='use_sim_time', value=True),
                     bridge, map_server, map_lifecycle, mission, bringup]),
    ])
