"""A recorded run as plain records: frames, evictions, readmissions, diagnostics, decisions.

This module is the only tools code that reads message fields; everything after it
works on the frozen records below. Times are float seconds of ROS time.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from working_memory.core import gridmap
from working_memory.core.items import aged_text, summary_text
from working_memory.core.windows import WindowMismatch, checked_window
from working_memory.tools.bag import (BagError, BagReader, DIAGNOSTICS_TYPE, EVICTION_BATCH_TYPE,
                                      EVICTION_TYPE, FRAME_TYPE, IDS_TYPE, full_typestore)

EVENT_TYPE = 'working_memory/msg/LogEvent'
WINDOW_TYPE = 'working_memory/msg/MapWindow'
MISSING_TYPE = 'working_memory/msg/MissingItem'
STATUS_TYPE = 'diagnostic_msgs/msg/DiagnosticStatus'


class RecordingError(Exception):
    """A question the recording cannot answer (unknown cabin, tick not recorded)."""


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """One working item of a pack; `value` is JSON text, `last_used` [s]."""

    key: str
    value: str
    source: str
    importance: float
    last_used: float
    stale: bool
    exempt: bool


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event of a pack's event window; `stamp` [s]."""

    stamp: float
    kind: str
    source: str
    key: str
    detail: str


@dataclass(frozen=True, slots=True)
class MissingRecord:
    """A key (or dropped category) absent from a pack; `reason` is the constant's name.

    `since` [s, node clock] is when the detail's age counts from, None when nothing ages.
    """

    key: str
    reason: str
    detail: str
    since: float | None = None

    def text(self, stamp: float) -> str:
        """Return the detail as read at the pack's `stamp` [s], with its age when it has one."""
        return aged_text(self.detail, self.since, stamp)


@dataclass(frozen=True, slots=True)
class SummaryRecord:
    """The absent keys one glob selects for one reason, counted (a MissingSummary).

    `listed` of the `count` keys have a MissingRecord of their own in the pack;
    `oldest`, `newest` [s, node clock] are the earliest and latest `since` of them all.
    """

    pattern: str
    reason: str
    count: int
    listed: int
    oldest: float
    newest: float

    def text(self, stamp: float) -> str:
        """Return the summary as read at the pack's `stamp` [s]."""
        return summary_text(self.pattern, self.reason, self.count, self.listed, self.oldest,
                            self.newest, stamp)


@dataclass(frozen=True, slots=True)
class MapWindow:
    """A pack's map window: (height, width) int8 occupancy `cells`, origin [m], [m/cell]."""

    cells: np.ndarray
    resolution: float
    origin_x: float
    origin_y: float

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """Return (x_min, x_max, y_min, y_max) [m] of the window."""
        height, width = self.cells.shape
        return (self.origin_x, self.origin_x + width * self.resolution,
                self.origin_y, self.origin_y + height * self.resolution)


