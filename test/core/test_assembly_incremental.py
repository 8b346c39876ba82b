"""A tick redoes only what changed, a steady pack is kept: it assembles what a fresh start would."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.frames import pack_digest
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import Manifest

CABINS = {
    'planner': {'board_keys': ['goal:*', 'safety:*', 'pose', 'door:*', 'note:*'],
                'required': ['goal:*', 'pose', 'door:*'],
                'weights': ['door:*=0.6', 'pose=0.9', 'note:*=0.2'],
                'tags': {'exclude': ['charging'], 'from_goal': 'goal:*'},
                'events': {'window_s': 5.0, 'max_count': 4, 'kinds': ['FAILURE', 'CONSTRAINT']},
                'drop': ['door:d3']},
    'monitor': {'board_keys': ['sensor:*', 'pose', 'note:*', 'door:*'],
                'required': ['sensor:*', 'note:n1'],
                'weights': ['sensor:*=0.05', 'note:*=0.4'],
                'tags': {'include': ['energy']},
                'events': {'window_s': 3.0, 'kinds': ['ALARM', 'FAILURE']}},
}
KEYS = ('goal:a', 'goal:b', 'safety:z', 'pose', 'door:d1', 'door:d3', 'note:n1', 'note:n2',
        'sensor:s1', 'sensor:s2', 'sensor:s3', 'other:x')
TAGS = ((), ('energy',), ('charging',), ('delivery',))
GOAL_VALUES = ({'tags': ['delivery']}, {'tags': ['energy']}, {'x': 1})

entries = st.builds(
    lambda key, value, importance, ttl, tags: (key, value, importance, ttl, tags),
    st.sampled_from(KEYS), st.one_of(st.integers(0, 3), st.sampled_from(GOAL_VALUES)),
    st.one_of(st.none(), st.sampled_from([0.1, 0.5, 0.9])),
    st.sampled_from([0.0, 0.0, 0.4, 1.5]), st.sampled_from(TAGS))
steps = st.lists(st.tuples(
    st.lists(entries, max_size=4),                                   # set
    st.lists(st.sampled_from(KEYS), max_size=2),                     # remove
    st.lists(st.sampled_from([EventKind.FAILURE, EventKind.ALARM, EventKind.CONSTRAINT]),
             max_size=2),                                            # events
    st.sampled_from([0.1, 0.3, 1.0, 2.5])),                          # time step [s]
    min_size=1, max_size=25)


def _frame_facts(frame):
    return (frame.digest, [r.key for r in frame.evictions], [r.key for r in frame.readmitted],
            {cabin: (pack.digest, pack.missing, pack.summaries, pack.absent, pack.readmitted,
                     [(item.key, item.last_used) for item in pack.items])
             for cabin, pack in frame.packs.items()})


def _replayed_against_a_fresh_start(cabins, steps, capacity, grid=None, facts=_frame_facts):
    """Tick a kept assembler and one that starts over each tick through `steps`; compare."""
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in cabins.items()}
    kept_set, fresh_set = WorkingSet(capacity), WorkingSet(capacity)
    board = BoardSnapshot(kept_set.timebase)
    log = EventLog(100, kept_set.timebase)
    kept = Assembler(manifests, kept_set)
    fresh = Assembler(manifests, fresh_set)
    now = 0.0
    for tick, (sets, removes, kinds, step) in enumerate(steps, start=1):
        now += step
        kept_set.timebase.observe(now)
        removes = [key for key in removes if key not in {e[0] for e in sets}]
        board.apply([BoardEntry(key, value, now, importance, ttl, tags)
                     for key, value, importance, ttl, tags in sets], removes)
        for kind in kinds:
            log.append(Event(now, kind, 'test', f'k{tick}'))
        # A new assembler over the same working set: it reads the board and the working set
        # anew (a new index of the board, every cabin, wish and waiting key from scratch).
        fresh = Assembler(manifests, fresh_set)
        frame = kept.assemble(tick, now, board, log, grid)
        assert facts(frame) == facts(fresh.assemble(tick, now, board, log, grid))
        assert all(pack.digest == _digest_from_scratch(pack) for pack in frame.packs.values())


@settings(max_examples=150, deadline=None)
@given(steps, st.integers(2, 8))
def test_incremental_tick_assembles_what_a_fresh_board_picture_would(steps, capacity):
    _replayed_against_a_fresh_start(CABINS, steps, capacity)


STEADY_CABINS = {
    # Required keys and events of every kind: stale ages, event ages, evictions, drops; a
    # door the planner takes or leaves with its goal's tags changes the executor's item.
    'planner': {'board_keys': ['goal:*', 'safety:*', 'pose', 'door:*'],
                'required': ['goal:*', 'pose', 'door:d1', 'map'],
                'weights': ['door:*=0.9', 'pose=0.9'],
                'tags': {'exclude': ['charging'], 'from_goal': 'goal:*'},
                'map': {'radius_m': 1.0},
                'events': {'window_s': 0.5, 'max_count': 2, 'kinds': ['FAILURE', 'CONSTRAINT']},
                'drop': ['door:d3']},
    'executor': {'board_keys': ['action:*', 'pose', 'door:*'],
                 'required': ['action:current', 'events:ACTION'],
                 'weights': ['action:*=0.8', 'door:*=0.3'],
                 'events': {'window_s': 1.0, 'kinds': ['ACTION']}},
    'monitor': {'board_keys': ['sensor:*', 'pose'], 'required': ['sensor:*'],
                'weights': ['sensor:*=0.05']},
}
STEADY_KEYS = ('goal:a', 'safety:z', 'pose', 'door:d1', 'door:d3', 'action:current',
               'sensor:s1', 'sensor:s2', 'other:x')
STEADY_VALUES = ({'tags': ['delivery']}, {'x': 1.0, 'y': 1.0}, {'x': 9.0, 'y': 9.0}, 1, 2)
steady_entries = st.tuples(
    st.sampled_from(STEADY_KEYS), st.sampled_from(STEADY_VALUES),
    st.sampled_from([None, 0.1, 0.9]), st.sampled_from([0.0, 0.0, 0.3, 1.0]),
    st.sampled_from([(), ('charging',), ('delivery',), ('other',)]))
# Most ticks change nothing a cabin selects, so packs are handed out again.
steady_steps = st.lists(st.tuples(
    st.one_of(st.just([]), st.just([]), st.lists(steady_entries, max_size=3)),
    st.one_of(st.just([]), st.lists(st.sampled_from(STEADY_KEYS), max_size=1)),
    st.one_of(st.just([]), st.just([]), st.lists(
        st.sampled_from([EventKind.FAILURE, EventKind.ACTION, EventKind.CONSTRAINT]),
        max_size=1)),
    st.sampled_from([0.01, 0.05, 0.2])), min_size=1, max_size=40)


def _pack_facts(frame):
    return (frame.digest, {cabin: (pack.digest, pack.items, pack.events, pack.missing,
                                   pack.absent, pack.readmitted, pack.effective,
                                   None if pack.map_window is None else pack.map_window.origin)
                           for cabin, pack in frame.packs.items()})


@settings(max_examples=150, deadline=None)
@given(steady_steps, st.integers(2, 8))
def test_packs_kept_over_steady_ticks_are_the_packs_a_start_over_makes(steps, capacity):
    # Most ticks change nothing a cabin selects: its last pack is handed out again.
    grid = GridMap(np.zeros((20, 20), dtype=np.int8), (0.0, 0.0), 0.5)
    _replayed_against_a_fresh_start(STEADY_CABINS, steps, capacity, grid, _pack_facts)


def _digest_from_scratch(pack):
    return pack_digest(pack.items, pack.events, pack.map_window, pack.missing,
                       summaries=pack.summaries)


def _world(capacity):
    working_set = WorkingSet(capacity)
    board = BoardSnapshot(working_set.timebase)
    log = EventLog(100, working_set.timebase)
    return working_set, board, log


def _steady_world():
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in STEADY_CABINS.items()}
    working_set, board, log = _world(20)
    board.apply([BoardEntry('goal:a', {'tags': ['delivery']}, 0.0),
                 BoardEntry('pose', {'x': 1.0, 'y': 1.0}, 0.0),
                 BoardEntry('door:d1', 1, 0.0, ttl=0.5),
                 BoardEntry('action:current', 1, 0.0)])
    return Assembler(manifests, working_set), board, log


def test_an_item_another_cabin_changes_makes_a_new_digest_of_a_steady_pack():
    # The goal's tags decide whether the planner takes the door too, at a higher weight.
    assembler, board, log = _steady_world()
    board.apply([BoardEntry('door:d1', 1, 0.0, tags=('other',))])
    log.append(Event(0.0, EventKind.ACTION, 'test', 'a1'))
    packs = []
    for tick, goal in enumerate(({'tags': ['delivery']}, None, {'x': 1}, None), start=1):
        if goal is not None:
            board.apply([BoardEntry('goal:a', goal, tick * 0.1)])
        packs.append(assembler.assemble(tick, tick * 0.1, board, log, None).pack('executor'))
    assert [pack.item('door:d1').importance for pack in packs] == [0.3, 0.3, 0.9, 0.9]
    assert [pack.digest for pack in packs] == [_digest_from_scratch(pack) for pack in packs]
    assert packs[1].digest is packs[0].digest and packs[3].digest is packs[2].digest


def test_a_pack_whose_content_holds_keeps_its_digest_and_its_items_last_use_moves():
    assembler, board, log = _steady_world()
    log.append(Event(0.0, EventKind.ACTION, 'test', 'a1'))
    first = assembler.assemble(1, 0.1, board, log, None).pack('executor')
    second = assembler.assemble(2, 0.2, board, log, None).pack('executor')
    # The very digest object: handed out again, not made again.
    assert second.digest is first.digest and second.missing is first.missing
    assert [item.last_used for item in second.items] == [0.2, 0.2, 0.2]
    board.apply([BoardEntry('action:current', 2, 0.3)])
    third = assembler.assemble(3, 0.3, board, log, None).pack('executor')
    assert third.digest != first.digest and third.item('action:current').value == 2


def test_ages_in_a_steady_pack_still_grow():
    # A stale required key and a required event kind out of its window: texts with ages.
    assembler, board, log = _steady_world()
    log.append(Event(0.0, EventKind.FAILURE, 'test', 'f1'))
    details = []
    for tick, now in enumerate((1.0, 1.5, 2.0), start=1):
        pack = assembler.assemble(tick, now, board, log, None).pack('planner')
        details.append([(m.key, m.text(pack.effective)) for m in pack.missing
                        if m.key == 'door:d1'])
    assert details == [[('door:d1', f'stale: its ttl of 0.5 s ran out {age:.1f} s ago')]
                       for age in (0.5, 1.0, 1.5)]
    assembler, board, log = _steady_world()
    log.append(Event(0.0, EventKind.ACTION, 'test', 'a1'))
    details = [assembler.assemble(tick, now, board, log, None).pack('executor').missing
               for tick, now in enumerate((2.0, 3.0, 4.0), start=1)]
    assert [[m.detail[-9:] for m in missing if m.key == 'events:ACTION'] for missing in details
            ] == [['2.0 s ago'], ['3.0 s ago'], ['4.0 s ago']]
