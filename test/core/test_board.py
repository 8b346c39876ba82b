"""BoardSnapshot: the latest entry per key, exactly what the board said."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from working_memory.core.board import BoardSnapshot, MAX_INDEXES, key_prefix
from working_memory.core.items import BoardEntry
from working_memory.core.timebase import TimeBase


def test_latest_entry_per_key_wins_and_version_counts_updates():
    board = BoardSnapshot()
    board.apply([BoardEntry('battery', 0.9, 1.0)])
    board.apply([BoardEntry('battery', 0.8, 2.0), BoardEntry('pose', {'x': 1, 'y': 2}, 2.0)])
    assert board.get('battery').value == 0.8
    assert sorted(board.keys()) == ['battery', 'pose']
    assert board.version == 2


def test_apply_returns_only_keys_the_board_held():
    board = BoardSnapshot()
    board.apply([BoardEntry('a', 1, 0.0), BoardEntry('b', 2, 0.0)])
    assert board.apply(removed_keys=['b', 'never', 'b']) == ['b']
    assert board.keys() == ['a']
    assert board.apply(removed_keys=['b']) == []


def test_key_set_and_removed_by_one_update_is_rejected_and_nothing_applies():
    board = BoardSnapshot()
    with pytest.raises(ValueError, match=r"removed_keys: \['a'\] also set"):
        board.apply([BoardEntry('a', 1, 0.0), BoardEntry('b', 1, 0.0)], ['a'])
    assert len(board) == 0 and board.version == 0


@pytest.mark.parametrize('entries, removed, message', [
    ([{'key': 'a'}], [], r'entries\[0\]: must be a BoardEntry'),
    ([BoardEntry('a', {1, 2}, 0.0)], [], r"entries\[0\] 'a': value: must be JSON"),
    ([], ['ok', ''], r'removed_keys\[1\]: must be a non-empty string'),
])
def test_bad_update_is_rejected_naming_the_field(entries, removed, message):
    with pytest.raises(ValueError, match=message):
        BoardSnapshot().apply(entries, removed)


def test_view_is_a_frozen_picture_unaffected_by_later_updates():
    board = BoardSnapshot()
    source = {'x': 1.0, 'y': [1, 2]}
    board.apply([BoardEntry('pose', source, 0.0)])
    view = board.view()
    source['x'] = 99.0
    board.apply([BoardEntry('pose', {'x': 2.0}, 1.0)], [])
    assert view.version == 1
    assert view.get('pose').value == {'x': 1.0, 'y': (1, 2)}
    with pytest.raises(TypeError):
        view.get('pose').value['x'] = 3.0
    with pytest.raises(TypeError):
        view.entries['battery'] = BoardEntry('battery', 1, 0.0)
    assert board.view().get('pose').value == {'x': 2.0}


def test_with_a_timebase_entries_are_placed_on_the_effective_timeline_on_arrival():
    timebase = TimeBase()
    board = BoardSnapshot(timebase)
    timebase.observe(100.0)
    board.apply([BoardEntry('before', 1, 99.5, ttl=1.0)])
    timebase.observe(0.2)                          # reset: effective 100 s
    board.apply([BoardEntry('after', 2, 0.2, ttl=1.0)])
    before, after = board.get('before'), board.get('after')
    assert (before.stamp, before.effective_stamp) == (99.5, 99.5)
    assert (after.stamp, after.effective_stamp) == (0.2, 100.0)
    now = timebase.observe(0.8)                    # effective 100.6 s
    assert before.is_stale(now) and not after.is_stale(now)
    assert before.stale_for(now) == pytest.approx(0.1)


def test_checked_entries_are_kept_as_given_and_placed_on_the_effective_timeline():
    timebase = TimeBase()
    board = BoardSnapshot(timebase)
    timebase.observe(100.0)
    timebase.observe(0.2)                          # reset: effective 100 s
    entry = BoardEntry('after', 2, 0.2, ttl=1.0)
    board.apply_checked([entry])
    assert board.get('after') is entry and entry.effective_stamp == 100.0
    with pytest.raises(ValueError, match='also set'):
        board.apply_checked([BoardEntry('x', 1, 0.0)], ['x'])


@pytest.mark.parametrize('value', [math.nan, math.inf, {'x': -math.inf}, [1.0, math.nan]])
def test_non_finite_numbers_are_not_json_and_nothing_applies(value):
    board = BoardSnapshot()
    with pytest.raises(ValueError, match="entries\\[0\\] 'k': value: must be JSON"):
        board.apply([BoardEntry('k', value, 0.0)])
    assert len(board) == 0


class _Prefix:
    """A matcher for the index tests: keys starting with `prefix`, counting its calls."""

    def __init__(self, prefix):
        self.prefix, self.calls = prefix, 0

    def match(self, key):
        self.calls += 1
        return key.startswith(self.prefix)


@given(st.lists(st.tuples(st.sampled_from('abcdef'), st.sampled_from(['s', 'r']),
                          st.sampled_from(['x', 'y'])), max_size=60))
def test_an_index_is_the_matching_keys_in_board_order_after_any_updates(operations):
    board = BoardSnapshot()
    matcher = _Prefix('x')
    assert board.index(matcher) == ()
    for name, op, prefix in operations:
        key = f'{prefix}{name}'
        if op == 's':
            board.apply([BoardEntry(key, 1, 0.0)])
        else:
            board.apply(removed_keys=[key])
        assert board.index(matcher) == tuple(k for k in board.keys() if k.startswith('x'))


def test_an_index_matches_only_keys_new_to_the_board_and_a_view_copies_only_what_it_names():
    board = BoardSnapshot()
    board.apply([BoardEntry(f'noise:{i}', i, 0.0) for i in range(1000)] +
                [BoardEntry('goal:a', 1, 0.0)])
    matcher = _Prefix('goal')
    assert board.index(matcher) == ('goal:a',) and matcher.calls == 1001
    for value in range(10):   # updates of known keys are not matched again
        board.apply([BoardEntry('noise:5', value, 0.0), BoardEntry('goal:a', value, 0.0)])
    board.apply([BoardEntry('goal:b', 0, 0.0)])
    assert board.index(matcher) == ('goal:a', 'goal:b') and matcher.calls == 1002
    view = board.view(board.index(matcher) + ('never:seen',))
    assert list(view.entries) == ['goal:a', 'goal:b'] and view.get('goal:a').value == 9


def test_changes_name_what_was_set_or_removed_since_the_last_call():
    board = BoardSnapshot()
    board.apply([BoardEntry('a:1', 1, 0.0), BoardEntry('b:1', 1, 0.0)])
    matcher = _Prefix('a:')
    first = board.changes(matcher)
    assert first.full and list(first.entries) == ['a:1']
    board.apply([BoardEntry('a:2', 2, 1.0), BoardEntry('b:2', 2, 1.0)], ['b:1'])
    board.apply([], ['a:1'])
    board.apply([BoardEntry('a:1', 3, 2.0)])
    later = board.changes(matcher)
    assert not later.full
    assert {key: None if e is None else e.value for key, e in later.entries.items()} == {
        'a:2': 2, 'b:1': None, 'a:1': 3}
    assert later.moved == {'a:1'}
    assert not board.changes(matcher).entries


def test_keys_new_to_a_mirror_come_in_board_order_a_key_set_again_last():
    # A consumer places keys new to its mirror in the order of the changes: board order.
    board = BoardSnapshot()
    board.apply([BoardEntry('a:1', 1, 0.0), BoardEntry('a:2', 2, 0.0)])
    matcher = _Prefix('a:')
    board.changes(matcher)
    board.apply([BoardEntry('a:2', 3, 1.0)], ['a:1'])
    board.apply([BoardEntry('a:3', 4, 1.0)])
    board.apply([BoardEntry('a:1', 5, 2.0)])
    changes = board.changes(matcher)
    assert changes.moved == {'a:1'}
    new_or_moved = [key for key in changes.entries if key in changes.moved or key == 'a:3']
    assert new_or_moved == ['a:3', 'a:1']
    assert board.index(matcher) == ('a:2', 'a:3', 'a:1')


def test_a_key_set_again_keeps_its_place_in_its_update_among_keys_new_with_it():
    board = BoardSnapshot()
    board.apply([BoardEntry('a:1', 1, 0.0)])
    matcher = _Prefix('a:')
    board.changes(matcher)
    board.apply([], ['a:1'])
    board.apply([BoardEntry('a:1', 2, 1.0), BoardEntry('a:2', 3, 1.0), BoardEntry('a:2', 4, 1.0)])
    assert list(board.changes(matcher).entries) == ['a:1', 'a:2'] == list(board.index(matcher))


def test_a_watched_keys_value_arrives_with_its_json_text_made_and_others_without():
    board = BoardSnapshot()
    board.changes(_Prefix('a:'))   # a consumer mirrors the a: keys
    board.apply([BoardEntry('a:1', {'x': 1.5}, 0.0), BoardEntry('b:1', {'x': 2}, 0.0)])
    assert board.get('a:1').value.json_text == '{"x":1.5}'
    assert not hasattr(board.get('b:1').value, 'json_text')


def test_changes_start_over_when_the_index_was_dropped():
    board = BoardSnapshot()
    board.apply([BoardEntry('a:1', 1, 0.0)])
    matcher = _Prefix('a:')
    board.changes(matcher)
    for index in range(MAX_INDEXES):
        board.index(_Prefix(f'x{index}'))
    board.apply([], ['a:1'])
    again = board.changes(matcher)
    assert again.full and not again.entries


KEYS = st.sampled_from(['xa', 'xb', 'ya', 'yb', 'xc'])
UPDATES = st.lists(st.tuples(
    st.lists(st.tuples(KEYS, st.floats(-5.0, 5.0), st.integers(0, 3)), max_size=3),
    st.lists(KEYS, max_size=2), st.sampled_from(['tuple', 'list', 'changes', 'bad'])),
    max_size=40)


@given(UPDATES)
def test_apply_checked_builds_the_board_apply_builds_over_random_updates(updates):
    # The fast path (one tuple of entries, no removals) against the general one, with an
    # index asked for its changes between updates, contradictions and bad entries included.
    fast, reference = BoardSnapshot(TimeBase()), BoardSnapshot(TimeBase())
    matcher = _Prefix('x')
    fast.changes(matcher), reference.changes(matcher)
    for now, (sets, removed, how) in enumerate(updates):
        fast._timebase.observe(float(now)), reference._timebase.observe(float(now))

        def entries():
            made = [BoardEntry(key, value, now + shift) for key, value, shift in sets]
            return made + ['not an entry'] if how == 'bad' else made
        outcomes = []
        for board, apply in ((fast, fast.apply_checked),
                             (reference, lambda e, r: reference.apply(e, r))):
            batch = tuple(entries()) if how != 'list' else entries()
            try:
                outcomes.append(apply(batch, tuple(removed)))
            except ValueError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1]
        assert fast.view().entries == reference.view().entries and fast.version == reference.version
        assert [e.effective_stamp for e in fast.view().entries.values()] == \
            [e.effective_stamp for e in reference.view().entries.values()]
        if how == 'changes':
            assert fast.changes(matcher) == reference.changes(matcher)
    assert fast.index(matcher) == reference.index(matcher)
    assert fast.changes(matcher) == reference.changes(matcher)


def test_growth_counts_keys_new_to_the_board_and_removed_per_prefix():
    board = BoardSnapshot()
    board.apply([BoardEntry(f'obj:{n}', n, 0.0) for n in range(5)]
                + [BoardEntry('pose', 1, 0.0), BoardEntry('lidar/front', 1, 0.0)])
    board.apply([BoardEntry('obj:1', 2, 1.0), BoardEntry('obj:1', 3, 1.0)])   # not new
    board.apply([BoardEntry('obj:9', 1, 1.0)], removed_keys=['obj:0', 'obj:2', 'gone:x'])
    board.apply([BoardEntry('obj:0', 1, 2.0)])   # set again after its removal: new again
    assert board.growth() == {'obj:': (7, 2), '': (1, 0), 'lidar/': (1, 0)}
    assert key_prefix('a:b/c') == 'a:' and key_prefix('a/b:c') == 'a/' and key_prefix('x') == ''
