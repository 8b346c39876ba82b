"""Context assembly: each tick every cabin's manifest selects its context; the frame is frozen.

Per cabin the manifest selects board entries (direct reads, semantic tag
filter), an event window and a map window. Every selected item of every cabin
goes to the working set: new or changed content is put with eviction deferred,
evicted items selected again unchanged are offered back with the rank of their
last use; then the set settles once per tick, forgetting by value, so what goes
is the tick's least valuable item and never one the same tick puts back, and an
item evicted stays out until it earns its place again (eviction is an event,
not a steady state). What is served is then touched (used). Each pack lists
only what is present, and everything asked for but not served is reported
with a reason. The whole tick runs under one lock, so all packs of a frame come
from the same board picture and the same working set state.

Time: `assemble` takes the tick's ROS time and puts it on the working set's
effective timeline; staleness, event windows and ages are judged there (see
`core.timebase.TimeBase`), so a clock reset neither freshens nor hides data.
"""

from __future__ import annotations

import fnmatch
import operator
import threading
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any, Mapping

import immutables
from sortedcontainers import SortedList

from working_memory.core.board import BoardChanges, BoardSnapshot, BoardView
from working_memory.core.checks import is_finite_number
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import EvictionRecord, PyWorkingSet, Settlement
from working_memory.core.frames import (DIGEST_EQUAL, DIGEST_SAME, Frame,
                                        ItemEncodings, Pack, changed_positions,
                                        freeze_window, make_frame, make_pack)
from working_memory.core.gridmap import GridMap, MapWindow, as_point
from working_memory.core.items import (BoardEntry, EVENT_ITEM_PREFIX, Event, EventKind, Missing,
                                       MissingReason, MissingSummary, Source)
from working_memory.core.manifest import (
    ALL_KINDS, BOARD_PREFIX, EVENTS_PREFIX, MAP, Manifest, is_glob)
from working_memory.core.selection import CabinBoard, filtered, stale_note, tags_pass

# Events a cabin must not lose, like goal and safety board keys.
EXEMPT_EVENT_KINDS = frozenset({EventKind.GOAL, EventKind.CONSTRAINT})
# When several keys behind one required glob are absent, the first reason here is reported.
_REASON_PRIORITY = (MissingReason.INJECTED_DROP, MissingReason.EVICTED, MissingReason.STALE,
                    MissingReason.OUT_OF_SCOPE, MissingReason.RESYNCING, MissingReason.NEVER_SEEN)


def event_item_key(event: Event) -> str:
    """Return the working-set key of a log event: `event:<KIND>:<key>#<seq>`."""
    return f'{EVENT_ITEM_PREFIX}{event.kind.value}:{event.key}#{event.seq}'


def event_item_kind(key: str) -> str | None:
    """Return the kind name in an event item key, or None for other keys."""
    if not key.startswith(EVENT_ITEM_PREFIX):
        return None
    return key[len(EVENT_ITEM_PREFIX):].partition(':')[0]


def event_item_parts(key: str) -> tuple[str, str, int] | None:
    """Return (kind, event key, seq) of an event item key, or None when it is none."""
    kind = event_item_kind(key)
    if kind is None:
        return None
    event_key, sep, seq = key[len(EVENT_ITEM_PREFIX) + len(kind) + 1:].rpartition('#')
    if not sep or not (seq.isascii() and seq.isdigit()):
        return None
    return kind, event_key, int(seq)


@dataclass
class _Pose:
    xy: tuple[float, float] | None
    why_not: str = ''
    since: float | None = None   # [s] effective: when the why_not's age counts from


@dataclass
class _Selection:
    """What one cabin's manifest selected this tick, before the working set had its say."""

    manifest: Manifest
    board: Mapping[str, BoardEntry] = field(default_factory=dict)  # read only
    events: dict[str, Event] = field(default_factory=dict)  # item key -> event, oldest first
    touched: set[str] = field(default_factory=set)  # board keys whose selection changed
    went_stale: set[str] = field(default_factory=set)  # board keys that went stale since
    stale: Mapping[str, None] = field(default_factory=dict)   # read only
    stale_notes: tuple[Missing, ...] = ()   # the notes listed of them, sorted by key
    summaries: tuple[MissingSummary, ...] = ()   # the stale keys of each glob, counted
    withheld: list[str] = field(default_factory=list)  # keys removed by injected drops
    # Selected but not served, per key: board keys and event items kept apart for required
    # globs. The cabin's board notes and its served keys found evicted are kept across ticks
    # (read only here).
    board_absent: Mapping[str, Missing] = field(default_factory=dict)
    evicted_absent: Mapping[str, Missing] = field(default_factory=dict)
    event_absent: dict[str, Missing] = field(default_factory=dict)
    # Missing entries other than the stale keys' (made from stale_notes when the pack is).
    missing: dict[str, Missing] = field(default_factory=dict)
    map_window: MapWindow | None = None
    cabin: CabinBoard | None = None
    # Whether the missing texts may change with time or the log alone (ages, last events).
    timely: bool = False


