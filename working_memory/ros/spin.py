"""One way every executable of the package runs its node: init, spin, shut down cleanly."""

from __future__ import annotations

import faulthandler
import math
import signal
import threading
import time
from typing import Any, Callable, Iterator

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.clock import Clock
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription

# How often the spin loop looks at the stop flag [s]: the latency of a clean stop.
STOP_POLL_S = 0.1
# [s] spun after the node is finished: its last answers and messages go out
FINISH_LINGER_S = 0.5
# The signals that stop an executable cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A process still running this long after its first stop signal [s] prints every thread's
# stack to stderr (faulthandler), so a stop that hangs says where: `ros2 launch` escalates
# to SIGTERM after 5 s and to SIGKILL after 15 s, which would leave no trace.
STOP_DUMP_S = 8.0


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
    """Stream subscriptions that the owner takes in batches, without waking its executor.

    rclpy's executor wakes for every message and rebuilds its whole wait set each
    time: at 1 kHz that costs a node more than its own work. Leaving a subscription
    out of the wait set is not enough with rmw_fastrtps: its QoS events share the
    reader's listener, so the events of a subscription in a wait set wake it on
    every message. The subscriptions therefore live on a helper node of the same
    context (`<owner>_inputs`, no parameter services, no rosout, no remapping:
    topics come resolved by the owner) that the owner's executor never waits on.
    The owner takes messages with `take` and calls `pace` after each round: it runs
    their QoS event callbacks (message lost, incompatible QoS) when due and says how
    soon to take again, soon while a round left messages queued, seldom when idle.
    """

    # Rounds [s]: while messages are left queued, and when a round emptied the queues
    # (a 1000-deep queue holds 50 ms of a 20 kHz stream); QoS events at most this often.
    BUSY_PERIOD_S = 0.005
    IDLE_PERIOD_S = 0.05
    EVENTS_PERIOD_S = 0.5

    def __init__(self, owner: Node):
        self.node = rclpy.create_node(
            f'{owner.get_name()}_inputs', namespace=owner.get_namespace(),
            context=owner.context, start_parameter_services=False, enable_rosout=False,
            use_global_arguments=False)
        self._group = Polled()
        # Serves the helper's QoS events only: its subscriptions are Polled.
        self._executor = SingleThreadedExecutor(context=owner.context)
        self._executor.add_node(self.node)
        self._backlog = False
        self._events_due = 0.0

    def subscribe(self, msg_type: type, topic: str, qos_profile: Any,
                  event_callbacks: Any, raw: bool = False) -> Subscription:
        """Subscribe the fully resolved `topic`; only `take` takes its messages (bytes if `raw`)."""
        return self.node.create_subscription(msg_type, topic, _never_called, qos_profile,
                                             callback_group=self._group,
                                             event_callbacks=event_callbacks, raw=raw)

    def take(self, subscription: Subscription, budget_s: float) -> Iterator[tuple[Any, dict]]:
        """Yield (msg, message info) queued on `subscription`, oldest first, for `budget_s` [s].

        What is left after the budget stays queued for the next round.
        """
        deadline = time.perf_counter() + budget_s
        handle = subscription.handle
        while True:
            with handle:
                taken = handle.take_message(subscription.msg_type, subscription.raw)
            if taken is None:
                return
            yield taken
            if time.perf_counter() >= deadline:
                self._backlog = True
                return

    def pace(self) -> float:
        """End a round of `take`: run due QoS event callbacks; return when to take again [s]."""
        now = time.monotonic()
        if now >= self._events_due:
            self._events_due = now + self.EVENTS_PERIOD_S
            self._executor.spin_once(timeout_sec=0.0)
        backlog, self._backlog = self._backlog, False
        return self.BUSY_PERIOD_S if backlog else self.IDLE_PERIOD_S

    def destroy(self) -> None:
        """Destroy the subscriptions and the helper node."""
        self._executor.remove_node(self.node)
        self._executor.shutdown()
        self.node.destroy_node()


def seconds_reader(clock: Clock) -> Callable[[], float]:
    """Return a function reading `clock` [s] as `clock.now().nanoseconds * 1e-9` reads it.

    Without the rclpy Time that `now` makes (a few microseconds): the intake reads the
    clock for every message it takes, a thousand times a second. Sim time too (the
    clock's handle follows its ROS time override).
    """
    handle = clock.handle

    def seconds() -> float:
        with handle:
            return handle.get_now().nanoseconds * 1e-9
    return seconds


def _never_called(*_: Any) -> None:
    raise AssertionError('an Intake subscription is taken with Intake.take, never by an executor')


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, *,
             start: Callable[[Node], bool] | None = None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor,
             construction_errors: tuple[type[Exception], ...] = (ParameterException, ValueError),
             finished: Callable[[Node], bool] | None = None) -> int:
    """Spin the node made by `make_node` until SIGINT/SIGTERM or shutdown; return the exit code.

    SIGINT and SIGTERM only set a stop flag: the node is destroyed (a recorder
    closes its bag) while the context is still up, and no KeyboardInterrupt can
    land inside rclpy's C code. A node that cannot be built (one of
    `construction_errors`, e.g. a bad parameter) logs why and exits 2 instead of
    running with a broken contract; `start(node)` returning False (e.g. a failed
    lifecycle autostart) exits 1. A node that says it is `finished` (a lifecycle node
    shut down: finalized) is spun FINISH_LINGER_S longer, so the answer to its last
    transition and its last messages go out, then the process exits 0. Once it
    returns, the process is ending: SIGINT and
    SIGTERM are ignored from then on. A process that has not ended STOP_DUMP_S after
    its first stop signal prints every thread's stack to stderr (the shutdown of rclpy
    and the interpreter after the return included; an exit before that prints nothing).
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()

    def on_stop(*_: Any) -> None:
        if not stop.is_set():
            faulthandler.dump_traceback_later(STOP_DUMP_S)
        stop.set()
    for signum in STOP_SIGNALS:
        signal.signal(signum, on_stop)
    try:
        return _spin(make_node, start, make_executor, construction_errors, stop, finished)
    finally:
        # The process ends now. A terminal's Ctrl-C reaches the node and `ros2 launch`,
        # which sends its own SIGINT: a second signal must not kill the interpreter while
        # it shuts down (Python restores the default handlers then, but not SIG_IGN).
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def _spin(make_node: Callable[[], Node], start: Callable[[Node], bool] | None,
          make_executor: Callable[[], Executor],
          construction_errors: tuple[type[Exception], ...], stop: threading.Event,
          finished: Callable[[Node], bool] | None = None) -> int:
    """Make, start and spin the node until `stop` is set or it is finished; see run_node."""
    try:
        node = make_node()
    except construction_errors as error:
        rclpy.logging.get_logger('working_memory').fatal(str(error))
        rclpy.try_shutdown()
        return 2
    executor = make_executor()
    executor.add_node(node)
    try:
        if start is not None and not start(node):
            return 1
        until = math.inf
        while not stop.is_set() and time.monotonic() < until:
            executor.spin_once(timeout_sec=STOP_POLL_S)
            if until == math.inf and finished is not None and finished(node):
                until = time.monotonic() + FINISH_LINGER_S
    except ExternalShutdownException:
        pass
    finally:
        node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()
    return 0
