"""Garbage collection between ticks (ros/gc_pacing.py): decisions, the real collector, the node."""

import gc
import weakref

import pytest
from rclpy.lifecycle import TransitionCallbackReturn

from working_memory.ros import gc_pacing
from working_memory.ros.gc_pacing import FULL_PERIOD_S, GcPacing, PACING, STALL_S

SUCCESS = TransitionCallbackReturn.SUCCESS


class FakeCollector:
    """The gc module's calls GcPacing makes, recorded; counts and thresholds set by the test."""

    def __init__(self, enabled=True):
        self.enabled = enabled
        self.threshold = (700, 10, 10)
        self.count = (0, 0, 0)
        self.calls = []

    def isenabled(self):
        return self.enabled

    def enable(self):
        self.enabled = True
        self.calls.append('enable')

    def disable(self):
        self.enabled = False
        self.calls.append('disable')

    def collect(self, generation=2):
        self.calls.append(('collect', generation))

    def freeze(self):
        self.calls.append('freeze')

    def unfreeze(self):
        self.calls.append('unfreeze')

    def get_threshold(self):
        return self.threshold

    def get_count(self):
        return self.count


class Clock:
    """A settable monotonic clock [s]."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_first_holder_turns_automatic_collection_off_and_freezes_the_objects_alive_then():
    collector = FakeCollector()
    pacing = GcPacing(collector, Clock(), paceable=True)
    pacing.hold()
    assert not collector.enabled
    assert collector.calls == ['disable', ('collect', 2), 'freeze']
    pacing.hold()
    pacing.release()
    assert not collector.enabled and pacing.holders == 1
    pacing.release()
    assert collector.enabled and pacing.holders == 0
    assert collector.calls[-2:] == ['unfreeze', 'enable']


def test_a_collector_pacing_does_not_know_is_left_alone():
    collector = FakeCollector()
    pacing = GcPacing(collector, Clock(), paceable=False)
    pacing.hold()
    collector.count = (5000, 50, 50)
    assert pacing.after_tick() is None and pacing.holders == 0
    assert collector.calls == [] and collector.enabled


def test_the_collector_is_given_back_as_it_was_found():
    collector = FakeCollector(enabled=False)
    pacing = GcPacing(collector, Clock(), paceable=True)
    pacing.hold()
    pacing.release()
    assert not collector.enabled and 'enable' not in collector.calls
    pacing.release()   # one release too many changes nothing
    assert pacing.holders == 0 and not collector.enabled


def test_after_a_tick_the_generations_cpython_would_have_collected_are_collected():
    collector, clock = FakeCollector(), Clock()
    pacing = GcPacing(collector, clock, paceable=True)
    assert pacing.after_tick() is None          # nobody paces: CPython's own collector runs
    pacing.hold()
    collector.count = (700, 10, 10)
    assert pacing.after_tick() is None          # not over the young threshold: nothing due
    collector.count = (701, 10, 10)
    assert pacing.after_tick() == 0
    collector.count = (701, 11, 10)
    assert pacing.after_tick() == 1
    collector.count = (701, 11, 11)
    assert pacing.after_tick() == 1             # the last full collection is too recent
    clock.now += FULL_PERIOD_S
    assert pacing.after_tick() == 2
    assert pacing.after_tick() == 1             # and the next full one waits a period again
    assert collector.calls[-5:] == [('collect', 0), ('collect', 1), ('collect', 1),
                                    ('collect', 2), ('collect', 1)]


def test_between_ticks_collects_only_when_ticks_have_stalled():
    collector, clock = FakeCollector(), Clock()
    pacing = GcPacing(collector, clock, paceable=True)
    pacing.hold()
    collector.count = (701, 0, 0)
    pacing.after_tick()
    clock.now += STALL_S / 2
    assert pacing.between_ticks() is None       # ticks come: they collect
    clock.now += STALL_S
    assert pacing.between_ticks() == 0          # no tick for a while: the intake collects
    pacing.release()
    clock.now += 10 * STALL_S
    assert pacing.between_ticks() is None       # nobody paces


def test_a_zero_young_threshold_means_no_collection_as_in_cpython():
    collector = FakeCollector()
    pacing = GcPacing(collector, Clock(), paceable=True)
    pacing.hold()
    collector.threshold, collector.count = (0, 10, 10), (5000, 50, 50)
    assert pacing.after_tick() is None


class Cycle:
    """An object that can refer to itself."""


def test_garbage_cycles_made_between_ticks_are_collected_after_a_tick_by_the_real_collector():
    threshold, was_enabled = gc.get_threshold(), gc.isenabled()
    pacing = GcPacing(paceable=True)
    try:
        pacing.hold()
        assert not gc.isenabled()
        gc.set_threshold(10, 10, 10)
        alive = []
        for _ in range(50):
            cycle = Cycle()
            cycle.me = cycle
            alive.append(weakref.ref(cycle))
            del cycle
        assert all(ref() is not None for ref in alive)   # no automatic collection
        assert pacing.after_tick() is not None
        assert all(ref() is None for ref in alive)
    finally:
        pacing.release()
        gc.set_threshold(*threshold)
    assert gc.isenabled() == was_enabled


needs_pacing = pytest.mark.skipif(not gc_pacing.PACEABLE or not gc.isenabled(),
                                  reason='pacing follows CPython 3.11-3.13 with its collector on')


@needs_pacing
def test_a_ticking_node_collects_after_its_ticks_and_gives_the_collector_back_when_it_stops(
        start_memory, monkeypatch):
    collections = []
    after_tick = PACING.after_tick
    monkeypatch.setattr(PACING, 'after_tick', lambda: collections.append(after_tick()))
    node, probe = start_memory({'gc_pacing': True})
    probe.wait_frame(lambda frame: frame.tick >= 3)
    assert PACING.holders == 1 and not gc.isenabled()
    assert len(collections) >= 3   # one call per tick, each deciding what is due
    assert node.trigger_deactivate() == SUCCESS
    assert PACING.holders == 0 and gc.isenabled()


@needs_pacing
def test_a_node_paces_the_collector_by_default(start_memory):
    node, probe = start_memory()
    probe.wait_frame()
    assert PACING.holders == 1 and not gc.isenabled()


@needs_pacing
def test_a_node_without_gc_pacing_leaves_the_collector_alone(start_memory):
    node, probe = start_memory({'gc_pacing': False})
    probe.wait_frame()
    assert PACING.holders == 0 and gc.isenabled()


@needs_pacing
def test_a_node_ticking_on_a_trigger_topic_leaves_the_collector_alone(start_memory):
    node, probe = start_memory({'trigger_topic': 'decide', 'gc_pacing': True})
    assert PACING.holders == 0 and gc.isenabled()


@needs_pacing
def test_a_node_destroyed_while_ticking_gives_the_collector_back(start_memory):
    node, probe = start_memory({'gc_pacing': True})
    probe.wait_frame()
    assert not gc.isenabled()
    node.destroy_node()
    assert PACING.holders == 0 and gc.isenabled()
