"""When the working-memory node ticks: a timer on the node's clock.

The node spins in rclpy's SingleThreadedExecutor, which serves every ready timer before
the other entities of each wait, so a due tick never waits behind a queue of messages
or service requests. The stream inputs come through an `Intake` (ros/intake.py),
which the executor never waits on.
"""

from __future__ import annotations

from typing import Callable

from rclpy.node import Node


class TickTimer:
    """Call `tick` once per period of a node-clock timer (sim time under use_sim_time)."""

    def __init__(self, node: Node, period_s: float, tick: Callable[[], None]):
        """Start ticking every `period_s` [s] on `node`'s clock."""
        self._node, self._tick = node, tick
        self._timer = node.create_timer(period_s, self._on_timer)

    def until_next_ns(self) -> int:
        """Return how long [ns] until the timer's next call."""
        return self._timer.time_until_next_call()

    def rearm(self) -> None:
        """Make the next tick come one period from now (after a clock jump or switch)."""
        self._timer.reset()

    def destroy(self) -> None:
        """Stop ticking; idempotent."""
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None

    def _on_timer(self) -> None:
        # A call queued before ticking stopped finds the timer gone.
        if self._timer is not None:
            self._tick()
