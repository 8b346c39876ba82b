"""Per-tick frozen frames: one immutable pack per cabin, content digests, and a bounded store."""

from __future__ import annotations

import hashlib
import json
import math
import operator
import threading
from collections import OrderedDict
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

import immutables
import numpy as np

from working_memory.core.checks import check_int
from working_memory.core.eviction import EvictionRecord, Readmission
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import Event, Item, Missing, MissingSummary, Source, value_text
from working_memory.core.timebase import epoch_time

DIGEST_HEX_CHARS = 16
_item_key = operator.itemgetter(0)   # Item.key (an Item is a named tuple)
# A Missing as the digest encodes it: its reason (a str enum) is written as its value.
_missing_fields = operator.attrgetter('key', 'reason', 'detail', 'since')
_summary_fields = operator.attrgetter('pattern', 'reason', 'count', 'listed', 'oldest', 'newest')
# An Item's content as the digest encodes it, by position: the very value and source
# (1, 2), and key, importance, stamp, stale, exempt (0, 3, 4, 6, 7) equal; last_used (5)
# and size (8) are not content.
DIGEST_SAME, DIGEST_EQUAL = (1, 2), (0, 3, 4, 6, 7)


@dataclass(frozen=True, eq=False)
class Pack:
    """One cabin's frozen context for one tick; build it with `make_pack`.

    `items` are the board items served (sorted by key), `events` the event
    window served (oldest first), `missing` what the manifest asked for and
    did not get, with reasons. `absent` also explains every other selected key
    that is not served (key -> note, a persistent map the assembler changes tick by
    tick: packs share what did not change), and `readmitted` how each served item that
    had been evicted came back (for `explain`); neither is part of the digest. `summaries`
    count the stale keys each glob selects, of which `missing` lists a few (in the
    digest).
    `stamp` is the tick's ROS time, `effective` the same instant on the
    effective timeline [s] (items' `last_used` and notes' `since` are effective
    time). Its notes are shared with other ticks' packs while they hold (they do
    not age: `Missing.text(pack.effective)` reads the age).
    """

    cabin: str
    tick: int
    stamp: float
    items: tuple[Item, ...]
    events: tuple[Event, ...]
    map_window: FrozenMapWindow | None
    missing: tuple[Missing, ...]
    absent: immutables.Map
    digest: str
    effective: float
    readmitted: tuple[Readmission, ...] = ()
    summaries: tuple[MissingSummary, ...] = ()

    def item(self, key: str) -> Item | None:
        """Return the served item for `key`, or None."""
        return next((item for item in self.items if item.key == key), None)

    def readmission(self, key: str) -> Readmission | None:
        """Return how served `key` came back after an eviction, or None."""
        return next((r for r in self.readmitted if r.key == key), None)

    def ros_time(self, effective: float) -> float:
        """Return effective time `effective` [s] as ROS time of this tick's epoch (>= 0)."""
        return epoch_time(effective, self.stamp, self.effective)


@dataclass(frozen=True, eq=False)
class Frame:
    """The working set frozen for one tick: every cabin of the tick reads the same frame.

    `evictions` and `readmitted` are the working set's transitions in this tick;
    `stamp` is ROS time, `effective` the effective time of the tick [s].
    """

    tick: int
    stamp: float
    packs: Mapping[str, Pack]
    evictions: tuple[EvictionRecord, ...]
    capacity_alarm: bool
    digest: str
    effective: float
    readmitted: tuple[Readmission, ...] = ()

    def pack(self, cabin: str) -> Pack:
        """Return the pack of `cabin`; raise ValueError naming the known cabins."""
        try:
            return self.packs[cabin]
        except KeyError:
            known = ', '.join(self.packs)
            raise ValueError(f'cabin {cabin!r}: unknown (known: {known})') from None


@dataclass(frozen=True, eq=False)
class FrozenMapWindow(MapWindow):
    """A map window whose cells nothing can change: a read-only copy or immutable memory.

    `cells_digest` is the SHA-256 of its cells in C order, computed once when frozen:
    a window kept from one tick to the next is not hashed again.
    """

    cells_digest: bytes = b''


