"""TimeBase: ROS time that jumps backwards becomes a non-decreasing effective timeline."""

import math

import pytest
from hypothesis import given, strategies as st

from working_memory.core.timebase import TimeBase, epoch_time


def test_forward_time_is_passed_through_in_epoch_zero():
    timebase = TimeBase()
    assert timebase.now is None
    assert [timebase.observe(t) for t in (5.0, 5.0, 7.5)] == [5.0, 5.0, 7.5]
    assert timebase.epoch == 0
    assert timebase.now == 7.5


def test_backward_jump_starts_new_epoch_and_continues_from_last_effective_time():
    timebase = TimeBase()
    timebase.observe(100.0)
    assert timebase.observe(2.0) == 100.0
    assert timebase.epoch == 1
    assert timebase.observe(3.5) == pytest.approx(101.5)
    assert timebase.observe(1.0) == pytest.approx(101.5)
    assert timebase.epoch == 2
    assert timebase.observe(4.0) == pytest.approx(104.5)


def test_durations_within_an_epoch_equal_ros_durations():
    timebase = TimeBase()
    timebase.observe(50.0)
    first = timebase.observe(10.0)
    assert timebase.observe(12.25) - first == pytest.approx(2.25)


@pytest.mark.parametrize('bad', [math.nan, math.inf, -math.inf, None, '1.0', True])
def test_non_finite_or_non_numeric_time_is_rejected_naming_now(bad):
    timebase = TimeBase()
    with pytest.raises(ValueError, match='now'):
        timebase.observe(bad)
    assert timebase.now is None


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1,
                max_size=60))
def test_effective_time_never_decreases_and_epochs_count_backward_jumps(times):
    timebase = TimeBase()
    effective = [timebase.observe(t) for t in times]
    assert all(later >= earlier for earlier, later in zip(effective, effective[1:]))
    assert timebase.epoch == sum(later < earlier for earlier, later in zip(times, times[1:]))
    assert timebase.now == effective[-1]


def test_place_reads_a_stamp_in_the_current_epoch_and_never_after_the_latest_observation():
    timebase = TimeBase()
    assert timebase.place(3.0) == 3.0          # nothing observed yet: the stamp as is
    timebase.observe(100.0)
    assert timebase.place(99.5) == 99.5
    timebase.observe(0.0)                      # reset: effective 100 s, offset 100 s
    assert timebase.offset == 100.0
    assert timebase.place(0.0) == 100.0
    # Stamped before the reset, arriving after it: not in the new epoch's future.
    assert timebase.place(99.9) == 100.0
    timebase.observe(5.0)
    assert timebase.place(4.0) == 104.0


def test_a_forward_jump_is_passed_through():
    timebase = TimeBase()
    timebase.observe(1.0)
    assert timebase.observe(61.0) == 61.0 and timebase.epoch == 0


def test_epoch_time_keeps_ages_exact_and_never_negative():
    # A tick at ROS 5 s, effective 105 s (after a reset from 100 s to 0).
    assert epoch_time(103.0, 5.0, 105.0) == 3.0            # 2 s old
    assert epoch_time(90.0, 5.0, 105.0) == 0.0             # before the epoch's ROS zero
    assert epoch_time(106.0, 5.0, 105.0) == 5.0            # never after the tick


@given(st.lists(st.floats(min_value=0.0, max_value=1e4, allow_nan=False), min_size=1,
                max_size=40), st.floats(min_value=0.0, max_value=1e4, allow_nan=False))
def test_placed_stamps_are_never_after_the_effective_now(times, stamp):
    timebase = TimeBase()
    for t in times:
        timebase.observe(t)
    assert timebase.place(stamp) <= timebase.now
