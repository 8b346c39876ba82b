"""The node takes typed-topic sources itself (sources_file): real message types over DDS.

The shipped config/sources/nav2.yaml, its topics made relative so they resolve in the
test's namespace, fed its real message types at robot rates through a running node; and
goal_relay_node, which holds a goal published once for the node's restart.
"""

import json
import math
from pathlib import Path

from action_msgs.msg import GoalStatus, GoalStatusArray
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry, Path as PathMsg
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import BatteryState

from working_memory.msg import LogEvent
from working_memory.relay.goal_relay_node import GoalRelayNode
from working_memory.ros import typestore
from working_memory.sim.conversions import odometry_msg
from working_memory.tools.recorder_node import RecorderNode

NAV2 = Path(__file__).resolve().parents[2] / 'config' / 'sources' / 'nav2.yaml'
GAZEBO = NAV2.with_name('gazebo.yaml')
SOURCES = {'cabins.planner.board_keys': ['goal:*', 'pose', 'route', 'battery'],
           'cabins.executor.board_keys': ['action:*', 'pose', 'battery'],
           'cabins.planner.events.kinds': ['CONSTRAINT', 'FAILURE', 'ACTION', 'ALARM']}


def relative_nav2(tmp_path, shipped: Path = NAV2) -> str:
    """Write a shipped file with its topics relative (in the test's namespace); its path."""
    path = tmp_path / shipped.name
    path.write_text(shipped.read_text().replace('topic: /', 'topic: '))
    return str(path)


def stamped(msg, seconds, frame='map'):
    """Return `msg` stamped `seconds` [s] in `frame` (a GoalInfo: its stamp alone)."""
    stamp = getattr(msg, 'stamp', None)
    if hasattr(msg, 'header'):
        msg.header.frame_id = frame
        stamp = msg.header.stamp
    stamp.sec, stamp.nanosec = int(seconds), int(seconds % 1 * 1e9)
    return msg


def amcl(x, now, frame='map'):
    msg = stamped(PoseWithCovarianceStamped(), now, frame)
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, 2.0
    msg.pose.pose.orientation.w = 1.0
    return msg


def goal_status(status, accepted):
    """Return the status array of one goal accepted at `accepted` [s] (its events' stamp)."""
    return goal_statuses((7, status, accepted))


def goal_statuses(*goals):
    """Return the status array of goals (uuid's first byte, status, accepted [s])."""
    msg = GoalStatusArray(status_list=[GoalStatus(status=status) for _, status, _ in goals])
    for goal, (ident, _, accepted) in zip(msg.status_list, goals):
        goal.goal_info.goal_id.uuid[0] = ident
        stamped(goal.goal_info, accepted)
    return msg


def goal_pose(x, now):
    """Return a /goal_pose at x [m], stamped `now` [s]."""
    goal = stamped(PoseStamped(), now)
    goal.pose.position.x, goal.pose.orientation.w = x, 1.0
    return goal


def pack_items(frame, cabin):
    (pack,) = [pack for pack in frame.packs if pack.cabin == cabin]
    return {item.key: json.loads(item.value) for item in pack.items}


def events_of(frame, cabin):
    (pack,) = [pack for pack in frame.packs if pack.cabin == cabin]
    return [(event.kind, event.key) for event in pack.recent_events]


def publishers(probe):
    node = probe.node
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    return {'amcl': node.create_publisher(PoseWithCovarianceStamped, 'amcl_pose', 10),
            'plan': node.create_publisher(PathMsg, 'plan', 10),
            'goal': node.create_publisher(PoseStamped, 'goal_pose', 10),
            'battery': node.create_publisher(BatteryState, 'battery_state', 10),
            'status': node.create_publisher(GoalStatusArray, 'navigate_to_pose/_action/status',
                                            latched),
            'diagnostics': node.create_publisher(DiagnosticArray, 'diagnostics', 10)}


