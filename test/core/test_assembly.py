"""Context assembly: scopes, working-set pass, per-tick freeze and every missing reason."""

import gc
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.assembly import Assembler, event_item_key
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import PyWorkingSet, WorkingSet
from working_memory.core.frames import FrameStore, pack_digest
from working_memory.core.gridmap import GridMap, UNKNOWN
from working_memory.core.items import BoardEntry, Event, EventKind, MissingReason, Source
from working_memory.core.manifest import Manifest
from working_memory.core.selection import LISTED_PER_GLOB

NEVER_SEEN, STALE, EVICTED = (MissingReason.NEVER_SEEN, MissingReason.STALE,
                              MissingReason.EVICTED)
OUT_OF_SCOPE, INJECTED_DROP = MissingReason.OUT_OF_SCOPE, MissingReason.INJECTED_DROP


class World:
    """Board, event log and a 20 m x 20 m map at 0.5 m/cell, assembled for some cabins."""

    def __init__(self, capacity=100, **cabins):
        self.working_set = WorkingSet(capacity)
        # As the node does: board and log place stamps on the working set's timeline.
        self.board = BoardSnapshot(self.working_set.timebase)
        self.log = EventLog(1000, self.working_set.timebase)
        self.data = (np.arange(1600) % 100).astype(np.int8).reshape(40, 40)
        self.grid = GridMap(self.data, (0.0, 0.0), 0.5)
        self.manifests = {name: Manifest.from_dict(name, fields)
                          for name, fields in cabins.items()}
        self.assembler = Assembler(self.manifests, self.working_set)
        self.tick = 0
        self.clock = None  # ROS time [s] of the latest tick or arrival

    def arrive(self, stamp):
        """Observe an input's arrival as the node does: at its stamp when that is later."""
        if self.clock is None or stamp > self.clock:
            self.clock = stamp
            self.working_set.timebase.observe(stamp)

    def put(self, key, value, stamp=0.0, **fields):
        self.arrive(stamp)
        self.board.apply([BoardEntry(key, value, stamp, **fields)])

    def log_event(self, stamp, kind, key='', **fields):
        self.arrive(stamp)
        return self.log.append(Event(stamp, kind, source='test', key=key, **fields))

    def assemble(self, now, **kwargs):
        self.tick += 1
        self.clock = now
        return self.assembler.assemble(self.tick, now, self.board, self.log,
                                       kwargs.pop('grid', self.grid), **kwargs)


def keys(pack):
    return [item.key for item in pack.items]


def missing(pack):
    return {m.key: m.reason for m in pack.missing}


def test_two_cabins_in_the_same_tick_see_the_same_map_window():
    world = World(planner={'map': {'radius_m': 2.0}}, executor={'map': {'radius_m': 2.0}})
    world.put('pose', {'x': 10.0, 'y': 5.0, 'yaw': 0.0})
    frame = world.assemble(1.0)
    planner, executor = frame.pack('planner').map_window, frame.pack('executor').map_window
    np.testing.assert_array_equal(planner.data, world.data[6:15, 16:25])
    assert planner.origin == executor.origin == (8.0, 3.0)
    np.testing.assert_array_equal(planner.data, executor.data)
    world.data[:] = 0  # a later map update cannot tear the frozen frame
    assert planner.data.any() and not planner.data.flags.writeable
    np.testing.assert_array_equal(planner.data, executor.data)


def test_direct_board_reads_select_exact_keys_and_globs_only():
    world = World(planner={'board_keys': ['goal:*', 'pose']})
    for key in ('goal:deliver', 'goal:return', 'pose', 'battery', 'goalkeeper'):
        world.put(key, 1)
    assert keys(world.assemble(1.0).pack('planner')) == ['goal:deliver', 'goal:return', 'pose']


def test_required_key_never_on_the_board_is_missing_never_seen():
    world = World(planner={'required': ['pose', 'goal:*']})
    pack = world.assemble(1.0).pack('planner')
    assert missing(pack) == {'pose': NEVER_SEEN, 'goal:*': NEVER_SEEN}


def test_stale_entry_is_never_served_and_its_item_is_marked_stale():
    world = World(planner={'board_keys': ['battery']})
    world.put('battery', 0.9, stamp=0.0, ttl=1.0)
    assert keys(world.assemble(0.5).pack('planner')) == ['battery']
    pack = world.assemble(2.5).pack('planner')
    assert keys(pack) == []
    assert pack.missing[0].reason is STALE
    assert pack.missing[0].detail == 'stale: its ttl of 1.0 s ran out'
    assert pack.missing[0].text(pack.effective) == 'stale: its ttl of 1.0 s ran out 1.5 s ago'
    assert world.working_set.get('battery').stale
    world.put('battery', 0.8, stamp=2.6, ttl=1.0)
    assert world.assemble(3.0).pack('planner').item('battery').value == 0.8
    assert not world.working_set.get('battery').stale


