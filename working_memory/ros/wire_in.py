"""Board updates read straight from the bytes on the wire, without building message objects.

Pure Python (no rclpy, no message modules). The node takes `board` serialized and
reads it here: rclpy's own deserialization builds a Python object per header,
entry, stamp and duration, which costs about as much as everything the node does
with the update afterwards. The result has the attributes `engine/inputs.py` reads
(duck typing), so the conversion and its checks are the same as for a message.

The layout is CDR (XCDR1) as `ros/wire.py` describes it, little or big endian; any
other encapsulation raises `UnknownEncoding`, and the caller deserializes with
rclpy instead. Strings read as rclpy reads them (a length 0 is empty, a NUL ends the
text). Truncated or malformed bytes raise ValueError.
`board_batch` is the node's hot path: the bytes straight to the core's entries, the result
of `board_update` then `inputs.board_batch_from_msg(..., frozen=True)` in one pass for the
common update; anything else goes that reference way, so errors read the same.
`test/ros/test_wire_in.py` reads generated updates serialized by rclpy.
"""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

from working_memory.core.frozen import deep_freeze
from working_memory.core.items import BoardEntry
from working_memory.engine.inputs import (BoardBatch, MAX_DEPTH, board_batch_from_msg,
                                          longest_unmeasured, scan_frozen)

try:
    from working_memory.ros import _board_cdr
except ImportError:   # a source tree without the built extension: the Python reader serves
    _board_cdr = None

# Encapsulation ids (first two bytes, big endian): CDR big / little endian (XCDR1).
_ENDIAN = {b'\x00\x00': '>', b'\x00\x01': '<'}
_FORMATS = {order: (struct.Struct(order + 'I'), struct.Struct(order + 'iI'),
                    struct.Struct(order + 'd')) for order in _ENDIAN.values()}


class UnknownEncoding(ValueError):
    """The bytes are not XCDR1: deserialize them another way."""


class Stamp(NamedTuple):
    """A builtin_interfaces/Time or Duration: `sec`, `nanosec`."""

    sec: int
    nanosec: int


class Header(NamedTuple):
    """A std_msgs/Header: `stamp`, `frame_id`."""

    stamp: Stamp
    frame_id: str


class Entry(NamedTuple):
    """A working_memory/BoardEntry's fields."""

    key: str
    value: str
    tags: list[str]
    importance: float
    stamp: Stamp
    ttl: Stamp


class Update(NamedTuple):
    """A working_memory/BoardUpdate's fields."""

    header: Header
    entries: list[Entry]
    removed_keys: list[str]


def board_update(data: bytes) -> Update:
    """Return a serialized working_memory/BoardUpdate's fields; ValueError if malformed."""
    formats = _FORMATS.get(_ENDIAN.get(bytes(data[:2])))
    if formats is None:
        raise UnknownEncoding(f'encapsulation {bytes(data[:4]).hex()} is not XCDR1')
    u32, time, f64 = (f.unpack_from for f in formats)
    size = len(data)
    # One flat loop of local reads (this is the hot path of a 1 kHz board): `at` is the
    # payload offset + 4, so alignment is (at - 4) % n, i.e. at % n for n <= 4 and
    # (at + 4) % 8 for n = 8.
    at = 4

    def string() -> str:
        nonlocal at
        at += -at % 4
        (length,) = u32(data, at)
        start, end = at + 4, at + 4 + length
        if end > size or (length and data[end - 1] != 0):
            raise ValueError(f'a string of {length} bytes at {at} does not fit the message')
        at = end
        text = data[start:end - 1] if length else b''
        # A C string, as rclpy reads it: up to its first NUL.
        nul = text.find(0)
        return (text if nul < 0 else text[:nul]).decode()

    def strings() -> list[str]:
        nonlocal at
        at += -at % 4
        (count,) = u32(data, at)
        at += 4
        return [string() for _ in range(count)]

    def stamp() -> Stamp:
        nonlocal at
        at += -at % 4
        value = Stamp._make(time(data, at))
        at += 8
        return value

    try:
        header = Header(stamp(), string())
        at += -at % 4
        (count,) = u32(data, at)
        at += 4
        entries = []
        for _ in range(count):
            key, value, tags = string(), string(), strings()
            at += -(at + 4) % 8
            (importance,) = f64(data, at)
            at += 8
            entries.append(Entry(key, value, tags, importance, stamp(), stamp()))
        return Update(header, entries, strings())
    except struct.error as error:
        raise ValueError(f'BoardUpdate bytes end early ({size} bytes): {error}') from None
    except UnicodeDecodeError as error:
        raise ValueError(f'BoardUpdate string is not UTF-8: {error}') from None


