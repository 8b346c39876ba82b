"""Typed-topic sources (engine/source_map.py): validation and conversion of real message types.

No node here: the shipped mappings are fed real rclpy messages, their plain-dict form
(rosidl_runtime_py.convert.message_to_ordereddict) and rosbags messages, which must all
convert alike.
"""

import json
import math
from pathlib import Path

import pytest
from action_msgs.msg import GoalStatus, GoalStatusArray
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Point32, PolygonStamped, PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid, Path as PathMsg
from rclpy.serialization import deserialize_message, serialize_message
from rosidl_runtime_py.convert import message_to_ordereddict
from sensor_msgs.msg import BatteryState

from working_memory.core.board import BoardSnapshot
from working_memory.core.frozen import FrozenDict, deep_freeze
from working_memory.core.items import EventKind, json_size, value_text
from working_memory.engine.engine import Arrival, build_engine
from working_memory.engine.inputs import MAX_VALUE_BYTES
from working_memory.engine.source_map import (SourceError, SourceMap, Sources, load_sources,
                                              parse_sources, select_sources, sources_status)
from working_memory.ros.sources import describe
from working_memory.ros.typestore import installed_typestore, register_decodable
from working_memory.sim.conversions import odometry_msg
from working_memory.tools.replay import Rejections, Settings, parameters_in_file

SHIPPED = Path(__file__).resolve().parents[2] / 'config' / 'sources'
NAV2 = SHIPPED / 'nav2.yaml'


def as_node_decodes(msg):
    """Return `msg` as the node takes a source's message: its CDR bytes decoded by rosbags."""
    name = f'{type(msg).__module__.split(".")[0]}/msg/{type(msg).__name__}'
    return installed_typestore([name]).deserialize_cdr(serialize_message(msg), name)


def nav2() -> dict:
    return {spec.name: spec for spec in load_sources(str(NAV2), describe)}


def amcl_msg(x=1.0, y=2.0, yaw=0.5, frame='map', stamp=10.0) -> PoseWithCovarianceStamped:
    msg = PoseWithCovarianceStamped()
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(stamp % 1 * 1e9)
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


def status_msg(*goals: tuple[int, int]) -> GoalStatusArray:
    """Return an action status array of (goal id byte, status) pairs."""
    msg = GoalStatusArray()
    for ident, status in goals:
        goal = GoalStatus(status=status)
        goal.goal_info.goal_id.uuid[0] = ident
        msg.status_list.append(goal)
    return msg


def diagnostics_msg(**levels: int) -> DiagnosticArray:
    return DiagnosticArray(status=[DiagnosticStatus(name=name, level=bytes([level]),
                                                    message=f'{name} says {level}')
                                   for name, level in levels.items()])


def test_amcl_pose_becomes_the_pose_entry_with_yaw_from_the_quaternion():
    conversion = SourceMap(nav2()['amcl']).convert(amcl_msg(), 99.0)
    (entry,) = conversion.entries
    assert entry.key == 'pose' and entry.stamp == pytest.approx(10.0)
    assert entry.value == {'x': 1.0, 'y': 2.0, 'yaw': pytest.approx(0.5)}
    assert (entry.importance, entry.ttl, entry.tags) == (0.9, 2.0, ('navigation',))
    assert not conversion.errors


@pytest.mark.parametrize('as_given', [lambda msg: msg, message_to_ordereddict, as_node_decodes])
def test_a_message_its_plain_dict_form_and_its_decoded_bytes_convert_alike(as_given):
    plan = PathMsg()
    plan.header.frame_id = 'map'
    plan.poses = [PoseStamped() for _ in range(500)]
    for index, pose in enumerate(plan.poses):
        pose.pose.position.x, pose.pose.position.y = float(index), -float(index)
    (route,) = SourceMap(nav2()['plan']).convert(as_given(plan), 5.0).entries
    assert len(route.value) == 100
    assert route.value[0] == (0.0, -0.0) and route.value[-1] == (499.0, -499.0)
    battery = BatteryState(percentage=0.75, voltage=24.5, power_supply_status=2)
    (entry,) = SourceMap(nav2()['battery']).convert(as_given(battery), 5.0).entries
    assert entry.value == {'percentage': 0.75, 'voltage': 24.5, 'power_supply_status': 2}


