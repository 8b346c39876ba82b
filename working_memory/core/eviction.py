"""Value-based forgetting: eviction policies and the bounded working set.

Over capacity the working set drops the item of lowest value, never simply the
oldest one: with FIFO a fresh constraint would be pushed out by a reading that
is updated many times a second. Goal and safety items are exempt for life.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from types import MemberDescriptorType
from typing import Any, Iterable, NamedTuple, Protocol

from working_memory.core.checks import check_int, is_finite_number
from working_memory.core.frozen import FrozenDict
from working_memory.core.items import Item, Source, check_importance, json_size
from working_memory.core.ranking import (EXEMPT, HeapRanking, IMPORTANCE, ITEM, KEY, LAST_USED,
                                         LevelRanking, NUMBER, OUT, RECORD, SEQ, SIZE, STALE,
                                         STAMP, VALUE, _Level)
from working_memory.core.timebase import TimeBase

CAPACITY = 'capacity'
SIZE_BUDGET = 'size_budget'
MAX_ITEM_SIZE = 2**40   # [bytes] an item's size given to put (1 TiB: no JSON value is near it)

_LN2 = math.log(2.0)
# tuple.__new__(Item, fields) makes a named tuple without its generated __new__ (a Python call).
_new = tuple.__new__


class EvictionPolicy(Protocol):
    """Orders items for eviction; the item with the lowest key goes first."""

    def sort_key(self, importance: float, last_used: float, seq: int) -> tuple:
        """Return the eviction key of an item used at effective time `last_used` [s].

        The key must not depend on the current time, so a stored key stays valid
        while time passes, and must not decrease when the same item is used
        again (a later `last_used`, a higher `seq`): a use never makes an item
        less worth keeping, so the set re-ranks a used item only when it
        reaches the bottom. `seq` increases with every use and breaks ties.
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


