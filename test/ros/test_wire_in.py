"""Board updates read from the wire bytes (ros/wire_in.py) equal rclpy's own deserialization."""

import json
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import serialize_message

from working_memory.engine.inputs import MAX_VALUE_BYTES, longest_unmeasured
from working_memory.msg import BoardEntry, BoardUpdate
from working_memory.ros import wire_in
from working_memory.ros.conversions import (board_batch_from_bytes, board_batch_from_msg,
                                            board_update_from_bytes)
from working_memory.ros.wire_in import board_batch

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
    """Every field of a BoardUpdate message, NaN made comparable."""
    def stamp(s):
        return (s.sec, s.nanosec)
    return (stamp(msg.header.stamp), msg.header.frame_id, list(msg.removed_keys),
            [(e.key, e.value, list(e.tags), 'nan' if math.isnan(e.importance) else e.importance,
              stamp(e.stamp), stamp(e.ttl)) for e in msg.entries])


def read_fields(read):
    """Every field `_read_update` (or the C reader) returns, as `fields` gives a message's."""
    sec, nanosec, entries, removed = read
    return ((sec, nanosec), removed,
            [(key, value, tags, 'nan' if math.isnan(importance) else importance, tuple(stamp[:2]),
              tuple(stamp[2:])) for key, value, tags, importance, *stamp in entries])


@settings(max_examples=300)
@given(updates())
def test_the_python_reader_reads_every_field_as_rclpy_wrote_it(msg):
    expected = fields(msg)
    assert read_fields(wire_in._read_update(serialize_message(msg))) == (
        expected[0], expected[2], expected[3])


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
def test_the_test_encoder_writes_what_rclpy_reads_in_either_byte_order(msg):
    # The test encoder lays out as rclpy does (padding aside: rclpy leaves it unset).
    assert len(encode(msg, '<')) == len(serialize_message(msg))
    assert fields(board_update_from_bytes(encode(msg, '<'))) == fields(msg)
    assert fields(board_update_from_bytes(encode(msg, '>'))) == fields(msg)


def sample():
    msg = BoardUpdate(removed_keys=['old'])
    msg.entries.append(BoardEntry(key='pose', value='{"x":1.5}', importance=0.7))
    msg.entries[0].stamp.sec = 12
    return msg


def test_the_node_reads_the_same_batch_from_bytes_as_from_the_message():
    msg = sample()
    assert board_batch_from_bytes(serialize_message(msg), 3.0) == \
        board_batch_from_msg(msg, 3.0, frozen=True)


def test_big_endian_bytes_are_left_to_rclpy_which_reads_them():
    msg = sample()
    assert board_batch(encode(msg, '>'), 3.0) is None
    assert board_batch_from_bytes(encode(msg, '>'), 3.0) == board_batch_from_msg(msg, 3.0, True)


@pytest.mark.parametrize('cut', [4, 9, 20, -3, -1])
def test_truncated_bytes_are_a_clear_error(cut):
    data = serialize_message(sample())
    with pytest.raises(ValueError, match='BoardUpdate bytes rclpy cannot read'):
        board_batch_from_bytes(data[:cut], 3.0)


def test_strings_with_a_nul_inside_or_of_length_zero_are_read_as_rclpy_reads_them():
    msg = sample()
    msg.entries[0].key = 'ab'
    data = bytearray(encode(msg, '<'))
    at = data.index(b'ab\x00')
    data[at + 1] = 0             # 'a\0\0': the text ends at its first NUL
    assert board_batch(bytes(data), 3.0) is None
    assert [e.key for e in board_batch_from_bytes(bytes(data), 3.0).entries] == ['a']
    # Stamp, then a frame_id of length 0 (no NUL at all: empty, as Fast CDR reads it), then
    # no entries and no removed keys.
    empty = b'\x00\x01\x00\x00' + struct.pack('<iIIII', 5, 6, 0, 0, 0)
    batch = board_batch_from_bytes(empty, 3.0)
    assert batch.entries == () and batch.removed_keys == () and batch.stamp == 5 + 6e-9


def test_bytes_rclpy_cannot_read_are_a_clear_error():
    with pytest.raises(ValueError, match='rclpy cannot read'):
        board_batch_from_bytes(b'\x00\x07\x00\x00garbage', 3.0)


# -- the node's one-pass batch (wire_in.board_batch) against rclpy's reading ----------------

