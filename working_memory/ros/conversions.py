"""The codecs of the working_memory messages: rclpy messages and bytes to core types and back.

Sections: time, log, map, frames, services, diagnostics, board owners, frames in (the
client's PackView). The inputs' field reading lives in the pure `engine/inputs.py` (shared
with the offline replay, which reads rosbags messages), the frame's and the board update's
bytes in `ros/wire.py` and `ros/wire_in.py`; the sources are read by
`engine/source_map.py`, and the simulator and the reference cabins convert their own.
Input conversions raise ValueError naming the message field at fault, so the engine can
count the rejection and the node log it; output conversions never fail on core types.
"""

from __future__ import annotations

import array
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import OccupancyGrid
from rclpy.serialization import deserialize_message

from working_memory.core.eviction import CAPACITY, EvictionRecord, Readmission
from working_memory.core.explain import Explanation
from working_memory.core.frames import Frame, Pack
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import (BoardEntry, Event, EventKind, Item, Missing, MissingReason,
                                       MissingSummary)
from working_memory.core.pack_view import PackView
from working_memory.core.timebase import epoch_time
from working_memory.core.windows import checked_window, window_digest
from working_memory.engine import inputs
from working_memory.engine.health import Status
# The input conversions live in engine/inputs.py (pure, shared with the offline replay).
from working_memory.engine.inputs import (BoardBatch, Oversize, TooLarge, answers,  # noqa: F401
                                          board_batch_from_msg, board_entry_from_msg,
                                          grid_from_msg, json_field, pose_from_msg,
                                          pose_from_odometry, pose_from_pose_stamped,
                                          seconds_from_duration, seconds_from_time)
from working_memory.msg import BoardEntry as BoardEntryMsg
from working_memory.msg import (BoardUpdate, ContextFrame, ContextPack, Eviction, EvictionBatch,
                                InputCount, InputStart, LogEvent, MapWindow as MapWindowMsg,
                                MissingItem, Resync, ResyncAnswer, WorkingItem)
from working_memory.msg import MissingSummary as MissingSummaryMsg
from working_memory.ros.wire import CANONICAL_JSON, FrameEncoder, nanoseconds
from working_memory.ros.wire_in import board_batch

# -- time ------------------------------------------------------------------


def time_from_seconds(seconds: float) -> Time:
    """Return float seconds [s] as a builtin_interfaces/Time (clamped at 0)."""
    sec, nanosec = nanoseconds(seconds)
    return Time(sec=sec, nanosec=nanosec)

# -- log -------------------------------------------------------------------


_KIND_FROM_MSG = {getattr(LogEvent, kind.value): kind for kind in EventKind}


def event_from_msg(msg, now: float, limit: int | None = None) -> Event:
    """Convert a LogEvent, raising ValueError naming the field; a zero stamp means `now` [s].

    A detail over `limit` bytes of JSON raises `inputs.TooLarge`.
    """
    return inputs.event_from_msg(msg, now, _KIND_FROM_MSG, limit)


def answer_from_msg(msg, now: float, limit: int | None = None) -> inputs.Answer:
    """Convert a ResyncAnswer, raising ValueError naming the field (inputs.answer_from_msg)."""
    return inputs.answer_from_msg(msg, now, _KIND_FROM_MSG, limit)

# -- map -------------------------------------------------------------------


def grid_msg_from_window(window: MapWindow | None, map_frame: str, stamp: float) -> OccupancyGrid:
    """Return a map window as an OccupancyGrid (empty, 0 x 0, when there is none)."""
    grid = OccupancyGrid()
    grid.header.stamp = time_from_seconds(stamp)
    grid.header.frame_id = map_frame
    if window is None:
        return grid
    height, width = window.data.shape
    grid.info.map_load_time = grid.header.stamp
    grid.info.resolution = window.resolution
    grid.info.width, grid.info.height = width, height
    grid.info.origin.position.x, grid.info.origin.position.y = window.origin
    grid.info.origin.orientation.w = 1.0
    # One C-order copy of the (possibly strided) view straight into the message buffer.
    grid.data = array.array('b', window.data.tobytes())
    return grid

# -- frames ----------------------------------------------------------------


def json_text(value: Any) -> str:
    """Return the canonical compact strict JSON text of a value (ValueError on NaN, Infinity)."""
    return CANONICAL_JSON.encode(value)


