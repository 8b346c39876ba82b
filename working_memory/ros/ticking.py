"""When the working-memory node ticks and takes its stream inputs: the node's scheduling.

The node spins in rclpy's EventsExecutor (`make_executor`), which serves events in
arrival order: a flood of messages or service requests queued before a due timer
would hold the tick back for as long as the backlog lasts. The node's other
callbacks therefore call `TickTimer.tick_if_due` first: when the timer's period has
passed unserved, the tick runs there, and the timer's own event, when it comes,
finds its period served and skips. `TickGrid` is that bookkeeping, pure; times are
the timer clock's [ns].

`board` and `log` come through an `Intake`: taken in batches before each tick and in
rounds between ticks, never one executor wake-up per message (BENCHMARKS.md, "What
each speed mechanism buys": the same subscriptions on the node itself cost about
three times the node's CPU at a 1 kHz board, and a flood is taken five times slower).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.subscription import Subscription


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
    92-94 ticks/s: threads only add GIL hand-overs.
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