JSON_TEXT = st.one_of(
    st.sampled_from(['1', '-0.5', '"x"', 'true', 'null', '{"a":1}', '[1,[2,{"b":null}]]',
                     ' 1', '1 ', '', 'NaN', '1e999', '[Infinity]', '{"a":1,"a":2}', '{"a":',
                     '"a\x00b"', '[' * 65 + ']' * 65, '{}', '[]', '"\u00e9"',
                     # Values near the limits drawn below: the fast path measures none.
                     '"' + 'x' * 90 + '"', json.dumps('\U0001F600' * 20, ensure_ascii=False)]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                 | st.text(max_size=4),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                 max_leaves=6).map(lambda v: json.dumps(v, separators=(',', ':'))),
    TEXT)


# Good keys (repeated across entries: a key set twice in one update) and unusable ones.
KEYS = ['', 'pose', 'sensor:1', 'goal:a', 'event:ALARM:x#1', ' pad', 'a\tb', 'k' * 257]
TAGS = ['delivery', '', 'pad ', 'charging']


@st.composite
def node_updates(draw):
    """Draw a BoardUpdate as board owners send it, good and bad entries mixed."""
    msg = draw(updates())
    for entry in msg.entries:
        entry.key = draw(st.sampled_from(KEYS)) if draw(st.booleans()) else entry.key
        if draw(st.booleans()):
            entry.tags = draw(st.lists(st.sampled_from(TAGS), max_size=3))
        entry.value = draw(JSON_TEXT)
        entry.importance = draw(st.sampled_from([math.nan, 0.0, 0.5, 1.0, 1.5, -0.1, math.inf]))
        entry.ttl.sec = draw(st.sampled_from([0, 1, -1, entry.ttl.sec]))
        entry.stamp.sec = draw(stamp_sec(entry.stamp.sec))
        if draw(st.booleans()):
            entry.stamp.sec = entry.stamp.nanosec = 0
    msg.header.stamp.sec = draw(stamp_sec(msg.header.stamp.sec))
    if draw(st.booleans()):
        msg.header.stamp.sec = msg.header.stamp.nanosec = 0
    return msg


def stamp_sec(sec):
    """Draw `sec` or, mostly, its non-negative part: a negative stamp is rejected (whole update)."""
    return st.sampled_from([sec, sec & 0x7fffffff, sec & 0x7fffffff])


def outcome(read, data, now):
    """Return what `read(data, now)` gives: the batch, each entry whole, or the error."""
    try:
        batch = read(data, now)
    except ValueError as error:
        return type(error), str(error)
    return batch, [(e, e.effective_stamp, type(e.value), type(e.stamp)) for e in batch.entries]


def reference(data, now, limit=None):
    """Return the batch of the message rclpy reads from `data` (the plain path)."""
    return board_batch_from_msg(board_update_from_bytes(data), now, frozen=True, limit=limit)


def wire_bytes(msg, order, data):
    """Return `msg` serialized (rclpy, or the test encoder in `order`), maybe damaged."""
    wire = serialize_message(msg) if order == 'rclpy' else encode(msg, order)
    if data.draw(st.booleans()):
        # Damage: cut the bytes short or overwrite one byte.
        wire = bytearray(wire)
        at = data.draw(st.integers(0, len(wire) - 1))
        if data.draw(st.booleans()):
            wire = wire[:at]
        else:
            wire[at] = data.draw(st.integers(0, 255))
        wire = bytes(wire)
    return wire


# The one-pass batch reads with the C extension when built; the Python reader is its reference.
READERS = ['built', 'python']


@pytest.mark.parametrize('reader', READERS)
@settings(max_examples=400)
@given(node_updates(), st.sampled_from(['<', '>', 'rclpy']), st.floats(0.0, 1e9),
       st.sampled_from([None, 1, 24, 92, 120, 1000]), st.data())
def test_the_one_pass_batch_equals_the_reference_path_bad_input_included(
        reader, msg, order, now, limit, data):
    wire = wire_bytes(msg, order, data)
    with pytest.MonkeyPatch.context() as patch:
        if reader == 'python':
            patch.setattr(wire_in, '_read', wire_in._read_update)
        assert outcome(lambda *read: board_batch_from_bytes(*read, limit), wire, now) == outcome(
            lambda *read: reference(*read, limit), wire, now)


def python_read(wire):
    try:
        return wire_in._read_update(wire)
    except (wire_in._Irregular, struct.error, UnicodeDecodeError):
        return None


def test_the_built_package_reads_board_updates_in_c():
    # CI must notice a build that silently falls back to the Python reader: this one fails then.
    assert wire_in._board_cdr is not None, (
        'working_memory.ros._board_cdr is not importable: the package was imported from a '
        'tree without the built extension (make build, pip install .)')
    assert wire_in._read is wire_in._board_cdr.update


