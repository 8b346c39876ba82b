"""The working memory's mirror of the state board: the latest entry per key, nothing more."""

from __future__ import annotations

import dataclasses
import re
import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping, Protocol

from working_memory.core.frozen import check_json, deep_freeze
from working_memory.core.items import BoardEntry, prepare_text
from working_memory.core.timebase import TimeBase


@dataclass(frozen=True)
class BoardView:
    """An immutable picture of the board at one `version` (the number of applied updates)."""

    version: int
    entries: Mapping[str, BoardEntry]

    def get(self, key: str) -> BoardEntry | None:
        """Return the entry for `key`, or None when the board does not hold it."""
        return self.entries.get(key)


class KeyMatcher(Protocol):
    """What a board index selects: any object with `match(key) -> bool` (stable per key)."""

    def match(self, key: str) -> bool:
        """Return True when the index holds `key`."""


# Indexes kept per board; the least recently asked for is dropped beyond this.
MAX_INDEXES = 8
# A key's prefix, under which its arrival and removal are counted: up to its first ':' or '/'.
_PREFIX = re.compile(r'[^:/]*[:/]')


def key_prefix(key: str) -> str:
    """Return the prefix `key` is counted under ('obj:' of 'obj:17'); '' without ':' or '/'."""
    match = _PREFIX.match(key)
    return '' if match is None else match.group()


@dataclass(frozen=True)
class BoardChanges:
    """What changed for one index since its last `BoardSnapshot.changes` call.

    `full`: the index is new (first call, or dropped and made again): `entries`
    holds every key it selects and the caller starts over. Otherwise `entries`
    holds each selected key set since, with its latest entry, and every key
    removed since, selected or not, with None (unless set again); `moved` are
    keys removed and set again since, so they now come last in board order.
    """

    full: bool
    entries: Mapping[str, BoardEntry | None]
    moved: frozenset[str] = frozenset()