def test_a_non_finite_pose_is_rejected_and_counted_and_the_next_one_taken():
    sources = Sources([nav2()['amcl']])
    rejected = sources.convert('/amcl_pose', amcl_msg(x=math.nan), 1.0)
    assert not rejected.entries and 'pose.pose.position.x' in rejected.errors[0]
    taken = sources.convert('/amcl_pose', amcl_msg(), 2.0)
    assert taken.entries and not taken.errors
    counts = sources.counts['/amcl_pose']
    assert (counts.received, counts.taken, counts.rejected) == (2, 1, 1)
    assert 'not a finite number' in counts.last_rejection
    (status,) = sources_status(sources)
    assert dict(status.values)['amcl.rejected'] == '1' and 'amcl: 1 rejected' in status.message


def test_a_pose_in_another_frame_is_rejected_whole():
    conversion = Sources([nav2()['amcl']]).convert('/amcl_pose', amcl_msg(frame='odom'), 1.0)
    assert not conversion.entries and "'odom' is not 'map'" in conversion.errors[0]


def test_an_aborted_goal_gives_one_failure_event_and_removes_the_current_goal_once():
    source = SourceMap(nav2()['navigate'])
    first = source.convert(status_msg((1, GoalStatus.STATUS_EXECUTING)), 1.0)
    assert [event.kind for event in first.events] == [EventKind.ACTION]
    aborted = [source.convert(status_msg((1, GoalStatus.STATUS_ABORTED)), 2.0 + i)
               for i in range(5)]
    events = [event for conversion in aborted for event in conversion.events]
    assert [event.kind for event in events] == [EventKind.FAILURE]
    assert events[0].key == 'navigate_to_pose' and events[0].detail['status'] == 6
    assert events[0].detail['goal'][:2] == [1, 0]
    assert [conversion.removed_keys for conversion in aborted] == [('goal:current',)] + [()] * 4
    # A new goal next to the ended one: accepted once, and the old one removes nothing.
    later = source.convert(status_msg((1, GoalStatus.STATUS_ABORTED),
                                      (2, GoalStatus.STATUS_ACCEPTED)), 9.0)
    assert [event.kind for event in later.events] == [EventKind.ACTION]
    assert later.removed_keys == ()


def goals_msg(*goals: tuple[int, int, float]) -> GoalStatusArray:
    """Return an action status array of (goal id byte, status, accepted [s]) triples."""
    msg = status_msg(*((ident, status) for ident, status, _ in goals))
    for goal, (_, _, accepted) in zip(msg.status_list, goals):
        stamp = goal.goal_info.stamp
        stamp.sec, stamp.nanosec = int(accepted), int(accepted % 1 * 1e9)
    return msg


@pytest.mark.parametrize('as_given', [lambda msg: msg, message_to_ordereddict, as_node_decodes])
def test_the_current_goal_leaves_when_the_newest_goal_ends_not_when_one_it_preempted_does(
        as_given):
    source = SourceMap(nav2()['navigate'])
    a, b = 1, 2
    steps = [
        ((a, GoalStatus.STATUS_ACCEPTED, 10.0),),
        ((a, GoalStatus.STATUS_EXECUTING, 10.0),),
        ((a, GoalStatus.STATUS_EXECUTING, 10.0), (b, GoalStatus.STATUS_ACCEPTED, 20.5)),
        # Nav2 aborts the goal B preempted; the array's order is no age.
        ((b, GoalStatus.STATUS_EXECUTING, 20.5), (a, GoalStatus.STATUS_ABORTED, 10.0)),
        ((a, GoalStatus.STATUS_ABORTED, 10.0), (b, GoalStatus.STATUS_SUCCEEDED, 20.5)),
        ((a, GoalStatus.STATUS_ABORTED, 10.0), (b, GoalStatus.STATUS_SUCCEEDED, 20.5)),
    ]
    conversions = [source.convert(as_given(goals_msg(*goals)), 30.0) for goals in steps]
    assert [c.removed_keys for c in conversions] == [()] * 4 + [('goal:current',), ()]
    # Every goal's status changes reach the log, the preempted goal's too.
    events = [(e.detail['goal'][0], e.kind) for c in conversions for e in c.events]
    assert events == [(a, EventKind.ACTION), (a, EventKind.ACTION), (b, EventKind.ACTION),
                      (b, EventKind.ACTION), (a, EventKind.FAILURE), (b, EventKind.OBSERVATION)]


