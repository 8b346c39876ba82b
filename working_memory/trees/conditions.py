"""Conditions a tree author needs on the working memory, each explaining its FAILURE.

A condition reads the pack that `WorkingMemoryToBlackboard` put on the blackboard for this
tree tick (READ access only). When it fails, its `feedback_message` names the key and, when
the pack has a missing note for it, the core's reason and detail, e.g.
`safety:zone/high_voltage: EVICTED (evicted at tick 41 (capacity): importance 0.30, ...)`,
which `py_trees.display` and the tree watchers show; without a note, the keys of its family
the pack holds instead (`goal:current: ...; of goal:* it holds goal:deliver ...`).
"""

from __future__ import annotations

import fnmatch
import time
from typing import Any, Callable, Iterable, Mapping

import py_trees

from working_memory.core.items import Missing, MissingReason
from working_memory.trees.blackboard import ROOT, VALUES, cabin_namespace

Status = py_trees.common.Status
_GLOB = frozenset('*?[')
# Keys named in a feedback of what the pack holds instead of the one looked for.
SHOWN = 3


def note_for(key: str, missing: Mapping[str, Missing]) -> Missing | None:
    """Return the pack's missing note about `key`: its own, else a glob or drop category's."""
    note = missing.get(key)
    if note is not None:
        return note
    for other in missing.values():
        pattern = other.key.removeprefix('board:')
        if _GLOB.intersection(pattern) and fnmatch.fnmatchcase(key, pattern):
            return other
    return None


def note_text(key: str, note: Missing, stamp: float) -> str:
    """Return `key: REASON (detail)` of a missing note read at the pack's `stamp` [s]."""
    about = '' if note.key == key else f' [note on {note.key}]'
    return f'{key}: {note.reason.value} ({note.text(stamp)}){about}'


def why_missing(key: str, cabin: str, tick: int, stamp: float,
                missing: Mapping[str, Missing], held: Iterable[str] = ()) -> str:
    """Return why `key` is not in `cabin`'s pack of `tick`: the note's reason and detail.

    Without a note, the keys of its family the pack `held` instead (`goal:deliver` where
    `goal:current` was looked for): a required glob (`goal:*`) that another key met
    leaves no note on the key looked for.
    """
    note = note_for(key, missing)
    if note is not None:
        return note_text(key, note, stamp)
    where = f'{key}: not in the {cabin} pack of tick {tick}'
    prefix = key_prefix(key)
    instead = sorted(other for other in held if prefix and other.startswith(prefix))
    if instead:
        more = f' and {len(instead) - SHOWN} more' if len(instead) > SHOWN else ''
        return (f'{where}; of {prefix}* it holds {", ".join(instead[:SHOWN])}{more} '
                f'(no missing note on {key})')
    return (f'{where} (no missing note: its manifest requires it neither by name nor by a '
            'glob that no key met)')


def key_prefix(key: str) -> str:
    """Return `key` up to its first ':' or '/', that included ('goal:'); '' without one."""
    cut = min((key.find(mark) for mark in ':/' if mark in key), default=-1)
    return key[:cut + 1] if cut >= 0 else ''


class _PackCondition(py_trees.behaviour.Behaviour):
    """Read access to one key of a cabin's pack on the blackboard, and what the pack says of it."""

    def __init__(self, name: str, cabin: str, key: str, root: str = ROOT):
        super().__init__(name)
        if not key:
            raise ValueError('key: must not be empty')
        self.cabin, self.key = cabin, key
        namespace = cabin_namespace(cabin, root)
        self._board = self.attach_blackboard_client(name=name, namespace=namespace)
        self._value_key = f'{namespace}/{VALUES}{key}'
        for name_ in (self._value_key, 'tick', 'stamp', 'missing', 'pack'):
            self._board.register_key(key=name_, access=py_trees.common.Access.READ)

    def _read(self, name: str) -> Any:
        # getattr, not Client.get: a board key may hold a '.', which get() splits on.
        return getattr(self._board, name)

    def _has_pack(self) -> bool:
        try:
            self._read('tick')
        except KeyError:
            self.feedback_message = (f'{self.key}: no {self.cabin} pack on the blackboard '
                                     '(is WorkingMemoryToBlackboard first in the tree?)')
            return False
        return True

    def _present(self) -> bool:
        try:
            self._read(self._value_key)
        except KeyError:
            return False
        return True

    def _why_missing(self) -> str:
        return why_missing(self.key, self.cabin, self._read('tick'), self._read('stamp'),
                           self._read('missing'), self._read('pack').values)

    def _in_pack(self) -> bool:
        """Return True when the key is in the pack; else set the feedback saying why not."""
        if not self._has_pack():
            return False
        if not self._present():
            self.feedback_message = self._why_missing()
            return False
        return True


