"""Board updates read straight from the bytes on the wire, without building message objects.

Pure Python (no rclpy, no message modules). The node takes `board` serialized and
reads it here: rclpy's own deserialization builds a Python object per header,
entry, stamp and duration, which costs about as much as everything the node does
with the update afterwards. The result has the attributes `ros/inputs.py` reads
(duck typing), so the conversion and its checks are the same as for a message.

The layout is CDR (XCDR1) as `ros/wire.py` describes it, little or big endian; any
other encapsulation raises `UnknownEncoding`, and the caller deserializes with
rclpy instead. Strings read as rclpy reads them (a length 0 is empty, a NUL ends the
text). Truncated or malformed bytes raise ValueError.
`test/ros/test_wire_in.py` reads generated updates serialized by rclpy.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

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
