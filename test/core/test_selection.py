"""A cabin's absent and stale notes stay sorted by key, and are rebuilt only when they change.

The stale keys of a glob are counted per glob, the most valuable few listed (summaries).
"""

from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.items import BoardEntry, MissingReason, MissingSummary
from working_memory.core.manifest import Manifest, is_glob
from working_memory.core.selection import (CabinBoard, LISTED_PER_GLOB, SortedNotes,
                                           stale_note)

KEYS = tuple(f'sensor:{n}' for n in (3, 1, 10, 2, 7)) + ('door:d1', 'door:d2', 'other:x')
MANIFEST = Manifest.from_dict('monitor', {'board_keys': ['sensor:*', 'door:*', 'sensor:1'],
                                          'tags': {'include': ['energy']},
                                          'weights': ['sensor:7=0.9'],
                                          'drop': ['door:d2']})
changes = st.lists(st.tuples(
    st.dictionaries(st.sampled_from(KEYS), st.one_of(
        st.none(), st.tuples(st.sampled_from([0.0, 0.3, 2.0]),
                             st.sampled_from([(), ('energy',), ('charging',)]),
                             st.sampled_from([0.0, 0.0, 0.5]),      # age on arrival [s]
                             st.sampled_from([None, 0.2, 0.8])))),  # importance
    st.sampled_from([0.1, 0.5, 1.0])), min_size=1, max_size=20)


def _applied(mirror, step, entry):
    """Apply one step (key -> spec, None: removed) to `mirror`; return it as a cabin update."""
    update = {}
    for key, spec in step.items():
        if spec is None:
            mirror.pop(key, None)
            update[key] = None
        else:
            mirror[key] = update[key] = entry(key, spec)
    return update


@settings(max_examples=120, deadline=None)
@given(changes)
def test_absent_notes_and_their_changes_are_what_a_start_over_finds_after_any_changes(steps):
    cabin, mirror, now = CabinBoard(MANIFEST, ('goal', 'safety')), {}, 0.0
    cabin.update(mirror, None, now)
    assert cabin.take_absent_changed() is None   # a start over: any key may have changed
    for step, dt in steps:
        now += dt
        before = dict(cabin.absent)
        cabin.update(mirror, _applied(mirror, step, lambda key, spec: BoardEntry(
            key, 1, now - spec[2], spec[3], ttl=spec[0], tags=spec[1])), now)
        after = dict(cabin.absent)
        changed = cabin.take_absent_changed()
        assert {key for key in before.keys() | after.keys()
                if before.get(key) is not after.get(key)} <= changed
        fresh = CabinBoard(MANIFEST, ('goal', 'safety'))
        fresh.update(mirror, None, now)
        assert dict(fresh.absent) == after
        assert fresh.stale == cabin.stale
        assert (cabin.stale_listed, cabin.summaries) == _listing_from_scratch(cabin, mirror)
        assert (fresh.stale_listed, fresh.summaries) == (cabin.stale_listed, cabin.summaries)


def _listing_from_scratch(cabin, mirror):
    """Return (stale notes listed, summaries) of a cabin's stale keys, worked out anew."""
    manifest = cabin.manifest
    patterns = manifest.selects.patterns
    globs = [pattern for pattern in patterns if is_glob(pattern)]
    listed, groups = [], {pattern: [] for pattern in globs}
    for key in cabin.stale:
        glob = None if key in patterns else next(
            (pattern for pattern in globs if fnmatchcase(key, pattern)), None)
        (listed if glob is None else groups[glob]).append(cabin.absent[key])
    summaries = []
    for pattern, notes in groups.items():
        if not notes:
            continue

        def rank(note):
            entry = mirror[note.key]
            value = manifest.weight_for(note.key) if entry.importance is None else (
                entry.importance)
            return -value, -note.since, note.key
        listed += sorted(notes, key=rank)[:LISTED_PER_GLOB]
        sinces = [note.since for note in notes]
        summaries.append(MissingSummary(pattern, MissingReason.STALE, len(notes),
                                        min(len(notes), LISTED_PER_GLOB), min(sinces),
                                        max(sinces)))
    return tuple(sorted(listed, key=lambda note: note.key)), tuple(summaries)