def test_frames_kept_share_a_stale_keys_missing_entry_for_as_long_as_it_stays_stale():
    # 200 stale sensors at 100 Hz and at 10 Hz: a note does not age (the age is read from its
    # `since`), so every frame holds the same entry per key and the same missing list, not
    # one of each per tick (memory of the frames kept, and the tick's cost).
    for period in (0.01, 0.1):
        _stale_sensors_share_their_notes(period)


def _stale_sensors_share_their_notes(period):
    working_set = WorkingSet(210)
    board, log = BoardSnapshot(working_set.timebase), EventLog(10, working_set.timebase)
    assembler = Assembler({'monitor': Manifest.from_dict('monitor',
                                                         {'board_keys': ['sensor:*']})},
                          working_set)
    board.apply([BoardEntry(f'sensor:{i}', i, 0.0, ttl=0.5) for i in range(200)])
    packs = [assembler.assemble(tick, 1.0 + tick * period, board, log, None).packs['monitor']
             for tick in range(1, 13)]
    # The glob's stale keys: counted in one summary, the most valuable few listed.
    assert all(len(pack.missing) == LISTED_PER_GLOB and len(pack.absent) == 200
               for pack in packs)
    assert all(pack.summaries[0].count == 200 for pack in packs)
    for before, after in zip(packs, packs[1:]):
        assert after.missing is before.missing and after.digest is before.digest
        assert after.absent is before.absent and after.summaries is before.summaries
    # What a reader sees still ages: the first and the last tick read different ages.
    texts = [pack.missing[0].text(pack.effective) for pack in (packs[0], packs[-1])]
    assert texts == [f'stale: its ttl of 0.5 s ran out {1.0 + tick * period - 0.5:.1f} s ago'
                     for tick in (1, 12)]


_STALE_KEYS = 200


def _retained_bytes_of_stale_keys(frames_kept: int) -> int:
    """Return the bytes [B] traced after `frames_kept` ticks with _STALE_KEYS stale keys kept."""
    working_set = WorkingSet(_STALE_KEYS + 10)
    board = BoardSnapshot(working_set.timebase)
    log = EventLog(10, working_set.timebase)
    assembler = Assembler({'monitor': Manifest.from_dict('monitor',
                                                         {'board_keys': ['sensor:*']})},
                          working_set)
    working_set.timebase.observe(0.0)
    board.apply([BoardEntry(f'sensor:{i}', i, 0.0, ttl=0.5) for i in range(_STALE_KEYS)])
    store = FrameStore(frames_kept)
    now = 1.0
    for tick in range(1, 20):   # warm up: every key stale, caches filled
        store.publish(assembler.assemble(tick, now + tick * 0.01, board, log, None))
    gc.collect()
    tracemalloc.start()
    try:
        for tick in range(20, 20 + frames_kept):
            store.publish(assembler.assemble(tick, now + tick * 0.01, board, log, None))
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_retained_frames_share_the_missing_entries_of_stale_keys():
    few, many = _retained_bytes_of_stale_keys(10), _retained_bytes_of_stale_keys(100)
    # Shared: 90 more frames add no entries (a note does not age), not _STALE_KEYS new entries
    # each (~150 B apiece, as when each tick's note read its age).
    assert many - few < 90 * _STALE_KEYS * 20, (few, many)


def test_required_key_evicted_for_capacity_is_missing_evicted_with_tick_and_importance():
    world = World(capacity=2, planner={
        'board_keys': ['reading:*'], 'required': ['reading:low'],
        'weights': ['reading:low=0.1', 'reading:*=0.5']})
    for key in ('reading:low', 'reading:a', 'reading:b'):
        world.put(key, 1.0)
    frame = world.assemble(4.0)
    pack = frame.pack('planner')
    assert keys(pack) == ['reading:a', 'reading:b']
    (report,) = pack.missing
    assert (report.key, report.reason) == ('reading:low', EVICTED)
    assert report.detail.startswith(f'evicted at tick {frame.tick} (capacity): importance 0.10')
    assert [record.key for record in frame.evictions] == ['reading:low']


def test_map_without_pose_or_with_pose_off_the_map_is_out_of_scope():
    world = World(planner={'map': {'radius_m': 2.0}, 'required': ['map']})
    pack = world.assemble(1.0).pack('planner')
    assert pack.map_window is None
    assert missing(pack) == {'map': OUT_OF_SCOPE}
    assert 'never seen' in pack.missing[0].detail
    world.put('pose', {'x': 25.0, 'y': 5.0})
    pack = world.assemble(2.0).pack('planner')
    assert missing(pack) == {'map': OUT_OF_SCOPE}
    assert 'outside the map' in pack.missing[0].detail
    assert world.assemble(3.0, pose=(1.0, 1.0)).pack('planner').map_window is not None


