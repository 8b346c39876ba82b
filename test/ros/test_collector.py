"""The node's process freezes what survives each full collection, and a cleanup unfreezes it."""

import gc

import pytest

from working_memory.ros import collector


@pytest.fixture
def restored_collector():
    callbacks = list(gc.callbacks)
    yield
    gc.callbacks[:] = callbacks
    gc.unfreeze()


def test_a_full_collection_freezes_its_survivors_and_unfreeze_releases_them(restored_collector):
    gc.unfreeze()
    collector.freeze_after_full_collections()
    collector.freeze_after_full_collections()
    assert gc.callbacks.count(collector._freeze) == 1
    gc.collect(1)
    assert gc.get_freeze_count() == 0, 'only a full collection freezes'
    survivor = [object()]
    gc.collect()
    assert gc.get_freeze_count() > 0
    assert survivor not in gc.get_objects(generation=2), 'frozen: no collection walks it'
    collector.unfreeze()
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_after_the_freeze_is_still_collected(restored_collector):
    collector.freeze_after_full_collections()
    gc.collect()

    class Node:
        pass
    first, second = Node(), Node()
    first.other, second.other = second, first
    del first, second
    assert gc.collect() >= 2
