"""Board updates read straight from the bytes on the wire, without building message objects.

Pure Python (no rclpy, no message modules). The node takes `board` serialized and
reads the common update here in one pass, from the bytes to the core's entries:
rclpy's own deserialization builds a Python object per header, entry, stamp and
duration, which costs about as much as everything the node does with the update
afterwards. Any other update (another encoding, a string that does not end in its
one NUL, a value to measure or to reject, a key set twice, damaged bytes) is left to
the caller, which reads it with rclpy (`conversions.board_batch_from_bytes`), so its
batch and its errors are those of `inputs.board_batch_from_msg`.

The layout is CDR (XCDR1, little endian) as `ros/wire.py` describes it. The fields are
read in C (`ros/_board_cdr.c`) when the extension is built, else by its Python twin
`_read_update`; `test/ros/test_wire_in.py` checks both against rclpy's deserialization.
What each buys (BENCHMARKS.md, "What each speed mechanism buys"): in one process, CPU per
one-entry update 18.3 us in C, 20.9 us in Python, 45.9 us through rclpy.
"""

from __future__ import annotations

import math
import struct

from working_memory.core.frozen import deep_freeze
from working_memory.core.items import BoardEntry
from working_memory.engine.inputs import BoardBatch, MAX_DEPTH, longest_unmeasured, scan_frozen

try:
    from working_memory.ros import _board_cdr
except ImportError:   # a source tree without the built extension: the Python reader serves
    _board_cdr = None


# The little-endian layout every rclpy publisher on this machine writes, read in one pass.
_LITTLE = b'\x00\x01'
_U32 = struct.Struct('<I').unpack_from
_TIME = struct.Struct('<iI').unpack_from
_TAIL = struct.Struct('<diIiI').unpack_from         # importance, stamp, ttl (8-aligned)
_INF = math.inf


class _Irregular(Exception):
    """Bytes the fast path does not take: the reference path reads them (and names the fault)."""


def board_batch(data: bytes, now: float, limit: int | None = None) -> BoardBatch | None:
    """Return the batch of a regular update in one pass; None for any other update.

    Regular: a little-endian update whose strings end in their one NUL, whose values
    parse whole (no surrounding whitespace), shallow and too short to be over `limit`
    bytes of JSON (None: no limit), whose stamps are not negative, and whose entries and
    removed keys all pass their checks. Its batch is `inputs.board_batch_from_msg(msg,
    now, frozen=True, limit=limit)` of the message the bytes hold.
    """
    try:
        fields = _read(data)
        if fields is None:
            return None
        sec, nanosec, read, removed = fields
        # A negative stamp (sec < 0: nanosec is unsigned) goes the reference way, which
        # rejects it (inputs.stamp_or).
        if sec < 0:
            return None
        received = sec + nanosec * 1e-9 if sec or nanosec else now
        # Longer values are measured the reference way (inputs.check_size).
        longest = _INF if limit is None else longest_unmeasured(limit)
        entries = []
        for key, text, tags, importance, sec, nanosec, ttl_sec, ttl_nanosec in read:
            ttl = ttl_sec + ttl_nanosec * 1e-9
            if importance != importance:
                importance = None
            elif not 0.0 <= importance <= 1.0:
                return None
            if (not key or not 0.0 <= ttl < _INF or len(text) > longest
                    or text.count('[') + text.count('{') > MAX_DEPTH):
                return None
            value, stop = scan_frozen(text, 0)
            if stop != len(text):
                return None
            if '[' in text:
                value = deep_freeze(value)
            if sec < 0:
                return None
            stamp = sec + nanosec * 1e-9 if sec or nanosec else received
            entries.append(BoardEntry(key, value, stamp, importance, ttl, tuple(tags)))
        if not all(removed) or len(entries) > 1 and len({e.key for e in entries}) < len(entries):
            return None
        return BoardBatch(tuple(entries), tuple(removed), (), received)
    except (_Irregular, struct.error, UnicodeDecodeError, IndexError, StopIteration,
            ValueError, RecursionError):
        # ValueError: JSON the strict parser refuses (the reference names the entry).
        return None


def _read_update(data: bytes) -> tuple[int, int, list[tuple], list[str]]:
    """Return a regular update's fields as `ros._board_cdr.update` does; raise otherwise.

    (header sec, header nanosec, [(key, value text, tags, importance, sec, nanosec,
    ttl sec, ttl nanosec), ...], removed keys); the C reader's twin.
    """
    if data[:2] != _LITTLE:
        raise _Irregular
    sec, nanosec = _TIME(data, 4)
    # `at` is the payload offset + 4, so alignment is (at - 4) % n: at % n for n <= 4 and
    # (at + 4) % 8 for n = 8.
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
