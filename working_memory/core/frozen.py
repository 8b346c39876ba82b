"""Deeply immutable JSON values, so a frozen frame cannot be changed through an item's value."""

from __future__ import annotations

import json
from typing import Any


class FrozenDict(dict):
    """A dict that refuses every mutation; made by `deep_freeze`.

    It stays a dict subclass so `json.dumps` and `isinstance(value, dict)`
    keep working for the code that reads frames. Its one attribute, `json_text`,
    is kept by `core.items.value_text`: the value never changes, so neither does
    its text, which then lives exactly as long as the value.
    """

    __slots__ = ('json_text',)

    def _refuse(self, *args, **kwargs):
        raise TypeError('frozen value: a frozen frame cannot be changed')

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (FrozenDict, (dict(self),))


def deep_freeze(value: Any) -> Any:
    """Return `value` with every dict made a `FrozenDict` and every list a tuple, recursively."""
    if isinstance(value, dict):
        return FrozenDict((key, deep_freeze(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(deep_freeze(item) for item in value)
    return value


def check_json(value: Any, what: str) -> None:
    """Raise ValueError naming `what` unless `value` is strict JSON (RFC 8259: no NaN, Infinity)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f'{what}: must be JSON (RFC 8259: no NaN or Infinity): {error}') from None