@dataclass
class _Steady:
    """A cabin's last pack and what it was made of, to hand out again while that holds.

    Its missing entries and absent notes are a function of the cabin's board keys and
    notes (its `version`), its served keys found evicted (their notes' `evicted` version),
    its events and their absent notes, its map window and the map's missing entries: while
    all are the same, so are they; and with the same items' content, the same digest.
    """

    cabin: CabinBoard
    version: int
    evicted: int
    events: dict[str, Event]
    event_absent: dict[str, Missing]
    map_window: MapWindow | None
    map_missing: dict[str, Missing]
    items: list
    pack: Pack


@dataclass
class _Absent:
    """What a cabin's packs hold as `absent`, kept across ticks and changed by what changed.

    `notes` is a persistent map (a pack keeps the one of its tick for nothing): the
    cabin's board notes, overlaid by `evicted` (its served keys found evicted), overlaid
    by `events` (its event items not served). `version` grows with every change of
    `evicted`.
    """

    cabin: CabinBoard
    notes: immutables.Map
    evicted: dict[str, Missing] = field(default_factory=dict)
    events: dict[str, Missing] = field(default_factory=dict)
    version: int = 0


class _Kept:
    """Values by key from the last tick and this one; what this tick did not use goes at its end."""

    __slots__ = ('last', 'used')

    def __init__(self):
        self.last: dict = {}
        self.used: dict = {}

    def get(self, key):
        """Return the value kept under `key` this tick or the last, or None."""
        return self.used.get(key) or self.last.get(key)

    def use(self, key, value):
        """Keep `value` under `key` through the next tick; return it."""
        self.used[key] = value
        return value

    def end_tick(self) -> None:
        """Forget what this tick did not use."""
        self.last, self.used = self.used, {}


class _TickCaches:
    """What a tick made that the next one hands out again while its sources are the same objects.

    Every entry is checked against its sources (the very objects, or equal) before it is
    reused, so the caches change no frame, only its cost. What each buys, switched off
    alone (`make bench`'s three-cabin frame, mean at capacity 256, 0.64 ms with all on;
    BENCHMARKS.md, "What each speed mechanism buys"): the digests' encodings 1.38 ms, the
    map windows 1.60 ms, the key weights 0.95 ms, the steady packs 0.88 ms; the eviction
    notes 0.76 against 0.98 ms at capacity 64 (where items are evicted).
    """

    def __init__(self):
        self.windows = _Kept()          # scope -> (grid, source, its cut) (Assembler._kept)
        self.eviction_notes = _Kept()   # key -> (its eviction record, the Missing)
        self.encodings = ItemEncodings()   # the pack digests' item and event encodings
        # Per cabin, until the manifests change: its last steady pack (see _Steady), and the
        # weights of the keys it read (Assembler._weight_for).
        self.steady: dict[str, _Steady] = {}
        self.weights: dict[str, tuple[Manifest, dict[str, float], Any]] = {}

    def end_tick(self) -> None:
        """Forget what the ending tick did not use."""
        for kept in (self.windows, self.eviction_notes, self.encodings):
            kept.end_tick()