def test_without_a_pose_key_a_board_pose_never_stands_in_for_the_callers_pose():
    world = World(planner={'map': {'radius_m': 2.0}, 'board_keys': ['pose']})
    world.assembler = Assembler(world.manifests, world.working_set, pose_key=None)
    world.put('pose', {'x': 1.0, 'y': 1.0})
    pack = world.assemble(1.0).pack('planner')
    assert keys(pack) == ['pose'] and pack.map_window is None
    assert missing(pack) == {'map': OUT_OF_SCOPE}
    assert 'does not come from the board' in pack.missing[0].detail
    assert world.assemble(2.0, pose=(1.0, 1.0)).pack('planner').map_window is not None


def test_map_before_any_map_arrived_is_never_seen():
    world = World(planner={'map': {'radius_m': 2.0}})
    pack = world.assemble(1.0, grid=None, pose=(1.0, 1.0)).pack('planner')
    assert missing(pack) == {'map': NEVER_SEEN}


def test_required_event_kind_outside_the_window_is_out_of_scope():
    world = World(planner={'events': {'window_s': 10.0, 'kinds': ['CONSTRAINT', 'FAILURE']},
                           'required': ['events:CONSTRAINT']})
    pack = world.assemble(1.0).pack('planner')
    assert missing(pack) == {'events:CONSTRAINT': NEVER_SEEN}
    world.log_event(2.0, EventKind.CONSTRAINT, 'door:3')
    assert missing(world.assemble(5.0).pack('planner')) == {}
    pack = world.assemble(20.0).pack('planner')
    assert missing(pack) == {'events:CONSTRAINT': OUT_OF_SCOPE}
    assert pack.missing[0].detail == ('none in the window of the last 10.0 s; '
                                      'last CONSTRAINT event 18.0 s ago')


def test_injected_drop_of_an_event_kind_is_visible_and_removes_those_events():
    fields = {'events': {'window_s': 10.0}, 'required': ['events:FAILURE']}
    world = World(planner=fields, executor={**fields, 'drop': ['events:FAILURE']})
    world.log_event(1.0, EventKind.FAILURE, 'open_door')
    world.log_event(1.5, EventKind.ACTION, 'drive')
    frame = world.assemble(2.0)
    assert [e.key for e in frame.pack('planner').events] == ['open_door', 'drive']
    executor = frame.pack('executor')
    assert [e.key for e in executor.events] == ['drive']
    assert missing(executor) == {'events:FAILURE': INJECTED_DROP}


def test_injected_drop_of_board_keys_and_map_names_what_it_withheld():
    world = World(planner={'board_keys': ['door:*', 'pose'], 'required': ['door:1'],
                           'map': {'radius_m': 1.0}, 'drop': ['board:door:*', 'map']})
    world.put('door:1', 'open')
    world.put('door:2', 'closed')
    world.put('pose', {'x': 1.0, 'y': 1.0})
    pack = world.assemble(1.0).pack('planner')
    assert keys(pack) == ['pose'] and pack.map_window is None
    assert missing(pack) == {'board:door:*': INJECTED_DROP, 'map': INJECTED_DROP,
                             'door:1': INJECTED_DROP}
    drop = next(m for m in pack.missing if m.key == 'board:door:*')
    assert drop.detail == 'injected drop: 2 item(s) withheld: door:1, door:2'


def test_semantic_filter_excludes_tags_but_never_goal_or_safety():
    world = World(planner={'board_keys': ['*'], 'tags': {'exclude': ['charging']}})
    world.put('station:3', {'x': 1}, tags=('charging',))
    world.put('safety:charger_hv', {'r': 2}, tags=('charging',))
    world.put('goal:charge', {}, tags=('charging',))
    world.put('battery', 0.5)
    pack = world.assemble(1.0).pack('planner')
    assert keys(pack) == ['battery', 'goal:charge', 'safety:charger_hv']
    assert {key: m.reason for key, m in pack.absent.items()} == {'station:3': OUT_OF_SCOPE}


def test_tags_by_goal_keep_only_the_goals_topics():
    world = World(planner={'board_keys': ['*'], 'tags': {'from_goal': 'goal:*'}})
    world.put('goal:deliver', {'to': 'room 12', 'tags': ['delivery']})
    world.put('parcel', {'id': 7}, tags=('delivery',))
    world.put('station:3', {}, tags=('charging',))
    world.put('battery', 0.5)
    assert keys(world.assemble(1.0).pack('planner')) == ['battery', 'goal:deliver', 'parcel']
    world.board.apply(removed_keys=['goal:deliver'])
    assert keys(world.assemble(2.0).pack('planner')) == ['battery', 'parcel', 'station:3']


