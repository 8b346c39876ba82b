"""The tick's kept encodings equal the ones made from scratch (a tick costs what changed)."""

import json
import sys

import pytest

from hypothesis import given, settings, strategies as st

from working_memory.core import frames, items
from working_memory.core.frames import ItemEncodings, pack_digest
from working_memory.core.frozen import deep_freeze
from working_memory.core.items import Item, Missing, MissingReason, Source, json_size, value_text

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8)
_items = st.builds(
    Item, key=st.text(min_size=1, max_size=6), value=_json.map(deep_freeze),
    source=st.sampled_from(list(Source)), importance=st.floats(0.0, 1.0),
    stamp=st.floats(-1e9, 1e9), last_used=st.floats(0.0, 1e3), stale=st.booleans(),
    exempt=st.booleans())


def _scratch(item: Item) -> bytes:
    return json.dumps([item.key, item.value, item.source.value, item.importance, item.stamp,
                       item.stale, item.exempt], sort_keys=True, separators=(',', ':')).encode()


@given(_items)
def test_an_items_encoding_joined_around_its_kept_value_text_is_the_canonical_json(item):
    assert frames._item_encoding(item) == _scratch(item)


def test_an_item_of_other_number_types_is_encoded_as_a_whole_the_same_way():
    for item in (Item('k', deep_freeze({'a': [1]}), Source.LOG, 1, 2, 0.0, 0, 1),
                 Item('k', float('nan'), Source.BOARD, 0.5, 1.0, 0.0),
                 Item('k', 'x', Source.BOARD, 0.5, float('inf'), 0.0)):
        assert frames._item_encoding(item) == _scratch(item)


@given(_json.map(deep_freeze))
def test_a_values_text_is_the_compact_canonical_json_and_its_size_the_texts_length(value):
    text = json.dumps(value, sort_keys=True, separators=(',', ':'), allow_nan=False)
    assert value_text(value) == text
    assert value_text(value) == text   # the kept text, the second time
    assert json_size(value) == len(text)


def test_a_frozen_values_text_is_kept_on_it_and_goes_with_it():
    value = deep_freeze({'reading': 0.5, 'unit': 'm'})
    text = value_text(value)
    assert value_text(value) is text
    held = sys.getrefcount(text)
    del value   # no cache elsewhere keeps the text (or a dead value) alive
    assert sys.getrefcount(text) == held - 1


def test_a_value_prepared_ahead_keeps_its_text_and_one_the_encoder_refuses_is_left_as_is():
    value, bad = deep_freeze({'a': [1, 2]}), deep_freeze({'a': float('nan')})
    items.prepare_text(value)
    items.prepare_text(bad)   # no error here: the value's use raises it, where it is reported
    assert value.json_text == '{"a":[1,2]}' and not hasattr(bad, 'json_text')
    with pytest.raises(ValueError):
        value_text(bad)


def test_a_huge_values_text_is_not_kept_so_its_memory_is_not_held_twice():
    # Big readings (a scan, a costmap patch) must not hold their size twice.
    huge = deep_freeze({'blob': 'y' * items._KEPT_TEXT_CHARS})
    text = value_text(huge)
    assert text == json.dumps(huge, sort_keys=True, separators=(',', ':'))
    assert value_text(huge) == text and value_text(huge) is not text


def test_a_plain_dict_is_encoded_anew_each_time_so_a_mutation_shows():
    value = {'a': 1}
    assert value_text(value) == '{"a":1}'
    value['a'] = 2
    assert value_text(value) == '{"a":2}' and json_size(value) == 7


@settings(max_examples=60)
@given(st.lists(st.lists(st.tuples(st.integers(0, 5), _items), max_size=6), min_size=1,
                max_size=6),
       st.lists(st.lists(st.integers(0, 5), max_size=4), min_size=6, max_size=6))
