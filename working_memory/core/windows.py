"""Map windows by reference: a window's digest, what to publish, and a reader's join.

Pure (no rclpy, no message modules). With map windows by reference a frame's packs
name their window by digest and each cabin's window goes on a latched topic of its
own, published only when it changes and before the first frame that names it; a
reader joins the two and uses a window only when its cells hash to the digest the
pack names. The pack digest covers the cells too (`frames.pack_digest`), so the
joined pack is the one the node froze.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, Mapping, TypeVar

from working_memory.core.frames import DIGEST_HEX_CHARS, Frame, cells_digest
from working_memory.core.gridmap import MapWindow

# Origin x, y (float64), resolution (float32, as an OccupancyGrid carries it), width, height.
_GEOMETRY = struct.Struct('<ddfII')
# How many windows per cabin a reader keeps, and the node's topic history (keep last).
WINDOWS_KEPT = 4
# How many frames a reader holds while their windows are on the way.
FRAMES_HELD = 16

Payload = TypeVar('Payload')


class WindowMismatch(ValueError):
    """A window whose cells do not hash to the digest it claims: never used."""


def window_digest(window: MapWindow) -> str:
    """Return the window's digest: SHA-256 over its geometry and its cells' SHA-256 (hex prefix).

    The resolution enters as float32, as an OccupancyGrid carries it, so a reader
    computes the same digest from the message it received.
    """
    height, width = window.data.shape
    sha = hashlib.sha256(_GEOMETRY.pack(float(window.origin[0]), float(window.origin[1]),
                                        window.resolution, width, height))
    sha.update(cells_digest(window))
    return sha.hexdigest()[:DIGEST_HEX_CHARS]


def checked_window(window: MapWindow, digest: str, where: str) -> MapWindow:
    """Return `window` when its cells hash to `digest`; WindowMismatch naming `where` if not."""
    actual = window_digest(window)
    if actual != digest:
        raise WindowMismatch(f'{where}: window claims digest {digest!r} but its cells hash '
                             f'to {actual!r}: not used')
    return window


class WindowBook:
    """The publisher's side: which cabins' windows changed since they were last published.

    `changed(frame)` returns (cabin, digest, window) for each pack whose window
    differs from the one last published for its cabin (a window that returns after
    another is published again: a topic's latest message is the current window).
    """

    def __init__(self) -> None:
        self._published: dict[str, str] = {}

    def changed(self, frame: Frame) -> list[tuple[str, str, MapWindow]]:
        """Return the windows of `frame` to publish before it, and note them as published."""
        changed = []
        for cabin, pack in frame.packs.items():
            window = pack.map_window
            if window is None:
                continue
            digest = window_digest(window)
            if self._published.get(cabin) != digest:
                self._published[cabin] = digest
                changed.append((cabin, digest, window))
        return changed


@dataclass(frozen=True)
class Joined(Generic[Payload]):
    """A frame whose referenced windows have all arrived: {cabin: window} beside it."""

    payload: Payload
    windows: Mapping[str, MapWindow]


@dataclass(frozen=True)
class Abandoned(Generic[Payload]):
    """A frame given up on: `missing` {cabin: digest} never arrived; `why` says how it ended."""

    payload: Payload
    missing: Mapping[str, str]
    why: str


class WindowJoin(Generic[Payload]):
    """A reader's join of frames and windows: a frame waits until the windows it names arrived.

    Windows are kept by cabin, the latest `windows_kept` of each (the node's topic
    keeps as many); frames are held in arrival order, at most `frames_held`. Frames
    come out in order: a frame that is complete releases the held frames before it as
    abandoned (windows come in order, so theirs is not coming), and a frame pushed
    out of a full buffer is abandoned too.
    """

    def __init__(self, windows_kept: int = WINDOWS_KEPT, frames_held: int = FRAMES_HELD):
        self._windows_kept = windows_kept
        self._frames_held = frames_held
        self._windows: dict[str, OrderedDict[str, MapWindow]] = {}
        self._held: list[tuple[Payload, dict[str, str]]] = []

    @property
    def held(self) -> int:
        """How many frames wait for a window."""
        return len(self._held)

    def window(self, cabin: str, digest: str, window: MapWindow) -> None:
        """Keep a window that arrived; raise WindowMismatch when its cells do not match."""
        checked_window(window, digest, f'window of cabin {cabin!r}')
        kept = self._windows.setdefault(cabin, OrderedDict())
        kept.pop(digest, None)
        kept[digest] = window
        while len(kept) > self._windows_kept:
            kept.popitem(last=False)

    def frame(self, payload: Payload, references: Mapping[str, str]) -> None:
        """Hold a frame that names {cabin: window digest} (empty digests name no window)."""
        self._held.append((payload, {cabin: digest for cabin, digest in references.items()
                                     if digest}))

    def release(self) -> list[Joined[Payload] | Abandoned[Payload]]:
        """Return the frames now complete, in order, and the ones given up on before them."""
        out: list[Joined[Payload] | Abandoned[Payload]] = []
        while len(self._held) > self._frames_held:
            payload, references = self._held.pop(0)
            out.append(Abandoned(payload, self._missing(references),
                                 f'more than {self._frames_held} frames waited'))
        complete = [index for index, (_, references) in enumerate(self._held)
                    if not self._missing(references)]
        if not complete:
            return out
        last = complete[-1]
        for index, (payload, references) in enumerate(self._held[:last + 1]):
            if index in complete:
                out.append(Joined(payload, {cabin: self._windows[cabin][digest]
                                            for cabin, digest in references.items()}))
            else:
                out.append(Abandoned(payload, self._missing(references),
                                     'a later frame came complete first'))
        del self._held[:last + 1]
        return out

    def _missing(self, references: Mapping[str, str]) -> dict[str, str]:
        return {cabin: digest for cabin, digest in references.items()
                if digest not in self._windows.get(cabin, ())}
