"""Board updates read from the wire bytes (ros/wire_in.py) equal rclpy's own deserialization."""

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import serialize_message

from working_memory.msg import BoardEntry, BoardUpdate
from working_memory.ros.conversions import board_batch_from_msg, board_update_from_bytes
from working_memory.ros.wire_in import UnknownEncoding, board_update

# ROS strings are C strings: no NUL inside.
TEXT = st.text(st.characters(codec='utf-8', exclude_characters='\x00'), max_size=12)
SEC = st.integers(-2**31, 2**31 - 1)
NSEC = st.integers(0, 999_999_999)


@st.composite
def updates(draw):
    msg = BoardUpdate()
    msg.header.stamp.sec, msg.header.stamp.nanosec = draw(SEC), draw(NSEC)
    msg.header.frame_id = draw(TEXT)
    for _ in range(draw(st.integers(0, 4))):
        entry = BoardEntry(key=draw(TEXT), value=draw(TEXT), tags=draw(st.lists(TEXT, max_size=3)),
                           importance=draw(st.floats(allow_infinity=True)))
        entry.stamp.sec, entry.stamp.nanosec = draw(SEC), draw(NSEC)
        entry.ttl.sec, entry.ttl.nanosec = draw(SEC), draw(NSEC)
        msg.entries.append(entry)
    msg.removed_keys = draw(st.lists(TEXT, max_size=3))
    return msg


def fields(msg):
    """Every field of a BoardUpdate (message or wire_in.Update), NaN made comparable."""
    def stamp(s):
        return (s.sec, s.nanosec)
    return (stamp(msg.header.stamp), msg.header.frame_id, list(msg.removed_keys),
            [(e.key, e.value, list(e.tags), 'nan' if math.isnan(e.importance) else e.importance,
              stamp(e.stamp), stamp(e.ttl)) for e in msg.entries])


@settings(max_examples=300)
@given(updates())
def test_every_field_reads_as_rclpy_wrote_it(msg):
    assert fields(board_update(serialize_message(msg))) == fields(msg)


def encode(msg, order):
    """Encode `msg` with a second, test-only CDR encoder: '<' little endian, '>' big endian."""
    out = bytearray(b'\x00\x01\x00\x00' if order == '<' else b'\x00\x00\x00\x00')

    def put(fmt, *values):
        size = struct.calcsize(order + fmt[0])
        out.extend(bytes(-(len(out) - 4) % size))
        out.extend(struct.pack(order + fmt, *values))

    def string(text):
        data = text.encode() + b'\x00'
        put('I', len(data))
        out.extend(data)

    def strings(texts):
        put('I', len(texts))
        for text in texts:
            string(text)
    put('iI', msg.header.stamp.sec, msg.header.stamp.nanosec)
    string(msg.header.frame_id)
    put('I', len(msg.entries))
    for e in msg.entries:
        string(e.key)
        string(e.value)
        strings(e.tags)
        put('d', e.importance)
        put('iI', e.stamp.sec, e.stamp.nanosec)
        put('iI', e.ttl.sec, e.ttl.nanosec)
    strings(msg.removed_keys)
    return bytes(out)


@settings(max_examples=100)
@given(updates())
def test_big_endian_bytes_read_the_same(msg):
    # The test encoder lays out as rclpy does (padding aside: rclpy leaves it unset).
    assert len(encode(msg, '<')) == len(serialize_message(msg))
    assert fields(board_update(encode(msg, '<'))) == fields(msg)
    assert fields(board_update(encode(msg, '>'))) == fields(msg)


def sample():
    msg = BoardUpdate(removed_keys=['old'])
    msg.entries.append(BoardEntry(key='pose', value='{"x":1.5}', importance=0.7))
    msg.entries[0].stamp.sec = 12
    return msg


def test_the_node_reads_the_same_batch_from_bytes_as_from_the_message():
    msg = sample()
    assert board_batch_from_msg(board_update_from_bytes(serialize_message(msg)), 3.0) == \
        board_batch_from_msg(msg, 3.0)


def test_another_encoding_is_read_by_rclpy():
    data = bytearray(serialize_message(sample()))
    data[1] = 0x07   # not XCDR1: the reader refuses, rclpy is asked instead
    with pytest.raises(UnknownEncoding):
        board_update(bytes(data))


@pytest.mark.parametrize('cut', [4, 9, 20, -3, -1])
def test_truncated_bytes_are_a_clear_error(cut):
    data = serialize_message(sample())
    with pytest.raises(ValueError, match='BoardUpdate|does not fit'):
        board_update(data[:cut])


def test_strings_read_as_rclpy_reads_them_a_nul_ends_one_and_length_zero_is_empty():
    msg = sample()
    msg.entries[0].key = 'ab'
    data = bytearray(encode(msg, '<'))
    at = data.index(b'ab\x00')
    data[at + 1] = 0             # 'a\0\0': the text ends at its first NUL
    assert board_update(bytes(data)).entries[0].key == 'a'
    # Stamp, then a frame_id of length 0 (no NUL at all: empty, as Fast CDR reads it), then
    # no entries and no removed keys.
    empty = b'\x00\x01\x00\x00' + struct.pack('<iIIII', 5, 6, 0, 0, 0)
    update = board_update(empty)
    assert update.header == ((5, 6), '') and update.entries == [] and update.removed_keys == []


def test_bytes_neither_reader_can_read_are_a_clear_error():
    with pytest.raises(ValueError, match='rclpy cannot read it either'):
        board_update_from_bytes(b'\x00\x07\x00\x00garbage')
