"""The rehearsal tick (core/prewarm.py): it runs the tick's code and touches nothing real."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import Manifest, load_manifests
from working_memory.core.prewarm import Prewarm, scene_entries, scene_key
from working_memory.ros.share import share_path

DEMO = load_manifests(str(share_path('config', 'working_memory.yaml')))


@pytest.mark.parametrize('pattern, key', [
    ('pose', 'pose'), ('goal:*', 'goal:prewarm'), ('door:?', 'door:p'),
    ('a*b?c', 'aprewarmbpc'), ('sensor:[ab]*', None)])
def test_a_scene_key_is_one_the_pattern_matches_or_none(pattern, key):
    assert scene_key(pattern) == key


def test_the_scene_has_a_key_of_every_cabin_with_its_include_tag_and_leaves_pose_and_route():
    manifests = {'a': Manifest.from_dict('a', {'board_keys': ['reading:*', 'pose', 'route'],
                                               'tags': {'include': ['lidar', 'sonar']}}),
                 'b': Manifest.from_dict('b', {'board_keys': ['goal:*', 'reading:*']})}
    assert scene_entries(manifests, 'pose') == [('reading:prewarm', ('lidar',)),
                                                ('goal:prewarm', ())]


@pytest.mark.parametrize('pose_key', ['pose', None])
def test_the_rehearsal_serves_every_demo_cabin_items_events_and_its_map(pose_key):
    rehearsal = Prewarm(DEMO, pose_key, capacity=40)
    for _ in range(3):
        frame = rehearsal.run()
    assert frame.tick == 3 and list(frame.packs) == list(DEMO)
    for name, pack in frame.packs.items():
        assert pack.items, name
        assert all(item.last_used == frame.effective for item in pack.items), name
        assert pack.events or not DEMO[name].events.enabled, name
        assert pack.map_window is not None or not DEMO[name].map.enabled, name


def test_a_corridor_cabin_gets_its_window_from_the_scene_route():
    manifests = {'follower': Manifest.from_dict('follower', {
        'board_keys': ['route', 'pose'], 'map': {'corridor_m': 0.5}})}
    frame = Prewarm(manifests, 'pose', capacity=8).run()
    pack = frame.packs['follower']
    assert pack.map_window is not None and not pack.missing


class Scene:
    """A real board, log and map, assembled tick after tick."""

    def __init__(self):
        self.working_set = WorkingSet(12)
        self.board = BoardSnapshot(self.working_set.timebase)
        self.log = EventLog(100, self.working_set.timebase)
        self.grid = GridMap(np.zeros((40, 40), dtype=np.int8), (0.0, 0.0), 0.5)
        self.assembler = Assembler(DEMO, self.working_set)

    def tick(self, tick, now, changes):
        entries = [BoardEntry(key, {'v': value}, now, ttl=0.5, tags=('sensor',))
                   for key, value in changes]
        entries.append(BoardEntry('pose', {'x': 3.0 + math.sin(tick), 'y': 4.0}, now))
        self.board.apply(entries)
        if tick % 3 == 0:
            self.log.append(Event(now, EventKind.FAILURE, 'test', f'failure:{tick}'))
        return self.assembler.assemble(tick, now, self.board, self.log, self.grid)


def without_windows(frame):
    """Return the frame's packs field by field, windows left out (they compare by identity)."""
    return {name: {field.name: getattr(pack, field.name) for field in dataclasses.fields(pack)
                   if field.name != 'map_window'}
            for name, pack in frame.packs.items()}


CHANGES = st.tuples(st.sampled_from(['sensor:a', 'sensor:b', 'battery', 'goal:dock', 'door:1']),
                    st.integers(0, 3))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(CHANGES, max_size=4), min_size=1, max_size=8))
def test_rehearsals_between_ticks_change_nothing_of_the_real_frames(ticks):
    plain, rehearsed = Scene(), Scene()
    rehearsal = Prewarm(DEMO, 'pose', capacity=12)
    for tick, changes in enumerate(ticks, start=1):
        now = 100.0 + 0.3 * tick
        expected = plain.tick(tick, now, changes)
        rehearsal.run()
        frame = rehearsed.tick(tick, now, changes)
        assert frame.digest == expected.digest   # covers the map windows' cells
        assert without_windows(frame) == without_windows(expected)
        assert frame.evictions == expected.evictions
        assert rehearsed.working_set.keys() == plain.working_set.keys()
    # And the rehearsal kept to itself: none of its keys reached the real board or set.
    assert not any('prewarm' in key for key in rehearsed.working_set.keys())
    assert not any('prewarm' in key for key in rehearsed.board.keys())
