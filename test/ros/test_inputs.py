"""The node's input conversions (ros/inputs.py, pure): the frozen fast path equals the plain one."""

import json
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from working_memory.core.board import BoardSnapshot
from working_memory.core.frozen import FrozenDict, deep_freeze
from working_memory.core.timebase import TimeBase
from working_memory.ros.inputs import board_batch_from_msg, json_field

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
