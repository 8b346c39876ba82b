"""A frozen frame as the bytes rclpy would put on the wire, reusing what did not change.

Pure Python + numpy (no rclpy, no message modules). The node publishes these bytes
with rclpy's serialized-message publishing, so a tick pays neither for building
message objects nor for rclpy's conversion of them: it pays for what changed since
the last tick. Every string, value text and map window is encoded once and kept
while the object it came from lives (`FrameEncoder` caches by identity); a tick
then joins cached pieces and packs the few numbers that differ (stamps, tick).

The layout is CDR (XCDR1, little endian), as Fast DDS and rmw serialize ROS 2
messages: each primitive aligned to its size (8 at most) from the start of the
payload, which follows a 4-byte encapsulation header; a string is a uint32 length
counting its NUL, the UTF-8 bytes and the NUL; a sequence a uint32 count and the
elements. `test/ros/test_wire.py` checks every byte against rclpy's own
`serialize_message` of `conversions.context_frame_msg`, on generated frames.
What it buys against that rclpy path, on and off (BENCHMARKS.md, "What each speed mechanism
buys"): node CPU at 100 Hz + 1 kHz 22.6 against 32.6 %, CPU per tick at 5,000 items 6.9
against 9.7 ms, frame latency p50 1.18x against 2.48x the plain node's.
"""

from __future__ import annotations

import json
import operator
import struct
from typing import Mapping

import numpy as np

from working_memory.core.frames import Frame, Pack, changed_positions
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import (Event, EventKind, Item, Missing, MissingReason,
                                       value_text)
from working_memory.core.windows import window_digest

ENCAPSULATION = b'\x00\x01\x00\x00'   # CDR little endian, no options
# The canonical compact strict JSON of every value text (conversions.json_text too).
CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(',', ':'), allow_nan=False)
_U32 = struct.Struct('<I')
_TIME = struct.Struct('<iI')
_F64 = struct.Struct('<d')
_U64 = struct.Struct('<Q')
# WorkingItem after its strings: float64 importance, Time stamp, Time last_used, bool stale,
# bool exempt.
_ITEM_TAIL = struct.Struct('<diIiI??')
_ITEM_TIME_FROM_END = 10   # last_used starts 10 bytes before a WorkingItem's end
_ITEM_FLAGS = 2            # and the two bools after it end the item
# MapMetaData after its map_load_time (a Time): float32 resolution, uint32 width, height.
_MAP_SIZE = struct.Struct('<fII')
# The MapMetaData and Pose of a pack without a window: all zeros but orientation w = 1.
_NO_MAP = bytes(20)
# Pose: position x, y, z then orientation x, y, z, w (float64 each).
_POSE = struct.Struct('<7d')
_ZEROS = bytes(8)
# MissingSummary after its reason: uint32 count, listed, then Time oldest, newest.
_SUMMARY_TAIL = struct.Struct('<IIiIiI')
# MissingItem.ages: false, true (a CDR bool is one byte).
_NO_AGE, _AGES = b'\x00', b'\x01'
# An Item's fields a WorkingItem's bytes (but last_used) depend on, by position: the very
# value and source (1, 2); key, importance, stamp, stale, exempt (0, 3, 4, 6, 7) equal.
_WIRE_SAME, _WIRE_EQUAL = (1, 2), (0, 3, 4, 6, 7)
_LAST_USED = operator.itemgetter(5)
# A (piece, split) pair's parts; a split's (bytes before last_used, flags, length).
_PIECE, _SPLIT = operator.itemgetter(0), operator.itemgetter(1)
_BEFORE, _FLAGS, _LENGTH = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter(2)
_ITEM_PHASE = 2   # where every WorkingItem after a pack's first starts (offset modulo 8)


def nanoseconds(seconds: float) -> tuple[int, int]:
    """Return float seconds [s] as builtin_interfaces/Time (sec, nanosec), clamped at 0."""
    total = max(0, round(seconds * 1e9))
    return total // 1_000_000_000, total % 1_000_000_000


def cdr_string(text: str) -> bytes:
    """Return a CDR string without its alignment: uint32 length (with the NUL), UTF-8, NUL."""
    data = text.encode()
    return _U32.pack(len(data) + 1) + data + b'\x00'


