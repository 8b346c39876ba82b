"""The node's board intake per message, in one process and without DDS traffic.

Run with `tools/rosenv python -P -m working_memory.bench.intake_node [--profile]`.
A real configured `WorkingMemoryNode` takes serialized BoardUpdates through its own intake
(ros/intake.py `Intake.take`'s loop, `Subscriptions._on_board`, the engine's `take_board`,
the codec and the board apply); only the subscription's handle is replaced by one that hands
out prepared bytes and message infos, as rclpy's `take_message` does; the board's changes
are taken after every round, as a tick takes them. Each message holds one sensor entry over
30 keys, as `make bench-ros` sends. `--sleep` pauses between rounds of 10 messages, as the
node sleeps between ticks (cold caches: on a shared 2-core machine the same Python runs 2-3x
slower then). Prints microseconds per message; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
import statistics
import time

import rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.serialization import serialize_message

from working_memory.core.items import BoardEntry
from working_memory.ros import conversions as conv
from working_memory.ros.node import WorkingMemoryNode

CABINS = {'cabin_names': ['planner'], 'cabins.planner.board_keys': ['sensor:*', 'goal:*'],
          'cabins.planner.required': ['goal:*'], 'tick_hz': 1.0}


class _Handle:
    """Stands in for a subscription handle: hands out prepared (bytes, info) in turn."""

    def __init__(self, taken: list[tuple[bytes, dict]]):
        self._taken, self._next, self.stop = taken, 0, 0

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False

    def take_message(self, _msg_type, _raw):
        if self._next >= self.stop:
            return None
        self._next += 1
        return self._taken[self._next - 1]


class _Subscription:
    """Stands in for an rclpy Subscription of raw messages."""

    def __init__(self, handle: _Handle):
        self.handle, self.msg_type, self.raw = handle, None, True


def messages(count: int) -> list[tuple[bytes, dict]]:
    """Return `count` serialized one-entry updates with the message infos rclpy gives."""
    gid = {'data': bytes(range(16)) + bytes(8)}
    return [(serialize_message(conv.board_update_msg([BoardEntry(
        f'sensor:{i % 30}', {'reading': math.sin(i)}, 1.0 + i * 1e-3, importance=0.05, ttl=1.0,
        tags=('sensor',))], 1.0 + i * 1e-3)),
        {'publisher_gid': gid, 'publication_sequence_number': i + 1,
         'source_timestamp': 0, 'received_timestamp': 0}) for i in range(count)]


def run(node: WorkingMemoryNode, taken: list[tuple[bytes, dict]], round_size: int,
        sleep_s: float) -> tuple[float, float]:
    """Return the mean wall and CPU time [us] per message of taking `taken` in rounds."""
    handle = _Handle(taken)
    node._inputs.intake._taken = [(_Subscription(handle), node._inputs._on_board)]
    # What each tick asks the board for (untimed): the apply keeps that index and its changes.
    board, interest = node._engine.board, node._engine.assembler._interest
    busy = cpu = 0.0
    for start in range(0, len(taken), round_size):
        handle.stop = start + round_size
        begin, begin_cpu = time.perf_counter(), time.thread_time()
        node._inputs.intake.take(1.0)
        busy += time.perf_counter() - begin
        cpu += time.thread_time() - begin_cpu
        board.changes(interest)
        if sleep_s:
            time.sleep(sleep_s)
    return busy / len(taken) * 1e6, cpu / len(taken) * 1e6


def main(argv: list[str] | None = None) -> int:
    """Measure the node's intake; print us per message (median of --repeats)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--messages', type=int, default=5000)
    parser.add_argument('--round', type=int, default=10, help='messages per take round')
    parser.add_argument('--sleep', type=float, default=0.0, help='pause between rounds [s]')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--profile', action='store_true', help='print a cProfile of one run')
    args = parser.parse_args(argv)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(os.environ.get('ROS_DOMAIN_ID', '0')))
    try:
        node = WorkingMemoryNode(context=context, namespace=f'/intake_bench_{os.getpid()}',
                                 parameter_overrides=[Parameter(name, value=value)
                                                      for name, value in CABINS.items()])
        if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise SystemExit('the node did not configure')
        taken = messages(args.messages)
        run(node, taken, args.round, 0.0)   # warm up: every key on the board
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(run, node, taken, args.round, args.sleep)
            pstats.Stats(profiler).sort_stats('tottime').print_stats(25)
        wall, cpu = zip(*(run(node, taken, args.round, args.sleep)
                          for _ in range(args.repeats)))
        engine = node._engine
        print(f'intake: {statistics.median(wall):.1f} us per message (min {min(wall):.1f}; '
              f'CPU {statistics.median(cpu):.1f}, min {min(cpu):.1f}; round {args.round}, '
              f'sleep {args.sleep * 1e3:g} ms; received {engine.receipts.received["board"]}, '
              f'rejected {engine.health._inputs["board"].rejected}, board {len(engine.board)} '
              'keys)')
        node.destroy_node()
    finally:
        context.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