def freeze_window(window: MapWindow | None) -> FrozenMapWindow | None:
    """Return `window` frozen: later map updates cannot change a frozen frame.

    Cells held in immutable memory (a grid made from `bytes`, as the node's is) are
    shared, read-only; any other cells are copied. An already frozen window is
    returned as is, so cabins and ticks share one.
    """
    if window is None or isinstance(window, FrozenMapWindow):
        return window
    if _in_immutable_memory(window.data):
        data = window.data.view()
    else:
        data = np.array(window.data, copy=True, order='C')
    data.flags.writeable = False
    return FrozenMapWindow(data, window.origin, window.resolution,
                           hashlib.sha256(np.ascontiguousarray(data).data).digest())


def _in_immutable_memory(array: np.ndarray) -> bool:
    """Return True when nothing can write `array`'s cells: they live in a bytes object."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return isinstance(base, bytes)


def cells_digest(window: MapWindow) -> bytes:
    """Return the SHA-256 of a window's cells in C order (kept by a frozen window)."""
    if isinstance(window, FrozenMapWindow) and window.cells_digest:
        return window.cells_digest
    return hashlib.sha256(np.ascontiguousarray(window.data).data).digest()


def py_changed_positions(old: Sequence[tuple], new: Sequence[tuple], same: Sequence[int],
                         equal: Sequence[int]) -> list[int]:
    """Return the positions where two equally long lists of tuples differ (the reference).

    At position i a field in `same` differs when it is not the very object, one in
    `equal` when it is neither the very object nor ==. `changed_positions` is the
    same in C (core/_evict.c) when the extension is built.
    """
    if len(old) != len(new):
        raise ValueError('old and new: must be of one length')
    return [i for i, (a, b) in enumerate(zip(old, new))
            if any(a[f] is not b[f] for f in same)
            or any(a[f] is not b[f] and not a[f] == b[f] for f in equal)]


try:
    from working_memory.core._evict import changed_positions
except ImportError:   # a source tree without the built extension
    changed_positions = py_changed_positions


def _digest(parts: Iterable[bytes]) -> str:
    return _digest_framed([_framed(part) for part in parts])


def _framed(part: bytes) -> bytes:
    """Return `part` with its length prefix, as the digest hashes it (no ambiguous joins)."""
    return len(part).to_bytes(8, 'little') + part


def _digest_framed(framed: list[bytes]) -> str:
    """Return the digest of length-prefixed parts: one hash of their join."""
    return hashlib.sha256(b''.join(framed)).hexdigest()[:DIGEST_HEX_CHARS]


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(',', ':')).encode()


class _Group:
    """A group's (a pack's) last item list as the digest encoded it, kept to compare with."""

    __slots__ = ('items', 'kept', 'parts')

    def __init__(self, items: tuple, used: dict, parts: list[bytes]):
        self.items = list(items)
        self.kept = list(map(used.__getitem__, map(_item_key, items)))
        self.parts = list(parts)