def working_item_msg(item: Item, pack: Pack) -> WorkingItem:
    """Return a core Item of `pack` as a WorkingItem, `last_used` on the clock of the pack."""
    return WorkingItem(key=item.key, value=json_text(item.value), source=item.source.value,
                       importance=item.importance, stamp=time_from_seconds(item.stamp),
                       last_used=time_from_seconds(pack.ros_time(item.last_used)),
                       stale=item.stale, exempt=item.exempt)


def log_event_msg(event: Event) -> LogEvent:
    """Return a core Event as a LogEvent (no detail: '', manifest weight: NaN)."""
    msg = LogEvent(kind=getattr(LogEvent, event.kind.value), source=event.source, key=event.key,
                   detail='' if event.detail is None else json_text(event.detail),
                   tags=list(event.tags),
                   importance=math.nan if event.importance is None else event.importance)
    msg.header.stamp = time_from_seconds(event.stamp)
    return msg


def missing_item_msg(missing: Missing, pack: Pack) -> MissingItem:
    """Return a core Missing of `pack` as a MissingItem (since as ROS time of its epoch)."""
    ages = missing.since is not None
    since = time_from_seconds(pack.ros_time(missing.since)) if ages else Time()
    return MissingItem(key=missing.key, reason=getattr(MissingItem, missing.reason.value),
                       detail=missing.detail, ages=ages, since=since)


def missing_summary_msg(summary: MissingSummary, pack: Pack) -> MissingSummaryMsg:
    """Return a core MissingSummary of `pack` as a message (times as ROS time of its epoch)."""
    return MissingSummaryMsg(pattern=summary.pattern,
                             reason=getattr(MissingItem, summary.reason.value),
                             count=summary.count, listed=summary.listed,
                             oldest=time_from_seconds(pack.ros_time(summary.oldest)),
                             newest=time_from_seconds(pack.ros_time(summary.newest)))


def context_pack_msg(pack: Pack, map_frame: str, inline_window: bool = True) -> ContextPack:
    """Return a frozen Pack as a ContextPack; the same pack always gives an equal message.

    Without `inline_window` nearby_map is empty: map_window_digest names the window.
    """
    window = pack.map_window
    msg = ContextPack(tick=pack.tick, cabin=pack.cabin, digest=pack.digest,
                      items=[working_item_msg(item, pack) for item in pack.items],
                      recent_events=[log_event_msg(event) for event in pack.events],
                      missing=[missing_item_msg(missing, pack) for missing in pack.missing],
                      nearby_map=grid_msg_from_window(window if inline_window else None,
                                                      map_frame, pack.stamp),
                      map_window_digest='' if window is None else window_digest(window),
                      missing_summaries=[missing_summary_msg(summary, pack)
                                         for summary in pack.summaries])
    msg.header.stamp = time_from_seconds(pack.stamp)
    msg.header.frame_id = map_frame
    return msg


def context_frame_msg(frame: Frame, map_frame: str,
                      inputs_received: Mapping[str, int] | None = None,
                      inline_windows: bool = True, started: float = 0.0,
                      resyncing: bool = False, start_id: str = '',
                      input_starts: tuple[tuple[str, bytes, int], ...] = (),
                      taken_order: tuple[tuple[int, int], ...] | None = None, *,
                      restart: bool = False) -> ContextFrame:
    """Return a frozen Frame as a ContextFrame, packs in cabin order.

    `inputs_received` is {resolved input topic: messages received before the tick};
    `inline_windows` as in `context_pack_msg`; `started` [s], `resyncing` and `restart`
    the node's; `input_starts` (resolved topic, publisher gid, first sequence number) per
    publisher, `taken_order` the runs (index into them, count) taken since the last frame
    (None: unknown).
    """
    msg = ContextFrame(tick=frame.tick, digest=frame.digest,
                       packs=[context_pack_msg(pack, map_frame, inline_windows)
                              for pack in frame.packs.values()],
                       inputs=[InputCount(topic=topic, received=count)
                               for topic, count in (inputs_received or {}).items()],
                       started=time_from_seconds(started), resyncing=resyncing,
                       start_id=start_id,
                       input_starts=[InputStart(topic=topic, publisher=publisher, first=first)
                                     for topic, publisher, first in input_starts],
                       taken_from=[index for index, _ in taken_order or ()],
                       taken_count=[count for _, count in taken_order or ()],
                       restart=restart)
    msg.header.stamp = time_from_seconds(frame.stamp)
    msg.header.frame_id = map_frame
    return msg


