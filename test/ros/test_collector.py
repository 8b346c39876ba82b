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
    collector.unfreeze()
    collector.freeze_after_full_collections()
    collector.freeze_after_full_collections()
    assert gc.callbacks.count(collector._freeze) == 1
    gc.collect(1)
    assert gc.get_freeze_count() == 0, 'only a full collection freezes'
    gc.collect()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    gc.collect()   # walks only what came since: the frozen stay frozen
    assert gc.get_freeze_count() >= frozen
    collector.unfreeze()
    assert gc.get_freeze_count() == 0


def test_unfreeze_leaves_a_process_that_does_not_freeze_after_collections_alone(
        restored_collector):
    gc.freeze()   # the embedding process's own freeze
    collector.unfreeze()
    assert gc.get_freeze_count() > 0
