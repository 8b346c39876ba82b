"""A pack's size follows the working set and the manifest, never the number of keys on the board.

A glob over a board that keeps growing (per-object keys with a ttl, never removed) leaves
ever more stale keys behind: the pack lists the most valuable few of them and counts the
rest in one summary per glob, and every one of them can still be explained.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.explain import explain
from working_memory.core.frames import make_frame, make_pack
from working_memory.core.items import (BoardEntry, EventKind, Item, Missing, MissingReason,
                                       MissingSummary, Source)
from working_memory.core.manifest import Manifest, is_glob
from working_memory.core.selection import LISTED_PER_GLOB
from working_memory.ros.wire import FrameEncoder

MANIFEST = Manifest.from_dict('tracker', {'board_keys': ['obj:*', 'track:*', 'pose'],
                                          'weights': ['track:*=0.8']})
TTL_S = 2.0
# The generator's longest key and value: what a pack of the maximum shape holds.
LONGEST_KEY, LONGEST_VALUE = 'track:999999', 999999


def _encoder() -> FrameEncoder:
    return FrameEncoder({kind: code for code, kind in enumerate(EventKind)},
                        {reason: code for code, reason in enumerate(MissingReason)})


def _wire_size(pack) -> int:
    """Return the bytes [B] of a ContextFrame holding `pack` alone."""
    return len(_encoder().frame(make_frame(pack.tick, pack.stamp, [pack]), 'map'))


def _bound(manifest: Manifest, capacity: int, now: float) -> int:
    """Return the bytes [B] of the largest pack `manifest` and `capacity` allow.

    `capacity` items and one stale note per exact key plus LISTED_PER_GLOB per glob,
    each with the generator's longest key and value, and one summary per glob: a size
    that does not depend on the board.
    """
    patterns = manifest.selects.patterns
    globs = [pattern for pattern in patterns if is_glob(pattern)]
    notes = len(patterns) - len(globs) + LISTED_PER_GLOB * len(globs)
    items = [Item(f'{LONGEST_KEY}{n}'[-len(LONGEST_KEY):], LONGEST_VALUE, Source.BOARD, 0.5, now,
                  now, False, False) for n in range(capacity)]
    missing = [Missing(f'{LONGEST_KEY}{n}'[-len(LONGEST_KEY):], MissingReason.STALE,
                       f'stale: its ttl of {TTL_S:.1f} s ran out', now) for n in range(notes)]
    summaries = [MissingSummary(max(globs, key=len), MissingReason.STALE, 2**31, LISTED_PER_GLOB,
                                now, now) for _ in globs]
    return _wire_size(make_pack(MANIFEST.name, 1, now, items, [], None, missing,
                                summaries=summaries))


boards = st.tuples(
    st.integers(0, 3000),                                  # stale detections
    st.integers(0, 60),                                    # fresh detections
    st.integers(0, 200),                                   # stale tracks
    st.sampled_from([None, 0.1, 0.9]),                     # their importance
    st.integers(1, 40))                                    # capacity


@settings(max_examples=25, deadline=None)
@given(boards)
def test_a_packs_serialized_size_is_bounded_by_the_working_set_and_the_manifest(board_spec):
    stale, fresh, tracks, importance, capacity = board_spec
    now = 100.0
    working_set = WorkingSet(capacity)
    board = BoardSnapshot(working_set.timebase)
    working_set.timebase.observe(0.0)
    board.apply([BoardEntry(f'obj:{n}', n, n * 1e-3, importance, ttl=TTL_S)
                 for n in range(stale)]
                + [BoardEntry(f'track:{n}', n, 1.0, importance, ttl=TTL_S)
                   for n in range(tracks)]
                + [BoardEntry('pose', {'x': 0.0, 'y': 0.0}, 0.0, ttl=TTL_S)])
    assembler = Assembler({MANIFEST.name: MANIFEST}, working_set)
    assembler.assemble(1, now - 1.0, board, EventLog(10), None)
    board.apply([BoardEntry(f'obj:{stale + n}', n, now, importance, ttl=TTL_S)
                 for n in range(fresh)])
    pack = assembler.assemble(2, now, board, EventLog(10), None).packs[MANIFEST.name]
    assert len(pack.items) <= capacity
    assert len(pack.missing) <= 1 + 2 * LISTED_PER_GLOB
    assert sum(summary.count for summary in pack.summaries) == stale + tracks
    assert _wire_size(pack) <= _bound(MANIFEST, capacity, now)


def test_twenty_thousand_stale_detections_make_a_frame_of_a_few_kilobytes_and_stay_explained():
    working_set = WorkingSet(40)
    board = BoardSnapshot(working_set.timebase)
    board.apply([BoardEntry(f'obj:{n}', {'x': n}, 0.0, ttl=TTL_S) for n in range(20_000)]
                + [BoardEntry(f'obj:new{n}', {'x': n}, 9.5, ttl=TTL_S) for n in range(40)])
    assembler = Assembler({MANIFEST.name: MANIFEST}, working_set)
    frame = assembler.assemble(1, 10.0, board, EventLog(10), None)
    pack = frame.packs[MANIFEST.name]
    (summary,) = pack.summaries
    assert (summary.pattern, summary.count, summary.listed) == ('obj:*', 20_000, LISTED_PER_GLOB)
    assert summary.text(pack.effective) == (
        '20000 key(s) under obj:* STALE: their ttl ran out 8.0 s to 8.0 s ago; '
        'the 3 most valuable listed')
    assert len(pack.items) == 40 and len(pack.missing) == LISTED_PER_GLOB
    assert _wire_size(pack) < 16_000
    # A key the pack counts but does not list is explained all the same.
    listed = {note.key for note in pack.missing}
    assert 'obj:1234' not in listed
    answer = explain(frame, {MANIFEST.name: MANIFEST}, MANIFEST.name, 'obj:1234')
    assert (answer.present, answer.reason) == (False, 'STALE')
    assert answer.detail == 'stale: its ttl of 2.0 s ran out 8.0 s ago'


def test_a_board_ten_times_larger_leaves_the_pack_the_same_size():
    sizes = []
    for keys in (1_000, 10_000):
        working_set = WorkingSet(40)
        board = BoardSnapshot(working_set.timebase)
        board.apply([BoardEntry(f'obj:{n:05d}', n, 0.0, ttl=TTL_S) for n in range(keys)])
        assembler = Assembler({MANIFEST.name: MANIFEST}, working_set)
        sizes.append(_wire_size(assembler.assemble(1, 10.0, board, EventLog(10),
                                                   None).packs[MANIFEST.name]))
    # Only the summary's count differs, and it is a uint32 on the wire: one size.
    assert sizes[0] == sizes[1]
