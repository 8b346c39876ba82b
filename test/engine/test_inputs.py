"""The input conversions (engine/inputs.py, pure): their checks, the frozen and plain paths."""

import itertools
import json
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from working_memory.core.board import BoardSnapshot
from working_memory.core.frozen import FrozenDict, deep_freeze
from working_memory.core.items import EventKind, json_size
from working_memory.core.timebase import TimeBase
from working_memory.engine.inputs import (MAX_VALUE_BYTES, TooLarge, answer_from_msg,
                                          board_batch_from_msg, event_from_msg, json_field,
                                          longest_unmeasured, pose_from_odometry,
                                          pose_from_pose_stamped)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12)


def time_msg(seconds):
    return SimpleNamespace(sec=int(seconds), nanosec=round((seconds % 1) * 1e9))


def update_msg(*entries, removed=()):
    return SimpleNamespace(header=SimpleNamespace(stamp=time_msg(0.0)), removed_keys=list(removed),
                           entries=[SimpleNamespace(key=key, value=json.dumps(value),
                                                    stamp=time_msg(stamp), importance=float('nan'),
                                                    ttl=time_msg(0.0), tags=[])
                                    for key, value, stamp in entries])


@given(JSON)
def test_a_frozen_parse_is_the_plain_parse_deeply_frozen(value):
    text = json.dumps(value)
    frozen = json_field(text, 'v', frozen=True)
    assert frozen == deep_freeze(json_field(text, 'v'))
    assert type(frozen) is type(deep_freeze(value))


def test_a_frozen_parse_refuses_mutation_at_every_depth():
    value = json_field('{"a": {"b": [1, {"c": 2}]}}', 'v', frozen=True)
    assert isinstance(value, FrozenDict) and isinstance(value['a'], FrozenDict)
    assert value['a']['b'] == (1, FrozenDict(c=2))
    with pytest.raises(TypeError):
        value['a']['b'][1]['c'] = 3


@pytest.mark.parametrize('text', ['NaN', '{"x": Infinity}', '[-Infinity]', '1e999',
                                  '{"x": 1' + '0' * 400 + '.0}', '{"x": '])
@pytest.mark.parametrize('frozen', [False, True])
def test_strict_json_is_enforced_on_both_paths(text, frozen):
    with pytest.raises(ValueError, match='board value'):
        json_field(text, 'board value', frozen)


def test_the_intake_fast_path_builds_the_same_board_as_the_checked_one():
    msgs = [update_msg(('a', {'v': [1, 2]}, 1.0), ('b', 'x', 2.0)),
            update_msg(('a', {'v': 3}, 3.0), removed=['b']),
            update_msg(('c', [True, None], 0.0))]
    checked, plain = BoardSnapshot(TimeBase()), BoardSnapshot(TimeBase())
    for now, msg in enumerate(msgs, 10):
        fast = board_batch_from_msg(msg, float(now), frozen=True)
        checked.apply_checked(fast.entries, fast.removed_keys)
        slow = board_batch_from_msg(msg, float(now))
        plain.apply(slow.entries, slow.removed_keys)
    assert checked.view().entries == plain.view().entries
    assert [e.effective_stamp for e in checked.view().entries.values()] == [
        e.effective_stamp for e in plain.view().entries.values()]
    # The entries the fast path made are the ones the board keeps (no copy).
    assert checked.view().entries['c'] is fast.entries[0]


@pytest.mark.parametrize('text', ['[' * 65 + ']' * 65, '{"a":' * 65 + '1' + '}' * 65,
                                  '[' * 5000 + ']' * 5000])
@pytest.mark.parametrize('frozen', [False, True])
def test_a_value_nested_too_deeply_is_a_clear_error_on_both_paths(text, frozen):
    with pytest.raises(ValueError, match='nested deeper than 64'):
        json_field(text, 'board value', frozen)


def test_a_value_nested_64_deep_is_taken():
    assert json_field('[' * 64 + ']' * 64, 'v', frozen=True) == deep_freeze(
        json.loads('[' * 64 + ']' * 64))


# -- stamps: a negative one is rejected naming the field, one in the future is taken ---------

KINDS = dict(enumerate(EventKind))
# `ros2 topic pub` wraps sec: 4000000000 into the int32 -294967296.
NEGATIVE = [(-100, 0, '-100.0'), (-1, 500_000_000, '-0.5'),
            (4_000_000_000 - 2**32, 0, '-294967296.0')]
FUTURE = 2**31 - 1   # the latest time an int32 sec holds (2038), far ahead of any clock


def stamp(sec, nanosec=0):
    return SimpleNamespace(sec=sec, nanosec=nanosec)


def log_event(sec, nanosec=0, key='door:main'):
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp(sec, nanosec)), kind=1,
                           source='test', key=key, detail='', importance=0.5, tags=[])


@pytest.mark.parametrize('sec, nanosec, seconds', NEGATIVE)
def test_a_log_event_with_a_negative_stamp_is_rejected_naming_the_field(sec, nanosec, seconds):
    with pytest.raises(ValueError) as error:
        event_from_msg(log_event(sec, nanosec), 1000.0, KINDS)
    assert str(error.value) == (f"log event 'door:main': header.stamp: must not be negative, "
                                f'got {seconds} s')