def item_split(item: Item, text: str, phase: int) -> tuple[bytes, bytes, int]:
    """Return a WorkingItem's (bytes before last_used, stale + exempt, length [bytes]).

    The item starts at `phase` (offset modulo 8); `text` is its value's text.
    """
    piece = Writer()
    piece.offset = phase
    # Item fields by position: 0 key, 2 source, 3 importance, 4 stamp, 6 stale, 7 exempt.
    piece.string(cdr_string(item[0]))
    piece.string(cdr_string(text))
    piece.string(cdr_string(item[2].value))
    piece.put(_ITEM_TAIL.pack(item[3], *nanoseconds(item[4]), 0, 0, item[6], item[7]), 8)
    data = b''.join(piece.parts[1:])
    return data[:-_ITEM_TIME_FROM_END], data[-_ITEM_FLAGS:], len(data)


def item_pieces(items: tuple, positions, phase: int, used: dict, kept: dict,
                text_of) -> list[tuple[tuple, tuple]]:
    """Return the (piece, split) of `items` at `positions`, reusing kept pieces.

    A piece is (value, source, importance, stale, exempt, {phase: split}, stamp); a key's
    piece in `used` (else `kept`) is reused while it holds the very value and source and
    equal importance, flags and stamp, and is put in `used` either way. A split is
    `item_split`'s, made once per piece and phase with `text_of(value)`: the item at
    position 0 starts at `phase`, every later one at phase 2.
    """
    pairs = []
    for position in positions:
        # Item fields by position: 0 key, 1 value, 2 source, 3 importance, 4 stamp, 6 stale,
        # 7 exempt. The value must be the very object (1, 1.0 and True encode apart).
        item = items[position]
        piece = used.get(item[0]) or kept.get(item[0])
        if piece is None or not (piece[0] is item[1] and piece[1] is item[2]
                                 and piece[2] == item[3] and piece[3] == item[6]
                                 and piece[4] == item[7] and piece[6] == item[4]):
            piece = (item[1], item[2], item[3], item[6], item[7], {}, item[4])
        used[item[0]] = piece
        at = phase if position == 0 else _ITEM_PHASE
        split = piece[5].get(at)
        if split is None:
            split = piece[5][at] = item_split(item, text_of(item[1]), at)
        pairs.append((piece, split))
    return pairs


class Writer:
    """Append CDR pieces, tracking the payload offset that alignment is counted from."""

    __slots__ = ('parts', 'offset')

    def __init__(self):
        self.parts: list[bytes] = [ENCAPSULATION]
        self.offset = 0

    def align(self, size: int) -> None:
        """Pad with zeros to a multiple of `size` (1, 2, 4 or 8) [bytes]."""
        pad = -self.offset % size
        if pad:
            self.parts.append(_ZEROS[:pad])
            self.offset += pad

    def put(self, data: bytes, alignment: int = 1) -> None:
        """Append `data`, which must start aligned to `alignment` [bytes]."""
        # align() written out: a frame makes some fifty puts.
        pad = -self.offset % alignment
        if pad:
            self.parts += (_ZEROS[:pad], data)
        else:
            self.parts.append(data)
        self.offset += pad + len(data)

    def string(self, encoded: bytes) -> None:
        """Append a string made by `cdr_string`."""
        self.put(encoded, 4)

    def count(self, number: int) -> None:
        """Append a sequence's element count."""
        self.put(_U32.pack(number), 4)

    def header(self, stamp: tuple[int, int], frame_id: bytes) -> None:
        """Append a std_msgs/Header: the stamp and the encoded frame_id."""
        self.put(_TIME.pack(*stamp), 4)
        self.string(frame_id)

    def getvalue(self) -> bytes:
        """Return the whole serialized message, encapsulation header first."""
        return b''.join(self.parts)


class _Segments(Writer):
    """A Writer that leaves out the tick's times: the bytes between them, as segments."""

    __slots__ = ('cuts',)

    def __init__(self, phase: int):
        super().__init__()
        self.parts, self.offset, self.cuts = [], phase, []

    def time(self, alignment: int = 4) -> None:
        """Leave out an 8-byte tick-dependent field (a Time, or a uint64 `alignment` 8)."""
        self.align(alignment)
        self.cuts.append(b''.join(self.parts))
        self.parts = []
        self.offset += 8

    def segments(self) -> list[bytes]:
        """Return the bytes before, between and after the times left out."""
        return self.cuts + [b''.join(self.parts)]


