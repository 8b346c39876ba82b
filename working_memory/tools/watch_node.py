"""wm-watch: a live terminal view of a working-memory node, redrawn on every frame.

    wm-watch                              every cabin of /working_memory, live (Ctrl-C quits)
    wm-watch --cabin planner              one cabin
    wm-watch --once                       print one frame and exit (for scripts)
    wm-watch --namespace /robot1/working_memory   another node (or remap with --ros-args -r)

The frame arrives latched (frame QoS, as WorkingMemoryClient reads it), so the first
screen shows at once. The view model is `tools/watch.py`; this module only
subscribes, converts messages to records (`tools/recording.py`) and draws.
Exit code 0, 1 when no frame arrived within --timeout (--once) or the cabin is
unknown, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rich.console import Console
from rich.live import Live
from rich.text import Text

from working_memory.msg import ContextFrame, Eviction, EvictionBatch, LogEvent, MissingItem
from working_memory.ros.qos import diagnostics_qos, frame_qos, stream_qos
from working_memory.ros.spin import own_arguments
from working_memory.tools.bag import EVICTION_TYPE
from working_memory.tools.recording import (EVENT_TYPE, EvictionRecord, MISSING_TYPE, STATUS_TYPE,
                                            diagnostic_records, eviction_record,
                                            frame_record)
from working_memory.tools.watch import WatchState, render

REDRAW_S = 1.0     # [s] wall time between redraws without a new frame (resizes, waiting)
SETTLE_S = 1.5     # [s] --once waits this long after the frame for the capacity status
SPIN_S = 0.05


class MessageConstants:
    """Constant names of the message types a frame, an eviction and a status carry."""

    def __init__(self) -> None:
        classes = {EVENT_TYPE: LogEvent, MISSING_TYPE: MissingItem, EVICTION_TYPE: Eviction,
                   STATUS_TYPE: DiagnosticStatus}
        self._names = {msgtype: {self._number(getattr(cls, name)): name for name in dir(cls)
                                 if name.isupper() and isinstance(getattr(cls, name),
                                                                  (int, bytes))}
                       for msgtype, cls in classes.items()}

    @staticmethod
    def _number(value: int | bytes) -> int:
        # `byte` fields and constants (a DiagnosticStatus level) arrive as bytes in rclpy.
        return value[0] if isinstance(value, bytes) else int(value)

    def name(self, msgtype: str, value: int | bytes) -> str:
        """Return the constant's name, or the number as text."""
        number = self._number(value)
        return self._names.get(msgtype, {}).get(number, str(number))


def eviction_records(msg: EvictionBatch, names: MessageConstants) -> list[EvictionRecord]:
    """Return the records of one ~/evictions message: a tick's EvictionBatch."""
    return [eviction_record(eviction, names) for eviction in msg.evictions]


EVICTIONS_MSG = EvictionBatch


class WatchNode(Node):
    """Subscribe to one working-memory node's frame, evictions and /diagnostics.

    Subscriptions:
        `<namespace>/frame` (ContextFrame, frame QoS: latched), `<namespace>/evictions`
        (EvictionBatch, reliable keep last 100), `/diagnostics` (DiagnosticArray).
    `changed` is set whenever a new frame arrived; read `state` between spins.
    """

    def __init__(self, namespace: str = '/working_memory', **kwargs) -> None:
        super().__init__('wm_watch', **kwargs)
        namespace = '/' + namespace.strip('/')
        self.frame_topic = f'{namespace}/frame'
        self.state = WatchState(node_name=namespace)
        self.changed = threading.Event()
        self._names = MessageConstants()
        self.create_subscription(ContextFrame, self.frame_topic, self._on_frame, frame_qos())
        self.create_subscription(EVICTIONS_MSG, f'{namespace}/evictions', self._on_evictions,
                                 stream_qos())
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics,
                                 diagnostics_qos())

    def _on_frame(self, msg: ContextFrame) -> None:
        if self.state.add_frame(frame_record(msg, time.time(), self._names)):
            self.changed.set()

    def _on_evictions(self, msg) -> None:
        self.state.add_evictions(eviction_records(msg, self._names))

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        self.state.add_diagnostics(diagnostic_records(msg, time.time(), self._names))


def parser() -> argparse.ArgumentParser:
    """Return the command-line parser; ROS arguments after --ros-args are removed first."""
    cli = argparse.ArgumentParser(
        prog='wm-watch', description="Live view of a working-memory node: every cabin's "
        'items, missing items, evictions, capacity and alarms, redrawn on every frame.')
    cli.add_argument('--namespace', default='/working_memory',
                     help="the node's namespace + name, whose frame/evictions it reads "
                          '(default: /working_memory)')
    cli.add_argument('--cabin', help='show only this cabin')
    cli.add_argument('--once', action='store_true', help='print one frame and exit')
    cli.add_argument('--timeout', type=float, default=10.0,
                     help='--once: give up after this many seconds without a frame (default 10)')
    return cli


def screen(node: WatchNode, console: Console, cabin: str | None, fit: bool):
    """Return the current screen; an unknown cabin is shown as the error it is."""
    try:
        model = node.state.model(cabin)
    except KeyError as error:
        return Text(str(error.args[0]), style='bold red')
    return render(model, width=console.size.width, height=console.size.height if fit else None,
                  waiting_for=node.frame_topic)


def spin_until(executor, done, stop: threading.Event, timeout_s: float) -> bool:
    """Spin until `done()` or `stop` or `timeout_s` [s] of wall time; return done()."""
    deadline = time.monotonic() + timeout_s
    while not done() and not stop.is_set() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=SPIN_S)
    return done()


def run_once(node: WatchNode, executor, console: Console, args, stop: threading.Event) -> int:
    """Print the first frame received (with the capacity status when it comes soon) and exit."""
    if not spin_until(executor, lambda: node.state.frame is not None, stop, args.timeout):
        print(f'wm-watch: no frame on {node.frame_topic} within {args.timeout:.0f} s '
              '(is the node configured and active?)', file=sys.stderr)
        return 1
    spin_until(executor, lambda: node.state.capacity is not None, stop, SETTLE_S)
    try:
        node.state.model(args.cabin)
    except KeyError as error:
        print(f'wm-watch: {error.args[0]}', file=sys.stderr)
        return 1
    console.print(screen(node, console, args.cabin, fit=False))
    return 0


def run_live(node: WatchNode, executor, console: Console, args, stop: threading.Event) -> int:
    """Redraw on every new frame (and every REDRAW_S) until Ctrl-C."""
    with Live(screen(node, console, args.cabin, True), console=console, screen=True,
              auto_refresh=False, redirect_stdout=False, redirect_stderr=False) as live:
        drawn = time.monotonic()
        while not stop.is_set():
            executor.spin_once(timeout_sec=SPIN_S)
            if node.changed.is_set() or time.monotonic() - drawn >= REDRAW_S:
                node.changed.clear()
                live.update(screen(node, console, args.cabin, True), refresh=True)
                drawn = time.monotonic()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run wm-watch with `argv` (default: the command line); return the exit code."""
    argv = sys.argv if argv is None else ['wm-watch', *argv]
    try:
        args = parser().parse_args(own_arguments(argv)[1:])
    except SystemExit as exit_request:  # argparse exits on --help and on usage errors
        return int(exit_request.code or 0)
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = WatchNode(args.namespace)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    console = Console()
    try:
        return (run_once if args.once else run_live)(node, executor, console, args, stop)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