# How many frames `frames_whole` reads past the one it yields, looking for its windows.
FRAMES_AHEAD = 64
NO_WINDOW = MapWindow(np.zeros((0, 0), dtype=np.int8), 0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class PackRecord:
    """One cabin's pack in one tick."""

    cabin: str
    items: tuple[ItemRecord, ...]
    events: tuple[EventRecord, ...]
    map_window: MapWindow
    missing: tuple[MissingRecord, ...]
    digest: str
    # The window's digest ('' without one): inline, or joined from the cabin's window topic.
    map_window_digest: str = ''
    # The absent keys each glob selects, counted per reason (`missing` lists a few of them).
    summaries: tuple[SummaryRecord, ...] = ()

    def item(self, key: str) -> ItemRecord | None:
        """Return the item with `key`, or None."""
        return next((item for item in self.items if item.key == key), None)

    def absent_counts(self) -> Counter:
        """Return reason name -> how many absences the pack reports: listed plus counted."""
        counts = Counter(missing.reason for missing in self.missing)
        for summary in self.summaries:
            counts[summary.reason] += summary.count - summary.listed
        return counts


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One tick's frozen frame, packs in manifest order.

    `stamp` is the tick time, `received` when the recorder got it (bag time) [s];
    `stamp_ns` the tick time [ns] as the node had it. `inputs` is the node's receipt:
    {input topic: messages received before the tick} (empty in bags made before it existed).
    `started` [s] is when the node that made it started from an empty memory, `start_id`
    that start's own id (a new one: a restarted node); `resyncing` whether it was still
    re-reading the writers, `restart` whether that start was a restart (not its process's
    first: ContextFrame.restart). `input_starts` holds (input topic, publisher gid, first
    sequence number) per publisher the node start had taken from (ContextFrame.input_starts),
    `taken` the runs (index into them, count) in the order the node took its inputs since
    the previous frame (ContextFrame.taken_from, taken_count).
    """

    tick: int
    stamp: float
    received: float
    digest: str
    packs: Mapping[str, PackRecord]
    stamp_ns: int = 0
    inputs: Mapping[str, int] = field(default_factory=dict)
    started: float = 0.0
    resyncing: bool = False
    start_id: str = ''
    input_starts: tuple[tuple[str, bytes, int], ...] = ()
    taken: tuple[tuple[int, int], ...] = ()
    restart: bool = False


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    """One eviction: `stamp` (when) and `last_used` [s]; `reason` 'CAPACITY' or 'SIZE_BUDGET'."""

    tick: int
    stamp: float
    key: str
    importance: float
    last_used: float
    reason: str

    @property
    def age(self) -> float:
        """Return how long the item had been unused when it was evicted [s]."""
        return self.stamp - self.last_used


@dataclass(frozen=True, slots=True)
class ReadmissionRecord:
    """An evicted key that came back in `tick` (its pack serves it again); `stamp` [s]."""

    tick: int
    stamp: float
    key: str


@dataclass(frozen=True, slots=True)
class DiagnosticRecord:
    """One DiagnosticStatus; `stamp` of its array and `received` (bag time) [s]; level 'OK', ..."""

    stamp: float
    received: float
    name: str
    level: str
    message: str
    values: Mapping[str, str]


@dataclass(frozen=True)
class Recording:
    """Frames (by node start and tick, one each), transitions and diagnostics of one run.

    A node that started again (a crash and a respawn, a cleanup and configure) counts its
    ticks from 1 again: its frames follow the earlier node's (`restarts`), and a tick
    number names the latest node's frame of that number.
    """

    path: Path
    frames: tuple[FrameRecord, ...]
    evictions: tuple[EvictionRecord, ...] = ()
    diagnostics: tuple[DiagnosticRecord, ...] = ()
    readmissions: tuple[ReadmissionRecord, ...] = ()
    frame_topic: str = ''
    # (tick, cabin, digest) of each pack whose window the bag lacks (its window topic
    # was not recorded): those packs' map_window is empty.
    windows_missing: tuple[tuple[int, str, str], ...] = ()
    # False: an index (load_run's): each frame's receipt and digests, its packs' digests
    # only (no items, events, windows), no diagnostics; `frames_whole` reads the frames
    # whole again.
    whole: bool = True
    _by_tick: dict[int, FrameRecord] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, '_by_tick', {frame.tick: frame for frame in self.frames})

    @property
    def ticks(self) -> list[int]:
        """Return the recorded ticks in frame order (ascending per node start)."""
        return [frame.tick for frame in self.frames]

    @property
    def restarts(self) -> list[FrameRecord]:
        """Return the first frame of every node start after the first (a restart each)."""
        return [frame for before, frame in zip(self.frames, self.frames[1:])
                if frame.start_id != before.start_id]

    @property
    def cabins(self) -> list[str]:
        """Return every cabin seen, in first-seen (manifest) order."""
        return list(dict.fromkeys(cabin for frame in self.frames for cabin in frame.packs))

    def frame(self, tick: int) -> FrameRecord:
        """Return the frame of `tick`; RecordingError naming the recorded range otherwise."""
        try:
            return self._by_tick[tick]
        except KeyError:
            raise RecordingError(f'tick {tick} not recorded in {self.path} '
                                 f'(recorded: {describe_ticks(self.ticks)})') from None

    def check_cabin(self, cabin: str) -> None:
        """Raise RecordingError unless `cabin` appears in some frame."""
        if cabin not in self.cabins:
            raise RecordingError(f'unknown cabin {cabin!r} in {self.path} '
                                 f'(cabins: {", ".join(self.cabins) or "none"})')

    def pack(self, tick: int, cabin: str) -> PackRecord:
        """Return `cabin`'s pack at `tick`."""
        self.check_cabin(cabin)
        frame = self.frame(tick)
        try:
            return frame.packs[cabin]
        except KeyError:
            raise RecordingError(f'cabin {cabin!r} has no pack at tick {tick} '
                                 f'(cabins then: {", ".join(frame.packs)})') from None


def tick_ranges(ticks: list[int]) -> list[tuple[int, int]]:
    """Group ascending ticks into (first, last) runs of consecutive numbers."""
    runs: list[tuple[int, int]] = []
    for tick in ticks:
        if runs and tick == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], tick)
        else:
            runs.append((tick, tick))
    return runs