class BoardSnapshot:
    """Latest entry per key, exactly as the state board said it; thread-safe.

    The truth stays in the state board: this class holds what the last
    updates said and never invents, ages out or merges entries. Values are
    deep-frozen on arrival so a frame built from them cannot be changed later.
    With a `timebase` (the working set's), each entry's stamp is placed on the
    effective timeline on arrival (`TimeBase.place`), so its ttl runs on the
    same timeline as everything else across clock resets; the owner observes
    the arrival time first. A value some consumer's index holds has its JSON text
    made on arrival (`items.prepare_text`), between ticks rather than in one.
    """

    def __init__(self, timebase: TimeBase | None = None):
        self._timebase = timebase
        self._lock = threading.Lock()
        self._entries: dict[str, BoardEntry] = {}
        self._version = 0
        # matcher -> the board's keys it matches, in board order; kept current by apply.
        self._indexes: dict[KeyMatcher, dict[str, None]] = {}
        # matcher -> keys changed since its last `changes` call (True: removed at some point);
        # only for matchers asked for their changes.
        self._dirty: dict[KeyMatcher, dict[str, bool]] = {}
        # key prefix -> [keys new to the board, keys removed] so far (see `growth`).
        self._growth: dict[str, list[int]] = {}

    def apply(self, entries: Iterable[BoardEntry] = (),
              removed_keys: Iterable[str] = (), *, checked: bool = False) -> list[str]:
        """Insert or replace `entries`, drop `removed_keys`; return the keys actually removed.

        A key both set and removed by the same update is a contradiction and
        raises ValueError, as does anything that is not a BoardEntry; nothing
        is applied then. `checked`: the entries are new objects nobody else
        holds (the board sets their effective_stamp in place) whose values are
        strict JSON and deeply frozen already (the node's intake parses them
        so), so they are kept as they are rather than checked and copied.
        """
        entries = list(entries)
        removed_keys = list(removed_keys)
        for index, entry in enumerate(entries):
            if not isinstance(entry, BoardEntry):
                raise ValueError(f'entries[{index}]: must be a BoardEntry, got {entry!r}')
            if not checked:
                check_json(entry.value, f'entries[{index}] {entry.key!r}: value')
        for index, key in enumerate(removed_keys):
            if not isinstance(key, str) or not key:
                raise ValueError(f'removed_keys[{index}]: must be a non-empty string, got {key!r}')
        both = {entry.key for entry in entries}.intersection(removed_keys)
        if both:
            raise ValueError(f'removed_keys: {sorted(both)} also set by the same update')
        timebase = self._timebase
        if checked:
            frozen = self._placed(entries)
        else:
            frozen = [dataclasses.replace(entry, value=deep_freeze(entry.value), effective_stamp=(
                entry.effective_stamp if timebase is None else timebase.place(entry.stamp)))
                for entry in entries]
        with self._lock:
            return self._store(frozen, removed_keys)

    def apply_checked(self, entries: Iterable[BoardEntry] = (),
                      removed_keys: Iterable[str] = ()) -> list[str]:
        """Return `apply(entries, removed_keys, checked=True)`.

        An update that only sets entries (the common one: a sensor's reading) skips
        the checks that can only fail with removed keys.
        """
        if removed_keys or entries.__class__ is not tuple:
            return self.apply(entries, removed_keys, checked=True)
        for entry in entries:
            if entry.__class__ is not BoardEntry:
                return self.apply(entries, removed_keys, checked=True)
        with self._lock:
            return self._store(self._placed(entries), ())

    def _placed(self, entries: Iterable[BoardEntry]) -> Iterable[BoardEntry]:
        """Return checked `entries`, each effective_stamp set in place on the timebase."""
        timebase = self._timebase
        if timebase is not None:
            for entry in entries:
                object.__setattr__(entry, 'effective_stamp', timebase.place(entry.stamp))
        return entries

    def _store(self, entries: Iterable[BoardEntry], removed_keys: Iterable[str]) -> list[str]:
        """Apply checked `entries` and `removed_keys`; return the keys removed; lock held."""
        current = self._entries
        removed = [key for key in dict.fromkeys(removed_keys)
                   if current.pop(key, None) is not None]
        new = [entry.key for entry in entries if entry.key not in current]
        for entry in entries:
            current[entry.key] = entry
        self._version += 1
        if new or removed:
            self._count_growth(dict.fromkeys(new), removed)
        for matcher, keys in self._indexes.items():
            for key in removed:
                keys.pop(key, None)
            for key in new:
                if matcher.match(key):
                    keys[key] = None
        for matcher, dirty in self._dirty.items():
            keys = self._indexes[matcher]
            for key in removed:
                dirty[key] = True
            for entry in entries:
                if entry.key in keys:
                    dirty.setdefault(entry.key, False)
                    prepare_text(entry.value)
            # Keys new to the board (a key set again after its removal too) come last in board
            # order, in the update's order: so they do among the changes, whose order places
            # the keys new to a consumer's mirror.
            for key in dict.fromkeys(new):
                if key in dirty:
                    dirty[key] = dirty.pop(key)
        return removed

    def _count_growth(self, new: Iterable[str], removed: Iterable[str]) -> None:
        """Count keys new to the board and keys removed under their prefixes; lock held."""
        growth = self._growth
        for column, keys in ((0, new), (1, removed)):
            for key in keys:
                prefix = key_prefix(key)
                counts = growth.get(prefix)
                if counts is None:
                    counts = growth[prefix] = [0, 0]
                counts[column] += 1

    def growth(self) -> dict[str, tuple[int, int]]:
        """Return {key prefix: (keys new to the board, keys removed)} counted since it began.

        A key removed and set again counts once more each way; the board holds, per
        prefix, the difference. The prefix is `key_prefix`'s ('' for keys without one).
        """
        with self._lock:
            return {prefix: (counts[0], counts[1]) for prefix, counts in self._growth.items()}

    def view(self, keys: Iterable[str] | None = None) -> BoardView:
        """Return an immutable picture of the board as it is now (of `keys` only, if given).

        With `keys`, the picture holds those of them the board holds, in board
        order when they come from `index`: a tick that reads a few keys of a large
        board copies only those.
        """
        with self._lock:
            if keys is None:
                return BoardView(self._version, MappingProxyType(dict(self._entries)))
            entries = self._entries
            return BoardView(self._version, MappingProxyType(
                {key: entries[key] for key in keys if key in entries}))

    def index(self, matcher: KeyMatcher) -> tuple[str, ...]:
        """Return the board's keys `matcher` matches, in board order.

        The first call for a matcher scans the board; after that every `apply`
        keeps the answer current by matching only keys new to the board, so a
        large board is not matched key by key on every tick. A matcher must be
        hashable and give the same answer for a key every time.
        """
        with self._lock:
            return tuple(self._index(matcher))

    def changes(self, matcher: KeyMatcher) -> BoardChanges:
        """Return what changed for `matcher`'s index since the last call (see BoardChanges).

        The index is kept as `index` keeps it; a consumer that mirrors the keys
        a matcher selects then costs the updates, not the size of the board.
        """
        with self._lock:
            dirty = self._dirty.get(matcher)
            fresh = matcher not in self._indexes or dirty is None
            keys = self._index(matcher)
            self._dirty[matcher] = {}
            entries = self._entries
            if fresh:
                return BoardChanges(True, MappingProxyType({key: entries[key] for key in keys}))
            return BoardChanges(False, MappingProxyType(
                {key: entries.get(key) for key in dirty}),
                frozenset(key for key, removed in dirty.items() if removed and key in entries))

    def _index(self, matcher: KeyMatcher) -> dict[str, None]:
        """Return `matcher`'s index, made by a scan when new; the caller holds the lock."""
        keys = self._indexes.pop(matcher, None)
        if keys is None:
            keys = {key: None for key in self._entries if matcher.match(key)}
            self._dirty.pop(matcher, None)
        self._indexes[matcher] = keys
        while len(self._indexes) > MAX_INDEXES:
            dropped = next(iter(self._indexes))
            del self._indexes[dropped]
            self._dirty.pop(dropped, None)
        return keys

    @property
    def version(self) -> int:
        """Number of updates applied so far."""
        return self._version

    def get(self, key: str) -> BoardEntry | None:
        """Return the latest entry for `key`, or None."""
        with self._lock:
            return self._entries.get(key)

    def keys(self) -> list[str]:
        """Return the keys the board holds."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
