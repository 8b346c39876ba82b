"""What robot programmers use: packs to read, the WM services, and writers of the truth.

    client = WorkingMemoryClient(node, 'planner', on_pack=decide)
    view = client.latest()            # PackView; None before the first frame or when silent
    pack = client.assemble(tick=42)   # blocking service call, see the threading note
    why = client.explain('safety:zone/high_voltage')

    board = BoardWriter(node)         # the state board's writer side
    board.set('goal:deliver', {'x': 16.0, 'y': 3.0}, importance=1.0, tags=['delivery'])
    log = EventLogger(node)           # the event log's
    log.log('CONSTRAINT', 'safety:zone/high_voltage', {'reason': 'live wires'})

Part of the ROS adapter layer: frame and pack fields are read in
ros/conversions.py ("frames in"); this module owns the ROS entities and reads only
the service replies' flat fields (success, message, present, reason, detail).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import secrets
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile

from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.pack_view import PackView
from working_memory.core.windows import Joined, WINDOWS_KEPT, WindowJoin
from working_memory.engine.inputs import MAX_VALUE_BYTES
from working_memory.msg import (BoardUpdate, ContextFrame, LogEvent, MapWindow, Resync,
                                ResyncAnswer)
from working_memory.ros.conversions import (board_update_msg, cabin_pack_from_frame, frame_cabins,
                                            json_text, log_event_msg, map_window_from_msg,
                                            pack_view_from_msg, resync_answer_msg,
                                            seconds_from_time)
from working_memory.ros.qos import frame_qos, input_qos, latched_qos
from working_memory.srv import Assemble, Explain

# A pack older than this many tick periods is not handed out as current (max_age_s None).
STALE_AFTER_TICKS = 3
# The age bound [s] before two frames have told the tick period, and the least one: a
# frame is late by a few milliseconds of delivery whatever the tick rate.
FIRST_MAX_AGE_S = 1.0
MIN_MAX_AGE_S = 0.5
# Resync requests a writer remembers having answered; node starts a client remembers as gone.
_ANSWERED_KEPT = 64
_STARTS_KEPT = 16
# New frames of a node start replaced by another that make it a live twin, not the last
# frames of a restarted node still in flight.
TWIN_AFTER_FRAMES = 3
# Answers a writer keeps latched: two nodes sharing the writers each find theirs.
_ANSWERS_LATCHED = 8


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

    A silent working memory (a node killed, stalled or cleaned up) is not read as
    current: `latest()` returns None once its pack is older than `max_age_s` on the
    client node's clock (None: STALE_AFTER_TICKS tick periods, as measured between
    the last frames; `math.inf`: never, for a node ticking on a trigger). `last()`
    returns the newest pack whatever its age, `age()` how old it is. A restarted
    node's packs (a new `start_id`, ticks from 1 again) replace the old node's; a
    late copy of the old node's last latched frame never does. Two live nodes under
    one name (a stale process, a second launch: their frames interleave) are not
    mixed: the client keeps the start it took last and drops the other's frames,
    logging an error naming both starts once the other has sent TWIN_AFTER_FRAMES
    new frames (`twin_frames` counts those dropped).

    Threading: `assemble()` and `explain()` block the calling thread until the
    answer arrives or the timeout passes. The answer is delivered by the node's
    executor through a callback group of the client's own, so spin the node with
    a MultiThreadedExecutor (then calling from a callback is fine), or call from
    a thread other than the one spinning it. Called from a callback of a
    single-threaded executor the answer cannot arrive: the call raises
    WorkingMemoryTimeout after the timeout instead of deadlocking.
    """

    def __init__(self, node: Node, cabin: str, namespace: str = '/working_memory',
                 on_pack: Callable[[PackView], None] | None = None, timeout_s: float = 2.0,
                 max_age_s: float | None = None):
        if not cabin:
            raise ValueError('cabin: must not be empty')
        if not timeout_s > 0.0:
            raise ValueError(f'timeout_s: must be > 0 s, got {timeout_s!r}')
        if max_age_s is not None and not max_age_s > 0.0:
            raise ValueError(f'max_age_s: must be > 0 s (math.inf: never stale), '
                             f'got {max_age_s!r}')
        self._node = node
        self._max_age_s = max_age_s
        self._period_s: float | None = None   # between the last two frames of one node
        # {node start gone or replaced: [its last tick, its new frames since]}
        self._retired: collections.OrderedDict[str, list[int]] = collections.OrderedDict()
        self._cabin = cabin
        self._on_pack = on_pack
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._latest: PackView | None = None
        self._join: WindowJoin[PackView] = WindowJoin()
        self.rejected_windows = 0
        self.dropped_packs = 0
        self.twin_frames = 0
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
        """Return the newest pack of this cabin; None before the first frame or when too old.

        Too old: older than the age bound (see the class docstring), the working memory
        silent. Hold, as for a missing pack.
        """
        with self._lock:
            view = self._latest
        if view is None:
            return None
        age = self.age()
        return None if age is not None and age > self.max_age_s else view

    def last(self) -> PackView | None:
        """Return the newest pack of this cabin whatever its age; None before the first frame."""
        with self._lock:
            return self._latest

    def age(self) -> float | None:
        """Return how old the newest pack is [s] on the client node's clock; None without one."""
        with self._lock:
            view = self._latest
        if view is None:
            return None
        return max(0.0, self._node.get_clock().now().nanoseconds * 1e-9 - view.stamp)

    @property
    def max_age_s(self) -> float:
        """The age [s] beyond which `latest()` does not hand out the newest pack."""
        if self._max_age_s is not None:
            return self._max_age_s
        period = self._period_s
        if period is None:
            return FIRST_MAX_AGE_S
        return max(MIN_MAX_AGE_S, STALE_AFTER_TICKS * period)

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
            previous = self._latest
            if previous is not None and view.start_id != previous.start_id:
                if view.start_id in self._retired:
                    self._other_start(view, previous)
                    return
                self._retired[previous.start_id] = [previous.tick, 0]   # a new node start
                if len(self._retired) > _STARTS_KEPT:
                    self._retired.popitem(last=False)
                self._period_s = None
            elif previous is not None:
                if view.tick <= previous.tick:
                    return   # a frame seen already
                self._period_s = (view.stamp - previous.stamp) / (view.tick - previous.tick)
            self._latest = view
        if self._on_pack is not None:
            self._on_pack(view)

    def _other_start(self, view: PackView, current: PackView) -> None:
        """Drop a frame of a node start replaced; say so once it proves a live twin."""
        seen = self._retired[view.start_id]
        if view.tick <= seen[0]:
            return   # a late copy of a frame seen
        seen[0] = view.tick
        seen[1] += 1
        if seen[1] < TWIN_AFTER_FRAMES:
            return   # the last frames of a restarted node, still in flight
        self.twin_frames += 1
        if seen[1] == TWIN_AFTER_FRAMES:
            self._node.get_logger().error(
                f'{self._frame_sub.topic_name}: two working memories publish under one name: '
                f'node start {view.start_id!r} (tick {view.tick}) beside {current.start_id!r} '
                f'(tick {current.tick}), which this client keeps; the frames of '
                f'{view.start_id!r} are dropped, not mixed (stop one of the two)')