class EvictionRecord(NamedTuple):
    """One item forgotten by the working set: a transition from present to evicted.

    `last_used` is when the item was last served or refreshed, `stamp` when it
    was evicted, both effective times [s] (see `TimeBase`), so `stamp -
    last_used` is how long it had been unused; `reason` is 'capacity' or
    'size_budget'. An immutable named tuple: one is made per eviction, and a
    tuple costs a fifth of a frozen dataclass to make.
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


def _check_size_budget(size_budget: int | None) -> int | None:
    return None if size_budget is None else check_int(size_budget, 'size_budget', 1)


class PyWorkingSet:
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

    Cost: O(1) per put, touch, eviction and readmission with `ImportanceLRU`
    (per-importance LRU lists, see `core.ranking`), O(log n) with other
    policies (a heap, re-ranked lazily); a settlement sorts the wanted evicted
    candidates and looks at them best first, until one does not outrank the
    lowest present item. Items are kept in mutable slots and an `Item` is made
    when one is asked for (then kept until the slot changes), so a touch only
    notes the use.

    Not thread-safe by design: the owner (assembler, frame store) holds the
    lock, and this class stays lock-free and fast.

    This class is the reference, all in Python; `WorkingSet` is the same with
    `put` in C when the extension `core._evict` is built (see the end of this
    module).
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
        self._ranking = LevelRanking() if type(policy) is ImportanceLRU else HeapRanking(policy)
        self._log_limit = check_int(log_limit, 'log_limit', 1)
        self._tick = 0
        self._time = TimeBase()
        # The slot (see core.ranking) of every present item and of every evicted one not
        # since readmitted (slot[OUT]): one dict, so a put looks a key up once and an
        # eviction moves nothing. The present non-exempt slots are also in _ranking.
        self._slots: dict[str, list] = {}
        self._present = 0
        # Latest eviction number of keys removed since (the others' slots hold theirs).
        self._removed_numbers: dict[str, int] = {}
        # Evicted items put back in the current batch: key -> the eviction they return from.
        self._returning: dict[str, EvictionRecord] = {}
        self._readmissions: dict[str, Readmission] = {}
        self._seq = 0
        self._size_bytes = 0
        self._exempt_count = 0
        self._exempt_bytes = 0
        # The log is a ring: eviction number n (from 0) is at n % log_limit while n is one of
        # the latest log_limit.
        self._log: list[EvictionRecord] = []
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
        return self._settle(())[0]

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
        if (key.__class__ is str and key and importance.__class__ is float
                and 0.0 <= importance <= 1.0 and source.__class__ is Source and stamp is None
                and size is None):
            # The common call, checked by class alone; anything else takes _checked's path.
            try:
                size = json_size(value)
            except (TypeError, ValueError) as error:
                raise ValueError(f'item {key!r}: value is not strict JSON: {error}') from None
            effective = self._time.observe(now)
            stamp = now if now.__class__ is float else float(now)
        else:
            source, stamp, size = _checked(key, value, importance, source, stamp, size)
            effective = self._time.observe(now)
            if stamp is None:
                stamp = float(now)
        if exempt is False:
            exempt = key.startswith(self._exempt_prefixes)
        elif exempt is not True:
            exempt = bool(exempt) or key.startswith(self._exempt_prefixes)
        self._seq = seq = self._seq + 1
        slots = self._slots
        old = slots.get(key)
        if old is None:
            self._present += 1
            slots[key] = slot = [key, value, source, importance, stamp, effective,
                                 stale if stale.__class__ is bool else bool(stale), exempt,
                                 size, seq, None, False, None, None]
            if self._removed_numbers and key in self._removed_numbers:
                slot[NUMBER] = self._removed_numbers.pop(key)
                slot[RECORD] = self.last_eviction(key)
        else:
            if old[OUT]:
                self._present += 1
                self._returning[key] = old[RECORD]
            else:
                self._forget(old)
            slots[key] = slot = [key, value, source, importance, stamp, effective,
                                 stale if stale.__class__ is bool else bool(stale), exempt,
                                 size, seq, None, False, old[RECORD], old[NUMBER]]
        self._size_bytes += size
        if exempt:
            self._exempt_count += 1
            self._exempt_bytes += size
        else:
            self._ranking.add(slot)
        if defer_eviction:
            return []
        if self._returning or self._size_budget is not None:
            return self._settle(())[0]
        over = self._present - self._capacity
        if over <= 0:
            return []
        if over > 1 or self._present == self._exempt_count:
            return self._settle(())[0]
        # The steady churn: one item over capacity, one eviction, done here in one step.
        records = []
        self._evict_lowest(CAPACITY, records, effective)
        return records

    def settle(self, candidates: Iterable[str] = ()) -> Settlement:
        """Evict until the limits hold, readmitting the evicted `candidates` that earn a place.

        `candidates` are keys the caller wants again unchanged (others are
        ignored): each competes with the rank it had when last used. The
        result is that of putting them back and evicting the lowest items
        until the count fits, then until the size budget does; evictions of
        present items are recorded, candidates and evicted keys re-put in this
        batch that lose again stay evicted silently, and those that stay are
        readmitted. Cost: O(1) (ImportanceLRU) or O(log n) per eviction and
        readmission, plus sorting the wanted evicted candidates.
        """
        evicted, readmitted = self._settle(candidates)
        return Settlement(tuple(evicted), tuple(readmitted))

    def evict_to_fit(self) -> list[EvictionRecord]:
        """Evict until the limits hold (after deferred puts); return the evictions."""
        return self._settle(())[0]

    def touch(self, key: str, now: float) -> None:
        """Mark `key` as used at `now` [s]; raise KeyError when it is not present."""
        self.touch_many((key,), now)

    def touch_many(self, keys: Iterable[str], now: float) -> None:
        """Mark each of `keys` used at `now` [s], in order (as `touch` one after the other)."""
        self._touch(keys, now, present_only=False)

    def touch_present(self, keys: Iterable[str], now: float) -> None:
        """Touch each present key of `keys` not yet used at `now` [s], in order; skip the rest.

        The same as `touch_many` of the present keys whose `last_used` is before
        `now`'s effective time, without making an `Item` of each to find them
        (an assembler marks its whole served set used every tick).
        """
        self._touch(keys, now, present_only=True)

    def _touch(self, keys: Iterable[str], now: float, present_only: bool) -> None:
        effective = self._time.observe(now)
        slots, seq, ranked = self._slots, self._seq, []
        try:
            for key in keys:
                slot = slots.get(key)
                if slot is None or slot[OUT]:
                    if present_only:
                        continue
                    raise KeyError(f'touch: key {key!r} is not in the working set')
                if present_only and not slot[LAST_USED] < effective:
                    continue
                slot[LAST_USED] = effective
                slot[ITEM] = None
                if not slot[EXEMPT]:
                    seq = slot[SEQ] = seq + 1
                    ranked.append(slot)
        finally:
            # The uses before a missing key stand, as with one touch after the other.
            self._seq = seq
            self._ranking.use(ranked)

    def readmissions_of(self, keys: Iterable[str]) -> list[Readmission]:
        """Return how each present key of `keys` came back after its latest eviction, if it did.

        In the order of `keys`; the same as `readmission` of each, without a call
        per key (an assembler asks for every served key, every tick).
        """
        readmissions = self._readmissions
        if not readmissions:
            return []
        return [readmissions[key] for key in keys if key in readmissions]

    def mark_stale(self, key: str) -> None:
        """Flag a present `key` stale without using it: it keeps its rank and ages.

        A stale item is never served, so nothing refreshes it: it keeps the rank
        of its last use and sinks while others are used. Raises KeyError when
        `key` is not present.
        """
        slot = self._slots.get(key)
        if slot is None or slot[OUT]:
            raise KeyError(f'mark_stale: key {key!r} is not in the working set')
        slot[STALE] = True
        slot[ITEM] = None

    def get(self, key: str) -> Item | None:
        """Return the item for `key` without marking it used, or None."""
        slot = self._slots.get(key)
        return None if slot is None or slot[OUT] else slot[ITEM] or _item(slot)

    def items_of(self, keys: Iterable[str]) -> list[Item | None]:
        """Return the item of each of `keys`, None where it is not present (`get` of each)."""
        slots, items = self._slots, []
        append = items.append
        # One loop, no call per item: an assembler asks for every served key every tick, and
        # each touch has dropped the slot's Item (cold, a call costs more than the tuple).
        for key in keys:
            slot = slots.get(key)
            if slot is None or slot[OUT]:
                append(None)
                continue
            item = slot[ITEM]
            if item is None:
                item = slot[ITEM] = _new(Item, slot[:SEQ])
            append(item)
        return items

    def remove(self, key: str) -> Item | None:
        """Drop `key`, present or evicted, because the truth removed it (not an eviction).

        Returns the present item, or None.
        """
        self._readmissions.pop(key, None)
        self._returning.pop(key, None)
        slot = self._slots.pop(key, None)
        if slot is None:
            return None
        if slot[NUMBER] is not None:
            self._removed_numbers[key] = slot[NUMBER]
            if len(self._removed_numbers) > 2 * self._log_limit:
                self._prune_removed_numbers()
        if slot[OUT]:
            return None
        self._present -= 1
        self._forget(slot)
        return slot[ITEM] or _item(slot)

    def keys(self) -> list[str]:
        """Return the present keys in the order they were first put (since any removal)."""
        return [key for key, slot in self._slots.items() if not slot[OUT]]

    def items(self) -> list[Item]:
        """Return the present items in the order of `keys()`."""
        return [slot[ITEM] or _item(slot) for slot in self._slots.values() if not slot[OUT]]

    def __len__(self) -> int:
        return self._present

    def __contains__(self, key: object) -> bool:
        slot = self._slots.get(key)
        return slot is not None and not slot[OUT]

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
        slot = self._slots.get(key)
        return slot[ITEM] or _item(slot) if slot is not None and slot[OUT] else None

    def evicted_items(self) -> list[Item]:
        """Return the items evicted and not since readmitted."""
        if len(self._slots) == self._present:   # none: no scan (the assembler asks per tick)
            return []
        return [slot[ITEM] or _item(slot) for slot in self._slots.values() if slot[OUT]]

    @property
    def evicted_count(self) -> int:
        """How many items are evicted and not since readmitted."""
        return len(self._slots) - self._present

    def is_evicted(self, key: str) -> bool:
        """Return True when `key` is evicted and not since readmitted."""
        slot = self._slots.get(key)
        return slot is not None and slot[OUT]

    def eviction_of(self, key: str) -> EvictionRecord | None:
        """Return the eviction that keeps `key` out now, or None when it is not evicted."""
        slot = self._slots.get(key)
        return slot[RECORD] if slot is not None and slot[OUT] else None

    def readmission(self, key: str) -> Readmission | None:
        """Return how a present `key` came back after its latest eviction, or None."""
        return self._readmissions.get(key)

    def rank_of(self, key: str) -> tuple | None:
        """Return the policy's rank of `key`'s item, present or evicted (None: none or exempt).

        An evicted item keeps the rank of its last use: the rank it competes with.
        """
        slot = self._slots.get(key)
        return None if slot is None or slot[EXEMPT] else self._ranking.rank(slot)

    def lowest_rank(self) -> tuple | None:
        """Return the rank of the present item that goes first (None: none but exempt ones)."""
        if self._present <= self._exempt_count:
            return None
        return self._ranking.rank(self._ranking.lowest())

    def holding(self, key: str, value: Any, stamp: float, importance: float) -> bool | None:
        """Say whether `key`'s item holds `value` (the very object), `stamp` and `importance`.

        True when it is present holding them and not stale, False when it is evicted
        holding them (and not stale), None otherwise (absent, or anything differs): the
        assembler's check before a put, without making an `Item` of the slot.
        """
        slot = self._slots.get(key)
        if (slot is None or slot[VALUE] is not value or slot[STAMP] != stamp
                or slot[IMPORTANCE] != importance or slot[STALE]):
            return None
        return not slot[OUT]

    # -- eviction log -------------------------------------------------------

    @property
    def eviction_log(self) -> tuple[EvictionRecord, ...]:
        """The latest `log_limit` evictions, oldest first (a copy)."""
        oldest = self._evictions_total % self._log_limit if len(self._log) == self._log_limit \
            else 0
        return tuple(self._log[oldest:] + self._log[:oldest])

    @property
    def evictions_total(self) -> int:
        """Number of evictions since construction, including those gone from the log."""
        return self._evictions_total

    def last_eviction(self, key: str) -> EvictionRecord | None:
        """Return the latest eviction of `key` still in the log, or None."""
        slot = self._slots.get(key)
        number = self._removed_numbers.get(key) if slot is None else slot[NUMBER]
        if number is None or number < self._evictions_total - self._log_limit:
            return None
        return self._log[number % self._log_limit]

    # -- internals ----------------------------------------------------------

    def _settle(self, candidates: Iterable[str]) -> tuple[list[EvictionRecord],
                                                          list[Readmission]]:
        """Do `settle(candidates)`; return its evictions and readmissions as lists."""
        slots = self._slots
        wanted = {key for key in candidates if (slot := slots.get(key)) is not None and slot[OUT]}
        evicted: list[EvictionRecord] = []
        stamp = self._time.now
        # Exempt items are never evicted: only the others (those ranked) can go.
        while self._present > self._capacity and self._present > self._exempt_count:
            self._evict_lowest(CAPACITY, evicted, stamp)
        if wanted:
            self._readmit_best(wanted, evicted, stamp)
        if self._size_budget is not None:
            while self._size_bytes > self._size_budget and self._present > self._exempt_count:
                self._evict_lowest(SIZE_BUDGET, evicted, stamp)
        readmitted = []
        if self._returning:
            for key, record in self._returning.items():
                readmission = Readmission(self._tick, key, record.tick, stamp)
                self._readmissions[key] = readmission
                readmitted.append(readmission)
            self._returning.clear()
        return evicted, readmitted

    def _forget(self, slot: list) -> None:
        """Undo the bookkeeping of a present item's slot."""
        self._size_bytes -= slot[SIZE]
        if slot[EXEMPT]:
            self._exempt_count -= 1
            self._exempt_bytes -= slot[SIZE]
        else:
            self._ranking.discard(slot)

    def _evict_lowest(self, reason: str, records: list[EvictionRecord], stamp: float) -> None:
        """Evict the lowest present item at effective `stamp` [s]; record it unless returning."""
        slot = self._ranking.pop_lowest()
        slot[OUT] = True
        self._present -= 1
        self._size_bytes -= slot[SIZE]
        key = slot[KEY]
        if self._readmissions:
            self._readmissions.pop(key, None)
        # One returning (re-put or readmitted this batch) never came back: it stays out by
        # the eviction its slot took over, and that is no new event.
        if not self._returning or self._returning.pop(key, None) is None:
            slot[RECORD] = record = _new(EvictionRecord, (self._tick, key, slot[IMPORTANCE],
                                                          slot[LAST_USED], reason, stamp))
            slot[NUMBER] = number = self._evictions_total
            self._evictions_total = number + 1
            if number < self._log_limit:
                self._log.append(record)
            else:
                self._log[number % self._log_limit] = record
            records.append(record)

    def _readmit_best(self, wanted: set[str], records: list[EvictionRecord],
                      stamp: float) -> None:
        """Bring back wanted evicted items, best first, while there is room or they outrank."""
        slots, ranking = self._slots, self._ranking
        # Each competes with the rank of its last use; evicting the lowest only raises the
        # lowest, so the first that cannot return ends the settlement.
        ranked = sorted(((ranking.rank(slots[key]), key) for key in wanted), reverse=True)
        for rank, key in ranked:
            full = self._present >= self._capacity
            if full and not (self._present > self._exempt_count
                             and ranking.rank(ranking.lowest()) < rank):
                break
            slot = slots[key]
            slot[OUT] = False
            self._present += 1
            self._returning[key] = slot[RECORD]
            self._size_bytes += slot[SIZE]
            ranking.restore(slot)
            if full:
                self._evict_lowest(CAPACITY, records, stamp)

    def _prune_removed_numbers(self) -> None:
        """Forget the removed keys whose latest eviction has left the log."""
        oldest = self._evictions_total - self._log_limit
        self._removed_numbers = {key: number for key, number in self._removed_numbers.items()
                                 if number >= oldest}


