"""The demo's bags, their reports and their views: one baseline and one injected run.

Each run is the real closed loop recorded by the scenario; the tests read what a user
opens: the report page, the RViz2 config and Foxglove layout against the bag's topics,
the views' messages, and the closing hints.
"""

import json
import re
from pathlib import Path

import pytest
import yaml
from rosbags.typesys.base import Nodetype

from working_memory.demo.cli import hints, summary
from working_memory.demo.scenario import ScenarioOptions, parse_drops, run_scenario
from working_memory.tools.bag import BagReader
from working_memory.tools.recording import load_recording, load_run
from working_memory.tools.replay import agreement, format_agreement, recorded_settings, replay
from working_memory.tools.report import report_data, write_report

CONFIG = Path(__file__).resolve().parents[2] / 'config'
RVIZ_TYPES = {'rviz_default_plugins/Map': 'nav_msgs/msg/OccupancyGrid',
              'rviz_default_plugins/Path': 'nav_msgs/msg/Path',
              'rviz_default_plugins/MarkerArray': 'visualization_msgs/msg/MarkerArray',
              'rviz_default_plugins/Odometry': 'nav_msgs/msg/Odometry'}
FOXGLOVE_3D_TYPES = set(RVIZ_TYPES.values())
FOXGLOVE_PATH_TYPES = {'/working_memory/frame': 'working_memory/msg/ContextFrame',
                       '/working_memory/evictions': 'working_memory/msg/EvictionBatch',
                       '/log': 'working_memory/msg/LogEvent'}
WALL_LIMIT_S = 120.0


@pytest.fixture(scope='module')
def baseline_run(context, tmp_path_factory):
    bag = tmp_path_factory.mktemp('runs') / 'baseline'
    outcome = run_scenario(ScenarioOptions(bag_path=bag, wall_time_limit_s=WALL_LIMIT_S),
                           context=context)
    assert outcome.delivered, outcome
    return outcome, bag


@pytest.fixture(scope='module')
def baseline(baseline_run):
    return baseline_run[1]


@pytest.fixture(scope='module')
def injected(context, tmp_path_factory):
    bag = tmp_path_factory.mktemp('runs') / 'no_constraints'
    outcome = run_scenario(ScenarioOptions(
        drops=parse_drops(['planner:constraints']), bag_path=bag, sim_time_limit_s=6.0,
        wall_time_limit_s=WALL_LIMIT_S), context=context)
    assert ('planner', 'constraint_validation') in outcome.alarms
    return bag


def report_of(bag, **options):
    page = write_report(load_recording(bag), bag.parent / f'{bag.name}.html', **options)
    return page.read_text()


def section(page, element_id):
    """Return the text of the element with `element_id` up to its section's end."""
    start = page.index(f'id="{element_id}"')
    return page[start:page.index('</section>', start)]


def test_baseline_report_tells_the_delivery_the_failure_and_the_map(baseline_run):
    run, baseline = baseline_run
    page = report_of(baseline)
    outcome = section(page, 'outcome')
    # The demo's summary and the report tell one delivery time: the world's event's.
    delivered_at = f'{run.delivered_at_s:.1f}'
    assert f'DELIVERED at {delivered_at} s sim time' in summary(run, {}, False)
    assert 'class="delivered"' in page and f'DELIVERED at t={delivered_at} s' in outcome
    assert 'after 1 failed open_door' in outcome and 'zone violations 0' in outcome
    setup = section(page, 'setup')
    assert '<th>seed</th><td>7</td>' in setup and '<th>drops</th><td>none</td>' in setup
    events = section(page, 'events')
    assert '<td>FAILURE</td>' in events and 'open_door' in events and 'door stuck' in events
    assert '<img id="timeline"' in page and 'src="data:image/png;base64,' in page
    assert '<img id="map"' in page
    legend = section(page, 'map-legend')
    assert re.search(r'robot path: \d{2,} poses \(/odom\)', legend), legend
    assert 'route: ' in legend and 'waypoints' in legend
    assert 'zones: safety:zone/high_voltage' in legend
    assert 'goal: goal:deliver at (17.0, 3.0)' in legend
    assert 'door: door:main closed at (10.0, 6.0)' in legend  # the map is at the failure
    assert 'planner ' in legend and 'executor ' in legend and 'background: /map' in legend
    evictions = section(page, 'evictions')
    assert '<td>sensor:' in evictions and '<td>0.05</td>' in evictions


def test_injected_report_says_why_it_was_not_delivered(injected):
    page = report_of(injected)
    outcome = section(page, 'outcome')
    assert 'class="not-delivered"' in page
    assert 'NOT DELIVERED: planner raised ALARM constraint_validation' in outcome
    assert 'INJECTED_DROP' in outcome and 'and held' in outcome
    assert 'planner: safety:*, events:CONSTRAINT' in section(page, 'setup')
    assert '<td>ALARM</td><td>planner</td><td>constraint_validation</td>' in section(page,
                                                                                     'events')
    missing = section(page, 'missing')
    assert '<td>planner</td><td>INJECTED_DROP</td><td>safety:*</td>' in missing
    assert '<td>planner</td><td>INJECTED_DROP</td><td>events:CONSTRAINT</td>' in missing
    legend = section(page, 'map-legend')
    assert 'robot at tick: (2.00, 6.00)' in legend  # it never moved
    assert 'route: none' in legend