def test_of_goals_accepted_at_one_stamp_the_later_in_the_array_is_the_newest():
    source = SourceMap(nav2()['navigate'])
    source.convert(goals_msg((1, GoalStatus.STATUS_EXECUTING, 5.0)), 6.0)
    canceled = source.convert(goals_msg((1, GoalStatus.STATUS_CANCELED, 5.0),
                                        (2, GoalStatus.STATUS_ACCEPTED, 5.0)), 7.0)
    assert canceled.removed_keys == ()   # equal stamps: the later in the array is the newer
    aborted = source.convert(goals_msg((1, GoalStatus.STATUS_CANCELED, 5.0),
                                       (2, GoalStatus.STATUS_ABORTED, 5.0)), 8.0)
    assert aborted.removed_keys == ('goal:current',)


@pytest.mark.parametrize('change, named', [
    ({'each': None}, 'newest: only with each'),
    ({'newest': 'goal_info.goal_id'}, 'must name a builtin_interfaces/msg/Time or a number'),
    ({'newest': 'goal_info.stampp'}, 'did you mean stamp?'),
])
def test_newest_needs_each_and_a_time_or_number_field(change, named):
    mapping = {'key': 'goal:current', 'each': 'status_list', 'newest': 'goal_info.stamp',
               'when': {'field': 'status', 'in': ['STATUS_SUCCEEDED']}, 'remove': True}
    mapping = {name: value for name, value in {**mapping, **change}.items() if value is not None}
    source = {'topic': 'status', 'type': 'action_msgs/msg/GoalStatusArray', 'board': [mapping]}
    with pytest.raises(SourceError, match='sources.nav.board') as error:
        parse_sources({'sources': {'nav': source}}, describe)
    assert named in str(error.value)


def test_sources_are_selected_by_name_and_an_unknown_name_is_refused_naming_the_closest():
    specs = nav2().values()
    assert [spec.topic for spec in select_sources(specs, ['goal', 'navigate', 'goal'])] == [
        '/goal_pose', '/navigate_to_pose/_action/status']
    with pytest.raises(SourceError, match="no source 'gaol' .did you mean goal"):
        select_sources(specs, ['gaol'])


def test_diagnostics_fire_on_transitions_into_error_and_stale():
    source = SourceMap(nav2()['diagnostics'])
    kinds = []
    for levels in ({'motor': 0, 'lidar': 2}, {'motor': 2, 'lidar': 2}, {'motor': 2, 'lidar': 3},
                   {'motor': 0, 'lidar': 0}, {'motor': 2, 'lidar': 0}):
        conversion = source.convert(diagnostics_msg(**levels), 1.0)
        kinds.append(sorted((event.key, event.kind.value) for event in conversion.events))
    assert kinds == [[('diagnostic:lidar', 'FAILURE')], [('diagnostic:motor', 'FAILURE')],
                     [('diagnostic:lidar', 'ALARM')], [], [('diagnostic:motor', 'FAILURE')]]


def test_ttl_periods_follow_the_measured_header_rate():
    source = SourceMap(nav2()['battery'])
    ttls = []
    for tick in range(4):
        msg = BatteryState(percentage=0.5)
        msg.header.stamp.sec = 100 + tick
        ttls.append(source.convert(msg, 0.0).entries[0].ttl)
    # ttl_s until two stamps measured the period (1 s), then five periods.
    assert ttls == [10.0, 5.0, 5.0, 5.0]


