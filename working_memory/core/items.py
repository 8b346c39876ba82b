"""Value types shared by the core: items, board entries, events and missing-item reports."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring_ascii
from typing import Any, NamedTuple

from working_memory.core.checks import is_finite_number, is_unit_interval
from working_memory.core.frozen import FrozenDict


class Source(str, enum.Enum):
    """Where a working item came from."""

    BOARD = 'board'
    MAP = 'map'
    LOG = 'log'


class EventKind(str, enum.Enum):
    """Kinds of event-log entries (LogEvent constants in the ROS interface)."""

    ACTION = 'ACTION'
    FAILURE = 'FAILURE'
    CONSTRAINT = 'CONSTRAINT'
    OBSERVATION = 'OBSERVATION'
    GOAL = 'GOAL'
    ALARM = 'ALARM'


class MissingReason(str, enum.Enum):
    """Why a required item is not in a cabin's pack."""

    NEVER_SEEN = 'NEVER_SEEN'
    STALE = 'STALE'
    EVICTED = 'EVICTED'
    OUT_OF_SCOPE = 'OUT_OF_SCOPE'
    INJECTED_DROP = 'INJECTED_DROP'
    RESYNCING = 'RESYNCING'   # not heard yet since the node started re-reading the writers


# One encoder for every call: json.dumps with options builds a new encoder each time.
# ensure_ascii (the default) makes the text's length its byte length; allow_nan=False
# because NaN and Infinity are not JSON (RFC 8259).
_COMPACT_JSON = json.JSONEncoder(separators=(',', ':'), sort_keys=True, allow_nan=False)
# The same encoder's C core made once, without the circular-reference check: a deeply
# frozen value is a tree (deep_freeze copies it), and JSONEncoder.encode would build the
# core again for every value.
_FROZEN_JSON = None if c_make_encoder is None else c_make_encoder(
    None, _COMPACT_JSON.default, encode_basestring_ascii, None, ':', ',', True, False, False)


_SCALAR_SIZES = {None: 4, True: 4, False: 5}


# A frozen value's text longer than this [chars] is not kept on it: a huge reading would
# otherwise hold its value's memory twice.
_KEPT_TEXT_CHARS = 1 << 20


def json_size(value: Any) -> int:
    """Return the byte length of the compact JSON text of `value`.

    Scalars are measured without the encoder's setup (the working set measures
    every put); the text's length is the same as `_COMPACT_JSON.encode`'s, and a
    frozen value's text is kept for `value_text`.
    Raises TypeError or ValueError (NaN, Infinity) as the encoder does.
    """
    cls = value.__class__
    # The encoder writes int.__repr__ and float.__repr__, which repr() calls for these exact
    # classes (a huge int raises ValueError, as in the encoder).
    if cls is int or (cls is float and -math.inf < value < math.inf):
        return len(repr(value))
    if cls is str:
        return len(encode_basestring_ascii(value))
    if value is None or cls is bool:
        return _SCALAR_SIZES[value]
    return len(value_text(value))


def value_text(value: Any) -> str:
    """Return the compact canonical JSON text of `value` (sorted keys, ASCII, no NaN).

    A deeply frozen dict (`core.frozen.FrozenDict`, as the board and the log keep
    values) never changes, so its text is kept on it (up to 1 Mi chars): the put
    that measures it, the pack digest and the wire encoding share one, and it goes
    when the value goes. Other values (arrays, scalars) are encoded each time.
    Raises TypeError or ValueError (NaN, Infinity) as the encoder does.
    """
    if value.__class__ is not FrozenDict:
        return _COMPACT_JSON.encode(value)
    try:
        return value.json_text
    except AttributeError:
        pass
    text = (_COMPACT_JSON.encode(value) if _FROZEN_JSON is None
            else ''.join(_FROZEN_JSON(value, 0)))
    if len(text) <= _KEPT_TEXT_CHARS:
        value.json_text = text
    return text


def prepare_text(value: Any) -> None:
    """Make and keep a frozen value's text ahead of its first use (`value_text`), if it has one.

    For its arrival, off the tick; a value the encoder refuses is left for its use to
    raise there, where the error is reported.
    """
    if value.__class__ is FrozenDict and not hasattr(value, 'json_text'):
        try:
            value_text(value)
        except (TypeError, ValueError):
            pass


# Board keys and tags are names, not payloads: at most this many characters.
MAX_NAME_LENGTH = 256
# The working set's key of a log event starts so (`event:<KIND>:<key>#<seq>`): a board key
# with it would take an event's place.
EVENT_ITEM_PREFIX = 'event:'
# How much of a refused name an error message shows [chars].
_SHOWN_CHARS = 60


