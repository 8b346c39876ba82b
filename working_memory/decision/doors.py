"""The delivery world's doors as the reference cabins read them from a pack."""

from __future__ import annotations

import math
from dataclasses import dataclass

from working_memory.core.pack_view import PackValueError, PackView


@dataclass(frozen=True)
class Door:
    """A door as the board describes it: open or closed, center (x, y) [m], width [m] if given."""

    key: str
    is_open: bool
    x: float
    y: float
    width_m: float | None


def door_from_pack(pack: PackView, key: str) -> Door | None:
    """Return the door value {"state": "open"|"closed", "x", "y", "width"?} of `key` in `pack`.

    None when the pack has no such key. Raises PackValueError naming the key when
    the value is malformed: a door a decision cannot read must not be guessed at.
    """
    value = pack.values.get(key)
    if value is None:
        return None
    x, y, _ = pack.pose(key)
    state = value.get('state')
    width = value.get('width')
    if state not in ('open', 'closed'):
        raise PackValueError(f'{key}.state: expected "open" or "closed", got {state!r}')
    if width is not None and not (isinstance(width, (int, float)) and math.isfinite(width)
                                  and width > 0.0):
        raise PackValueError(f'{key}.width: expected > 0 m, got {width!r}')
    return Door(key, state == 'open', x, y, None if width is None else float(width))