@pytest.mark.skipif(wire_in._board_cdr is None, reason='ros/_board_cdr.c is not built')
@settings(max_examples=400)
@given(node_updates(), st.sampled_from(['<', '>', 'rclpy']), st.data())
def test_the_c_reader_reads_every_field_as_the_python_reader_or_neither_does(msg, order, data):
    wire = wire_bytes(msg, order, data)
    # repr: a NaN importance reads as NaN on both sides (NaN != NaN).
    assert repr(wire_in._board_cdr.update(wire)) == repr(python_read(wire))


def test_the_one_pass_batch_keeps_what_the_reference_rejects_by_entry():
    msg = sample()
    msg.entries.append(BoardEntry(key='bad', value='{"x": NaN}'))
    msg.entries.append(BoardEntry(key='', value='1'))
    batch = board_batch_from_bytes(serialize_message(msg), 3.0)
    assert [e.key for e in batch.entries] == ['pose']
    assert len(batch.errors) == 2 and 'NaN' in batch.errors[0]
    assert batch == reference(serialize_message(msg), 3.0)


def test_a_key_set_twice_in_one_update_applies_once_the_later_entry_the_earlier_reported():
    msg = BoardUpdate(entries=[BoardEntry(key='pose', value='1'),
                               BoardEntry(key='goal:a', value='2'),
                               BoardEntry(key='pose', value='3')])
    batch = board_batch_from_bytes(serialize_message(msg), 3.0)
    assert [(e.key, e.value) for e in batch.entries] == [('goal:a', 2), ('pose', 3)]
    assert batch.errors == ("entries[0] board entry 'pose': key set again by entries[2] of the "
                            'same update, which applies',)
    assert batch == reference(serialize_message(msg), 3.0)


def test_unusable_keys_and_tags_are_rejected_by_entry_naming_the_field():
    msg = BoardUpdate(entries=[BoardEntry(key='a\nb', value='1'), BoardEntry(key='ok', value='2'),
                               BoardEntry(key='event:FAILURE:door#1', value='3'),
                               BoardEntry(key='tagged', value='4', tags=['delivery', ''])])
    batch = board_batch_from_bytes(serialize_message(msg), 3.0)
    assert [e.key for e in batch.entries] == ['ok']
    assert batch.errors == (
        "entries[0] board entry: key 'a\\nb' holds the unprintable character '\\n'",
        "entries[2] board entry: key 'event:FAILURE:door#1' must not start with 'event:' "
        "(the working set's event items do)",
        "entries[3] board entry 'tagged': tags[1] must not be empty")


def test_a_regular_update_takes_the_one_pass_and_never_the_reference():
    msg = sample()
    msg.entries.append(BoardEntry(key='sensor:1', value='[1, {"a": [true]}]', tags=['s', 't'],
                                  importance=math.nan))
    msg.entries[1].ttl.sec = 2
    batch = board_batch(serialize_message(msg), 3.0)
    assert batch.entries[1].value == (1, {'a': (True,)}) and batch.entries[1].tags == ('s', 't')
    assert batch.entries[1].importance is None and batch.entries[1].stamp == 3.0


# A stamp before 0, as `ros2 topic pub` makes of `sec: 4000000000` (int32), goes the reference
# way on every reader and is rejected there, naming the field; a stamp in the future is taken.
WRAPPED = 4_000_000_000 - 2**32


@pytest.mark.parametrize('reader', READERS)
@pytest.mark.parametrize('sec, nanosec, seconds', [(-100, 0, '-100.0'),
                                                   (-1, 500_000_000, '-0.5'),
                                                   (WRAPPED, 0, '-294967296.0')])
def test_a_negative_entry_stamp_is_rejected_by_entry_as_on_the_reference_path(
        reader, sec, nanosec, seconds, monkeypatch):
    if reader == 'python':
        monkeypatch.setattr(wire_in, '_read', wire_in._read_update)
    msg = sample()
    msg.entries.append(BoardEntry(key='bad', value='1', importance=math.nan))
    msg.entries[1].stamp.sec, msg.entries[1].stamp.nanosec = sec, nanosec
    wire = serialize_message(msg)
    batch = board_batch_from_bytes(wire, 3.0)
    assert [e.key for e in batch.entries] == ['pose'] and batch.removed_keys == ('old',)
    assert batch.errors == (
        f"entries[1] board entry 'bad': stamp: must not be negative, got {seconds} s",)
    assert board_batch(wire, 3.0) is None
    assert outcome(board_batch_from_bytes, wire, 3.0) == outcome(reference, wire, 3.0)
    assert batch == board_batch_from_msg(msg, 3.0, frozen=True)


