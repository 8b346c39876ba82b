"""A fake Nav2 on a node: Nav2's usual topics, real message types, Nav2's rates and QoS.

It publishes a `Nav2Robot` (sim/nav2_robot.py): AMCL's pose at 10 Hz, the odometry at
50 Hz, the collision monitor's polygons (base frame) at 10 Hz while the robot moves and
once at start, the battery at 1 Hz; the map, the keepout filter's mask and the action
status arrays latched, when they change; the plan and `/goal_pose` when a goal comes.
Topic names are relative (they resolve in the node's namespace), as Nav2's are under a
robot's namespace. The test drives the robot; this only converts and publishes.
"""

from __future__ import annotations

import math

import numpy as np
from action_msgs.msg import GoalStatus, GoalStatusArray
from geometry_msgs.msg import Point32, PolygonStamped, PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid, Odometry, Path
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import BatteryState

from working_memory.core.gridmap import MapWindow
from working_memory.ros.conversions import grid_msg_from_window, time_from_seconds
from working_memory.sim.conversions import odometry_msg
from working_memory.sim.nav2_robot import Goal, Nav2Robot, RECOVERIES

PERIOD_S = 0.02           # the odometry's 50 Hz; AMCL and the polygons every 5th, battery 50th
MAP_SIDE_M, MAP_RESOLUTION = 20.0, 0.1
# The collision monitor's polygons around the robot, in its base frame [m].
STOP = ((0.4, 0.3), (0.4, -0.3), (0.0, -0.3), (0.0, 0.3))
SLOWDOWN = ((0.8, 0.5), (0.8, -0.5), (0.0, -0.5), (0.0, 0.5))
# Latched as map_server and action servers offer them (rcl_action's status: depth 1).
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


class FakeNav2:
    """Publish a Nav2Robot's topics on `node` while its executor spins."""

    def __init__(self, node: Node, robot: Nav2Robot):
        self.node, self.robot = node, robot
        self._ticks = 0
        pub = node.create_publisher
        self._amcl = pub(PoseWithCovarianceStamped, 'amcl_pose', 10)
        self._odom = pub(Odometry, 'odom', 10)
        self._plan = pub(Path, 'plan', 10)
        self._goal = pub(PoseStamped, 'goal_pose', 10)
        self._battery = pub(BatteryState, 'battery_state', 10)
        self._polygons = {'stop': pub(PolygonStamped, 'polygon_stop', 10),
                          'slowdown': pub(PolygonStamped, 'polygon_slowdown', 10)}
        self._map = pub(OccupancyGrid, 'map', LATCHED)
        self._mask = pub(OccupancyGrid, 'keepout_filter_mask', LATCHED)
        self._status = {name: pub(GoalStatusArray, f'{name}/_action/status', LATCHED)
                        for name in ('navigate_to_pose', *RECOVERIES)}
        self.publishers = [self._amcl, self._odom, self._plan, self._goal, self._battery,
                           *self._polygons.values(), self._map, self._mask,
                           *self._status.values()]
        self._timer = None

    def now(self) -> float:
        """Return the node clock's time [s]."""
        return self.node.get_clock().now().nanoseconds * 1e-9

    def start(self) -> None:
        """Publish the map, the mask and the polygons once, then the streams at their rates."""
        side = round(MAP_SIDE_M / MAP_RESOLUTION)
        free = np.zeros((side, side), dtype=np.int8)
        self._map.publish(grid_msg_from_window(MapWindow(free, (0.0, 0.0), MAP_RESOLUTION),
                                               'map', self.now()))
        self.publish_mask()
        self._publish_polygons()
        self._timer = self.node.create_timer(PERIOD_S, self._on_timer)

    def stop(self) -> None:
        """Stop the streams."""
        if self._timer is not None:
            self.node.destroy_timer(self._timer)
            self._timer = None

    def goal(self, x: float, y: float) -> Goal:
        """Send a goal as RViz2 does (/goal_pose), accepted and then executed by Nav2."""
        now = self.now()
        msg = PoseStamped()
        msg.header.stamp, msg.header.frame_id = time_from_seconds(now), 'map'
        msg.pose.position.x, msg.pose.position.y, msg.pose.orientation.w = x, y, 1.0
        self._goal.publish(msg)
        goal = self.robot.send_goal(x, y, now)
        self.publish_status()
        self.robot.execute(goal)
        self.publish_status()
        self._publish_plan()
        return goal

    def publish_status(self, action: str = 'navigate_to_pose') -> None:
        """Publish an action's status array: every goal it remembers, with its id and stamp."""
        goals = self.robot.goals if action == 'navigate_to_pose' else \
            self.robot.recoveries[action]
        msg = GoalStatusArray(status_list=[GoalStatus(status=goal.status) for goal in goals])
        for status, goal in zip(msg.status_list, goals):
            status.goal_info.goal_id.uuid[0] = goal.ident
            status.goal_info.stamp = time_from_seconds(goal.accepted)
        self._status[action].publish(msg)

    def publish_mask(self) -> None:
        """Publish the keepout filter's mask of the robot's zones (latched), in map."""
        side = round(MAP_SIDE_M / MAP_RESOLUTION)
        mask = self.robot.keepout_mask(side, side, MAP_RESOLUTION)
        self._mask.publish(grid_msg_from_window(MapWindow(mask, (0.0, 0.0), MAP_RESOLUTION),
                                                'map', self.now()))

    def _publish_plan(self) -> None:
        now, msg = self.now(), Path()
        msg.header.stamp, msg.header.frame_id = time_from_seconds(now), 'map'
        for x, y in self.robot.plan():
            pose = PoseStamped()
            pose.header = msg.header
            pose.pose.position.x, pose.pose.position.y, pose.pose.orientation.w = x, y, 1.0
            msg.poses.append(pose)
        self._plan.publish(msg)

    def _publish_polygons(self) -> None:
        stamp = time_from_seconds(self.now())
        for name, corners in (('stop', STOP), ('slowdown', SLOWDOWN)):
            msg = PolygonStamped()
            msg.header.stamp, msg.header.frame_id = stamp, 'base_link'
            msg.polygon.points = [Point32(x=x, y=y) for x, y in corners]
            self._polygons[name].publish(msg)

    def _on_timer(self) -> None:
        robot, now = self.robot, self.now()
        self._ticks += 1
        robot.step(PERIOD_S)
        self._odom.publish(odometry_msg(robot.x, robot.y, robot.yaw, robot.velocity, 0.0, now,
                                        'odom', 'base_link'))
        if self._ticks % 5 == 0:
            msg = PoseWithCovarianceStamped()
            msg.header.stamp, msg.header.frame_id = time_from_seconds(now), 'map'
            pose = msg.pose.pose
            pose.position.x, pose.position.y = robot.x, robot.y
            pose.orientation.z, pose.orientation.w = (math.sin(robot.yaw / 2.0),
                                                      math.cos(robot.yaw / 2.0))
            self._amcl.publish(msg)
            if robot.velocity:
                self._publish_polygons()   # the collision monitor: while it processes cmd_vel
        if self._ticks % 50 == 1:
            msg = BatteryState(percentage=robot.battery, voltage=24.0 * robot.battery + 2.0)
            msg.header.stamp = time_from_seconds(now)
            self._battery.publish(msg)
