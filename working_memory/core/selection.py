"""One cabin's board selection kept across ticks: a tick reclassifies only the keys that changed.

Pure Python. The assembler mirrors the board keys its manifests may read (from
`BoardSnapshot.changes`) and hands each cabin's `CabinBoard` what changed; a key
is then sorted once into served, stale, withheld by an injected drop, or left out
by the tag filter, and stays there until its entry changes, its ttl runs out (a
heap of deadlines) or the cabin's tag filter changes (then the cabin starts over).
So a tick costs the updates, not the number of keys a cabin selects.
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import heapq
import math
import re
from typing import Collection, Iterable, Mapping

from sortedcontainers import SortedList

from working_memory.core.frozen import FrozenDict
from working_memory.core.items import BoardEntry, Missing, MissingReason, MissingSummary
from working_memory.core.manifest import Manifest, is_glob

# [s] A served entry whose ttl deadline is this close is checked exactly (float rounding of
# large effective times); one not yet stale goes back on the heap.
_DEADLINE_MARGIN_S = 1e-3
_NOT_SELECTED, _DROPPED, _SELECTED = object(), object(), object()
# The stale keys a glob selects are summarised per glob (MissingSummary); a pack lists this
# many of them, the most valuable, as notes of their own. So a pack's notes follow the
# manifest (its exact keys, plus this many per glob), never the number of keys on the board.
LISTED_PER_GLOB = 3


def tags_pass(tags: Collection[str], include: frozenset[str], exclude: frozenset[str]) -> bool:
    """Semantic filter: excluded tags lose; untagged items and any included tag pass."""
    # isdisjoint takes the tags as they are: no set is built (a cabin asks per changed key).
    if exclude and not exclude.isdisjoint(tags):
        return False
    return not include or not tags or not include.isdisjoint(tags)


def filtered(key: str, tags: Iterable[str], include: frozenset[str],
             exclude: frozenset[str]) -> tuple[str, MissingReason, str]:
    """Return (key, reason, detail) for an item the semantic tag filter left out."""
    excluded = sorted(set(tags) & exclude)
    if excluded:
        detail = f'left out by tag filter: tags {excluded} excluded'
    else:
        detail = f'left out by tag filter: tags {sorted(tags)} not in include {sorted(include)}'
    return key, MissingReason.OUT_OF_SCOPE, detail


@functools.lru_cache(maxsize=256)
def _stale_detail(ttl: float) -> str:
    """Return the detail of a stale note: one string per ttl, shared by the keys stale with it."""
    return f'stale: its ttl of {ttl:.1f} s ran out'


def stale_note(entry: BoardEntry) -> Missing:
    """Return the note of a stale entry: since its ttl ran out (its age grows, the note stays)."""
    return Missing(entry.key, MissingReason.STALE, _stale_detail(entry.ttl),
                   entry.effective_stamp + entry.ttl)


def _note_key(note: Missing) -> str:
    return note.key


class SortedNotes:
    """Notes by key, kept sorted as they come and go: `notes` is rebuilt only after a change."""

    __slots__ = ('_notes', '_frozen')

    def __init__(self):
        self._notes: list[Missing] = []
        self._frozen: tuple[Missing, ...] | None = ()

    def _find(self, key: str) -> tuple[int, bool]:
        """Return where `key`'s note is or would go, and whether it is there."""
        notes = self._notes
        at = bisect.bisect_left(notes, key, key=_note_key)
        return at, at < len(notes) and notes[at].key == key

    def set(self, note: Missing) -> None:
        """Add `note`, or replace the note of its key."""
        at, found = self._find(note.key)
        if found:
            self._notes[at] = note
        else:
            self._notes.insert(at, note)
        self._frozen = None

    def reset(self, notes: Iterable[Missing]) -> None:
        """Hold exactly `notes` (one per key), sorted once."""
        self._notes = sorted(notes, key=_note_key)
        self._frozen = None

    def discard(self, key: str) -> None:
        """Remove the note of `key`, if any."""
        at, found = self._find(key)
        if found:
            del self._notes[at]
            self._frozen = None

    @property
    def notes(self) -> tuple[Missing, ...]:
        """The notes sorted by key (the same tuple until one comes, goes or changes)."""
        if self._frozen is None:
            self._frozen = tuple(self._notes)
        return self._frozen


