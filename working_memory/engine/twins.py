"""A second working memory under the same name: found on the graph, said on /diagnostics.

A stale process or a second launch leaves two nodes of one fully qualified name:
their frames interleave on one `~/frame` and a consumer cannot tell which node a
pack came from. Each configured node looks at the publishers of its own frame
topic (the graph names each one's node and endpoint gid); one more under its own
name is a twin. rclpy does not hand a publisher its own gid, so the node takes
its own as the one its frame publisher added to the graph (local endpoints enter
the graph as they are created). The graph carries no host name: the gid is what
names the other (`ros2 topic info -v` shows the same). Pure: the node hands in a
function that reads the graph.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

from working_memory.engine.health import Level, Status

# [s] steady clock: the graph is asked at most this often, whatever the tick rate.
CHECK_PERIOD_S = 1.0

# (fully qualified node name, endpoint gid) of each publisher of a topic.
Publishers = Callable[[], Iterable[tuple[str, bytes]]]


def gid_text(gid: bytes) -> str:
    """Return a gid as `ros2 topic info -v` prints it (dotted hex bytes)."""
    return '.'.join(f'{byte:02x}' for byte in gid)


def twin_status(name: str, topic: str, own: bytes | None,
                publishers: Iterable[tuple[str, bytes]]) -> Status:
    """Return the `twins` status of node `name` from the publishers of its frame `topic`.

    `publishers` are (fully qualified node name, gid); `own` is this node's gid (None:
    not known, then any two under `name` are twins).
    """
    gids = [gid for node, gid in publishers if node == name]
    if own is not None and own in gids:
        others = [gid for gid in gids if gid != own]
    else:
        others = gids if len(gids) > 1 else []
    if not others:
        return Status('twins', Level.OK, f'no other node named {name}', (('others', ''),))
    named = ', '.join(gid_text(gid) for gid in others)
    return Status('twins', Level.ERROR,
                  f'another node named {name} publishes {topic} (gid {named}): two working '
                  f'memories under one name, whose frames consumers cannot tell apart; stop '
                  f'one (a stale process, a second launch)', (('others', named),))


class TwinCheck:
    """The `twins` status of one node's frame topic, from the graph at most once a period."""

    def __init__(self, name: str, topic: str, publishers: Publishers,
                 period_s: float = CHECK_PERIOD_S):
        """Check `topic` of node `name`; construct it just before the node's publisher."""
        self._name, self._topic, self._publishers = name, topic, publishers
        self._before = self.gids()
        self._own: bytes | None = None
        self._period_s = period_s
        self._checked: float | None = None
        self._status = twin_status(name, topic, self._own, ())
        self._told: set[str] = set()

    def created(self) -> None:
        """Note the node's publisher created: the one gid added to the graph is its own."""
        added = self.gids() - self._before
        self._own = next(iter(added)) if len(added) == 1 else None

    def gids(self) -> set[bytes]:
        """Return the gids of the publishers of the topic under the node's name."""
        return {gid for node, gid in self._publishers() if node == self._name}

    def status(self, now: float | None = None) -> tuple[Status, bool]:
        """Return the status at steady `now` [s] (None: read it) and if it names a new twin."""
        now = time.monotonic() if now is None else now
        if self._checked is not None and now - self._checked < self._period_s:
            return self._status, False
        self._checked = now
        self._status = twin_status(self._name, self._topic, self._own, self._publishers())
        others = set(dict(self._status.values)['others'].split(', ')) - {''}
        new = bool(others - self._told)
        self._told |= others
        return self._status, new
