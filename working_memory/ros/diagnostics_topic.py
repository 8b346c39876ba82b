"""The working-memory node's `/diagnostics`, in every lifecycle state.

A plain publisher (a lifecycle one would be silent while inactive), statuses named
`<fully qualified node name>: <status>` (engine/health.py makes them). A tick
publishes its own; between ticks a steady-clock timer (it runs without /clock too)
calls the node back every idle period, and `stall` says why an active node that
should tick has not.
"""

from __future__ import annotations

import time
from typing import Callable

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from working_memory.engine.config import NodeConfig
from working_memory.engine.health import Status, idle_period_s, stall
from working_memory.ros import qos
from working_memory.ros.conversions import diagnostic_array


class DiagnosticsTopic:
    """Publish a node's statuses on `/diagnostics`; call `on_idle` between ticks."""

    def __init__(self, node: Node, period_s: float, on_idle: Callable[[], None]):
        """Publish for `node`; `on_idle` every idle period of `period_s` (diagnostics_period_s)."""
        self._node, self._on_idle = node, on_idle
        self._publisher = node.create_publisher(DiagnosticArray, '/diagnostics',
                                                qos.diagnostics_qos())
        self._timer = None
        self.restart(period_s)
        self._last_tick_s = 0.0     # [s] steady clock: when the node last ticked or activated
        self._last_tick_ros = 0.0   # [s] node clock: the same moment
        self._trigger_interval_s: float | None = None   # [s] steady: between the last two

    def publish(self, statuses: list[Status], now: float) -> None:
        """Publish `statuses` stamped `now` [s]."""
        self._publisher.publish(diagnostic_array(
            statuses, self._node.get_fully_qualified_name(), now))

    def restart(self, period_s: float) -> None:
        """Call `on_idle` every idle period of the diagnostics period `period_s` [s] from now."""
        self.destroy()
        self._timer = self._node.create_timer(idle_period_s(period_s), self._on_idle,
                                              clock=Clock(clock_type=ClockType.STEADY_TIME))

    def ticked(self, now: float, activated: bool = False) -> None:
        """Note a tick (or an activation: a stall counts from there) at node time `now` [s]."""
        if activated:
            self._trigger_interval_s = None
        self._last_tick_s, self._last_tick_ros = time.monotonic(), now

    def triggered(self) -> None:
        """Note a trigger message: its interval since the last tick tells a slow trigger."""
        self._trigger_interval_s = time.monotonic() - self._last_tick_s

    def stall(self, config: NodeConfig, now: float, ros_time: bool) -> str | None:
        """Return why an active node has not ticked for a while, else None.

        `now` [s] is the node clock's time, `ros_time` whether it follows /clock.
        """
        return stall(time.monotonic() - self._last_tick_s,
                     None if config.trigger_topic else config.tick_period_s,
                     idle_period_s(config.diagnostics_period_s), config.trigger_topic,
                     self._trigger_interval_s, now - self._last_tick_ros if ros_time else None)

    def destroy(self) -> None:
        """Stop the idle timer (the publisher goes with the node); idempotent."""
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
