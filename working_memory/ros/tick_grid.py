"""One tick per period of the tick timer, from whichever callback runs first after it is due.

Pure Python (no rclpy). rclpy's EventsExecutor serves events in arrival order: a
flood of service requests queued before a due timer holds the tick back for as
long as the backlog lasts. The node therefore also ticks from its other
callbacks when the timer's period has passed unserved, and the timer's own
event, when it comes, finds its period served and skips. Times are the timer
clock's [ns]; the grid is the timer's call times, learnt from its next call.
"""

from __future__ import annotations


class TickGrid:
    """The tick timer's grid of call times and the last grid point a tick served."""

    # A timer call this many periods (at least 1 s) behind the last point served is
    # taken as a clock that moved back: a queue of late events is never that long.
    RESYNC_PERIODS = 100
    RESYNC_MIN_NS = 1_000_000_000

    def __init__(self, period_ns: int, next_call_ns: int):
        """Start the grid of a timer of `period_ns` whose next call is at `next_call_ns` [ns]."""
        if period_ns <= 0:
            raise ValueError(f'tick period must be positive, not {period_ns} ns')
        self.period_ns = period_ns
        self._resync_ns = max(self.RESYNC_PERIODS * period_ns, self.RESYNC_MIN_NS)
        self.restart(next_call_ns)

    def restart(self, next_call_ns: int) -> None:
        """Follow a timer (re)started or reset: its next call is at `next_call_ns` [ns]."""
        self._served = next_call_ns - self.period_ns

    def on_timer(self, next_call_ns: int) -> bool:
        """Return True if the timer's call, now next due at `next_call_ns` [ns], needs a tick.

        The call served the grid point one period before its next call; False when
        an earlier callback already ticked for it (half a period absorbs clock reads).
        A call far behind the served points (the clock moved back) restarts the grid.
        """
        point = next_call_ns - self.period_ns
        ahead = point - self._served
        if -self._resync_ns < ahead < self.period_ns // 2:
            return False
        self._served = point
        return True

    def due(self, now_ns: int) -> bool:
        """Return True (and count it served) if a grid point passed unserved before `now_ns`."""
        behind = now_ns - self._served
        if behind < self.period_ns:
            return False
        # Periods missed entirely are skipped, as an rcl timer skips them.
        self._served += behind - behind % self.period_ns
        return True


# [ns] the intake's shortest wait: a round this close to its aim is the aimed-at round.
MIN_INTAKE_DELAY_NS = 200_000


def intake_delay_ns(pace_ns: int, until_tick_ns: int | None, lead_ns: int,
                    period_ns: int) -> int:
    """Return how long the intake waits for its next round [ns]: its pace, or less.

    Less when that round would come after the point `lead_ns` before the next tick
    (`until_tick_ns` away; None without a tick timer): it then comes at that point,
    the last round before the tick. A round already within the lead (or just before
    it) aims at the lead of the tick after; `lead_ns` 0 keeps the pace.
    """
    if lead_ns <= 0 or until_tick_ns is None:
        return pace_ns
    lead_ns = min(lead_ns, period_ns // 2)
    to_lead = until_tick_ns - lead_ns
    if to_lead < MIN_INTAKE_DELAY_NS:
        to_lead += period_ns
    return max(MIN_INTAKE_DELAY_NS, min(pace_ns, to_lead))


# [ns] the intake timer's next call may be this far from its aim before it is reset to it.
INTAKE_RESET_TOLERANCE_NS = 1_000_000


def intake_schedule(pace_ns: int, until_tick_ns: int | None, lead_ns: int, period_ns: int,
                    until_intake_ns: int, intake_period_ns: int) -> tuple[int, bool]:
    """Return (the intake timer's period [ns], whether to reset it now) after a round.

    The next round is due `intake_delay_ns(...)` from now; the timer calls next in
    `until_intake_ns`. Off its aim by more than INTAKE_RESET_TOLERANCE_NS the timer is
    reset (its next call a period from now); on it, it is left as it is. Without a
    lead or a tick timer the period is the pace (from the call after next, as set).
    """
    if lead_ns <= 0 or until_tick_ns is None:
        return pace_ns, False
    delay_ns = intake_delay_ns(pace_ns, until_tick_ns, lead_ns, period_ns)
    if abs(until_intake_ns - delay_ns) > INTAKE_RESET_TOLERANCE_NS:
        return delay_ns, True
    return intake_period_ns, False


def warm_due(idle_s: float, warm_after_s: float, tick_hz: float | None) -> bool:
    """Return True when a tick `idle_s` [s] after the last one should warm up first.

    After more than `warm_after_s` idle, the CPU's caches have gone to other work. A
    timer ticking faster than that (`tick_hz`; None when ticks follow a trigger) is not
    idle but late when it gets there: it gets no extra work.
    """
    return idle_s > warm_after_s and (tick_hz is None or tick_hz * warm_after_s <= 1.0)
