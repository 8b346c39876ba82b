"""Python's cyclic garbage collection between ticks, not inside them (parameter `gc_pacing`).

Pure Python (no rclpy). CPython collects its young generation wherever the program
is when allocations outnumber deallocations by `gc.get_threshold()[0]`: inside a
tick, between its stamp and its publish, that is a pause in the frame's latency, and
a full collection (which walks every tracked object of the process, rclpy's and the
messages' included) stalls a tick for tens of milliseconds (BENCHMARKS.md, "Issue 12,
garbage collection"). While a node ticks on its timer the automatic collector is off
and the node collects right after each tick's publishing, when no frame waits: the
generations CPython would have collected by then, by its own thresholds (young after
threshold[0] net allocations, the middle after threshold[1] young collections), and
the oldest after threshold[2] middle ones but at most once per `FULL_PERIOD_S`, so
cyclic garbage that reached it lives that long at most. The objects alive when
pacing first starts (modules, the middleware, the configuration: they live as long
as the process) are frozen (`gc.freeze`) after one full collection, so a full
collection does not walk them again.

The collector is one per process, so is this: nodes hold it while they tick and the
automatic collector is back as it was (and nothing stays frozen) when the last one lets
go. When ticks stall while held (a paused /clock under use_sim_time), the node's intake,
which runs on the steady clock, collects instead (`between_ticks`). Pacing follows
CPython's three-generation collector (3.11 to 3.13); elsewhere `hold` leaves it alone.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from typing import Any, Callable

FULL_PERIOD_S = 60.0   # [s] at least this long between two full collections while pacing
STALL_S = 1.0          # [s] without a tick, the intake collects what is due
# The collector whose generations and thresholds this follows (3.14 collects incrementally).
PACEABLE = sys.implementation.name == 'cpython' and (3, 11) <= sys.version_info[:2] < (3, 14)


class GcPacing:
    """Collect at tick boundaries while at least one holder ticks; `collector` is the gc module.

    `clock` [s] is monotonic. The collector and the clock are arguments so the
    decisions can be tested without touching the process's collector.
    """

    def __init__(self, collector: Any = gc, clock: Callable[[], float] = time.monotonic,
                 paceable: bool = PACEABLE):
        self._gc = collector
        self._clock = clock
        self._paceable = paceable
        self._lock = threading.RLock()   # a finalizer run by collect() may release
        self._holders = 0
        self._was_enabled = False
        self._last_full = 0.0
        self._last_tick = 0.0

    @property
    def holders(self) -> int:
        """How many holders are pacing the collector now."""
        return self._holders

    def hold(self) -> None:
        """Start pacing for one more holder (the first turns the automatic collector off)."""
        if not self._paceable:
            return
        with self._lock:
            self._holders += 1
            if self._holders > 1:
                return
            self._was_enabled = self._gc.isenabled()
            self._gc.disable()
            # Garbage first, so that no cycle is frozen while pacing lasts.
            self._gc.collect()
            self._gc.freeze()
            self._last_full = self._last_tick = self._clock()

    def release(self) -> None:
        """Stop pacing for one holder; the last one gives the collector back as it found it."""
        with self._lock:
            if self._holders == 0:
                return
            self._holders -= 1
            if self._holders == 0:
                self._gc.unfreeze()
                if self._was_enabled:
                    self._gc.enable()

    def after_tick(self) -> int | None:
        """Collect what is due now that a tick is out; return the generation collected, or None.

        Nothing is collected when no holder paces, or when the program has set the
        young threshold to 0 (which switches collection off in CPython too).
        """
        with self._lock:
            if self._holders == 0:
                return None
            self._last_tick = self._clock()
            return self._collect_due()

    def between_ticks(self) -> int | None:
        """Collect what is due if no tick has come for `STALL_S`; as `after_tick` otherwise."""
        with self._lock:
            if self._holders == 0 or self._clock() - self._last_tick < STALL_S:
                return None
            return self._collect_due()

    def _collect_due(self) -> int | None:
        young, middle, oldest = self._gc.get_threshold()
        count_young, count_middle, count_oldest = self._gc.get_count()
        # CPython collects a generation when its count exceeds its threshold.
        if young <= 0 or count_young <= young:
            return None
        generation = 0
        if count_middle > middle:
            generation = 1
            now = self._clock()
            if count_oldest > oldest and now - self._last_full >= FULL_PERIOD_S:
                generation = 2
                self._last_full = now
        self._gc.collect(generation)
        return generation


# The process's one collector, paced by every node that ticks in this process.
PACING = GcPacing()