def _key_kind(manifest: Manifest, key: str) -> object:
    """Return whether `manifest` selects board `key`, and whether a drop withholds it."""
    if not manifest.selects.match(key):
        return _NOT_SELECTED
    drops = manifest.drops
    return _DROPPED if drops.board.match(key) or drops.any_key.match(key) else _SELECTED


class GlobNotes:
    """The stale notes of the keys one glob selects: counted, ranked by value, by since.

    The rank of a key is (-importance, -since, key): the most valuable first, then the
    latest to go stale. Both orders are sorted lists (O(log n) a key that comes or goes),
    so a summary and its listed notes cost the changes, not the keys under the glob.
    """

    __slots__ = ('pattern', 'notes', '_ranks', '_order', '_sinces', '_batch')

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.notes: dict[str, Missing] = {}
        self._ranks: dict[str, tuple] = {}
        self._order = SortedList()
        self._sinces = SortedList()
        self._batch: list[tuple] = []

    def add(self, note: Missing, importance: float, sort: bool = True) -> None:
        """Hold `note` (its key not held) of a key of `importance`.

        Without `sort` the key is ranked by the `sort` the caller runs after a batch.
        """
        rank = (-importance, -note.since, note.key)
        self.notes[note.key] = note
        self._ranks[note.key] = rank
        if sort:
            self._order.add(rank)
            self._sinces.add((note.since, note.key))
        else:
            self._batch.append(rank)

    def sort(self) -> None:
        """Rank the keys of a batch of unsorted `add`s, at once."""
        batch, self._batch = self._batch, []
        self._order.update(batch)
        self._sinces.update((-since, key) for _, since, key in batch)

    def discard(self, key: str) -> None:
        """Forget `key`'s note, if held."""
        rank = self._ranks.pop(key, None)
        if rank is None:
            return
        del self.notes[key]
        self._order.remove(rank)
        self._sinces.remove((-rank[1], key))

    def __len__(self) -> int:
        return len(self.notes)

    def listed(self, count: int) -> list[Missing]:
        """Return the notes of the `count` most valuable keys."""
        notes = self.notes
        return [notes[rank[2]] for rank in self._order.islice(0, count)]

    def summary(self, listed: int) -> MissingSummary:
        """Return the summary of the held notes (at least one), `listed` of them listed."""
        return MissingSummary(self.pattern, MissingReason.STALE, len(self.notes),
                              min(listed, len(self.notes)), self._sinces[0][0],
                              self._sinces[-1][0])