@pytest.mark.parametrize('change, named', [
    ({'type': 'geometry_msgs/msg/PoseWithCovarianceStampd'},
     'did you mean PoseWithCovarianceStamped?'),
    ({'type': 'geometri_msgs/msg/Pose'}, "no message package 'geometri_msgs'"),
    ({'board': [{'key': 'pose', 'value': {'x': 'pose.pose.positon.x'}}]},
     "has no field 'positon' (did you mean position?)"),
    ({'board': [{'key': 'pose', 'valeu': 'pose'}]}, 'valeu: unknown field (did you mean value?)'),
    ({'events': [{'key': 'k', 'kind': 'FAILUER'}]}, 'did you mean FAILURE?'),
    ({'board': [{'key': 'pose', 'value': {'transform': 'yaww', 'field': 'pose'}}]},
     'did you mean yaw?'),
    ({'board': [{'key': 'pose', 'value': {'transform': 'yaw', 'field': 'pose.pose.position'}}]},
     'yaw needs a quaternion'),
])
def test_an_unknown_type_field_or_kind_is_refused_naming_the_closest(change, named):
    source = {'topic': '/amcl_pose', 'type': 'geometry_msgs/msg/PoseWithCovarianceStamped',
              'board': [{'key': 'pose'}], **change}
    with pytest.raises(SourceError, match='sources.amcl') as error:
        parse_sources({'sources': {'amcl': source}}, describe)
    assert named in str(error.value)


def test_an_unknown_constant_is_refused_naming_the_closest():
    source = {'topic': 'status', 'type': 'action_msgs/msg/GoalStatusArray',
              'events': [{'key': 'k', 'each': 'status_list', 'kind': 'FAILURE',
                          'when': {'field': 'status', 'in': ['STATUS_ABORTD']}}]}
    with pytest.raises(SourceError, match='did you mean STATUS_ABORTED'):
        parse_sources({'sources': {'nav': source}}, describe)


@pytest.mark.parametrize('name', ['nav2.yaml', 'gazebo.yaml'])
def test_every_shipped_sources_file_validates_against_the_real_types(name):
    specs = load_sources(str(SHIPPED / name), describe)
    assert specs and all(spec.board or spec.events for spec in specs)


def test_gazebo_odometry_becomes_the_pose_and_another_frame_is_rejected():
    (odometry,) = load_sources(str(SHIPPED / 'gazebo.yaml'), describe)
    sources = Sources([odometry])
    for x, y, yaw in ((3.0, 4.0, 0.5), (6.5, 2.0, -2.0)):
        conversion = sources.convert('/odom', odometry_msg(x, y, yaw, 0.0, 0.0, 7.0, 'map',
                                                           'base_link'), 1.0)
        (pose,) = conversion.entries
        assert (pose.key, pose.value['x'], pose.value['y']) == ('pose', x, y)
        assert math.isclose(pose.value['yaw'], yaw, abs_tol=1e-9) and pose.stamp == 7.0
        assert (pose.importance, pose.ttl, pose.tags) == (0.6, 0.5, ('navigation',))
    wrong = sources.convert('/odom', odometry_msg(3.0, 4.0, 0.0, 0.0, 0.0, 7.0, 'robot/odom',
                                                  'base_link'), 1.0)
    assert not wrong.entries and "'robot/odom' is not 'map'" in wrong.errors[0]


def test_with_the_packaged_params_nav2_fills_the_planner_and_monitor_packs():
    node = '/working_memory'
    settings = Settings(parameters_in_file(SHIPPED.parents[0] / 'working_memory.yaml', node),
                        'config/working_memory.yaml', node)
    rejections = Rejections()
    engine = build_engine(settings.config, settings.manifests(), 1.0,
                          load_sources(str(NAV2), describe), listener=rejections)
    goal = PoseStamped()
    goal.header.frame_id, goal.pose.position.x, goal.pose.orientation.w = 'map', 17.0, 1.0
    for topic, msg in (('/goal_pose', goal), ('/amcl_pose', amcl_msg(stamp=9.5)),
                       ('/battery_state', BatteryState(percentage=0.5))):
        # Received at 10 s, as the node observes each receipt.
        engine.take_source(topic, Arrival(10.0, 10.0), msg)
    assert not rejections.lines
    frame = engine.tick(10.0).frame
    planner = {item.key for item in frame.packs['planner'].items}
    assert {'goal:current', 'pose'} <= planner
    assert 'battery' in {item.key for item in frame.packs['monitor'].items}
    assert {'/goal_pose', '/amcl_pose', '/battery_state'} <= set(engine.receipts.received)