class _Tail:
    """A pack's bytes from its nearby_map to its missing items, kept while their sources hold.

    Those bytes depend on the tick only through its time (the map's header and load
    time), so while the window is the very object, the events the very objects, the
    missing entries equal and the epoch the same, they are their kept segments joined by
    the tick's time; kept per start phase (offset modulo 8).
    """

    __slots__ = ('frame_id', 'inline', 'window', 'events', 'missing', 'shift', 'by_phase',
                 'event_pieces')

    def __init__(self, frame_id: bytes, inline: bool, pack: Pack):
        self.frame_id, self.inline = frame_id, inline
        self.window, self.events, self.missing = pack.map_window, pack.events, pack.missing
        self.shift = pack.stamp - pack.effective   # the epoch of the notes' since times
        self.by_phase: dict[int, tuple[list[bytes], int]] = {}
        self.event_pieces: dict[int, _Piece] = {}

    def holds(self, frame_id: bytes, inline: bool, pack: Pack) -> bool:
        """Return True when `pack` (under `frame_id`, `inline`) has this tail's sources."""
        events = pack.events
        return (pack.map_window is self.window and frame_id == self.frame_id
                and inline == self.inline and len(events) == len(self.events)
                and all(map(operator.is_, events, self.events))
                and pack.missing == self.missing
                and pack.stamp - pack.effective == self.shift)


class _Piece:
    """Encoded bytes of immutable `sources` at each start offset modulo 8."""

    __slots__ = ('sources', 'by_phase')

    def __init__(self, sources: tuple):
        self.sources = sources
        self.by_phase: dict[int, bytes] = {}

    def holds(self, sources: tuple) -> bool:
        """Return True when this piece encodes the very same objects."""
        return all(mine is theirs for mine, theirs in zip(self.sources, sources))


class _Section:
    """A pack's WorkingItems as last written: what they held and their bytes around last_used.

    Every WorkingItem ends 2 bytes past a multiple of 8 (its tail starts with an aligned
    float64), so every item but the first starts at phase 2 whatever its length: an
    item's bytes do not depend on the items before it. While a cabin's items are the
    same list of keys all used at the tick, only the items that changed (and the first,
    when the section starts at another phase) are encoded again; the section is its kept
    segments joined by the tick's time.
    """

    __slots__ = ('phase', 'items', 'pieces', 'splits', 'length', 'segments')

    def __init__(self, phase: int, items: tuple, pieces: list, splits: list, length: int):
        self.phase = phase
        self.items = list(items)
        self.pieces = pieces
        self.splits = splits
        self.length = length
        self.segments: list[bytes] | None = None

    def changed(self, phase: int, items: tuple, effective: float) -> list[int] | None:
        """Return the positions of `items` to encode again, or None to write them all anew."""
        if (len(items) != len(self.items)
                or list(map(_LAST_USED, items)).count(effective) != len(items)):
            return None
        changed = changed_positions(self.items, items, _WIRE_SAME, _WIRE_EQUAL)
        if phase != self.phase and items and changed[:1] != [0]:
            changed.insert(0, 0)
        return changed if len(changed) * 2 <= len(items) else None

    def update(self, items: tuple, changed: list[int], phase: int, news: list) -> None:
        """Take the (piece, split) `news` of the `changed` positions of `items` at `phase`."""
        segments = self.joinable()
        splits = self.splits
        for i, (piece, split) in zip(changed, news):
            self.length += split[2] - splits[i][2]
            splits[i], self.pieces[i], self.items[i] = split, piece, items[i]
        last = len(splits) - 1
        for i in changed:
            segments[i] = splits[i][0] if i == 0 else splits[i - 1][1] + splits[i][0]
            segments[i + 1] = splits[i][1] if i == last else splits[i][1] + splits[i + 1][0]
        self.phase = phase

    def joinable(self) -> list[bytes]:
        """Return the segments between the items' last_used times (made once)."""
        if self.segments is None:
            # Each item's flags and the next one's bytes before last_used, joined in C.
            befores, flags = list(map(_BEFORE, self.splits)), list(map(_FLAGS, self.splits))
            self.segments = ([befores[0], *map(operator.add, flags, befores[1:]), flags[-1]]
                             if befores else [b''])
        return self.segments