def test_a_globs_stale_keys_are_counted_and_its_most_valuable_listed():
    manifest = Manifest.from_dict('monitor', {'board_keys': ['obj:*', 'pose'],
                                              'weights': ['obj:7=0.9']})
    cabin = CabinBoard(manifest, ('goal', 'safety'))
    # 1,000 detections whose ttl ran out one after another, one of them weighted higher,
    # one with its own importance; the pose, an exact key, stale too.
    mirror = {f'obj:{n}': BoardEntry(f'obj:{n}', n, n * 0.001, 0.95 if n == 500 else None,
                                     ttl=1.0) for n in range(1000)}
    mirror['pose'] = BoardEntry('pose', {'x': 0.0, 'y': 0.0}, 0.0, ttl=1.0)
    cabin.update(mirror, None, 10.0)
    assert len(cabin.stale) == 1001
    (summary,) = cabin.summaries
    assert (summary.pattern, summary.reason, summary.count, summary.listed) == (
        'obj:*', MissingReason.STALE, 1000, LISTED_PER_GLOB)
    assert (summary.oldest, summary.newest) == (1.0, 0.999 + 1.0)
    # obj:500 (0.95), obj:7 (0.9), then the latest to go stale of the default weight.
    assert [note.key for note in cabin.stale_listed] == ['obj:500', 'obj:7', 'obj:999', 'pose']
    # A key refreshed leaves the count; one removed too.
    entry = BoardEntry('obj:500', 1, 10.0, ttl=1.0)
    mirror['obj:500'] = entry
    del mirror['obj:7']
    cabin.update(mirror, {'obj:500': entry, 'obj:7': None}, 10.0)
    assert cabin.summaries[0].count == 998
    assert [note.key for note in cabin.stale_listed] == ['obj:997', 'obj:998', 'obj:999', 'pose']


def test_a_tick_without_changes_changes_no_note():
    cabin = CabinBoard(MANIFEST, ('goal', 'safety'))
    mirror = {key: BoardEntry(key, 1, 0.0, ttl=1.0) for key in KEYS}
    cabin.update(mirror, None, 0.0)
    cabin.update(mirror, {}, 2.0)           # every sensor's ttl ran out: the notes change
    cabin.take_absent_changed()
    assert sorted(cabin.stale) == sorted(key for key in KEYS if key not in ('door:d2', 'other:x'))
    cabin.update(mirror, {}, 2.1)           # nothing came, went or changed
    assert cabin.take_absent_changed() == set()


def test_a_reading_refreshed_every_tick_queues_its_deadline_about_once_per_ttl():
    cabin, mirror = CabinBoard(MANIFEST, ('goal', 'safety')), {}
    cabin.update(mirror, None, 0.0)
    for tick in range(1, 201):   # 100 Hz for 2 s, ttl 0.5 s
        now = tick * 0.01
        mirror['sensor:1'] = entry = BoardEntry('sensor:1', tick, now, ttl=0.5,
                                                tags=('energy',))
        cabin.update(mirror, {'sensor:1': entry}, now)
        # Private bookkeeping on purpose: the heap must not grow with the refreshes.
        assert len(cabin._deadlines) <= 2
    assert 'sensor:1' in cabin.served
    cabin.update(mirror, {}, 2.0 + 0.49)
    assert 'sensor:1' in cabin.served          # its last reading's ttl has not run out
    cabin.update(mirror, {}, 2.0 + 0.51)
    assert 'sensor:1' in cabin.stale and 'sensor:1' not in cabin.served


def test_a_reading_replaced_by_one_due_sooner_goes_stale_at_the_sooner_deadline():
    cabin, mirror = CabinBoard(MANIFEST, ('goal', 'safety')), {}
    cabin.update(mirror, None, 0.0)
    for ttl, now in ((5.0, 0.0), (0.2, 0.1)):   # the second is due at 0.3, the first at 5
        mirror['sensor:1'] = entry = BoardEntry('sensor:1', ttl, now, ttl=ttl,
                                                tags=('energy',))
        cabin.update(mirror, {'sensor:1': entry}, now)
    cabin.update(mirror, {}, 0.29)
    assert 'sensor:1' in cabin.served
    cabin.update(mirror, {}, 0.31)
    assert 'sensor:1' in cabin.stale


