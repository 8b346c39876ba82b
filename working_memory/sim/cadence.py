"""When the simulator publishes: fixed rates on sim time, and board keys only when they change."""

from __future__ import annotations

from typing import Iterable

from working_memory.core.items import BoardEntry

_NEVER = object()  # no value sent yet (None is a valid JSON value)


class Cadence:
    """A fixed publish rate on integer sim time [ns]; a rate of 0 is never due.

    Due at the first call, then once per period. After a gap of several periods
    it is due once and continues on the original grid, so rates stay exact
    whatever the step size.
    """

    __slots__ = ('_period_ns', '_next_ns')

    def __init__(self, rate_hz: float):
        if not rate_hz >= 0.0:
            raise ValueError(f'cadence rate: must be >= 0 Hz, got {rate_hz!r}')
        self._period_ns = round(1e9 / rate_hz) if rate_hz > 0.0 else 0
        self._next_ns: int | None = None

    def due(self, now_ns: int) -> bool:
        """Return True when a publication is due at `now_ns` [ns] (and consume it)."""
        if self._period_ns == 0:
            return False
        if self._next_ns is None:
            self._next_ns = now_ns
        if now_ns < self._next_ns:
            return False
        periods_behind = (now_ns - self._next_ns) // self._period_ns + 1
        self._next_ns += periods_behind * self._period_ns
        return True


class ChangedEntries:
    """Pass on board entries whose value differs from the last one passed for that key."""

    __slots__ = ('_sent',)

    def __init__(self):
        self._sent: dict[str, object] = {}

    def select(self, entries: Iterable[BoardEntry]) -> list[BoardEntry]:
        """Return the entries to publish (a restarted working memory asks the BoardWriter)."""
        selected = [entry for entry in entries if self._sent.get(entry.key, _NEVER) != entry.value]
        self._sent.update((entry.key, entry.value) for entry in selected)
        return selected
