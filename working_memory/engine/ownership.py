"""Owned board keys at the node's intake: who wrote an update, an answer or a source's message.

A board update carries no writer name: its message info names the publisher's gid,
which the graph maps to a node (`get_publishers_info_by_topic`; the node hands in a
function that reads it). A gid the graph does not show yet (a writer discovered a
moment after its first message) is asked again, at most every GRAPH_PERIOD_S, and
until then its writes to owned keys are refused like any non-owner's: an owned key
is never taken from a writer that cannot be named. Pure: no ROS import.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Iterable

from working_memory.core.items import BoardEntry
from working_memory.core.owners import Owners
from working_memory.engine.health import Level, Status
from working_memory.engine.inputs import Answer, BoardBatch

# [s] steady clock: the graph is asked again for an unknown gid at most this often.
GRAPH_PERIOD_S = 0.5
UNKNOWN_WRITER = '(a publisher the graph does not show)'
_NAMED = 5   # writer/key pairs the WARN names

# (fully qualified node name, endpoint gid) of each publisher of the board and answer topics.
Publishers = Callable[[], Iterable[tuple[str, bytes]]]


class Ownership:
    """Refuse the owned keys of a board update from a writer that does not own them."""

    def __init__(self, owners: Owners, publishers: Publishers):
        self.owners = owners
        self._publishers = publishers
        self._names: dict[bytes, str] = {}
        self._asked: float | None = None
        # {(writer, key): refused writes} and the owner of each key refused
        self.refused: dict[tuple[str, str], int] = {}
        self._owner_of: dict[str, str] = {}

    def writer(self, gid: bytes, now: float | None = None) -> str | None:
        """Return the node name of publisher `gid`, None while the graph does not show it."""
        name = self._names.get(gid)
        if name is None:
            now = time.monotonic() if now is None else now
            if self._asked is None or now - self._asked >= GRAPH_PERIOD_S:
                self._asked = now
                self._names = {known: node for node, known in self._publishers()}
                name = self._names.get(gid)
        return name

    def take(self, batch: BoardBatch, gid: bytes,
             now: float | None = None) -> tuple[BoardBatch, list[tuple[str, str, str]]]:
        """Return `batch` without what its writer may not write, and what is newly refused.

        `batch` has `entries` and `removed_keys`: a board update, or what a typed-topic
        source's message gives (its publisher is its writer). The second value lists
        (writer, key, owner) refused for the first time, to log.
        """
        entries, removed, first = self._allowed(batch.entries, batch.removed_keys, gid, now)
        if len(entries) == len(batch.entries) and len(removed) == len(batch.removed_keys):
            return batch, first
        return dataclasses.replace(batch, entries=entries, removed_keys=removed), first

    def take_answer(self, answer: Answer, gid: bytes, now: float | None = None
                    ) -> tuple[Answer, list[tuple[str, str, str]]]:
        """Return a writer's resync `answer` without the entries it may not write (as `take`)."""
        entries, _, first = self._allowed(answer.entries, (), gid, now)
        if len(entries) == len(answer.entries):
            return answer, first
        return dataclasses.replace(answer, entries=entries), first

    def _allowed(self, entries: tuple[BoardEntry, ...], removed_keys: tuple[str, ...],
                 gid: bytes, now: float | None):
        """Return (entries, removed keys) the writer `gid` may write, and the new refusals."""
        if not self.owners:
            return entries, removed_keys, []
        node = self.writer(gid, now)
        writer = UNKNOWN_WRITER if node is None else node
        first: list[tuple[str, str, str]] = []

        def allowed(key: str) -> bool:
            owner = self.owners.refuses(node, key)
            if owner is None:
                return True
            pair = (writer, key)
            if pair not in self.refused:
                first.append((writer, key, owner.name))
                self._owner_of[key] = owner.name
            self.refused[pair] = self.refused.get(pair, 0) + 1
            return False
        return (tuple(entry for entry in entries if allowed(entry.key)),
                tuple(key for key in removed_keys if allowed(key)), first)

    def status(self) -> Status:
        """Return the `owners` status: WARN naming the writers and keys refused so far."""
        values = tuple((f'{writer} -> {key}', f'{count} refused (owner {self._owner_of[key]})')
                       for (writer, key), count in self.refused.items())
        if not self.refused:
            owners = ', '.join(owner.name for owner in self.owners.owners) or 'none'
            return Status('owners', Level.OK, f'no write refused (owners: {owners})', values)
        named = '; '.join(f'{writer}: {key} ({count})' for (writer, key), count
                          in list(self.refused.items())[:_NAMED])
        more = len(self.refused) - _NAMED
        return Status('owners', Level.WARN,
                      f'writes to owned keys refused: {named}'
                      + (f'; {more} more writer/key pairs' if more > 0 else ''), values)

    def refusal_note(self, key: str) -> str:
        """Return what ~/explain adds for `key`: whose writes were refused, or ''."""
        writers = [f'{writer} ({count})' for (writer, refused), count in self.refused.items()
                   if refused == key]
        if not writers:
            return ''
        return (f'writes refused since the node started (owner {self._owner_of[key]}): '
                + ', '.join(writers))