def usable_name(name: str) -> bool:
    """Return True when `name` is a usable board key, event key or tag (see `name_problem`)."""
    return (name.__class__ is str and 0 < len(name) <= MAX_NAME_LENGTH and name.isprintable()
            and name[0] != ' ' and name[-1] != ' ')


def name_problem(name: Any, what: str) -> str | None:
    """Return why `name` is not a usable key or tag (`what` names it), or None when it is.

    A usable name is a non-empty string of at most MAX_NAME_LENGTH printable characters
    (no control characters, tabs, newlines or Unicode separators other than the space)
    that does not start or end with a space: a key is matched, shown and typed as it is.
    """
    if name.__class__ is not str:
        return f'{what} must be a string, got {name!r}'
    if not name:
        return f'{what} must not be empty'
    if len(name) > MAX_NAME_LENGTH:
        return (f'{what} {shown_name(name)} is {len(name)} characters long, more than '
                f'{MAX_NAME_LENGTH}')
    if not name.isprintable():
        bad = next(char for char in name if not char.isprintable())
        return f'{what} {shown_name(name)} holds the unprintable character {bad!r}'
    if name[0] == ' ' or name[-1] == ' ':
        return f'{what} {shown_name(name)} starts or ends with a space'
    return None


def shown_name(name: str) -> str:
    """Return `name` quoted for an error message, cut to its first characters when long."""
    if len(name) <= _SHOWN_CHARS:
        return repr(name)
    return f'{name[:_SHOWN_CHARS]!r}... ({len(name)} characters)'


def check_names(key: str, tags: tuple[str, ...], what: str, empty_key: bool = False) -> None:
    """Raise ValueError naming the first unusable one of `key` and `tags` of a `what`.

    `empty_key`: an empty key is allowed (an event about nothing in particular).
    """
    if not (empty_key and key == ''):
        problem = name_problem(key, 'key')
        if problem is not None:
            raise ValueError(f'{what}: {problem}')
    for index, tag in enumerate(tags):
        problem = name_problem(tag, f'tags[{index}]')
        if problem is not None:
            raise ValueError(f'{what} {key!r}: {problem}')


def check_importance(importance: float | None, what: str) -> None:
    """Raise ValueError unless `importance` is None or a finite number in [0, 1]."""
    if importance is None:
        return
    if not is_unit_interval(importance):
        raise ValueError(f'{what}: importance must be in [0, 1], got {importance!r}')


class Item(NamedTuple):
    """One entry of the working set: an immutable record.

    `stamp` [s] is when the value was produced, as its source stamped it (ROS
    time); `last_used` [s] is when the working set last served or refreshed it,
    on the effective timeline (see `core.timebase.TimeBase`). A named tuple,
    not a frozen dataclass: the working set makes one per put and touch, and a
    tuple costs a fifth of a frozen dataclass to make.
    """

    key: str
    value: Any
    source: Source
    importance: float
    stamp: float
    last_used: float
    stale: bool = False
    exempt: bool = False
    size: int = 0


def _place(record, what: str) -> None:
    """Check both stamps are finite; an absent `effective_stamp` becomes the `stamp`."""
    if not is_finite_number(record.stamp):
        raise ValueError(f'{what}: stamp must be a finite time in seconds, got {record.stamp!r}')
    if record.effective_stamp is None:
        object.__setattr__(record, 'effective_stamp', float(record.stamp))
    elif not is_finite_number(record.effective_stamp):
        raise ValueError(f'{what}: effective_stamp must be a finite time in seconds, '
                         f'got {record.effective_stamp!r}')