def describe_ticks(ticks: list[int]) -> str:
    """Return e.g. '1-40, 43-90' for the recorded ticks."""
    if not ticks:
        return 'none'
    return ', '.join(str(a) if a == b else f'{a}-{b}' for a, b in tick_ranges(ticks))


def seconds(stamp) -> float:
    """Return a builtin_interfaces Time as float seconds."""
    return stamp.sec + stamp.nanosec * 1e-9


def _since(missing) -> float | None:
    """Return a MissingItem's since as seconds, None when it has no age (or an older bag)."""
    return seconds(missing.since) if getattr(missing, 'ages', False) else None


def load_recording(path: str | Path, *, frame_topic: str | None = None,
                   evictions_topic: str | None = None,
                   diagnostics_topic: str | None = None, whole: bool = True) -> Recording:
    """Load a bag recorded by the recorder node (or `ros2 bag record`).

    A topic left None is found by type; several topics of one type need an explicit
    choice. Frames are required, evictions (EvictionBatch, or one Eviction per message
    in older bags) and diagnostics optional. Packs that name their map window by digest
    get it from the bag's MapWindow topics (every one is read), checked against it.
    Not `whole`: the recording's index (see `Recording.whole`), no window or diagnostic read.
    """
    with BagReader(path) as reader:
        frames_at = pick_topic(reader, FRAME_TYPE, frame_topic, required=True)
        evictions_at = pick_topic(reader, (EVICTION_BATCH_TYPE, EVICTION_TYPE), evictions_topic)
        diagnostics_at = pick_topic(reader, DIAGNOSTICS_TYPE, diagnostics_topic) if whole else None
        window_topics = sorted(t for t, typ in reader.topics.items()
                               if typ == WINDOW_TYPE and whole)
        topics = [topic for topic in (frames_at, evictions_at, diagnostics_at) if topic]
        topics += window_topics
        reader.register(topics)
        windows: dict[tuple[str, str], MapWindow] = {}
        names = ConstantNames(reader)
        frames: dict[tuple[str, int], FrameRecord] = {}   # by (node start, tick)
        shared: dict[tuple, tuple] = {}
        starts: dict[str, int] = {}   # node start -> its order of first appearance
        evictions: list[EvictionRecord] = []
        readmissions: list[ReadmissionRecord] = []
        diagnostics: list[DiagnosticRecord] = []
        for message in reader.messages(topics):
            if message.topic == frames_at:
                # A latched frame can be delivered twice (a reconnect); keep the first copy.
                frame = frame_record(message.msg, message.stamp_ns * 1e-9, names, whole, shared)
                starts.setdefault(frame.start_id, len(starts))
                frames.setdefault((frame.start_id, frame.tick), frame)
            elif message.msgtype == WINDOW_TYPE:
                cabin, digest = message.msg.cabin, message.msg.digest
                windows[cabin, digest] = window_record(message.msg, message.topic)
            elif message.topic == evictions_at and message.msgtype == EVICTION_TYPE:
                evictions.append(eviction_record(message.msg, names))
            elif message.topic == evictions_at:
                evictions.extend(eviction_record(e, names) for e in message.msg.evictions)
                readmissions.extend(ReadmissionRecord(int(message.msg.tick),
                                                      seconds(message.msg.header.stamp), key)
                                    for key in message.msg.readmitted)
            else:
                diagnostics.extend(diagnostic_records(message.msg, message.stamp_ns * 1e-9, names))
    order = sorted(frames, key=lambda key: (starts[key[0]], key[1]))
    joined, missing = join_windows([frames[key] for key in order], windows)
    return Recording(Path(path), tuple(joined),
                     tuple(sorted(evictions, key=lambda e: (e.tick, e.stamp))), tuple(diagnostics),
                     readmissions=tuple(sorted(readmissions, key=lambda r: r.tick)),
                     frame_topic=frames_at, windows_missing=tuple(missing), whole=whole)


