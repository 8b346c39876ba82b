"""A Nav2-shaped robot on the Nav2 profile, end to end: a fake Nav2 drives the real node.

The working-memory node runs config/profiles/nav2.yaml with config/sources/nav2.yaml (its
topics made relative, so they resolve in the test's namespace) beside goal_relay_node; a
fake Nav2 (working_memory/sim/nav2_fake_node.py) publishes Nav2's usual topics with their
real message types at Nav2's rates. The robot goes through a goal, a preemption by a second
goal, a success, an aborted goal with recoveries, a battery drop, a keepout zone appearing
and a restart of the working memory; each step is checked on the packs, with the
reference planner's own code and with a py_trees tree over the pack.
"""

import math
from pathlib import Path

import py_trees
import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from working_memory.core.items import MissingReason
from working_memory.decision.planner import Planner, PlannerConfig, Route, check_constraints
from working_memory.relay.goal_relay_node import GoalRelayNode
from working_memory.ros.conversions import cabin_pack_from_frame
from working_memory.sim.nav2_fake_node import FakeNav2
from working_memory.sim.nav2_robot import ABORTED, EXECUTING, Nav2Robot, SUCCEEDED
from working_memory.trees import KeyPresent, WorkingMemoryToBlackboard

CONFIG = Path(__file__).resolve().parents[2] / 'config'
PROFILE = CONFIG / 'profiles' / 'nav2.yaml'
# The planner of the profile (its /**/planner parameters), as the reference planner runs it.
PLANNER = Planner(PlannerConfig(goal_key='goal:current', require_safety=False,
                                robot_radius_m=0.3))
Status = py_trees.common.Status


@pytest.fixture(autouse=True)
def clean_blackboard():
    py_trees.blackboard.Blackboard.clear()
    yield
    py_trees.blackboard.Blackboard.clear()


class Packs:
    """The packs of the latest frame the probe waited for, and a py_trees tree per cabin."""

    def __init__(self, probe):
        self.probe, self.views, self.trees = probe, {}, {}

    def until(self, predicate):
        """Spin until a frame's packs (a {cabin: PackView}) satisfy `predicate`; keep them."""
        def packs(frame):
            return {pack.cabin: cabin_pack_from_frame(frame, pack.cabin) for pack in frame.packs}
        self.views = packs(self.probe.wait_frame(lambda frame: predicate(packs(frame))))
        return self.views

    def tree(self, cabin, *keys):
        """Tick a tree [memory, KeyPresent(key)...] over this cabin's pack; return its root."""
        if cabin not in self.trees:
            root = py_trees.composites.Sequence(cabin, memory=False, children=[
                WorkingMemoryToBlackboard(cabin, lambda: self.views[cabin]),
                *(KeyPresent(key, cabin) for key in keys)])
            self.trees[cabin] = py_trees.trees.BehaviourTree(root)
            self.trees[cabin].setup()
        self.trees[cabin].tick()
        return self.trees[cabin].root


def value(packs, cabin, key, default=None):
    return packs[cabin].values.get(key, default)


def events(packs, cabin):
    return [(event.kind.value, event.key) for event in packs[cabin].events]


def goal_id(packs):
    """Return the first byte of action:current's goal uuid (the fake's goal id)."""
    return value(packs, 'executor', 'action:current', {'goal': [None]})['goal'][0]


def relative_sources(tmp_path) -> str:
    """Write nav2.yaml with its topics relative (in the test's namespace); return its path."""
    path = tmp_path / 'nav2.yaml'
    path.write_text((CONFIG / 'sources' / 'nav2.yaml').read_text().replace('topic: /',
                                                                           'topic: '))
    return str(path)


def restart(node, probe):
    """Deactivate, clean up, configure and activate the node; wait for its new start's frame."""
    started = probe.wait_frame().started
    for transition in (node.trigger_deactivate, node.trigger_cleanup, node.trigger_configure,
                       node.trigger_activate):
        assert transition() == TransitionCallbackReturn.SUCCESS, transition
    probe.wait_frame(lambda frame: frame.started != started and not frame.resyncing)


