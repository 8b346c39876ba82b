"""The re-reading of the writers after a start from an empty memory (core/resync.py)."""

import pytest

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.items import BoardEntry, MissingReason
from working_memory.core.manifest import Manifest
from working_memory.core.resync import Resync, SETTLE_S, mark_resyncing, resyncing_detail

WRITERS = {b'a': '/sim', b'b': '/executor'}


def test_it_ends_once_every_writer_shown_has_answered_and_none_appeared_for_a_while():
    # The waiting runs on the steady clock (`update`'s now), from `steady`.
    resync = Resync(started=0.0, bound_s=5.0, start_id='s1', steady=100.0)
    resync.heard(b'a')
    assert resync.update(100.2, {b'a': '/sim'})          # too soon: discovery may find more
    resync.heard(b'b')
    assert resync.update(100.6, WRITERS)                 # /executor just appeared
    assert not resync.update(100.6 + SETTLE_S, WRITERS)  # shown alike for SETTLE_S
    assert (resync.took, resync.unheard) == (pytest.approx(0.6 + SETTLE_S), ())
    assert resync.complete and resync.status(101.5) == f'writers re-read in {0.6 + SETTLE_S:.2f} s'


def test_it_waits_for_a_writer_not_heard_and_for_one_at_least_up_to_its_bound():
    resync = Resync(started=7.0, bound_s=5.0, steady=100.0)
    assert resync.update(101.0, {})          # no writer found yet: discovery may be slow
    resync.heard(b'a')
    assert resync.update(102.0, WRITERS)     # /executor shown, not heard
    assert resync.status(102.0) == 're-reading the writers for 2.00 s'
    assert not resync.update(105.0, WRITERS)
    assert resync.unheard == ('/executor',) and not resync.complete
    assert 'bound reached; not heard: /executor' in resync.status(105.0)
    assert resync.heard(b'b') is False       # too late: it ended (the node says so)
    assert not resync.active


def test_with_no_writer_that_answers_it_ends_on_its_bound():
    resync = Resync(started=0.0, bound_s=2.0, steady=10.0)
    assert resync.update(11.9, {}) and not resync.update(12.0, {})
    assert not resync.complete and 'no writer answered' in resync.status(12.0)


def test_a_bound_of_zero_is_no_resync():
    resync = Resync(started=3.0, bound_s=0.0)
    assert not resync.active and not resync.update(3.0, WRITERS) and resync.complete
    assert resync.status(9.0) == 'no resync (resync_timeout_s is 0)'
    with pytest.raises(ValueError, match='bound_s'):
        Resync(0.0, -1.0)


def test_an_answer_never_takes_back_a_newer_value_or_a_later_removal():
    board = BoardSnapshot()
    board.apply([BoardEntry('pose', {'x': 2}, 20.0)])
    resync = Resync(started=10.0, bound_s=5.0)
    resync.removed(['door:a'], 15.0)
    answer = [BoardEntry('pose', {'x': 1}, 12.0),       # older than the live pose
              BoardEntry('door:a', 'open', 14.0),        # removed live after it was set
              BoardEntry('door:b', 'open', 14.0),
              BoardEntry('goal:deliver', {'x': 16}, 5.0)]
    assert [entry.key for entry in resync.standing(answer, board)] == ['door:b',
                                                                       'goal:deliver']
    resync.removed(['door:b'], 13.0)   # a removal before the answer's entry: the entry wins
    assert [entry.key for entry in resync.standing(answer, board)] == ['door:b',
                                                                       'goal:deliver']


def frame_without_goal():
    manifest = Manifest('planner', board_keys=('goal:*', 'pose'), required=('goal:*', 'pose'))
    board = BoardSnapshot()
    board.apply([BoardEntry('pose', {'x': 1.0, 'y': 2.0}, 1.0)])
    assembler = Assembler({'planner': manifest}, WorkingSet(16))
    return assembler.assemble(1, 2.0, board, EventLog(10), None)


def test_marking_turns_never_seen_into_resyncing_and_the_digests_follow():
    frame = frame_without_goal()
    assert [m.reason for m in frame.pack('planner').missing] == [MissingReason.NEVER_SEEN]
    marked = mark_resyncing(frame, resyncing_detail(1.5))
    note, = marked.pack('planner').missing
    assert note.reason is MissingReason.RESYNCING and 'started at 1.500 s' in note.detail
    assert marked.pack('planner').items == frame.pack('planner').items
    assert marked.digest != frame.digest
    assert marked.pack('planner').digest != frame.pack('planner').digest
    # The same marking of the same frame: the same digest (a replay makes it again).
    assert mark_resyncing(frame, resyncing_detail(1.5)).digest == marked.digest


def test_a_start_asks_the_writers_and_only_a_restart_says_it_is_one():
    assert resyncing_detail(1.5) == (
        'not heard since the node started at 1.500 s: it asks the writers')
    assert resyncing_detail(1.5, restart=True) == (
        'not heard since the node started at 1.500 s: it re-reads the writers (a restart)')
    frame = frame_without_goal()
    assert mark_resyncing(frame, resyncing_detail(1.5, restart=True)).digest != \
        mark_resyncing(frame, resyncing_detail(1.5)).digest


def test_a_frame_with_nothing_never_seen_is_left_as_it_is():
    frame = frame_without_goal()
    complete = mark_resyncing(mark_resyncing(frame, 'x'), 'x')
    assert mark_resyncing(complete, 'y') is complete
