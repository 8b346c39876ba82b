"""One tick per period of the tick timer, whether the timer or another callback comes first."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from working_memory.ros.tick_grid import (MIN_INTAKE_DELAY_NS, TickGrid, intake_delay_ns,
                                          intake_schedule, warm_due)

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


MS = 1_000_000   # [ns]


def test_the_intake_keeps_its_pace_without_a_lead_or_a_tick_timer():
    assert intake_delay_ns(50 * MS, 30 * MS, 0, 100 * MS) == 50 * MS
    assert intake_delay_ns(50 * MS, None, 2 * MS, 100 * MS) == 50 * MS


def test_the_last_round_before_a_tick_comes_its_lead_before_it():
    # The pace would pass the lead point 2 ms before the tick (30 ms away): aim at it.
    assert intake_delay_ns(50 * MS, 30 * MS, 2 * MS, 100 * MS) == 28 * MS
    # A pace that comes before the lead point keeps it.
    assert intake_delay_ns(5 * MS, 30 * MS, 2 * MS, 100 * MS) == 5 * MS


def test_a_round_within_the_lead_aims_at_the_lead_of_the_tick_after():
    assert intake_delay_ns(200 * MS, 1 * MS, 2 * MS, 100 * MS) == 99 * MS
    # Just before its lead point is as good as at it.
    assert intake_delay_ns(200 * MS, 2 * MS + MIN_INTAKE_DELAY_NS // 2, 2 * MS,
                           100 * MS) == 100 * MS + MIN_INTAKE_DELAY_NS // 2


def test_the_lead_is_at_most_half_a_period_and_the_wait_never_below_its_floor():
    assert intake_delay_ns(50 * MS, 8 * MS, 40 * MS, 10 * MS) == 3 * MS
    assert intake_delay_ns(0, 8 * MS, 2 * MS, 10 * MS) == MIN_INTAKE_DELAY_NS


@given(st.integers(1, 10**9), st.integers(0, 10**9), st.integers(0, 10**9),
       st.integers(2, 10**9))
def test_the_intake_never_waits_longer_than_its_pace_nor_past_a_lead_point(
        pace, until, lead, period):
    delay = intake_delay_ns(pace, until, lead, period)
    if not lead:
        assert delay == pace
        return
    assert MIN_INTAKE_DELAY_NS <= delay <= max(pace, MIN_INTAKE_DELAY_NS)
    if delay > MIN_INTAKE_DELAY_NS:
        # No lead point lies before the next round (one is at it at most).
        point = until - min(lead, period // 2)
        while point < MIN_INTAKE_DELAY_NS:
            point += period
        assert delay <= point


def test_the_intake_timer_is_reset_only_when_its_next_call_is_off_its_aim():
    # No lead (or no tick timer): the pace, from the call after next.
    assert intake_schedule(50 * MS, 30 * MS, 0, 100 * MS, 10 * MS, 5 * MS) == (50 * MS, False)
    assert intake_schedule(50 * MS, None, 2 * MS, 0, 10 * MS, 5 * MS) == (50 * MS, False)
    # The timer would call in 50 ms, the lead point is in 28: reset to it.
    assert intake_schedule(50 * MS, 30 * MS, 2 * MS, 100 * MS, 50 * MS, 50 * MS) == \
        (28 * MS, True)
    # Already calling at the aim (the round took a little): left alone.
    assert intake_schedule(50 * MS, 30 * MS, 2 * MS, 100 * MS, 28 * MS + MS // 2, 50 * MS) == \
        (50 * MS, False)


def test_a_tick_warms_up_after_an_idle_but_not_when_a_fast_timer_is_late():
    assert warm_due(0.1, 0.02, 10.0)          # 10 Hz: every tick comes after 100 ms idle
    assert not warm_due(0.015, 0.02, 10.0)    # not idle long
    assert not warm_due(0.05, 0.02, 100.0)    # 100 Hz, a tick late: no extra work
    assert warm_due(0.05, 0.02, 50.0)         # 50 Hz: its period is the idle bound
    assert warm_due(0.5, 0.02, None) and not warm_due(0.01, 0.02, None)   # triggered ticks