class CabinBoard:
    """What one cabin's manifest makes of the board keys, kept while the keys stay the same.

    `served`: fresh entries that pass the tag filter; `absent`: a note per key withheld,
    stale or filtered out; `stale`, `withheld`: those keys. `touched` are the keys whose
    served entry came, went or changed in the `update`s since the last `take_touched`
    (everything served before or after a start over), `take_absent_changed` the keys whose
    note came, went or changed. The stale keys a glob selects (and no exact key) are
    summarised per glob: `summaries` counts them, `stale_listed` holds the notes a pack
    lists (every other stale key's, and the `LISTED_PER_GLOB` most valuable of each glob's);
    `stale` maps each stale key to its glob ('' for an exact key). `version`
    grows whenever a key comes to or leaves any of these, or its note changes: the same
    version, the same keys and notes (a served key's new entry leaves it as it is).
    """

    def __init__(self, manifest: Manifest, exempt_prefixes: tuple[str, ...]):
        self.manifest = manifest
        self._exempt = exempt_prefixes
        self._exclude = frozenset(manifest.tags.exclude)
        self._include: frozenset[str] | None = None
        self._kinds: dict[str, object] = {}
        self.served: dict[str, BoardEntry] = {}
        self.absent: dict[str, Missing] = {}
        self._absent_changed: set[str] | None = set()   # None: every key (a start over)
        self.stale: dict[str, str] = {}
        # The stale notes listed one by one (keys no glob summarises) and per glob.
        self._stale_exact = SortedNotes()
        self._globs: dict[str, GlobNotes] = {}
        self._glob_patterns = tuple(
            (pattern, re.compile(fnmatch.translate(pattern)).match)
            for pattern in manifest.selects.patterns if is_glob(pattern))
        self._exact_patterns = frozenset(pattern for pattern in manifest.selects.patterns
                                         if not is_glob(pattern))
        self._listing: tuple[int, tuple[Missing, ...], tuple[MissingSummary, ...]] | None = None
        self.withheld: dict[str, None] = {}
        self.touched: set[str] = set()
        self.went_stale: set[str] = set()
        self.version = 0
        # Entries tags.from_goal names (the goal tags extend the include filter).
        self._goals: dict[str, BoardEntry] = {}
        self._goal_names: dict[str, bool] = {}   # key -> whether tags.from_goal names it
        # Keys that concern the cabin in no way (not selected, no goal key): a tick whose
        # changes are all such keys changes nothing here while the goal tags hold, that is
        # from the effective time they were taken [s] until a fresh goal's ttl runs out.
        self._quiet: set[str] = set()
        self._tags_since, self._tags_until = math.inf, -math.inf
        # Served or filtered entries with a ttl (either goes stale when it runs out), and
        # their deadlines [s, effective time] in a heap.
        # The served entries with a ttl, and a heap of deadlines [s, effective] holding one
        # per timed key at or before its entry's (see _queue): a reading refreshed every tick
        # is not pushed and popped every tick, only about once per ttl.
        self._timed: dict[str, BoardEntry] = {}
        self._deadlines: list[tuple[float, int, str]] = []
        self._queued: dict[str, tuple[float, int, str]] = {}
        self._pushed = 0

    @property
    def include(self) -> frozenset[str]:
        """The include tags in force: the manifest's and the fresh goals' (after `update`)."""
        return self._include or frozenset()

    @property
    def stale_listed(self) -> tuple[Missing, ...]:
        """The stale notes a pack lists, sorted by key: bounded by the manifest, not the board."""
        return self._listed()[0]

    @property
    def summaries(self) -> tuple[MissingSummary, ...]:
        """A summary per glob with stale keys (in the manifest's order of its globs)."""
        return self._listed()[1]

    def _listed(self) -> tuple[tuple[Missing, ...], tuple[MissingSummary, ...]]:
        """Return (stale_listed, summaries), made again only after the version moved."""
        listing = self._listing
        if listing is None or listing[0] != self.version:
            notes = list(self._stale_exact.notes)
            summaries = []
            for pattern, _ in self._glob_patterns:
                group = self._globs.get(pattern)
                if group:
                    notes += group.listed(LISTED_PER_GLOB)
                    summaries.append(group.summary(LISTED_PER_GLOB))
            listing = self._listing = (self.version, tuple(sorted(notes, key=_note_key)),
                                       tuple(summaries))
        return listing[1], listing[2]

    def _glob_of(self, key: str) -> str:
        """Return the first glob of the manifest that selects `key`, '' for an exact key."""
        if key in self._exact_patterns:
            return ''
        return next((pattern for pattern, match in self._glob_patterns if match(key)), '')

    @property
    def exclude(self) -> frozenset[str]:
        """The manifest's exclude tags."""
        return self._exclude

    def update(self, mirror: Mapping[str, BoardEntry],
               changes: Mapping[str, BoardEntry | None] | None, now: float) -> None:
        """Apply the changed keys (`changes` None: everything in `mirror`) at effective `now`."""
        if (changes is not None and self._tags_since <= now < self._tags_until
                and self._quiet.issuperset(changes)):
            for key, entry in changes.items():
                if entry is None:   # forgotten, as below
                    self._forget_quiet(key)
            self._expire(now)
            return
        self._update_goals(mirror, changes)
        include = frozenset(self.manifest.tags.include) | self._goal_tags(now)
        if changes is None or include != self._include:
            self._start_over(mirror, include, now)
        else:
            kinds, served = self._kinds, self.served
            for key, entry in changes.items():
                kind = kinds.get(key)
                # A key the manifest does not select is in none of the cabin's sets; a removed
                # one is forgotten (short-lived keys must not pile up here).
                if kind is _NOT_SELECTED:
                    if entry is None:
                        self._forget_quiet(key)
                    elif not self._goal_names.get(key):
                        self._quiet.add(key)
                    continue
                if kind is _SELECTED and entry is not None and key in served and self._again(
                        key, entry, now):
                    continue
                self._drop(key)
                if entry is None:
                    self._kinds.pop(key, None)
                else:
                    self._classify(key, entry, now)
        self._expire(now)

    def _again(self, key: str, entry: BoardEntry, now: float) -> bool:
        """Serve a served key's new entry in its place if it is fresh and passes; say if so.

        A sensor's every reading comes this way: `is_stale`, `_passes` (`tags_pass`),
        `_serve` and `_time` are written out here, one call instead of five per key.
        """
        ttl, tags = entry.ttl, entry.tags
        if ttl > 0.0 and now - entry.effective_stamp > ttl:
            return False
        if not key.startswith(self._exempt):
            include, exclude = self._include, self._exclude
            if exclude and not exclude.isdisjoint(tags) or (
                    include and tags and include.isdisjoint(tags)):
                return False
        self.served[key] = entry
        self.touched.add(key)
        if ttl > 0.0:
            self._timed[key] = entry
            deadline = entry.effective_stamp + ttl
            queued = self._queued.get(key)
            if queued is None or deadline < queued[0]:
                self._queue(key, deadline)
        else:
            self._timed.pop(key, None)
        return True

    def take_touched(self) -> set[str]:
        """Return the keys touched since the last call, and start a new set."""
        touched, self.touched = self.touched, set()
        return touched

    def take_absent_changed(self) -> set[str] | None:
        """Return the keys whose note in `absent` came, went or changed since the last call.

        None after a start over: any may have.
        """
        changed, self._absent_changed = self._absent_changed, set()
        return changed

    def take_went_stale(self) -> set[str]:
        """Return the keys that went stale since the last call (all after a start over)."""
        went, self.went_stale = self.went_stale, set()
        return went

    def _start_over(self, mirror: Mapping[str, BoardEntry], include: frozenset[str],
                    now: float) -> None:
        self.touched.update(self.served)
        self.version += 1
        self._include = include
        self.served, self.absent, self.stale, self.withheld = {}, {}, {}, {}
        self._absent_changed = None
        self._stale_exact, self._globs = SortedNotes(), {}
        self._timed, self._deadlines, self._queued = {}, [], {}
        self._kinds, self._quiet = {}, set()
        for key, entry in mirror.items():
            self._classify(key, entry, now, sort=False)
        self._stale_exact.reset(self.absent[key] for key, glob in self.stale.items() if not glob)
        for group in self._globs.values():
            group.sort()

    def _update_goals(self, mirror: Mapping[str, BoardEntry],
                      changes: Mapping[str, BoardEntry | None] | None) -> None:
        pattern = self.manifest.tags.from_goal
        if not pattern:
            return
        if changes is None:
            self._goal_names = {}   # asked again per key: removed keys leave no trace
            if is_glob(pattern):
                self._goals = {key: entry for key, entry in mirror.items()
                               if fnmatch.fnmatchcase(key, pattern)}
            else:
                self._goals = {pattern: mirror[pattern]} if pattern in mirror else {}
            return
        names = self._goal_names
        for key, entry in changes.items():
            named = names.get(key)
            if named is None:   # matched once per key: the pattern is the manifest's
                named = names[key] = key == pattern or is_glob(pattern) and fnmatch.fnmatchcase(
                    key, pattern)
            if entry is None:
                del names[key]   # a removed key is forgotten, as in _kinds
                self._goals.pop(key, None)
            elif named:
                self._goals[key] = entry

    def _forget_quiet(self, key: str) -> None:
        """Forget a removed key the manifest does not select (short-lived keys pile up else)."""
        del self._kinds[key]
        self._quiet.discard(key)
        self._goal_names.pop(key, None)

    def _goal_tags(self, now: float) -> frozenset[str]:
        """Tags of the fresh goal entries named by `tags.from_goal` ("tags by goal").

        Also notes until when they hold: until the first fresh goal's ttl runs out
        (less a margin: the exact check is then made again), or for ever.
        """
        tags, until = set(), math.inf
        for entry in self._goals.values():
            value = entry.value
            if entry.is_stale(now):
                continue
            if entry.ttl > 0.0:
                until = min(until, entry.effective_stamp + entry.ttl - _DEADLINE_MARGIN_S)
            # FrozenDict first: the board's values are, and the ABC check is slow.
            if value.__class__ is not FrozenDict and not isinstance(value, Mapping):
                continue
            goal_tags = value.get('tags')
            if isinstance(goal_tags, (list, tuple)):
                tags.update(tag for tag in goal_tags if isinstance(tag, str) and tag)
        self._tags_since, self._tags_until = now, until
        return frozenset(tags)

    def _drop(self, key: str) -> None:
        self._timed.pop(key, None)
        if self.served.pop(key, None) is not None:
            self.version += 1
            self.touched.add(key)
        if self.absent.pop(key, None) is not None:
            self.version += 1
            if self._absent_changed is not None:
                self._absent_changed.add(key)
            if key in self.stale:
                glob = self.stale.pop(key)
                if glob:
                    self._globs[glob].discard(key)
                else:
                    self._stale_exact.discard(key)
            self.withheld.pop(key, None)

    def _classify(self, key: str, entry: BoardEntry, now: float, sort: bool = True) -> None:
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = _key_kind(self.manifest, key)
        if kind is _NOT_SELECTED:
            return
        if kind is _DROPPED:
            self.withheld[key] = None
            self._absent(Missing(key, MissingReason.INJECTED_DROP,
                                 'withheld by an injected drop'))
        elif entry.is_stale(now):
            self._stale(stale_note(entry), entry, sort)
        elif not self._passes(key, entry):
            self._absent(Missing(*filtered(key, entry.tags, self._include, self._exclude)))
            self._time(key, entry)
        else:
            self._serve(key, entry)

    def _passes(self, key: str, entry: BoardEntry) -> bool:
        """Return True when a selected entry passes the tag filter (exempt keys always do)."""
        return key.startswith(self._exempt) or tags_pass(entry.tags, self._include,
                                                         self._exclude)

    def _serve(self, key: str, entry: BoardEntry) -> None:
        """Serve `entry`."""
        self.served[key] = entry
        self.touched.add(key)
        self.version += 1
        self._time(key, entry)

    def _time(self, key: str, entry: BoardEntry) -> None:
        """Keep the deadline of a fresh entry with a ttl: it is judged stale then."""
        if entry.ttl > 0.0:
            self._timed[key] = entry
            deadline = entry.effective_stamp + entry.ttl
            queued = self._queued.get(key)
            if queued is None or deadline < queued[0]:
                self._queue(key, deadline)

    def _queue(self, key: str, deadline: float) -> None:
        """Push `key`'s deadline [s]; any earlier push of the key is then left to be skipped.

        A timed key's one queued deadline is at or before its entry's: a refresh that
        moves the deadline later pushes nothing, and the check at the queued deadline
        pushes the entry's own again (`_expire`).
        """
        self._pushed += 1
        queued = self._queued[key] = (deadline, self._pushed, key)
        heapq.heappush(self._deadlines, queued)

    def _expire(self, now: float) -> None:
        """Move entries whose ttl ran out by effective `now` [s] to the stale ones."""
        heap, queued, timed, later = self._deadlines, self._queued, self._timed, []
        while heap and heap[0][0] <= now + _DEADLINE_MARGIN_S:
            deadline = heapq.heappop(heap)
            key = deadline[2]
            if queued.get(key) is not deadline:   # an earlier deadline took its place
                continue
            del queued[key]
            entry = timed.get(key)
            if entry is None:   # no longer served with a ttl
                continue
            if not entry.is_stale(now):   # refreshed since, or due within the margin
                later.append((key, entry.effective_stamp + entry.ttl))
                continue
            self._drop(key)
            self._stale(stale_note(entry), entry)
        for key, deadline in later:
            self._queue(key, deadline)

    def _absent(self, note: Missing) -> None:
        """Note an absent key."""
        self.absent[note.key] = note
        self.version += 1
        if self._absent_changed is not None:
            self._absent_changed.add(note.key)

    def _stale(self, note: Missing, entry: BoardEntry, sort: bool = True) -> None:
        key = note.key
        self.went_stale.add(key)
        glob = self.stale[key] = self._glob_of(key)
        self._absent(note)
        if glob:
            group = self._globs.get(glob)
            if group is None:
                group = self._globs[glob] = GlobNotes(glob)
            importance = self.manifest.weight_for(key) if entry.importance is None else (
                entry.importance)
            group.add(note, importance, sort)
        elif sort:
            self._stale_exact.set(note)