class _Writer:
    """What a board writer and an event logger share: their answers to a resync request.

    A working-memory node that starts from an empty memory asks on `resync/request`
    (msg/Resync.msg); the writer answers each node start (`start_id`) once on
    `resync/answer` (ResyncAnswer: reliable, transient local, the last 8 kept), so the node
    gets the answer whenever it matches the writer, also when the answer went out before.
    The answers run in the node's executor: spin the writer's node. Every method may be
    called from any thread (a lock guards what the writer holds).

    Where it answers: `resync/` beside the topic it writes, as resolved (remappings
    included), where the working memory that takes the topic asks: `/robot1/board`
    answers on `/robot1/resync/*` whatever the writer node's namespace. A
    `resync_namespace` given says otherwise (a relative one resolves in the writer
    node's namespace), for a node whose input is remapped away from its namespace.
    """

    def __init__(self, node: Node, msg_type: type, topic: str, resync_namespace: str | None,
                 qos_profile: QoSProfile | None):
        self._node = node
        self._name = f'{node.get_fully_qualified_name()}#{secrets.token_hex(4)}'
        self._answered: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._publisher = node.create_publisher(msg_type, topic, qos_profile or input_qos())
        if resync_namespace is None:
            resync_namespace = self._publisher.topic_name.rpartition('/')[0] + '/resync'
        namespace = resync_namespace.rstrip('/')
        self._answers = node.create_publisher(ResyncAnswer, f'{namespace}/answer',
                                              latched_qos(_ANSWERS_LATCHED))
        self._requests = node.create_subscription(Resync, f'{namespace}/request',
                                                  self._on_request, latched_qos(_ANSWERED_KEPT))

    @property
    def subscription_count(self) -> int:
        """How many subscriptions the writer's topic has matched."""
        return self._publisher.get_subscription_count()

    def destroy(self) -> None:
        """Release the publishers and the resync subscription."""
        self._node.destroy_subscription(self._requests)
        self._node.destroy_publisher(self._answers)
        self._node.destroy_publisher(self._publisher)

    def _on_request(self, request: Resync) -> None:
        if request.start_id in self._answered:
            return
        with self._lock:
            entries, events = self._truth(request)
        self._answers.publish(resync_answer_msg(request, self._name, entries, events,
                                                self._now()))
        self._answered[request.start_id] = None   # once it went out
        if len(self._answered) > _ANSWERED_KEPT:
            self._answered.popitem(last=False)

    def _truth(self, request: Resync) -> tuple[list[BoardEntry], list[Event]]:
        raise NotImplementedError

    def _now(self) -> float:
        return self._node.get_clock().now().nanoseconds * 1e-9

    def _stamp(self, stamp: Any) -> float:
        """Return a stamp given as seconds, an rclpy Time or a message's Time [s]; None: now."""
        if stamp is None:
            return self._now()
        if hasattr(stamp, 'nanoseconds'):
            return stamp.nanoseconds * 1e-9
        if hasattr(stamp, 'sec') and hasattr(stamp, 'nanosec'):
            return seconds_from_time(stamp)
        try:
            return float(stamp)
        except (TypeError, ValueError):
            raise ValueError(f'stamp: seconds, an rclpy Time or a builtin_interfaces Time, '
                             f'got {stamp!r}') from None