def map_window_msg(cabin: str, digest: str, window: MapWindow, map_frame: str, tick: int,
                   stamp: float) -> MapWindowMsg:
    """Return a cabin's window as the MapWindow first referenced in `tick` at `stamp` [s]."""
    msg = MapWindowMsg(tick=tick, cabin=cabin, digest=digest,
                       grid=grid_msg_from_window(window, map_frame, stamp))
    msg.header = msg.grid.header
    return msg


def eviction_msg(record: EvictionRecord, stamp: float, effective: float) -> Eviction:
    """Return an eviction record as an Eviction stamped with its tick's time.

    The tick is at ROS time `stamp` and effective time `effective` [s];
    `last_used` is put on the same clock, so the stamp minus it is the item's age.
    """
    msg = Eviction(tick=record.tick, key=record.key, importance=record.importance,
                   last_used=time_from_seconds(epoch_time(record.last_used, stamp, effective)),
                   reason=Eviction.CAPACITY if record.reason == CAPACITY else Eviction.SIZE_BUDGET)
    msg.header.stamp = time_from_seconds(stamp)
    return msg


def eviction_batch_msg(tick: int, records: Iterable[EvictionRecord],
                       readmitted: Iterable[Readmission], stamp: float,
                       effective: float) -> EvictionBatch:
    """Return one tick's evictions and readmissions as an EvictionBatch (see `eviction_msg`)."""
    msg = EvictionBatch(tick=tick,
                        evictions=[eviction_msg(record, stamp, effective) for record in records],
                        readmitted=[readmission.key for readmission in readmitted])
    msg.header.stamp = time_from_seconds(stamp)
    return msg

# -- services ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FrameQuery:
    """What an Assemble or Explain request asks for; tick 0 means the latest frame."""

    cabin: str
    tick: int
    key: str = ''


def assemble_query(request) -> FrameQuery:
    """Return an Assemble request as a query."""
    return FrameQuery(request.cabin, request.tick)


def explain_query(request) -> FrameQuery:
    """Return an Explain request as a query, raising ValueError on an empty key."""
    if not request.key:
        raise ValueError('key: must name a board key or event key to explain')
    return FrameQuery(request.cabin, request.tick, request.key)


def failed_response(response, message: str):
    """Fill a service response as failed with `message` (what went wrong, what is valid)."""
    response.success = False
    response.message = message
    return response


def assemble_response(response, pack: Pack, map_frame: str, output: FrameOutput | None = None):
    """Fill an Assemble response with the pack exactly as its frame published it.

    With `output`, a pack asked for again is not converted again.
    """
    response.success = True
    response.pack = (context_pack_msg(pack, map_frame) if output is None
                     else output.pack_msg(pack, map_frame))
    return response


class FrameOutput:
    """What the node publishes of its frames, converted once per frame or pack.

    `frame_bytes` serializes a frame for rclpy's serialized publishing (ros/wire.py:
    no message objects, pieces shared with the previous frame reused); `pack_msg`
    converts a pack for `~/assemble` once, however often it is asked for: the ~/assemble
    round trip 0.95x / 0.93x the plain service (planner / monitor pack) with it, 1.12x /
    1.27x converted per call (BENCHMARKS.md, "What each speed mechanism buys").
    """

    def __init__(self, packs_kept: int = 16):
        self._encoder = FrameEncoder(
            {kind: getattr(LogEvent, kind.value) for kind in EventKind},
            {reason: getattr(MissingItem, reason.value) for reason in MissingReason})
        self._packs: dict[int, tuple[Pack, str, ContextPack]] = {}
        self._packs_kept = packs_kept

    def frame_bytes(self, frame: Frame, map_frame: str,
                    inputs_received: Mapping[str, int] | None = None,
                    inline_windows: bool = True, started: float = 0.0,
                    resyncing: bool = False, start_id: str = '',
                    input_starts: tuple[tuple[str, bytes, int], ...] = (),
                    taken_order: tuple[tuple[int, int], ...] | None = None, *,
                    restart: bool = False) -> bytes:
        """Return `frame` as the serialized ContextFrame `context_frame_msg` would give."""
        return self._encoder.frame(frame, map_frame, inputs_received, inline_windows,
                                   started, resyncing, start_id, input_starts, taken_order,
                                   restart=restart)

    def pack_msg(self, pack: Pack, map_frame: str) -> ContextPack:
        """Return the pack's ContextPack, converted once per pack (the latest few are kept)."""
        cached = self._packs.get(id(pack))
        if cached is not None and cached[0] is pack and cached[1] == map_frame:
            return cached[2]
        msg = context_pack_msg(pack, map_frame)
        self._packs[id(pack)] = (pack, map_frame, msg)
        while len(self._packs) > self._packs_kept:
            del self._packs[next(iter(self._packs))]
        return msg


