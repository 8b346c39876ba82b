"""A non-decreasing effective timeline over ROS time that may jump backwards."""

from __future__ import annotations

from working_memory.core.checks import is_finite_number


class TimeBase:
    """Map ROS time [s] onto an effective timeline [s] that never decreases.

    Simulated ROS time jumps backwards when the world is reset (Gazebo reset,
    bag loop). Orderings and ages computed on raw stamps would then see items
    used "in the future" and negative ages. `observe(now)` returns the
    effective time instead:

    - While ROS time moves forward (or stays), effective = now + offset, so
      effective durations equal ROS durations (up to float rounding).
    - When `now` is below the previous observation, a new epoch starts:
      `epoch` goes up by one and the offset is moved so that this observation
      maps to the previous effective time. The timeline continues from there
      with ROS durations again.

    Effective time starts equal to the first observed ROS time (offset 0), so
    before any reset effective time and ROS time agree. The time before a reset
    is not "replayed": everything observed before the jump stays older than
    everything observed after it.
    """

    __slots__ = ('_epoch', '_offset', '_last_ros', '_last_effective')

    def __init__(self):
        self._epoch = 0
        self._offset = 0.0
        self._last_ros: float | None = None
        self._last_effective: float | None = None

    @property
    def epoch(self) -> int:
        """Number of backward jumps seen so far (0 until the first reset)."""
        return self._epoch

    @property
    def now(self) -> float | None:
        """Latest effective time [s], or None before the first observation."""
        return self._last_effective

    def observe(self, now: float) -> float:
        """Record ROS time `now` [s] and return the effective time [s] for it."""
        if not is_finite_number(now):
            raise ValueError(f'now: must be a finite time in seconds, got {now!r}')
        if self._last_ros is not None and now < self._last_ros:
            self._epoch += 1
            self._offset = self._last_effective - now
        self._last_ros = now
        # max(): `now + (last - now)` may round just below `last`.
        effective = now + self._offset
        if self._last_effective is not None and effective < self._last_effective:
            effective = self._last_effective
        self._last_effective = effective
        return effective