def test_each_nav2_mapping_fed_its_real_type_fills_the_packs(start_memory, tmp_path, spin_until):
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path), **SOURCES})
    pubs = publishers(probe)
    probe.wait_matched(*pubs.values())
    now = node.get_clock().now().nanoseconds * 1e-9
    pubs['goal'].publish(goal_pose(5.0, now))
    plan = stamped(PathMsg(), now)
    plan.poses = [stamped(PoseStamped(), now) for _ in range(500)]
    for index, pose in enumerate(plan.poses):
        pose.pose.position.x = index * 0.01
    pubs['plan'].publish(plan)
    pubs['status'].publish(goal_status(GoalStatus.STATUS_EXECUTING, now))
    state = {'tick': 0}

    def robot():
        # AMCL at 10 Hz, the battery and the diagnostics at 1 Hz, at the test's spin rate.
        state['tick'] += 1
        t = node.get_clock().now().nanoseconds * 1e-9
        pubs['amcl'].publish(amcl(1.0 + 0.01 * state['tick'], t))
        if state['tick'] % 10 == 1:
            pubs['battery'].publish(stamped(BatteryState(percentage=0.8, voltage=24.0), t, ''))
            pubs['diagnostics'].publish(DiagnosticArray(status=[
                DiagnosticStatus(name='lidar', level=DiagnosticStatus.ERROR, message='no scan')]))

    timer = probe.node.create_timer(0.1, robot)
    frame = probe.wait_frame(
        lambda f: {'goal:current', 'pose', 'route', 'battery'} <= set(pack_items(f, 'planner'))
        and ('FAILURE', 'diagnostic:lidar') in _named(events_of(f, 'planner')))
    probe.node.destroy_timer(timer)
    planner = pack_items(frame, 'planner')
    assert planner['goal:current'] == {'x': 5.0, 'y': 0.0, 'yaw': 0.0}
    assert set(planner['pose']) == {'x', 'y', 'yaw'} and planner['pose']['y'] == 2.0
    assert len(planner['route']) == 100 and planner['route'][-1] == [499 * 0.01, 0.0]
    assert planner['battery']['percentage'] == 0.800000011920929   # float32 on the wire
    assert 'battery' in pack_items(frame, 'executor')
    names = {count.topic: count.received for count in frame.inputs}
    for topic in ('amcl_pose', 'plan', 'goal_pose', 'battery_state',
                  'navigate_to_pose/_action/status', 'diagnostics'):
        assert names[f'{probe.node.get_namespace()}/{topic}'] >= 1, topic
    status = probe.status('sources', lambda s: probe.values(s)['battery.taken'] != '0')
    values = probe.values(status)
    assert values['diagnostics.rejected'] == '0' and values['amcl.taken'] != '0'
    assert values['amcl.received'] == str(int(values['amcl.taken']) + int(values['amcl.rejected']))


def _named(events):
    """Return (kind name, key) of LogEvent kinds as the pack carries them."""
    names = {getattr(LogEvent, name): name for name in
             ('ACTION', 'FAILURE', 'CONSTRAINT', 'OBSERVATION', 'GOAL', 'ALARM')}
    return [(names[kind], key) for kind, key in events]


def test_a_non_finite_pose_is_rejected_and_counted_on_diagnostics(start_memory, tmp_path):
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path)})
    pubs = publishers(probe)
    probe.wait_matched(pubs['amcl'])
    now = node.get_clock().now().nanoseconds * 1e-9
    pubs['amcl'].publish(amcl(math.nan, now))
    status = probe.status('sources', lambda s: probe.values(s)['amcl.rejected'] == '1')
    assert 'not a finite number' in probe.values(status)['amcl.last_rejection']
    pubs['amcl'].publish(amcl(3.0, now))
    frame = probe.wait_frame(lambda f: 'pose' in pack_items(f, 'planner'))
    assert pack_items(frame, 'planner')['pose']['x'] == 3.0


