"""One way every executable of the package runs its node: init, spin, shut down cleanly."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any, Callable, Iterator

import rclpy
from rclpy.callback_groups import CallbackGroup
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription

# How often the spin loop looks at the stop flag [s]: the latency of a clean stop.
STOP_POLL_S = 0.1


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
    The owner takes messages with `drain` and lets `serve_events` run their QoS
    event callbacks (message lost, incompatible QoS) from time to time.
    """

    def __init__(self, owner: Node):
        self.node = rclpy.create_node(
            f'{owner.get_name()}_inputs', namespace=owner.get_namespace(),
            context=owner.context, start_parameter_services=False, enable_rosout=False,
            use_global_arguments=False)
        self._group = Polled()
        # Serves the helper's QoS events only: its subscriptions are Polled.
        self._executor = SingleThreadedExecutor(context=owner.context)
        self._executor.add_node(self.node)

    def subscribe(self, msg_type: type, topic: str, qos_profile: Any,
                  event_callbacks: Any) -> Subscription:
        """Subscribe the fully resolved `topic`; nothing runs its callback but `drain`."""
        return self.node.create_subscription(msg_type, topic, _never_called, qos_profile,
                                             callback_group=self._group,
                                             event_callbacks=event_callbacks)

    def serve_events(self) -> None:
        """Run the QoS event callbacks that are due, without waiting."""
        self._executor.spin_once(timeout_sec=0.0)

    def destroy(self) -> None:
        """Destroy the subscriptions and the helper node."""
        self._executor.remove_node(self.node)
        self._executor.shutdown()
        self.node.destroy_node()


def _never_called(*_: Any) -> None:
    raise AssertionError('an Intake subscription is taken with drain, never by an executor')


def drain(subscription: Subscription, budget_s: float) -> Iterator[tuple[Any, dict]]:
    """Yield (msg, message info) queued on `subscription`, oldest first, for `budget_s` [s].

    What is left after the budget stays queued for the next drain.
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
            return


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, *,
             start: Callable[[Node], bool] | None = None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor,
             construction_errors: tuple[type[Exception], ...] = (ParameterException, ValueError),
             ) -> int:
    """Spin the node made by `make_node` until SIGINT/SIGTERM or shutdown; return the exit code.

    SIGINT and SIGTERM only set a stop flag: the node is destroyed (a recorder
    closes its bag) while the context is still up, and no KeyboardInterrupt can
    land inside rclpy's C code. A node that cannot be built (one of
    `construction_errors`, e.g. a bad parameter) logs why and exits 2 instead of
    running with a broken contract; `start(node)` returning False (e.g. a failed
    lifecycle autostart) exits 1.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
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
        while not stop.is_set():
            executor.spin_once(timeout_sec=STOP_POLL_S)
    except ExternalShutdownException:
        pass
    finally:
        node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()
    return 0