class BoardWriter(_Writer):
    """Write the state board: set and remove keys, and answer a restarted working memory.

    Publishes BoardUpdate on `topic` (by default reliable, volatile, keep last 1000: the
    node's input QoS) and keeps its standing state, the entries it set and did not remove.
    To a working memory that starts from an empty memory it answers with its whole
    standing state (see `_Writer`), every entry with its own stamp (a ttl runs from
    the entry's stamp, not from the answer's). A key removed meanwhile is not in it.

    Values are any JSON-serialisable Python value; a value, key, tag or importance the
    working memory would refuse raises ValueError here, before anything is sent: a value
    whose JSON is over `max_value_bytes` too (the node's default limit; set it to the
    node's `max_value_bytes` where that differs). A key has one writer: a key this writer
    set and another removed comes back in its answer.
    """

    def __init__(self, node: Node, topic: str = 'board', resync_namespace: str | None = None,
                 qos_profile: QoSProfile | None = None,
                 max_value_bytes: int = MAX_VALUE_BYTES):
        self._standing: dict[str, BoardEntry] = {}
        self.max_value_bytes = max_value_bytes
        super().__init__(node, BoardUpdate, topic, resync_namespace, qos_profile)

    @property
    def standing(self) -> Mapping[str, BoardEntry]:
        """The entries this writer holds: what it re-sends to a restarted working memory."""
        with self._lock:
            return dict(self._standing)

    def set(self, key: str, value: Any, *, importance: float = math.nan,
            tags: Iterable[str] = (), ttl_s: float = 0.0, stamp: Any = None) -> None:
        """Set one board key (see `update`)."""
        self.update({key: value}, importance=importance, tags=tags, ttl_s=ttl_s, stamp=stamp)

    def update(self, values: Mapping[str, Any], *, importance: float = math.nan,
               tags: Iterable[str] = (), ttl_s: float = 0.0, stamp: Any = None) -> None:
        """Set several keys in one BoardUpdate, each with the same importance, tags and ttl.

        `importance` in [0, 1], NaN for the reading cabin's manifest weight; `ttl_s` [s]
        the freshness after `stamp` (0: never stale); `stamp` [s] (or an rclpy Time, a
        message's header.stamp) the node clock's now when None. Raises ValueError naming
        what the working memory would refuse.
        """
        stamp = self._stamp(stamp)
        self.put([self._entry(key, value, importance, tuple(tags), ttl_s, stamp)
                  for key, value in values.items()], stamp=stamp)

    def remove(self, *keys: str) -> None:
        """Remove board keys (a goal done, an object gone): they leave the working set too."""
        self.put((), keys)

    def put(self, entries: Iterable[BoardEntry], removed_keys: Iterable[str] = (),
            stamp: float | None = None) -> None:
        """Send core BoardEntry objects (each its own options) and removals in one update.

        `stamp` [s] is the update's (the node clock's now when None).
        """
        self._publisher.publish(self._keep(list(entries), list(removed_keys), stamp))

    def hold(self, entries: Iterable[BoardEntry], removed_keys: Iterable[str] = ()) -> None:
        """Keep core BoardEntry objects and removals as standing state, publishing nothing.

        For state the working memory takes live another way (a relay of a source's topic
        that the node subscribes itself, `goal_relay_node`): only a resync answer sends it.
        """
        self._keep(list(entries), list(removed_keys), None)

    def _keep(self, entries: list[BoardEntry], removed_keys: list[str],
              stamp: float | None) -> BoardUpdate:
        """Check entries and removals, keep them as standing state; return their BoardUpdate."""
        for entry in entries:
            if not isinstance(entry, BoardEntry):
                raise ValueError(f'entries: must be BoardEntry objects, got {entry!r}')
        msg = board_update_msg(entries, self._stamp(stamp), removed_keys)
        for entry in msg.entries:
            _check_size(entry.value, self.max_value_bytes, f'board key {entry.key!r}: value')
        with self._lock:
            for key in removed_keys:
                self._standing.pop(key, None)
            self._standing.update((entry.key, entry) for entry in entries)
        return msg

    def _entry(self, key: str, value: Any, importance: float, tags: tuple[str, ...],
               ttl_s: float, stamp: float) -> BoardEntry:
        try:
            json_text(value)
        except (TypeError, ValueError) as error:
            raise ValueError(f'board key {key!r}: value is not strict JSON ({error})') from None
        return BoardEntry(key, value, stamp, _importance(importance), float(ttl_s), tags)

    def _truth(self, request: Resync) -> tuple[list[BoardEntry], list[Event]]:
        return list(self._standing.values()), []


