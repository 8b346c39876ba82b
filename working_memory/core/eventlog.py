"""The working memory's bounded, time-ordered copy of the robot's event log."""

from __future__ import annotations

import bisect
import dataclasses
import math
import threading
from collections import Counter
from typing import Any, Iterable

from working_memory.core.checks import check_int
from working_memory.core.frozen import check_json, deep_freeze
from working_memory.core.items import Event, EventKind, value_text
from working_memory.core.timebase import TimeBase


class EventLog:
    """Events ordered by (effective stamp, seq), holding at most `limit`; thread-safe.

    `append` assigns each event the next `seq`; a late event is inserted at
    its time, so windows stay ordered. Beyond `limit` the oldest events are
    dropped and counted in `dropped`, never silently. Events a writer re-sends
    to a restarted node come through `take_answered`: an event the log holds
    already (the same stamp and content) is taken once, and the live copy of one
    taken from an answer first is not taken again; those copies are counted in
    `duplicates`. Live events are all taken, repeats included. With a `timebase` (the
    working set's) each event's stamp is placed on the effective timeline on
    arrival (`TimeBase.place`), and windows and `last_stamp` are effective times
    [s], so a clock reset neither hides old events nor reorders new ones.
    """

    def __init__(self, limit: int, timebase: TimeBase | None = None):
        self._timebase = timebase
        self._limit = check_int(limit, 'limit', 1)
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._keys: list[tuple[float, int]] = []  # (effective stamp, seq) of each event, for bisect
        self._next_seq = 0
        self._dropped = 0
        self._duplicates = 0
        # identity() -> copies taken from writers' answers whose live copy has not come (a
        # live event is hashed only while this holds anything: after a restart).
        self._answered: Counter[tuple] = Counter()
        self._last_stamp: dict[EventKind, float] = {}

    def append(self, event: Event) -> Event | None:
        """Store a live `event` with the next seq; return the stored (frozen, numbered) event.

        None when it is the live copy of an event taken from a writer's answer first.
        """
        return self._append(event, answered=False)

    def take_answered(self, events: Iterable[Event]) -> list[Event]:
        """Store the events of a writer's answer the log does not hold; return those stored.

        An event held already, as many times as the answer has it, is a copy.
        """
        events = list(events)
        identities = [_event_identity(event) for event in events]
        wanted = set(identities)
        with self._lock:   # an answer is rare (a restart): the held events are counted now
            have = Counter(identity for identity in (_identity(held, held.detail)
                                                     for held in self._events)
                           if identity in wanted)
        stored = []
        for event, identity in zip(events, identities):
            if have[identity] > 0:
                have[identity] -= 1
                with self._lock:
                    self._duplicates += 1
                continue
            stored.append(self._append(event, answered=True))
        return stored

    def _append(self, event: Event, answered: bool) -> Event | None:
        if not isinstance(event, Event):
            raise ValueError(f'event: must be an Event, got {event!r}')
        check_json(event.detail, f'event {event.key!r}: detail')
        detail = deep_freeze(event.detail)
        identity = _identity(event, detail) if answered or self._answered else None
        with self._lock:
            if identity is None and self._answered:   # an answer came meanwhile
                identity = _identity(event, detail)
            if answered:
                self._answered[identity] += 1
            elif identity is not None and self._answered[identity] > 0:
                self._answered[identity] -= 1
                self._duplicates += 1
                return None
            effective = (event.effective_stamp if self._timebase is None
                         else self._timebase.place(event.stamp))
            stored = dataclasses.replace(event, seq=self._next_seq, detail=detail,
                                         effective_stamp=effective)
            self._next_seq += 1
            key = (stored.effective_stamp, stored.seq)
            index = bisect.bisect_right(self._keys, key)
            self._keys.insert(index, key)
            self._events.insert(index, stored)
            if len(self._events) > self._limit:
                if self._answered:   # a copy that never came live is not waited for past it
                    self._answered.pop(_identity(self._events[0], self._events[0].detail), None)
                del self._keys[0], self._events[0]
                self._dropped += 1
            last = self._last_stamp.get(stored.kind)
            if last is None or stored.effective_stamp > last:
                self._last_stamp[stored.kind] = stored.effective_stamp
        return stored

    def extend(self, events: Iterable[Event]) -> list[Event]:
        """Append each of the live `events`; return the stored events."""
        return [stored for stored in map(self.append, events) if stored is not None]

    def window(self, since: float, until: float, kinds: Iterable[EventKind] | None = None,
               max_count: int = 0) -> tuple[Event, ...]:
        """Return events with `since` <= effective stamp <= `until` [s], oldest first.

        `kinds` (None: all) filters by kind; `max_count` > 0 keeps only the
        newest that many. Cost: O(log n) to find the window plus its length.
        """
        check_int(max_count, 'max_count', 0)
        kinds = None if kinds is None else frozenset(kinds)
        with self._lock:
            low = bisect.bisect_left(self._keys, (since, -1))
            high = bisect.bisect_right(self._keys, (until, math.inf))
            if kinds is None:
                low = max(low, high - max_count) if max_count else low
                return tuple(self._events[low:high])
            newest_first = []
            for index in range(high - 1, low - 1, -1):
                event = self._events[index]
                if event.kind in kinds:
                    newest_first.append(event)
                    if len(newest_first) == max_count:
                        break
        return tuple(reversed(newest_first))

    def logged(self, kind: str, key: str, seq: int) -> bool | None:
        """Say whether event number `seq` was a `kind` (its value) event of `key`.

        None when the log no longer holds number `seq` (it was, but its kind and
        key are gone with it); False for a number not yet given out.
        """
        with self._lock:
            if not 0 <= seq < self._next_seq:
                return False
            for event in self._events:
                if event.seq == seq:
                    return event.kind.value == kind and event.key == key
        return None

    def last_stamp(self, kind: EventKind) -> float | None:
        """Return the effective stamp [s] of the newest `kind` event ever appended, or None."""
        with self._lock:
            return self._last_stamp.get(kind)

    @property
    def limit(self) -> int:
        """Maximum number of events held."""
        return self._limit

    @property
    def dropped(self) -> int:
        """Number of oldest events dropped because the log was full."""
        return self._dropped

    @property
    def duplicates(self) -> int:
        """Number of events not stored because the log held them already."""
        return self._duplicates

    def __len__(self) -> int:
        return len(self._events)


def _event_identity(event: Event) -> tuple:
    """Return `_identity` of an event not stored yet (its detail frozen as the log keeps it)."""
    return _identity(event, deep_freeze(event.detail))


def _identity(event: Event, detail: Any) -> tuple:
    """Return what tells one event from another: its stamp and content (not its seq)."""
    importance = event.importance
    return (event.stamp, event.kind, event.source, event.key, value_text(detail), event.tags,
            None if importance is None or math.isnan(importance) else importance)
