"""A non-decreasing effective timeline over ROS time that may jump backwards."""

from __future__ import annotations

import math

from working_memory.core.checks import is_finite_number

_INF = math.inf


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
    everything observed after it. A forward jump (time skipped) is passed
    through: it ages everything by the skipped time.

    Source stamps (a board entry's or an event's) are ROS times of the epoch they
    arrive in: `place(stamp)` puts one on the effective timeline, and
    `epoch_time` turns an effective time back into the ROS time of a tick.
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

    @property
    def offset(self) -> float:
        """Effective minus ROS time [s] in the current epoch (0 until the first reset)."""
        return self._offset

    def place(self, stamp: float) -> float:
        """Return the effective time [s] of a source `stamp` [s] that arrives now.

        The stamp is read in the current epoch. A stamp later than the latest
        observation counts as that observation: nothing arrives before it is
        sent, and a message stamped before a reset that arrives after it must
        not land in the new epoch's future.
        """
        if not is_finite_number(stamp):
            raise ValueError(f'stamp: must be a finite time in seconds, got {stamp!r}')
        effective = stamp + self._offset
        if self._last_effective is not None and effective > self._last_effective:
            return self._last_effective
        return effective

    def observe(self, now: float) -> float:
        """Record ROS time `now` [s] and return the effective time [s] for it."""
        last_ros = self._last_ros
        if now.__class__ is float and last_ros is not None and last_ros <= now < _INF:
            # The common case, time going forward, without the general checks below.
            self._last_ros = now
            effective = now + self._offset
            if effective < self._last_effective:
                effective = self._last_effective
            self._last_effective = effective
            return effective
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


def epoch_time(effective: float, tick_stamp: float, tick_effective: float) -> float:
    """Return effective time `effective` [s] as ROS time of the epoch of a tick, never below 0.

    The tick happened at ROS time `tick_stamp` and effective time
    `tick_effective` [s]; the result keeps `tick_stamp - result` equal to the
    effective age `tick_effective - effective`, so an age published beside the
    tick's stamp is exact. ROS time cannot be negative: a time before the epoch's
    ROS zero (long before a reset to 0) is published as 0, an age that is then
    shorter than the true one but never negative; a time after the tick is the tick's.
    """
    return max(0.0, tick_stamp - max(0.0, tick_effective - effective))