def test_bytes_that_do_not_decode_are_rejected_and_counted_and_the_next_message_taken(
        start_memory, tmp_path):
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path)})
    pubs = publishers(probe)
    probe.wait_matched(pubs['amcl'])
    now = node.get_clock().now().nanoseconds * 1e-9
    pubs['amcl'].publish(serialize_message(amcl(1.0, now))[:40])   # cut short on the wire
    status = probe.status('sources', lambda s: probe.values(s)['amcl.rejected'] == '1')
    assert 'geometry_msgs/msg/PoseWithCovarianceStamped message rosbags cannot decode' in \
        probe.values(status)['amcl.last_rejection']
    pubs['amcl'].publish(amcl(3.0, now))
    frame = probe.wait_frame(lambda f: 'pose' in pack_items(f, 'planner'))
    assert pack_items(frame, 'planner')['pose']['x'] == 3.0


def test_a_type_without_an_installed_definition_is_taken_as_rclpy_messages(
        start_memory, tmp_path, monkeypatch):
    monkeypatch.setattr(typestore, 'register_decodable', lambda store, type_name: False)
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path)})
    amcl_subscription, = [subscription for subscription, _ in node._inputs.intake._taken
                          if subscription.topic_name.endswith('/amcl_pose')]
    assert not amcl_subscription.raw
    pubs = publishers(probe)
    probe.wait_matched(pubs['amcl'])
    pubs['amcl'].publish(amcl(3.0, node.get_clock().now().nanoseconds * 1e-9))
    frame = probe.wait_frame(lambda f: 'pose' in pack_items(f, 'planner'))
    assert pack_items(frame, 'planner')['pose']['x'] == 3.0


def test_an_aborted_navigation_gives_one_failure_event(start_memory, tmp_path, spin_until):
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path), **SOURCES})
    pubs = publishers(probe)
    probe.wait_matched(pubs['status'])
    now = node.get_clock().now().nanoseconds * 1e-9
    # The status array repeats an ended goal in every message until it is forgotten.
    statuses = [GoalStatus.STATUS_EXECUTING] + [GoalStatus.STATUS_ABORTED] * 5
    for count, status in enumerate(statuses, 1):
        pubs['status'].publish(goal_status(status, now))
        probe.status('sources', lambda s: probe.values(s)['navigate.received'] == str(count))
    frame = probe.wait_frame()
    assert _named(events_of(frame, 'planner')).count(('FAILURE', 'navigate_to_pose')) == 1
    assert _named(events_of(frame, 'planner')).count(('ACTION', 'navigate_to_pose')) == 1


def test_the_current_goal_follows_the_newest_goal_through_a_preemption(start_memory, tmp_path):
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path), **SOURCES})
    pubs = publishers(probe)
    probe.wait_matched(pubs['status'], pubs['goal'])
    taken = {'count': 0}

    def status(*goals):
        # Each status array taken by the node before the next (it may skip none).
        pubs['status'].publish(goal_statuses(*goals))
        taken['count'] += 1
        probe.status('sources', lambda s: probe.values(s)['navigate.received']
                     == str(taken['count']))
        return pack_items(probe.wait_frame(), 'planner').get('goal:current')

    a, b = 1, 2
    t = node.get_clock().now().nanoseconds * 1e-9
    pubs['goal'].publish(goal_pose(1.0, t))
    probe.wait_frame(lambda f: pack_items(f, 'planner').get('goal:current', {}).get('x') == 1.0)
    assert status((a, GoalStatus.STATUS_EXECUTING, t))['x'] == 1.0
    # A second goal replaces the first: Nav2 accepts B, then aborts A (a client cancels it).
    pubs['goal'].publish(goal_pose(2.0, t + 1.0))
    probe.wait_frame(lambda f: pack_items(f, 'planner').get('goal:current', {}).get('x') == 2.0)
    assert status((a, GoalStatus.STATUS_EXECUTING, t),
                  (b, GoalStatus.STATUS_ACCEPTED, t + 1.0))['x'] == 2.0
    assert status((a, GoalStatus.STATUS_ABORTED, t), (b, GoalStatus.STATUS_EXECUTING, t + 1.0),
                  (3, GoalStatus.STATUS_CANCELED, t - 1.0))['x'] == 2.0
    assert status((a, GoalStatus.STATUS_ABORTED, t),
                  (b, GoalStatus.STATUS_SUCCEEDED, t + 1.0)) is None
    frame = probe.wait_frame()
    assert 'goal:current' not in pack_items(frame, 'planner')
    assert _named(events_of(frame, 'planner')).count(('FAILURE', 'navigate_to_pose')) == 2


