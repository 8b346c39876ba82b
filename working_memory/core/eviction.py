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
        while time passes. `seq` increases with every use and breaks ties. The
        key is a tuple of numbers (the set negates it to rank evicted items).
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
    """One item forgotten by the working set: a transition from present to evicted.

    `last_used` is when the item was last served or refreshed, `stamp` when it
    was evicted, both effective times [s] (see `TimeBase`), so `stamp -
    last_used` is how long it had been unused; `reason` is 'capacity' or
    'size_budget'.
    """

    tick: int
    key: str
    importance: float
    last_used: float
    reason: str
    stamp: float


@dataclass(frozen=True, slots=True)
class Readmission:
    """An evicted item that came back: the transition from evicted to present.

    `tick` is the tick it came back in, `evicted_tick` the tick of the eviction
    it returns from, `stamp` the effective time of its return [s].
    """

    tick: int
    key: str
    evicted_tick: int
    stamp: float


@dataclass(frozen=True, slots=True)
class Settlement:
    """What one `settle()` changed: evictions lowest value first, then readmissions."""

    evicted: tuple[EvictionRecord, ...]
    readmitted: tuple[Readmission, ...]


class _Evicted:
    """An evicted item kept with its rank, so it competes later as it was when last used."""

    __slots__ = ('item', 'entry', 'record', 'rank')

    def __init__(self, item: Item, entry: tuple, record: EvictionRecord):
        self.item, self.entry, self.record = item, entry, record
        # Max-heap order: the most valuable evicted item on top.
        self.rank = tuple(-part for part in entry[:-1]) + (entry[-1],)


def _check_size_budget(size_budget: int | None) -> int | None:
    return None if size_budget is None else check_int(size_budget, 'size_budget', 1)


