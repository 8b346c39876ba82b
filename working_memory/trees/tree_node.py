"""A tree's ROS face: publish what it decided each tree tick on `~/status` (DecisionStatus).

    memory = WorkingMemoryToBlackboard.of_client(client)
    decisions = TreeDecisions(memory)
    tree = py_trees.trees.BehaviourTree(
        py_trees.composites.Sequence('cabin', memory=False, children=[memory, ...]))
    status = TreeStatusPublisher(node, decisions)
    tree.add_post_tick_handler(status.after_tick)

The status carries the (tick, frame digest) of the pack the tree read in that tick, so a
monitor comparing the cabins' reports (the reference monitor's `status_topics`) sees a tree
that tore as it sees any cabin.
"""

from __future__ import annotations

import py_trees
from rclpy.node import Node

from working_memory.msg import DecisionStatus
from working_memory.ros import qos
from working_memory.trees.conversions import tree_status_msg
from working_memory.trees.decisions import TreeDecision, TreeDecisions


class TreeStatusPublisher:
    """Publish a tree's decision of each tree tick as DecisionStatus on `topic`.

    Publishers:
        `topic` (DecisionStatus, default `~/status`, the reference cabins' QoS: reliable,
        volatile, keep last 10).
    """

    def __init__(self, node: Node, decisions: TreeDecisions, topic: str = '~/status'):
        self._node = node
        self._decisions = decisions
        self._publisher = node.create_publisher(DecisionStatus, topic, qos.stream_qos(10))
        self.published = 0

    def publish(self, status: py_trees.common.Status) -> TreeDecision | None:
        """Publish the tick's decision (the root's `status` when none was recorded).

        Before the tree has read a pack there is nothing to report: returns None.
        """
        decision = self._decisions.report(status)
        if decision is not None:
            now = self._node.get_clock().now().nanoseconds * 1e-9
            self._publisher.publish(tree_status_msg(decision, now))
            self.published += 1
        return decision

    def after_tick(self, tree: py_trees.trees.BehaviourTree) -> None:
        """Post-tick handler of a BehaviourTree: publish the tick's decision."""
        self.publish(tree.root.status)

    def destroy(self) -> None:
        """Release the publisher."""
        self._node.destroy_publisher(self._publisher)