def test_events_become_working_items_and_goal_and_constraint_events_are_exempt():
    world = World(planner={'events': {'window_s': 10.0}})
    failure = world.log_event(1.0, EventKind.FAILURE, 'open_door')
    constraint = world.log_event(1.0, EventKind.CONSTRAINT, 'door:3')
    world.assemble(2.0)
    failure_item = world.working_set.get(event_item_key(failure))
    assert event_item_key(failure) == f'event:FAILURE:open_door#{failure.seq}'
    assert failure_item.source is Source.LOG and not failure_item.exempt
    assert world.working_set.get(event_item_key(constraint)).exempt


def test_fresh_constraint_survives_high_rate_low_value_readings():
    world = World(capacity=4, planner={
        'board_keys': ['reading:*'], 'events': {'window_s': 100.0},
        'weights': ['reading:*=0.1', 'event:FAILURE:*=0.6']})
    world.log_event(0.0, EventKind.FAILURE, 'lidar_glitch')
    constraint = world.log_event(0.5, EventKind.CONSTRAINT, 'corridor_closed')
    for step in range(50):
        now = 1.0 + 0.1 * step
        world.put(f'reading:{step % 7}', step, stamp=now)
        frame = world.assemble(now)
    events = [event.key for event in frame.pack('planner').events]
    assert events == ['lidar_glitch', 'corridor_closed']
    assert event_item_key(constraint) in world.working_set
    assert all(record.key.startswith('reading:') for record in world.working_set.eviction_log)


def test_over_capacity_a_tick_evicts_only_what_its_packs_then_lack():
    # Two cabins ask for 12 items with capacity 8, the 10 equally cheap sensor readings
    # changing every tick: the first tick forgets 4 once, after the whole selection is in,
    # never an item that a later put of the same tick re-adds (no churn in the log).
    world = World(capacity=8, monitor={'board_keys': ['sensor:*', 'pose']},
                  planner={'board_keys': ['pose', 'route']})
    world.put('pose', {'x': 1}, importance=0.9)
    world.put('route', [[0, 0]], importance=0.8)
    for now in (1.0, 2.0, 3.0, 4.0):
        for n in range(10):
            world.put(f'sensor:{n}', now + n, stamp=now, importance=0.05)
        frame = world.assemble(now)
        evicted = {record.key for record in frame.evictions}
        served = {key for pack in frame.packs.values() for key in keys(pack)}
        assert len(evicted) == len(frame.evictions) == (4 if now == 1.0 else 0)
        assert not evicted & served
        assert {'pose', 'route'} <= served and len(served) == 8
        assert missing(frame.pack('monitor')) == {}  # sensors are not required
    # The same four stay out: updated as often as the others, they never outrank them.
    assert set(frame.pack('monitor').absent) == {f'sensor:{n}' for n in range(4)}


def test_steady_over_capacity_selection_evicts_in_the_first_tick_only():
    world = World(capacity=4, monitor={'board_keys': ['sensor:*'], 'required': ['sensor:0']})
    for n in range(10):
        world.put(f'sensor:{n}', n, importance=0.1 * (n + 1))
    first = world.assemble(1.0)
    assert [r.key for r in first.evictions] == [f'sensor:{n}' for n in range(6)]
    for now in range(2, 30):
        frame = world.assemble(float(now))
        assert frame.evictions == () and frame.readmitted == ()
        assert keys(frame.pack('monitor')) == [f'sensor:{n}' for n in range(6, 10)]
    # "Unused for" is the time since its last use, growing while it stays out.
    (report,) = frame.pack('monitor').missing
    assert (report.key, report.reason) == ('sensor:0', EVICTED)
    assert report.detail == ('evicted at tick 1 (capacity): importance 0.10, unused since '
                             'its last use')
    assert report.text(frame.pack('monitor').effective) == f'{report.detail} 28.0 s ago'
    assert world.working_set.evictions_total == 6


def test_retained_frames_share_absent_records_and_windows_while_they_hold():
    world = World(capacity=4, monitor={'board_keys': ['sensor:*'], 'required': ['sensor:0']})
    for n in range(10):
        world.put(f'sensor:{n}', n, importance=0.1 * (n + 1))
    world.assemble(1.0)
    second, third = world.assemble(2.0).pack('monitor'), world.assemble(3.0).pack('monitor')
    # One note per evicted key for all ticks; only the age it reports grows.
    assert len(second.absent) == 6
    assert all(second.absent[key] is third.absent[key] for key in second.absent)
    assert second.absent['sensor:0'].text(second.effective).endswith('its last use 1.0 s ago')
    assert third.absent['sensor:0'].text(third.effective).endswith('its last use 2.0 s ago')