@dataclass(frozen=True, slots=True)
class BoardEntry:
    """The state board's latest value for one key.

    `stamp` [s] is the source's ROS time; `effective_stamp` [s] is the same
    instant on the effective timeline, set by the board mirror on arrival
    (`TimeBase.place`; it defaults to `stamp`). Staleness is judged on the
    effective timeline, so a clock reset never makes an entry fresher.
    """

    key: str
    value: Any
    stamp: float
    importance: float | None = None  # None: use the cabin manifest's weight
    ttl: float = 0.0                 # [s] freshness after `stamp`; 0 never goes stale
    tags: tuple[str, ...] = ()
    effective_stamp: float | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        stamp, ttl, importance, key = self.stamp, self.ttl, self.importance, self.key
        if (stamp.__class__ is float and ttl.__class__ is float
                and -math.inf < stamp < math.inf and 0.0 <= ttl < math.inf
                and (importance is None or importance.__class__ is float
                     and 0.0 <= importance <= 1.0) and self.effective_stamp is None
                and usable_name(key) and not key.startswith(EVENT_ITEM_PREFIX)
                and (not self.tags or all(map(usable_name, self.tags)))):
            # The common entry (the board intake makes a thousand a second): the checks
            # below pass, with fewer calls.
            object.__setattr__(self, 'effective_stamp', stamp)
            return
        check_names(key, self.tags, 'board entry')
        if key.startswith(EVENT_ITEM_PREFIX):
            raise ValueError(f'board entry: key {shown_name(key)} must not start with '
                             f"{EVENT_ITEM_PREFIX!r} (the working set's event items do)")
        check_importance(self.importance, f'board entry {key!r}')
        if not (is_finite_number(self.ttl) and self.ttl >= 0.0):
            raise ValueError(f'board entry {self.key!r}: ttl must be >= 0 s, got {self.ttl!r}')
        _place(self, f'board entry {self.key!r}')

    def is_stale(self, now: float) -> bool:
        """Return True when the entry's ttl has run out at effective time `now` [s]."""
        return self.ttl > 0.0 and now - self.effective_stamp > self.ttl

    def stale_for(self, now: float) -> float:
        """Return how long [s] the entry has been stale at effective time `now` (0 when fresh)."""
        return max(0.0, now - self.effective_stamp - self.ttl) if self.ttl > 0.0 else 0.0


@dataclass(frozen=True, slots=True)
class Event:
    """One event-log entry; `seq` is assigned by the log on arrival.

    `stamp` [s] is the source's ROS time; `effective_stamp` [s] the same instant
    on the effective timeline, set by the log on arrival (defaults to `stamp`).
    Event windows are cut on the effective timeline.
    """

    stamp: float
    kind: EventKind
    source: str = ''
    key: str = ''
    detail: Any = None
    importance: float | None = None  # None: use the cabin manifest's weight
    tags: tuple[str, ...] = ()
    seq: int = -1
    effective_stamp: float | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.key != '' and not usable_name(self.key) or not all(map(usable_name, self.tags)):
            check_names(self.key, self.tags, 'event', empty_key=True)
        if not isinstance(self.kind, EventKind):
            raise ValueError(f'event {self.key!r}: kind must be an EventKind, got {self.kind!r}')
        check_importance(self.importance, f'event {self.kind.value} {self.key!r}')
        _place(self, f'event {self.key!r}')


@dataclass(frozen=True, slots=True)
class Missing:
    """A key a pack does not serve, with the reason and a human-readable detail.

    `since` [s] is when the age the note implies counts from (a stale item's ttl
    running out, an evicted item's last use), on the timeline of the pack holding
    it: effective time in the node's packs, ROS time in packs read from messages;
    None when nothing ages. The detail stays the same while time passes, so the
    packs (and wire bytes) of many ticks share one note; `text(now)` reads it
    with the age ('stale: its ttl of 1.0 s ran out 3.2 s ago').
    """

    key: str
    reason: MissingReason
    detail: str = field(default='')
    since: float | None = None

    def text(self, now: float) -> str:
        """Return the detail as read at `now` [s], with the age since `since` when it has one."""
        return aged_text(self.detail, self.since, now)


def aged_text(detail: str, since: float | None, now: float) -> str:
    """Return a missing note's `detail` as read at `now` [s]: with its age since `since` [s]."""
    return detail if since is None else f'{detail} {max(0.0, now - since):.1f} s ago'


@dataclass(frozen=True, slots=True)
class MissingSummary:
    """The absent keys a glob of a manifest selects, for one reason, told as one record.

    A glob over a board that keeps growing (per-object keys never removed) selects
    more keys than any pack should list: a pack lists the `listed` most valuable of
    them as `Missing` notes and counts all `count` here. `oldest` and `newest` [s]
    are the earliest and the latest `since` of their notes (for STALE: when their
    ttl ran out), on the pack's timeline as `Missing.since` is.
    """

    pattern: str
    reason: MissingReason
    count: int
    listed: int
    oldest: float
    newest: float

    def text(self, now: float) -> str:
        """Return the summary as read at `now` [s] ('4980 key(s) under obj:* STALE: ...')."""
        return summary_text(self.pattern, self.reason.value, self.count, self.listed,
                            self.oldest, self.newest, now)


def summary_text(pattern: str, reason: str, count: int, listed: int, oldest: float,
                 newest: float, now: float) -> str:
    """Return a missing summary as read at `now` [s]; `reason` is a MissingReason's name."""
    ages = f'{max(0.0, now - oldest):.1f} s to {max(0.0, now - newest):.1f} s ago'
    when = f'their ttl ran out {ages}' if reason == MissingReason.STALE.value else f'since {ages}'
    return f'{count} key(s) under {pattern} {reason}: {when}; the {listed} most valuable listed'