class Assembler:
    """Builds one frozen `Frame` per tick from the board, the event log and the map; thread-safe.

    Args:
        manifests: cabin name -> Manifest, in publishing order.
        working_set: the bounded set all selected items go through; the
            assembler owns it from now on (change limits via `set_limits`).
        pose_key: board key of the robot pose, JSON `{x, y, yaw}` [m, rad], read when
            `assemble` gets no pose; None when the pose comes only from the caller
            (a pose topic), so a board entry never stands in for it.
        route_key: board key of the route polyline, unless a manifest names its own.
    """

    def __init__(self, manifests: Mapping[str, Manifest], working_set: PyWorkingSet,
                 pose_key: str | None = 'pose', route_key: str = 'route'):
        # WorkingSet (the C put) is a PyWorkingSet (the reference); either works.
        if not isinstance(working_set, PyWorkingSet):
            raise ValueError(f'working_set: must be a WorkingSet or PyWorkingSet, '
                             f'got {type(working_set).__name__}')
        for name, key in (('pose_key', pose_key), ('route_key', route_key)):
            if (not isinstance(key, str) or not key) and (name, key) != ('pose_key', None):
                raise ValueError(f'{name}: must be a non-empty board key, got {key!r}')
        self._lock = threading.Lock()
        self._manifests = _checked_manifests(manifests)
        self._ws = working_set
        self._pose_key = pose_key
        self._route_key = route_key
        self._interest = _Interest(self._manifests, pose_key, route_key)
        # The board keys of interest (kept from the board's changes), each with its place in
        # board order (a number that grows as keys arrive).
        self._mirror: dict[str, BoardEntry] = {}
        self._positions: dict[str, int] = {}
        self._arrivals = 0
        self._cabins: dict[str, CabinBoard] = {}
        # What the cabins want of the board (key -> want), and the event items wanted last
        # tick; None: look at the whole working set next tick.
        self._board_wanted: dict[str, dict] = {}
        self._event_keys: set[str] | None = None
        # The wanted board keys evicted and unchanged, as (rank of their last use, key)
        # sorted: a tick offers back only those that can earn a place (see _waiting_now).
        self._waiting = SortedList()
        self._waiting_rank: dict[str, tuple] = {}
        # The keys present in the working set, sorted (as the last settlement left them),
        # and the keys whose presence this tick may have changed (put, evicted, readmitted,
        # removed).
        self._present: list[str] = sorted(working_set.keys())
        self._moved: set[str] = set()
        self._absent: dict[str, _Absent] = {}   # cabin name -> its packs' absent notes
        self._rewish = False  # a cabin started over: redo the whole board wish
        self._caches = _TickCaches()

    @property
    def manifests(self) -> dict[str, Manifest]:
        """The manifests in force (a copy)."""
        with self._lock:
            return dict(self._manifests)

    def set_manifests(self, manifests: Mapping[str, Manifest]) -> None:
        """Replace the manifests between ticks (runtime reconfiguration)."""
        manifests = _checked_manifests(manifests)
        with self._lock:
            self._manifests = manifests
            self._interest = _Interest(manifests, self._pose_key, self._route_key)
            self._caches.steady.clear()   # a cabin no longer there keeps no pack

    def set_limits(self, capacity: int, size_budget: int | None,
                   tick: int | None = None) -> list[EvictionRecord]:
        """Change the working set's limits between ticks; return the evictions this caused.

        `tick` is the tick the change takes effect in, the next one (None: the last
        assembled): its frame is the first without what the change evicts, so the
        evictions are of that tick.
        """
        with self._lock:
            if tick is not None:
                self._ws.tick = tick
            evictions = self._ws.set_limits(capacity, size_budget)
            self._moved.update(record.key for record in evictions)
            self._present_changed()
            return evictions

    def assemble(self, tick: int, now: float, board: BoardSnapshot, log: EventLog,
                 grid: GridMap | None, pose: Any = None) -> Frame:
        """Assemble and freeze the frame of `tick` at ROS time `now` [s].

        `pose` is (x, y) [m] or `{x, y}`; None reads the board's pose key (no pose
        when the assembler has none).
        `grid` None means no map has arrived yet. The board and the log should
        place their stamps on the working set's timebase (their `timebase`
        argument), so that ttl and windows hold across clock resets.
        """
        if not is_finite_number(now):
            raise ValueError(f'now: must be a finite time in seconds, got {now!r}')
        xy = None if pose is None else as_point(pose, 'pose')
        with self._lock:
            changes = board.changes(self._interest)
            view = self._sync(board, changes)
            self._ws.tick = tick
            effective = self._ws.timebase.observe(now)
            self._forget_removed(board, changes)
            robot = _Pose(xy) if xy is not None else self._board_pose(view, effective)
            windows: dict[tuple, tuple[MapWindow | None, Missing | None]] = {}
            selections = [self._select(manifest, view, changes, log, grid, effective, robot,
                                       windows)
                          for manifest in self._manifests.values()]
            settlement = self._store(selections, now, effective)
            packs = [self._pack(selection, tick, now, effective, log)
                     for selection in selections]
            self._caches.end_tick()
            self._moved.clear()
            return make_frame(tick, now, packs, settlement.evicted, self._ws.capacity_alarm,
                              effective=effective, readmitted=settlement.readmitted)

    # -- selection ----------------------------------------------------------

    def _sync(self, board: BoardSnapshot, changes: BoardChanges) -> BoardView:
        """Bring the mirror of the board keys any manifest may read up to date; picture it.

        The board's changes for the assembler's interest name what was set or
        removed since the last tick, so a tick costs the updates, not the board.
        """
        mirror, positions = self._mirror, self._positions
        if changes.full:
            mirror.clear()
            positions.clear()
            self._cabins.clear()
        for key in changes.moved:
            mirror.pop(key, None)
        for key, entry in changes.entries.items():
            if entry is None:
                mirror.pop(key, None)
                positions.pop(key, None)
                continue
            if key not in mirror:
                positions[key] = self._arrivals
                self._arrivals += 1
            mirror[key] = entry
        return BoardView(board.version, MappingProxyType(mirror))

    def _forget_removed(self, board: BoardSnapshot, changes: BoardChanges) -> None:
        """Board items the board no longer holds leave the working set (not an eviction)."""
        ws = self._ws
        if changes.full:
            removed = [item.key for item in ws.items() + ws.evicted_items()
                       if item.source is Source.BOARD and item.key not in board]
        else:
            removed = [key for key, entry in changes.entries.items() if entry is None]
        for key in removed:
            item = ws.get(key) or ws.evicted_item(key)
            if item is not None and item.source is Source.BOARD:
                ws.remove(key)
                self._moved.add(key)

    def _board_pose(self, view: BoardView, now: float) -> _Pose:
        if self._pose_key is None:
            return _Pose(None, 'no pose received yet (the pose does not come from the board)')
        entry = view.get(self._pose_key)
        if entry is None:
            return _Pose(None, f'no pose: board key {self._pose_key!r} never seen')
        if entry.is_stale(now):
            note = stale_note(entry)
            return _Pose(None, f'pose {note.detail}', note.since)
        try:
            return _Pose(as_point(entry.value, self._pose_key))
        except ValueError as error:
            return _Pose(None, f'pose malformed: {error}')

    def _select(self, manifest: Manifest, view: BoardView, changes: BoardChanges,
                log: EventLog, grid: GridMap | None, now: float, robot: _Pose,
                windows: dict) -> _Selection:
        selection = _Selection(manifest)
        cabin = self._cabins.get(manifest.name)
        fresh = cabin is None or cabin.manifest is not manifest
        if fresh:
            cabin = self._cabins[manifest.name] = CabinBoard(manifest, self._ws.exempt_prefixes)
            self._rewish = True
        cabin.update(view.entries, None if fresh else changes.entries, now)
        selection.board = cabin.served
        selection.touched = cabin.take_touched()
        selection.went_stale = cabin.take_went_stale()
        selection.stale = cabin.stale
        selection.stale_notes = cabin.stale_listed
        selection.summaries = cabin.summaries
        positions = self._positions
        selection.withheld = sorted(cabin.withheld, key=positions.__getitem__)
        selection.board_absent = cabin.absent
        selection.cabin = cabin
        self._select_events(selection, log, now, cabin.include, cabin.exclude)
        if manifest.map.enabled and not manifest.drops.map:
            selection.map_window = self._map_window(selection, view, grid, now, robot, windows)
        return selection

    def _select_events(self, selection: _Selection, log: EventLog, now: float,
                       include: frozenset[str], exclude: frozenset[str]) -> None:
        manifest = selection.manifest
        scope, drops = manifest.events, manifest.drops
        if not scope.enabled:
            return
        kinds = None
        if scope.kinds or drops.event_kinds:
            # An injected kind drop is the manifest without that kind, cap included.
            kinds = set(scope.kinds or EventKind) - drops.event_kinds
            if not kinds:
                return
        for event in log.window(now - scope.window_s, now, kinds, scope.max_count):
            key = event_item_key(event)
            if drops.any_key.match(key):
                selection.withheld.append(key)
                selection.event_absent[key] = Missing(key, MissingReason.INJECTED_DROP,
                                                      'withheld by an injected drop')
            elif (event.kind not in EXEMPT_EVENT_KINDS
                  and not tags_pass(event.tags, include, exclude)):
                selection.event_absent[key] = Missing(
                    *filtered(key, event.tags, include, exclude))
            else:
                selection.events[key] = event

    def _map_window(self, selection: _Selection, view: BoardView, grid: GridMap | None,
                    now: float, robot: _Pose, windows: dict) -> MapWindow | None:
        """Cut the cabin's map window (shared by all cabins with the same scope this tick)."""
        scope = selection.manifest.map
        if grid is None:
            selection.missing[MAP] = Missing(MAP, MissingReason.NEVER_SEEN, 'no map received yet')
            return None
        route_problem = None
        if scope.corridor_m > 0.0:
            route_key = scope.route_key or self._route_key
            cache_key = ('corridor', route_key, scope.corridor_m)
            if cache_key not in windows:
                windows[cache_key] = self._corridor(view, grid, now, route_key, scope.corridor_m)
            window, route_problem = windows[cache_key]
            if window is not None:
                return window
            if scope.radius_m <= 0.0:
                selection.missing[MAP] = Missing(MAP, route_problem.reason, route_problem.detail,
                                                 route_problem.since)
                return None
            selection.missing[route_problem.key] = Missing(
                route_problem.key, route_problem.reason,
                f'{route_problem.detail}; '
                f'map falls back to the {scope.radius_m:.1f} m pose window')
        cache_key = ('pose', scope.radius_m)
        if cache_key not in windows:
            windows[cache_key] = self._pose_window(grid, robot, scope.radius_m)
        window, problem = windows[cache_key]
        if problem is not None:
            selection.missing[MAP] = problem
        return window

    def _corridor(self, view: BoardView, grid: GridMap, now: float, route_key: str,
                  half_width_m: float) -> tuple[MapWindow | None, Missing | None]:
        entry = view.get(route_key)
        if entry is None:
            return None, Missing(route_key, MissingReason.NEVER_SEEN,
                                 f'no route: board key {route_key!r} never seen')
        if entry.is_stale(now):
            note = stale_note(entry)
            return None, Missing(route_key, MissingReason.STALE, f'route {note.detail}',
                                 note.since)
        return self._kept(('corridor', route_key, half_width_m), grid, entry.value,
                          lambda: self._cut_corridor(grid, entry.value, route_key,
                                                     half_width_m))

    @staticmethod
    def _cut_corridor(grid: GridMap, route: Any, route_key: str,
                      half_width_m: float) -> tuple[MapWindow | None, Missing | None]:
        try:
            window = grid.corridor(route, half_width_m)
        except ValueError as error:
            return None, Missing(route_key, MissingReason.OUT_OF_SCOPE,
                                 f'route malformed: {error}')
        if window is None:
            return None, Missing(route_key, MissingReason.OUT_OF_SCOPE,
                                 'route corridor lies outside the map')
        return freeze_window(window), None

    def _kept(self, scope: tuple, grid: GridMap, source: Any, cut) -> tuple:
        """Return `cut()`, or what it gave last tick for the same grid, scope and source.

        A grid is never written to (GridMap's contract) and board values are frozen,
        so the same objects cut the same window: it is kept, not cut, copied and
        hashed again. Entries not used in a tick are dropped at its end.
        """
        kept = self._caches.windows.get(scope)
        if kept is None or kept[0] is not grid or kept[1] is not source and kept[1] != source:
            kept = (grid, source, cut())
        return self._caches.windows.use(scope, kept)[2]

    def _pose_window(self, grid: GridMap, robot: _Pose,
                     radius_m: float) -> tuple[MapWindow | None, Missing | None]:
        if robot.xy is None:
            return None, Missing(MAP, MissingReason.OUT_OF_SCOPE, robot.why_not, robot.since)
        return self._kept(('pose', radius_m), grid, robot.xy,
                          lambda: self._cut_pose_window(grid, robot.xy, radius_m))

    @staticmethod
    def _cut_pose_window(grid: GridMap, xy: tuple[float, float],
                         radius_m: float) -> tuple[MapWindow | None, Missing | None]:
        x, y = xy
        if not grid.contains(x, y):
            height, width = grid.shape
            ox, oy = grid.origin
            return None, Missing(MAP, MissingReason.OUT_OF_SCOPE,
                                 f'pose ({x:.2f}, {y:.2f}) m outside the map '
                                 f'[{ox:.2f}, {ox + width * grid.resolution:.2f}] x '
                                 f'[{oy:.2f}, {oy + height * grid.resolution:.2f}] m')
        return freeze_window(grid.window(x, y, radius_m)), None

    # -- working set --------------------------------------------------------

    def _store(self, selections: list[_Selection], now: float,
               effective: float) -> Settlement:
        """Settle this tick's selection in the working set at ROS `now` [s]; return the changes.

        New or changed content is put (new information is fresh); an evicted
        item selected again unchanged is only a candidate, competing with the
        rank of its last use; what is present after the settlement and selected
        is then used (touched), so an unchanged selection settles once and
        stays settled. The board's part of the wish is kept across ticks and
        redone only for the keys a cabin's selection changed.
        """
        ws = self._ws
        board_wanted = self._board_wanted
        touched = set().union(*(selection.touched for selection in selections))
        # Nothing puts a key no cabin serves: only the keys that went stale since the last
        # tick need marking (a cabin starting over names all its stale keys so).
        newly_stale = set().union(*(selection.went_stale for selection in selections))
        if self._rewish:
            touched.update(board_wanted)
            self._rewish = False
        boards = [(selection.board, self._weight_for(selection.manifest))
                  for selection in selections] if touched else ()
        # Each cabin's part of the wishes: its served keys among the touched ones (the smaller
        # set is the one iterated), merged over the cabins in their order.
        wants: dict[str, dict] = {}
        board_source = Source.BOARD
        for board, weight in boards:
            for key in board.keys() & touched:
                entry = board[key]
                importance = weight(key) if entry.importance is None else entry.importance
                previous = wants.get(key)
                if previous is None:   # _merged's result for a first wish, without its call
                    wants[key] = {'value': entry.value, 'importance': importance,
                                  'source': board_source, 'stamp': entry.stamp, 'exempt': False}
                else:
                    wants[key] = _merged(previous, board_source, entry.value, entry.stamp,
                                         importance, False)
        board_wanted.update(wants)
        for key in touched.difference(wants):
            board_wanted.pop(key, None)
        events: dict[str, dict] = {}
        for selection in selections:
            if not selection.events:
                continue
            weight = self._weight_for(selection.manifest)
            for key, event in selection.events.items():
                events[key] = _merged(
                    events.get(key) or board_wanted.get(key), Source.LOG, event.detail,
                    event.stamp, weight(key) if event.importance is None else event.importance,
                    event.kind in EXEMPT_EVENT_KINDS)
        # An event that left every cabin's window has ended its scope: not an eviction.
        if self._event_keys is None:
            ended = [item.key for item in ws.items() + ws.evicted_items()
                     if item.source is Source.LOG and item.key not in events]
        else:
            ended = [key for key in self._event_keys if key not in events]
        for key in ended:
            item = ws.get(key) or ws.evicted_item(key)
            if item is not None and item.source is Source.LOG:
                ws.remove(key)
                self._moved.add(key)
        self._event_keys = set(events)
        # A stale item is never served again as it is (only a new entry freshens the key):
        # present, it is marked stale and sinks; evicted, it has nothing left to compete
        # for and is forgotten, as are stale items this tick evicts (below). So the working
        # set keeps no slot per key that ever went stale on a board that only grows.
        for key in sorted(newly_stale):
            item = ws.get(key)
            if item is not None:
                if not item.stale:
                    ws.mark_stale(key)
            elif key not in board_wanted and ws.is_evicted(key):
                ws.remove(key)
                self._moved.add(key)
        # Only keys whose wish changed and events can need a put: any other wanted key is
        # present and unchanged, or evicted and unchanged (waiting).
        self._recheck_waiting(touched | self._moved)
        candidates = []
        holding = ws.holding
        for key in sorted(touched.union(events)):
            want = (events.get(key) if events else None) or board_wanted.get(key)
            if want is None:
                continue
            held = holding(key, want['value'], want['stamp'], want['importance'])
            if held:   # present and unchanged
                continue
            if held is False:   # evicted and unchanged: it competes with its last use
                if key in events:
                    candidates.append(key)
                continue
            ws.put(key, now=now, defer_eviction=True, **want)
            self._moved.add(key)
        candidates += self._waiting_now()
        # Evict once, after the whole tick's selection is in: what goes is the least
        # valuable of the tick, never an item put back a moment later. Unchanged present
        # items compete with their last use, so an unchanged selection keeps its winners.
        settlement = ws.settle(candidates)
        for record in settlement.evicted:
            self._moved.add(record.key)
            if ws.evicted_item(record.key).stale:
                ws.remove(record.key)
        self._moved.update(candidates)
        self._present_changed()
        self._recheck_waiting(self._moved)
        # Served, not put this tick: used now.
        ws.touch_present([key for key in self._present if key in board_wanted or key in events],
                         now)
        return settlement

    def _recheck_waiting(self, keys) -> None:
        """Note whether each of `keys` waits: wanted on the board, evicted and unchanged."""
        ws, wanted, waiting, ranks = self._ws, self._board_wanted, self._waiting, self._waiting_rank
        for key in keys:
            rank = ranks.pop(key, None)
            if rank is not None:
                waiting.remove((rank, key))
            want = wanted.get(key)
            if want is not None and ws.holding(key, want['value'], want['stamp'],
                                               want['importance']) is False:
                rank = ranks[key] = ws.rank_of(key)
                waiting.add((rank, key))

    def _waiting_now(self) -> list[str]:
        """Return the waiting keys that may earn a place this tick, best first.

        The room left and every key ranked above the lowest present item: settling
        evicts the lowest first, which only raises the lowest, so no other can return.
        """
        ws, keys = self._ws, []
        room = ws.capacity - len(ws)
        lowest = ws.lowest_rank()
        for rank, key in reversed(self._waiting):
            if room > 0:
                room -= 1
            elif lowest is None or not rank > lowest:
                break
            keys.append(key)
        return keys

    def _present_changed(self) -> None:
        """Bring the sorted present keys up to date with the keys that moved."""
        moved, ws = self._moved, self._ws
        if not moved:
            return
        present = set(self._present).difference(moved)
        present.update(key for key in moved if key in ws)
        self._present = sorted(present)

    def _weight_for(self, manifest: Manifest):
        """Return `manifest.weight_for`, remembering each key's weight (it depends on the key)."""
        cached = self._caches.weights.get(manifest.name)
        if cached is None or cached[0] is not manifest or len(cached[1]) > 100_000:
            weights: dict[str, float] = {}

            def weight(key: str) -> float:
                value = weights.get(key)
                if value is None:
                    value = weights[key] = manifest.weight_for(key)
                return value
            cached = self._caches.weights[manifest.name] = (manifest, weights, weight)
        return cached[2]

    # -- packs --------------------------------------------------------------

    def _pack(self, selection: _Selection, tick: int, stamp: float, now: float,
              log: EventLog) -> Pack:
        """Freeze one cabin's pack at ROS time `stamp`, effective time `now` [s]."""
        ws = self._ws
        served = selection.board
        # The served items are the present keys the cabin serves: the tick looks at the
        # working set, not at the served keys evicted.
        found = ws.items_of([key for key in self._present if key in served])
        events = [event for key, event in selection.events.items() if key in ws]
        for key in selection.events:
            if key not in ws:
                selection.event_absent[key] = self._evicted(key)
        absent = self._absent_notes(selection)
        selection.evicted_absent = absent.evicted
        name = selection.manifest.name
        caches = self._caches
        steady = caches.steady.pop(name, None)
        if steady is not None and self._holds(steady, selection, found, absent):
            # The same keys, events, map and notes as last tick's pack: the same missing and
            # absent; with the same items' content the same digest (only last use moved).
            last = steady.pack
            if changed_positions(steady.items, found, DIGEST_SAME, DIGEST_EQUAL):
                pack = make_pack(name, tick, stamp, found, last.events, last.map_window,
                                 last.missing, last.absent, effective=now,
                                 encodings=caches.encodings, summaries=last.summaries)
            else:
                pack = Pack(name, tick, stamp, tuple(found), last.events, last.map_window,
                            last.missing, last.absent, last.digest, now,
                            summaries=last.summaries)
                caches.encodings.carry(name)
            steady.items, steady.pack = found, pack
            caches.steady[name] = steady
            return pack
        map_missing = dict(selection.missing)
        self._require_board(selection, found)
        self._require_events(selection, events, log, now)
        self._report_drops(selection)
        # Made only when some item came back (readmissions_of looks at none otherwise).
        returned = ws.readmissions_of(chain((item.key for item in found),
                                            map(event_item_key, events)))
        pack = make_pack(name, tick, stamp, found, events, selection.map_window,
                         _missing_sorted(selection), absent.notes, effective=now,
                         readmitted=sorted(returned, key=lambda r: r.key),
                         encodings=caches.encodings, summaries=selection.summaries)
        # Kept only when nothing in it comes from outside the selection: no evicted event,
        # no readmission, no text of the log's latest events. (Stale keys' notes are the
        # cabin's: its version moves when one comes, goes or changes; evicted keys' notes
        # are counted by `absent.version`.)
        if len(events) == len(selection.events) and not returned and not selection.timely:
            caches.steady[name] = _Steady(selection.cabin, selection.cabin.version,
                                          absent.version, selection.events,
                                          selection.event_absent, selection.map_window,
                                          map_missing, found, pack)
        return pack

    def _absent_notes(self, selection: _Selection) -> _Absent:
        """Bring the cabin's absent notes up to date with what changed this tick; return them.

        What changed: the cabin's board notes it says changed, the served keys that came,
        went or changed and the keys whose presence moved (for the evicted notes), and the
        event items' notes. A cabin that started over starts its notes over.
        """
        cabin, ws = selection.cabin, self._ws
        name = selection.manifest.name
        state = self._absent.get(name)
        changed = cabin.take_absent_changed()
        served = cabin.served
        if state is None or state.cabin is not cabin or changed is None:
            state = self._absent[name] = _Absent(cabin, immutables.Map(cabin.absent))
            recheck = served.keys()
            changed = set()
        else:
            recheck = selection.touched | self._moved
        evicted = state.evicted
        for key in recheck:
            note = self._evicted(key) if key in served and key not in ws else None
            if note is not evicted.get(key):
                state.version += 1
                changed.add(key)
                if note is None:
                    del evicted[key]
                else:
                    evicted[key] = note
        events, last_events = selection.event_absent, state.events
        if events or last_events:
            # Notes are made anew each tick: an equal one keeps the note the packs share.
            changed.update(key for key in events.keys() | last_events.keys()
                           if events.get(key) != last_events.get(key))
            state.events = dict(events)
        if changed:
            board, edit = cabin.absent, state.notes.mutate()
            for key in changed:
                note = events.get(key) or evicted.get(key) or board.get(key)
                if note is None:
                    edit.pop(key, None)
                else:
                    edit[key] = note
            state.notes = edit.finish()
        return state

    def _holds(self, steady: _Steady, selection: _Selection, found: list,
               absent: _Absent) -> bool:
        """Return True when `selection` and its `found` items make `steady`'s pack again."""
        cabin = selection.cabin
        if (steady.cabin is not cabin or steady.version != cabin.version
                or steady.evicted != absent.version
                or selection.map_window is not steady.map_window
                or selection.missing != steady.map_missing
                or selection.events != steady.events
                or selection.event_absent != steady.event_absent
                or len(found) != len(steady.items)):
            return False
        ws = self._ws
        if selection.events and not all(map(ws.__contains__, selection.events)):
            return False
        return not ws.readmissions_of(chain((item.key for item in found), selection.events))

    def _evicted(self, key: str) -> Missing:
        """Note a selected key that is evicted (its age counts from its last use)."""
        record = self._ws.eviction_of(key) or self._ws.last_eviction(key)
        if record is None:
            return Missing(key, MissingReason.EVICTED, 'evicted (record no longer in the log)')
        # The text is made once per eviction (one record object per eviction).
        kept = self._caches.eviction_notes.get(key)
        if kept is None or kept[0] is not record:
            kept = (record, Missing(
                key, MissingReason.EVICTED, f'evicted at tick {record.tick} ({record.reason}): '
                f'importance {record.importance:.2f}, unused since its last use',
                record.last_used))
        return self._caches.eviction_notes.use(key, kept)[1]

    def _require_board(self, selection: _Selection, items: list) -> None:
        ws = self._ws
        for pattern in selection.manifest.requirements.board:
            if not is_glob(pattern):
                # An exact key: no need to match it against every served and absent key.
                if pattern in selection.board and pattern in ws:
                    continue
                note = (selection.evicted_absent.get(pattern)
                        or selection.board_absent.get(pattern))
                absent = [] if note is None else [note]
            else:
                if any(fnmatch.fnmatchcase(item.key, pattern) for item in items):
                    continue
                # In board order, the evicted after the others (as the pack found them).
                notes = sorted((note for key, note in chain(selection.board_absent.items(),
                                                            selection.evicted_absent.items())
                                if fnmatch.fnmatchcase(key, pattern)),
                               key=lambda note: (note.reason is MissingReason.EVICTED,
                                                 self._positions.get(note.key, 0)))
                absent = notes
            if pattern not in selection.missing and pattern not in selection.stale:
                selection.missing[pattern] = _summarise(
                    pattern, absent, 'not on the board' if not is_glob(pattern)
                    else 'no board key matches')

    def _require_events(self, selection: _Selection, events: list[Event], log: EventLog,
                        now: float) -> None:
        manifest = selection.manifest
        scope = manifest.events
        for kind in manifest.requirements.event_kinds:
            spec = EVENTS_PREFIX + kind
            kinds = scope.kinds_named(kind)
            if any(event.kind in kinds for event in events):
                continue
            if all(k in manifest.drops.event_kinds for k in kinds):
                selection.missing[spec] = Missing(spec, MissingReason.INJECTED_DROP,
                                                  'kind withheld by an injected drop')
                continue
            absent = [note for key, note in selection.event_absent.items()
                      if kind in (ALL_KINDS, event_item_kind(key))]
            selection.timely = True
            stamps = [s for s in map(log.last_stamp, kinds) if s is not None]
            if not stamps:
                why_not = f'no {kind} event logged yet'
                selection.missing[spec] = _summarise(spec, absent, why_not)
                continue
            cap = f', newest {scope.max_count}' if scope.max_count else ''
            # Ages, not times: they read the same on any epoch's clock.
            selection.missing[spec] = _summarise(spec, absent, (
                f'none in the window of the last {scope.window_s:.1f} s{cap}; '
                f'last {kind} event {max(0.0, now - max(stamps)):.1f} s ago'),
                MissingReason.OUT_OF_SCOPE)

    def _report_drops(self, selection: _Selection) -> None:
        """Make every injected drop visible in the pack, so a test can see it was active."""
        for spec in selection.manifest.drop:
            if spec == MAP:
                detail = 'injected drop: map window withheld'
            elif spec.startswith(EVENTS_PREFIX):
                detail = f'injected drop: {spec[len(EVENTS_PREFIX):]} events withheld'
            else:
                pattern = spec[len(BOARD_PREFIX):] if spec.startswith(BOARD_PREFIX) else spec
                keys = [key for key in selection.withheld if fnmatch.fnmatchcase(key, pattern)]
                detail = f'injected drop: {len(keys)} item(s) withheld'
                if keys:
                    detail += ': ' + ', '.join(keys[:5]) + (', ...' if len(keys) > 5 else '')
            selection.missing[spec] = Missing(spec, MissingReason.INJECTED_DROP, detail)


