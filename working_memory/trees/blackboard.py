"""One cabin's frozen pack on the py_trees blackboard, written once per tree tick, read-only.

Under `<root>/<cabin>/` (root `/wm`): `values/<board key>` (the decoded value, deeply
immutable), `events` (tuple of core Events, oldest first), `map_window` (MapWindow or None),
`missing` (read-only mapping: key -> core Missing, with reason and detail), `tick`, `stamp`
[s] (the tick's ROS time), `digest` (the ContextFrame's digest, which decisions report),
`pack_digest` (the pack's own) and `pack` (the whole PackView, values frozen as well).

The exposure claims every one of those keys with py_trees' EXCLUSIVE_WRITE access: a tree
behaviour that registers write access on one gets py_trees' AttributeError, and one that
registered read access gets it when it writes. No rclpy here: the pack comes from any callable
(`WorkingMemoryClient.latest`).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable

import py_trees

from working_memory.core.frozen import deep_freeze
from working_memory.core.pack_view import PackView

ROOT = '/wm'
# The keys every pack writes; a board key's value is written as `values/<key>`.
FIXED_KEYS = ('tick', 'stamp', 'digest', 'pack_digest', 'events', 'map_window', 'missing', 'pack')
VALUES = 'values/'


class ExposureConflict(ValueError):
    """Another blackboard client already writes a key the working memory must own."""


def cabin_namespace(cabin: str, root: str = ROOT) -> str:
    """Return the blackboard namespace of `cabin`'s pack, e.g. '/wm/planner'.

    Raises ValueError when the cabin name is empty or holds '/' or '.' (py_trees reads
    '/' as a namespace and '.' as an attribute of a key).
    """
    if not cabin or '/' in cabin or '.' in cabin:
        raise ValueError(f"cabin: must be a non-empty name without '/' or '.', got {cabin!r}")
    if not root.startswith('/'):
        raise ValueError(f"root: must be an absolute blackboard namespace ('/wm'), got {root!r}")
    return f'{root.rstrip("/")}/{cabin}'


def frozen_pack(view: PackView) -> PackView:
    """Return `view` with its values deeply immutable (a tree cannot change the pack it shares)."""
    return dataclasses.replace(view, values={key: deep_freeze(value)
                                             for key, value in view.values.items()})


def pack_entries(view: PackView) -> dict[str, Any]:
    """Return the blackboard entries of a pack whose values are frozen: relative name -> value."""
    entries: dict[str, Any] = {
        'tick': view.tick, 'stamp': view.stamp, 'digest': view.frame_digest or '',
        'pack_digest': view.digest, 'events': view.events, 'map_window': view.map_window,
        'missing': types.MappingProxyType({note.key: note for note in view.missing}),
        'pack': view}
    for key, value in view.values.items():
        entries[VALUES + key] = value
    return entries


class PackExposure:
    """Write one cabin's packs under `<root>/<cabin>/`, the only writer of those keys.

    `expose(view)` replaces the previous pack whole: the values of keys the new pack no
    longer holds are removed from the blackboard (their keys stay claimed, so nobody else
    writes them meanwhile). `view` is the pack exposed last (None before the first).
    `close()` releases the keys and removes what it wrote.
    """

    def __init__(self, cabin: str, root: str = ROOT, name: str | None = None):
        self.cabin = cabin
        self.namespace = cabin_namespace(cabin, root)
        self._client = py_trees.blackboard.Client(name=name or f'working_memory:{cabin}',
                                                  namespace=self.namespace)
        self._claimed: set[str] = set()
        self._values: set[str] = set()
        self.view: PackView | None = None
        self._claim(FIXED_KEYS)

    @property
    def client(self) -> py_trees.blackboard.Client:
        """The blackboard client holding the exclusive write access."""
        return self._client

    def key(self, name: str) -> str:
        """Return the absolute blackboard key of a relative name, e.g. 'values/pose'."""
        return f'{self.namespace}/{name}'

    def expose(self, view: PackView) -> bool:
        """Write `view` on the blackboard; return False when it is the pack already there.

        Raises ValueError when the pack is of another cabin, ExposureConflict when
        another client writes a value key first seen in this pack.
        """
        if view.cabin != self.cabin:
            raise ValueError(f'pack of cabin {view.cabin!r} given to the exposure of '
                             f'{self.cabin!r} ({self.namespace})')
        current = self.view
        if current is not None and (current.tick, current.digest, current.frame_digest) == (
                view.tick, view.digest, view.frame_digest):
            return False
        view = frozen_pack(view)
        entries = pack_entries(view)
        values = {name for name in entries if name.startswith(VALUES)}
        self._claim(values - self._claimed)
        client = self._client
        for name in self._values - values:
            client.unset(name)
        for name, value in entries.items():
            # setattr, not Client.set: a board key may hold a '.', which set() reads as an
            # attribute of the key.
            setattr(client, name, value)
        self._values, self.view = values, view
        return True

    def close(self) -> None:
        """Release every key and remove what this exposure wrote."""
        self._client.unregister(clear=True)
        self._claimed.clear()
        self._values.clear()
        self.view = None

    def _claim(self, names) -> None:
        for name in sorted(names):
            try:
                self._client.register_key(key=name,
                                          access=py_trees.common.Access.EXCLUSIVE_WRITE)
            except AttributeError as error:
                raise ExposureConflict(f'{self.key(name)}: {error}') from None
            self._claimed.add(name)


class WorkingMemoryToBlackboard(py_trees.behaviour.Behaviour):
    """Expose the latest complete pack of a cabin on the blackboard; first behaviour of a tree.

    Each time it is ticked it takes `latest()` (e.g. `WorkingMemoryClient.latest`) once and
    writes that pack under `<root>/<cabin>/` (see the module docstring); whatever pack
    arrives while the rest of the tree ticks waits for the next tree tick. Put it first in a
    Sequence at the root, so every behaviour after it in the tick reads that one pack.

    Status: SUCCESS once a pack is on the blackboard; RUNNING before the first pack, and
    while `latest()` has no current pack after one (the working memory silent: a client's
    `latest()` hands out no pack older than its age bound), so the tree holds rather than
    decide on an old pack; FAILURE when `latest()` gives a pack of another cabin (the
    feedback says so).
    """

    def __init__(self, cabin: str, latest: Callable[[], PackView | None],
                 name: str = 'WorkingMemory', root: str = ROOT):
        super().__init__(name)
        self.exposure = PackExposure(cabin, root, name=f'{name}:{cabin}')
        self._latest = latest
        self.blackboards.append(self.exposure.client)   # py_trees.display shows its keys

    @classmethod
    def of_client(cls, client, name: str = 'WorkingMemory',
                  root: str = ROOT) -> WorkingMemoryToBlackboard:
        """Return the behaviour reading `client.latest()` for `client.cabin`."""
        return cls(client.cabin, client.latest, name=name, root=root)

    @property
    def view(self) -> PackView | None:
        """The pack on the blackboard for this tree tick (None before the first)."""
        return self.exposure.view

    def update(self) -> py_trees.common.Status:
        """Write the latest pack on the blackboard (once per tree tick)."""
        view = self._latest()
        if view is None:
            last = self.exposure.view
            self.feedback_message = (
                f'waiting for the first pack of cabin {self.exposure.cabin}' if last is None
                else f'no current pack of cabin {self.exposure.cabin}: the working memory is '
                     f'silent (the last pack, tick {last.tick}, is too old to decide on)')
            return py_trees.common.Status.RUNNING
        try:
            fresh = self.exposure.expose(view)
        except ValueError as error:
            self.feedback_message = str(error)
            return py_trees.common.Status.FAILURE
        self.feedback_message = (f'tick {view.tick}, digest {(view.frame_digest or "")[:12]}'
                                 + ('' if fresh else ' (same pack as the previous tree tick)'))
        return py_trees.common.Status.SUCCESS

    def shutdown(self) -> None:
        """Release the working memory's blackboard keys (py_trees calls it on tree shutdown)."""
        self.exposure.close()
