"""The record of values refused for their size: the latest per key, until a value is taken."""

import pytest

from working_memory.core.refusals import Refusal, Refusals


def refusal(key, size=300_000, stamp=1.0):
    return Refusal(key, size, 262_144, stamp, stamp)


def test_a_keys_refusals_begin_once_and_the_latest_is_kept():
    refusals = Refusals()
    assert refusals.refuse(refusal('reading:big', 300_000, 1.0))
    assert not refusals.refuse(refusal('reading:big', 400_000, 2.0))
    assert refusals.get('reading:big') == refusal('reading:big', 400_000, 2.0)
    assert refusals.refuse(refusal('reading:other'))
    assert list(refusals.latest) == ['reading:big', 'reading:other']


def test_a_value_taken_ends_its_keys_refusals_and_a_later_one_begins_them_again():
    refusals = Refusals()
    refusals.refuse(refusal('reading:big'))
    refusals.taken(['reading:small', 'reading:big'])
    assert refusals.get('reading:big') is None and not refusals.latest
    assert refusals.refuse(refusal('reading:big', stamp=3.0))


def test_the_record_keeps_the_keys_refused_last_within_its_bound():
    refusals = Refusals(keep=3)
    for index in range(5):
        refusals.refuse(refusal(f'obj:{index}'))
    refusals.refuse(refusal('obj:2', stamp=9.0))   # refused again: kept longest now
    refusals.refuse(refusal('obj:5'))
    assert list(refusals.latest) == ['obj:4', 'obj:2', 'obj:5']
    assert [refusals.get(f'obj:{index}') is not None for index in range(6)] == [
        False, False, True, False, True, True]


def test_a_refusal_says_its_size_limit_and_time():
    assert refusal('k', 5_000_002, 12.34).text() == (
        'refused: 5,000,002 bytes over max_value_bytes 262,144 at t=12.3 s')


def test_a_record_of_no_keys_is_refused():
    with pytest.raises(ValueError, match='keep'):
        Refusals(keep=0)
