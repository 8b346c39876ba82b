"""The planner tree with the real py_trees: which branch a pack takes, and what it explains."""

import pathlib

import py_trees
import pytest

from working_memory.core.items import Missing, MissingReason
from working_memory.core.pack_view import PackView
from working_memory.trees.blackboard import WorkingMemoryToBlackboard
from working_memory.trees.planner_tree import planner_tree

Status = py_trees.common.Status
DOCS = pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'TREES.md'
DROPPED = (Missing('safety:*', MissingReason.INJECTED_DROP,
                   'injected drop: 1 item(s) withheld: safety:zone/high_voltage'),
           Missing('events:CONSTRAINT', MissingReason.INJECTED_DROP,
                   'injected drop: CONSTRAINT events withheld'))


@pytest.fixture(autouse=True)
def clean_blackboard():
    py_trees.blackboard.Blackboard.clear()
    yield
    py_trees.blackboard.Blackboard.clear()


class Actions:
    """Records what the tree asked the planner to do."""

    def __init__(self, due=True):
        self.due, self.calls = due, []

    def constraints_back(self, view):
        self.calls.append(('constraints_back', view.tick))

    def replan_due(self):
        return self.due

    def keep_route(self, view):
        self.calls.append(('keep_route', view.tick))

    def replan(self, view):
        self.calls.append(('replan', view.tick))

    def hold(self, view, alarm):
        self.calls.append(('hold', view.tick, alarm.reason))


def pack(tick, safety=True, missing=()):
    values = {'pose': {'x': 1, 'y': 2}, 'goal:deliver': {'x': 5, 'y': 5}}
    if safety:
        values['safety:zone/high_voltage'] = {'polygon': [[0, 0], [1, 0], [1, 1]]}
    return PackView(cabin='planner', tick=tick, stamp=20.5, digest='p',
                    frame_digest='3f9c0a6e5b21d4c8', values=values, events=(),
                    missing=tuple(missing), map_window=None)


def ticked(view, actions, require_safety=True):
    root = planner_tree(WorkingMemoryToBlackboard('planner', lambda: view), actions,
                        require_safety)
    tree = py_trees.trees.BehaviourTree(root)
    tree.setup()
    tree.tick()
    return root


def test_a_pack_with_its_constraints_replans_when_due():
    actions = Actions(due=True)
    root = ticked(pack(3), actions)
    assert actions.calls == [('constraints_back', 3), ('replan', 3)]
    assert root.status is Status.SUCCESS


def test_a_pack_with_its_constraints_keeps_the_route_until_due():
    actions = Actions(due=False)
    ticked(pack(4), actions)
    assert actions.calls == [('constraints_back', 4), ('keep_route', 4)]


def test_a_pack_without_constraints_holds_and_says_why():
    actions = Actions()
    root = ticked(pack(41, safety=False, missing=DROPPED), actions)
    assert actions.calls == [('hold', 41, 'no safety constraint (safety:*) in the planner pack '
                                          '(safety:*: INJECTED_DROP)')]
    safety = root.children[1].children[0].children[0]
    assert safety.status is Status.FAILURE
    assert safety.feedback_message == (
        'safety:*: none in the planner pack of tick 41; safety:*: INJECTED_DROP (injected drop: '
        '1 item(s) withheld: safety:zone/high_voltage)')


def test_without_require_safety_a_pack_without_zones_plans_and_a_stale_zone_holds():
    actions = Actions(due=True)
    ticked(pack(5, safety=False), actions, require_safety=False)
    assert actions.calls == [('constraints_back', 5), ('replan', 5)]
    py_trees.blackboard.Blackboard.clear()
    stale = Missing('safety:zone/keepout', MissingReason.STALE, 'its ttl ran out')
    root = ticked(pack(6, missing=[stale]), actions, require_safety=False)
    assert actions.calls[-1] == ('hold', 6, '1 safety constraint(s) (safety:*) missing from the '
                                 'planner pack (safety:zone/keepout: STALE)')
    condition = root.children[1].children[0].children[0]
    assert condition.feedback_message.startswith('safety:*: 1 missing from the planner pack')


def test_docs_trees_shows_the_tree_as_py_trees_display_prints_it():
    root = ticked(pack(41, safety=False, missing=DROPPED), Actions())
    printed = py_trees.display.unicode_tree(root, show_status=True)
    assert printed.strip() in DOCS.read_text(), printed
