"""TimeBase: ROS time that jumps backwards becomes a non-decreasing effective timeline."""

import math

import pytest
from hypothesis import given, strategies as st

from working_memory.core.timebase import TimeBase


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