def frames_whole(index: Recording, windows_kept: int = 256) -> Iterator[FrameRecord]:
    """Yield the frames of a recording's index whole, in its order, reading the bag again.

    One frame at a time: the bag's order is the order of receipt, the index's by node
    start and tick (a latched frame delivered twice once), so a frame read early waits
    for its turn. A pack's window is one of the last `windows_kept` windows read, read
    on until it comes when the bag holds it after the frame (up to FRAMES_AHEAD frames on);
    a window the bag lacks leaves the pack's map empty, as `load_recording` does.
    """
    if index.whole:
        yield from index.frames
        return
    with BagReader(index.path) as reader:
        window_topics = sorted(t for t, typ in reader.topics.items() if typ == WINDOW_TYPE)
        topics = [index.frame_topic, *window_topics]
        reader.register(topics)
        names = ConstantNames(reader)
        messages = reader.messages(topics)
        ahead: dict[tuple[str, int], FrameRecord] = {}
        windows: OrderedDict[tuple[str, str], MapWindow] = OrderedDict()
        done: set[tuple[str, int]] = set()

        def read_one() -> bool:
            message = next(messages, None)
            if message is None:
                return False
            if message.topic == index.frame_topic:
                frame = frame_record(message.msg, message.stamp_ns * 1e-9, names)
                key = frame.start_id, frame.tick
                if key not in done:
                    ahead.setdefault(key, frame)
            else:
                key = message.msg.cabin, message.msg.digest
                windows[key] = window_record(message.msg, message.topic)
                windows.move_to_end(key)
                if len(windows) > windows_kept:
                    windows.popitem(last=False)
            return True

        for wanted in index.frames:
            key = wanted.start_id, wanted.tick
            while key not in ahead:
                if not read_one():
                    raise RecordingError(f'{index.path}: frame {key[1]} of node start '
                                         f'{key[0]!r} not found reading the bag again')
            lacking = [(cabin, pack.map_window_digest) for cabin, pack in ahead[key].packs.items()
                       if pack.map_window_digest and not pack.map_window.cells.size]
            while (window_topics and len(ahead) < FRAMES_AHEAD
                   and any(name not in windows for name in lacking) and read_one()):
                pass
            done.add(key)
            yield join_windows([ahead.pop(key)], windows)[0][0]


def window_record(msg, topic: str) -> MapWindow:
    """Convert a MapWindow message; BagError when its cells do not hash to its digest."""
    where = f'{topic} tick {msg.tick}'
    window = map_window(msg.grid, where)
    position = window.origin_x, window.origin_y
    try:
        checked_window(gridmap.MapWindow(window.cells, position, window.resolution),
                       msg.digest, where)
    except WindowMismatch as error:
        raise BagError(str(error)) from None
    return window