def test_sorted_notes_replace_a_key_and_ignore_an_unknown_discard():
    notes = SortedNotes()
    first = stale_note(BoardEntry('b', 1, 0.0, ttl=1.0))
    second = stale_note(BoardEntry('b', 2, 5.0, ttl=1.0))
    notes.set(first)
    notes.set(stale_note(BoardEntry('a', 1, 0.0, ttl=1.0)))
    notes.set(second)
    notes.discard('c')
    assert [note.key for note in notes.notes] == ['a', 'b'] and notes.notes[1] is second


def test_short_lived_keys_no_cabin_selects_leave_no_trace_once_removed():
    # Detections keyed by id come and go: a cabin that never selects them must not keep them.
    manifest = Manifest.from_dict('planner', {'board_keys': ['goal:*', 'pose'],
                                              'tags': {'from_goal': 'goal:*'}})
    cabin, mirror = CabinBoard(manifest, ('goal', 'safety')), {}
    cabin.update(mirror, None, 0.0)
    for n in range(200):
        key = f'det:{n}'
        mirror[key] = entry = BoardEntry(key, n, float(n))
        cabin.update(mirror, {key: entry}, float(n))
        del mirror[key]
        cabin.update(mirror, {key: None}, float(n) + 0.5)
    # Private bookkeeping on purpose: nothing public grows with keys a cabin never serves.
    assert len(cabin._kinds) == 0 and len(cabin._goal_names) == 0 and len(cabin._quiet) == 0


PLANNER = Manifest.from_dict('planner', {'board_keys': ['goal:*', 'door:*', 'pose'],
                                         'tags': {'exclude': ['charging'], 'from_goal': 'goal:*'},
                                         'drop': ['door:d2']})
PLANNER_KEYS = ('goal:a', 'goal:b', 'door:d1', 'door:d2', 'pose', 'det:1', 'det:2', 'other:x')
GOAL_VALUES = ({'tags': ['delivery']}, {'tags': ['energy']}, {'x': 1}, 3)
planner_steps = st.lists(st.tuples(
    st.dictionaries(st.sampled_from(PLANNER_KEYS), st.one_of(
        st.none(), st.tuples(st.sampled_from(GOAL_VALUES), st.sampled_from([0.0, 0.25, 1.0]),
                             st.sampled_from([(), ('energy',), ('delivery',), ('charging',)]))),
        max_size=3),
    st.sampled_from([0.01, 0.05, 0.3])), min_size=1, max_size=40)


def _facts(cabin):
    return (cabin.include, dict(cabin.served), dict(cabin.absent), dict(cabin.stale),
            dict(cabin.withheld))


@settings(max_examples=150, deadline=None)
@given(planner_steps)
def test_ticks_whose_changes_concern_the_cabin_in_no_way_keep_what_a_start_over_finds(steps):
    # Keys it never selects change on most ticks (the quiet path), its goals' tags run out.
    cabin, mirror, now = CabinBoard(PLANNER, ('goal', 'safety')), {}, 0.0
    cabin.update(mirror, None, now)
    for step, dt in steps:
        now += dt
        cabin.update(mirror, _applied(mirror, step, lambda key, spec: BoardEntry(
            key, spec[0], now, ttl=spec[1], tags=spec[2])), now)
        fresh = CabinBoard(PLANNER, ('goal', 'safety'))
        fresh.update(mirror, None, now)
        assert _facts(cabin) == _facts(fresh)


def test_a_goals_tags_run_out_with_its_ttl_while_only_other_keys_change():
    goal = BoardEntry('goal:a', {'tags': ['delivery']}, 0.0, ttl=1.0)
    door = BoardEntry('door:d1', 1, 0.0, tags=('energy',))
    mirror = {'goal:a': goal, 'door:d1': door}
    cabin = CabinBoard(PLANNER, ('goal', 'safety'))
    cabin.update(mirror, None, 0.0)
    seen = []
    for n in range(1, 30):   # other:x is no key of the cabin: each tick is a quiet one
        mirror['other:x'] = entry = BoardEntry('other:x', n, n * 0.05)
        cabin.update(mirror, {'other:x': entry}, n * 0.05)
        seen.append((cabin.include, 'door:d1' in cabin.served))
    # While the goal is fresh only its tags pass; once stale, the door's energy tag does too.
    assert seen[9] == (frozenset({'delivery'}), False)
    assert seen[-1] == (frozenset(), True)