class EventLogger(_Writer):
    """Write the event log, and re-send recent events to a restarted working memory.

    Publishes LogEvent on `topic` (the node's input QoS). It keeps what it logged in
    the last `keep_s` [s] (at most `keep` events); to a working memory that starts
    from an empty memory it answers (see `_Writer`) with the kept events within the
    request's event window, oldest first, each as first sent (the same stamp: the node
    takes an event it holds already once).

    `kind` is a LogEvent constant or its name ('CONSTRAINT'); `detail` any
    JSON-serialisable value. Refused input raises ValueError before anything is sent, a
    detail whose JSON is over `max_value_bytes` too (as `BoardWriter`).
    """

    def __init__(self, node: Node, topic: str = 'log', source: str | None = None,
                 resync_namespace: str | None = None, keep_s: float = 300.0,
                 keep: int = 10_000, qos_profile: QoSProfile | None = None,
                 max_value_bytes: int = MAX_VALUE_BYTES):
        self.max_value_bytes = max_value_bytes
        self._source = node.get_name() if source is None else source
        self._keep_s = keep_s
        self._kept: collections.deque[Event] = collections.deque(maxlen=keep)
        super().__init__(node, LogEvent, topic, resync_namespace, qos_profile)

    def log(self, kind: int | str, key: str = '', detail: Any = None, *,
            tags: Iterable[str] = (), importance: float = math.nan,
            stamp: Any = None) -> None:
        """Log one event; `stamp` [s] (or an rclpy Time, a header.stamp): now when None."""
        stamp = self._stamp(stamp)
        if detail is not None:
            try:
                json_text(detail)
            except (TypeError, ValueError) as error:
                raise ValueError(f'event {key!r}: detail is not strict JSON ({error})') from None
        self.put(Event(stamp, _event_kind(kind), self._source, key, detail,
                       _importance(importance), tuple(tags)))

    def put(self, event: Event) -> None:
        """Send a core Event as it is (its own source; a zero stamp is stamped now)."""
        if not isinstance(event, Event):
            raise ValueError(f'event: must be an Event, got {event!r}')
        if event.stamp == 0.0:   # as sent and as re-sent: one stamp
            event = dataclasses.replace(event, stamp=self._now())
        msg = log_event_msg(event)
        _check_size(msg.detail, self.max_value_bytes, f'event {event.key!r}: detail')
        self._publisher.publish(msg)
        with self._lock:
            self._kept.append(event)
            while self._kept and self._kept[0].stamp < event.stamp - self._keep_s:
                self._kept.popleft()

    def _truth(self, request: Resync) -> tuple[list[BoardEntry], list[Event]]:
        # The window is cut on the asking node's clock: its start is the request's stamp.
        since = seconds_from_time(request.header.stamp) - request.event_window_s
        return [], sorted((event for event in self._kept if event.stamp >= since),
                          key=lambda event: event.stamp)


def _check_size(text: str, limit: int, what: str) -> None:
    """Raise ValueError naming `what` when the JSON `text` (ASCII: a byte a character) is over."""
    if len(text) > limit:
        raise ValueError(f'{what}: {len(text):,} bytes of JSON, over max_value_bytes {limit:,} '
                         '(the working memory would refuse it)')


def _importance(importance: float) -> float | None:
    """Return a writer's importance as the core keeps it: NaN (the manifest's weight) is None."""
    importance = float(importance)
    return None if math.isnan(importance) else importance


def _event_kind(kind: int | str) -> EventKind:
    """Return the EventKind of a LogEvent constant or its name; ValueError names the kinds."""
    names = [member.value for member in EventKind]
    if isinstance(kind, str) and kind in names:
        return EventKind(kind)
    for name in names:
        if not isinstance(kind, str) and kind == getattr(LogEvent, name):
            return EventKind(name)
    raise ValueError(f'event kind {kind!r}: must be one of {", ".join(names)} or its '
                     'LogEvent constant')
