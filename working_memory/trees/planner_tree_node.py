"""The reference planner as a behaviour tree: PlannerNode's topics, parameters and decisions.

`make demo ARGS="--cabins trees"` and `bringup.launch.py cabins:=trees` run it in place of
planner_node.
"""

from __future__ import annotations

from typing import Any

import py_trees

from working_memory.core.pack_view import PackView
from working_memory.decision.decision_node import run_decision_node
from working_memory.decision.planner import ConstraintAlarm
from working_memory.decision.planner_node import PlannerNode, USAGE as PLANNER_USAGE
from working_memory.trees.blackboard import WorkingMemoryToBlackboard
from working_memory.trees.conversions import tree_status_msg
from working_memory.trees.decisions import TreeDecisions
from working_memory.trees.planner_tree import planner_tree


class PlannerTreeNode(PlannerNode):
    """PlannerNode whose decision each tick is a tick of a py_trees tree (trees/planner_tree).

    The tree ticks once per new pack: its first behaviour puts the client's latest pack on
    the blackboard (`/wm/<cabin>/`), the rest reads it from there, and the DecisionStatus
    carries that pack's (tick, frame digest) (TreeDecisions). Parameters, subscriptions and
    publishers: PlannerNode's.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._now = 0.0
        self.memory = WorkingMemoryToBlackboard.of_client(self.client)
        self.decisions = TreeDecisions(self.memory)
        self.tree = py_trees.trees.BehaviourTree(planner_tree(
            self.memory, self, self.params['require_safety']))
        self.tree.setup()

    def decide(self, view: PackView, now: float) -> None:
        """Tick the tree once; publish its decision with the pack it read."""
        self._now = now
        self.tree.tick()
        decision = self.decisions.report(self.tree.root.status)
        if decision is not None:
            self._status_pub.publish(tree_status_msg(decision, now))

    def publish_status(self, view: PackView, decision: str, detail: dict, now: float) -> None:
        """Record the planner's decision for the tree's report (published after the tick)."""
        self.decisions.decide(decision, detail)

    def destroy_node(self) -> None:
        """Shut the tree down (releasing its blackboard keys), then the node."""
        self.tree.shutdown()
        super().destroy_node()

    # PlannerActions: the tree's leaves act through PlannerNode's own steps.
    def constraints_back(self, view: PackView) -> None:
        """End an alarm episode."""
        self._constraints_back(view)

    def replan_due(self) -> bool:
        """Return True when the replan period has passed (or no plan was made)."""
        return self._due(self._now)

    def keep_route(self, view: PackView) -> None:
        """Report keep_route."""
        self._keep_route(view, self._now)

    def replan(self, view: PackView) -> None:
        """Plan and publish."""
        self._replan(view, self._now)

    def hold(self, view: PackView, alarm: ConstraintAlarm) -> None:
        """Raise constraint_validation once per episode and hold."""
        self._hold(view, alarm, self._now)


USAGE = PLANNER_USAGE + (
    ' This executable decides with a py_trees behaviour tree that reads the pack from the '
    'blackboard (/wm/<cabin>/); its decisions are those of planner_node.')


def main(args: list[str] | None = None) -> int:
    """Run the planner tree node; `-h/--help` prints its usage."""
    return run_decision_node(PlannerTreeNode, 'planner', USAGE, args, 'planner_tree_node')