def test_a_map_window_is_cut_again_only_when_its_grid_route_or_pose_changes():
    world = World(planner={'board_keys': ['pose', 'route'], 'map.radius_m': 2.0},
                  executor={'board_keys': ['route'], 'map.corridor_m': 1.0})
    world.put('pose', {'x': 5.0, 'y': 5.0})
    world.put('route', [[1.0, 1.0], [8.0, 1.0]])
    first = world.assemble(1.0)
    second = world.assemble(2.0)
    for cabin in ('planner', 'executor'):
        assert second.pack(cabin).map_window is first.pack(cabin).map_window
    world.put('pose', {'x': 6.0, 'y': 5.0}, stamp=2.5)
    moved = world.assemble(3.0)
    assert moved.pack('planner').map_window is not second.pack('planner').map_window
    assert moved.pack('executor').map_window is second.pack('executor').map_window
    data = world.data.copy()
    data[10, 12] = 100   # a new map: a new GridMap, so every window is cut from it
    newer = world.assemble(4.0, grid=GridMap(data, (0.0, 0.0), 0.5))
    assert newer.pack('planner').map_window.data[10 - 6, 12 - 8] == 100
    assert newer.pack('executor').map_window is not moved.pack('executor').map_window


def test_an_evicted_item_returns_when_updated_or_when_room_frees_up():
    world = World(capacity=3, planner={'board_keys': ['r:*'], 'default_weight': 0.5})
    for name in 'abcd':
        world.put(f'r:{name}', name, stamp=0.0)
    first = world.assemble(1.0)
    assert [r.key for r in first.evictions] == ['r:a']   # equal value: the first put is oldest
    assert world.assemble(2.0).evictions == ()
    # New information is fresh: the updated item outranks the least recently used one.
    world.put('r:a', 'a2', stamp=2.5)
    frame = world.assemble(3.0)
    assert [r.key for r in frame.evictions] == ['r:b']
    assert [(r.key, r.tick, r.evicted_tick) for r in frame.readmitted] == [('r:a', 3, 1)]
    pack = frame.pack('planner')
    assert keys(pack) == ['r:a', 'r:c', 'r:d']
    assert pack.readmission('r:a').evicted_tick == 1
    # Room frees up: the board removes a key, the evicted item still selected comes back.
    world.board.apply(removed_keys=['r:c'])
    frame = world.assemble(4.0)
    assert frame.evictions == ()
    assert [r.key for r in frame.readmitted] == ['r:b']
    assert keys(frame.pack('planner')) == ['r:a', 'r:b', 'r:d']


def test_raised_capacity_brings_the_most_valuable_evicted_items_back_first():
    world = World(capacity=2, planner={'board_keys': ['k:*']})
    for n, importance in enumerate((0.1, 0.4, 0.2, 0.9, 0.3)):
        world.put(f'k:{n}', n, importance=importance)
    world.assemble(1.0)
    assert keys(world.assemble(2.0).pack('planner')) == ['k:1', 'k:3']
    world.assembler.set_limits(4, None)
    frame = world.assemble(3.0)
    assert [r.key for r in frame.readmitted] == ['k:4', 'k:2']   # best first
    assert keys(frame.pack('planner')) == ['k:1', 'k:2', 'k:3', 'k:4']


def test_a_selected_item_that_goes_stale_keeps_its_rank_and_is_not_served():
    world = World(capacity=2, planner={'board_keys': ['a', 'b', 'c']})
    world.put('a', 1, importance=0.5, ttl=1.5)
    world.put('b', 2, importance=0.5)
    world.assemble(1.0)
    frame = world.assemble(2.0)                # 'a' went stale: flagged, not refreshed
    assert keys(frame.pack('planner')) == ['b']
    world.put('c', 3, stamp=2.5, importance=0.5)
    frame = world.assemble(3.0)                # the stale item is the least recently used
    assert [r.key for r in frame.evictions] == ['a']
    assert keys(frame.pack('planner')) == ['b', 'c']


def test_events_leaving_every_window_leave_the_working_set_without_an_eviction():
    world = World(planner={'events': {'window_s': 5.0}})
    event = world.log_event(1.0, EventKind.CONSTRAINT, 'door:3')
    world.assemble(2.0)
    assert event_item_key(event) in world.working_set
    frame = world.assemble(10.0)
    assert event_item_key(event) not in world.working_set
    assert frame.evictions == () and world.working_set.evictions_total == 0


