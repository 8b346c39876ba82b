"""Argument checks shared by the core modules."""

from __future__ import annotations

import difflib
import math
from typing import Any, Iterable


def is_finite_number(value: object) -> bool:
    """Return True for a finite int or float (bool excluded)."""
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value))


def is_unit_interval(value: object) -> bool:
    """Return True for a number in [0, 1] (an importance or a weight)."""
    return is_finite_number(value) and 0.0 <= value <= 1.0


def check_int(value: Any, name: str, minimum: int) -> int:
    """Return `value`; raise ValueError naming `name` unless it is an integer >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f'{name}: must be an integer >= {minimum}, got {value!r}')
    return value


def did_you_mean(name: str, known: Iterable[str], list_known: bool = True) -> str:
    """Return ' (did you mean X?)' for the closest of `known` to `name`.

    Without a close one: ' (known: a, b, ...)', or '' when `list_known` is False.
    """
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f' (did you mean {close[0]}?)'
    return f' (known: {", ".join(known)})' if list_known else ''