class WorkingSet:
    """Bounded set of working items that forgets by value and records every transition.

    Capacity counts all items, exempt ones included. After every `put` and
    `set_limits` the lowest item by `policy` is evicted until at most
    `capacity` items remain and their serialized values fit `size_budget`
    [bytes]; a `put(defer_eviction=True)` leaves that to a later `settle()`,
    so a batch of puts (one tick) evicts once. Exempt items (key starts with one
    of `exempt_prefixes`, or put with `exempt=True`) are kept outside the
    eviction heap, so every heap entry is a legal victim; when exempt items
    alone exceed a limit they are all kept and `capacity_alarm` is raised.

    Eviction is an event. An evicted item is kept aside with the rank it had
    when it was last used; being wanted again does not refresh it. It comes
    back only through `settle(candidates)`, competing with that old rank, or
    through a `put` with new content (new information is fresh); either way a
    `Readmission` records the return. A settlement behaves as if the
    candidates were present again: the lowest items go, present ones with an
    `EvictionRecord`, candidates and re-put evicted items silently (they were
    never back, so evicting them again is no event). A steady over-capacity
    selection therefore evicts once, not every tick.

    Time: each `put`/`touch` passes its ROS time `now` [s] through a
    `TimeBase`; items' `last_used`, the heap order and every record use the
    effective time, so a simulation reset (time jumping back) makes nothing
    look newer or older than it is.

    Cost: put, touch and each eviction or readmission are O(log n) (binary
    heaps with lazy invalidation, compacted when more than half is stale); a
    settlement looks only at the evicted items that outrank the lowest present
    one, plus any unwanted ones ranked above them.

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
        # Evicted items not since readmitted, and their max-heap (lazy, like the min-heap).
        self._evicted: dict[str, _Evicted] = {}
        self._evicted_heap: list[tuple] = []
        # Evicted items put back in the current batch: key -> the eviction they return from.
        self._returning: dict[str, EvictionRecord] = {}
        self._readmissions: dict[str, Readmission] = {}
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
        """The effective timeline of every time this set keeps."""
        return self._time

    @property
    def tick(self) -> int:
        """Decision tick written into eviction records; the owner sets it each tick."""
        return self._tick

    @tick.setter
    def tick(self, tick: int):
        self._tick = check_int(tick, 'tick', 0)

    def set_limits(self, capacity: int, size_budget: int | None) -> list[EvictionRecord]:
        """Change the limits at runtime and evict to fit; return the evictions.

        A raised limit readmits nothing by itself: the next `settle()` brings
        back the most valuable evicted items its caller still wants.
        """
        capacity = check_int(capacity, 'capacity', 1)
        self._size_budget = _check_size_budget(size_budget)
        self._capacity = capacity
        return list(self.settle().evicted)

    # -- contents -----------------------------------------------------------

    def put(self, key: str, value: Any, *, importance: float, now: float,
            source: Source | str = Source.BOARD, stamp: float | None = None,
            stale: bool = False, exempt: bool = False,
            size: int | None = None, defer_eviction: bool = False) -> list[EvictionRecord]:
        """Insert an item, or replace a present or evicted key's item; then evict to fit.

        With `defer_eviction` the set may stay over its limits until the caller
        runs `settle()`: a batch of puts (one tick) then forgets only what is
        least valuable after the whole batch, never an item the batch re-adds.

        The item takes the new value, importance and flags and is used at
        `now` [s]. An evicted key put again competes as new information: it is
        back (a `Readmission`) if it survives the settlement, else it stays
        evicted without a second record. `stamp` [s] (when the value was
        produced) defaults to `now`; `size` [bytes] defaults to the length of
        the value's compact JSON. Returns the evictions this put caused, lowest
        value first (the new item itself is one of them when it is a new key and
        the least valuable). Bad arguments raise ValueError naming them, and
        nothing changes.
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
                    f'item {key!r}: value is not strict JSON: {error}') from None
        else:
            check_int(size, f'item {key!r}: size', 0)
        effective = self._time.observe(now)
        item = Item(key, value, source, importance, float(now) if stamp is None else float(stamp),
                    effective, bool(stale), bool(exempt) or key.startswith(self._exempt_prefixes),
                    size)
        old = self._items.get(key)
        if old is not None:
            self._forget(old)
        else:
            evicted = self._evicted.pop(key, None)
            if evicted is not None:
                self._returning[key] = evicted.record
                self._compact_evicted()
        self._store(item, effective)
        return [] if defer_eviction else list(self.settle().evicted)

    def settle(self, candidates: Iterable[str] = ()) -> Settlement:
        """Evict until the limits hold, readmitting the evicted `candidates` that earn a place.

        `candidates` are keys the caller wants again unchanged (others are
        ignored): each competes with the rank it had when last used. The
        result is that of putting them back and evicting the lowest items
        until the count fits, then until the size budget does; evictions of
        present items are recorded, candidates and evicted keys re-put in this
        batch that lose again stay evicted silently, and those that stay are
        readmitted. Cost: O(log n) per eviction and readmission.
        """
        wanted = {key for key in candidates if key in self._evicted}
        evicted: list[EvictionRecord] = []
        while len(self._items) > self._capacity and self._entries:
            self._evict_lowest(CAPACITY, evicted)
        if wanted:
            self._readmit_best(wanted, evicted)
        if self._size_budget is not None:
            while self._size_bytes > self._size_budget and self._entries:
                self._evict_lowest(SIZE_BUDGET, evicted)
        readmitted = []
        effective = self._time.now
        for key, record in self._returning.items():
            readmission = Readmission(self._tick, key, record.tick, effective)
            self._readmissions[key] = readmission
            readmitted.append(readmission)
        self._returning.clear()
        return Settlement(tuple(evicted), tuple(readmitted))

    def evict_to_fit(self) -> list[EvictionRecord]:
        """Evict until the limits hold (after deferred puts); return the evictions."""
        return list(self.settle().evicted)

    def touch(self, key: str, now: float) -> None:
        """Mark `key` as used at `now` [s]; raise KeyError when it is not present."""
        old = self._items.get(key)
        if old is None:
            raise KeyError(f'touch: key {key!r} is not in the working set')
        effective = self._time.observe(now)
        item = Item(key, old.value, old.source, old.importance, old.stamp, effective, old.stale,
                    old.exempt, old.size)
        self._items[key] = item
        if not item.exempt:
            self._push(item, effective)

    def touch_many(self, keys: Iterable[str], now: float) -> None:
        """Mark each of `keys` used at `now` [s], in order (as `touch` one after the other)."""
        effective = self._time.observe(now)
        items = self._items
        for key in keys:
            old = items.get(key)
            if old is None:
                raise KeyError(f'touch: key {key!r} is not in the working set')
            item = Item(key, old.value, old.source, old.importance, old.stamp, effective,
                        old.stale, old.exempt, old.size)
            items[key] = item
            if not item.exempt:
                self._push(item, effective)

    def mark_stale(self, key: str) -> None:
        """Flag a present `key` stale without using it: it keeps its rank and ages.

        A stale item is never served, so nothing refreshes it: it keeps the rank
        of its last use and sinks while others are used. Raises KeyError when
        `key` is not present.
        """
        old = self._items.get(key)
        if old is None:
            raise KeyError(f'mark_stale: key {key!r} is not in the working set')
        self._items[key] = Item(key, old.value, old.source, old.importance, old.stamp,
                                old.last_used, True, old.exempt, old.size)

    def get(self, key: str) -> Item | None:
        """Return the item for `key` without marking it used, or None."""
        return self._items.get(key)

    def remove(self, key: str) -> Item | None:
        """Drop `key`, present or evicted, because the truth removed it (not an eviction).

        Returns the present item, or None.
        """
        self._readmissions.pop(key, None)
        self._returning.pop(key, None)
        if self._evicted.pop(key, None) is not None:
            self._compact_evicted()
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

    # -- evicted items ------------------------------------------------------

    def evicted_item(self, key: str) -> Item | None:
        """Return the item of an evicted, not since readmitted `key` as it was last put, or None."""
        evicted = self._evicted.get(key)
        return None if evicted is None else evicted.item

    def evicted_items(self) -> list[Item]:
        """Return the items evicted and not since readmitted."""
        return [evicted.item for evicted in self._evicted.values()]

    def eviction_of(self, key: str) -> EvictionRecord | None:
        """Return the eviction that keeps `key` out now, or None when it is not evicted."""
        evicted = self._evicted.get(key)
        return None if evicted is None else evicted.record

    def readmission(self, key: str) -> Readmission | None:
        """Return how a present `key` came back after its latest eviction, or None."""
        return self._readmissions.get(key)

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
        self._push_entry(self._policy.sort_key(item.importance, effective, self._seq)
                         + (item.key,))

    def _push_entry(self, entry: tuple) -> None:
        self._entries[entry[-1]] = entry
        heap = self._heap
        heapq.heappush(heap, entry)
        if len(heap) > 2 * len(self._entries) + _COMPACT_SLACK:
            # Rebuild from live entries only: O(n) once per n stale pushes.
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)

    def _lowest(self) -> tuple:
        """Return the live heap entry of the least valuable present item (there is one)."""
        heap, entries = self._heap, self._entries
        while entries.get(heap[0][-1]) is not heap[0]:
            heapq.heappop(heap)
        return heap[0]

    def _evict_lowest(self, reason: str, records: list[EvictionRecord]) -> None:
        """Evict the lowest present item; record it unless it was only returning."""
        entry = self._lowest()
        heapq.heappop(self._heap)
        key = entry[-1]
        item = self._items[key]
        self._drop(item)
        self._readmissions.pop(key, None)
        record = self._returning.pop(key, None)
        if record is None:
            record = EvictionRecord(self._tick, key, item.importance, item.last_used, reason,
                                    self._time.now)
            self._record(record)
            records.append(record)
        evicted = _Evicted(item, entry, record)
        self._evicted[key] = evicted
        heapq.heappush(self._evicted_heap, evicted.rank)

    def _readmit_best(self, wanted: set[str], records: list[EvictionRecord]) -> None:
        """Bring back wanted evicted items, best first, while there is room or they outrank."""
        heap, skipped = self._evicted_heap, []
        while heap:
            rank = heap[0]
            key = rank[-1]
            evicted = self._evicted.get(key)
            if evicted is None or evicted.rank is not rank:
                heapq.heappop(heap)  # stale: readmitted, re-put or removed since
                continue
            if key not in wanted:
                skipped.append(heapq.heappop(heap))
                continue
            full = len(self._items) >= self._capacity
            if full and not (self._entries and self._lowest() < evicted.entry):
                break
            heapq.heappop(heap)
            del self._evicted[key]
            self._returning[key] = evicted.record
            item = evicted.item
            self._items[key] = item
            self._size_bytes += item.size
            # The rank it had when last used: selection alone refreshes nothing.
            self._push_entry(evicted.entry)
            if full:
                self._evict_lowest(CAPACITY, records)
        for rank in skipped:
            heapq.heappush(heap, rank)

    def _compact_evicted(self) -> None:
        if len(self._evicted_heap) > 2 * len(self._evicted) + _COMPACT_SLACK:
            self._evicted_heap = [evicted.rank for evicted in self._evicted.values()]
            heapq.heapify(self._evicted_heap)

    def _record(self, record: EvictionRecord) -> None:
        if len(self._log) == self._log_limit:
            dropped = self._log.popleft()
            if self._last_eviction.get(dropped.key) is dropped:
                del self._last_eviction[dropped.key]
        self._log.append(record)
        self._last_eviction[record.key] = record
        self._evictions_total += 1