def restart(node, probe):
    """Clean the node up, configure and activate it again; return its first frame done re-reading.

    The frame of a new node start (`started`) whose writers' answers are in.
    """
    started = probe.wait_frame().started
    for transition in (node.trigger_deactivate, node.trigger_cleanup, node.trigger_configure,
                       node.trigger_activate):
        assert transition() == TransitionCallbackReturn.SUCCESS, transition
    return probe.wait_frame(lambda f: f.started != started and not f.resyncing)


def start_relay(add_node, context, namespace, sources_file):
    return add_node(GoalRelayNode(namespace=namespace, context=context, parameter_overrides=[
        Parameter('sources_file', value=sources_file)]))


def test_a_goal_published_once_comes_back_after_a_restart_from_the_relay(
        start_memory, tmp_path, add_node, context, namespace, spin_until):
    sources_file = relative_nav2(tmp_path)
    node, probe = start_memory({'sources_file': sources_file, **SOURCES})
    relay = start_relay(add_node, context, namespace, sources_file)
    goal = probe.node.create_publisher(PoseStamped, 'goal_pose', 10)   # as RViz2: volatile
    assert spin_until(lambda: goal.get_subscription_count() == 2)
    goal.publish(goal_pose(4.0, node.get_clock().now().nanoseconds * 1e-9))
    probe.wait_frame(lambda f: 'goal:current' in pack_items(f, 'planner'))
    assert spin_until(lambda: 'goal:current' in relay.board.standing)
    probe.node.destroy_publisher(goal)
    frame = restart(node, probe)
    assert pack_items(frame, 'planner')['goal:current'] == {'x': 4.0, 'y': 0.0, 'yaw': 0.0}


def test_the_relay_lets_the_goal_go_when_the_newest_navigation_goal_ends(
        start_memory, tmp_path, add_node, context, namespace, spin_until):
    sources_file = relative_nav2(tmp_path)
    node, probe = start_memory({'sources_file': sources_file, **SOURCES})
    relay = start_relay(add_node, context, namespace, sources_file)
    pubs = publishers(probe)
    assert spin_until(lambda: pubs['goal'].get_subscription_count() == 2
                      and pubs['status'].get_subscription_count() == 2)
    now = node.get_clock().now().nanoseconds * 1e-9
    pubs['goal'].publish(goal_pose(4.0, now))
    assert spin_until(lambda: 'goal:current' in relay.board.standing)
    pubs['status'].publish(goal_statuses((1, GoalStatus.STATUS_SUCCEEDED, now)))
    assert spin_until(lambda: 'goal:current' not in relay.board.standing)
    frame = restart(node, probe)
    assert 'goal:current' not in pack_items(frame, 'planner')


def test_an_unknown_type_or_field_fails_configure_naming_it(start_memory, tmp_path, capfd):
    good = ('sources:\n  battery:\n    topic: battery_state\n'
            '    type: sensor_msgs/msg/BatteryState\n'
            '    board: [{key: battery, value: {level: percentage}}]\n')
    for typo, named in (
            ('BatteryState', 'did you mean BatteryState?'),
            ('percentage', "has no field 'percentag' (did you mean percentage?)")):
        path = tmp_path / f'bad_{typo}.yaml'
        path.write_text(good.replace(typo, typo[:-1]))
        node, _ = start_memory({'sources_file': str(path)}, configure=False)
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert named in capfd.readouterr().err


