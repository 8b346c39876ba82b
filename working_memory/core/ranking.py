"""Who the working set evicts first: its evictable items kept in eviction order.

The working set keeps each item in a slot: a list, cheaper to make and to change
than an object (a put makes one, a touch changes two fields). `slot[:SEQ]` are
the fields of an `Item`; `SEQ` is the item's latest use, `ITEM` the `Item`
made from the slot (None until asked for, and again after a change), `OUT`
True while the item is evicted, `RECORD` and `NUMBER` the `EvictionRecord` of
the key's latest eviction and its number in the working set's log (None until
the key is first evicted; a new slot for the same key takes them over).

A ranking holds the present, non-exempt slots and answers which one has the
lowest rank. `rank(slot)` is `policy.sort_key(importance, last_used, seq)`; a
later use never lowers it (a rule of `EvictionPolicy`). Two rankings:

- `LevelRanking` for `ImportanceLRU`: O(1) per operation. Within one importance
  level the order is the order of use (later use, later effective time, higher
  seq), so each level is an OrderedDict in use order, like an LRU cache; the
  levels are a heap of importances.
- `HeapRanking` for any policy: a binary heap of rank entries, O(log n).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict

(KEY, VALUE, SOURCE, IMPORTANCE, STAMP, LAST_USED, STALE, EXEMPT, SIZE, SEQ, ITEM, OUT, RECORD,
 NUMBER) = range(14)
# Below this heap size stale entries are not worth a rebuild.
COMPACT_SLACK = 64


class _Level:
    """The slots of one importance: in use order, plus readmitted ones ranked in between."""

    __slots__ = ('used', 'returned', 'returns', 'ordered')

    def __init__(self):
        self.used: OrderedDict[str, list] = OrderedDict()
        # A readmitted slot keeps the rank of its last use, which may fall between the
        # used ones: it waits in a heap of (last_used, seq, key) until it is used again.
        self.returned: dict[str, list] = {}
        self.returns: list[tuple] = []
        self.ordered = True   # its importance is in the ranking's heap of levels

    def first_return(self) -> list | None:
        """Return the lowest readmitted slot not used since, dropping stale heap entries."""
        returns, returned = self.returns, self.returned
        while returns:
            slot = returned.get(returns[0][2])
            if slot is not None and slot[SEQ] == returns[0][1]:
                return slot
            heapq.heappop(returns)
        return None


class LevelRanking:
    """ImportanceLRU's order: lowest importance first, least recently used within a level."""

    __slots__ = ('_levels', '_order')

    def __init__(self):
        self._levels: dict[float, _Level] = {}
        self._order: list[float] = []   # heap of the importances in _levels

    @staticmethod
    def rank(slot: list) -> tuple:
        """Return ImportanceLRU's key of `slot`: (importance, last_used, seq)."""
        return (slot[IMPORTANCE], slot[LAST_USED], slot[SEQ])

    def add(self, slot: list) -> None:
        """Add a slot just used (its seq is the highest so far)."""
        level = self._levels.get(slot[IMPORTANCE])
        if level is None or not level.ordered:
            level = self._order_level(slot[IMPORTANCE])
        level.used[slot[KEY]] = slot

    def use(self, slots: list[list]) -> None:
        """Move present slots, just used again, to the end of their levels, in order."""
        levels = self._levels
        for slot in slots:
            level = levels[slot[IMPORTANCE]]
            try:
                # One lookup: at large sizes each one is a cache miss.
                level.used.move_to_end(slot[KEY])
            except KeyError:
                del level.returned[slot[KEY]]
                level.used[slot[KEY]] = slot

    def discard(self, slot: list) -> None:
        """Remove a present slot."""
        level = self._levels[slot[IMPORTANCE]]
        if level.used.pop(slot[KEY], None) is None:
            del level.returned[slot[KEY]]

    def restore(self, slot: list) -> None:
        """Add back an evicted slot with the rank of its last use."""
        level = self._levels.get(slot[IMPORTANCE])
        if level is None or not level.ordered:
            level = self._order_level(slot[IMPORTANCE])
        level.returned[slot[KEY]] = slot
        heapq.heappush(level.returns, (slot[LAST_USED], slot[SEQ], slot[KEY]))
        if len(level.returns) > 2 * len(level.returned) + COMPACT_SLACK:
            level.returns = [(s[LAST_USED], s[SEQ], s[KEY]) for s in level.returned.values()]
            heapq.heapify(level.returns)

    def lowest(self) -> list:
        """Return the lowest slot (the ranking is not empty)."""
        order, levels = self._order, self._levels
        while True:
            level = levels[order[0]]
            if level.returned:
                return self._lowest_of(level)
            for slot in level.used.values():
                return slot
            self._unorder_lowest()

    def pop_lowest(self) -> list:
        """Remove and return the lowest slot (the ranking is not empty)."""
        order, levels = self._order, self._levels
        while True:
            level = levels[order[0]]
            if level.returned:
                slot = self._lowest_of(level)
                del (level.used if slot[KEY] in level.used else level.returned)[slot[KEY]]
                return slot
            if level.used:
                return level.used.popitem(last=False)[1]
            self._unorder_lowest()

    def _order_level(self, importance: float) -> _Level:
        """Return the level of `importance`, made or put back in the heap of levels."""
        level = self._levels.get(importance)
        if level is None:
            if len(self._levels) > 2 * len(self._order) + COMPACT_SLACK:
                # Many distinct importances came and went: keep the ordered levels only.
                self._levels = {key: kept for key, kept in self._levels.items() if kept.ordered}
            level = self._levels[importance] = _Level()
        level.ordered = True
        heapq.heappush(self._order, importance)
        return level

    def _unorder_lowest(self) -> None:
        # The lowest level is empty: out of the heap, but kept, as its importance is likely
        # to come again (a new item of the lowest importance is often evicted at once).
        self._levels[heapq.heappop(self._order)].ordered = False

    @staticmethod
    def _lowest_of(level: _Level) -> list | None:
        returned = level.first_return()
        for slot in level.used.values():
            if returned is None or ((slot[LAST_USED], slot[SEQ])
                                    < (returned[LAST_USED], returned[SEQ])):
                return slot
            break
        return returned


