"""Per-tick series of a recording: working-set size, evictions, missing items, capacity alarms.

Capacity alarm (the frame has no alarm field), first source that applies:
1. /diagnostics: the node's '<node>: capacity' status carries `exempt_overflow`
   ('True'/'False'); each one applies from the last frame recorded before it (bag
   receive time, immune to clock resets) until the next one.
2. `capacity` given: the tick's distinct exempt (goal/safety) items alone exceed it —
   exactly the core's alarm condition, seen through the packs.
3. Otherwise unknown (None): the packs alone do not tell the capacity.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from working_memory.tools.recording import FrameRecord, Recording

ALARM_KEY = 'exempt_overflow'
TRUE_TEXTS = ('true', '1', 'yes')


@dataclass(frozen=True)
class TickSeries:
    """Arrays indexed like `ticks`; `working_set` counts distinct items across the frame's packs."""

    ticks: np.ndarray
    working_set: np.ndarray
    items_per_cabin: dict[str, np.ndarray]
    evictions: np.ndarray
    missing: np.ndarray
    missing_by_reason: dict[str, np.ndarray]
    alarms: np.ndarray | None
    alarm_source: str


def working_set_size(frame: FrameRecord) -> int:
    """Return the number of distinct item keys served to any cabin in the frame."""
    return len({item.key for pack in frame.packs.values() for item in pack.items})


def exempt_count(frame: FrameRecord) -> int:
    """Return the number of distinct exempt items in the frame."""
    return len({item.key for pack in frame.packs.values() for item in pack.items if item.exempt})


def alarms_from_diagnostics(recording: Recording) -> np.ndarray | None:
    """Return the alarm per recorded tick from `exempt_overflow` statuses, or None without any."""
    received = [frame.received for frame in recording.frames]
    ticks = recording.ticks
    observations: list[tuple[int, bool]] = []
    for status in recording.diagnostics:
        if ALARM_KEY not in status.values:
            continue
        index = bisect.bisect_right(received, status.received) - 1
        tick = ticks[index] if index >= 0 else ticks[0]
        observations.append((tick, status.values[ALARM_KEY].strip().lower() in TRUE_TEXTS))
    if not observations:
        return None
    observations.sort(key=lambda observation: observation[0])
    seen = [tick for tick, _ in observations]
    alarms = np.zeros(len(ticks), dtype=bool)
    for i, tick in enumerate(ticks):
        index = bisect.bisect_right(seen, tick) - 1
        alarms[i] = index >= 0 and observations[index][1]
    return alarms


def capacity_alarms(recording: Recording,
                    capacity: int | None = None) -> tuple[np.ndarray | None, str]:
    """Return (alarm per recorded tick or None, where it came from); see the module docstring."""
    alarms = alarms_from_diagnostics(recording) if recording.frames else None
    if alarms is not None:
        return alarms, f'/diagnostics ({ALARM_KEY})'
    if capacity is not None:
        return (np.array([exempt_count(f) > capacity for f in recording.frames], dtype=bool),
                f'packs: exempt items > capacity {capacity}')
    return None, f'unknown: no {ALARM_KEY} in /diagnostics and no capacity given'


def tick_series(recording: Recording, capacity: int | None = None) -> TickSeries:
    """Return the per-tick series of the recording."""
    frames = recording.frames
    ticks = np.array(recording.ticks, dtype=np.int64)
    evicted_per_tick: dict[int, int] = {}
    for eviction in recording.evictions:
        evicted_per_tick[eviction.tick] = evicted_per_tick.get(eviction.tick, 0) + 1
    # Every absence a pack reports: listed, or counted in a glob's summary.
    counts = [[pack.absent_counts() for pack in f.packs.values()] for f in frames]
    reasons = sorted({reason for packs in counts for pack in packs for reason in pack})
    missing_by_reason = {reason: np.array([sum(pack[reason] for pack in packs)
                                           for packs in counts], dtype=np.int64)
                         for reason in reasons}
    alarms, alarm_source = capacity_alarms(recording, capacity)
    return TickSeries(
        ticks=ticks,
        working_set=np.array([working_set_size(f) for f in frames], dtype=np.int64),
        items_per_cabin={cabin: np.array([len(f.packs[cabin].items) if cabin in f.packs else 0
                                          for f in frames], dtype=np.int64)
                         for cabin in recording.cabins},
        evictions=np.array([evicted_per_tick.get(int(t), 0) for t in ticks], dtype=np.int64),
        missing=np.array([sum(sum(pack.values()) for pack in packs) for packs in counts],
                         dtype=np.int64),
        missing_by_reason=missing_by_reason,
        alarms=alarms,
        alarm_source=alarm_source,
    )
