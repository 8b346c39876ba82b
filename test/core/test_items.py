"""Value types: validation with messages that name the field, JSON size, staleness."""

import json
import math

import pytest
from hypothesis import given, strategies as st

from working_memory.core.checks import is_finite_number, is_unit_interval
from working_memory.core.items import (BoardEntry, Event, EventKind, MAX_NAME_LENGTH, json_size,
                                       name_problem, usable_name)


def test_json_size_is_the_compact_utf8_byte_length():
    assert json_size({'b': 1, 'a': [1, 2]}) == len('{"a":[1,2],"b":1}')
    assert json_size('é') == len('"\\u00e9"')


SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)


@given(JSON_VALUES)
def test_json_size_equals_the_compact_encoders_length_or_raises_like_it(value):
    try:
        expected = len(json.dumps(value, separators=(',', ':'), sort_keys=True, allow_nan=False))
    except ValueError:   # NaN or Infinity somewhere: not JSON
        with pytest.raises(ValueError):
            json_size(value)
        return
    assert json_size(value) == expected


@pytest.mark.parametrize('importance', [-0.1, 1.5, math.nan, math.inf, '0.5', True])
def test_board_entry_rejects_importance_outside_unit_interval(importance):
    with pytest.raises(ValueError, match=r"board entry 'pose': importance must be in \[0, 1\]"):
        BoardEntry('pose', {}, stamp=0.0, importance=importance)


def test_board_entry_rejects_empty_key_and_negative_ttl():
    with pytest.raises(ValueError, match='key must not be empty'):
        BoardEntry('', 1, stamp=0.0)
    with pytest.raises(ValueError, match='ttl must be >= 0 s'):
        BoardEntry('pose', 1, stamp=0.0, ttl=-1.0)
    with pytest.raises(ValueError, match='ttl must be >= 0 s'):
        BoardEntry('pose', 1, stamp=0.0, ttl='1')


@pytest.mark.parametrize('key, message', [
    ('a\nb', r"board entry: key 'a\\nb' holds the unprintable character '\\n'"),
    ('tab\there', r"unprintable character '\\t'"),
    ('nul\x00', r"unprintable character '\\x00'"),
    ('nbsp\u00a0', r"unprintable character '\\xa0'"),
    (' battery', "key ' battery' starts or ends with a space"),
    ('battery ', 'starts or ends with a space'),
    ('k' * (MAX_NAME_LENGTH + 1), r"key 'k{60}'\.\.\. \(257 characters\) is 257 characters long, "
                                  r'more than 256$'),
    ('event:FAILURE:door#1', "key 'event:FAILURE:door#1' must not start with 'event:'"),
    (7, 'key must be a string, got 7'),
])
def test_board_entry_rejects_a_key_that_is_no_usable_name_naming_why(key, message):
    with pytest.raises(ValueError, match=message):
        BoardEntry(key, 1, stamp=0.0)


@pytest.mark.parametrize('key', ['k' * MAX_NAME_LENGTH, 'a b', 'safety:zone/high_voltage',
                                 '任务目标', 'x:event:y'])
def test_board_entry_takes_keys_with_inner_spaces_any_script_and_the_longest_length(key):
    assert BoardEntry(key, 1, stamp=0.0).key == key


@pytest.mark.parametrize('tags, message', [
    (('delivery', ''), r"board entry 'pose': tags\[1\] must not be empty"),
    (('del\nivery',), r"tags\[0\] 'del\\nivery' holds the unprintable character"),
    ((' delivery',), r"tags\[0\] ' delivery' starts or ends with a space"),
    (('t' * 300,), 'is 300 characters long'),
])
def test_board_entry_and_event_reject_unusable_tags_naming_the_index(tags, message):
    with pytest.raises(ValueError, match=message):
        BoardEntry('pose', 1, stamp=0.0, tags=tags)
    with pytest.raises(ValueError, match=message.replace('board entry', 'event')):
        Event(stamp=0.0, kind=EventKind.ACTION, key='pose', tags=tags)


def test_an_event_may_have_an_empty_key_but_not_an_unusable_one():
    assert Event(stamp=0.0, kind=EventKind.ALARM).key == ''
    assert Event(stamp=0.0, kind=EventKind.FAILURE, key='event:x').key == 'event:x'
    with pytest.raises(ValueError, match=r"event: key 'open\\ndoor' holds the unprintable"):
        Event(stamp=0.0, kind=EventKind.ACTION, key='open\ndoor')
    with pytest.raises(ValueError, match='starts or ends with a space'):
        Event(stamp=0.0, kind=EventKind.ACTION, key='open_door ')


@given(st.text(max_size=300) | st.sampled_from(['', ' ', 'k' * 256, 'k' * 257]))
def test_the_quick_name_check_agrees_with_the_explained_one(name):
    assert usable_name(name) == (name_problem(name, 'key') is None)


def test_board_entry_goes_stale_after_its_ttl_and_reports_for_how_long():
    entry = BoardEntry('pose', {}, stamp=10.0, ttl=0.5)
    assert not entry.is_stale(10.5)
    assert entry.is_stale(11.0)
    assert entry.stale_for(11.0) == pytest.approx(0.5)
    assert not BoardEntry('goal', {}, stamp=0.0).is_stale(1e9)  # ttl 0: never stale


def test_event_rejects_a_kind_that_is_not_an_event_kind():
    with pytest.raises(ValueError, match="event 'open_door': kind must be an EventKind"):
        Event(stamp=0.0, kind='ACTION', key='open_door')
    assert Event(stamp=0.0, kind=EventKind.ACTION, key='open_door').seq == -1


NUMBERS = st.one_of(st.floats(), st.integers(-3, 3), st.booleans(), st.none(),
                    st.sampled_from([0.0, 0.5, 1.0, -0.0, 1.5, '1']))


@given(st.sampled_from(['', 'k']), NUMBERS, NUMBERS, NUMBERS, NUMBERS)
def test_a_board_entry_is_made_exactly_when_each_check_passes(
        key, stamp, importance, ttl, effective):
    # The common entry takes a shorter way through the checks: the same entries pass.
    passes = (bool(key) and (importance is None or is_unit_interval(importance))
              and is_finite_number(ttl) and ttl >= 0.0 and is_finite_number(stamp)
              and (effective is None or is_finite_number(effective)))
    try:
        entry = BoardEntry(key, 1, stamp, importance, ttl, effective_stamp=effective)
    except (ValueError, TypeError):
        assert not passes
        return
    assert passes
    expected = float(stamp) if effective is None else effective
    assert entry.effective_stamp == expected and type(entry.effective_stamp) is type(expected)
