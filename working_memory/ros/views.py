"""Optional RViz2 / Foxglove views of each frame (parameter `views`), built only for subscribers.

    ~/<cabin>/map_window  nav_msgs/OccupancyGrid      each cabin's map window (latched)
    ~/route               nav_msgs/Path               the route the packs hold
    ~/markers             visualization_msgs/MarkerArray  pose, safety zones, goals, doors and
                                                      one text note per cabin (missing, alarms)

What to draw comes from `ros/scene.py` (pure); this module converts it to messages. A
topic nobody subscribes to costs one `get_subscription_count()` per tick. Every view
topic is reliable + transient local, keep last 1: a viewer that starts late gets the
current view at once. All in `map_frame`: no TF is needed.
"""

from __future__ import annotations

import math

from geometry_msgs.msg import Point, PoseStamped
from nav_msgs.msg import OccupancyGrid, Path
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from working_memory.core.frames import Frame
from working_memory.ros.conversions import grid_msg_from_window, time_from_seconds
from working_memory.ros.qos import latched_qos
from working_memory.ros.scene import Scene, scene_from_frame

ROBOT = ColorRGBA(r=0.1, g=0.3, b=0.9, a=1.0)
ZONE = ColorRGBA(r=0.9, g=0.1, b=0.1, a=1.0)
GOAL = ColorRGBA(r=0.1, g=0.7, b=0.2, a=0.8)
DOOR_CLOSED = ColorRGBA(r=0.95, g=0.55, b=0.0, a=1.0)
DOOR_OPEN = ColorRGBA(r=0.3, g=0.8, b=0.3, a=0.6)
NOTE = ColorRGBA(r=0.1, g=0.1, b=0.1, a=1.0)
ALARM = ColorRGBA(r=0.9, g=0.0, b=0.0, a=1.0)
# Both shipped views look straight down (RViz2's TopDownOrtho, Foxglove's 3D panel at phi 0):
# the cabin notes sit beside the robot on the map, one line each, so that neither the robot
# nor another note is hidden under a note.
NOTE_OFFSET_M = 1.0    # [m] from the robot (+y) to its first cabin note: past its arrow
NOTE_SPACING_M = 0.45  # [m] between two cabin notes (+y)
NOTE_HEIGHT_M = 1.0    # [m] above the map


class Views:
    """The view publishers of one configured node; `publish(frame, pose)` once per tick."""

    def __init__(self, node, cabins, map_frame: str) -> None:
        """Create the (lifecycle) publishers on `node` for `cabins`, all in `map_frame`."""
        self._node = node
        self._frame_id = map_frame
        self._windows = {cabin: node.create_lifecycle_publisher(
            OccupancyGrid, f'~/{cabin}/map_window', latched_qos()) for cabin in cabins}
        self._route = node.create_lifecycle_publisher(Path, '~/route', latched_qos())
        self._markers = node.create_lifecycle_publisher(MarkerArray, '~/markers', latched_qos())

    def publish(self, frame: Frame, pose: tuple[float, float] | None = None) -> None:
        """Publish the views of `frame` that someone subscribes to."""
        wanted = [publisher for publisher in (*self._windows.values(), self._route,
                                              self._markers)
                  if publisher.get_subscription_count()]
        if not wanted:
            return
        scene = scene_from_frame(frame, pose)
        for cabin, publisher in self._windows.items():
            window = scene.windows.get(cabin)
            if publisher in wanted and window is not None:
                publisher.publish(grid_msg_from_window(window, self._frame_id, scene.stamp))
        if self._route in wanted:
            self._route.publish(path_msg(scene, self._frame_id))
        if self._markers in wanted:
            self._markers.publish(marker_array(scene, self._frame_id))

    def destroy(self) -> None:
        """Destroy the publishers."""
        for publisher in (*self._windows.values(), self._route, self._markers):
            self._node.destroy_lifecycle_publisher(publisher)
        self._windows = {}


def path_msg(scene: Scene, frame_id: str) -> Path:
    """Return the scene's route as a nav_msgs/Path (no poses when there is no route)."""
    msg = Path()
    msg.header.stamp = time_from_seconds(scene.stamp)
    msg.header.frame_id = frame_id
    for x, y in scene.route:
        pose = PoseStamped()
        pose.header = msg.header
        pose.pose.position.x, pose.pose.position.y = x, y
        pose.pose.orientation.w = 1.0
        msg.poses.append(pose)
    return msg


def marker(scene: Scene, frame_id: str, namespace: str, index: int, kind: int,
           color: ColorRGBA, scale: tuple[float, float, float]) -> Marker:
    """Return an ADD marker with identity orientation."""
    msg = Marker(ns=namespace, id=index, type=kind, action=Marker.ADD, color=color)
    msg.header.stamp = time_from_seconds(scene.stamp)
    msg.header.frame_id = frame_id
    msg.pose.orientation.w = 1.0
    msg.scale.x, msg.scale.y, msg.scale.z = scale
    return msg


def marker_array(scene: Scene, frame_id: str) -> MarkerArray:
    """Return pose, zones, goals, doors and cabin notes; a DELETEALL first clears the old ones."""
    markers = [Marker(action=Marker.DELETEALL)]
    markers[0].header.frame_id = frame_id
    for index, (_, polygon) in enumerate(scene.zones):
        zone = marker(scene, frame_id, 'zones', index, Marker.LINE_STRIP, ZONE, (0.08, 0.0, 0.0))
        zone.points = [Point(x=x, y=y, z=0.05) for x, y in (*polygon, polygon[0])]
        markers.append(zone)
    for index, goal in enumerate(scene.goals):
        place = marker(scene, frame_id, 'goals', index, Marker.CYLINDER, GOAL, (0.6, 0.6, 0.2))
        place.pose.position.x, place.pose.position.y = goal.x, goal.y
        markers.append(place)
    for index, door in enumerate(scene.doors):
        color = DOOR_OPEN if door.state == 'open' else DOOR_CLOSED
        place = marker(scene, frame_id, 'doors', index, Marker.CUBE, color, (0.25, 1.2, 1.0))
        place.pose.position.x, place.pose.position.y, place.pose.position.z = door.x, door.y, 0.5
        markers.append(place)
    if scene.pose is not None:
        x, y, yaw = scene.pose
        robot = marker(scene, frame_id, 'pose', 0, Marker.ARROW, ROBOT, (0.7, 0.18, 0.18))
        robot.pose.position.x, robot.pose.position.y = x, y
        robot.pose.orientation.z, robot.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        markers.append(robot)
    anchor = scene.pose or (0.0, 0.0, 0.0)
    for index, (cabin, text) in enumerate(scene.notes.items()):
        color = ALARM if ('missing' in text or 'ALARM' in text) else NOTE
        note = marker(scene, frame_id, 'notes', index, Marker.TEXT_VIEW_FACING, color,
                      (0.0, 0.0, 0.3))
        note.pose.position.x = anchor[0]
        note.pose.position.y = anchor[1] + NOTE_OFFSET_M + NOTE_SPACING_M * index
        note.pose.position.z = NOTE_HEIGHT_M
        note.text = text
        markers.append(note)
    return MarkerArray(markers=markers)
