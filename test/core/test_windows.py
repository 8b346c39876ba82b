"""Map windows by reference: digests, what the publisher sends, and the reader's join."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from working_memory.core.frames import make_frame, make_pack
from working_memory.core.gridmap import GridMap, MapWindow
from working_memory.core.windows import (Abandoned, Joined, WindowBook, WindowJoin,
                                         WindowMismatch, checked_window, window_digest)


def grid(side=20):
    cells = np.zeros((side, side), dtype=np.int8)
    cells[5, 7] = 100
    return GridMap(cells, (0.0, 0.0), 0.05)


def frame(tick, **windows):
    return make_frame(tick, float(tick), [make_pack(cabin, tick, float(tick), (), (), window, ())
                                          for cabin, window in windows.items()])


def test_the_digest_reads_the_same_from_a_float32_resolution_as_a_message_carries_it():
    window = grid().window(0.3, 0.3, 0.2)
    as_received = MapWindow(np.array(window.data), window.origin,
                            float(np.float32(window.resolution)))
    assert window_digest(as_received) == window_digest(window)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 15), st.integers(0, 15), st.integers(-1, 100))
def test_any_changed_cell_changes_the_digest(row, col, value):
    window = grid().window(0.4, 0.4, 0.4)
    changed = np.array(window.data)
    if changed[row % changed.shape[0], col % changed.shape[1]] == value:
        value = 50
    changed[row % changed.shape[0], col % changed.shape[1]] = value
    with pytest.raises(WindowMismatch, match='not used'):
        checked_window(MapWindow(changed, window.origin, window.resolution),
                       window_digest(window), 'test')


def test_a_moved_origin_changes_the_digest():
    window = grid().window(0.4, 0.4, 0.2)
    moved = MapWindow(window.data, (window.origin[0] + 0.05, window.origin[1]),
                      window.resolution)
    assert window_digest(moved) != window_digest(window)


def test_the_book_sends_a_window_once_while_it_holds_and_again_when_it_returns():
    book, world = WindowBook(), grid()
    here, there = world.window(0.3, 0.3, 0.2), world.window(0.6, 0.6, 0.2)
    assert [(c, d) for c, d, _ in book.changed(frame(1, planner=here, monitor=None))] == [
        ('planner', window_digest(here))]
    assert book.changed(frame(2, planner=here)) == []
    assert [d for _, d, _ in book.changed(frame(3, planner=there))] == [window_digest(there)]
    assert [d for _, d, _ in book.changed(frame(4, planner=here))] == [window_digest(here)]


def test_a_frame_waits_for_its_window_and_comes_out_with_it():
    join, window = WindowJoin(), grid().window(0.3, 0.3, 0.2)
    digest = window_digest(window)
    join.frame('f1', {'planner': digest})
    assert join.release() == [] and join.held == 1
    join.window('planner', digest, window)
    (out,) = join.release()
    assert isinstance(out, Joined) and out.payload == 'f1'
    assert out.windows['planner'] is window and join.held == 0


def test_a_held_frame_is_abandoned_once_a_later_frame_is_complete():
    join, world = WindowJoin(), grid()
    lost, here = world.window(0.6, 0.6, 0.2), world.window(0.3, 0.3, 0.2)
    join.frame('f1', {'planner': window_digest(lost)})
    join.window('planner', window_digest(here), here)
    join.frame('f2', {'planner': window_digest(here)})
    first, second = join.release()
    assert isinstance(first, Abandoned) and first.payload == 'f1'
    assert first.missing == {'planner': window_digest(lost)}
    assert isinstance(second, Joined) and second.payload == 'f2'


def test_the_buffer_is_bounded_and_says_which_frames_it_gave_up_on():
    join = WindowJoin(frames_held=2)
    for tick in range(3):
        join.frame(tick, {'planner': 'never'})
    (out,) = join.release()
    assert isinstance(out, Abandoned) and out.payload == 0 and 'more than 2' in out.why
    assert join.held == 2


def test_a_mismatching_window_is_refused_and_not_kept():
    join, window = WindowJoin(), grid().window(0.3, 0.3, 0.2)
    join.frame('f1', {'planner': 'feedfacefeedface'})
    with pytest.raises(WindowMismatch):
        join.window('planner', 'feedfacefeedface', window)
    assert join.release() == [] and join.held == 1


def test_a_frame_naming_no_window_passes_at_once():
    join = WindowJoin()
    join.frame('f1', {'planner': '', 'monitor': ''})
    (out,) = join.release()
    assert isinstance(out, Joined) and dict(out.windows) == {}
