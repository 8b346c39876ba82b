"""What a tree decided in one tree tick, reported with the (tick, digest) of the pack it read.

`TreeDecisions.report()` takes the pack from the exposure, not the client: a pack that
arrived while the tree ticked is not the one the decision was made on. The tree node
publishes the report as a DecisionStatus, so the monitor's tearing check covers trees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import py_trees

from working_memory.core.pack_view import PackView
from working_memory.trees.blackboard import WorkingMemoryToBlackboard


@dataclass(frozen=True)
class TreeDecision:
    """One tree tick's decision and the pack it was made on."""

    cabin: str
    tick: int
    digest: str          # the ContextFrame's digest, as every cabin reports it
    decision: str
    detail: Any          # JSON-able


class TreeDecisions:
    """Collect what the behaviours of a tree decide in a tick; report it once per tick."""

    def __init__(self, memory: WorkingMemoryToBlackboard):
        self._memory = memory
        self._decision: str | None = None
        self._detail: Any = None

    @property
    def memory(self) -> WorkingMemoryToBlackboard:
        """The behaviour whose pack the decisions are made on."""
        return self._memory

    def decide(self, decision: str, detail: Any = None) -> None:
        """Record the tick's decision (a later call in the same tick replaces it)."""
        if not decision:
            raise ValueError('decision: must not be empty')
        self._decision, self._detail = decision, detail

    def report(self, status: py_trees.common.Status) -> TreeDecision | None:
        """Return the tick's decision (the root's `status` when none was recorded) and forget it.

        None before the tree has read its first pack: there is no (tick, digest) to report.
        """
        decision, detail = self._decision, self._detail
        self._decision = self._detail = None
        view = self._memory.view
        if view is None:
            return None
        if decision is None:
            decision, detail = status.value.lower(), {'status': status.value}
        return TreeDecision(cabin=view.cabin, tick=view.tick, digest=view.frame_digest or '',
                            decision=decision, detail=detail)


class Decide(py_trees.behaviour.Behaviour):
    """Record `decision` (detail from `detail(pack)` when given) and succeed: a tree's leaf."""

    def __init__(self, decisions: TreeDecisions, decision: str,
                 detail: Callable[[PackView], Any] | None = None, name: str | None = None):
        super().__init__(name or decision)
        self._decisions, self._decision, self._detail = decisions, decision, detail
        self._memory = decisions.memory

    def update(self) -> py_trees.common.Status:
        """Record the decision on the pack of this tree tick."""
        view = self._memory.view
        detail = None if self._detail is None or view is None else self._detail(view)
        self._decisions.decide(self._decision, detail)
        self.feedback_message = self._decision
        return py_trees.common.Status.SUCCESS