class _Interest:
    """Matches every board key an assembler may read: selected, goal tags, pose, route.

    Hashable by identity: the board keeps one index per interest, and a change of
    manifests makes a new one.
    """

    __slots__ = ('_manifests', '_goal_globs', '_exact')

    def __init__(self, manifests: Mapping[str, Manifest], pose_key: str | None,
                 route_key: str):
        self._manifests = tuple(manifests.values())
        goal_patterns = [manifest.tags.from_goal for manifest in self._manifests
                         if manifest.tags.from_goal]
        self._goal_globs = tuple(pattern for pattern in goal_patterns if is_glob(pattern))
        self._exact = frozenset(
            [pattern for pattern in goal_patterns if not is_glob(pattern)]
            + [key for key in (pose_key, route_key) if key]
            + [manifest.map.route_key for manifest in self._manifests if manifest.map.route_key])

    def match(self, key: str) -> bool:
        """Return True when some manifest, the pose or the route may read `key`."""
        return (key in self._exact
                or any(manifest.selects.match(key) for manifest in self._manifests)
                or any(fnmatch.fnmatchcase(key, pattern) for pattern in self._goal_globs))


def _merged(previous: dict | None, source: Source, value: Any, stamp: float,
            importance: float, exempt: bool) -> dict:
    """Merge one cabin's wish for an item: the highest importance and any exemption win."""
    if previous is not None:
        importance = max(importance, previous['importance'])
        exempt = exempt or previous['exempt']
    return {'value': value, 'importance': importance, 'source': source, 'stamp': stamp,
            'exempt': exempt}


