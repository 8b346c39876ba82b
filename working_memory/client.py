"""What planner and executor authors use: one cabin's frozen pack per tick, and the WM services.

    client = WorkingMemoryClient(node, 'planner', on_pack=decide)
    view = client.latest()            # PackView or None before the first frame
    pack = client.assemble(tick=42)   # blocking service call, see the threading note
    why = client.explain('safety:zone/high_voltage')

Part of the ROS adapter layer: frame and pack fields are read in
ros/conversions.py ("frames in"); this module owns the ROS entities and reads only
the service replies' flat fields (success, message, present, reason, detail).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Callable

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from working_memory.core.pack_view import PackView
from working_memory.core.windows import Joined, WINDOWS_KEPT, WindowJoin
from working_memory.msg import ContextFrame, MapWindow
from working_memory.ros.conversions import (cabin_pack_from_frame, frame_cabins,
                                            map_window_from_msg, pack_view_from_msg)
from working_memory.ros.qos import frame_qos, latched_qos
from working_memory.srv import Assemble, Explain


class WorkingMemoryError(RuntimeError):
    """The working memory answered with an error (unknown cabin, tick out of range...)."""


class WorkingMemoryTimeout(WorkingMemoryError, TimeoutError):
    """A service was not available, or did not answer, within the timeout."""


@dataclass(frozen=True)
class Explanation:
    """Why `key` is (or is not) in `cabin`'s pack of `tick` (0: the latest tick)."""

    cabin: str
    key: str
    tick: int
    present: bool
    # PRESENT, NEVER_SEEN, STALE, EVICTED, OUT_OF_SCOPE, INJECTED_DROP or NOT_IN_MANIFEST.
    reason: str
    detail: str