def test_digests_made_with_kept_encodings_over_ticks_equal_those_made_from_scratch(ticks,
                                                                                   notes):
    # Each tick changes some keys' items (a key per slot 0..5); the rest are as last tick.
    # Its missing list takes notes from a pool: the same objects tick after tick, some
    # with a since, some with none, so kept note texts are joined anew.
    encodings, held = ItemEncodings(), {}
    pool = [Missing(f'm{i}', MissingReason.STALE, detail, since) for i, (detail, since) in
            enumerate([('', None), ('a', 1.5), ('b', None), ('a', 0.0), ('', 2.25), ('b', 7.0)])]
    for changes, chosen in zip(ticks, notes):
        for slot, item in changes:
            held[f'k{slot}'] = item._replace(key=f'k{slot}')
        items = [held[key]._replace(last_used=float(len(ticks))) for key in sorted(held)]
        missing = tuple(pool[index] for index in chosen)
        kept = pack_digest(items, (), None, missing, encodings)
        encodings.end_tick()
        assert kept == pack_digest(items, (), None, missing)


@settings(max_examples=60)
@given(st.lists(st.lists(st.tuples(st.integers(0, 7), _items), max_size=5), min_size=1,
                max_size=8),
       st.lists(st.booleans(), min_size=8, max_size=8))
def test_a_groups_kept_parts_over_ticks_give_the_digests_made_from_scratch(ticks, served):
    # Per tick a few of 8 keys change (value, source, stamp, flags); the pack serves some keys
    # (the list's length changes when a key comes or goes); every Item is made anew each tick.
    encodings, held = ItemEncodings(), {}
    for number, changes in enumerate(ticks):
        for slot, item in changes:
            held[f'k{slot}'] = item._replace(key=f'k{slot}')
        keys = [key for index, key in enumerate(sorted(held)) if served[(index + number) % 8]]
        items = [held[key]._replace(last_used=float(number)) for key in keys]
        kept = pack_digest(items, (), None, (), encodings, 'cabin')
        assert kept == pack_digest(items, (), None, (), encodings, 'other')
        encodings.end_tick()
        assert kept == pack_digest(items, (), None, ())


# Equal but distinct objects (1, 1.0, True; two ints of 10**6; NaN is not equal to itself).
_POOL = [1, 1.0, True, 'a', None, 10**6, int('1000000'), float('nan')]
_rows = st.tuples(st.sampled_from(_POOL), st.sampled_from(_POOL))


@given(st.lists(st.tuples(_rows, _rows), max_size=12),
       st.lists(st.integers(0, 1), max_size=2), st.lists(st.integers(0, 1), max_size=2))
def test_changed_positions_in_c_match_the_reference(pairs, same, equal):
    old, new = [a for a, _ in pairs], [b for _, b in pairs]
    assert frames.changed_positions(old, new, same, equal) == frames.py_changed_positions(
        old, new, same, equal)


def test_changed_positions_tell_the_very_object_from_an_equal_one():
    value = object()
    assert frames.changed_positions([(value, 1.0)], [(value, 1)], [0], [1]) == []
    assert frames.changed_positions([(value, 1.0)], [(object(), 1.0)], [0], [1]) == [0]
    assert frames.changed_positions([(value, 1.0)], [(value, True)], [1], []) == [0]
    with pytest.raises(ValueError, match='one length'):
        frames.changed_positions([], [(1,)], [0], [])
    with pytest.raises(TypeError, match='tuples'):
        frames.changed_positions([(1,)], [[1]], [0], [])


def test_a_frozen_values_kept_text_is_the_text_of_its_encoding():
    value = deep_freeze({'reading': 0.25})
    value.json_text = '{"kept":1}'   # the kept text is the value's text: not encoded again
    item = Item('k', value, Source.BOARD, 0.5, 1.0, 2.0)
    (part,) = frames.framed_each((item,), {}, {})
    assert part[8:] == b'["k",{"kept":1},"board",0.5,1.0,false,false]'


def test_a_note_reads_its_age_at_the_time_asked_and_never_a_negative_one():
    stale = Missing('sensor:1', MissingReason.STALE, 'stale: its ttl of 1.0 s ran out', 10.0)
    assert stale.text(13.3) == 'stale: its ttl of 1.0 s ran out 3.3 s ago'
    assert stale.text(9.0) == 'stale: its ttl of 1.0 s ran out 0.0 s ago'   # a clock behind
    plain = Missing('goal', MissingReason.NEVER_SEEN, 'not on the board')
    assert plain.text(5.0) == 'not on the board'
