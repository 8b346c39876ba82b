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
automatic collector is back as it was when the last one lets go.
"""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

FULL_PERIOD_S = 60.0   # [s] at least this long between two full collections while pacing


class GcPacing:
    """Collect at tick boundaries while at least one holder ticks; `collector` is the gc module.

    `clock` [s] is monotonic. The collector and the clock are arguments so the
    decisions can be tested without touching the process's collector.
    """

    def __init__(self, collector: Any = gc, clock: Callable[[], float] = time.monotonic):
        self._gc = collector
        self._clock = clock
        self._holders = 0
        self._was_enabled = False
        self._frozen = False
        self._last_full = 0.0

    @property
    def holders(self) -> int:
        """How many holders are pacing the collector now."""
        return self._holders

    def hold(self) -> None:
        """Start pacing for one more holder (the first turns the automatic collector off)."""
        if self._holders == 0:
            self._was_enabled = self._gc.isenabled()
            self._gc.disable()
            if not self._frozen:
                # Garbage first, so that no cycle is frozen for the rest of the process.
                self._gc.collect()
                self._gc.freeze()
                self._frozen = True
            self._last_full = self._clock()
        self._holders += 1

    def release(self) -> None:
        """Stop pacing for one holder; the last one gives the collector back as it found it."""
        if self._holders == 0:
            return
        self._holders -= 1
        if self._holders == 0 and self._was_enabled:
            self._gc.enable()

    def after_tick(self) -> int | None:
        """Collect what is due now that a tick is out; return the generation collected, or None.

        Nothing is collected when no holder paces, or when the program has set the
        young threshold to 0 (which switches collection off in CPython too).
        """
        if self._holders == 0:
            return None
        young, middle, oldest = self._gc.get_threshold()
        count_young, count_middle, count_oldest = self._gc.get_count()
        if young <= 0 or count_young < young:
            return None
        generation = 0
        if count_middle >= middle:
            generation = 1
            now = self._clock()
            if count_oldest >= oldest and now - self._last_full >= FULL_PERIOD_S:
                generation = 2
                self._last_full = now
        self._gc.collect(generation)
        return generation


# The process's one collector, paced by every node that ticks in this process.
PACING = GcPacing()