def test_replay_agrees_on_every_tick_of_a_run_fed_by_sources(start_memory, tmp_path, add_node,
                                                             spin_until, context, replayed):
    params = {'sources_file': relative_nav2(tmp_path), **SOURCES}
    node, probe = start_memory(params)
    pubs = publishers(probe)
    namespace = probe.node.get_namespace()
    topics = [f'{namespace}/working_memory/frame'] + [
        f'{namespace}/{topic}' for topic in ('amcl_pose', 'plan', 'goal_pose', 'battery_state',
                                             'navigate_to_pose/_action/status', 'diagnostics')]
    recorder = add_node(RecorderNode(context=context, parameter_overrides=[
        Parameter('bag_path', value=str(tmp_path / 'bag')), Parameter('topics', value=topics)]))
    # Every source message the node takes is in the bag: publish once both subscribed.
    assert spin_until(lambda: not recorder.waiting_for and all(
        pub.get_subscription_count() == 2 for pub in pubs.values()))
    now = node.get_clock().now().nanoseconds * 1e-9
    goal = stamped(PoseStamped(), now)
    goal.pose.orientation.w = 1.0
    pubs['goal'].publish(goal)
    plan = stamped(PathMsg(), now)
    plan.poses = [stamped(PoseStamped(), now) for _ in range(300)]
    pubs['plan'].publish(plan)
    for step, status in enumerate([GoalStatus.STATUS_ACCEPTED, GoalStatus.STATUS_EXECUTING]
                                  + [GoalStatus.STATUS_ABORTED] * 3):
        t = node.get_clock().now().nanoseconds * 1e-9
        pubs['status'].publish(goal_status(status, now))
        pubs['amcl'].publish(amcl(math.nan if step == 2 else 1.0 + step, t))
        pubs['battery'].publish(stamped(BatteryState(percentage=0.5 - 0.1 * step), t, ''))
        probe.status('sources', lambda s: probe.values(s)['amcl.received'] == str(step + 1))
        # After the status: events get their numbers in the order the node took them.
        pubs['diagnostics'].publish(stamped(DiagnosticArray(status=[DiagnosticStatus(
            name='motor', level=bytes([2 * (step % 2)]))]), t, ''))
        probe.status('sources', lambda s: probe.values(s)['diagnostics.received']
                     == str(step + 1))
    probe.wait_frame(lambda f: 'goal:current' not in pack_items(f, 'planner'))
    spin_until(lambda: False, 0.3)
    _, _, result = replayed(recorder, node)
    assert result.ticks > 10 and result.agreeing == result.ticks, result.mismatches[:2]


def test_gazebo_odometry_at_50_hz_is_the_packs_pose(start_memory, tmp_path):
    node, probe = start_memory({'sources_file': relative_nav2(tmp_path, GAZEBO)})
    odometry = probe.node.create_publisher(Odometry, 'odom', 10)
    probe.wait_matched(odometry)
    state = {'x': 2.0}

    def drive():
        state['x'] += 0.01
        now = node.get_clock().now().nanoseconds * 1e-9
        odometry.publish(odometry_msg(state['x'], 6.0, 0.3, 0.5, 0.0, now, 'map', 'base_link'))

    timer = probe.node.create_timer(0.02, drive)
    frame = probe.wait_frame(lambda f: pack_items(f, 'executor').get('pose', {}).get('x', 0) > 2.1)
    probe.node.destroy_timer(timer)
    pose = pack_items(frame, 'executor')['pose']
    assert pose['y'] == 6.0 and math.isclose(pose['yaw'], 0.3, abs_tol=1e-9)


def test_a_source_on_an_input_or_no_topic_fails_configure_naming_it(start_memory, tmp_path,
                                                                    capfd, namespace):
    # `map` as the node names it, `board` as it resolves in the node's namespace, no topic.
    for index, (topic, named) in enumerate((
            ('map', 'an input of the node already'),
            (f'{namespace}/board', 'an input of the node already'),
            ('no spaces', 'sources.grid.topic: failed to resolve name'))):
        path = tmp_path / f'clash{index}.yaml'
        path.write_text(f'sources:\n  grid:\n    topic: {topic}\n'
                        '    type: nav_msgs/msg/OccupancyGrid\n    board: [{key: grid}]\n')
        node, _ = start_memory({'sources_file': str(path)}, configure=False)
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert named in capfd.readouterr().err
