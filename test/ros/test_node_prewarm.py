"""The node's prewarm parameter: a rehearsal before each tick after a pause (core/prewarm.py)."""

from working_memory.core.prewarm import Prewarm


def counting(monkeypatch, fail=False):
    """Count Prewarm.run calls (each raising when `fail`); return the list of their ticks."""
    calls = []
    run = Prewarm.run

    def counted(self):
        calls.append(self.tick + 1)
        if fail:
            raise RuntimeError('made to fail')
        return run(self)
    monkeypatch.setattr(Prewarm, 'run', counted)
    return calls


def test_ticks_far_apart_are_each_rehearsed_first(start_memory, monkeypatch):
    calls = counting(monkeypatch)
    node, probe = start_memory({'tick_hz': 10.0})
    first = probe.wait_frame()
    frame = probe.wait_frame(lambda frame: frame.tick >= first.tick + 3)
    # One rehearsal per tick, on the rehearsal's own tick count.
    assert len(calls) >= frame.tick and calls == list(range(1, len(calls) + 1))
    assert [pack.cabin for pack in frame.packs] == ['planner', 'executor']   # conftest's CABINS
    assert all('prewarm' not in item.key for pack in frame.packs for item in pack.items)


def test_ticks_close_together_and_prewarm_false_are_not_rehearsed(start_memory, monkeypatch):
    calls = counting(monkeypatch)
    node, probe = start_memory({'tick_hz': 10.0, 'prewarm': False})
    probe.wait_frame(lambda frame: frame.tick >= 3)
    assert calls == []
    node, probe = start_memory({'tick_hz': 100.0})
    probe.wait_frame(lambda frame: frame.tick >= 30)
    assert len(calls) <= 3   # the first tick, and one after a late wake-up or two


def test_a_failing_rehearsal_is_logged_once_and_the_node_ticks_on_without_it(
        start_memory, monkeypatch):
    calls = counting(monkeypatch, fail=True)
    node, probe = start_memory({'tick_hz': 10.0})
    first = probe.wait_frame()
    probe.wait_frame(lambda frame: frame.tick >= first.tick + 3)
    assert calls == [1]