def _summarise(key: str, absent: list[Missing], why_none: str,
               none_reason: MissingReason = MissingReason.NEVER_SEEN) -> Missing:
    """One Missing for a required key or category from the absent keys behind it."""
    if not absent:
        return Missing(key, none_reason, why_none)
    if len(absent) == 1 and absent[0].key == key:
        return absent[0]
    reason = min((m.reason for m in absent), key=_REASON_PRIORITY.index)
    shown = '; '.join(f'{m.key}: {m.reason.value} ({m.detail})' for m in absent[:3])
    more = f'; and {len(absent) - 3} more' if len(absent) > 3 else ''
    return Missing(key, reason, f'{len(absent)} matching not served: {shown}{more}')


_by_key = operator.attrgetter('key')   # of a Missing


def _missing_sorted(selection: _Selection) -> list[Missing]:
    """Return a pack's missing entries by key: the stale keys' and the others (which win)."""
    others, notes = selection.missing, selection.stale_notes
    if any(key in selection.stale for key in others):
        notes = [note for note in notes if note.key not in others]
    return sorted(chain(notes, others.values()), key=_by_key)


def _checked_manifests(manifests: Mapping[str, Manifest]) -> dict[str, Manifest]:
    if not isinstance(manifests, Mapping) or not manifests:
        raise ValueError('manifests: must be a non-empty mapping of cabin name -> Manifest')
    for name, manifest in manifests.items():
        if not isinstance(manifest, Manifest) or manifest.name != name:
            raise ValueError(f'manifests[{name!r}]: must be the Manifest named {name!r}, '
                             f'got {manifest!r}')
    return dict(manifests)