def _item(slot: list) -> Item:
    """Make (and keep in the slot) the `Item` of a slot."""
    item = slot[ITEM] = _new(Item, slot[:SEQ])
    return item


def _checked(key: Any, value: Any, importance: Any, source: Any, stamp: Any,
             size: Any) -> tuple[Source, float | None, int]:
    """Check `put`'s arguments in full; return its source, stamp [s] and size [bytes]."""
    if not isinstance(key, str) or not key:
        raise ValueError(f'key: must be a non-empty string, got {key!r}')
    if importance is None:
        raise ValueError(f'item {key!r}: importance must be in [0, 1], got None')
    check_importance(importance, f'item {key!r}')
    if stamp is not None:
        if not is_finite_number(stamp):
            raise ValueError(
                f'item {key!r}: stamp must be a finite time in seconds, got {stamp!r}')
        stamp = float(stamp)
    try:
        source = source if source.__class__ is Source else Source(source)
    except ValueError:
        raise ValueError(f'item {key!r}: source must be one of '
                         f'{[member.value for member in Source]}, got {source!r}') from None
    if size is None:
        try:
            size = json_size(value)
        except (TypeError, ValueError) as error:
            raise ValueError(f'item {key!r}: value is not strict JSON: {error}') from None
    else:
        check_int(size, f'item {key!r}: size', 0)
        if size > MAX_ITEM_SIZE:
            # The set's byte totals are C counts (Py_ssize_t): a size past this overflows them.
            raise ValueError(f'item {key!r}: size must be at most {MAX_ITEM_SIZE} bytes, '
                             f'got {size}')
    return source, stamp, size