class ItemEncodings:
    """The canonical encoding of each item's and event's content, kept while it is the same.

    A pack digest encodes every item and event; an assembler passes one of these
    to `make_pack` so an item or event unchanged since the last tick is not
    encoded again. What no pack used since the last `end_tick` is forgotten then.
    Without it `make bench`'s three-cabin frame takes 1.38 ms instead of 0.64 (BENCHMARKS.md).
    """

    def __init__(self):
        self._kept: dict[str, tuple] = {}
        self._used: dict[str, tuple] = {}
        self._events_kept: dict[int, tuple[Event, bytes]] = {}
        self._events_used: dict[int, tuple[Event, bytes]] = {}
        self._shapes: dict[int, tuple] = {}
        self._shapes_used: dict[int, tuple] = {}
        # By a note's identity (packs of many ticks share one): the note, its JSON text.
        self._missing: dict[int, tuple[Missing, bytes]] = {}
        self._missing_used: dict[int, tuple[Missing, bytes]] = {}
        # By the missing tuple's identity (packs of many ticks share one): its text, unhashed.
        self._missing_of: dict[int, tuple[tuple, bytes]] = {}
        self._missing_of_used: dict[int, tuple[tuple, bytes]] = {}
        # Per group (a pack's cabin): its last item list (see framed_all).
        self._groups: dict[str, _Group] = {}
        self._groups_used: dict[str, _Group] = {}

    def framed(self, item: Item) -> bytes:
        """Return the item's encoding with its length prefix (as the digest hashes it)."""
        return self.framed_all((item,))[0]

    def framed_all(self, items: Iterable[Item], group: str | None = None) -> list[bytes]:
        """Return each item's encoding with its length prefix, in order (one call per pack).

        With `group` (a pack's cabin), a list of the same length as the group's last one
        looks up only the items whose value object or other content changed; the others'
        parts are the last list's, found without a Python call per item.
        """
        if group is None:
            return self._framed_each(items)
        items = items if items.__class__ is tuple else tuple(items)
        last = self._groups_used.get(group) or self._groups.get(group)
        if last is not None and len(last.items) == len(items):
            changed = changed_positions(last.items, items, DIGEST_SAME, DIGEST_EQUAL)
            if len(changed) * 2 <= len(items):
                # Look up first, then update: a failed encoding leaves the group whole.
                news = self._framed_each([items[i] for i in changed])
                used = self._used
                for i, part in zip(changed, news):
                    last.items[i], last.kept[i], last.parts[i] = items[i], used[items[i][0]], part
                used.update(zip(map(_item_key, last.items), last.kept))
                self._groups_used[group] = last
                return list(last.parts)
        parts = self._framed_each(items)
        self._groups_used[group] = _Group(items, self._used, parts)
        return parts

    def _framed_each(self, items: Iterable[Item]) -> list[bytes]:
        """Return each item's framed encoding, looked up (or made) item by item."""
        return framed_each(items, self._used, self._kept)

    def carry(self, group: str) -> None:
        """Keep the group's last item list and its items' encodings through this tick.

        For a pack handed out again without a digest made (its content the same): its
        encodings then stay for the tick its content changes.
        """
        last = self._groups_used.get(group) or self._groups.get(group)
        if last is not None:
            self._groups_used[group] = last
            self._used.update(zip(map(_item_key, last.items), last.kept))

    def rest(self, map_window: MapWindow | None, missing: tuple[Missing, ...]) -> tuple:
        """Return the canonical JSON of a pack's map shape and missing list, kept while same.

        The shape is kept per window object (frozen windows live across ticks); the
        missing list while it is the same tuple, and each note's text while the same note,
        so a list that changed by a few notes encodes those few (a JSON array is its
        elements' texts joined by commas).
        """
        shape = self._shapes_used.get(id(map_window)) or self._shapes.get(id(map_window))
        if shape is None or shape[0] is not map_window:
            shape = (map_window, _shape_encoding(map_window))
        self._shapes_used[id(map_window)] = shape
        if not missing:
            return shape[1], b'[]'
        same = self._missing_of_used.get(id(missing)) or self._missing_of.get(id(missing))
        if same is not None and same[0] is missing:
            self._missing_of_used[id(missing)] = same
            return shape[1], same[1]
        used, kept, texts = self._missing_used, self._missing, []
        append = texts.append
        for entry in missing:
            found = used.get(id(entry)) or kept.get(id(entry))
            if found is None or found[0] is not entry:
                found = (entry, _canonical(list(_missing_fields(entry))))
            used[id(entry)] = found
            append(found[1])
        text = b''.join((b'[', b','.join(texts), b']'))
        self._missing_of_used[id(missing)] = (missing, text)
        return shape[1], text

    def event(self, event: Event) -> bytes:
        """Return the event's JSON text in a pack digest, kept while the event object lives."""
        kept = self._events_used.get(event.seq) or self._events_kept.get(event.seq)
        if kept is None or kept[0] is not event:
            kept = (event, _event_encoding(event))
        self._events_used[event.seq] = kept
        return kept[1]

    def end_tick(self) -> None:
        """Forget the encodings no pack of the ending tick used."""
        self._kept, self._used = self._used, {}
        self._events_kept, self._events_used = self._events_used, {}
        self._shapes, self._shapes_used = self._shapes_used, {}
        self._missing, self._missing_used = self._missing_used, {}
        self._missing_of, self._missing_of_used = self._missing_of_used, {}
        self._groups, self._groups_used = self._groups_used, {}


_JSON_BOOLS = {True: 'true', False: 'false'}
# A source's JSON text, looked up (an enum's value is two Python calls per item).
_SOURCE_JSON = {source: encode_basestring_ascii(source.value) for source in Source}


