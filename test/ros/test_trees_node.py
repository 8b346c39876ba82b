"""A py_trees tree on WorkingMemoryClient over real DDS: its status names the pack it read."""

import pathlib
import time

import py_trees
import pytest
import rclpy

from working_memory.client import WorkingMemoryClient
from working_memory.core.frames import make_frame, make_pack
from working_memory.core.items import Item, Missing, MissingReason, Source
from working_memory.msg import ContextFrame, DecisionStatus
from working_memory.ros.conversions import context_frame_msg
from working_memory.ros.qos import frame_qos, stream_qos
from working_memory.trees import Decide, TreeDecisions, WorkingMemoryToBlackboard
from working_memory.trees.tree_node import TreeStatusPublisher


@pytest.fixture(autouse=True)
def clean_blackboard():
    py_trees.blackboard.Blackboard.clear()
    yield
    py_trees.blackboard.Blackboard.clear()


def frame(tick):
    """Return (ContextFrame, digest) with one planner pack holding a pose that moves per tick.

    Stamped now: the frame of a working memory that is alive (WorkingMemoryClient.latest).
    """
    stamp = time.time()
    items = [Item('pose', {'x': float(tick), 'y': 0.0}, Source.BOARD, 0.5, stamp, stamp)]
    core = make_frame(tick, stamp, [make_pack('planner', tick, stamp, items, (), None, ())])
    return context_frame_msg(core, 'map'), core.digest


class ArriveMidTick(py_trees.behaviour.Behaviour):
    """Publishes the next frame and spins until the client holds it, in the middle of a tick."""

    def __init__(self, publish, wait_for):
        super().__init__('a new pack arrives')
        self._publish, self._wait_for = publish, wait_for

    def update(self):
        self._publish()
        assert self._wait_for()
        return py_trees.common.Status.SUCCESS


def test_the_tree_status_carries_the_pack_read_at_the_tree_tick_start(
        context, add_node, spin_until, namespace):
    node = add_node(rclpy.create_node('tree', namespace=namespace, context=context))
    probe = add_node(rclpy.create_node('probe', namespace=namespace, context=context))
    frames = probe.create_publisher(ContextFrame, 'working_memory/frame', frame_qos())
    statuses = []
    probe.create_subscription(DecisionStatus, 'tree/status', statuses.append, stream_qos())
    client = WorkingMemoryClient(node, 'planner', 'working_memory')
    first, first_digest = frame(1)
    second, second_digest = frame(2)
    frames.publish(first)
    assert spin_until(lambda: client.latest() is not None)

    memory = WorkingMemoryToBlackboard.of_client(client)
    decisions = TreeDecisions(memory)
    arrive = ArriveMidTick(lambda: frames.publish(second),
                           lambda: spin_until(lambda: client.latest().tick == 2))
    decide = Decide(decisions, 'go', detail=lambda view: view.value('pose'))
    tree = py_trees.trees.BehaviourTree(py_trees.composites.Sequence(
        'cabin', memory=False, children=[memory, arrive, decide]))
    tree.setup()
    publisher = TreeStatusPublisher(node, decisions, 'tree/status')
    tree.add_post_tick_handler(publisher.after_tick)
    assert spin_until(lambda: probe.count_publishers(f'{namespace}/tree/status') == 1
                      and node.count_subscribers(f'{namespace}/tree/status') == 1)

    tree.tick()
    assert spin_until(lambda: len(statuses) == 1)
    # Tick 2 arrived while the tree ticked: the decision was made on, and names, tick 1.
    status = statuses[0]
    assert (status.cabin, status.tick, status.digest, status.decision) == (
        'planner', 1, first_digest, 'go')
    assert status.detail == '{"x":1.0,"y":0.0}'
    arrive.stop(py_trees.common.Status.INVALID)
    tree.root.children.remove(arrive)
    tree.tick()
    assert spin_until(lambda: len(statuses) == 2)
    assert (statuses[1].tick, statuses[1].digest) == (2, second_digest)
    tree.shutdown()
    publisher.destroy()
    client.destroy()


def doc_example():
    """Return the first Python block of docs/TREES.md."""
    text = (pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'TREES.md').read_text()
    return text.split('```python\n', 1)[1].split('```', 1)[0]


def test_the_example_of_docs_trees_runs_and_explains_a_missing_item(context, add_node,
                                                                    spin_until):
    node = add_node(rclpy.create_node('doc_tree', context=context))
    probe = add_node(rclpy.create_node('doc_probe', context=context))
    frames = probe.create_publisher(ContextFrame, '/working_memory/frame', frame_qos())
    statuses = []
    probe.create_subscription(DecisionStatus, '/doc_tree/status', statuses.append, stream_qos())
    now = node.get_clock().now().nanoseconds * 1e-9
    zone = Item('safety:zone/high_voltage', {'polygon': [[0, 0], [1, 0], [1, 1]]}, Source.BOARD,
                1.0, now, now)
    pose = Item('pose', {'x': 1.0, 'y': 2.0}, Source.BOARD, 0.5, now, now)
    evicted = Missing('safety:zone/high_voltage', MissingReason.EVICTED,
                      'evicted at tick 1 (capacity): importance 0.30, unused since its last use')

    def publish(tick, items, missing=()):
        # Stamped when sent, the values too: the example's KeyFresh allows the pose 0.5 s.
        stamp = node.get_clock().now().nanoseconds * 1e-9
        items = [item._replace(stamp=stamp, last_used=stamp) for item in items]
        core = make_frame(tick, stamp, [make_pack('planner', tick, stamp, items, (), None,
                                                  missing)])
        frames.publish(context_frame_msg(core, 'map'))

    scope = {'node': node}
    exec(doc_example(), scope)   # noqa: S102 - the documented example, as a user runs it
    client = scope['client']
    assert spin_until(lambda: node.count_subscribers('/doc_tree/status') == 1)
    publish(1, [pose, zone])
    assert spin_until(lambda: any(status.tick == 1 for status in statuses))
    first = next(status for status in statuses if status.tick == 1)
    assert (first.decision, first.detail) == ('go', '{"x":1.0,"y":2.0}')
    publish(2, [pose], [evicted])
    assert spin_until(lambda: any(status.tick == 2 for status in statuses))
    assert next(status for status in statuses if status.tick == 2).decision == 'hold'
    present = scope['root'].children[1].children[0].children[0]
    assert present.feedback_message.startswith(
        'safety:zone/high_voltage: EVICTED (evicted at tick 1 (capacity)')
    scope['tree'].shutdown()
    client.destroy()
