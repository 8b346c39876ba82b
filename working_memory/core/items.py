"""Value types shared by the core: items, board entries, events and missing-item reports."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from working_memory.core.checks import is_finite_number, is_unit_interval


class Source(str, enum.Enum):
    """Where a working item came from."""

    BOARD = 'board'
    MAP = 'map'
    LOG = 'log'


class EventKind(str, enum.Enum):
    """Kinds of event-log entries (LogEvent constants in the ROS interface)."""

    ACTION = 'ACTION'
    FAILURE = 'FAILURE'
    CONSTRAINT = 'CONSTRAINT'
    OBSERVATION = 'OBSERVATION'
    GOAL = 'GOAL'
    ALARM = 'ALARM'


class MissingReason(str, enum.Enum):
    """Why a required item is not in a cabin's pack."""

    NEVER_SEEN = 'NEVER_SEEN'
    STALE = 'STALE'
    EVICTED = 'EVICTED'
    OUT_OF_SCOPE = 'OUT_OF_SCOPE'
    INJECTED_DROP = 'INJECTED_DROP'


# One encoder for every call: json.dumps with options builds a new encoder each time.
# ensure_ascii (the default) makes the text's length its byte length.
_COMPACT_JSON = json.JSONEncoder(separators=(',', ':'), sort_keys=True)


def json_size(value: Any) -> int:
    """Return the byte length of the compact JSON text of `value`."""
    return len(_COMPACT_JSON.encode(value))


def check_importance(importance: float | None, what: str) -> None:
    """Raise ValueError unless `importance` is None or a finite number in [0, 1]."""
    if importance is None:
        return
    if not is_unit_interval(importance):
        raise ValueError(f'{what}: importance must be in [0, 1], got {importance!r}')


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of the working set.

    Times are seconds of ROS time: `stamp` is when the value was produced,
    `last_used` when the working set last served or refreshed it.
    """

    key: str
    value: Any
    source: Source
    importance: float
    stamp: float
    last_used: float
    stale: bool = False
    exempt: bool = False
    size: int = 0


@dataclass(frozen=True, slots=True)
class BoardEntry:
    """The state board's latest value for one key."""

    key: str
    value: Any
    stamp: float
    importance: float | None = None  # None: use the cabin manifest's weight
    ttl: float = 0.0                 # [s] freshness after `stamp`; 0 never goes stale
    tags: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.key:
            raise ValueError('board entry: key must not be empty')
        check_importance(self.importance, f'board entry {self.key!r}')
        if not (is_finite_number(self.ttl) and self.ttl >= 0.0):
            raise ValueError(f'board entry {self.key!r}: ttl must be >= 0 s, got {self.ttl!r}')

    def is_stale(self, now: float) -> bool:
        """Return True when the entry's ttl has run out at `now` [s]."""
        return self.ttl > 0.0 and now - self.stamp > self.ttl

    def stale_for(self, now: float) -> float:
        """Return how long [s] the entry has been stale at `now` (0 when fresh)."""
        return max(0.0, now - self.stamp - self.ttl) if self.ttl > 0.0 else 0.0


@dataclass(frozen=True, slots=True)
class Event:
    """One event-log entry; `seq` is assigned by the log on arrival."""

    stamp: float
    kind: EventKind
    source: str = ''
    key: str = ''
    detail: Any = None
    importance: float | None = None  # None: use the cabin manifest's weight
    tags: tuple[str, ...] = ()
    seq: int = -1

    def __post_init__(self):
        if not isinstance(self.kind, EventKind):
            raise ValueError(f'event {self.key!r}: kind must be an EventKind, got {self.kind!r}')
        check_importance(self.importance, f'event {self.kind.value} {self.key!r}')


@dataclass(frozen=True, slots=True)
class Missing:
    """A required key absent from a pack, with the reason and a human-readable detail."""

    key: str
    reason: MissingReason
    detail: str = field(default='')