def _item_encoding(item: Item) -> bytes:
    """Return the canonical JSON of an item's content, joined around its value's kept text.

    The same text as `_canonical` of [key, value, source, importance, stamp, stale,
    exempt]; the common item (finite float numbers, bool flags) is written without
    encoding its value again (`value_text`), anything else is encoded as a whole.
    """
    key, value, source, importance, stamp, _, stale, exempt = item[:8]
    if (importance.__class__ is float and stamp.__class__ is float and stale.__class__ is bool
            and exempt.__class__ is bool and key.__class__ is str
            and -math.inf < importance < math.inf and -math.inf < stamp < math.inf):
        try:
            text = value_text(value)
        except ValueError:   # NaN or Infinity: json.dumps writes them, as _canonical does
            text = None
        if text is not None:
            return (f'[{encode_basestring_ascii(key)},{text},'
                    f'{_SOURCE_JSON[source]},{importance!r},{stamp!r},'
                    f'{_JSON_BOOLS[stale]},{_JSON_BOOLS[exempt]}]').encode()
    return _canonical([key, value, source.value, importance, stamp, stale, exempt])


def framed_each(items: Iterable[Item], used: dict[str, tuple],
                kept_before: dict[str, tuple]) -> list[bytes]:
    """Return each item's framed encoding, from `used` or `kept_before` while it holds.

    A kept encoding is (value, source, importance, stamp, stale, exempt, framed bytes):
    it holds while the item has the very value and source and equal other content; a new
    one is made otherwise. Each item's is put in `used`.
    """
    parts = []
    append = parts.append
    for item in items:
        # Item fields by position: 0 key, 1 value, 2 source, 3 importance, 4 stamp,
        # 6 stale, 7 exempt (5 last_used and 8 size are not content).
        key = item[0]
        kept = used.get(key) or kept_before.get(key)
        if (kept is None or kept[0] is not item[1] or kept[1] is not item[2]
                or kept[2] != item[3] or kept[3] != item[4] or kept[4] != item[6]
                or kept[5] != item[7]):
            text = _item_encoding(item)
            kept = (item[1], item[2], item[3], item[4], item[6], item[7],
                    len(text).to_bytes(8, 'little') + text)
        used[key] = kept
        append(kept[6])
    return parts


def _shape_encoding(map_window: MapWindow | None) -> bytes:
    """Return the canonical JSON of a window's origin, resolution and shape (null without)."""
    return _canonical(None if map_window is None else [
        list(map_window.origin), map_window.resolution, list(map_window.data.shape)])


def _event_encoding(event: Event) -> bytes:
    return _canonical([event.seq, event.stamp, event.kind.value, event.source, event.key,
                       event.detail, event.importance, list(event.tags)])


def pack_digest(items: Iterable[Item], events: Iterable[Event], map_window: MapWindow | None,
                missing: Iterable[Missing], encodings: ItemEncodings | None = None,
                group: str | None = None, summaries: Sequence[MissingSummary] = ()) -> str:
    """Return a pack's content digest: the same items, events, map and missing, the same digest.

    Bookkeeping that changes every tick without changing content (tick,
    stamp, `last_used`) is left out. Each item is encoded on its own (with
    `encodings`, once while it is unchanged, as is each event); the map's cells
    enter as their hash. The rest is the canonical JSON of {events, items (their
    count), map, missing}, joined from the events' own encodings (the same text).
    `group` (the pack's cabin) lets `encodings` reuse the group's unchanged item list whole.
    The missing summaries enter the JSON only when there are some.
    """
    if encodings is None:
        parts = [_framed(_item_encoding(item)) for item in items]
        texts = [_event_encoding(event) for event in events]
        shape = _shape_encoding(map_window)
        missing = _canonical(list(map(_missing_fields, missing)))
    else:
        parts = encodings.framed_all(items, group)
        texts = [encodings.event(event) for event in events] if events else ()
        shape, missing = encodings.rest(map_window, tuple(missing))
    # Keys in sorted order, as json.dumps(sort_keys=True) writes them.
    counted = b''
    if summaries:
        counted = b',"summaries":' + _canonical(list(map(_summary_fields, summaries)))
    rest = b''.join((b'{"events":[', b','.join(texts), b'],"items":', str(len(parts)).encode(),
                     b',"map":', shape, b',"missing":', missing, counted, b'}'))
    parts.append(_framed(rest))
    if map_window is not None:
        parts.append(_framed(cells_digest(map_window)))
    return _digest_framed(parts)


