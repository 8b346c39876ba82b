"""prepare_lead_s: the node selects what came between ticks, last its lead before a tick."""

import json

from working_memory.core.assembly import Assembler
from working_memory.core.items import BoardEntry
from working_memory.ros.conversions import board_update_msg

LEAD_S = 0.005


def _recorded_prepares(monkeypatch):
    """Record, per Assembler.prepare call, the node's time to its next tick [s] (None: none)."""
    calls = []
    prepare = Assembler.prepare

    def recording(assembler, now, board):
        calls.append(recording.node._timer and recording.node._timer.time_until_next_call() * 1e-9)
        return prepare(assembler, now, board)
    monkeypatch.setattr(Assembler, 'prepare', recording)
    return calls, recording


def _feed_readings(node, probe, spin_until, count):
    """Publish `count` readings of reading:1, one per 30 ms of spinning; return the last value."""
    probe.wait_matched(probe.board)
    for value in range(count):
        stamp = node.get_clock().now().nanoseconds * 1e-9
        probe.board.publish(board_update_msg([BoardEntry('reading:1', value, 0.0)], stamp))
        spin_until(lambda: False, timeout=0.03)
    return count - 1


def _served(frame, value):
    planner = next(pack for pack in frame.packs if pack.cabin == 'planner')
    return any(item.key == 'reading:1' and json.loads(item.value) == value
               for item in planner.items)


def test_the_node_prepares_ticks_its_lead_before_them_and_serves_what_it_took(
        start_memory, spin_until, monkeypatch):
    calls, recording = _recorded_prepares(monkeypatch)
    node, probe = start_memory({'tick_hz': 10.0, 'prepare_lead_s': LEAD_S})
    recording.node = node
    first = node._memory.tick
    last = _feed_readings(node, probe, spin_until, 40)
    probe.wait_frame(lambda frame: _served(frame, last))
    ticks = node._memory.tick - first
    leads = [until for until in calls if until is not None]
    assert ticks >= 8 and len(leads) >= ticks   # 1.2 s at 10 Hz: a round per pace and per tick
    # A round aimed at a lead point comes at it or late (a timer is never early), before the
    # tick unless later than the lead: one per tick. By the 50 ms pace alone a round would
    # fall in the lead's 6 ms before a tick about once in four ticks.
    within = [until for until in leads if until <= LEAD_S + 0.001]
    assert len(within) >= 0.6 * ticks, (ticks, sorted(leads))


def test_a_node_without_a_lead_leaves_all_of_it_to_the_tick(start_memory, spin_until,
                                                            monkeypatch):
    calls, recording = _recorded_prepares(monkeypatch)
    node, probe = start_memory({'tick_hz': 10.0, 'prepare_lead_s': 0.0})
    recording.node = node
    last = _feed_readings(node, probe, spin_until, 10)
    probe.wait_frame(lambda frame: _served(frame, last))
    assert calls == []