def test_report_map_at_a_chosen_tick_and_one_cabin_window(baseline):
    legend = section(report_of(baseline, map_tick=300, cabin='executor'), 'map-legend')
    assert 'cabin windows: executor ' in legend and 'planner' not in legend
    assert 'door: door:main open' in legend


def rviz_topics():
    config = yaml.safe_load((CONFIG / 'rviz' / 'working_memory.rviz').read_text())
    return {display['Topic']['Value']: RVIZ_TYPES[display['Class']]
            for display in config['Visualization Manager']['Displays']}


def foxglove_topics():
    layout = json.loads((CONFIG / 'foxglove' / 'working_memory.json').read_text())
    named = {}
    for panel, config in layout['configById'].items():
        if panel.startswith('3D!'):
            named.update({topic: FOXGLOVE_3D_TYPES for topic in config['topics']})
        for path in [config.get('topicPath')] + [p['value'] for p in config.get('paths', [])]:
            if path:
                topic = re.match(r'[^.{\[]+', path).group(0)
                named[topic] = {FOXGLOVE_PATH_TYPES[topic]}
    return named


# One step of a Foxglove message path: `.field`, `[:]` or `[n]`, `{field==value}`.
PATH_STEP = re.compile(r'\.(\w+)|\[(?::|\d+)\]|\{(\w+)==[^}]*\}')


def foxglove_paths():
    """Return every message path of the layout's panels (raw messages, plots, tables)."""
    layout = json.loads((CONFIG / 'foxglove' / 'working_memory.json').read_text())
    return [path for config in layout['configById'].values()
            for path in [config.get('topicPath')] + [p['value'] for p in config.get('paths', [])]
            if path]


def unresolved(path, topics, fields):
    """Return why `path` names no field of the bag's message definitions, None if it does."""
    topic = re.match(r'[^.{\[]+', path).group(0)
    if topic not in topics:
        return f'{path}: no topic {topic} in the bag'
    kind, detail = Nodetype.NAME, topics[topic]
    at = len(topic)
    while at < len(path):
        step = PATH_STEP.match(path, at)
        if step is None:
            return f'{path}: cannot read {path[at:]!r}'
        field, condition = step.group(1), step.group(2)
        if step.group(0).startswith('['):
            if kind not in (Nodetype.ARRAY, Nodetype.SEQUENCE):
                return f'{path}: {path[:at]} is not an array'
            (kind, detail), _ = detail
        else:
            name = field or condition
            if kind is not Nodetype.NAME or name not in fields(detail):
                return f'{path}: {path[:at]} has no field {name!r}'
            if field:
                kind, detail = fields(detail)[name]
        at = step.end()
    return None


def test_every_foxglove_message_path_names_a_field_of_the_demo_bag(baseline):
    with BagReader(baseline) as reader:
        reader.register(reader.topics)
        found = [unresolved(path, reader.topics, reader.fields) for path in foxglove_paths()]
    assert len(found) >= 3
    assert not [why for why in found if why], found


def test_a_foxglove_path_to_no_field_is_found_out(baseline):
    # The check itself: the eviction plot's old path named no field of EvictionBatch.
    with BagReader(baseline) as reader:
        reader.register(reader.topics)
        why = unresolved('/working_memory/evictions.importance', reader.topics, reader.fields)
        ok = unresolved('/working_memory/frame.packs[:]{cabin=="planner"}.missing[0].reason',
                        reader.topics, reader.fields)
    assert why and why.endswith("/working_memory/evictions has no field 'importance'"), why
    assert ok is None, ok


def test_the_foxglove_3d_panel_centres_on_the_delivery_world():
    # Foxglove Studio centres the camera on targetOffset (not target); thetaOffset 0 keeps
    # the map's x axis pointing right. The delivery world is 20 x 12 m from the origin.
    layout = json.loads((CONFIG / 'foxglove' / 'working_memory.json').read_text())
    camera = layout['configById']['3D!working_memory']['cameraState']
    assert camera['targetOffset'][:2] == [10, 6] and camera['thetaOffset'] == 0


def test_rviz_config_names_only_topics_the_demo_bag_has_with_their_types(baseline):
    with BagReader(baseline) as reader:
        topics = reader.topics
        counts = {c.topic: c.msgcount for c in reader._reader.connections}
    named = rviz_topics()
    assert len(named) >= 6
    for topic, msgtype in named.items():
        assert topics.get(topic) == msgtype, (topic, topics.get(topic))
        assert counts[topic] > 0, f'{topic} recorded no message'