def make_pack(cabin: str, tick: int, stamp: float, items: Iterable[Item],
              events: Iterable[Event], map_window: MapWindow | None,
              missing: Iterable[Missing], absent: Iterable[Missing] | immutables.Map = (), *,
              effective: float | None = None, readmitted: Iterable[Readmission] = (),
              encodings: ItemEncodings | None = None,
              summaries: Iterable[MissingSummary] = ()) -> Pack:
    """Freeze one cabin's pack: tuples, items sorted by key, a read-only map window, digest.

    `effective` [s] defaults to `stamp` (no clock reset so far); `encodings` lets
    the digest reuse unchanged items' encodings (see `ItemEncodings`); `summaries`
    count the stale keys of each glob (`MissingSummary`).
    """
    items = tuple(sorted(items, key=_item_key))
    events = tuple(events)
    missing = tuple(missing)
    map_window = freeze_window(map_window)
    # A map of notes is kept as it is: packs of many ticks then share it.
    notes = absent if absent.__class__ is immutables.Map else immutables.Map(
        {note.key: note for note in absent})
    summaries = summaries if summaries.__class__ is tuple else tuple(summaries)
    return Pack(cabin, tick, stamp, items, events, map_window, missing, notes,
                pack_digest(items, events, map_window, missing, encodings, cabin, summaries),
                stamp if effective is None else effective, tuple(readmitted), summaries)


def make_frame(tick: int, stamp: float, packs: Iterable[Pack],
               evictions: Iterable[EvictionRecord] = (), capacity_alarm: bool = False, *,
               effective: float | None = None, readmitted: Iterable[Readmission] = ()) -> Frame:
    """Freeze a tick's packs (in cabin order) into a frame whose digest covers every pack's."""
    packs = {pack.cabin: pack for pack in packs}
    digest = _digest(f'{cabin}={pack.digest}'.encode() for cabin, pack in packs.items())
    return Frame(tick, stamp, MappingProxyType(packs), tuple(evictions), bool(capacity_alarm),
                 digest, stamp if effective is None else effective, tuple(readmitted))


class FrameNotFound(LookupError):
    """The requested tick is not retained (never frozen, or already dropped)."""


class FrameStore:
    """The latest `keep` frozen frames by tick; thread-safe."""

    def __init__(self, keep: int):
        self._keep = check_int(keep, 'keep', 1)
        self._lock = threading.Lock()
        self._frames: OrderedDict[int, Frame] = OrderedDict()

    def publish(self, frame: Frame) -> None:
        """Retain `frame`; ticks must increase. The oldest frame beyond `keep` is dropped."""
        if not isinstance(frame, Frame):
            raise ValueError(f'frame: must be a Frame, got {type(frame).__name__}')
        with self._lock:
            if self._frames:
                latest = next(reversed(self._frames))
                if frame.tick <= latest:
                    raise ValueError(f'frame.tick: must be > the latest tick {latest}, '
                                     f'got {frame.tick}')
            self._frames[frame.tick] = frame
            while len(self._frames) > self._keep:
                self._frames.popitem(last=False)

    def latest(self) -> Frame | None:
        """Return the newest frame, or None before the first publish."""
        with self._lock:
            return self._frames[next(reversed(self._frames))] if self._frames else None

    def get(self, tick: int) -> Frame:
        """Return the frame of `tick` (0: the latest); raise FrameNotFound naming what is kept."""
        if tick == 0:
            frame = self.latest()
            if frame is None:
                raise FrameNotFound('tick 0 (latest): no frame has been frozen yet')
            return frame
        with self._lock:
            frame = self._frames.get(tick)
            if frame is not None:
                return frame
            if not self._frames:
                raise FrameNotFound(f'tick {tick}: no frame has been frozen yet')
            first, last = next(iter(self._frames)), next(reversed(self._frames))
        raise FrameNotFound(f'tick {tick}: not retained (retained ticks {first}..{last}, '
                            f'keeping the latest {self._keep})')

    def retained(self) -> tuple[int, int] | None:
        """Return (oldest, newest) retained tick, or None when empty."""
        with self._lock:
            if not self._frames:
                return None
            return next(iter(self._frames)), next(reversed(self._frames))

    @property
    def keep(self) -> int:
        """How many frames are retained."""
        return self._keep

    def __len__(self) -> int:
        return len(self._frames)
