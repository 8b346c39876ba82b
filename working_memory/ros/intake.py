"""The node's stream inputs, taken in batches: `Intake`.

Every input topic of the node comes through an `Intake`: taken in batches before each
tick and in rounds between ticks, never one executor wake-up per message (BENCHMARKS.md,
"What each speed mechanism buys": the same subscriptions on the node itself cost about
three times the node's CPU at a 1 kHz board, and a flood is taken five times slower).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.subscription import Subscription


class Polled(CallbackGroup):
    """A callback group whose subscriptions an executor never runs: their owner takes them."""

    def can_execute(self, entity: Any) -> bool:
        """Return False for a subscription (left out of wait sets), True otherwise."""
        return not isinstance(entity, Subscription)

    def beginning_execution(self, entity: Any) -> bool:
        """Let anything but a subscription run, concurrently if the executor wants."""
        return self.can_execute(entity)

    def ending_execution(self, entity: Any) -> None:
        """Nothing to release."""


class Intake:
    """Stream subscriptions their owner takes in batches, without waking its executor.

    rclpy's executors wake for every message (the single-threaded one rebuilds its
    whole wait set each time): at 1 kHz that costs a node more than its own work.
    Leaving a subscription out of the wait set is not enough with rmw_fastrtps: its QoS
    events share the reader's listener, so the events of a subscription in a wait set
    wake it on every message; and the EventsExecutor cannot hand a callback the message
    info that counts lost updates. The subscriptions therefore live on a helper node of
    the same context, `<owner>_inputs` (no parameter services, no rosout, no
    remapping: topics come resolved by the owner), that the owner's executor never
    waits on. `ros2 node list` shows it; `ros2 node info /<owner>_inputs` lists them.

    The owner's steady-clock timer calls `on_round` (in every configured state); each
    round takes what is queued for at most ROUND_BUDGET_S [s] per topic (half the time
    to the next tick, if sooner), runs the subscriptions' QoS event callbacks (message
    lost, incompatible QoS) when due and sets when the next round comes: soon while a
    round left messages queued, seldom when idle. A tick takes what is queued first,
    for at most TICK_BUDGET_S [s] per topic.
    """

    # Rounds [s]: while messages are left queued, and when a round emptied the queues
    # (a 1000-deep queue holds 50 ms of a 20 kHz stream); QoS events at most this often.
    BUSY_PERIOD_S = 0.005
    IDLE_PERIOD_S = 0.05
    EVENTS_PERIOD_S = 0.5
    ROUND_BUDGET_S = 0.008
    TICK_BUDGET_S = 0.002

    def __init__(self, owner: Node, on_round: Callable[[], None]):
        """Make the helper node of `owner` and `owner`'s round timer, which calls `on_round`."""
        self.node = rclpy.create_node(
            f'{owner.get_name()}_inputs', namespace=owner.get_namespace(),
            context=owner.context, start_parameter_services=False, enable_rosout=False,
            use_global_arguments=False)
        self._owner = owner
        self._group = Polled()
        # Serves the helper's QoS events only: its subscriptions are Polled.
        self._executor = SingleThreadedExecutor(context=owner.context)
        self._executor.add_node(self.node)
        self._taken: list[tuple[Subscription, Callable[[Any, dict], None]]] = []
        self._backlog = False
        self._events_due = 0.0
        self._timer = owner.create_timer(self.IDLE_PERIOD_S, on_round,
                                         clock=Clock(clock_type=ClockType.STEADY_TIME))

    def subscribe(self, msg_type: type, topic: str, callback: Callable[[Any, dict], None],
                  qos_profile: Any, event_callbacks: Any, raw: bool = False) -> None:
        """Subscribe `topic` (resolved by the owner); `callback(msg, info)` gets each message."""
        subscription = self.node.create_subscription(
            msg_type, self._owner.resolve_topic_name(topic), _never_called, qos_profile,
            callback_group=self._group, event_callbacks=event_callbacks, raw=raw)
        self._taken.append((subscription, callback))

    def take(self, budget_s: float) -> None:
        """Hand what each subscription queued to its callback, oldest first, for `budget_s` [s].

        What is left after a topic's budget stays queued for the next round.
        """
        for subscription, callback in self._taken:
            deadline = time.perf_counter() + budget_s
            handle = subscription.handle
            while True:
                with handle:
                    taken = handle.take_message(subscription.msg_type, subscription.raw)
                if taken is None:
                    break
                callback(*taken)
                if time.perf_counter() >= deadline:
                    self._backlog = True
                    break

    def round(self, until_tick_ns: int | None) -> None:
        """Take a round between ticks (the next one `until_tick_ns` away, None: no timer)."""
        budget = self.ROUND_BUDGET_S
        if until_tick_ns is not None:
            budget = min(budget, 0.5e-9 * until_tick_ns)
        self.take(budget)
        now = time.monotonic()
        if now >= self._events_due:
            self._events_due = now + self.EVENTS_PERIOD_S
            self._executor.spin_once(timeout_sec=0.0)
        backlog, self._backlog = self._backlog, False
        period_ns = round((self.BUSY_PERIOD_S if backlog else self.IDLE_PERIOD_S) * 1e9)
        if self._timer.timer_period_ns != period_ns:
            self._timer.timer_period_ns = period_ns

    def destroy(self) -> None:
        """Destroy the round timer, the subscriptions and the helper node."""
        self._owner.destroy_timer(self._timer)
        self._executor.remove_node(self.node)
        self._executor.shutdown()
        self.node.destroy_node()


def _never_called(*_: Any) -> None:
    raise AssertionError('an Intake subscription is taken by Intake.take, never by an executor')