def test_a_log_event_stamped_zero_or_in_the_future_is_taken():
    assert event_from_msg(log_event(0), 1000.0, KINDS).stamp == 1000.0
    assert event_from_msg(log_event(FUTURE), 1000.0, KINDS).stamp == float(FUTURE)
    assert event_from_msg(log_event(0, 1), 1000.0, KINDS).stamp == 1e-9


@pytest.mark.parametrize('frozen', [False, True])
@pytest.mark.parametrize('sec, nanosec, seconds', NEGATIVE)
def test_a_board_entry_with_a_negative_stamp_is_rejected_and_the_rest_applies(
        sec, nanosec, seconds, frozen):
    msg = update_msg(('a', 1, 5.0), ('bad', 2, 0.0), ('c', 3, 0.0))
    msg.entries[1].stamp = stamp(sec, nanosec)
    batch = board_batch_from_msg(msg, 1000.0, frozen)
    assert [e.key for e in batch.entries] == ['a', 'c']
    assert batch.errors == (f"entries[1] board entry 'bad': stamp: must not be negative, "
                            f'got {seconds} s',)


@pytest.mark.parametrize('frozen', [False, True])
@pytest.mark.parametrize('sec, nanosec, seconds', NEGATIVE)
def test_a_board_update_with_a_negative_header_stamp_is_rejected_whole(
        sec, nanosec, seconds, frozen):
    # Even entries with stamps of their own: the update as a whole is malformed.
    msg = update_msg(('a', 1, 5.0), ('b', 2, 0.0), removed=['old'])
    msg.header.stamp = stamp(sec, nanosec)
    with pytest.raises(ValueError) as error:
        board_batch_from_msg(msg, 1000.0, frozen)
    assert str(error.value) == (f'header.stamp: must not be negative, got {seconds} s '
                                '(the whole update is rejected)')


@pytest.mark.parametrize('frozen', [False, True])
def test_board_stamps_in_the_future_are_taken(frozen):
    msg = update_msg(('a', 1, float(FUTURE)), ('b', 2, 0.0))
    msg.header.stamp = stamp(FUTURE - 1)
    batch = board_batch_from_msg(msg, 1000.0, frozen)
    assert batch.errors == ()
    assert [e.stamp for e in batch.entries] == [float(FUTURE), float(FUTURE - 1)]

# -- poses: the orientation must be a rotation ----------------------------------------------


def quaternion(x=0.0, y=0.0, z=0.0, w=1.0):
    return SimpleNamespace(x=x, y=y, z=z, w=w)


def odometry(orientation, frame_id='map'):
    pose = SimpleNamespace(position=SimpleNamespace(x=1.0, y=2.0, z=0.0), orientation=orientation)
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp(1), frame_id=frame_id),
                           pose=SimpleNamespace(pose=pose, covariance=[0.0] * 36))


def pose_stamped(orientation, frame_id='map'):
    pose = SimpleNamespace(position=SimpleNamespace(x=1.0, y=2.0, z=0.0), orientation=orientation)
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp(1), frame_id=frame_id), pose=pose)


POSE_TOPICS = pytest.mark.parametrize('topic, field, make, convert', [
    ('odom', 'pose.pose', odometry, pose_from_odometry),
    ('pose', 'pose', pose_stamped, pose_from_pose_stamped)])
NAN, INF = float('nan'), float('inf')


@POSE_TOPICS
@pytest.mark.parametrize('orientation', [quaternion(x=NAN), quaternion(y=NAN), quaternion(z=INF),
                                         quaternion(w=NAN), quaternion(w=-INF)])
def test_a_pose_with_a_non_finite_orientation_is_rejected_naming_the_field(
        topic, field, make, convert, orientation):
    q = orientation
    with pytest.raises(ValueError) as error:
        convert(make(orientation), 'map')
    assert str(error.value) == (f'{topic}: {field}.orientation must be finite, '
                                f'got ({q.x}, {q.y}, {q.z}, {q.w})')


@POSE_TOPICS
@pytest.mark.parametrize('zero', [0.0, -0.0])
def test_a_pose_with_an_all_zero_quaternion_is_rejected_naming_the_field(
        topic, field, make, convert, zero):
    with pytest.raises(ValueError) as error:
        convert(make(quaternion(zero, zero, zero, zero)), 'map')
    assert str(error.value) == (f'{topic}: {field}.orientation must be a quaternion of nonzero '
                                f'norm, got ({zero}, {zero}, {zero}, {zero})')


@POSE_TOPICS
@pytest.mark.parametrize('orientation', [quaternion(), quaternion(z=0.6, w=0.8),
                                         quaternion(w=2.0), quaternion(x=1e-200)])
def test_a_pose_with_a_rotation_is_taken_unnormalized_too(topic, field, make, convert,
                                                          orientation):
    assert convert(make(orientation), 'map') == (1.0, 2.0)


