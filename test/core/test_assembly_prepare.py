"""Assembler.prepare between ticks changes no frame: a prepared tick is the tick without it."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import Manifest

CABINS = {
    'planner': {'board_keys': ['goal:*', 'safety:*', 'pose', 'door:*', 'note:*'],
                'required': ['goal:*', 'pose', 'door:*', 'map'],
                'weights': ['door:*=0.6', 'pose=0.9', 'note:*=0.2'],
                'tags': {'exclude': ['charging'], 'from_goal': 'goal:*'},
                'map': {'radius_m': 1.0},
                'events': {'window_s': 2.0, 'max_count': 3, 'kinds': ['FAILURE', 'CONSTRAINT']},
                'drop': ['door:d3']},
    'monitor': {'board_keys': ['sensor:*', 'pose', 'note:*', 'door:*'],
                'required': ['sensor:*', 'note:n1'],
                'weights': ['sensor:*=0.05', 'note:*=0.4'],
                'tags': {'include': ['energy']},
                'events': {'window_s': 1.5, 'kinds': ['ALARM', 'FAILURE']}},
}
KEYS = ('goal:a', 'goal:b', 'safety:z', 'pose', 'door:d1', 'door:d3', 'note:n1', 'note:n2',
        'sensor:s1', 'sensor:s2', 'sensor:s3', 'other:x')
TAGS = ((), ('energy',), ('charging',), ('delivery',))
# Goals name tags (the planner's goal tags), poses move the map window.
VALUES = (0, 1, {'tags': ['delivery']}, {'tags': ['energy'], 'x': 1.0, 'y': 1.0},
          {'x': 1.0, 'y': 1.0}, {'x': 6.0, 'y': 4.0})

entries = st.tuples(
    st.sampled_from(KEYS), st.sampled_from(VALUES), st.sampled_from([None, 0.1, 0.5, 0.9]),
    # ttls that run out between a prepare and its tick, and later
    st.sampled_from([0.0, 0.0, 0.05, 0.3, 1.0]), st.sampled_from(TAGS))
batches = st.tuples(st.lists(entries, max_size=4),
                    st.lists(st.sampled_from(KEYS), max_size=2),
                    st.floats(0.0, 0.99))                       # when, as a share of the step
steps = st.lists(st.tuples(
    st.lists(batches, max_size=3),
    st.lists(st.sampled_from([EventKind.FAILURE, EventKind.ALARM, EventKind.CONSTRAINT]),
             max_size=2),
    st.sampled_from([0.02, 0.1, 0.4, 1.0]),                     # time step [s]
    st.sampled_from([False, False, False, True]),               # prepare after the batches
    st.sampled_from([False] * 7 + [True])),                     # manifests set again
    min_size=1, max_size=15)


def _facts(frame):
    return (frame.tick, frame.digest, frame.evictions, frame.readmitted, frame.capacity_alarm,
            {cabin: (pack.digest, pack.items, pack.events, pack.missing, pack.absent,
                     pack.readmitted, pack.effective,
                     None if pack.map_window is None else
                     (pack.map_window.origin, pack.map_window.data.tobytes()))
             for cabin, pack in frame.packs.items()})


def _differences(prepared, plain):
    """Name what differs between two frames' facts (the assertion's message)."""
    names = ('tick', 'digest', 'evictions', 'readmitted', 'capacity_alarm')
    found = [f'{name}: {a!r} != {b!r}' for name, a, b in zip(names, prepared, plain) if a != b]
    fields = ('digest', 'items', 'events', 'missing', 'absent', 'readmitted', 'effective', 'map')
    for cabin in prepared[-1]:
        found += [f'{cabin} {name}: prepared {a!r}, plain {b!r}' for name, a, b in
                  zip(fields, prepared[-1][cabin], plain[-1][cabin]) if a != b]
    return '\n'.join(found)


class _World:
    """A board, a log and an assembler, ticked by the test."""

    def __init__(self, manifests, capacity):
        self.manifests = manifests
        self.working_set = WorkingSet(capacity)
        self.board = BoardSnapshot(self.working_set.timebase)
        self.log = EventLog(100, self.working_set.timebase)
        self.assembler = Assembler(manifests, self.working_set)
        self.grid = GridMap(np.zeros((20, 20), dtype=np.int8), (0.0, 0.0), 0.5)

    def apply(self, when, sets, removes):
        self.working_set.timebase.observe(when)
        self.board.apply([BoardEntry(key, value, when, importance, ttl, tags)
                          for key, value, importance, ttl, tags in sets], removes)

    def tick(self, tick, now, kinds):
        self.working_set.timebase.observe(now)
        for kind in kinds:
            self.log.append(Event(now, kind, 'test', f'k{tick}'))
        return self.assembler.assemble(tick, now, self.board, self.log, self.grid)


# A key set again in the same update as a key new to the board, both absent under one
# required glob (door:d3 dropped, door:d1 filtered out by its tag): the glob's note lists them
# in board order, which the changes must give whether a prepare saw the removal or not.
SET_AGAIN_WITH_A_NEW_KEY = [
    ([([('door:d3', 0, None, 0.0, ())], [], 0.0)], [], 0.1, False, False),
    ([([], ['door:d3'], 0.1),
      ([('door:d3', 0, None, 0.0, ()), ('door:d1', 0, None, 0.0, ('charging',))], [], 0.5)],
     [], 0.1, False, False)]


@settings(max_examples=300, deadline=None)
@example(SET_AGAIN_WITH_A_NEW_KEY, 4)
@given(steps, st.integers(2, 8))
def test_a_tick_prepared_between_ticks_assembles_the_frame_it_would_without(steps, capacity):
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in CABINS.items()}
    plain, prepared = _World(manifests, capacity), _World(manifests, capacity)
    now = 0.0
    for tick, (step_batches, kinds, step, prepare_last, reconfigure) in enumerate(steps, 1):
        if reconfigure:   # a cabin to start: prepare leaves it to the tick
            plain.assembler.set_manifests(manifests)
            prepared.assembler.set_manifests(manifests)
        for sets, removes, share in sorted(step_batches, key=lambda batch: batch[2]):
            when = now + share * step
            removes = [key for key in removes if key not in {entry[0] for entry in sets}]
            plain.apply(when, sets, removes)
            prepared.apply(when, sets, removes)
            prepared.assembler.prepare(when, prepared.board)
        now += step
        if prepare_last:   # nothing new since the last prepare: the tick has no changes left
            prepared.assembler.prepare(now, prepared.board)
        facts = _facts(prepared.tick(tick, now, kinds)), _facts(plain.tick(tick, now, kinds))
        assert facts[0] == facts[1], _differences(*facts)


def test_prepare_takes_the_changes_and_the_tick_still_serves_them():
    # What prepare took is served at the tick, its time-dependent part judged at the tick.
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in CABINS.items()}
    world = _World(manifests, 8)
    world.tick(1, 0.0, [])
    world.apply(0.05, [('sensor:s1', 1, None, 0.3, ('energy',)),
                       ('sensor:s2', 2, None, 0.06, ('energy',))], [])
    world.assembler.prepare(0.05, world.board)
    assert world.board.changes(world.assembler._interest).entries == {}   # taken
    frame = world.tick(2, 0.2, [])
    monitor = frame.packs['monitor']
    assert [item.key for item in monitor.items] == ['sensor:s1']
    # Fresh when prepared, stale by the tick (ttl 0.06 s from 0.05 s).
    assert [(note.key, note.reason.name) for note in monitor.missing
            if note.key.startswith('sensor:')] == [('sensor:s2', 'STALE')]


def test_prepare_refuses_a_time_that_is_no_number():
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in CABINS.items()}
    world = _World(manifests, 8)
    with pytest.raises(ValueError, match='now: must be a finite time'):
        world.assembler.prepare(float('nan'), world.board)