class FrameEncoder:
    """Serialize frames as ContextFrame bytes, caching what each frame shares with the last.

    `kind_codes` and `reason_codes` are the LogEvent and MissingItem constants of
    the message definitions (the ROS face passes them in). Cached pieces are kept
    while the object they encode is in the latest frame; older ones are dropped (items'
    pieces, by key, once they are many more than a frame's items).
    """

    def __init__(self, kind_codes: Mapping[EventKind, int],
                 reason_codes: Mapping[MissingReason, int]):
        self._kind_codes = dict(kind_codes)
        self._reason_bytes = {reason: bytes((code,)) for reason, code in reason_codes.items()}
        self._strings: dict[str, bytes] = {}
        # (key, reason, detail, phase) -> a MissingItem's bytes, this frame's and the last's.
        # id of a note -> (the note, its pack's epoch shift [s], start phase, its bytes).
        self._missing_used: dict[int, tuple] = {}
        self._missing_kept: dict[int, tuple] = {}
        # key -> its latest piece (see item_pieces), kept across frames: cleared when it
        # holds many more than a frame's items (keys gone from the board).
        self._items: dict[str, tuple] = {}
        self._events: dict[int, _Piece] = {}
        # id(window) -> (window, its cells in C order or None until inlined, encoded digest),
        # this frame's and the last's.
        self._windows: dict[int, tuple[MapWindow, bytes | None, bytes]] = {}
        self._windows_used: dict[int, tuple[MapWindow, bytes | None, bytes]] = {}
        # Per cabin (dropped with the cabin, not every frame: fewer dicts made per tick):
        # its last item section (see _items_of) and its last pack's tail (see _Tail).
        self._sections: dict[str, _Section] = {}
        self._tails: dict[str, _Tail] = {}
        # (phase, frame_id, cabin, item count) -> a pack's segments around its stamp and
        # tick up to its items, and their length (a few per cabin: cleared when many).
        self._heads: dict[tuple, tuple[bytes, bytes, bytes, int]] = {}
        # The last frame's frame_id and its frame header's bytes between stamp and tick.
        self._frame_head: tuple[bytes, bytes] = (b'', b'')
        # The last frame's (phase, input topics), its inputs_received segments around the
        # counts and their length (see _inputs_segments).
        self._inputs: tuple = (None, [b''], 0)
        # The last frame's (phase, input starts) and their bytes (they change when a
        # publisher is first heard).
        self._starts: tuple = (None, b'')

    # -- frames ---------------------------------------------------------------

    def frame(self, frame: Frame, map_frame: str,
              inputs_received: Mapping[str, int] | None = None,
              inline_windows: bool = True, started: float = 0.0,
              resyncing: bool = False, start_id: str = '',
              input_starts: tuple[tuple[str, bytes, int], ...] = (),
              taken_order: tuple[tuple[int, int], ...] | None = None, *,
              restart: bool = False) -> bytes:
        """Return `frame` serialized as a ContextFrame (packs in cabin order).

        `inputs_received` is {resolved input topic: messages received before the tick},
        `input_starts` (resolved topic, publisher gid, first sequence number) per publisher,
        `taken_order` the runs (index into input_starts, count) since the last frame;
        without `inline_windows` each pack's nearby_map is empty and only its
        map_window_digest names the window (map windows by reference). `started` [s],
        `resyncing`, `start_id` and `restart` are the node's (ContextFrame.started, ...).
        """
        writer = Writer()
        frame_id = self._string(map_frame)
        if self._frame_head[0] != frame_id:
            # The header starts the payload: its stamp at 0, the tick aligned after frame_id.
            self._frame_head = (frame_id, frame_id + _ZEROS[:-(8 + len(frame_id)) % 8])
        tick_time = _TIME.pack(*nanoseconds(frame.stamp))
        # The digest (new every tick, not kept) starts aligned after the tick; its count next.
        digest = cdr_string(frame.digest)
        pad = _ZEROS[:-len(digest) % 4]
        writer.parts += (tick_time, self._frame_head[1], _U64.pack(frame.tick), digest, pad,
                         _U32.pack(len(frame.packs)))
        writer.offset = 20 + len(self._frame_head[1]) + len(digest) + len(pad)
        used_events, items = {}, 0
        for pack in frame.packs.values():
            self._pack(writer, pack, frame_id, used_events, inline_windows,
                       tick_time if pack.stamp == frame.stamp else None)
            items += len(pack.items)
        inputs = inputs_received or {}
        key = (writer.offset % 8, tuple(inputs))
        if self._inputs[0] != key:
            self._inputs = (key, *self._inputs_segments(*key))
        segments, length = self._inputs[1:]
        for segment, received in zip(segments, inputs.values()):
            writer.parts += (segment, _U64.pack(received))
        writer.parts.append(segments[-1])
        writer.offset += length
        pad = -writer.offset % 4
        writer.parts += (_ZEROS[:pad], _TIME.pack(*nanoseconds(started)),
                         b'\x01' if resyncing else b'\x00')
        writer.offset += pad + 9
        pad, start = -writer.offset % 4, self._string(start_id)
        writer.parts += (_ZEROS[:pad], start)
        writer.offset += pad + len(start)
        key = (writer.offset % 8, input_starts)
        if self._starts[0] != key:
            self._starts = (key, self._starts_bytes(*key))
        writer.parts.append(self._starts[1])
        writer.offset += len(self._starts[1])
        # taken_from and taken_count: uint32 sequences, aligned at 4 after the starts.
        runs = taken_order or ()
        pad = -writer.offset % 4
        order = (_ZEROS[:pad] + _U32.pack(len(runs))
                 + b''.join(_U32.pack(index) for index, _ in runs) + _U32.pack(len(runs))
                 + b''.join(_U32.pack(count) for _, count in runs)
                 + (b'\x01' if restart else b'\x00'))
        writer.parts.append(order)
        writer.offset += len(order)
        # Keep what this frame used; what it no longer holds is not coming back.
        self._events = used_events
        if len(self._items) > 2 * items + 256:
            self._items = {}
        self._windows, self._windows_used = self._windows_used, {}
        self._missing_kept, self._missing_used = self._missing_used, {}
        if len(self._sections) > len(frame.packs) or len(self._tails) > len(frame.packs):
            self._sections = {cabin: section for cabin, section in self._sections.items()
                              if cabin in frame.packs}
            self._tails = {cabin: tail for cabin, tail in self._tails.items()
                           if cabin in frame.packs}
        if len(self._heads) > 8 * len(frame.packs) + 8:
            self._heads = {}
        if len(self._strings) > 4 * (items + len(used_events)) + 256:
            self._strings = {}
        return writer.getvalue()

    # -- pieces ----------------------------------------------------------------

    def _inputs_segments(self, phase: int, topics: tuple[str, ...]) -> tuple[list[bytes], int]:
        """Return inputs_received's bytes around its uint64 counts, and their length [bytes]."""
        piece = _Segments(phase)
        piece.count(len(topics))
        for topic in topics:
            piece.string(self._string(topic))
            piece.time(8)
        return piece.segments(), piece.offset - phase

    def _starts_bytes(self, phase: int, starts: tuple[tuple[str, bytes, int], ...]) -> bytes:
        """Return input_starts' bytes (InputStart[]) starting at offset `phase` modulo 8."""
        piece = _Segments(phase)
        piece.count(len(starts))
        for topic, publisher, first in starts:
            piece.string(self._string(topic))
            piece.put(_U32.pack(len(publisher)) + publisher, 4)
            piece.put(_U64.pack(first), 8)
        return b''.join(piece.parts)

    def _string(self, text: str) -> bytes:
        encoded = self._strings.get(text)
        if encoded is None:
            encoded = self._strings[text] = cdr_string(text)
        return encoded

    def _pack(self, writer: Writer, pack: Pack, frame_id: bytes, used_events: dict,
              inline_window: bool = True,
              tick_time: bytes | None = None) -> None:
        """Append a pack; `tick_time` is its stamp's bytes when the frame's stamp is its own."""
        # Only the stamp, the tick and the items' last_used depend on the tick alone: the
        # rest is kept segments (head, item section, tail) joined by them.
        if tick_time is None:
            tick_time = _TIME.pack(*nanoseconds(pack.stamp))
        key = (writer.offset % 8, frame_id, pack.cabin, len(pack.items))
        head = self._heads.get(key) or self._head(key)
        writer.parts += (head[0], tick_time, head[1], _U64.pack(pack.tick), head[2])
        writer.offset += head[3]
        self._items_of(writer, pack, tick_time)
        segments, length = self._tail(writer.offset % 8, pack, frame_id, inline_window,
                                      used_events)
        # The tail ends aligned for the digest string that ends the pack.
        digest = self._strings.get(pack.digest) or self._string(pack.digest)
        writer.parts += (tick_time.join(segments), digest)
        writer.offset += length + len(digest)
        self._summaries(writer, pack)

    def _summaries(self, writer: Writer, pack: Pack) -> None:
        """Append a pack's MissingSummary sequence (a few per pack: written every tick)."""
        writer.count(len(pack.summaries))
        for summary in pack.summaries:
            writer.string(self._string(summary.pattern))
            writer.put(self._reason_bytes[summary.reason])
            writer.put(_SUMMARY_TAIL.pack(
                summary.count, summary.listed, *nanoseconds(pack.ros_time(summary.oldest)),
                *nanoseconds(pack.ros_time(summary.newest))), 4)

    def _head(self, key: tuple) -> tuple[bytes, bytes, bytes, int]:
        """Keep and return a pack's bytes up to its items for (phase, frame_id, cabin, count).

        As (before the stamp, before the tick, after it, the length [bytes]).
        """
        phase, frame_id, cabin, count = key
        piece = _Segments(phase)
        piece.time()
        piece.string(frame_id)
        piece.time(8)
        piece.string(self._string(cabin))
        piece.count(count)
        head = self._heads[key] = (*piece.segments(), piece.offset - phase)
        return head

    def _tail(self, phase: int, pack: Pack, frame_id: bytes, inline_window: bool,
              used_events: dict) -> tuple[list[bytes], int]:
        """Return a pack's nearby_map to missing items as segments around the tick's time.

        The last segment ends with the padding before the pack's digest string.
        """
        tail = self._tails.get(pack.cabin)
        if tail is None or not tail.holds(frame_id, inline_window, pack):
            tail = self._tails[pack.cabin] = _Tail(frame_id, inline_window, pack)
        window = pack.map_window
        if window is not None and inline_window:
            self._window(window)   # its cells copied once while in the frames
        built = tail.by_phase.get(phase)
        if built is None:
            piece = _Segments(phase)
            self._map(piece, window if inline_window else None, frame_id)
            piece.string(self._string('') if window is None else self._window(window)[2])
            piece.count(len(pack.events))
            for event in pack.events:
                piece.put(self._cached(self._events, used_events, event.seq, (event,),
                                       piece.offset, self._event_bytes))
            tail.event_pieces = {event.seq: used_events[event.seq] for event in pack.events}
            piece.count(len(pack.missing))
            self._missing(piece, pack)
            piece.align(4)
            built = tail.by_phase[phase] = (piece.segments(), piece.offset - phase)
        else:
            used_events.update(tail.event_pieces)
        return built

    @staticmethod
    def _cached(cache: dict, used: dict, key, sources: tuple, offset: int, encode) -> bytes:
        """Return `encode(*sources, phase)` at `offset`, from `cache` while the same objects."""
        piece = used.get(key) or cache.get(key)
        if piece is None or not piece.holds(sources):
            piece = _Piece(sources)
        used[key] = piece
        phase = offset % 8
        data = piece.by_phase.get(phase)
        if data is None:
            data = piece.by_phase[phase] = encode(*sources, phase)
        return data

    def _items_of(self, writer: Writer, pack: Pack, tick_time: bytes) -> None:
        """Append a pack's WorkingItems from cached pieces, each around its last_used time."""
        # An item's bytes depend on where it starts and on its content, not on the tick: a
        # piece is kept as the bytes before last_used and the flags after it, and the time
        # (the tick's for every item served this tick) goes between them in the join.
        # Items are rebuilt every tick (last_used); their content objects are not.
        parts, offset = writer.parts, writer.offset
        effective, items = pack.effective, pack.items
        section = self._sections.get(pack.cabin)
        changed = None if section is None else section.changed(offset % 8, items, effective)
        if changed is not None:
            # Encode first, then update: a value that fails to encode leaves the section whole.
            # The value's text is the one its put measured (`value_text`), not encoded again.
            if changed:
                section.update(items, changed, offset % 8, item_pieces(
                    items, changed, offset % 8, self._items, self._items, value_text))
            parts.append(tick_time.join(section.joinable()))
            writer.offset = offset + section.length
            return
        pairs = item_pieces(items, range(len(items)), offset % 8, self._items, self._items,
                            value_text)
        splits = list(map(_SPLIT, pairs))
        section = self._sections[pack.cabin] = _Section(
            offset % 8, items, list(map(_PIECE, pairs)), splits, sum(map(_LENGTH, splits)))
        writer.offset = offset + section.length
        if list(map(_LAST_USED, items)).count(effective) == len(items):
            parts.append(tick_time.join(section.joinable()))
            return
        for item, split in zip(items, splits):
            # Item fields by position: 5 last_used.
            last_used = item[5]
            if last_used == effective:
                parts += (split[0], tick_time, split[1])
                continue
            last_used = pack.ros_time(last_used)
            parts += (split[0], tick_time if last_used == pack.stamp
                      else _TIME.pack(*nanoseconds(last_used)), split[1])

    def _event_bytes(self, event: Event, phase: int) -> bytes:
        piece = Writer()
        piece.offset = phase
        piece.header(nanoseconds(event.stamp), self._string(''))
        piece.put(bytes((self._kind_codes[event.kind],)))
        piece.string(cdr_string(event.source))
        piece.string(cdr_string(event.key))
        detail = '' if event.detail is None else CANONICAL_JSON.encode(event.detail)
        piece.string(cdr_string(detail))
        piece.count(len(event.tags))
        for tag in event.tags:
            piece.string(cdr_string(tag))
        piece.put(_F64.pack(float('nan') if event.importance is None else event.importance), 8)
        return b''.join(piece.parts[1:])

    def _missing(self, writer: Writer, pack: Pack) -> None:
        """Append a pack's MissingItems: each one's bytes kept while the same note and phase.

        Notes do not age (their `since` does not move), so a tick writes only the
        notes that came or changed; the ROS time of `since` depends on the pack's
        epoch, kept with the bytes.
        """
        parts, offset = writer.parts, writer.offset
        used, kept = self._missing_used, self._missing_kept
        shift = pack.stamp - pack.effective
        for entry in pack.missing:
            # Each entry starts and ends 4-aligned (its last field is a Time): one phase.
            phase = offset % 4
            found = used.get(id(entry)) or kept.get(id(entry))
            if (found is None or found[0] is not entry or found[1] != shift
                    or found[2] != phase):
                found = (entry, shift, phase, self._missing_bytes(entry, pack, phase))
            used[id(entry)] = found
            data = found[3]
            parts.append(data)
            offset += len(data)
        writer.offset = offset

    def _missing_bytes(self, missing: Missing, pack: Pack, phase: int) -> bytes:
        """Return a MissingItem's bytes starting at `phase` (offset modulo 4)."""
        piece = Writer()
        piece.offset = phase
        piece.string(self._string(missing.key))
        piece.put(self._reason_bytes[missing.reason])
        piece.string(cdr_string(missing.detail))
        if missing.since is None:
            piece.put(_NO_AGE)
            piece.put(_TIME.pack(0, 0), 4)
        else:
            piece.put(_AGES)
            piece.put(_TIME.pack(*nanoseconds(pack.ros_time(missing.since))), 4)
        return b''.join(piece.parts[1:])

    def _map(self, piece: _Segments, window: MapWindow | None, frame_id: bytes) -> None:
        """Append a pack's nearby_map, its times left out: the window, or an empty 0 x 0 grid."""
        piece.time()
        piece.string(frame_id)
        if window is None:
            piece.put(_NO_MAP, 4)
            piece.put(_POSE.pack(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), 8)
            piece.count(0)
            return
        height, width = window.data.shape
        piece.time()
        piece.put(_MAP_SIZE.pack(window.resolution, width, height), 4)
        piece.put(_POSE.pack(*window.origin, 0.0, 0.0, 0.0, 0.0, 1.0), 8)
        piece.count(width * height)
        piece.put(self._cells(window))

    def _window(self, window: MapWindow) -> tuple[MapWindow, bytes | None, bytes]:
        """Return the cached (window, cells or None, encoded digest) of a window object."""
        key = id(window)
        cached = self._windows_used.get(key) or self._windows.get(key)
        if cached is None or cached[0] is not window:
            cached = (window, None, cdr_string(window_digest(window)))
        self._windows_used[key] = cached
        return cached

    def _cells(self, window: MapWindow) -> bytes:
        """Return the window's cells in C order, copied once per window object."""
        cached = self._window(window)
        if cached[1] is None:
            cached = self._windows_used[id(window)] = (
                window, np.ascontiguousarray(window.data).tobytes(), cached[2])
        return cached[1]
