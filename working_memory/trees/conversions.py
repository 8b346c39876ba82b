"""The tree room's message: a tree's decision as the DecisionStatus every cabin publishes."""

from __future__ import annotations

from working_memory.decision.conversions import decision_status_msg
from working_memory.msg import DecisionStatus
from working_memory.trees.decisions import TreeDecision


def tree_status_msg(decision: TreeDecision, stamp: float) -> DecisionStatus:
    """Return `decision` as a DecisionStatus at `stamp` [s], with its pack's (tick, digest)."""
    return decision_status_msg(decision.cabin, decision.tick, decision.digest,
                               decision.decision, decision.detail, stamp)