def test_the_bench_robots_messages_convert_whole_under_the_bench_sources(tmp_path):
    from working_memory.bench.ros_bench import SOURCE_RATES, write_sources
    from working_memory.bench.sources import robot_message, source_maps
    maps = source_maps(write_sources(tmp_path / 'sources.yaml'))
    assert set(maps) == set(SOURCE_RATES)
    outputs = {}
    for name, source in maps.items():
        conversion = source.convert(robot_message(name, 100.0, 3), 100.0)
        assert not conversion.errors, name
        outputs[name] = [entry.key for entry in conversion.entries] + [
            event.kind.value for event in conversion.events]
    # Diagnostics all OK: no event; the goal executing: one ACTION.
    assert outputs == {'amcl': ['pose'], 'plan': ['route'], 'battery': ['battery'],
                       'diagnostics': [], 'navigate': ['action:current', 'ACTION'],
                       'odometry': ['odometry']}


def test_the_node_decodes_each_bench_message_to_what_rclpy_takes_it_as(tmp_path):
    from working_memory.bench.ros_bench import write_sources
    from working_memory.bench.sources import robot_message, source_maps
    path = write_sources(tmp_path / 'sources.yaml')
    for name in source_maps(path):
        msg = robot_message(name, 100.0, 3)
        taken = deserialize_message(serialize_message(msg), type(msg))
        given, decoded = (source_maps(path)[name].convert(form, 100.0)
                          for form in (taken, as_node_decodes(msg)))
        assert decoded == given and not decoded.errors, name


def test_a_type_without_an_installed_definition_is_named():
    with pytest.raises(LookupError, match="'nav_msgs/msg/Nowhere'"):
        installed_typestore(['nav_msgs/msg/Nowhere'])


def test_whole_messages_and_byte_fields_read_alike_from_rclpy_and_from_decoded_bytes():
    source = {'topic': 'battery', 'type': 'sensor_msgs/msg/BatteryState',
              'board': [{'key': 'battery'}]}   # no value: the whole message
    diagnostics = {'topic': 'diag', 'type': 'diagnostic_msgs/msg/DiagnosticStatus',
                   'board': [{'key': 'diag', 'value': {'level': 'level'}}]}
    (battery,), (diag,) = (parse_sources({'sources': {'s': spec}}, describe)
                           for spec in (source, diagnostics))
    messages = (BatteryState(percentage=0.5, cell_voltage=[3.5, 3.25], location='left'),
                DiagnosticStatus(name='d', level=b'\xff'))
    for spec, msg in zip((battery, diag), messages):
        taken = deserialize_message(serialize_message(msg), type(msg))
        given, decoded = (SourceMap(spec).convert(form, 1.0)
                          for form in (taken, as_node_decodes(msg)))
        assert decoded == given and not decoded.errors, spec.name
    (entry,) = SourceMap(battery).convert(as_node_decodes(messages[0]), 1.0).entries
    assert '__msgtype__' not in entry.value and 'POWER_SUPPLY_STATUS_FULL' not in entry.value
    assert entry.value['cell_voltage'] == (3.5, 3.25)   # frozen: a tuple
    assert SourceMap(diag).convert(as_node_decodes(messages[1]), 1.0).entries[0].value == {
        'level': 255}


def test_a_type_whose_definitions_are_not_all_installed_registers_nothing(tmp_path, monkeypatch):
    share = tmp_path / 'share'
    (share / 'ament_index' / 'resource_index' / 'packages').mkdir(parents=True)
    (share / 'ament_index' / 'resource_index' / 'packages' / 'fake_msgs').write_text('')
    (share / 'fake_msgs' / 'msg').mkdir(parents=True)
    for name, text in {'Outer': 'fake_msgs/Inner inner\n', 'Inner': 'fake_msgs/Gone gone\n',
                       'Leaf': 'int32 x\n'}.items():
        (share / 'fake_msgs' / 'msg' / f'{name}.msg').write_text(text)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    store = installed_typestore(())
    assert not register_decodable(store, 'fake_msgs/msg/Outer')
    assert not {'fake_msgs/msg/Outer', 'fake_msgs/msg/Inner'} & set(store.fielddefs)
    assert not register_decodable(store, 'fake_msgs/msg/Inner')
    assert register_decodable(store, 'fake_msgs/msg/Leaf')