def join_windows(frames: list[FrameRecord], windows: Mapping[tuple[str, str], MapWindow]
                 ) -> tuple[list[FrameRecord], list[tuple[int, str, str]]]:
    """Give each pack that names its window by digest the recorded window.

    Returns the frames and the (tick, cabin, digest) of the windows the bag lacks.
    """
    joined, missing = [], []
    for frame in frames:
        packs, changed = dict(frame.packs), False
        for cabin, pack in frame.packs.items():
            digest = pack.map_window_digest
            if not digest or pack.map_window.cells.size:
                continue
            window = windows.get((cabin, digest))
            if window is None:
                missing.append((frame.tick, cabin, digest))
            else:
                packs[cabin], changed = dataclasses.replace(pack, map_window=window), True
        joined.append(dataclasses.replace(frame, packs=packs) if changed else frame)
    return joined, missing


def pick_topic(reader: BagReader, msgtypes: str | tuple[str, ...], topic: str | None,
               required: bool = False) -> str | None:
    """Return `topic` after checking its type, or the only topic of one of `msgtypes`.

    Several types are tried in order: the first with topics in the bag is taken.
    """
    msgtypes = (msgtypes,) if isinstance(msgtypes, str) else msgtypes
    wanted = ' or '.join(msgtypes)
    topics = reader.topics
    if topic is not None:
        if topics.get(topic) not in msgtypes:
            raise BagError(f'{reader.path}: no {wanted} topic {topic} '
                           f'(topics: {describe_topics(topics)})')
        return topic
    for msgtype in msgtypes:
        candidates = sorted(name for name, typ in topics.items() if typ == msgtype)
        if len(candidates) > 1:
            raise BagError(f'{reader.path}: several {msgtype} topics '
                           f'({", ".join(candidates)}); choose one')
        if candidates:
            return candidates[0]
    if required:
        raise BagError(f'{reader.path}: no {wanted} topic (topics: {describe_topics(topics)})')
    return None


def describe_topics(topics: Mapping[str, str]) -> str:
    """Return 'topic [type], ...' or 'none'."""
    return ', '.join(f'{name} [{typ}]' for name, typ in sorted(topics.items())) or 'none'


class ConstantNames:
    """Names of the message constants as the bag defines them (reasons, kinds, levels)."""

    def __init__(self, reader: BagReader) -> None:
        self._reader = reader
        self._cache: dict[str, dict[int, str]] = {}

    def name(self, msgtype: str, value: int) -> str:
        """Return the name of constant `value` of `msgtype`, or the number as text."""
        if msgtype not in self._cache:
            self._cache[msgtype] = self._reader.constant_names(msgtype)
        return self._cache[msgtype].get(int(value), str(int(value)))


def frame_record(msg, received: float, names: ConstantNames, whole: bool = True,
                 shared: dict | None = None) -> FrameRecord:
    """Convert a ContextFrame message received at `received` [s]; not `whole`: for an index.

    The topic names are interned; input starts equal to a value in `shared` are that value
    (frames repeat them: a run keeps one copy).
    """
    packs = {pack.cabin: pack_record(pack, names, f'tick {msg.tick} cabin {pack.cabin}')
             if whole else PackRecord(pack.cabin, (), (), NO_WINDOW, (), pack.digest,
                                      getattr(pack, 'map_window_digest', ''))
             for pack in msg.packs}
    stamp = msg.header.stamp
    inputs = {sys.intern(count.topic): int(count.received)
              for count in getattr(msg, 'inputs', ())}
    started = getattr(msg, 'started', None)
    return FrameRecord(int(msg.tick), seconds(stamp), received, msg.digest, packs,
                       stamp.sec * 1_000_000_000 + stamp.nanosec, inputs,
                       0.0 if started is None else seconds(started),
                       bool(getattr(msg, 'resyncing', False)), str(getattr(msg, 'start_id', '')),
                       _shared(shared, tuple((sys.intern(start.topic), bytes(start.publisher),
                                              int(start.first))
                                             for start in getattr(msg, 'input_starts', ()))),
                       tuple((int(index), int(count)) for index, count in zip(
                           getattr(msg, 'taken_from', ()), getattr(msg, 'taken_count', ()))),
                       bool(getattr(msg, 'restart', False)))