def test_board_removal_leaves_the_working_set_without_an_eviction():
    world = World(planner={'board_keys': ['door:*']})
    world.put('door:1', 'open')
    world.assemble(1.0)
    world.board.apply(removed_keys=['door:1'])
    frame = world.assemble(2.0)
    assert 'door:1' not in world.working_set and frame.evictions == ()


def test_entry_importance_overrides_weight_and_the_highest_cabin_weight_wins():
    world = World(planner={'board_keys': ['battery', 'door:1'], 'weights': ['battery=0.2']},
                  monitor={'board_keys': ['battery'], 'weights': ['battery=0.7']})
    world.put('battery', 0.5)
    world.put('door:1', 'open', importance=0.95)
    pack = world.assemble(1.0).pack('planner')
    assert pack.item('battery').importance == 0.7
    assert pack.item('door:1').importance == 0.95


def test_corridor_along_the_route_and_fallback_to_the_pose_window_is_reported():
    world = World(executor={'map': {'corridor_m': 1.0, 'radius_m': 2.0}})
    world.put('pose', {'x': 2.0, 'y': 2.0})
    world.put('route', [[2.0, 2.0], [12.0, 2.0]])
    window = world.assemble(1.0).pack('executor').map_window
    # The route's box grown by 1 m: x in [1, 13], y in [1, 3] m, 0.5 m cells.
    assert window.origin == (1.0, 1.0) and window.data.shape == (5, 25)
    assert (window.data[4] == UNKNOWN).all()  # cell centres at y = 3.25 m, 1.25 m off the route
    # Along the route (centres at y = 2.25 m) every cell is kept up to 1 m past its end.
    np.testing.assert_array_equal(window.data[2, :24], world.data[4, 2:26])
    assert window.data[2, 24] == UNKNOWN  # centre x = 13.25 m, 1.25 m past the end
    assert window.data[0, 0] == UNKNOWN  # corner cell centre 1.06 m from the start
    world.board.apply(removed_keys=['route'])
    pack = world.assemble(2.0).pack('executor')
    assert pack.map_window.data.shape == (9, 9)
    assert missing(pack) == {'route': NEVER_SEEN}
    assert 'falls back to the 2.0 m pose window' in pack.missing[0].detail


def test_malformed_route_without_fallback_leaves_the_map_out_of_scope():
    world = World(executor={'map': {'corridor_m': 1.0, 'route_key': 'plan'}})
    world.put('plan', {'points': 'nowhere'})
    pack = world.assemble(1.0).pack('executor')
    assert pack.map_window is None
    assert missing(pack) == {'map': OUT_OF_SCOPE}
    assert pack.missing[0].detail.startswith('route malformed: route: must be a non-empty list')


def test_time_going_backwards_does_not_crash_and_keeps_serving():
    world = World(planner={'board_keys': ['pose'], 'events': {'window_s': 10.0},
                           'map': {'radius_m': 1.0}})
    world.put('pose', {'x': 1.0, 'y': 1.0}, stamp=100.0, ttl=5.0)
    world.log_event(99.0, EventKind.FAILURE, 'slip')
    world.assemble(100.0)
    frame = world.assemble(3.0)  # simulation reset: effective time 100 s
    pack = frame.pack('planner')
    assert keys(pack) == ['pose'] and pack.map_window is not None
    assert [event.key for event in pack.events] == ['slip']   # 1 s old, not 96 s in the future
    world.put('pose', {'x': 2.0, 'y': 2.0}, stamp=3.5, ttl=5.0)
    assert world.assemble(4.0).pack('planner').item('pose').value['x'] == 2.0


def test_a_clock_reset_neither_freshens_nor_hides_data():
    world = World(planner={'board_keys': ['battery', 'goal:*'], 'required': ['battery'],
                           'events': {'window_s': 120.0, 'kinds': ['CONSTRAINT']}})
    world.put('battery', 0.5, stamp=99.5, ttl=1.0)
    world.put('goal:deliver', {'to': 'dock'}, stamp=50.0)
    constraint = world.log_event(95.0, EventKind.CONSTRAINT, 'zone')
    assert keys(world.assemble(100.0).pack('planner')) == ['battery', 'goal:deliver']
    world.assemble(0.0)                     # world reset: /clock jumps back 100 s
    pack = world.assemble(0.6).pack('planner')   # 1.1 s after the entry's stamp, effective
    assert keys(pack) == ['goal:deliver']
    assert missing(pack) == {'battery': STALE}
    assert pack.missing[0].text(pack.effective) == 'stale: its ttl of 1.0 s ran out 0.1 s ago'
    assert [event.seq for event in pack.events] == [constraint.seq]
    # The window counts effective seconds: the constraint leaves it 120 s after it was logged.
    assert pack.events == world.assemble(114.9).pack('planner').events
    assert world.assemble(115.1).pack('planner').events == ()
    # After the reset new stamps are read on the new epoch: fresh, and ageing normally.
    world.put('battery', 0.4, stamp=116.0, ttl=1.0)
    assert keys(world.assemble(116.5).pack('planner')) == ['battery', 'goal:deliver']
    assert keys(world.assemble(117.5).pack('planner')) == ['goal:deliver']