# The put/evict hot path and touch_present in C (core/_evict.c): same behaviour, same objects,
# a third of the cost.
# A source tree without the built extension runs the reference above.
try:
    from working_memory.core import _evict
except ImportError:
    _evict = None

if _evict is None:
    WorkingSet = PyWorkingSet
else:
    # The fields the C base holds (its members), which pickle and copy do not see by themselves.
    _CORE_FIELDS = tuple(name for name, member in vars(_evict.WorkingSetCore).items()
                         if isinstance(member, MemberDescriptorType))

    class WorkingSet(_evict.WorkingSetCore, PyWorkingSet):
        __doc__ = PyWorkingSet.__doc__
        __slots__ = ()

        def __getstate__(self) -> tuple[dict, dict]:
            """Return the Python fields and the C base's fields (pickle, copy, deepcopy)."""
            return self.__dict__, {name: getattr(self, name) for name in _CORE_FIELDS}

        def __setstate__(self, state: tuple[dict, dict]) -> None:
            """Restore what `__getstate__` returned."""
            fields, core_fields = state
            self.__dict__.update(fields)
            for name, value in core_fields.items():
                setattr(self, name, value)

    _evict.configure(reference_put=PyWorkingSet.put, source_type=Source,
                     source_default=Source.BOARD, record_type=EvictionRecord, json_size=json_size,
                     encode_ascii=encode_basestring_ascii, capacity_reason=CAPACITY,
                     level_ranking=LevelRanking, level=_Level, timebase=TimeBase,
                     reference_touch=PyWorkingSet.touch_present, frozen_type=FrozenDict,
                     reference_items_of=PyWorkingSet.items_of, item_type=Item)
# True when WorkingSet.put runs in C (test/core/test_eviction_c.py holds the build to it).
ACCELERATED = _evict is not None
