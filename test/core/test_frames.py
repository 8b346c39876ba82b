"""Frames: immutable all the way down, content digests, and the bounded thread-safe store."""

import dataclasses

import numpy as np
import pytest

from working_memory.core.frames import (FrameNotFound, FrameStore, freeze_window, make_frame,
                                        make_pack)
from working_memory.core.frozen import deep_freeze
from working_memory.core.gridmap import GridMap, MapWindow
from working_memory.core.items import Event, EventKind, Item, Missing, MissingReason, Source


def item(key='battery', value=0.5, last_used=1.0, **fields):
    return Item(key, deep_freeze(value), Source.BOARD, fields.pop('importance', 0.3), 0.0,
                last_used, **fields)


def pack(tick=1, items=(), window=None, missing=(), events=(), cabin='planner'):
    return make_pack(cabin, tick, float(tick), items, events, window, missing)


def grid():
    return GridMap(np.arange(16, dtype=np.int8).reshape(4, 4), (0.0, 0.0), 1.0)


def test_same_content_gives_the_same_digest_whatever_the_tick_or_last_use():
    first = pack(1, [item('b', last_used=1.0), item('a', {'x': [1, 2]})], grid().window(1, 1, 1))
    second = pack(7, [item('a', {'x': [1, 2]}, last_used=6.0), item('b')], grid().window(1, 1, 1))
    assert first.digest == second.digest
    assert len(first.digest) == 16 and int(first.digest, 16) >= 0


@pytest.mark.parametrize('changed', [
    {'items': [item('a', {'x': [1, 3]})]},
    {'items': [item('a', {'x': [1, 2]}, stale=True)]},
    {'items': [item('a', {'x': [1, 2]}, importance=0.9)]},
    {'items': [item('a', {'x': [1, 2]})], 'missing': [Missing('pose', MissingReason.STALE)]},
    {'items': [item('a', {'x': [1, 2]})], 'events': [Event(1.0, EventKind.FAILURE, seq=3)]},
    {'items': [item('a', {'x': [1, 2]})], 'window': grid().window(2, 2, 1)},
])
def test_any_content_change_changes_the_digest(changed):
    base = pack(1, [item('a', {'x': [1, 2]})], grid().window(1, 1, 1))
    changed.setdefault('window', grid().window(1, 1, 1))
    assert pack(1, **changed).digest != base.digest


def test_one_map_cell_changes_the_digest():
    data = np.zeros((4, 4), dtype=np.int8)
    before = pack(window=GridMap(data, (0.0, 0.0), 1.0).window(1, 1, 1))
    data[1, 1] = 100
    after = pack(window=GridMap(data, (0.0, 0.0), 1.0).window(1, 1, 1))
    assert before.digest != after.digest


def test_frozen_map_window_is_a_read_only_copy_later_map_writes_cannot_tear():
    data = np.zeros((4, 4), dtype=np.int8)
    frozen = pack(window=GridMap(data, (0.0, 0.0), 1.0).window(1, 1, 1))
    data[:] = 100
    assert not frozen.map_window.data.flags.writeable
    assert not frozen.map_window.data.any()
    with pytest.raises(ValueError):
        frozen.map_window.data[0, 0] = 1


def test_pack_and_frame_are_immutable_all_the_way_down():
    frozen_pack = pack(items=[item('route', [[0, 1], [2, 3]])])
    frame = make_frame(1, 1.0, [frozen_pack])
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.tick = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen_pack.items = ()
    with pytest.raises(TypeError):
        frame.packs['executor'] = frozen_pack
    assert isinstance(frozen_pack.items, tuple)
    with pytest.raises(AttributeError):
        frozen_pack.item('route').value[0].append(1)


def test_pack_items_are_sorted_by_key():
    assert [i.key for i in pack(items=[item('c'), item('a'), item('b')]).items] == ['a', 'b', 'c']


def test_frame_digest_covers_every_pack_in_cabin_order():
    planner, executor = pack(items=[item('a')]), pack(cabin='executor')
    same = make_frame(1, 1.0, [planner, executor]).digest
    assert make_frame(5, 5.0, [planner, executor]).digest == same
    assert make_frame(1, 1.0, [executor, planner]).digest != same
    assert make_frame(1, 1.0, [planner, pack(cabin='executor', items=[item('x')])]).digest != same


def test_unknown_cabin_names_the_known_ones():
    frame = make_frame(1, 1.0, [pack(), pack(cabin='executor')])
    with pytest.raises(ValueError, match='cabin .monitor.: unknown .known: planner, executor.'):
        frame.pack('monitor')


def test_store_keeps_the_latest_frames_and_names_the_retained_range():
    store = FrameStore(keep=3)
    assert store.latest() is None and store.retained() is None
    with pytest.raises(FrameNotFound, match='tick 1: no frame has been frozen yet'):
        store.get(1)
    for tick in range(1, 6):
        store.publish(make_frame(tick, float(tick), [pack(tick)]))
    assert store.retained() == (3, 5) and len(store) == 3
    assert store.latest().tick == 5 and store.get(4).tick == 4
    for tick in (2, 6):
        with pytest.raises(FrameNotFound, match=f'tick {tick}: not retained .retained ticks 3..5'):
            store.get(tick)


def test_store_refuses_a_tick_that_does_not_increase():
    store = FrameStore(keep=2)
    store.publish(make_frame(4, 4.0, [pack(4)]))
    with pytest.raises(ValueError, match='frame.tick: must be > the latest tick 4, got 4'):
        store.publish(make_frame(4, 4.0, [pack(4)]))
    with pytest.raises(ValueError, match='keep: must be an integer >= 1'):
        FrameStore(0)


def test_a_window_of_immutable_cells_is_shared_and_one_of_writable_cells_copied():
    cells = bytes(range(16))
    shared = freeze_window(MapWindow(np.frombuffer(cells, dtype=np.int8).reshape(4, 4)[1:3, 1:3],
                                     (0.0, 0.0), 1.0))
    assert np.shares_memory(shared.data, np.frombuffer(cells, dtype=np.int8))
    writable = np.arange(16, dtype=np.int8).reshape(4, 4)
    copied = freeze_window(MapWindow(writable[1:3, 1:3], (0.0, 0.0), 1.0))
    writable[:] = 0   # the owner writes: the frozen copy does not change
    assert copied.data.tolist() == [[5, 6], [9, 10]] and not copied.data.flags.writeable
    assert shared.cells_digest == copied.cells_digest   # the same cells, the same hash