def plain(value):
    """Return a frozen mapped value as plain JSON-like lists and dicts, as a pack reader sees it."""
    return json.loads(json.dumps(value))


def keepout_mask(rows, origin=(-1.0, 2.0), resolution=0.5, frame='map'):
    """Return a keepout mask of text rows ('#' 100, '+' 50, '?' -1, '.' 0), bottom row first."""
    grid = OccupancyGrid()
    grid.header.frame_id = frame
    grid.info.width, grid.info.height, grid.info.resolution = len(rows[0]), len(rows), resolution
    grid.info.origin.position.x, grid.info.origin.position.y = origin
    grid.info.origin.orientation.w = 1.0
    grid.data = [{'#': 100, '+': 50, '?': -1, '.': 0}[cell] for row in rows for cell in row]
    return grid


@pytest.mark.parametrize('as_given', [lambda msg: msg, message_to_ordereddict, as_node_decodes])
def test_each_keepout_region_of_the_mask_is_a_polygon_covering_it_in_map(as_given):
    mask = keepout_mask(['##.....+',
                         '##...#..',
                         '....##.?',
                         '......#.'])   # bottom row first; '+' and '?' are no keepout
    (entry,) = SourceMap(nav2()['keepout']).convert(as_given(mask), 3.0).entries
    assert entry.key == 'safety:zone/keepout' and entry.value['frame'] == 'map'
    first, second = sorted(plain(entry.value)['polygons'])
    # Columns 0-1 of the two bottom rows, in metres from the origin (-1, 2), 0.5 m cells.
    assert sorted(first) == [[-1.0, 2.0], [-1.0, 3.0], [0.0, 2.0], [0.0, 3.0]]
    # Four cells of columns 4-6, rows 1-3, the top one a diagonal neighbour: one region.
    assert len(second) >= 4 and min(x for x, _ in second) == 1.0
    assert max(x for x, _ in second) == 2.5 and (min(y for _, y in second),
                                                 max(y for _, y in second)) == (2.5, 4.0)


def test_a_mask_without_keepout_cells_gives_no_zone_and_a_rotated_one_turns_with_its_origin():
    keepout = SourceMap(nav2()['keepout'])
    (empty,) = keepout.convert(keepout_mask(['..+', '?..']), 1.0).entries
    assert plain(empty.value) == {'polygons': [], 'frame': 'map'}
    turned = keepout_mask(['#'], origin=(1.0, 1.0), resolution=1.0)
    turned.info.origin.orientation.z = turned.info.origin.orientation.w = math.sqrt(0.5)
    (entry,) = keepout.convert(turned, 1.0).entries
    assert sorted(plain(entry.value)['polygons'][0]) == [[0.0, 1.0], [0.0, 2.0], [1.0, 1.0],
                                                         [1.0, 2.0]]


def test_a_mask_whose_cells_do_not_fill_its_size_is_rejected():
    mask = keepout_mask(['##'])
    mask.info.width = 3
    conversion = Sources([nav2()['keepout']]).convert('/keepout_filter_mask', mask, 1.0)
    assert not conversion.entries and '2 cells for 3 x 1' in conversion.errors[0]


def test_a_collision_monitor_polygon_is_a_safety_item_carrying_its_frame():
    polygon = PolygonStamped()
    polygon.header.frame_id = 'base_link'
    corners = ((0.4, 0.3), (0.4, -0.3), (0.0, -0.3), (0.0, 0.3))
    polygon.polygon.points = [Point32(x=x, y=y) for x, y in corners]
    (entry,) = SourceMap(nav2()['collision_stop']).convert(polygon, 1.0).entries
    assert entry.key == 'safety:collision/stop' and entry.value['frame'] == 'base_link'
    assert plain(entry.value)['polygon'] == [[pytest.approx(x), pytest.approx(y)]
                                             for x, y in corners]


