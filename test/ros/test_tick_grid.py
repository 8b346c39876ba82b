"""One tick per period of the tick timer, whether the timer or another callback comes first."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from working_memory.ros.ticking import TickGrid

PERIOD = 10_000_000   # [ns] 100 Hz


def test_the_timer_ticks_once_per_grid_point():
    grid = TickGrid(PERIOD, next_call_ns=PERIOD)
    assert grid.on_timer(2 * PERIOD)          # called for the point at PERIOD
    assert grid.on_timer(3 * PERIOD + 40)     # the next one (clock reads differ a little)
    assert not grid.on_timer(3 * PERIOD)      # the same point again: served


def test_a_callback_ticks_for_an_overdue_point_and_the_timers_late_call_then_skips():
    grid = TickGrid(PERIOD, next_call_ns=PERIOD)
    assert not grid.due(PERIOD - 1)           # not yet due
    assert grid.due(PERIOD + 3_000_000)       # due, the timer's event queued behind
    assert not grid.due(PERIOD + 4_000_000)   # served: one tick per point
    assert not grid.on_timer(2 * PERIOD)      # the timer's event for that point comes late
    assert grid.on_timer(3 * PERIOD)          # and the next point is the timer's again


def test_points_missed_entirely_are_skipped_not_caught_up():
    grid = TickGrid(PERIOD, next_call_ns=PERIOD)
    assert grid.due(5 * PERIOD + 1)           # four points passed: one tick
    assert not grid.due(5 * PERIOD + 2)
    assert grid.due(6 * PERIOD)


def test_a_restarted_timer_starts_the_grid_again():
    grid = TickGrid(PERIOD, next_call_ns=PERIOD)
    assert grid.on_timer(2 * PERIOD)
    grid.restart(next_call_ns=500)            # a clock jumped back: the timer was reset
    assert not grid.due(499)
    assert grid.due(500)


def test_a_period_must_be_positive():
    with pytest.raises(ValueError, match='positive'):
        TickGrid(0, next_call_ns=0)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3 * PERIOD)), max_size=200))
def test_never_two_ticks_for_one_grid_point(calls):
    grid = TickGrid(PERIOD, next_call_ns=PERIOD)
    now, ticks = 0, []
    for from_timer, step in calls:
        now += step
        # A timer call comes at or after its point; its next call is the point after now.
        ticked = grid.on_timer(now - now % PERIOD + PERIOD) if from_timer else grid.due(now)
        if ticked:
            ticks.append(now)
    points = [t // PERIOD for t in ticks]
    assert points == sorted(set(points))      # at most one tick per period, in order
    assert all(point >= 1 for point in points)   # none before the first point


def test_a_timer_call_far_behind_the_served_points_follows_a_clock_that_moved_back():
    system = 1_700_000_000 * 10**9
    grid = TickGrid(PERIOD, next_call_ns=system)
    assert grid.on_timer(system + PERIOD)
    # Switched to sim time near zero, no callback told the grid: the timer's call restarts it.
    assert grid.on_timer(2 * PERIOD)
    assert not grid.due(PERIOD + 5)
    assert grid.due(2 * PERIOD + 5)
    assert not grid.on_timer(3 * PERIOD)      # that point was served by the callback


def test_a_late_timer_call_within_a_backlog_never_ticks_twice():
    grid = TickGrid(PERIOD, next_call_ns=PERIOD)
    assert grid.due(50 * PERIOD + 1)          # callbacks served the points up to 50
    assert not grid.on_timer(2 * PERIOD)      # the timer's event for point 1 comes very late
