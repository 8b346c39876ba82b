"""Values refused for their size: the latest refusal per key, while no value of it is taken.

A value whose JSON is over the node's `max_value_bytes` never enters (one writer could
otherwise swell every frame); its key keeps the value it had. This record is what is
left of it: `~/explain` says a key's updates are being refused, and the node logs a
key's first refusal only, not every message, while the refusals go on. Bounded: one
record per key (the latest wins), at most `keep` keys, the one refused longest ago
dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Iterable, Mapping, NamedTuple

from working_memory.core.items import EVENT_ITEM_PREFIX

# Keys whose refusals are kept; beyond, the key refused longest ago is forgotten.
REFUSALS_KEPT = 1024


def event_refusal_key(kind: str, key: str) -> str:
    """Return the key a refused event is recorded under: its item key without a number."""
    return f'{EVENT_ITEM_PREFIX}{kind}:{key}'


class Refusal(NamedTuple):
    """One value refused for its size.

    `key`: its working-set key (an event's without its number); `size`: its JSON
    [bytes]; `limit`: max_value_bytes then [bytes]; `stamp`: when [s, ROS time];
    `effective`: when on the effective timeline [s].
    """

    key: str
    size: int
    limit: int
    stamp: float
    effective: float

    def text(self) -> str:
        """Say what was refused, when [s, ROS time]: `refused: 5,000,002 bytes over ...`."""
        return (f'refused: {self.size:,} bytes over max_value_bytes {self.limit:,} '
                f'at t={self.stamp:.1f} s')


class Refusals:
    """The latest refusal per key, until a value of the key is taken.

    `latest` is a read-only view {key: Refusal}, the key refused longest ago first; an
    empty one (no refusals going on, the common case) is false at the cost of a dict's.
    """

    def __init__(self, keep: int = REFUSALS_KEPT):
        if keep < 1:
            raise ValueError(f'keep: must be at least 1, got {keep!r}')
        self._keep = keep
        self._latest: OrderedDict[str, Refusal] = OrderedDict()
        self.latest: Mapping[str, Refusal] = MappingProxyType(self._latest)

    def refuse(self, refusal: Refusal) -> bool:
        """Record `refusal` (the latest of its key); True when the key's refusals begin.

        They begin with the first refusal since a value of the key was taken (or since
        the key's record was dropped to keep the bound).
        """
        latest = self._latest
        began = latest.pop(refusal.key, None) is None
        latest[refusal.key] = refusal
        if len(latest) > self._keep:
            latest.popitem(last=False)
        return began

    def taken(self, keys: Iterable[str]) -> None:
        """Note values of `keys` taken: their refusals, if any, are over."""
        latest = self._latest
        if latest:
            for key in keys:
                latest.pop(key, None)

    def get(self, key: str) -> Refusal | None:
        """Return the latest refusal of `key` since a value of it was taken, else None."""
        return self._latest.get(key)