# The little-endian layout every rclpy publisher on this machine writes, read in one pass.
_LITTLE = b'\x00\x01'
_U32 = struct.Struct('<I').unpack_from
_TIME = struct.Struct('<iI').unpack_from
_TAIL = struct.Struct('<diIiI').unpack_from         # importance, stamp, ttl (8-aligned)
_INF = math.inf


class _Irregular(Exception):
    """Bytes the fast path does not take: the reference path reads them (and names the fault)."""


def board_batch(data: bytes, now: float, limit: int | None = None) -> BoardBatch:
    """Return `board_batch_from_msg(board_update(data), now, True, limit)`; ValueError likewise.

    One pass for a little-endian update whose strings end in their one NUL, whose values
    parse whole (no surrounding whitespace), shallow and too short to be over `limit`
    bytes of JSON (None: no limit), whose stamps are not negative, and whose entries and
    removed keys all pass their checks; any other update is read the reference way, so
    its batch and its errors (UnknownEncoding too) are exactly that path's.
    """
    try:
        fields = _read(data)
        if fields is None:
            raise _Irregular
        sec, nanosec, read, removed = fields
        # A negative stamp (sec < 0: nanosec is unsigned) goes the reference way, which
        # rejects it (inputs.stamp_or).
        if sec < 0:
            raise _Irregular
        received = sec + nanosec * 1e-9 if sec or nanosec else now
        # Longer values are measured the reference way (inputs.check_size).
        longest = _INF if limit is None else longest_unmeasured(limit)
        entries = []
        for key, text, tags, importance, sec, nanosec, ttl_sec, ttl_nanosec in read:
            ttl = ttl_sec + ttl_nanosec * 1e-9
            if importance != importance:
                importance = None
            elif not 0.0 <= importance <= 1.0:
                raise _Irregular
            if (not key or not 0.0 <= ttl < _INF or len(text) > longest
                    or text.count('[') + text.count('{') > MAX_DEPTH):
                raise _Irregular
            value, stop = scan_frozen(text, 0)
            if stop != len(text):
                raise _Irregular
            if '[' in text:
                value = deep_freeze(value)
            if sec < 0:
                raise _Irregular
            stamp = sec + nanosec * 1e-9 if sec or nanosec else received
            entries.append(BoardEntry(key, value, stamp, importance, ttl, tuple(tags)))
        if not all(removed) or len(entries) > 1 and len({e.key for e in entries}) < len(entries):
            raise _Irregular
        return BoardBatch(tuple(entries), tuple(removed), (), received)
    except (_Irregular, struct.error, UnicodeDecodeError, IndexError, StopIteration,
            ValueError, RecursionError):
        # ValueError: JSON the strict parser refuses (the reference names the entry).
        return board_batch_from_msg(board_update(data), now, frozen=True, limit=limit)


def _read_update(data: bytes) -> tuple[int, int, list[tuple], list[str]]:
    """Return a regular update's fields as `ros._board_cdr.update` does; raise otherwise.

    (header sec, header nanosec, [(key, value text, tags, importance, sec, nanosec,
    ttl sec, ttl nanosec), ...], removed keys); the reference of the C reader.
    """
    if data[:2] != _LITTLE:
        raise _Irregular
    sec, nanosec = _TIME(data, 4)
    # `at` is the payload offset + 4 (see board_update): at % 4 is the 4-byte alignment.
    _, at = _strings(data, 12, 1)   # the frame_id: read nowhere, but it must be readable
    at += -at % 4
    (count,) = _U32(data, at)
    at += 4
    entries = []
    for _ in range(count):
        (key, text), at = _strings(data, at, 2)
        at += -at % 4
        (tag_count,) = _U32(data, at)
        tags, at = _strings(data, at + 4, tag_count)
        at += -(at + 4) % 8
        entries.append((key, text, tags, *_TAIL(data, at)))
        at += 24
    at += -at % 4
    (count,) = _U32(data, at)
    removed, _ = _strings(data, at + 4, count)
    return sec, nanosec, entries, removed


def _strings(data: bytes, at: int, count: int) -> tuple[list[str], int]:
    """Return `count` strings read from offset `at` on and the offset after them.

    _Irregular for a string that does not end in its one NUL (rclpy reads it otherwise)
    or that runs past the end.
    """
    texts = []
    for _ in range(count):
        at += -at % 4
        (length,) = _U32(data, at)
        end = at + 4 + length
        # Length 0 reads as empty: data[end - 1] is then the length's last byte, a zero.
        if data[end - 1:end] != b'\x00':
            raise _Irregular
        text = data[at + 4:end - 1].decode()
        if '\x00' in text:
            raise _Irregular
        texts.append(text)
        at = end
    return texts, at


# The reader of the hot path: in C when the extension is built (CMakeLists.txt, setup.py).
_read = _read_update if _board_cdr is None else _board_cdr.update
