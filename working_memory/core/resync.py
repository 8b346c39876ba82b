"""A node that starts from an empty memory re-reads the truth: the resync and how packs show it.

Pure Python. The working memory is a cache of the state board and the event log;
at a start (a new process, a respawn, cleanup -> configure) it holds nothing
until the writers answer the node's Resync request (msg/Resync.msg). Until then a
pack must not pretend: `Resync` says when the re-reading ends, and `mark_resyncing`
turns the NEVER_SEEN notes of a frame made meanwhile into RESYNCING notes.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Iterable

from working_memory.core.board import BoardSnapshot
from working_memory.core.frames import Frame, make_frame, make_pack
from working_memory.core.items import BoardEntry, Missing, MissingReason
from working_memory.core.manifest import MAP

# The least time a resync lasts [s]: discovery finds the writers on the graph in it.
SETTLE_S = 0.5
# Live removals remembered, so that a writer's answer does not bring back a key removed after
# the answer was made (the oldest forgotten beyond this).
REMOVALS_KEPT = 10_000


class Resync:
    """The re-reading of the writers by the node start `start_id`, from `started`.

    `started` is the node clock's time [s] (for people and for the writers' event
    window); the waiting runs on a steady clock from `steady` [s] (`update`'s `now`):
    discovery takes wall time, whatever sim time does. It ends at the first `update`
    in which every writer the graph shows answering (publishers on `resync/answer`)
    has answered, at least one has, and no new one appeared for SETTLE_S; or
    `bound_s` after the start whatever was heard (no writer that answers, or one the
    discovery has not found yet: after a kill that can take seconds). Plain writers
    (`ros2 topic pub`) answer nothing: what they published before the start is lost
    to the node. A bound of 0 ends it at once. `restart` is True for a node start that
    is not its process's first (cleanup -> configure); a respawned process cannot know
    it was one, so its first start is no restart.
    """

    def __init__(self, started: float, bound_s: float, start_id: str = '',
                 steady: float = 0.0, restart: bool = False):
        if not bound_s >= 0.0:
            raise ValueError(f'bound_s: must be >= 0 s, got {bound_s!r}')
        self.started = started
        self.start_id = start_id
        self.restart = restart
        self.bound_s = bound_s
        self.took: float | None = 0.0 if bound_s == 0.0 else None   # [s] steady, once ended
        self.unheard: tuple[str, ...] = ()   # the writers not heard when it ended
        self._steady = steady
        self._heard: set[bytes] = set()
        self._seen: frozenset[bytes] = frozenset()   # the answering writers shown last
        self._seen_since = steady                    # ... since when [s] steady
        self._removed: OrderedDict[str, float] = OrderedDict()   # key -> stamp [s]

    @property
    def active(self) -> bool:
        """True while the node re-reads the writers."""
        return self.took is None

    def heard(self, publisher: bytes) -> bool:
        """Note an answer from `publisher` (its gid); return False when it came after the end."""
        self._heard.add(publisher)
        return self.took is None

    def removed(self, keys: Iterable[str], stamp: float) -> None:
        """Note board keys removed live at `stamp` [s] (the update's)."""
        removed = self._removed
        for key in keys:
            removed[key] = stamp
            removed.move_to_end(key)
        while len(removed) > REMOVALS_KEPT:
            removed.popitem(last=False)

    def standing(self, entries: Iterable[BoardEntry], board: BoardSnapshot) -> list[BoardEntry]:
        """Return the entries of a writer's answer the board takes.

        An answer may cross a live update on the way (two topics, no order between
        them): an entry older than the board's for its key, or than a live removal of
        its key, is the past and is left out.
        """
        taken = []
        for entry in entries:
            held = board.get(entry.key)
            if held is not None and held.stamp >= entry.stamp:
                continue
            gone = self._removed.get(entry.key)
            if gone is not None and gone >= entry.stamp:
                continue
            taken.append(entry)
        return taken

    def update(self, now: float, writers: dict[bytes, str]) -> bool:
        """Judge at `now` [s, steady] with the graph's `writers` ({gid: name}); True if active.

        `writers` are the publishers on `resync/answer` now.
        """
        if self.took is not None:
            return False
        shown = frozenset(writers)
        if shown != self._seen:
            self._seen, self._seen_since = shown, now
        waited = now - self._steady
        unheard = tuple(sorted({name for gid, name in writers.items()
                                if gid not in self._heard}))
        settled = now - self._seen_since >= SETTLE_S and waited >= SETTLE_S
        if (settled and self._heard and not unheard) or waited >= self.bound_s:
            self.took, self.unheard = waited, unheard
            return False
        return True

    @property
    def complete(self) -> bool:
        """True unless it ended on its bound with a writer shown but not heard, or none heard."""
        return self.bound_s == 0.0 or (self.took is not None and not self.unheard
                                       and bool(self._heard))

    def status(self, now: float) -> str:
        """Return a line for /diagnostics (`now` [s] steady): re-reading, or how it ended."""
        if self.took is None:
            return f're-reading the writers for {now - self._steady:.2f} s'
        if self.bound_s == 0.0:
            return 'no resync (resync_timeout_s is 0)'
        took = f'writers re-read in {self.took:.2f} s'
        if self.unheard:
            return f'{took}, bound reached; not heard: {", ".join(self.unheard)}'
        if not self._heard:
            return f'{took}, bound reached; no writer answered'
        return took


def resyncing_detail(started: float, restart: bool = False) -> str:
    """Return the detail of a RESYNCING note of a node that started at `started` [s].

    `restart`: not the process's first start (see `Resync`).
    """
    if restart:
        return (f'not heard since the node started at {started:.3f} s: it re-reads the '
                'writers (a restart)')
    return f'not heard since the node started at {started:.3f} s: it asks the writers'


def mark_resyncing(frame: Frame, detail: str) -> Frame:
    """Return `frame` with its packs' NEVER_SEEN notes read as RESYNCING (`detail`), re-digested.

    Absent keys of the board or the log that no writer has answered for yet are
    not known to be absent: the node is still re-reading them. The map is not the
    writers' (it comes latched on its own topic): its note stays.
    """
    packs = [_marked(pack, detail) for pack in frame.packs.values()]
    if all(new is old for new, old in zip(packs, frame.packs.values())):
        return frame
    return make_frame(frame.tick, frame.stamp, packs, frame.evictions, frame.capacity_alarm,
                      effective=frame.effective, readmitted=frame.readmitted)


def _marked(pack, detail: str):
    missing = _notes(pack.missing, detail)
    absent = pack.absent
    if any(map(_unread, absent.values())):
        absent = _notes(absent.values(), detail)
    if missing is pack.missing and absent is pack.absent:
        return pack
    return make_pack(pack.cabin, pack.tick, pack.stamp, pack.items, pack.events,
                     pack.map_window, missing, absent, effective=pack.effective,
                     readmitted=pack.readmitted)


def _notes(notes: Iterable[Missing], detail: str) -> Iterable[Missing]:
    if not any(_unread(note) for note in notes):
        return notes
    return tuple(dataclasses.replace(note, reason=MissingReason.RESYNCING, detail=detail)
                 if _unread(note) else note for note in notes)


def _unread(note: Missing) -> bool:
    """Return True for a note on what the writers may hold (the map is not theirs)."""
    return note.reason is MissingReason.NEVER_SEEN and note.key != MAP