def test_the_current_action_is_the_newest_navigation_goal_and_its_status():
    navigate = SourceMap(nav2()['navigate'])
    msg = status_msg((1, GoalStatus.STATUS_ABORTED), (2, GoalStatus.STATUS_EXECUTING))
    msg.status_list[1].goal_info.stamp.sec = 5
    (action,) = navigate.convert(msg, 9.0).entries
    assert action.key == 'action:current' and action.value['status'] == 2
    assert action.value['goal'][0] == 2 and action.stamp == 5.0


@pytest.mark.parametrize('transform, named', [
    ({'transform': 'zones', 'field': 'info'}, 'zones needs an occupancy grid'),
    ({'transform': 'zones', 'field': '', 'at_least': 0}, 'at_least: must be an integer in'),
    ({'transform': 'polyline', 'field': 'data', 'at_least': 5}, 'at_least: only for zones'),
])
def test_a_zones_transform_needs_an_occupancy_grid_and_an_occupancy_threshold(transform, named):
    source = {'topic': 'mask', 'type': 'nav_msgs/msg/OccupancyGrid',
              'board': [{'key': 'safety:zone/k', 'value': transform}]}
    with pytest.raises(SourceError, match=named):
        parse_sources({'sources': {'mask': source}}, describe)


# -- size: an output over max_value_bytes is refused, the message's other outputs taken -------

def whole_plan_source():
    """Return a source mapping a whole nav_msgs/Path to one board value, its poses to an event."""
    (spec,) = parse_sources({'sources': {'plan': {
        'topic': 'plan', 'type': 'nav_msgs/msg/Path',
        'board': [{'key': 'plan'}, {'key': 'route', 'value': {
            'transform': 'polyline', 'field': 'poses', 'max_points': 100}}],
        'events': [{'key': 'plan', 'kind': 'OBSERVATION', 'detail': 'poses'}]}}}, describe)
    return spec


def plan_msg(poses):
    """Return a Path of `poses` poses at full-precision coordinates, as a planner makes them."""
    msg = PathMsg()
    msg.header.frame_id = 'map'
    for index in range(poses):
        pose = PoseStamped()
        pose.header.stamp.sec, pose.header.stamp.nanosec = 1_796_664_025, 369_755_223
        pose.header.frame_id = 'map'
        position, orientation = pose.pose.position, pose.pose.orientation
        position.x, position.y = 12.345678901234567 + index / 7, -3.141592653589793 - index / 9
        orientation.z, orientation.w = math.sin(index / 11), math.cos(index / 11)
        msg.poses.append(pose)
    return msg


def test_a_whole_500_pose_plan_is_one_value_under_the_default_limit():
    conversion = Sources([whole_plan_source()]).convert('plan', plan_msg(500), 1.0)
    assert not conversion.errors and not conversion.refused
    sizes = {entry.key: json_size(entry.value) for entry in conversion.entries}
    assert 100_000 < sizes['plan'] < MAX_VALUE_BYTES and sizes['route'] < 5_000


def test_an_output_over_the_limit_is_refused_and_the_messages_others_taken():
    sources = Sources([whole_plan_source()], limit=50_000)
    conversion = sources.convert('plan', plan_msg(500), 1.0)
    assert [entry.key for entry in conversion.entries] == ['route'] and not conversion.events
    assert [(oversize.key, oversize.limit) for oversize in conversion.refused] == [
        ('plan', 50_000), ('event:OBSERVATION:plan', 50_000)]
    assert conversion.refused[0].reason.startswith(
        "board[0]: board entry 'plan': value: 11")   # 11x,xxx bytes
    assert conversion.refused[0].reason.endswith(' bytes of JSON, over max_value_bytes 50,000')
    counts = sources.counts['plan']
    assert (counts.received, counts.taken, counts.rejected) == (1, 0, 1)
    assert counts.last_rejection == conversion.refused[-1].reason
    # A short plan passes whole.
    assert not sources.convert('plan', plan_msg(50), 2.0).refused


def test_an_outputs_value_comes_frozen_and_measured_for_the_board_to_keep():
    (entry, _) = Sources([whole_plan_source()]).convert('plan', plan_msg(3), 1.0).entries
    board = BoardSnapshot()
    board.apply([entry], checked=True)
    assert board.get('plan') is entry and isinstance(entry.value, FrozenDict)
    assert entry.value.json_text == value_text(deep_freeze(message_to_ordereddict(plan_msg(3))))
