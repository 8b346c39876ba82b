"""Sequence gaps count every update a publisher wrote after the first heard."""

from hypothesis import given
from hypothesis import strategies as st

from working_memory.engine.receipts import SequenceGaps, TakeOrder


def test_a_jump_in_one_publishers_numbers_counts_the_updates_in_between():
    gaps = SequenceGaps()
    assert [gaps.observe(b'a', n) for n in (7, 8, 12, 13)] == [0, 0, 3, 0]
    assert gaps.observe(b'b', 100) == 0   # another publisher starts where it is first heard
    assert gaps.observe(b'b', 102) == 1
    assert gaps.missed == 4


def test_duplicates_reordering_and_unnumbered_updates_count_nothing():
    gaps = SequenceGaps()
    for number in (5, 6, 6, 4, None, 7):
        assert gaps.observe(b'a', number) == 0
    assert gaps.missed == 0


def test_the_least_recently_heard_publisher_is_forgotten_beyond_the_limit():
    gaps = SequenceGaps(max_publishers=2)
    gaps.observe(b'a', 1)
    gaps.observe(b'b', 1)
    gaps.observe(b'a', 2)
    gaps.observe(b'c', 1)           # forgets b, heard least recently
    assert gaps.publishers == 2
    assert gaps.observe(b'a', 5) == 2    # a is still remembered
    assert gaps.observe(b'b', 50) == 0   # b starts afresh


@given(st.lists(st.tuples(st.sampled_from([b'a', b'b', b'c']), st.booleans()), max_size=300))
def test_missed_equals_what_was_dropped_between_the_first_and_last_update_heard(writes):
    gaps = SequenceGaps()
    numbers = {}
    heard: dict[bytes, list[int]] = {}
    dropped_between = 0
    for publisher, delivered in writes:
        numbers[publisher] = numbers.get(publisher, 0) + 1
        if delivered:
            heard.setdefault(publisher, []).append(numbers[publisher])
            gaps.observe(publisher, numbers[publisher])
    for received in heard.values():
        dropped_between += received[-1] - received[0] + 1 - len(received)
    assert gaps.missed == dropped_between


def test_first_keeps_each_publishers_start_in_the_order_first_heard_until_it_is_forgotten():
    gaps = SequenceGaps(max_publishers=2)
    for publisher, number in ((b'b', 4), (b'a', 9), (b'b', 5), (b'a', 10)):
        gaps.observe(publisher, number)
    assert list(gaps.first.items()) == [(b'b', 4), (b'a', 9)]
    gaps.observe(b'c', None)   # unnumbered: no start
    gaps.observe(b'c', 3)      # forgets b, heard least recently
    assert list(gaps.first.items()) == [(b'a', 9), (b'c', 3)]


def test_the_take_order_is_runs_of_one_publishers_messages_until_too_many_make_it_unknown():
    order = TakeOrder(max_runs=3)
    for publisher in (b'a', b'a', b'b', b'a'):
        order.took(publisher)
    assert order.take() == ((b'a', 2), (b'b', 1), (b'a', 1))
    assert order.take() == ()   # each frame's runs since the last
    for publisher in (b'a', b'b', b'a', b'b'):
        order.took(publisher)
    assert order.take() is None
    order.took(b'c')
    assert order.take() == ((b'c', 1),)