@POSE_TOPICS
def test_a_pose_with_an_empty_frame_id_is_taken_in_map_frame(topic, field, make, convert):
    assert convert(make(quaternion(), frame_id=''), 'map') == (1.0, 2.0)
    with pytest.raises(ValueError, match=f"{topic}: header.frame_id 'odom' is not map_frame"):
        convert(make(quaternion(), frame_id='odom'), 'map')


# -- size: a value whose JSON is over the limit is refused, naming its key, size and limit ----

LIMIT = 1200
# 100 characters outside the BMP as a writer may send them: 102 characters, 1,202 bytes of JSON.
EMOJI = json.dumps('\U0001F600' * 100, ensure_ascii=False)


@pytest.mark.parametrize('frozen', [False, True])
def test_a_value_over_the_limit_is_refused_naming_key_size_and_limit(frozen):
    with pytest.raises(TooLarge) as error:
        json_field(json.dumps('x' * 5_000_000), "board entry 'big': value", frozen,
                   MAX_VALUE_BYTES, 'big')
    assert str(error.value) == ("board entry 'big': value: 5,000,002 bytes of JSON, "
                                'over max_value_bytes 262,144')
    assert error.value.oversize == ('big', 5_000_002, MAX_VALUE_BYTES, str(error.value))


@pytest.mark.parametrize('frozen', [False, True])
def test_the_size_is_the_json_the_node_publishes_not_the_text_it_came_in(frozen):
    # Spaces go, and a character outside ASCII is written as an escape (12 bytes above the BMP).
    spaced = '{"a":  [1,   2]}' + ' ' * 2000
    assert json_field(spaced, 'v', frozen, LIMIT, 'k') == json_field(spaced, 'v', frozen)
    assert json_size(json.loads(EMOJI)) == 1202
    with pytest.raises(TooLarge, match='1,202 bytes of JSON, over max_value_bytes 1,200'):
        json_field(EMOJI, 'v', frozen, LIMIT, 'k')
    assert json_field(json.dumps('x' * 1198), 'v', frozen, LIMIT, 'k') == 'x' * 1198


def least_limit_leaving_unmeasured(text):
    """Return the least limit under which `text` is too short to be measured."""
    return next(limit for limit in itertools.count(len(text))
                if longest_unmeasured(limit) >= len(text))


@given(JSON | st.text(), st.sampled_from([{}, {'ensure_ascii': False}, {'indent': 1}]))
def test_a_text_too_short_to_be_measured_is_never_over_the_limit(value, options):
    # What the intake's fast path relies on when it does not measure a short value.
    text = json.dumps(value, **options)
    assert json_size(json.loads(text)) <= least_limit_leaving_unmeasured(text)


@pytest.mark.parametrize('text', ['1e15', '-9e15', '[1e15,2E15]', '{"a":0.1e1}', '"\\/"',
                                  '"\\ud83d\\ude00"', pytest.param(EMOJI, id='emoji')])
def test_numbers_and_characters_written_short_are_never_over_the_limit_unmeasured(text):
    assert json_size(json.loads(text)) <= least_limit_leaving_unmeasured(text)


def test_an_update_takes_its_entries_under_the_limit_and_refuses_the_one_over_it():
    msg = update_msg(('reading:big', 'x' * 2000, 0.0), ('reading:ok', 'x' * 1000, 0.0))
    for frozen in (False, True):
        batch = board_batch_from_msg(msg, 1.0, frozen, LIMIT)
        assert [e.key for e in batch.entries] == ['reading:ok'] and batch.errors == ()
        assert batch.refused == (('reading:big', 2002, LIMIT, "board entry 'reading:big': value: "
                                  '2,002 bytes of JSON, over max_value_bytes 1,200'),)
    assert board_batch_from_msg(msg, 1.0).refused == ()   # no limit


def test_an_event_detail_over_the_limit_is_refused_under_its_kind_and_key():
    msg = log_event(5, key='slip')
    msg.detail = json.dumps({'blob': 'x' * 2000})
    with pytest.raises(TooLarge) as error:
        event_from_msg(msg, 1000.0, KINDS, LIMIT)
    assert error.value.oversize.key == f'event:{KINDS[1].value}:slip'
    assert error.value.oversize.size == len(json.dumps({'blob': 'x' * 2000},
                                                       separators=(',', ':')))
    assert event_from_msg(msg, 1000.0, KINDS).detail == {'blob': 'x' * 2000}


def test_a_writers_answer_refuses_what_is_over_the_limit_and_takes_the_rest():
    big = log_event(5, key='slip')
    big.detail = json.dumps('x' * 2000)
    msg = SimpleNamespace(header=SimpleNamespace(stamp=stamp(0)), writer='w',
                          entries=update_msg(('a', 'x' * 2000, 1.0), ('b', 1, 1.0)).entries,
                          events=[big, log_event(5, key='ok')])
    answer = answer_from_msg(msg, 10.0, KINDS, LIMIT)
    assert [e.key for e in answer.entries] == ['b'] and [e.key for e in answer.events] == ['ok']
    assert [oversize.key for oversize in answer.refused] == ['a', f'event:{KINDS[1].value}:slip']
    assert answer.errors == ()