def test_a_forward_jump_ages_everything_by_the_time_skipped():
    world = World(planner={'board_keys': ['battery'], 'events': {'window_s': 10.0}})
    world.put('battery', 0.5, stamp=1.0, ttl=5.0)
    world.log_event(1.0, EventKind.FAILURE, 'slip')
    pack = world.assemble(2.0).pack('planner')
    assert keys(pack) == ['battery'] and len(pack.events) == 1
    pack = world.assemble(60.0).pack('planner')   # 58 s skipped
    assert keys(pack) == [] and pack.events == ()
    assert pack.absent['battery'].text(pack.effective) == (
        'stale: its ttl of 5.0 s ran out 54.0 s ago')


def test_repeated_resets_keep_one_timeline():
    world = World(planner={'board_keys': ['battery'], 'events': {'window_s': 30.0}})
    world.put('battery', 0.5, stamp=10.0, ttl=12.0)
    world.log_event(10.0, EventKind.FAILURE, 'slip')
    for now in (12.0, 2.0, 5.0, 1.0, 4.0):       # resets at 2.0 and 1.0
        pack = world.assemble(now).pack('planner')
    # Effective time: 12, 12, 15, 15, 18 s; the entry (ttl 12 s from 10 s) is still fresh.
    assert world.working_set.timebase.now == pytest.approx(18.0)
    assert world.working_set.timebase.epoch == 2
    assert keys(pack) == ['battery'] and len(pack.events) == 1
    pack = world.assemble(9.0).pack('planner')   # effective 23 s
    assert keys(pack) == [] and len(pack.events) == 1
    assert pack.absent['battery'].text(pack.effective) == (
        'stale: its ttl of 12.0 s ran out 1.0 s ago')


def test_frozen_frame_values_cannot_be_changed():
    world = World(planner={'board_keys': ['route']})
    world.put('route', [[0.0, 0.0], [1.0, 1.0]])
    pack = world.assemble(1.0).pack('planner')
    with pytest.raises(AttributeError):
        pack.item('route').value.append((2.0, 2.0))
    assert isinstance(pack.items, tuple) and isinstance(pack.missing, tuple)


def test_capacity_alarm_when_exempt_items_alone_exceed_capacity():
    world = World(capacity=2, planner={'board_keys': ['goal:*']})
    for index in range(3):
        world.put(f'goal:{index}', index)
    frame = world.assemble(1.0)
    assert frame.capacity_alarm and len(frame.pack('planner').items) == 3


def test_bad_arguments_are_rejected_naming_them():
    world = World(planner={})
    with pytest.raises(ValueError, match='now: must be a finite time'):
        world.assemble(float('nan'))
    with pytest.raises(ValueError, match=r'pose\.y: must be a finite number'):
        world.assemble(1.0, pose=(1.0, None))
    with pytest.raises(ValueError, match="manifests\\['executor'\\]: must be the Manifest"):
        Assembler({'executor': world.manifests['planner']}, WorkingSet(3))
    with pytest.raises(ValueError, match='pose_key: must be a non-empty board key'):
        Assembler(world.manifests, WorkingSet(3), pose_key='')


