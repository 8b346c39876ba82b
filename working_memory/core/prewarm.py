"""A rehearsal tick: the assembler run on a private scene just before a tick after a pause.

Ticks far apart (10 Hz) find the tick's code out of the CPU caches: on a shared 2-core
VM a 10 Hz tick took 0.7-0.8 ms in the node against 0.3-0.4 ms for the same tick run
back to back (BENCHMARKS.md, "Issue 12, the prewarm (eighth session)"). Running the same
code on other data just before the freeze brings most of it back, and the cost moves
before the freeze: what the frame holds is read at its stamp, so the time from the
stamp to a cabin's receipt is what gets shorter. The warmth fades within milliseconds,
so the rehearsal must come right before the tick.

The scene is the node's manifests with made-up board entries, events, a small map and
a pose: its own working set, board, event log and assembler on a clock of its own, so
nothing of it reaches the node's working set, frames or timeline. Pure: no ROS.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

import numpy as np

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.frames import Frame
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import Manifest

# Ticks closer together than this [s] find the code warm: no rehearsal before them.
MIN_GAP_S = 0.02
STEP_S = 0.1              # [s] the scene's clock moves this much per rehearsal
MAP_CELLS = 100           # the scene's square map [cells]
MAP_RESOLUTION = 0.05     # [m/cell]
EVENTS_KEPT = 16          # the scene's event log holds no more
TTL_S = 1.0               # [s] the scene's entries go stale after this, as a sensor's
_CENTRE = MAP_CELLS * MAP_RESOLUTION / 2.0


def scene_key(pattern: str) -> str | None:
    """Return a board key `pattern` matches (its wildcards filled in), or None."""
    key = pattern.replace('*', 'prewarm').replace('?', 'p')
    return key if '[' not in key and fnmatch.fnmatchcase(key, pattern) else None


def scene_entries(manifests: Mapping[str, Manifest], pose_key: str | None,
                  route_key: str = 'route') -> list[tuple[str, tuple[str, ...]]]:
    """Return the scene's board keys with their tags: some key each cabin selects.

    A key takes a cabin's first include tag, so that its tag filter lets it through.
    The pose and route keys are left out (the scene sets them itself).
    """
    keys: dict[str, tuple[str, ...]] = {}
    for manifest in manifests.values():
        tags = tuple(manifest.tags.include[:1])
        for pattern in manifest.board_keys:
            key = scene_key(pattern)
            if key is not None and key not in (pose_key, route_key):
                keys.setdefault(key, tags)
    return list(keys.items())


class Prewarm:
    """The assembler's tick on a private scene of the same manifests; see the module doc."""

    def __init__(self, manifests: Mapping[str, Manifest], pose_key: str | None,
                 capacity: int, exempt_prefixes: tuple[str, ...] = ('goal', 'safety'),
                 route_key: str = 'route'):
        self._working_set = WorkingSet(capacity, None, exempt_prefixes)
        timebase = self._working_set.timebase
        self.board = BoardSnapshot(timebase)
        self.log = EventLog(EVENTS_KEPT, timebase)
        self.assembler = Assembler(manifests, self._working_set, pose_key=pose_key,
                                   route_key=route_key)
        self.grid = GridMap(np.zeros((MAP_CELLS, MAP_CELLS), dtype=np.int8), (0.0, 0.0),
                            MAP_RESOLUTION)
        self._pose_key, self._route_key = pose_key, route_key
        self._entries = scene_entries(manifests, pose_key, route_key)
        kinds = {kind for manifest in manifests.values() for kind in manifest.events.kinds}
        self._kinds = sorted(kinds) or [EventKind.OBSERVATION]
        self.tick = 0

    def run(self) -> Frame:
        """Change the scene's board and log, and assemble one tick of it; return its frame."""
        self.tick += 1
        now = self.tick * STEP_S
        entries = [BoardEntry(key, {'prewarm': self.tick}, now, ttl=TTL_S, tags=tags)
                   for key, tags in self._entries]
        if self.tick == 1:   # pose and route once: their windows are kept, as a still robot's
            point = {'x': _CENTRE, 'y': _CENTRE}
            entries.append(BoardEntry(self._route_key, [point, {'x': _CENTRE + 1.0,
                                                                'y': _CENTRE}], now))
            if self._pose_key is not None:
                entries.append(BoardEntry(self._pose_key, point, now))
        self.board.apply(entries)
        kind = self._kinds[self.tick % len(self._kinds)]
        self.log.append(Event(now, kind, 'prewarm', f'prewarm:{self.tick % 4}'))
        pose = None if self._pose_key is not None else (_CENTRE, _CENTRE)
        return self.assembler.assemble(self.tick, now, self.board, self.log, self.grid, pose)
