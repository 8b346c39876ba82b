"""Tearing check: every cabin that reports on the same tick must report the same frame digest."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class TearingAlarm:
    """Two reports for the same tick named different frame digests."""

    tick: int
    reports: tuple[tuple[str, str], ...]   # (cabin, digest) in arrival order

    @property
    def digests(self) -> Mapping[str, tuple[str, ...]]:
        """Return digest -> cabins that reported it."""
        by_digest: dict[str, tuple[str, ...]] = {}
        for cabin, digest in self.reports:
            by_digest[digest] = by_digest.get(digest, ()) + (cabin,)
        return by_digest


class TearingMonitor:
    """Compare the (tick, digest) pairs cabins report; alarm when one tick has two digests.

    Keeps the reports of the newest `keep_ticks` ticks. A tick far below the
    newest one means the working memory restarted its tick count: the history
    is cleared so old ticks of a previous run are not compared with new ones.
    """

    def __init__(self, keep_ticks: int = 64):
        if keep_ticks < 1:
            raise ValueError(f'keep_ticks: must be >= 1, got {keep_ticks!r}')
        self._keep = keep_ticks
        self._reports: OrderedDict[int, list[tuple[str, str]]] = OrderedDict()
        self._newest = -1

    def observe(self, cabin: str, tick: int, digest: str) -> TearingAlarm | None:
        """Record a report; return a TearingAlarm when it disagrees with an earlier one."""
        if tick < self._newest - self._keep:
            self._reports.clear()
            self._newest = -1
        self._newest = max(self._newest, tick)
        reports = self._reports.setdefault(tick, [])
        seen = {known for _, known in reports}
        reports.append((cabin, digest))
        while len(self._reports) > self._keep:
            self._reports.popitem(last=False)
        if seen and digest not in seen:
            return TearingAlarm(tick=tick, reports=tuple(reports))
        return None

    def reports(self, tick: int) -> tuple[tuple[str, str], ...]:
        """Return the (cabin, digest) reports recorded for `tick`."""
        return tuple(self._reports.get(tick, ()))