def test_concurrent_writers_tickers_and_readers_only_ever_see_consistent_frames():
    """Every frame read is whole: all packs from one board version and one map, digests intact."""
    keys_per_update, updates, ticks = 32, 300, 150
    cabins = {name: {'board_keys': ['k:*'], 'map': {'radius_m': 1.0},
                     'weights': [f'k:*={weight}']}
              for name, weight in (('planner', 0.9), ('executor', 0.5), ('monitor', 0.2))}
    world = World(capacity=64, **cabins)
    world.put('pose', {'x': 5.0, 'y': 5.0})
    grids = [GridMap(np.zeros((40, 40), dtype=np.int8), (0.0, 0.0), 0.5)]
    store = FrameStore(keep=5)
    done = threading.Event()
    start = threading.Barrier(6)
    errors, reads = [], []

    def write_board(offset):
        start.wait()
        for version in range(offset, offset + updates):
            world.board.apply([BoardEntry(f'k:{i}', {'v': version}, 0.0)
                               for i in range(keys_per_update)])
            if version % 10 == 0:  # a new map message: every cell holds the version
                grids.append(GridMap(np.full((40, 40), version % 100, dtype=np.int8),
                                     (0.0, 0.0), 0.5))

    def tick(publish):
        start.wait()
        for step in range(ticks):
            frame = world.assembler.assemble(step, float(step), world.board, world.log,
                                             grids[-1])
            if publish:
                store.publish(frame)
            else:
                check(frame)
        done.set()

    def check(frame):
        versions = {item.value['v'] for pack in frame.packs.values() for item in pack.items
                    if item.key.startswith('k:')}
        cells = {int(v) for pack in frame.packs.values() for v in np.unique(pack.map_window.data)}
        digests_hold = all(pack.digest == pack_digest(pack.items, pack.events, pack.map_window,
                                                      pack.missing, summaries=pack.summaries)
                           for pack in frame.packs.values())
        if len(versions) > 1 or len(cells) > 1 or not digests_hold:
            errors.append((frame.tick, versions, cells, digests_hold))

    def guarded(target):
        def run(*args):
            try:
                target(*args)
            except Exception as error:  # surfaced by the errors assertion below
                errors.append(error)
                done.set()
        return run

    def read():
        start.wait()
        while not done.is_set():
            frame = store.latest()
            if frame is not None:
                check(frame)
                reads.append(frame.tick)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, to interleave as much as possible
    try:
        threads = [threading.Thread(target=guarded(write_board), args=(offset,))
                   for offset in (0, 10000)]
        threads += [threading.Thread(target=guarded(tick), args=(publish,))
                    for publish in (True, False)]
        threads += [threading.Thread(target=guarded(read)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert reads and len(store) == 5


board_entries = st.lists(st.tuples(
    st.sampled_from(['goal:a', 'goal:b', 'safety:x', 'reading:1', 'reading:2', 'reading:3',
                     'door:1', 'door:2', 'pose']),
    st.integers(0, 9),                          # value
    st.integers(0, 20).map(float),              # stamp [s]
    st.sampled_from([0.0, 2.0, 5.0]),           # ttl [s]
    st.none() | st.sampled_from([0.1, 0.5, 0.9]),
    st.sampled_from([(), ('charging',), ('delivery',)])), max_size=12)


@settings(max_examples=100, deadline=None)
@given(board_entries, st.integers(1, 6), st.lists(st.integers(0, 30).map(float), min_size=1,
                                                  max_size=4))
def test_served_items_are_fresh_board_truth_and_everything_else_is_explained(
        entries, capacity, times):
    world = World(capacity=capacity,
                  planner={'board_keys': ['*'], 'tags': {'exclude': ['charging']},
                           'weights': ['reading:*=0.2', 'door:*=0.6']},
                  monitor={'board_keys': ['reading:*', 'door:1'], 'default_weight': 0.3})
    world.board.apply([BoardEntry(key, value, stamp, importance, ttl, tags)
                       for key, value, stamp, ttl, importance, tags in entries])
    view = world.board.view()
    for now in times:  # time may also go backwards here: staleness is on the effective timeline
        frame = world.assemble(now)
        now = world.working_set.timebase.now
        for cabin, pack in frame.packs.items():
            manifest = world.manifests[cabin]
            selected = {key for key in view.entries if manifest.selects.match(key)}
            served = set(keys(pack))
            for item in pack.items:
                entry = view.get(item.key)
                assert item.value == entry.value and not entry.is_stale(now)
                assert not item.stale
            fresh_exempt = {key for key in selected if key.startswith(('goal', 'safety'))
                            and not view.get(key).is_stale(now)}
            assert fresh_exempt <= served
            explained = set(pack.absent)
            assert selected - served == explained
            assert pack.digest == pack_digest(pack.items, pack.events, pack.map_window,
                                              pack.missing, summaries=pack.summaries)
        non_exempt = [k for k in world.working_set.keys() if not k.startswith(('goal', 'safety'))]
        assert len(world.working_set) <= capacity or not non_exempt


def test_the_pure_python_reference_working_set_is_accepted_and_a_non_working_set_is_not():
    manifests = {'planner': Manifest.from_dict('planner', {'board_keys': ['pose']})}
    board = BoardSnapshot()
    board.apply([BoardEntry('pose', {'x': 1.0}, 0.0)])
    frame = Assembler(manifests, PyWorkingSet(3)).assemble(1, 1.0, board, EventLog(10), None)
    assert keys(frame.pack('planner')) == ['pose']
    with pytest.raises(ValueError, match='working_set: must be a WorkingSet'):
        Assembler(manifests, {})