# The displays rviz_default_plugins provides (RViz2's user guide, "Built-in Display Types").
RVIZ_DEFAULT_DISPLAYS = {
    'AccelStamped', 'Axes', 'Camera', 'DepthCloud', 'Effort', 'FluidPressure', 'Grid', 'GridCells',
    'Illuminance', 'Image', 'InteractiveMarkers', 'LaserScan', 'Map', 'Marker', 'MarkerArray',
    'Odometry', 'Path', 'PointCloud', 'PointCloud2', 'PointStamped', 'Polygon', 'Pose',
    'PoseArray', 'PoseWithCovariance', 'Range', 'RelativeHumidity', 'RobotModel', 'TF',
    'Temperature', 'TwistStamped', 'Wrench'}


def test_rviz_config_uses_default_displays_in_the_map_frame():
    config = yaml.safe_load((CONFIG / 'rviz' / 'working_memory.rviz').read_text())
    manager = config['Visualization Manager']
    assert manager['Global Options']['Fixed Frame'] == 'map'
    classes = [display['Class'] for display in manager['Displays']]
    assert classes and all(name.startswith('rviz_default_plugins/') for name in classes), classes
    assert {name.split('/', 1)[1] for name in classes} <= RVIZ_DEFAULT_DISPLAYS, classes


def test_foxglove_layout_names_only_topics_the_demo_bag_has_with_their_types(baseline):
    with BagReader(baseline) as reader:
        topics = reader.topics
    named = foxglove_topics()
    assert {'/working_memory/markers', '/working_memory/route', '/map'} <= set(named)
    for topic, types in named.items():
        assert topics.get(topic) in types, (topic, topics.get(topic))


def test_views_in_the_bag_show_pose_zone_goal_door_and_cabin_notes(injected):
    with BagReader(injected) as reader:
        markers = [m.msg for m in reader.messages(['/working_memory/markers'])]
        windows = [m.msg for m in reader.messages(['/working_memory/planner/map_window'])]
    last = markers[-1].markers
    namespaces = {marker.ns for marker in last}
    assert {'pose', 'zones', 'goals', 'doors', 'notes'} <= namespaces
    assert last[0].action == 3  # DELETEALL first: nothing stale stays on screen
    notes = [marker.text for marker in last if marker.ns == 'notes']
    planner = next(n for n in notes if n.startswith('planner: '))
    assert 'missing safety:* INJECTED_DROP' in planner, notes
    assert any('ALARM constraint_validation' in n for n in notes), notes
    assert all(marker.header.frame_id == 'map' for marker in last)
    assert windows and windows[-1].info.width > 0 and windows[-1].header.frame_id == 'map'


def test_closing_hints_point_at_what_the_injected_run_withheld(injected):
    lines = hints(load_recording(injected), injected, Path('r.html'),
                  parse_drops(['planner:constraints']))
    assert any('--tick 1 --cabin planner' in line and 'safety:*, events:CONSTRAINT withheld'
               in line for line in lines), lines
    assert any('--why safety:zone/high_voltage --cabin planner' in line for line in lines)
    assert len(lines) == len(set(lines))


def test_a_restart_mid_run_is_survived_replayed_and_marked_on_the_time_axis(
        context, tmp_path_factory):
    # The working memory loses everything at 12 s (cleanup, configure, activate): it re-reads
    # the simulator's and the mission's writers, the robot still delivers and never enters
    # the zone, the report marks the restart. The replay agrees on every frame, the new
    # node's too: its receipts say where it began to take each publisher, the recorder's
    # message ids which recorded messages those are, and its answers go in as it took them.
    bag = tmp_path_factory.mktemp('runs') / 'restarted'
    outcome = run_scenario(ScenarioOptions(bag_path=bag, wall_time_limit_s=WALL_LIMIT_S,
                                           restart_wm_at_s=12.0), context=context)
    assert outcome.delivered and outcome.zone_violations == 0 and outcome.collisions == 0
    assert outcome.restarts == [pytest.approx(12.0, abs=0.5)]
    run = load_run(bag)
    restart, = run.recording.restarts
    assert restart.tick == 1 and restart.start_id != run.recording.frames[0].start_id
    assert restart.restart and not run.recording.frames[0].restart   # the first is a start
    assert {'/board', '/log', '/map', '/resync/answer'} <= set(run.message_ids)
    last = [frame for frame in run.recording.frames if frame.start_id == restart.start_id][-1]
    assert {topic for topic, _, _ in last.input_starts} >= {'/board', '/map', '/resync/answer'}
    result = agreement(run, recorded_settings(run))
    assert result.agreeing == result.ticks == len(run.recording.frames), \
        format_agreement(result, bag, recorded_settings(run))
    assert not any('approximate' in note for step in replay(run, recorded_settings(run))
                   for note in step.notes)
    data = report_data(run.recording)
    assert data.restarts == [restart.stamp]
    assert ('restarts', f'at {restart.stamp:.1f} s (tick 1 of the new start)') in data.setup