def _shared(shared: dict | None, value: tuple) -> tuple:
    return value if shared is None else shared.setdefault(value, value)


def pack_record(msg, names: ConstantNames, where: str) -> PackRecord:
    """Convert a ContextPack message; `where` names it in errors."""
    items = tuple(ItemRecord(i.key, i.value, i.source, float(i.importance), seconds(i.last_used),
                             bool(i.stale), bool(i.exempt)) for i in msg.items)
    events = tuple(EventRecord(seconds(e.header.stamp), names.name(EVENT_TYPE, e.kind), e.source,
                               e.key, e.detail) for e in msg.recent_events)
    missing = tuple(MissingRecord(m.key, names.name(MISSING_TYPE, m.reason), m.detail,
                                  _since(m)) for m in msg.missing)
    # A bag recorded before summaries existed has none.
    summaries = tuple(SummaryRecord(s.pattern, names.name(MISSING_TYPE, s.reason), int(s.count),
                                    int(s.listed), seconds(s.oldest), seconds(s.newest))
                      for s in getattr(msg, 'missing_summaries', ()))
    return PackRecord(msg.cabin, items, events, map_window(msg.nearby_map, where), missing,
                      msg.digest, getattr(msg, 'map_window_digest', ''), summaries)


def map_window(grid, where: str) -> MapWindow:
    """Convert an OccupancyGrid into a MapWindow (empty when the grid is)."""
    height, width = int(grid.info.height), int(grid.info.width)
    cells = np.asarray(grid.data, dtype=np.int8)
    if cells.size != height * width:
        raise BagError(f'{where}: nearby_map has {cells.size} cells for {width}x{height}')
    position = grid.info.origin.position
    return MapWindow(cells.reshape(height, width), float(grid.info.resolution),
                     float(position.x), float(position.y))


def eviction_record(msg, names: ConstantNames) -> EvictionRecord:
    """Convert an Eviction message."""
    return EvictionRecord(int(msg.tick), seconds(msg.header.stamp), msg.key, float(msg.importance),
                          seconds(msg.last_used), names.name(EVICTION_TYPE, msg.reason))


def diagnostic_records(msg, received: float, names: ConstantNames) -> list[DiagnosticRecord]:
    """Convert a DiagnosticArray received at `received` [s] into one record per status."""
    stamp = seconds(msg.header.stamp)
    return [DiagnosticRecord(stamp, received, status.name, names.name(STATUS_TYPE, status.level),
                             status.message, {kv.key: kv.value for kv in status.values})
            for status in msg.status]


# -- the whole loop: inputs, configuration and decisions ----------------------

