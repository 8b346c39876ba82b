"""Deep-frozen values: a frozen frame cannot be changed through an item's value."""

import copy
import json
import pickle

import pytest

from working_memory.core.frozen import FrozenDict, check_json, deep_freeze


def test_deep_freeze_turns_dicts_and_lists_immutable_at_every_level():
    value = deep_freeze({'route': [[0, 1], {'x': 2}], 'n': 1})
    assert isinstance(value, FrozenDict)
    assert value['route'] == ((0, 1), {'x': 2})
    assert isinstance(value['route'][1], FrozenDict)


@pytest.mark.parametrize('mutate', [
    lambda d: d.__setitem__('a', 2),
    lambda d: d.__delitem__('a'),
    lambda d: d.update(b=1),
    lambda d: d.pop('a'),
    lambda d: d.popitem(),
    lambda d: d.setdefault('b', 1),
    lambda d: d.clear(),
])
def test_frozen_dict_refuses_every_mutation(mutate):
    frozen = deep_freeze({'a': 1})
    with pytest.raises(TypeError, match='frozen'):
        mutate(frozen)
    assert frozen == {'a': 1}


def test_frozen_dict_in_place_or_is_refused():
    frozen = deep_freeze({'a': 1})
    with pytest.raises(TypeError):
        frozen |= {'b': 2}


def test_frozen_values_serialize_copy_and_pickle_like_plain_json():
    value = deep_freeze({'b': [1, 2], 'a': {'c': None}})
    assert json.loads(json.dumps(value)) == {'b': [1, 2], 'a': {'c': None}}
    assert copy.deepcopy(value) == value
    assert isinstance(pickle.loads(pickle.dumps(value)), FrozenDict)


def test_check_json_names_the_value_it_rejects():
    check_json({'a': [1, 2.5, None, 'x']}, 'ok')
    with pytest.raises(ValueError, match='entries\\[0\\]: must be JSON'):
        check_json({'a': {1, 2}}, 'entries[0]')
    with pytest.raises(ValueError, match='entries\\[1\\]: must be JSON .RFC 8259: no NaN'):
        check_json({'a': [1.0, float('nan')]}, 'entries[1]')