class WorkingMemoryClient:
    """Read one cabin's pack of every tick, and call the working memory's services.

    Subscriptions: `<namespace>/frame` (ContextFrame, frame QoS: reliable,
    transient local, keep last 1 — a late client gets the current frame at once) and
    `<namespace>/<cabin>/window` (MapWindow, reliable, transient local, keep last 4).
    Service clients: `<namespace>/assemble`, `<namespace>/explain`.

    Map windows by reference (the node's `map_windows: reference`): a pack that names
    its window by digest is held until that window has arrived on the cabin's window
    topic, then handed out with it; a window whose cells do not hash to its digest is
    rejected (logged, counted in `rejected_windows`), never used. At most 16 packs wait;
    a pack whose window never comes is dropped with an error log naming the digest and
    the topic (`dropped_packs`), as is a waiting pack once a newer one is complete.

    `latest()` may be called from any thread. `on_pack(view)` runs in the frame
    subscription's callback (the node's default callback group) once per new
    (tick, digest); a frame that cannot be read, or has no pack for this cabin,
    is logged and skipped, and `latest()` keeps the previous pack.

    Threading: `assemble()` and `explain()` block the calling thread until the
    answer arrives or the timeout passes. The answer is delivered by the node's
    executor through a callback group of the client's own, so spin the node with
    a MultiThreadedExecutor (then calling from a callback is fine), or call from
    a thread other than the one spinning it. Called from a callback of a
    single-threaded executor the answer cannot arrive: the call raises
    WorkingMemoryTimeout after the timeout instead of deadlocking.
    """

    def __init__(self, node: Node, cabin: str, namespace: str = '/working_memory',
                 on_pack: Callable[[PackView], None] | None = None, timeout_s: float = 2.0):
        if not cabin:
            raise ValueError('cabin: must not be empty')
        if not timeout_s > 0.0:
            raise ValueError(f'timeout_s: must be > 0 s, got {timeout_s!r}')
        self._node = node
        self._cabin = cabin
        self._on_pack = on_pack
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._latest: PackView | None = None
        self._join: WindowJoin[PackView] = WindowJoin()
        self.rejected_windows = 0
        self.dropped_packs = 0
        namespace = namespace.rstrip('/')
        self._window_topic = f'{namespace}/{cabin}/window'
        self._window_sub = node.create_subscription(
            MapWindow, self._window_topic, self._on_window, latched_qos(WINDOWS_KEPT))
        self._frame_sub = node.create_subscription(
            ContextFrame, f'{namespace}/frame', self._on_frame, frame_qos())
        services = MutuallyExclusiveCallbackGroup()
        self._assemble = node.create_client(Assemble, f'{namespace}/assemble',
                                            callback_group=services)
        self._explain = node.create_client(Explain, f'{namespace}/explain',
                                           callback_group=services)

    @property
    def cabin(self) -> str:
        """The cabin whose pack this client reads."""
        return self._cabin

    @property
    def waiting(self) -> int:
        """How many packs wait for the map window they name."""
        return self._join.held

    def latest(self) -> PackView | None:
        """Return the newest pack of this cabin, None before the first frame."""
        with self._lock:
            return self._latest

    def assemble(self, tick: int = 0, timeout_s: float | None = None) -> PackView:
        """Return this cabin's pack of `tick` (0: the latest) from the Assemble service.

        The view's `frame_digest` is None: the service returns the pack alone.
        Raises WorkingMemoryError when the node refuses (its message says why),
        WorkingMemoryTimeout when it does not answer within `timeout_s` [s].
        """
        response = self._call(self._assemble, Assemble.Request(cabin=self._cabin, tick=tick),
                              timeout_s)
        try:
            return pack_view_from_msg(response.pack, frame_digest=None)
        except ValueError as error:
            raise WorkingMemoryError(f'{self._assemble.service_name}: {error}') from None

    def explain(self, key: str, tick: int = 0, timeout_s: float | None = None) -> Explanation:
        """Return why `key` is or is not in this cabin's pack of `tick` (0: the latest).

        Raises WorkingMemoryError / WorkingMemoryTimeout like `assemble`.
        """
        response = self._call(self._explain,
                              Explain.Request(cabin=self._cabin, key=key, tick=tick), timeout_s)
        return Explanation(cabin=self._cabin, key=key, tick=tick, present=response.present,
                           reason=response.reason, detail=response.detail)

    def destroy(self) -> None:
        """Release the subscription and service clients."""
        self._node.destroy_subscription(self._frame_sub)
        self._node.destroy_subscription(self._window_sub)
        self._node.destroy_client(self._assemble)
        self._node.destroy_client(self._explain)

    def _call(self, client, request, timeout_s: float | None):
        """Call a service and wait for the answer without spinning (see the class docstring)."""
        timeout_s = self._timeout_s if timeout_s is None else timeout_s
        name = client.service_name
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout_s):
            raise WorkingMemoryTimeout(f'{name}: service not available within {timeout_s:.1f} s')
        answered = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: answered.set())
        # The answer may have arrived before the callback was added.
        if not future.done() and not answered.wait(timeout_s):
            client.remove_pending_request(future)
            future.cancel()
            raise WorkingMemoryTimeout(
                f'{name}: no answer within {timeout_s:.1f} s (is the node spun by another '
                'thread or a MultiThreadedExecutor? see WorkingMemoryClient)')
        error = future.exception()
        if error is not None:
            raise WorkingMemoryError(f'{name}: {error}') from error
        response = future.result()
        if not response.success:
            raise WorkingMemoryError(f'{name} (cabin {request.cabin!r}, tick {request.tick}): '
                                     f'{response.message}')
        return response

    def _on_frame(self, msg: ContextFrame) -> None:
        """Keep this cabin's pack of a new frame and hand it to `on_pack`."""
        try:
            view = cabin_pack_from_frame(msg, self._cabin)
        except ValueError as error:
            self._node.get_logger().error(f'frame of tick {msg.tick} skipped: {error}')
            return
        if view is None:
            self._node.get_logger().error(
                f'frame of tick {msg.tick} has no pack for cabin {self._cabin!r} '
                f'(cabins: {", ".join(frame_cabins(msg)) or "none"})', throttle_duration_sec=10.0)
            return
        self._join.frame(view, {} if view.map_window is not None
                         else {self._cabin: view.map_window_digest})
        self._release()

    def _on_window(self, msg: MapWindow) -> None:
        """Keep a window of this cabin whose cells match its digest; hand out packs it completes."""
        try:
            cabin, digest, window = map_window_from_msg(msg)
            if cabin != self._cabin:
                raise ValueError(f'window of cabin {cabin!r} on {self._window_topic}')
            self._join.window(cabin, digest, window)
        except ValueError as error:   # WindowMismatch is one
            self.rejected_windows += 1
            self._node.get_logger().error(f'{self._window_topic}: rejected: {error}',
                                          throttle_duration_sec=1.0)
            return
        self._release()

    def _release(self) -> None:
        """Hand out the packs whose windows are all here; log those given up on."""
        for out in self._join.release():
            if isinstance(out, Joined):
                view = out.payload
                if self._cabin in out.windows:
                    view = dataclasses.replace(view, map_window=out.windows[self._cabin])
                self._deliver(view)
            else:
                self.dropped_packs += 1
                self._node.get_logger().error(
                    f'pack of tick {out.payload.tick} dropped: its map window '
                    f'{out.missing.get(self._cabin)!r} never arrived on {self._window_topic} '
                    f'({out.why})', throttle_duration_sec=1.0)

    def _deliver(self, view: PackView) -> None:
        with self._lock:
            previous, self._latest = self._latest, view
        if previous is not None and (previous.tick, previous.frame_digest) == (view.tick,
                                                                               view.frame_digest):
            return
        if self._on_pack is not None:
            self._on_pack(view)
