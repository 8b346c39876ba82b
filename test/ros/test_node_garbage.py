"""The node makes no cyclic garbage of its own while it runs (ros/collector.py relies on it).

Its process freezes what survives each full collection of Python's cyclic collector: an
object of the node's that later died in a reference cycle would then stay until a
cleanup. Every kind of work an active node does is run here, and the collector's
garbage is searched for objects of this package.
"""

import gc
import types

from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.ros.conversions import board_update_msg, log_event_msg

SUCCESS = TransitionCallbackReturn.SUCCESS


def ours(obj) -> bool:
    """Return True for an object of this package (a function or class by its own module)."""
    module = obj.__module__ if isinstance(obj, (types.FunctionType, type)) else (
        type(obj).__module__)
    return isinstance(module, str) and module.startswith('working_memory')


def test_an_active_node_at_work_makes_no_cyclic_garbage_of_its_own(start_memory):
    node, probe = start_memory({'tick_hz': 50.0, 'capacity': 8})
    probe.wait_matched(probe.board, probe.log)
    probe.wait_frame()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for round_ in range(3):
            now = node.get_clock().now().nanoseconds * 1e-9
            probe.board.publish(board_update_msg([
                BoardEntry(f'sensor:{n}', {'reading': n + round_}, now, ttl=0.05)
                for n in range(20)] + [BoardEntry('goal:go', {'x': 1.0}, now)], now,
                [f'sensor:{n}' for n in range(5)] if round_ else ()))
            probe.log.publish(log_event_msg(Event(now, EventKind.FAILURE, 'test',
                                                  f'door:{round_}', {'why': 'stuck'})))
            probe.wait_frame(lambda frame, round_=round_: frame.tick > 5 * (round_ + 1))
            probe.assemble('planner')
            probe.explain('planner', 'sensor:3')
            node.set_parameters([Parameter('capacity', value=8 + round_)])
        assert node.trigger_deactivate() == SUCCESS
        assert node.trigger_activate() == SUCCESS
        probe.wait_frame(lambda frame: frame.tick > 20)
        gc.collect()
        found = [obj for obj in gc.garbage if ours(obj)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not found, sorted({type(obj).__qualname__ for obj in found})