@pytest.mark.parametrize('reader', READERS)
@pytest.mark.parametrize('sec, nanosec, seconds', [(-100, 0, '-100.0'),
                                                   (WRAPPED, 0, '-294967296.0')])
def test_a_negative_header_stamp_rejects_the_update_as_on_the_reference_path(
        reader, sec, nanosec, seconds, monkeypatch):
    if reader == 'python':
        monkeypatch.setattr(wire_in, '_read', wire_in._read_update)
    msg = sample()
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    wire = serialize_message(msg)
    expected = f'header.stamp: must not be negative, got {seconds} s (the whole update is rejected)'
    for read in (board_batch_from_bytes, reference):
        with pytest.raises(ValueError) as error:
            read(wire, 3.0)
        assert str(error.value) == expected
    with pytest.raises(ValueError) as error:
        board_batch_from_msg(msg, 3.0, frozen=True)
    assert str(error.value) == expected


@pytest.mark.parametrize('reader', READERS)
def test_stamps_in_the_future_take_the_one_pass(reader, monkeypatch):
    if reader == 'python':
        monkeypatch.setattr(wire_in, '_read', wire_in._read_update)
    msg = sample()
    msg.header.stamp.sec = 2**31 - 1
    msg.entries.append(BoardEntry(key='later', value='2', importance=math.nan))
    msg.entries[0].stamp.sec = 2**31 - 2
    batch = board_batch(serialize_message(msg), 3.0)
    assert [e.stamp for e in batch.entries] == [2**31 - 2.0, 2**31 - 1.0]


# Values of every kind, some long and some growing when the node writes them (escapes, numbers).
SIZED_VALUES = st.one_of(
    st.sampled_from(['"' + 'x' * 90 + '"', json.dumps('\U0001F600' * 20, ensure_ascii=False),
                     '[1e15,1e15,1e15]', '{"a": [1, 2, 3],   "b": "c"}', '"\\u00e9"']),
    st.recursive(st.none() | st.booleans() | st.integers()
                 | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
                 lambda inner: st.lists(inner, max_size=4)
                 | st.dictionaries(st.text(max_size=3), inner, max_size=4),
                 max_leaves=12).map(lambda v: json.dumps(v, ensure_ascii=False)))


@st.composite
def regular_updates(draw):
    """Draw an update the one pass reads whole, but for a value it leaves to be measured."""
    return BoardUpdate(entries=[BoardEntry(key=f'sensor:{index}', value=draw(SIZED_VALUES),
                                           importance=0.5)
                                for index in range(draw(st.integers(1, 3)))])


@pytest.mark.parametrize('reader', READERS)
@settings(max_examples=300)
@given(regular_updates(), st.sampled_from([None, 1, 24, 92, 120, 1000]))
def test_the_one_pass_batch_refuses_by_size_as_the_reference_path_under_any_limit(
        reader, msg, limit):
    wire = serialize_message(msg)
    with pytest.MonkeyPatch.context() as patch:
        if reader == 'python':
            patch.setattr(wire_in, '_read', wire_in._read_update)
        assert outcome(lambda *read: board_batch_from_bytes(*read, limit), wire, 3.0) == outcome(
            lambda *read: reference(*read, limit), wire, 3.0)


def test_a_value_over_the_limit_is_refused_by_entry_and_the_rest_taken_as_on_the_reference():
    msg = sample()
    msg.entries.append(BoardEntry(key='sensor:big', value=json.dumps('x' * 5_000_000)))
    msg.entries.append(BoardEntry(key='sensor:long', value=json.dumps('x' * 100_000)))
    wire = serialize_message(msg)
    batch = board_batch_from_bytes(wire, 3.0, MAX_VALUE_BYTES)
    assert [e.key for e in batch.entries] == ['pose', 'sensor:long'] and batch.errors == ()
    assert [(o.key, o.size) for o in batch.refused] == [('sensor:big', 5_000_002)]
    assert batch == reference(wire, 3.0, MAX_VALUE_BYTES)


def test_a_value_too_short_to_be_over_the_limit_takes_the_one_pass():
    msg = BoardUpdate(entries=[BoardEntry(key='sensor:1', value=json.dumps(
        'x' * (longest_unmeasured(MAX_VALUE_BYTES) - 2)))])
    (entry,) = board_batch(serialize_message(msg), 3.0, MAX_VALUE_BYTES).entries
    assert len(entry.value) == longest_unmeasured(MAX_VALUE_BYTES) - 2