def explain_response(response, answer: Explanation):
    """Fill an Explain response with a why-(not) answer."""
    response.success = True
    response.present = answer.present
    response.reason = answer.reason
    response.detail = answer.detail
    return response

# -- diagnostics -----------------------------------------------------------


def diagnostic_array(statuses: list[Status], node_name: str, stamp: float) -> DiagnosticArray:
    """Return statuses as a DiagnosticArray named '<node_name>: <status>' at `stamp` [s].

    `node_name` is the fully qualified name, so two namespaced nodes can be told apart.
    """
    array = DiagnosticArray()
    array.header.stamp = time_from_seconds(stamp)
    array.status = [
        DiagnosticStatus(level=bytes([status.level]), name=f'{node_name}: {status.name}',
                         message=status.message, hardware_id=node_name,
                         values=[KeyValue(key=key, value=value) for key, value in status.values])
        for status in statuses]
    return array


def board_update_from_bytes(data: bytes) -> BoardUpdate:
    """Return a serialized BoardUpdate as rclpy reads it; ValueError if it cannot."""
    try:
        return deserialize_message(data, BoardUpdate)
    except Exception as error:   # rclpy raises its own RMW errors
        raise ValueError(f'BoardUpdate bytes rclpy cannot read: {error}') from None


def board_batch_from_bytes(data: bytes, now: float, limit: int | None = None) -> BoardBatch:
    """Return `board_batch_from_msg(board_update_from_bytes(data), now, True, limit)`, faster.

    The node's intake: the common update in one pass (ros/wire_in.py `board_batch`), any
    other read by rclpy; ValueError if malformed; values over `limit` bytes of JSON are
    refused (`BoardBatch.refused`).
    """
    batch = board_batch(data, now, limit)
    if batch is None:
        batch = board_batch_from_msg(board_update_from_bytes(data), now, frozen=True, limit=limit)
    return batch


def publication(info: Mapping[str, Any]) -> tuple[bytes, int | None]:
    """Return (publisher id, the publisher's number of the message) from rclpy's message info.

    The number is None when the middleware does not give one.
    """
    gid = info.get('publisher_gid') or {}
    return bytes(gid.get('data', b'')), info.get('publication_sequence_number')

# -- board owners (outbound) -----------------------------------------------
# board_update_msg serves every board owner (the simulator, planner `route`,
# executor `action:current`); log_event_msg above serves every event producer.


def duration_from_seconds(seconds: float) -> Duration:
    """Return float seconds [s] as a builtin_interfaces/Duration (clamped at 0)."""
    sec, nanosec = nanoseconds(seconds)
    return Duration(sec=sec, nanosec=nanosec)


def resync_msg(node: str, started: float, event_window_s: float, start_id: str) -> Resync:
    """Return the node's request for the writers' truth (msg/Resync.msg)."""
    msg = Resync(node=node, event_window_s=float(event_window_s), start_id=start_id)
    msg.header.stamp = time_from_seconds(started)
    return msg


def resync_answer_msg(request: Resync, writer: str, entries: Iterable[BoardEntry],
                      events: Iterable[Event], stamp: float) -> ResyncAnswer:
    """Return a writer's answer to `request`: its standing entries and events, at `stamp` [s]."""
    msg = ResyncAnswer(node=request.node, request_stamp=request.header.stamp,
                       start_id=request.start_id, writer=writer,
                       entries=[board_entry_msg(entry) for entry in entries],
                       events=[log_event_msg(event) for event in events])
    msg.header.stamp = time_from_seconds(stamp)
    return msg


def board_entry_msg(entry: BoardEntry) -> BoardEntryMsg:
    """Return a core BoardEntry as a BoardEntry message (manifest weight: NaN)."""
    return BoardEntryMsg(key=entry.key, value=json_text(entry.value), tags=list(entry.tags),
                         importance=math.nan if entry.importance is None else entry.importance,
                         stamp=time_from_seconds(entry.stamp),
                         ttl=duration_from_seconds(entry.ttl))


