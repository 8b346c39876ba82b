"""Value-based forgetting: eviction policies and the bounded working set.

Over capacity the working set drops the item of lowest value, never simply the
oldest one: with FIFO a fresh constraint would be pushed out by a reading that
is updated many times a second. Goal and safety items are exempt for life.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from working_memory.core.checks import check_int, is_finite_number
from working_memory.core.items import Item, Source, check_importance, json_size
from working_memory.core.timebase import TimeBase

CAPACITY = 'capacity'
SIZE_BUDGET = 'size_budget'

_LN2 = math.log(2.0)
# Below this heap size stale entries are not worth a rebuild.
_COMPACT_SLACK = 64


class EvictionPolicy(Protocol):
    """Orders items for eviction; the item with the lowest key goes first."""

    def sort_key(self, importance: float, last_used: float, seq: int) -> tuple:
        """Return the eviction key of an item used at effective time `last_used` [s].

        The key must not depend on the current time, so a stored key stays valid
        while time passes. `seq` increases with every use and breaks ties.
        """


@dataclass(frozen=True, slots=True)
class ImportanceLRU:
    """Lowest importance first; among equal importance the least recently used."""

    def sort_key(self, importance: float, last_used: float, seq: int) -> tuple:
        """Return `(importance, last_used, seq)`."""
        return (importance, last_used, seq)


@dataclass(frozen=True, slots=True)
class HalfLifeBlend:
    """Importance that halves every `half_life_s` [s] without use; lowest first.

    The decayed value importance * 2**(-(now - last_used) / half_life_s)
    orders any two items the same way at every `now`, so its logarithm without
    the common `now` term, ln(importance) + last_used * ln2 / half_life_s, is a
    fixed key.
    """

    half_life_s: float

    def __post_init__(self):
        if not is_finite_number(self.half_life_s) or self.half_life_s <= 0.0:
            raise ValueError(
                f'half_life_s: must be a finite number > 0 s, got {self.half_life_s!r}')

    def sort_key(self, importance: float, last_used: float, seq: int) -> tuple:
        """Return `(ln(max(importance, 1e-9)) + last_used * ln2 / half_life_s, seq)`."""
        return (math.log(max(importance, 1e-9)) + last_used * _LN2 / self.half_life_s, seq)


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    """One item forgotten by the working set.

    `last_used` is the item's ROS time of last use [s]; `stamp` is the
    effective time of the eviction [s] (see `TimeBase`); `reason` is
    'capacity' or 'size_budget'.
    """

    tick: int
    key: str
    importance: float
    last_used: float
    reason: str
    stamp: float


def _check_size_budget(size_budget: int | None) -> int | None:
    return None if size_budget is None else check_int(size_budget, 'size_budget', 1)


class WorkingSet:
    """Bounded set of working items that forgets by value, recording every eviction.

    Capacity counts all items, exempt ones included. After every `put` and
    `set_limits` the lowest item by `policy` is evicted until at most
    `capacity` items remain and their serialized values fit `size_budget`
    [bytes]; a `put(defer_eviction=True)` leaves that to a later
    `evict_to_fit()`, so a batch of puts evicts once. Exempt items (key starts
    with one of `exempt_prefixes`, or put with `exempt=True`) are kept outside
    the eviction heap, so every heap entry
    is a legal victim; when exempt items alone exceed a limit they are all kept
    and `capacity_alarm` is raised.

    Time: each `put`/`touch` passes its ROS time `now` [s] through a
    `TimeBase`, and the effective time orders the heap, so a simulation reset
    (time jumping back) makes nothing look newer than it is. `Item.last_used`
    keeps the ROS time the caller gave.

    Cost: put, touch and each eviction are O(log n) (a binary heap with lazy
    invalidation, compacted when more than half of it is stale).

    Not thread-safe by design: the owner (assembler, frame store) holds the
    lock, and this class stays lock-free and fast.
    """

    def __init__(self, capacity: int, size_budget: int | None = None,
                 exempt_prefixes: Iterable[str] = ('goal', 'safety'),
                 policy: EvictionPolicy = ImportanceLRU(), log_limit: int = 10000):
        self._capacity = check_int(capacity, 'capacity', 1)
        self._size_budget = _check_size_budget(size_budget)
        if isinstance(exempt_prefixes, str):
            raise ValueError(f'exempt_prefixes: must be a sequence of strings, '
                             f'not the string {exempt_prefixes!r}')
        self._exempt_prefixes = tuple(exempt_prefixes)
        for prefix in self._exempt_prefixes:
            if not isinstance(prefix, str) or not prefix:
                # An empty prefix would exempt every key and disable eviction.
                raise ValueError(
                    f'exempt_prefixes: each must be a non-empty string, got {prefix!r}')
        if not callable(getattr(policy, 'sort_key', None)):
            raise ValueError(f'policy: must have a sort_key method, got {policy!r}')
        self._policy = policy
        self._log_limit = check_int(log_limit, 'log_limit', 1)
        self._tick = 0
        self._time = TimeBase()
        self._items: dict[str, Item] = {}
        # Live heap entry of each non-exempt key; any other heap entry is stale.
        self._entries: dict[str, tuple] = {}
        self._heap: list[tuple] = []
        self._seq = 0
        self._size_bytes = 0
        self._exempt_count = 0
        self._exempt_bytes = 0
        self._log: deque[EvictionRecord] = deque()
        self._last_eviction: dict[str, EvictionRecord] = {}
        self._evictions_total = 0

    # -- configuration ------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Maximum number of items (exempt overflow aside)."""
        return self._capacity

    @property
    def size_budget(self) -> int | None:
        """Maximum total size [bytes] of serialized values, or None for no limit."""
        return self._size_budget

    @property
    def exempt_prefixes(self) -> tuple[str, ...]:
        """Key prefixes that make an item exempt from eviction."""
        return self._exempt_prefixes

    @property
    def policy(self) -> EvictionPolicy:
        """The eviction policy."""
        return self._policy

    @property
    def timebase(self) -> TimeBase:
        """The effective timeline used for ordering and eviction stamps."""
        return self._time

    @property
    def tick(self) -> int:
        """Decision tick written into eviction records; the owner sets it each tick."""
        return self._tick

    @tick.setter
    def tick(self, tick: int):
        self._tick = check_int(tick, 'tick', 0)

    def set_limits(self, capacity: int, size_budget: int | None) -> list[EvictionRecord]:
        """Change the limits at runtime and evict to fit; return the evictions."""
        capacity = check_int(capacity, 'capacity', 1)
        self._size_budget = _check_size_budget(size_budget)
        self._capacity = capacity
        return self._evict_to_fit()

    # -- contents -----------------------------------------------------------

    def put(self, key: str, value: Any, *, importance: float, now: float,
            source: Source | str = Source.BOARD, stamp: float | None = None,
            stale: bool = False, exempt: bool = False,
            size: int | None = None, defer_eviction: bool = False) -> list[EvictionRecord]:
        """Insert an item, or replace an existing key's item; then evict to fit.

        With `defer_eviction` the set may stay over its limits until the caller
        runs `evict_to_fit()`: a batch of puts (one tick) then forgets only what
        is least valuable after the whole batch, never an item the batch re-adds.

        A replaced item takes the new value, importance and flags and is used
        at `now` [s]. `stamp` [s] (when the value was produced) defaults to
        `now`; `size` [bytes] defaults to the length of the value's compact
        JSON. Returns the evictions this put caused, lowest value first (the
        new item itself is one of them when it is the least valuable).
        Bad arguments raise ValueError naming them, and nothing changes.
        """
        if not isinstance(key, str) or not key:
            raise ValueError(f'key: must be a non-empty string, got {key!r}')
        if importance is None:
            raise ValueError(f'item {key!r}: importance must be in [0, 1], got None')
        check_importance(importance, f'item {key!r}')
        if stamp is not None and not is_finite_number(stamp):
            raise ValueError(
                f'item {key!r}: stamp must be a finite time in seconds, got {stamp!r}')
        try:
            source = source if source.__class__ is Source else Source(source)
        except ValueError:
            raise ValueError(f'item {key!r}: source must be one of '
                             f'{[member.value for member in Source]}, got {source!r}') from None
        if size is None:
            try:
                size = json_size(value)
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f'item {key!r}: value is not JSON-serializable: {error}') from None
        else:
            check_int(size, f'item {key!r}: size', 0)
        effective = self._time.observe(now)
        now = float(now)
        item = Item(key, value, source, importance, now if stamp is None else float(stamp),
                    now, bool(stale), bool(exempt) or key.startswith(self._exempt_prefixes), size)
        old = self._items.get(key)
        if old is not None:
            self._forget(old)
        self._store(item, effective)
        return [] if defer_eviction else self._evict_to_fit()

    def evict_to_fit(self) -> list[EvictionRecord]:
        """Evict until the limits hold (after deferred puts); return the evictions."""
        return self._evict_to_fit()

    def touch(self, key: str, now: float) -> None:
        """Mark `key` as used at `now` [s]; raise KeyError when it is not present."""
        old = self._items.get(key)
        if old is None:
            raise KeyError(f'touch: key {key!r} is not in the working set')
        effective = self._time.observe(now)
        item = Item(key, old.value, old.source, old.importance, old.stamp, float(now), old.stale,
                    old.exempt, old.size)
        self._items[key] = item
        if not item.exempt:
            self._push(item, effective)

    def get(self, key: str) -> Item | None:
        """Return the item for `key` without marking it used, or None."""
        return self._items.get(key)

    def remove(self, key: str) -> Item | None:
        """Drop `key` because the truth removed it (not an eviction); return the item or None."""
        item = self._items.get(key)
        if item is not None:
            self._drop(item)
        return item

    def keys(self) -> list[str]:
        """Return the present keys in insertion order."""
        return list(self._items)

    def items(self) -> list[Item]:
        """Return the present items in key insertion order."""
        return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    @property
    def size_bytes(self) -> int:
        """Total size [bytes] of the serialized values of all present items."""
        return self._size_bytes

    @property
    def capacity_alarm(self) -> bool:
        """True when exempt items alone exceed the capacity or the size budget."""
        return self._exempt_count > self._capacity or (
            self._size_budget is not None and self._exempt_bytes > self._size_budget)

    # -- eviction log -------------------------------------------------------

    @property
    def eviction_log(self) -> tuple[EvictionRecord, ...]:
        """The latest `log_limit` evictions, oldest first (a copy)."""
        return tuple(self._log)

    @property
    def evictions_total(self) -> int:
        """Number of evictions since construction, including those gone from the log."""
        return self._evictions_total

    def last_eviction(self, key: str) -> EvictionRecord | None:
        """Return the latest eviction of `key` still in the log, or None."""
        return self._last_eviction.get(key)

    # -- internals ----------------------------------------------------------

    def _store(self, item: Item, effective: float) -> None:
        self._items[item.key] = item
        self._size_bytes += item.size
        if item.exempt:
            self._exempt_count += 1
            self._exempt_bytes += item.size
        else:
            self._push(item, effective)

    def _drop(self, item: Item) -> None:
        self._forget(item)
        del self._items[item.key]

    def _forget(self, item: Item) -> None:
        """Undo the bookkeeping of a present item (its heap entry turns stale)."""
        self._size_bytes -= item.size
        if item.exempt:
            self._exempt_count -= 1
            self._exempt_bytes -= item.size
        else:
            del self._entries[item.key]

    def _push(self, item: Item, effective: float) -> None:
        self._seq += 1
        entry = self._policy.sort_key(item.importance, effective, self._seq) + (item.key,)
        self._entries[item.key] = entry
        heap = self._heap
        heapq.heappush(heap, entry)
        if len(heap) > 2 * len(self._entries) + _COMPACT_SLACK:
            # Rebuild from live entries only: O(n) once per n stale pushes.
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)

    def _evict_to_fit(self) -> list[EvictionRecord]:
        records = []
        while len(self._items) > self._capacity and self._entries:
            records.append(self._evict_lowest(CAPACITY))
        if self._size_budget is not None:
            while self._size_bytes > self._size_budget and self._entries:
                records.append(self._evict_lowest(SIZE_BUDGET))
        return records

    def _evict_lowest(self, reason: str) -> EvictionRecord:
        heap, entries = self._heap, self._entries
        while True:
            entry = heapq.heappop(heap)
            key = entry[-1]
            if entries.get(key) is entry:
                break
        item = self._items[key]
        self._drop(item)
        record = EvictionRecord(self._tick, key, item.importance, item.last_used, reason,
                                self._time.now)
        self._record(record)
        return record

    def _record(self, record: EvictionRecord) -> None:
        if len(self._log) == self._log_limit:
            dropped = self._log.popleft()
            if self._last_eviction.get(dropped.key) is dropped:
                del self._last_eviction[dropped.key]
        self._log.append(record)
        self._last_eviction[record.key] = record
        self._evictions_total += 1
