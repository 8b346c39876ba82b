"""One way every executable of the package runs its node: init, spin, shut down cleanly."""

from __future__ import annotations

from typing import Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, *,
             start: Callable[[Node], bool] | None = None,
             make_executor: Callable[[], Executor] = SingleThreadedExecutor,
             construction_errors: tuple[type[Exception], ...] = (ParameterException, ValueError),
             ) -> int:
    """Spin the node made by `make_node` until Ctrl-C or shutdown; return the exit code.

    A node that cannot be built (one of `construction_errors`, e.g. a bad parameter)
    logs why and exits 2 instead of running with a broken contract; `start(node)`
    returning False (e.g. a failed lifecycle autostart) exits 1.
    """
    rclpy.init(args=args)
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
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
