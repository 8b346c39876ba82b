"""The node's inputs read from message fields into core types, without importing ROS.

The node (through `ros/conversions.py`) and the offline replay (`tools/replay.py`,
which reads the same messages from a bag with rosbags) call these same functions,
so a replayed input becomes exactly the core value the node made of it. They only
read attributes (duck typing): an rclpy message and a rosbags message both work.
Each raises ValueError naming the message field at fault.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np

from working_memory.core.frozen import FrozenDict, deep_freeze
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event, EventKind, json_size, shown_name
from working_memory.core.refusals import event_refusal_key

# -- time ------------------------------------------------------------------


def seconds_from_time(stamp) -> float:
    """Return a builtin_interfaces/Time as float seconds."""
    return stamp.sec + stamp.nanosec * 1e-9


def seconds_from_duration(duration) -> float:
    """Return a builtin_interfaces/Duration as float seconds."""
    return duration.sec + duration.nanosec * 1e-9


def stamp_or(stamp, fallback: float, what: str) -> float:
    """Return `stamp` in seconds, or `fallback` [s] when the sender left it zero.

    A negative stamp raises ValueError naming `what`: ROS time starts at 0, and such a
    stamp (often a time past 2038 wrapped around the int32 `sec`) would place the input
    before everything the node holds, never shown. A stamp in the future is taken.
    """
    if not (stamp.sec or stamp.nanosec):
        return fallback
    seconds = seconds_from_time(stamp)
    if seconds < 0.0:
        raise ValueError(f'{what}: must not be negative, got {seconds} s')
    return seconds


def importance_from_msg(value: float) -> float | None:
    """Return a message importance, NaN meaning 'use the manifest weight' (None)."""
    return None if math.isnan(value) else value


def _no_constant(name: str) -> Any:
    raise ValueError(f'{name} is not a JSON number (RFC 8259)')


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f'{text} is out of the range of a finite number')
    return number


# Deepest nesting of arrays and objects a value may have: deeper ones are refused (the
# core's recursive freezing and encoding stay far from Python's recursion limit).
MAX_DEPTH = 64
# The default of the node's `max_value_bytes` [bytes]: the largest JSON text of one value
# (a board entry's, an event's detail), as the node serialises it. Far above what a robot's
# state entry holds (docs/NODE.md, "Values over max_value_bytes").
MAX_VALUE_BYTES = 262_144
# A JSON text of n characters is at most this many times n bytes as the node serialises it
# (compact, ASCII): a character outside the BMP becomes a 12-byte escaped surrogate pair,
# one inside it at most 6, a number at most 4.5 times its text (1e15 is 1000000000000000.0).
# A text that short cannot be over the limit, and is not measured.
_GROWTH = 12


class Oversize(NamedTuple):
    """A value refused for its size: its working-set `key`, JSON `size` and `limit` [bytes].

    `reason` says so, naming the input (the message field or the source mapping).
    """

    key: str
    size: int
    limit: int
    reason: str


def rejections(errors: Iterable[str], refused: Iterable[Oversize]) -> list[str]:
    """Return why each part of an input was rejected: its `errors`, then its `refused` values."""
    return [*errors, *(oversize.reason for oversize in refused)]


class TooLarge(ValueError):
    """A value over the size limit; `oversize` tells which and by how much."""

    def __init__(self, what: str, key: str, size: int, limit: int):
        super().__init__(f'{what}: {size:,} bytes of JSON, over max_value_bytes {limit:,}')
        self.oversize = Oversize(key, size, limit, str(self))


def longest_unmeasured(limit: int) -> int:
    """Return the longest JSON text [chars] that cannot be over `limit` bytes: not measured."""
    return limit // _GROWTH


def check_size(value: Any, limit: int | None, what: str, key: str,
               text_length: int | None = None) -> None:
    """Raise TooLarge (naming `what`, for `key`) when `value`'s JSON is over `limit` bytes.

    The size is `core.items.json_size`, the compact JSON the node publishes (a frozen
    object keeps that text for its use). `text_length`: the characters of the text the
    value was parsed from, which spares measuring a value too short to be over (see
    `longest_unmeasured`). `limit` None: no limit.
    """
    if limit is None or (text_length is not None and text_length <= longest_unmeasured(limit)):
        return
    size = json_size(value)
    if size > limit:
        raise TooLarge(what, key, size, limit)


# Made once: json.loads with hooks builds a decoder per call.
_STRICT = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)
_STRICT_FROZEN = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float,
                                  object_pairs_hook=FrozenDict)
# The frozen decoder's scanner: `scan_frozen(text, 0)` -> (value, end) for a text that starts
# with a value, without `decode`'s whitespace handling (wire_in's fast path, which hands any
# text it cannot take whole to `json_field`); raises StopIteration or JSONDecodeError.
scan_frozen = _STRICT_FROZEN.scan_once


def json_field(text: str, what: str, frozen: bool = False, limit: int | None = None,
               key: str = '') -> Any:
    """Parse strict JSON `text` (RFC 8259: no NaN, Infinity, -Infinity); ValueError names `what`.

    `frozen`: the value comes deeply immutable, as `core.frozen.deep_freeze` makes it.
    A value nested deeper than MAX_DEPTH arrays and objects is refused, and one whose
    JSON is over `limit` bytes (None: no limit) raises TooLarge for `key`.
    """
    try:
        value = (_STRICT_FROZEN if frozen else _STRICT).decode(text)
    except RecursionError:
        raise ValueError(f'{what}: nested deeper than {MAX_DEPTH} levels') from None
    except ValueError as error:
        raise ValueError(f'{what}: not valid JSON ({error}): {text[:80]!r}') from None
    # Counting brackets is cheap; only a text that could be that deep is walked.
    if text.count('[') + text.count('{') > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise ValueError(f'{what}: nested deeper than {MAX_DEPTH} levels')
    if frozen and '[' in text:
        # Objects come frozen from the parser; only arrays are left to turn into tuples.
        value = deep_freeze(value)
    check_size(value, limit, what, key, len(text))
    return value


def _depth(value: Any) -> int:
    """Return how deeply arrays and objects nest in a parsed JSON value (a scalar: 0)."""
    depth, level = 0, [value]
    while True:
        containers = [node for node in level if isinstance(node, (dict, list, tuple))]
        if not containers:
            return depth
        depth += 1
        level = [child for node in containers
                 for child in (node.values() if isinstance(node, dict) else node)]

# -- board -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BoardBatch:
    """A BoardUpdate as core types; `errors` names each entry that was rejected.

    `stamp` [s] is the update's (its header stamp, or the receive time without one);
    `refused` holds the entries rejected for their value's size, apart from `errors`:
    the node records them per key.
    """

    entries: tuple[BoardEntry, ...]
    removed_keys: tuple[str, ...]
    errors: tuple[str, ...]
    stamp: float = 0.0
    refused: tuple[Oversize, ...] = ()


def board_batch_from_msg(msg, now: float, frozen: bool = False,
                         limit: int | None = None) -> BoardBatch:
    """Convert a BoardUpdate, rejecting bad entries one by one (the rest still apply).

    An entry stamp of zero falls back to the header stamp, then to `now` [s]
    (receive time): a board owner that does not stamp still gets ttl handling.
    A negative header stamp rejects the whole update (ValueError); a negative entry
    stamp, that entry; a value over `limit` bytes of JSON, that entry (`refused`).
    `frozen`: values come deeply immutable and strict JSON, ready for
    `BoardSnapshot.apply(..., checked=True)` (the node's intake, the hot path).
    """
    try:
        received = stamp_or(msg.header.stamp, now, 'header.stamp')
    except ValueError as error:
        raise ValueError(f'{error} (the whole update is rejected)') from None
    indexed, errors, refused = [], [], []
    for index, entry in enumerate(msg.entries):
        try:
            indexed.append((index, board_entry_from_msg(entry, received, frozen, limit)))
        except TooLarge as error:
            refused.append(error.oversize)
        except ValueError as error:
            errors.append(f'entries[{index}] {error}')
    last = {entry.key: index for index, entry in indexed}
    if len(last) != len(indexed):
        # A key set twice in one update: the later entry applies, the earlier is reported.
        errors.extend(f'entries[{index}] board entry {shown_name(entry.key)}: key set again by '
                      f'entries[{last[entry.key]}] of the same update, which applies'
                      for index, entry in indexed if last[entry.key] != index)
    entries = [entry for index, entry in indexed if last[entry.key] == index]
    removed = tuple(msg.removed_keys)
    if not all(removed):
        errors.append('removed_keys: empty key ignored')
        removed = tuple(key for key in removed if key)
    return BoardBatch(tuple(entries), removed, tuple(errors), received, tuple(refused))


def board_entry_from_msg(entry, received: float, frozen: bool = False,
                         limit: int | None = None) -> BoardEntry:
    """Convert one BoardEntry message, raising ValueError naming the key and field.

    A value over `limit` bytes of JSON raises TooLarge.
    """
    what = f'board entry {shown_name(entry.key)}'
    value = json_field(entry.value, f'{what}: value', frozen, limit, entry.key)
    stamp = stamp_or(entry.stamp, received, f'{what}: stamp')
    return BoardEntry(key=entry.key, value=value, stamp=stamp,
                      importance=importance_from_msg(entry.importance),
                      ttl=seconds_from_duration(entry.ttl), tags=tuple(entry.tags))

# -- log -------------------------------------------------------------------


def event_kinds(constants: Mapping[int, str]) -> dict[int, EventKind]:
    """Return {LogEvent kind constant: EventKind} from {value: constant name}."""
    return {value: EventKind(name) for value, name in constants.items()
            if name in EventKind.__members__}


def event_from_msg(msg, now: float, kinds: Mapping[int, EventKind],
                   limit: int | None = None) -> Event:
    """Convert a LogEvent, raising ValueError naming the field; a zero stamp means `now` [s].

    `kinds` maps the message's kind constants to EventKind (see `event_kinds`).
    A negative stamp is refused (see `stamp_or`); a detail over `limit` bytes of JSON
    raises TooLarge (for `event_refusal_key`).
    """
    kind = kinds.get(msg.kind)
    what = f'log event {shown_name(msg.key)}'
    if kind is None:
        raise ValueError(f'{what}: kind {msg.kind} is not one of '
                         f'{sorted(kinds)} ({", ".join(k.value for k in EventKind)})')
    stamp = stamp_or(msg.header.stamp, now, f'{what}: header.stamp')
    detail = json_field(msg.detail, f'{what}: detail', limit=limit,
                        key=event_refusal_key(kind.value, msg.key)) if msg.detail else None
    return Event(stamp=stamp, kind=kind, source=msg.source,
                 key=msg.key, detail=detail, importance=importance_from_msg(msg.importance),
                 tags=tuple(msg.tags))

# -- resync answers ----------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A writer's ResyncAnswer as core types; `errors` names each entry or event rejected.

    `refused`: the entries and events rejected for their size (see BoardBatch).
    """

    writer: str
    entries: tuple[BoardEntry, ...]
    events: tuple[Event, ...]
    errors: tuple[str, ...]
    refused: tuple[Oversize, ...] = ()


def answers(msg, start_id: str) -> bool:
    """Return True when a ResyncAnswer answers the request of the node start `start_id`."""
    return bool(start_id) and msg.start_id == start_id


def answer_from_msg(msg, now: float, kinds: Mapping[int, EventKind],
                    limit: int | None = None) -> Answer:
    """Convert a ResyncAnswer (see `answers`); a zero header stamp means `now` [s].

    Bad entries and events are rejected one by one (the rest still apply), those over
    `limit` bytes of JSON into `refused`; a negative header stamp rejects the whole
    answer (ValueError).
    """
    received = stamp_or(msg.header.stamp, now, 'header.stamp')
    entries, events, errors, refused = [], [], [], []
    for index, entry in enumerate(msg.entries):
        try:
            entries.append(board_entry_from_msg(entry, received, limit=limit))
        except TooLarge as error:
            refused.append(error.oversize)
        except ValueError as error:
            errors.append(f'entries[{index}] {error}')
    for index, event in enumerate(msg.events):
        try:
            events.append(event_from_msg(event, received, kinds, limit))
        except TooLarge as error:
            refused.append(error.oversize)
        except ValueError as error:
            errors.append(f'events[{index}] {error}')
    return Answer(msg.writer, tuple(entries), tuple(events), tuple(errors), tuple(refused))

# -- map -------------------------------------------------------------------


def grid_from_msg(msg, map_frame: str) -> GridMap:
    """View an OccupancyGrid's cells without copying, raising ValueError on a malformed grid."""
    info = msg.info
    width, height = info.width, info.height
    if msg.header.frame_id not in ('', map_frame):
        raise ValueError(f'map: header.frame_id {msg.header.frame_id!r} is not map_frame '
                         f'{map_frame!r}')
    if width * height == 0 or len(msg.data) != width * height:
        raise ValueError(f'map: data has {len(msg.data)} cells, info says '
                         f'width {width} x height {height} = {width * height} (must be > 0)')
    orientation = info.origin.orientation
    if abs(orientation.x) > 1e-6 or abs(orientation.y) > 1e-6 or abs(orientation.z) > 1e-6:
        raise ValueError('map: info.origin.orientation must be the identity '
                         '(rotated maps are not supported)')
    # One copy into immutable bytes: frozen frames may then share the grid's cells instead
    # of copying each tick's windows (core/frames.py freeze_window).
    data = msg.data if isinstance(msg.data, bytes) else bytes(msg.data)
    cells = np.frombuffer(data, dtype=np.int8).reshape(height, width)
    try:
        return GridMap(cells, (info.origin.position.x, info.origin.position.y), info.resolution)
    except ValueError as error:
        raise ValueError(f'map: info.{error}') from None

# -- pose ------------------------------------------------------------------


def _xy_in_frame(header, pose, map_frame: str, topic: str, field: str) -> tuple[float, float]:
    """Return (x, y) [m] of `pose` (the message's field `field`); ValueError names the fault.

    An empty `header.frame_id` is taken as `map_frame`. The orientation is not used, but it
    must be a rotation: finite, and a quaternion of nonzero norm.
    """
    if header.frame_id not in ('', map_frame):
        raise ValueError(f'{topic}: header.frame_id {header.frame_id!r} is not map_frame '
                         f'{map_frame!r} (no TF lookup is done)')
    x, y = pose.position.x, pose.position.y
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f'{topic}: {field}.position must be finite, got ({x}, {y})')
    q = pose.orientation
    quaternion = (q.x, q.y, q.z, q.w)
    if not all(math.isfinite(c) for c in quaternion):
        raise ValueError(f'{topic}: {field}.orientation must be finite, got {quaternion}')
    if math.hypot(*quaternion) == 0.0:
        raise ValueError(f'{topic}: {field}.orientation must be a quaternion of nonzero norm, '
                         f'got {quaternion}')
    return x, y


def pose_from_odometry(msg, map_frame: str) -> tuple[float, float]:
    """Return (x, y) [m] of a nav_msgs/Odometry given in `map_frame`."""
    return _xy_in_frame(msg.header, msg.pose.pose, map_frame, 'odom', 'pose.pose')


def pose_from_pose_stamped(msg, map_frame: str) -> tuple[float, float]:
    """Return (x, y) [m] of a geometry_msgs/PoseStamped given in `map_frame`."""
    return _xy_in_frame(msg.header, msg.pose, map_frame, 'pose', 'pose')


def pose_from_msg(msg, map_frame: str) -> tuple[float, float]:
    """Return (x, y) [m] of an Odometry (it has a child frame) or a PoseStamped in `map_frame`."""
    if hasattr(msg, 'child_frame_id'):
        return pose_from_odometry(msg, map_frame)
    return pose_from_pose_stamped(msg, map_frame)


# The pose topics the node can take (`pose_source`), with their conversions.
POSE_TOPICS = {'odometry': ('odom', pose_from_odometry),
               'pose_stamped': ('pose', pose_from_pose_stamped)}
