"""When the working-memory node ticks and takes its stream inputs: the node's scheduling.

The node spins in rclpy's EventsExecutor (`make_executor`), which serves events in
arrival order: a flood of messages or service requests queued before a due timer
would hold the tick back for as long as the backlog lasts. The node's other
callbacks therefore call `TickTimer.tick_if_due` first: when the timer's period has
passed unserved, the tick runs there, and the timer's own event, when it comes,
finds its period served and skips. `TickGrid` is that bookkeeping, pure; times are
the timer clock's [ns].
The stream inputs come through an `Intake` (ros/intake.py).
"""

from __future__ import annotations

from typing import Callable

from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node


EXECUTORS = ('single', 'events')


def make_executor(context=None, kind: str = 'events') -> Executor:
    """Return the executor the node runs in: `events` (default) or `single`, by measurement.

    `events` is rclpy's EventsExecutor (a C++ event queue, no wait set rebuilt per
    wake-up; `make bench-ros ARGS='--node "working_memory_node --executor single"'`
    measures the other). It serves events in arrival order, so a due tick could wait
    behind a flood of messages or service requests; the node's own callbacks therefore
    tick first when the tick is overdue (`TickTimer.tick_if_due`). `single` is rclpy's
    SingleThreadedExecutor, which serves every ready timer before the other entities
    of each wait: with a board flood of ~14 000 msgs/s from another process (2 shared
    cores, 100 Hz ticks) it kept 95-98 ticks/s; a
    MultiThreadedExecutor with ingestion, tick and service callback groups kept
    92-94 ticks/s: threads only add GIL hand-overs. On and off against `single`
    (BENCHMARKS.md, "What each speed mechanism buys"): node CPU at 100 Hz + 1 kHz 21.1 %
    (17.5-27.5) against 26.3 % (21.6-28.4), a flood taken at 10.5 k/s against 9.25 k/s:
    the medians move its way, but the spreads of the repeats overlap.
    """
    if kind == 'single':
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


class TickGrid:
    """The tick timer's grid of call times and the last grid point a tick served."""

    # A timer call this many periods (at least 1 s) behind the last point served is
    # taken as a clock that moved back: a queue of late events is never that long.
    RESYNC_PERIODS = 100
    RESYNC_MIN_NS = 1_000_000_000

    def __init__(self, period_ns: int, next_call_ns: int):
        """Start the grid of a timer of `period_ns` whose next call is at `next_call_ns` [ns]."""
        if period_ns <= 0:
            raise ValueError(f'tick period must be positive, not {period_ns} ns')
        self.period_ns = period_ns
        self._resync_ns = max(self.RESYNC_PERIODS * period_ns, self.RESYNC_MIN_NS)
        self.restart(next_call_ns)

    def restart(self, next_call_ns: int) -> None:
        """Follow a timer (re)started or reset: its next call is at `next_call_ns` [ns]."""
        self._served = next_call_ns - self.period_ns

    def on_timer(self, next_call_ns: int) -> bool:
        """Return True if the timer's call, now next due at `next_call_ns` [ns], needs a tick.

        The call served the grid point one period before its next call; False when
        an earlier callback already ticked for it (half a period absorbs clock reads).
        A call far behind the served points (the clock moved back) restarts the grid.
        """
        point = next_call_ns - self.period_ns
        ahead = point - self._served
        if -self._resync_ns < ahead < self.period_ns // 2:
            return False
        self._served = point
        return True

    def due(self, now_ns: int) -> bool:
        """Return True (and count it served) if a grid point passed unserved before `now_ns`."""
        behind = now_ns - self._served
        if behind < self.period_ns:
            return False
        # Periods missed entirely are skipped, as an rcl timer skips them.
        self._served += behind - behind % self.period_ns
        return True


class TickTimer:
    """Call `tick` once per period of a node-clock timer, from whichever callback comes first."""

    def __init__(self, node: Node, period_s: float, tick: Callable[[], None]):
        """Start ticking every `period_s` [s] on `node`'s clock (sim time under use_sim_time)."""
        self._node, self._tick = node, tick
        self._timer = node.create_timer(period_s, self._on_timer)
        self._grid = TickGrid(self._timer.timer_period_ns, self._next_call_ns())

    def until_next_ns(self) -> int:
        """Return how long [ns] until the timer's next call."""
        return self._timer.time_until_next_call()

    def tick_if_due(self) -> None:
        """Tick now if the timer's tick is due but queued behind the calling callback."""
        if self._grid.due(self._node.get_clock().now().nanoseconds):
            self._tick()

    def rearm(self) -> None:
        """Make the next tick come one period from now (after a clock jump or switch)."""
        self._timer.reset()
        self._grid.restart(self._next_call_ns())

    def destroy(self) -> None:
        """Stop ticking; idempotent."""
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None

    def _on_timer(self) -> None:
        # An event queued before ticking stopped finds the timer gone.
        if self._timer is not None and self._grid.on_timer(self._next_call_ns()):
            self._tick()

    def _next_call_ns(self) -> int:
        """Return the timer's next call time on the node clock [ns]."""
        return self._node.get_clock().now().nanoseconds + self._timer.time_until_next_call()