def board_update_msg(entries, stamp: float, removed_keys=()) -> BoardUpdate:
    """Return board changes (core BoardEntry list, removed keys) as a BoardUpdate at `stamp` [s]."""
    msg = BoardUpdate(entries=[board_entry_msg(entry) for entry in entries],
                      removed_keys=list(removed_keys))
    msg.header.stamp = time_from_seconds(stamp)
    return msg


# -- frames in (the client side) ------------------------------------------

_REASON_FROM_MSG = {getattr(MissingItem, reason.value): reason for reason in MissingReason}


def pack_view_from_msg(msg, frame_digest: str | None) -> PackView:
    """Return a ContextPack as a PackView; `frame_digest` is the digest of its ContextFrame."""
    where = f'pack {msg.cabin!r} tick {msg.tick}'
    stamp = seconds_from_time(msg.header.stamp)
    values = {item.key: json_field(item.value, f'{where}: items[{item.key!r}].value')
              for item in msg.items}
    events = []
    for index, event in enumerate(msg.recent_events):
        try:
            events.append(event_from_msg(event, stamp))
        except ValueError as error:
            raise ValueError(f'{where}: recent_events[{index}] {error}') from None
    missing = []
    for item in msg.missing:
        reason = _REASON_FROM_MSG.get(item.reason)
        if reason is None:
            raise ValueError(f'{where}: missing[{item.key!r}].reason {item.reason} is not one of '
                             f'{sorted(_REASON_FROM_MSG)}')
        missing.append(Missing(item.key, reason, item.detail,
                               seconds_from_time(item.since) if item.ages else None))
    summaries = []
    # A pack recorded before summaries existed has none.
    for item in getattr(msg, 'missing_summaries', ()):
        reason = _REASON_FROM_MSG.get(item.reason)
        if reason is None:
            raise ValueError(f'{where}: missing_summaries[{item.pattern!r}].reason '
                             f'{item.reason} is not one of {sorted(_REASON_FROM_MSG)}')
        summaries.append(MissingSummary(item.pattern, reason, item.count, item.listed,
                                        seconds_from_time(item.oldest),
                                        seconds_from_time(item.newest)))
    window = None
    reference = getattr(msg, 'map_window_digest', '')
    if msg.nearby_map.info.width and msg.nearby_map.info.height:
        try:
            window = window_from_grid(msg.nearby_map)
        except ValueError as error:
            raise ValueError(f'{where}: nearby_{error}') from None
        if reference:
            checked_window(window, reference, f'{where}: nearby_map')
    return PackView(cabin=msg.cabin, tick=msg.tick, stamp=stamp, digest=msg.digest,
                    frame_digest=frame_digest, values=values, events=tuple(events),
                    missing=tuple(missing), map_window=window,
                    map_window_digest=reference, missing_summaries=tuple(summaries),
                    stamps={item.key: seconds_from_time(item.stamp) for item in msg.items
                            if getattr(item, 'stamp', None) is not None})


def window_from_grid(grid_msg) -> MapWindow:
    """Return an OccupancyGrid as a MapWindow, raising ValueError naming the field at fault."""
    grid = grid_from_msg(grid_msg, grid_msg.header.frame_id)
    return MapWindow(grid.data, grid.origin, grid.resolution)


def map_window_from_msg(msg) -> tuple[str, str, MapWindow]:
    """Return (cabin, digest, window) of a MapWindow message; ValueError naming what is bad."""
    where = f'window of cabin {msg.cabin!r} tick {msg.tick}'
    if not msg.digest:
        raise ValueError(f'{where}: digest: must not be empty')
    try:
        window = window_from_grid(msg.grid)
    except ValueError as error:
        raise ValueError(f'{where}: {error}') from None
    return msg.cabin, msg.digest, window


def cabin_pack_from_frame(msg: ContextFrame, cabin: str) -> PackView | None:
    """Return `cabin`'s pack of a ContextFrame as a PackView, None when the frame has none."""
    for pack in msg.packs:
        if pack.cabin == cabin:
            if pack.tick != msg.tick:
                raise ValueError(f'frame tick {msg.tick}: pack {cabin!r} has tick {pack.tick}')
            return dataclasses.replace(pack_view_from_msg(pack, msg.digest),
                                       started=seconds_from_time(msg.started),
                                       resyncing=msg.resyncing, start_id=msg.start_id)
    return None


def frame_cabins(msg: ContextFrame) -> list[str]:
    """Return the cabin names of a ContextFrame's packs."""
    return [pack.cabin for pack in msg.packs]
