"""RViz2 / Foxglove views: off by default, built only while subscribed, and what they show."""

import types

from nav_msgs.msg import OccupancyGrid, Path
from visualization_msgs.msg import Marker, MarkerArray

from working_memory.core.items import BoardEntry, Event, EventKind, Missing, MissingReason
from working_memory.ros import qos, views
from working_memory.ros.conversions import board_update_msg
from working_memory.ros.scene import Scene, scene_from_frame

ZONE = [[1.0, 1.0], [2.0, 1.0], [2.0, 2.0]]


def feed(node, probe):
    now = node.get_clock().now().nanoseconds * 1e-9
    probe.board.publish(board_update_msg([
        BoardEntry('goal:deliver', {'x': 3.0, 'y': 1.0}, 0.0, 1.0),
        BoardEntry('pose', {'x': 0.5, 'y': 0.5, 'yaw': 0.0}, 0.0, None),
        BoardEntry('safety:zone/hv', {'polygon': ZONE}, 0.0, 1.0)], now))


def test_views_are_off_by_default(start_memory, namespace, spin_until):
    node, probe = start_memory()
    probe.wait_frame()
    assert node.count_publishers(f'{namespace}/working_memory/markers') == 0
    assert node.count_publishers(f'{namespace}/working_memory/route') == 0


def test_views_are_built_only_while_someone_subscribes(start_memory, namespace, spin_until,
                                                       monkeypatch):
    built = []
    real = views.scene_from_frame
    monkeypatch.setattr(views, 'scene_from_frame', lambda *a: built.append(1) or real(*a))
    # No resync: notes read NEVER_SEEN at once (RESYNCING: test_restart.py).
    node, probe = start_memory({'views': True, 'resync_timeout_s': 0.0})
    probe.wait_matched(probe.board)
    feed(node, probe)
    probe.wait_frame(lambda f: any(i.key == 'safety:zone/hv' for p in f.packs for i in p.items))
    probe.wait_frame()
    assert built == []
    own = f'{namespace}/working_memory'
    markers, windows, routes = [], [], []
    probe.node.create_subscription(MarkerArray, f'{own}/markers', markers.append,
                                   qos.latched_qos())
    probe.node.create_subscription(OccupancyGrid, f'{own}/planner/map_window', windows.append,
                                   qos.latched_qos())
    probe.node.create_subscription(Path, f'{own}/route', routes.append, qos.latched_qos())
    assert spin_until(lambda: markers and routes)
    assert built
    last = markers[-1].markers
    assert last[0].action == Marker.DELETEALL
    by_ns = {m.ns: m for m in last[1:]}
    assert by_ns['pose'].type == Marker.ARROW and by_ns['pose'].pose.position.x == 0.5
    assert by_ns['zones'].type == Marker.LINE_STRIP and len(by_ns['zones'].points) == 4
    assert by_ns['goals'].pose.position.x == 3.0
    notes = [m.text for m in last if m.ns == 'notes']
    assert 'planner: missing map NEVER_SEEN' in notes  # no map published in this test
    assert 'executor: missing action:current NEVER_SEEN' in notes
    assert routes[-1].header.frame_id == 'map' and routes[-1].poses == []
    assert windows == []  # no map: no window to show


def pack(items=(), missing=(), events=()):
    return types.SimpleNamespace(
        items=tuple(types.SimpleNamespace(key=k, value=v) for k, v in items),
        missing=missing, events=events, map_window=None)


def test_scene_reads_delivery_keys_and_skips_malformed_values():
    alarm = Event(seq=1, stamp=1.0, kind=EventKind.ALARM, source='planner',
                  key='constraint_validation', detail=None, importance=1.0)
    frame = types.SimpleNamespace(stamp=2.0, capacity_alarm=False, packs={
        'planner': pack([('pose', {'x': 1, 'y': 2, 'yaw': 0.5}),
                         ('route', {'waypoints': [[1, 2], [3, 4]]}),
                         ('safety:zone/bad', {'polygon': [[0, 0], [1]]}),
                         ('door:main', {'x': 10, 'y': 6, 'state': 'open'})],
                        missing=(Missing('safety:*', MissingReason.INJECTED_DROP, ''),),
                        events=(alarm,)),
        'executor': pack([('goal:deliver', {'x': 'far'})])})
    scene = scene_from_frame(frame)
    assert scene.pose == (1.0, 2.0, 0.5)
    assert scene.route == ((1.0, 2.0), (3.0, 4.0))
    assert scene.zones == ()                     # a malformed polygon is not drawn
    assert scene.goals == ()                     # nor a goal without numbers
    assert [(d.key, d.state) for d in scene.doors] == [('door:main', 'open')]
    assert scene.notes['planner'] == ('planner: missing safety:* INJECTED_DROP; '
                                      'ALARM constraint_validation')
    assert scene.notes['executor'] == 'executor: ok'
    assert scene.alarm
    assert scene_from_frame(frame, pose=(5.0, 5.0)).pose == (5.0, 5.0, 0.5)


def test_cabin_notes_sit_beside_the_robot_so_a_view_from_above_hides_neither():
    # RViz2 (TopDownOrtho) and Foxglove (phi 0) look straight down: what shares x, y is hidden.
    scene = Scene(stamp=1.0, pose=(4.0, 6.0, 1.5708), route=(), zones=(), goals=(), doors=(),
                  windows={}, notes={'planner': 'planner: ok', 'executor': 'executor: ok',
                                     'monitor': 'monitor: ok'}, alarm=False)
    markers = views.marker_array(scene, 'map').markers
    (robot,) = [m for m in markers if m.ns == 'pose']
    notes = sorted((m for m in markers if m.ns == 'notes'), key=lambda m: m.pose.position.y)
    assert [m.text for m in notes] == ['planner: ok', 'executor: ok', 'monitor: ok']
    assert {m.pose.position.x for m in notes} == {4.0}
    # The arrow points +y here: the first note's lower edge clears its tip.
    first = notes[0].pose.position.y - notes[0].scale.z / 2
    assert first > robot.pose.position.y + robot.scale.x
    gaps = [b.pose.position.y - a.pose.position.y for a, b in zip(notes, notes[1:])]
    assert min(gaps) >= notes[0].scale.z