class HeapRanking:
    """Any policy's order: a heap of entries `sort_key + (seq, key)`, re-ranked lazily.

    A use does not push a new entry: the key's old entry ranks it lower than it
    is, never higher, so when that entry reaches the top the slot is ranked
    again as at its latest use and pushed back.
    """

    __slots__ = ('_sort_key', '_slots', '_heap', '_used')

    def __init__(self, policy):
        self._sort_key = policy.sort_key
        self._slots: dict[str, list] = {}
        self._heap: list[tuple] = []
        self._used: set[str] = set()    # keys used since their entry was pushed

    def rank(self, slot: list) -> tuple:
        """Return the policy's key of `slot`."""
        return self._sort_key(slot[IMPORTANCE], slot[LAST_USED], slot[SEQ])

    def add(self, slot: list) -> None:
        """Add a slot just used, or put back an evicted one with the rank of its last use."""
        self._slots[slot[KEY]] = slot
        self._used.discard(slot[KEY])
        self._push(slot)

    restore = add

    def use(self, slots: list[list]) -> None:
        """Note that present slots were used again (each re-ranked when it reaches the top)."""
        self._used.update([slot[KEY] for slot in slots])

    def discard(self, slot: list) -> None:
        """Remove a present slot (its heap entries turn stale)."""
        del self._slots[slot[KEY]]
        self._used.discard(slot[KEY])

    def lowest(self) -> list:
        """Return the lowest slot (the ranking is not empty)."""
        heap, slots, used = self._heap, self._slots, self._used
        while True:
            entry = heap[0]
            slot = slots.get(entry[-1])
            if slot is not None and slot[SEQ] == entry[-2]:
                return slot
            heapq.heappop(heap)
            if slot is not None and entry[-1] in used:
                # Used since it was ranked: rank it as at its latest use.
                used.discard(entry[-1])
                self._push(slot)

    def pop_lowest(self) -> list:
        """Remove and return the lowest slot (the ranking is not empty)."""
        slot = self.lowest()
        heapq.heappop(self._heap)
        del self._slots[slot[KEY]]
        return slot

    def _push(self, slot: list) -> None:
        heap = self._heap
        heapq.heappush(heap, self.rank(slot) + (slot[SEQ], slot[KEY]))
        if len(heap) > 2 * len(self._slots) + COMPACT_SLACK:
            # Rebuild from the slots' current ranks: O(n) once per n stale pushes.
            self._heap = [self.rank(s) + (s[SEQ], s[KEY]) for s in self._slots.values()]
            heapq.heapify(self._heap)
            self._used.clear()
