"""One way every executable of the package runs its node: init, spin, shut down cleanly."""

from __future__ import annotations

import faulthandler
import math
import re
import signal
import sys
import time
from typing import Any, Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args

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
    A command line rcl cannot parse (a params file that is not ROS YAML: an empty value,
    a list of mixed types) exits 2 with rcl's reason on one line.
    """
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except RuntimeError as error:   # rcl's RCLError
        print(f'cannot start: {rcl_reason(error)}', file=sys.stderr)
        return 2
    stop = StopFlag()

    def on_stop(*_: Any) -> None:
        if not stop.raised:
            stop.raised = True
            faulthandler.dump_traceback_later(STOP_DUMP_S)
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


class StopFlag:
    """Raised by the first SIGINT/SIGTERM; read by the spin loop in the same (main) thread.

    A plain attribute and no lock: a signal handler can interrupt another one, and a lock
    the first holds (threading.Event.set takes one) would block every later handler
    nested inside it until the interpreter's stack runs out.
    """

    raised = False


def own_arguments(argv: list[str]) -> list[str]:
    """Return `argv` without its ROS arguments; exit 2 with rcl's reason if it cannot parse them."""
    try:
        return remove_ros_args(argv)
    except RuntimeError as error:   # rcl's RCLInvalidROSArgsError: e.g. a bad params file
        print(f'cannot start: {rcl_reason(error)}', file=sys.stderr)
        raise SystemExit(2) from None


def rcl_reason(error: Exception) -> str:
    """Return an rcl error's message without its C source locations and its prefix."""
    text = re.sub(r', at \S+:\d+', '', str(error))
    return text.removeprefix('failed to initialize rcl: ')


def _spin(make_node: Callable[[], Node], start: Callable[[Node], bool] | None,
          make_executor: Callable[[], Executor],
          construction_errors: tuple[type[Exception], ...], stop: StopFlag,
          finished: Callable[[Node], bool] | None = None) -> int:
    """Make, start and spin the node until `stop` is raised or it is finished; see run_node."""
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
        while not stop.raised and time.monotonic() < until:
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