DECISION_TYPE = 'working_memory/msg/DecisionStatus'
PARAMETER_EVENT_TYPE = 'rcl_interfaces/msg/ParameterEvent'
PARAMETER_TYPE = 'rcl_interfaces/msg/ParameterType'
# The node's inputs by type, for bags whose frames carry no receipt naming them.
INPUT_TYPES = ('working_memory/msg/BoardUpdate', EVENT_TYPE, 'nav_msgs/msg/OccupancyGrid',
               'nav_msgs/msg/Odometry', 'geometry_msgs/msg/PoseStamped')


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One DecisionStatus: what `cabin` decided on the frame (tick, digest); times [s].

    `detail` is the decoded JSON detail (None when empty or not JSON), decoded when read:
    the text takes a fifth of the decoded memory, and a run holds every decision.
    """

    stamp: float
    received: float
    cabin: str
    tick: int
    digest: str
    decision: str
    detail_json: str

    @property
    def detail(self) -> object:
        """Decode the JSON detail: None when empty or not JSON."""
        try:
            return json.loads(self.detail_json) if self.detail_json else None
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class ParameterChange:
    """One ParameterEvent of `node`, stamped `stamp_ns` [ns] by the node's clock when set.

    The node's clock also stamps its frames, so the stamp orders a change among the ticks
    (the bag's receive order does not: the recorder drains a burst of events while
    frames arrive). `values` maps each new or changed parameter to its value; a deleted
    or unset one to None.
    """

    stamp_ns: int
    node: str
    values: Mapping[str, object]


class Messages(Sequence):
    """One input topic's recorded messages, (bag time [ns], message) each, in bag order.

    It holds the messages' CDR bytes, not the messages: each is decoded (by rosbags) when
    read, and a replay reads each once; the bytes take a fifth of the decoded messages'
    memory. `stamps` are the bag times alone.
    """

    def __init__(self, stamps: list[int], data: list[bytes], decode: Callable[[bytes], object]):
        self.stamps, self._data, self._decode = stamps, data, decode

    def __len__(self) -> int:
        return len(self.stamps)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [(self.stamps[i], self._decode(self._data[i]))
                    for i in range(*index.indices(len(self.stamps)))]
        return self.stamps[index], self._decode(self._data[index])

    def __iter__(self) -> Iterator[tuple[int, object]]:
        return ((stamp, self._decode(data)) for stamp, data in zip(self.stamps, self._data))

    def subset(self, indices: Sequence[int]) -> Messages:
        """Return the messages at `indices`, in that order (the bytes are shared)."""
        return Messages([self.stamps[i] for i in indices], [self._data[i] for i in indices],
                        self._decode)


@dataclass(frozen=True)
class Run:
    """A bag of the whole loop: the recording, the input messages, configuration, decisions.

    `recording` is the bag's index (`Recording.whole` False; `frames_whole(run.recording)`
    reads the frames whole) unless `load_run` was given the recording whole.
    `inputs` holds each input topic's messages (`Messages`, bag order) with their
    bag time [ns]; `event_kinds` the LogEvent kind constants as the bag defines them;
    `undecodable` counts, per topic, messages rosbags could not decode (left out).
    `message_ids` holds, per input topic whose every message the recorder identified, each
    message's (publisher gid, sequence number), in the order of `inputs` (RecordedIds).
    """

    recording: Recording
    inputs: Mapping[str, Messages]
    input_types: Mapping[str, str]
    parameters: tuple[ParameterChange, ...]
    decisions: tuple[DecisionRecord, ...]
    event_kinds: Mapping[int, str]
    undecodable: Mapping[str, int] = field(default_factory=dict)
    parameter_topics: tuple[str, ...] = ()
    custom_data: Mapping[str, str] = field(default_factory=dict)
    message_ids: Mapping[str, tuple[tuple[bytes, int], ...]] = field(default_factory=dict)


def load_run(path: str | Path, recording: Recording | None = None) -> Run:
    """Load everything a replay needs from the bag at `path` (and `recording`, if loaded).

    Its memory grows with the bag's input bytes, receipts and decisions, not with its
    frames' packs and windows (left in the bag when no `recording` is given).
    """
    recording = recording or load_recording(path, whole=False)
    with BagReader(path) as reader:
        topics = reader.topics
        # The node names its inputs in every frame's receipt.
        named = {topic for frame in recording.frames for topic in frame.inputs}
        input_topics = sorted(named & set(topics) if named else
                              (t for t, typ in topics.items() if typ in INPUT_TYPES))
        decision_topics = [t for t, typ in topics.items() if typ == DECISION_TYPE]
        parameter_topics = [t for t, typ in topics.items() if typ == PARAMETER_EVENT_TYPE]
        id_topics = [t for t, typ in topics.items() if typ == IDS_TYPE]
        reader.register(input_topics + decision_topics + parameter_topics + id_topics)
        kinds = reader.constant_names(EVENT_TYPE)
        value_fields = _parameter_value_fields()
        inputs: dict[str, tuple[list, list]] = {topic: ([], []) for topic in input_topics}
        decisions, parameters, id_batches = [], [], []
        for message in reader.messages(input_topics + decision_topics + parameter_topics
                                       + id_topics, skip_undecodable=True):
            if message.topic in inputs:
                stamps, data = inputs[message.topic]
                stamps.append(message.stamp_ns)
                data.append(bytes(message.data))
            elif message.msgtype == IDS_TYPE:
                if message.msg.topic in inputs:
                    id_batches.append(message.msg)
            elif message.msgtype == DECISION_TYPE:
                decisions.append(decision_record(message.msg, message.stamp_ns * 1e-9))
            else:
                parameters.append(parameter_change(message.msg, value_fields))
        undecodable = dict(reader.undecodable)
        custom_data = reader.custom_data
        held = {topic: Messages(stamps, data, reader.decoder(topics[topic]))
                for topic, (stamps, data) in inputs.items()}
    ids = {topic: ids for topic, ids in message_ids(id_batches).items()
           if topic in held and len(ids) == len(held[topic]) and not undecodable.get(topic)}
    return Run(recording, held,
               {topic: topics[topic] for topic in input_topics}, tuple(parameters),
               tuple(decisions), kinds, undecodable, tuple(parameter_topics), custom_data, ids)


def message_ids(batches) -> dict[str, tuple[tuple[bytes, int], ...]]:
    """Return {topic: (publisher gid, sequence number) per message} from RecordedIds messages.

    A topic whose batches leave a gap or overlap (a batch lost) is left out: its
    identities could not be matched with its messages.
    """
    ids: dict[str, list[tuple[bytes, int]]] = {}
    broken = set()
    for batch in sorted(batches, key=lambda batch: (batch.topic, int(batch.first_index))):
        held = ids.setdefault(batch.topic, [])
        if int(batch.first_index) != len(held):
            broken.add(batch.topic)
        gids = [bytes.fromhex(gid) for gid in batch.publishers]
        held += [(gids[int(index)], int(sequence))
                 for index, sequence in zip(batch.publisher, batch.sequence)]
    return {topic: tuple(held) for topic, held in ids.items() if topic not in broken}


def decision_record(msg, received: float) -> DecisionRecord:
    """Convert a DecisionStatus received at `received` [s]."""
    return DecisionRecord(seconds(msg.header.stamp), received, sys.intern(msg.cabin),
                          int(msg.tick), msg.digest, sys.intern(msg.decision), msg.detail)


def _parameter_value_fields() -> dict[int, str | None]:
    """Return {ParameterType constant: ParameterValue field} ('bool_value', ...; None: unset)."""
    consts, _ = full_typestore().fielddefs[PARAMETER_TYPE]
    return {value: None if name == 'PARAMETER_NOT_SET'
            else name.removeprefix('PARAMETER_').lower() + '_value'
            for name, _, value in consts}


def parameter_change(msg, value_fields: Mapping[int, str | None]) -> ParameterChange:
    """Convert a ParameterEvent."""
    values: dict[str, object] = {}
    for parameter in (*msg.new_parameters, *msg.changed_parameters):
        field_name = value_fields.get(int(parameter.value.type))
        value = None if field_name is None else getattr(parameter.value, field_name)
        values[parameter.name] = value.tolist() if isinstance(value, np.ndarray) else (
            list(value) if isinstance(value, (list, tuple)) else value)
    for parameter in msg.deleted_parameters:
        values[parameter.name] = None
    stamp = msg.stamp
    return ParameterChange(stamp.sec * 1_000_000_000 + stamp.nanosec, msg.node, values)
