"""The reference planner rebuilt as a py_trees tree, on the pack the tree reads per tree tick.

    planner
    ├── WorkingMemory                 the planner pack of this tree tick -> /wm/planner/*
    └── plan or hold                  (selector)
        ├── plan                      (sequence)
        │   ├── safety constraints?   none missing (check_constraints); else FAILURE, explained
        │   ├── constraints back      ends an alarm episode
        │   └── keep or replan        (selector)
        │       ├── keep              (sequence) replan not due? -> keep route
        │       └── replan            route / no_route (publishes route on the board)
        └── hold                      raise constraint_validation (once per episode) and hold

The effects (board, log, decisions) are the planner node's own (`PlannerActions`); the tree
decides which one a tick takes, from what it reads on the blackboard. No rclpy here.
"""

from __future__ import annotations

from typing import Callable, Protocol

import py_trees

from working_memory.core.pack_view import PackView
from working_memory.decision.planner import ConstraintAlarm, check_constraints
from working_memory.trees.blackboard import ROOT, WorkingMemoryToBlackboard, cabin_namespace
from working_memory.trees.conditions import note_text

Status = py_trees.common.Status
SAFETY_PREFIX = 'safety:'


class PlannerActions(Protocol):
    """What the planner tree's leaves do; the planner node provides them."""

    def constraints_back(self, view: PackView) -> None:
        """End an alarm episode (the next plan is due at once)."""

    def replan_due(self) -> bool:
        """Return True when the route is to be planned again."""

    def keep_route(self, view: PackView) -> None:
        """Report that the route stands."""

    def replan(self, view: PackView) -> None:
        """Plan on the pack and publish the route (or no_route, or the alarm)."""

    def hold(self, view: PackView, alarm: ConstraintAlarm) -> None:
        """Raise constraint_validation (once per episode) and hold."""


class OnPack(py_trees.behaviour.Behaviour):
    """A behaviour that reads the whole pack of this tree tick (`/wm/<cabin>/pack`, READ)."""

    def __init__(self, name: str, cabin: str, root: str = ROOT):
        super().__init__(name)
        self._board = self.attach_blackboard_client(name=name,
                                                    namespace=cabin_namespace(cabin, root))
        self._board.register_key(key='pack', access=py_trees.common.Access.READ)

    def pack(self) -> PackView:
        """Return the pack on the blackboard (KeyError before the first)."""
        return self._board.pack


class OnSafety(OnPack):
    """A behaviour that checks the pack's safety constraints as the plain planner does."""

    def __init__(self, name: str, cabin: str, require: bool = True, root: str = ROOT):
        super().__init__(name, cabin, root)
        self._require = require

    def alarm(self, pack: PackView) -> ConstraintAlarm | None:
        """Return the planner's alarm on `pack` (`check_constraints`), None when none."""
        return check_constraints(pack, SAFETY_PREFIX, self._require)


class SafetyConstraints(OnSafety):
    """SUCCESS when no safety constraint is missing; FAILURE naming each missing one's note."""

    def update(self) -> Status:
        """Check the pack as the plain planner does (`check_constraints`)."""
        pack = self.pack()
        alarm = self.alarm(pack)
        held = len(pack.keys_matching(SAFETY_PREFIX + '*'))
        if alarm is None:
            self.feedback_message = (f'{held} safety constraint(s) in the pack of tick '
                                     f'{pack.tick}')
            return Status.SUCCESS
        notes = '; '.join(note_text(note.key, note, pack.stamp) for note in alarm.missing)
        what = f'{len(alarm.missing)} missing from' if held else 'none in'
        self.feedback_message = (f'{SAFETY_PREFIX}*: {what} the {pack.cabin} pack of tick '
                                 f'{pack.tick}' + (f'; {notes}' if notes else ''))
        return Status.FAILURE


class Act(OnPack):
    """Call `effect(pack)` and succeed: a leaf whose effect the planner node provides."""

    def __init__(self, name: str, cabin: str, effect: Callable[[PackView], None],
                 root: str = ROOT):
        super().__init__(name, cabin, root)
        self._effect = effect

    def update(self) -> Status:
        """Apply the effect to the pack of this tree tick."""
        self._effect(self.pack())
        return Status.SUCCESS


class ReplanNotDue(py_trees.behaviour.Behaviour):
    """SUCCESS while the replan period has not passed since the last plan."""

    def __init__(self, actions: PlannerActions, name: str = 'replan not due?'):
        super().__init__(name)
        self._actions = actions

    def update(self) -> Status:
        """Ask the planner whether a plan is due."""
        if self._actions.replan_due():
            self.feedback_message = 'replan due'
            return Status.FAILURE
        self.feedback_message = 'the route stands until the replan period passes'
        return Status.SUCCESS


class Hold(OnSafety):
    """Hold on a pack that misses safety constraints: raise constraint_validation, then SUCCESS."""

    def __init__(self, cabin: str, actions: PlannerActions, name: str = 'hold',
                 require: bool = True, root: str = ROOT):
        super().__init__(name, cabin, require, root)
        self._actions = actions

    def update(self) -> Status:
        """Raise the alarm of the pack's missing constraints."""
        pack = self.pack()
        alarm = self.alarm(pack)
        if alarm is None:
            self.feedback_message = 'safety constraints present: nothing to hold for'
            return Status.FAILURE
        self._actions.hold(pack, alarm)
        self.feedback_message = f'holding: {alarm.reason}'
        return Status.SUCCESS


def planner_tree(memory: WorkingMemoryToBlackboard, actions: PlannerActions,
                 require_safety: bool = True) -> py_trees.behaviour.Behaviour:
    """Return the planner tree's root; `memory` exposes the planner pack, `actions` act.

    `require_safety`: a pack without any safety constraint holds (`check_constraints`).
    """
    cabin = memory.exposure.cabin
    keep = py_trees.composites.Sequence('keep', memory=False, children=[
        ReplanNotDue(actions), Act('keep route', cabin, actions.keep_route)])
    plan = py_trees.composites.Sequence('plan', memory=False, children=[
        SafetyConstraints('safety constraints?', cabin, require_safety),
        Act('constraints back', cabin, actions.constraints_back),
        py_trees.composites.Selector('keep or replan', memory=False, children=[
            keep, Act('replan', cabin, actions.replan)])])
    return py_trees.composites.Sequence('planner', memory=False, children=[
        memory,
        py_trees.composites.Selector('plan or hold', memory=False, children=[
            plan, Hold(cabin, actions, require=require_safety)])])