class KeyPresent(_PackCondition):
    """SUCCESS when board key `key` is in this tick's pack of `cabin`; else FAILURE, explained."""

    def __init__(self, key: str, cabin: str, name: str | None = None, root: str = ROOT):
        super().__init__(name or f'{key}?', cabin, key, root)

    def update(self) -> Status:
        """Check the pack on the blackboard."""
        if not self._in_pack():
            return Status.FAILURE
        self.feedback_message = f'{self.key}: in the pack of tick {self._read("tick")}'
        return Status.SUCCESS


class KeyFresh(_PackCondition):
    """SUCCESS when `key` is in the pack and its value is at most `max_age_s` [s] old.

    The value's age runs from its own stamp (as its writer stamped it: the pack's
    `stamps`, else the pack's frozen time) to `clock()` at tree time: a reading whose
    writer stopped, and a pack of a working memory that stalls, both grow old. The
    working memory already keeps a value past its ttl out of the pack (missing STALE).
    `clock()` returns the time [s] on the node's clock (sim time under use_sim_time);
    it defaults to the wall clock, which is ROS time without sim time.
    """

    def __init__(self, key: str, cabin: str, max_age_s: float,
                 clock: Callable[[], float] = time.time, name: str | None = None,
                 root: str = ROOT):
        if not max_age_s >= 0.0:
            raise ValueError(f'max_age_s: must be >= 0 s, got {max_age_s!r}')
        super().__init__(name or f'{key} fresher than {max_age_s:g} s?', cabin, key, root)
        self.max_age_s = max_age_s
        self._clock = clock

    def update(self) -> Status:
        """Check presence, then the pack's age."""
        if not self._in_pack():
            return Status.FAILURE
        tick, stamp = self._read('tick'), self._read('stamp')
        age = self._clock() - self._read('pack').stamps.get(self.key, stamp)
        if age > self.max_age_s:
            self.feedback_message = (f'{self.key}: in the pack of tick {tick}, its value '
                                     f'{age:.2f} s old (more than {self.max_age_s:g} s)')
            return Status.FAILURE
        self.feedback_message = (f'{self.key}: in the pack of tick {tick}, its value '
                                 f'{max(age, 0.0):.2f} s old')
        return Status.SUCCESS


class NotMissingFor(_PackCondition):
    """FAILURE when the pack reports `key` missing for `reason` (explained); else SUCCESS."""

    def __init__(self, key: str, cabin: str, reason: MissingReason | str,
                 name: str | None = None, root: str = ROOT):
        try:
            self.reason = MissingReason(reason)
        except ValueError:
            raise ValueError(f'reason: must be one of {[r.value for r in MissingReason]}, '
                             f'got {reason!r}') from None
        super().__init__(name or f'{key} not {self.reason.value}?', cabin, key, root)

    def update(self) -> Status:
        """Look for a missing note about the key with the reason."""
        if not self._has_pack():
            return Status.FAILURE
        tick = self._read('tick')
        if not self._present():
            note = note_for(self.key, self._read('missing'))
            if note is not None and note.reason == self.reason:
                self.feedback_message = self._why_missing()
                return Status.FAILURE
        self.feedback_message = f'{self.key}: not missing for {self.reason.value} at tick {tick}'
        return Status.SUCCESS
