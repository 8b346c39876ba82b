"""A board that keeps growing under a glob: the node's frames stay bounded, every key explained.

Over real DDS: 50,000 readings under the planner's `reading:*` glob, each with a ttl that
runs out, ticking at 20 Hz with capacity 40. The frames count them in one summary and list
a few; sizes and counts are asserted, never times.
"""

from rclpy.serialization import serialize_message

from working_memory.core.items import BoardEntry
from working_memory.core.selection import LISTED_PER_GLOB
from working_memory.msg import MissingItem
from working_memory.ros.conversions import board_update_msg

READINGS = 50_000
BATCH = 5_000
# [B] The bound for a frame of this manifest and capacity, whatever the board holds.
FRAME_BOUND_BYTES = 16_000


def now_s(node):
    return node.get_clock().now().nanoseconds * 1e-9


def planner(frame):
    return next(p for p in frame.packs if p.cabin == 'planner')


def counted(frame):
    """Return the planner's summary of reading:*, or None."""
    return next((s for s in planner(frame).missing_summaries if s.pattern == 'reading:*'), None)


def test_fifty_thousand_stale_readings_leave_frames_under_the_bound_and_explained(start_memory):
    node, probe = start_memory({'capacity': 40, 'tick_hz': 20.0})
    probe.wait_matched(probe.board)
    now = now_s(node)
    probe.board.publish(board_update_msg([BoardEntry('pose', {'x': 1.0, 'y': 1.0}, now),
                                          BoardEntry('goal:deliver', {'to': 'dock'}, now)], now))
    for start in range(0, READINGS, BATCH):
        # Readings of one second's life, never removed (per-object state as trackers write it).
        probe.board.publish(board_update_msg(
            [BoardEntry(f'reading:{n}', {'n': n}, now, None, 1.0) for n in
             range(start, start + BATCH)], now))
    frame = probe.wait_frame(lambda f: (summary := counted(f)) is not None
                             and summary.count == READINGS, timeout=60.0)
    summary = counted(frame)
    assert (summary.reason, summary.listed) == (MissingItem.STALE, LISTED_PER_GLOB)
    stale = [m.key for m in planner(frame).missing if m.reason == MissingItem.STALE]
    assert len(stale) == LISTED_PER_GLOB and all(key.startswith('reading:') for key in stale)
    assert len(serialize_message(frame)) < FRAME_BOUND_BYTES
    # The ticks go on, each frame as small: 20 more frames, all counting every reading.
    later = len(probe.frames)
    assert probe.spin_until(lambda: len(probe.frames) >= later + 20, timeout=60.0)
    for each in probe.frames[later:]:
        assert counted(each).count == READINGS
        assert len(serialize_message(each)) < FRAME_BOUND_BYTES
    # A reading the frames count but do not list is explained on its own.
    key = next(f'reading:{n}' for n in range(READINGS) if f'reading:{n}' not in stale)
    answer = probe.explain('planner', key, frame.tick)
    assert answer.success and (answer.present, answer.reason) == (False, 'STALE')
    assert answer.detail.startswith('stale: its ttl of 1.0 s ran out')
    # /diagnostics tells the mirror's size, and the missing status the readings counted.
    board = probe.status('board', lambda s: probe.values(s)['keys'] == str(READINGS + 2))
    assert 'growth_keys_per_s' in probe.values(board)
    missing = probe.status('missing', lambda s: 'planner.counted' in probe.values(s))
    assert probe.values(missing)['planner.counted'] == f'reading:*: {READINGS} STALE'