def test_a_nav2_robot_through_goals_failures_a_zone_and_a_restart(
        start_memory, tmp_path, add_node, context, namespace):
    sources = relative_sources(tmp_path)
    node, probe = start_memory(
        {'sources_file': sources, 'map_windows': 'inline'}, cabins=False,
        cli_args=['--ros-args', '--params-file', str(PROFILE)])
    add_node(GoalRelayNode(namespace=namespace, context=context, parameter_overrides=[
        Parameter('sources_file', value=sources)]))
    robot = Nav2Robot(x=2.0, y=2.0)
    nav2 = FakeNav2(probe.node, robot)
    probe.wait_matched(*nav2.publishers)
    nav2.start()
    packs = Packs(probe)

    # A robot idle on Nav2: every required key has a source, safety items but no zone.
    seen = packs.until(lambda p: {'pose', 'safety:zone/keepout', 'safety:collision/stop'}
                       <= set(p['planner'].values) and 'battery' in p['monitor'].values
                       and 'velocity' in p['executor'].values and not p['planner'].resyncing)
    assert probe.status('required').message == 'a source writes every required key'
    assert value(seen, 'planner', 'safety:zone/keepout') == {'polygons': [], 'frame': 'map'}
    assert value(seen, 'planner', 'safety:collision/stop')['frame'] == 'base_link'
    assert check_constraints(seen['planner'], require=False) is None
    assert [note.reason for note in seen['executor'].missing
            if note.key == 'action:current'] == [MissingReason.NEVER_SEEN]
    root = packs.tree('planner', 'pose', 'goal:current')
    assert root.status is Status.FAILURE and 'goal:current' in root.tip().feedback_message

    # A goal: the planner's goal, the executor's action and plan, a route around nothing.
    a = nav2.goal(8.0, 2.0)
    seen = packs.until(lambda p: value(p, 'planner', 'goal:current')
                       and value(p, 'executor', 'action:current', {}).get('status') == EXECUTING
                       and 'route' in p['executor'].values)
    assert value(seen, 'planner', 'goal:current') == {'x': 8.0, 'y': 2.0, 'yaw': 0.0}
    assert goal_id(seen) == a.ident and ('ACTION', 'navigate_to_pose') in events(seen,
                                                                                 'executor')
    assert isinstance(PLANNER.plan(seen['planner']), Route)
    assert packs.tree('planner', 'pose', 'goal:current').status is Status.SUCCESS

    # A second goal preempts the first: Nav2 aborts A, the current goal is B's and stays.
    b = nav2.goal(12.0, 8.0)
    seen = packs.until(lambda p: goal_id(p) == b.ident
                       and value(p, 'planner', 'goal:current', {}).get('x') == 12.0
                       and ('FAILURE', 'navigate_to_pose') in events(p, 'planner'))
    (failure,) = [event for event in seen['planner'].events if event.kind.value == 'FAILURE']
    assert failure.detail['goal'][0] == a.ident and failure.detail['status'] == ABORTED

    # Success: the goal leaves every pack, the action says how it ended.
    robot.end(b, SUCCEEDED)
    nav2.publish_status()
    seen = packs.until(lambda p: value(p, 'executor', 'action:current', {}).get('status')
                       == SUCCEEDED and 'goal:current' not in p['planner'].values)
    assert ('OBSERVATION', 'navigate_to_pose') in events(seen, 'executor')
    root = packs.tree('planner', 'pose', 'goal:current')
    assert root.status is Status.FAILURE and 'goal:current' in root.tip().feedback_message

    # A goal Nav2 aborts after its recoveries: each is an event, the abort a FAILURE.
    c = nav2.goal(4.0, 9.0)
    packs.until(lambda p: goal_id(p) == c.ident)
    for name, end in (('spin', SUCCEEDED), ('backup', ABORTED)):
        recovery = robot.recovery(name, nav2.now())
        nav2.publish_status(name)
        packs.until(lambda p: ('ACTION', name) in events(p, 'executor'))
        robot.end(recovery, end)
        nav2.publish_status(name)
        kind = 'OBSERVATION' if end == SUCCEEDED else 'FAILURE'
        packs.until(lambda p: (kind, name) in events(p, 'executor'))
    robot.end(c, ABORTED)
    nav2.publish_status()
    seen = packs.until(lambda p: value(p, 'executor', 'action:current', {}).get('status')
                       == ABORTED and 'goal:current' not in p['planner'].values)
    assert events(seen, 'executor').count(('FAILURE', 'navigate_to_pose')) == 2   # A and C
    assert ('FAILURE', 'backup') in events(seen, 'planner')

    # The battery drops: the monitor's pack follows.
    robot.battery = 0.12
    seen = packs.until(lambda p: value(p, 'monitor', 'battery', {}).get('percentage', 1) < 0.2)
    assert value(seen, 'monitor', 'battery')['percentage'] == pytest.approx(0.12)

    # A keepout zone appears across the way to the next goal: the planner routes around it.
    robot.speed = 0.0   # the controller waits: the pose stays where the zone was drawn
    x, y = robot.x, robot.y
    zone = (x + 1.8, y - 1.5, x + 2.2, y + 1.5)
    robot.zones.append(zone)
    nav2.publish_mask()
    d = nav2.goal(x + 4.0, y)
    seen = packs.until(lambda p: value(p, 'planner', 'safety:zone/keepout', {}).get('polygons')
                       and value(p, 'planner', 'goal:current', {}).get('x') == x + 4.0)
    route = PLANNER.plan(seen['planner'])
    assert isinstance(route, Route) and route.constraints[-1] == 'safety:zone/keepout'
    assert len(route.waypoints) > 2 and all(
        not (zone[0] - 0.2 < px < zone[2] + 0.2 and zone[1] - 0.2 < py < zone[3] + 0.2)
        for px, py in _along(route.waypoints))
    assert packs.tree('planner', 'safety:zone/keepout').status is Status.SUCCESS

    # The working memory restarts: the relay gives the goal back, the latched topics the
    # action and the zone, the streams the rest.
    restart(node, probe)
    seen = packs.until(lambda p: {'goal:current', 'pose', 'safety:zone/keepout'}
                       <= set(p['planner'].values) and 'battery' in p['monitor'].values
                       and goal_id(p) == d.ident)
    assert value(seen, 'planner', 'goal:current')['x'] == x + 4.0
    assert len(value(seen, 'planner', 'safety:zone/keepout')['polygons']) == 1
    assert probe.status('required').message == 'a source writes every required key'
    assert packs.tree('executor', 'action:current', 'pose').status is Status.SUCCESS
    nav2.stop()


def _along(waypoints, step=0.05):
    """Yield points every `step` [m] along a polyline."""
    for (x1, y1), (x2, y2) in zip(waypoints, waypoints[1:]):
        count = max(1, math.ceil(math.dist((x1, y1), (x2, y2)) / step))
        for i in range(count + 1):
            yield x1 + (x2 - x1) * i / count, y1 + (y2 - y1) * i / count
