"""Typed-topic sources, pure: the robot's own messages mapped to board entries and events.

A sources file (the node's `sources_file` parameter) names, per source, a topic, its
message type and how each message becomes board entries (`board` mappings) and event-log
events (`events` mappings). This module validates such a file against the message types
(described by a `Describe` callable: the node's from rclpy message classes, the replay's
from rosbags' typestore) and converts messages. The conversion only reads fields: a
message is a plain dict (as `rosidl_runtime_py.convert.message_to_ordereddict` gives),
an rclpy message or a rosbags message, and the same code serves the node and the replay.
docs/SOURCES.md is the reference of the file's fields.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

import numpy as np
import yaml

from working_memory.core.checks import did_you_mean
from working_memory.core.frozen import deep_freeze
from working_memory.core.items import BoardEntry, Event, EventKind, name_problem, shown_name
from working_memory.core.refusals import event_refusal_key
from working_memory.engine.health import Level, Status
from working_memory.engine.inputs import (MAX_VALUE_BYTES, Oversize, TooLarge, check_size,
                                          rejections, stamp_or)


class SourceError(ValueError):
    """A sources file that cannot be used; the message names the field at fault."""


@dataclass(frozen=True)
class FieldType:
    """A message field's type: `base` is a primitive ('double') or a message 'pkg/msg/Name'."""

    base: str
    sequence: bool = False

    @property
    def is_message(self) -> bool:
        """True when the field (or its elements) is a message."""
        return '/' in self.base


@dataclass(frozen=True)
class TypeInfo:
    """A message type's fields ({name: FieldType}, in order) and constants ({name: value})."""

    fields: Mapping[str, FieldType]
    constants: Mapping[str, Any] = field(default_factory=dict)


# Returns the TypeInfo of a message type 'pkg/msg/Name'; raises LookupError saying why not.
Describe = Callable[[str], TypeInfo]

SOURCE_FIELDS = ('topic', 'type', 'qos', 'frame', 'board', 'events')
QOS_FIELDS = ('reliability', 'durability', 'depth')
RELIABILITIES = ('reliable', 'best_effort')
DURABILITIES = ('volatile', 'transient_local')
BOARD_FIELDS = ('key', 'value', 'each', 'newest', 'id', 'when', 'remove', 'stamp', 'importance',
                'ttl_s', 'ttl_periods', 'tags')
EVENT_FIELDS = ('key', 'kind', 'kinds', 'field', 'when', 'each', 'newest', 'id', 'detail', 'stamp',
                'importance', 'tags')
TIME_TYPE = 'builtin_interfaces/msg/Time'
# Field types a `newest` mapping orders elements by: a Time, or a number.
ORDERED_TYPES = (TIME_TYPE, 'float', 'double', 'int8', 'uint8', 'int16', 'uint16', 'int32',
                 'uint32', 'int64', 'uint64')
WHEN_FIELDS = ('field', 'at_least', 'in')
TRANSFORM_FIELDS = ('transform', 'field', 'max_points', 'at_least')
TRANSFORMS = ('yaw', 'polyline', 'zones')
# Messages whose transition state a mapping keeps (goal ids of an action status): the oldest
# go first beyond this many.
MAX_TRACKED = 4096
# Header stamps a `ttl_periods` mapping measures the topic's period over.
RATE_WINDOW = 8
_PLACEHOLDER = re.compile(r'\{([^{}]*)\}')

# -- reading messages ------------------------------------------------------------


def read(msg: Any, path: tuple[str, ...]) -> Any:
    """Return the field at `path` of a plain-dict, rclpy or rosbags message (not converted)."""
    for name in path:
        msg = msg[name] if isinstance(msg, Mapping) else getattr(msg, name)
    return msg


def plain(value: Any, where: str) -> Any:
    """Return a message value as strict JSON data; ValueError names a non-finite number.

    Messages become dicts (fields in order), arrays lists, a single byte an int.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f'{where}: {value} is not a finite number')
        return value
    if isinstance(value, bytes):
        return value[0] if len(value) == 1 else list(value)
    if isinstance(value, Mapping):
        return {name: plain(item, f'{where}.{name}') for name, item in value.items()}
    if isinstance(value, (list, tuple, array.array)):
        return [plain(item, f'{where}[{index}]') for index, item in enumerate(value)]
    tolist = getattr(value, 'tolist', None)
    if tolist is not None:   # numpy arrays and scalars
        return plain(tolist(), where)
    names = _field_names(value)
    if names is None:
        raise ValueError(f'{where}: cannot read a {type(value).__name__}')
    return {name: plain(getattr(value, name), f'{where}.{name}') for name in names}


def _field_names(msg: Any) -> Iterable[str] | None:
    """Return the field names of an rclpy or rosbags message, None for anything else."""
    fields = getattr(msg, 'get_fields_and_field_types', None)
    if fields is not None:
        return fields().keys()
    if getattr(msg, '__msgtype__', None) is None:
        return None
    return _rosbags_fields(type(msg))


@functools.lru_cache(maxsize=None)
def _rosbags_fields(cls: type) -> tuple[str, ...]:
    """Return a rosbags message class's fields: its dataclass fields but the class variables.

    rosbags declares the constants and `__msgtype__` as `ClassVar` annotations in text,
    which `dataclasses.fields` lists as fields.
    """
    return tuple(item.name for item in dataclasses.fields(cls)
                 if not str(item.type).startswith(('ClassVar', 'typing.ClassVar')))


def number(value: Any, where: str) -> float:
    """Return a finite float of a numeric field; ValueError names `where`."""
    value = plain(value, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'{where}: must be a number, got {value!r}')
    return float(value)


def yaw(quaternion: Any, where: str) -> float:
    """Return the heading about z [rad] of a quaternion (roll and pitch ignored)."""
    x, y, z, w = (number(read(quaternion, (c,)), f'{where}.{c}') for c in 'xyzw')
    if x == y == z == w == 0.0:
        raise ValueError(f'{where}: a quaternion of zero norm is no rotation')
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def polyline(points: Any, where: str, max_points: int = 0) -> list[list[float]]:
    """Return [[x, y], ...] [m] of poses, stamped poses or points; at most `max_points` (0: all).

    Decimated evenly, the first and the last point kept.
    """
    points = list(points)
    if max_points and len(points) > max_points:
        last = len(points) - 1
        points = [points[round(i * last / (max_points - 1))] for i in range(max_points)] \
            if max_points > 1 else points[-1:]
    line = []
    for index, point in enumerate(points):
        position = _position(point)
        line.append([number(read(position, ('x',)), f'{where}[{index}].x'),
                     number(read(position, ('y',)), f'{where}[{index}].y')])
    return line


def zones(grid: Any, where: str, at_least: int = 100) -> list[list[list[float]]]:
    """Return the regions of a grid's cells >= `at_least` as polygons [[[x, y], ...], ...] [m].

    Each 8-connected region is its convex hull in the grid's frame (info.origin,
    its rotation about z included): a concave region is covered whole, never less.
    Cells are read as int8 (-1 unknown is never a zone); no region gives [].
    """
    info = read(grid, ('info',))
    width, height = int(read(info, ('width',))), int(read(info, ('height',)))
    resolution = number(read(info, ('resolution',)), f'{where}.info.resolution')
    cells = np.asarray(read(grid, ('data',))).astype(np.int8, copy=False).reshape(-1)
    if cells.size != width * height:
        raise ValueError(f'{where}: {cells.size} cells for {width} x {height}')
    origin = read(info, ('origin',))
    ox = number(read(origin, ('position', 'x')), f'{where}.info.origin.position.x')
    oy = number(read(origin, ('position', 'y')), f'{where}.info.origin.position.y')
    heading = yaw(read(origin, ('orientation',)), f'{where}.info.origin.orientation')
    cos, sin = math.cos(heading), math.sin(heading)
    polygons = []
    for corners in _region_corners(cells.reshape(height, width) >= at_least):
        polygons.append([[round(ox + resolution * (u * cos - v * sin), 3),
                          round(oy + resolution * (u * sin + v * cos), 3)]
                         for u, v in convex_hull(corners)])
    return polygons


def _region_corners(mask: np.ndarray) -> list[list[tuple[int, int]]]:
    """Return per 8-connected region of `mask` the corners (column, row) of its row runs.

    Runs of one row join the runs of the row below that touch them (diagonally too),
    by union-find over runs: work grows with the runs, not the cells.
    """
    runs: list[tuple[int, int, int]] = []   # (row, first column, last column)
    parent: list[int] = []

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index
    below: list[int] = []   # the previous row's runs
    for row in range(mask.shape[0]):
        edges = np.flatnonzero(np.diff(np.concatenate(([0], mask[row].view(np.int8), [0]))))
        current = []
        for first, end in zip(edges[::2].tolist(), edges[1::2].tolist()):
            index = len(runs)
            runs.append((row, first, end - 1))
            parent.append(index)
            for other in below:
                _, other_first, other_last = runs[other]
                if other_first <= end and other_last >= first - 1:
                    parent[root(other)] = root(index)
            current.append(index)
        below = current
    regions: dict[int, list[tuple[int, int]]] = {}
    for index, (row, first, last) in enumerate(runs):
        regions.setdefault(root(index), []).extend(
            ((first, row), (last + 1, row), (first, row + 1), (last + 1, row + 1)))
    return list(regions.values())


def convex_hull(points: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the convex hull of points, counter-clockwise, without collinear points."""
    points = sorted(set(points))
    if len(points) < 3:
        return points

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    lower, upper = [], []
    for point in points:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], point) <= 0:
            lower.pop()
        lower.append(point)
    for point in reversed(points):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], point) <= 0:
            upper.pop()
        upper.append(point)
    return lower[:-1] + upper[:-1]


def _position(point: Any) -> Any:
    """Return the point of a PoseStamped (pose.position), a Pose (position) or a Point."""
    for path in (('pose', 'position'), ('position',)):
        try:
            return read(point, path)
        except (AttributeError, KeyError):
            continue
    return point


def key_text(value: Any) -> str:
    """Return a field as it reads in a key: bytes (a uuid) as hex, numbers as written."""
    if isinstance(value, list) and all(isinstance(v, int) and 0 <= v < 256 for v in value):
        return bytes(value).hex()
    return str(value)

# -- mappings ----------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """How a mapping makes a value: a field, a transform or an object of named parts.

    `path` () is the whole message (or `each` element).
    """

    path: tuple[str, ...] = ()
    transform: str = ''
    max_points: int = 0
    at_least: int = 100
    parts: tuple[tuple[str, 'Value'], ...] | None = None

    def make(self, element: Any, where: str) -> Any:
        """Return the value of `element` (a message or an `each` element) as strict JSON."""
        if self.parts is not None:
            return {name: part.make(element, f'{where}.{name}') for name, part in self.parts}
        raw = read(element, self.path)
        what = '.'.join(self.path) or where
        if self.transform == 'yaw':
            return yaw(raw, what)
        if self.transform == 'polyline':
            return polyline(raw, what, self.max_points)
        if self.transform == 'zones':
            return zones(raw, what, self.at_least)
        return plain(raw, what)


@dataclass(frozen=True)
class Key:
    """A key: fixed text, or text with `{field}` placeholders filled from the element."""

    text: str
    fields: tuple[tuple[str, ...], ...] = ()

    def make(self, element: Any) -> str:
        """Return the key of `element`; ValueError when it is not a usable key."""
        if self.fields:
            values = iter(key_text(plain(read(element, path), '.'.join(path)))
                          for path in self.fields)
            key = _PLACEHOLDER.sub(lambda _: next(values), self.text)
        else:
            key = self.text
        problem = name_problem(key, 'key')
        if problem is not None:
            raise ValueError(problem)
        return key


@dataclass(frozen=True)
class When:
    """A condition on a field: at least a number, or one of some values."""

    path: tuple[str, ...]
    at_least: float | None = None
    among: tuple[Any, ...] | None = None

    def holds(self, element: Any) -> bool:
        """Return True when `element`'s field meets the condition."""
        value = plain(read(element, self.path), '.'.join(self.path))
        if self.at_least is not None:
            return number(value, '.'.join(self.path)) >= self.at_least
        return value in self.among


@dataclass(frozen=True)
class BoardMapping:
    """Board entries of a message: a key set (or removed) per message or per `each` element."""

    key: Key
    value: Value = Value()
    each: tuple[str, ...] = ()
    newest: tuple[str, ...] | None = None   # only the element greatest in this field counts
    ident: tuple[str, ...] | None = None   # what tells elements apart (default: the key)
    when: When | None = None
    remove: bool = False
    stamp: tuple[str, ...] | None = None   # a Time field (default: the header's)
    importance: float | None = None
    ttl_s: float = 0.0
    ttl_periods: float = 0.0
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class EventMapping:
    """Events of a message: on every message, or on a condition's transitions."""

    key: Key
    kind: EventKind | None = None
    kinds: tuple[tuple[Any, EventKind], ...] = ()   # watched field value -> kind
    watched: tuple[str, ...] = ()
    when: When | None = None
    each: tuple[str, ...] = ()
    newest: tuple[str, ...] | None = None   # only the element greatest in this field counts
    ident: tuple[str, ...] | None = None   # what tells elements apart (default: the key)
    detail: Value | None = None
    stamp: tuple[str, ...] | None = None   # a Time field (default: the header's)
    importance: float | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class QosSpec:
    """The subscription's QoS as given; None fields are adapted to the publishers."""

    reliability: str | None = None
    durability: str | None = None
    depth: int = 10


@dataclass(frozen=True)
class SourceSpec:
    """One source: a topic of a message type and its mappings."""

    name: str
    topic: str
    type: str
    qos: QosSpec = QosSpec()
    frame: str | None = None
    board: tuple[BoardMapping, ...] = ()
    events: tuple[EventMapping, ...] = ()

# -- the file ----------------------------------------------------------------------


def load_sources(path: str, describe: Describe) -> tuple[SourceSpec, ...]:
    """Read and validate a sources file; SourceError names the file and the field at fault."""
    try:
        with open(path, encoding='utf-8') as stream:
            document = yaml.safe_load(stream)
    except OSError as error:
        raise SourceError(f'sources_file {path}: {error.strerror or error}') from None
    except yaml.YAMLError as error:
        raise SourceError(f'sources_file {path}: not valid YAML: {error}') from None
    try:
        return parse_sources(document, describe)
    except SourceError as error:
        raise SourceError(f'sources_file {path}: {error}') from None


def parse_sources(document: Any, describe: Describe) -> tuple[SourceSpec, ...]:
    """Validate a sources document ({sources: {name: source}}) against the message types."""
    if not isinstance(document, Mapping) or set(document) != {'sources'}:
        raise SourceError('must be a mapping with the one key sources')
    sources = document['sources']
    if not isinstance(sources, Mapping) or not sources:
        raise SourceError('sources: must be a mapping of source names to sources')
    specs = [_source(str(name), body, describe) for name, body in sources.items()]
    topics = collections.Counter(spec.topic for spec in specs)
    for topic, count in topics.items():
        if count > 1:
            raise SourceError(f'sources: topic {topic} is taken by {count} sources '
                              '(give one source several mappings)')
    return tuple(specs)


def select_sources(specs: Iterable[SourceSpec], names: Iterable[str],
                   where: str = 'sources') -> tuple[SourceSpec, ...]:
    """Return the sources of `specs` that `names` names; SourceError names an unknown one."""
    by_name = {spec.name: spec for spec in specs}
    for name in names:
        if name not in by_name:
            raise SourceError(f'{where}: the sources file has no source {name!r}'
                              + did_you_mean(name, by_name))
    return tuple(by_name[name] for name in dict.fromkeys(names))


def _source(name: str, body: Any, describe: Describe) -> SourceSpec:
    where = f'sources.{name}'
    body = _fields(body, SOURCE_FIELDS, where)
    topic = _text(body, 'topic', where)
    type_name = _text(body, 'type', where)
    root = _describe(describe, type_name, f'{where}.type')
    schema = _Schema(describe, type_name, root)
    frame = body.get('frame')
    if frame is not None:
        if not isinstance(frame, str):
            raise SourceError(f'{where}.frame: must be a string, got {frame!r}')
        if 'header' not in root.fields:
            raise SourceError(f'{where}.frame: {type_name} has no header to check')
    board = tuple(_board(mapping, schema, f'{where}.board[{index}]')
                  for index, mapping in enumerate(_list(body, 'board', where)))
    events = tuple(_event(mapping, schema, f'{where}.events[{index}]')
                   for index, mapping in enumerate(_list(body, 'events', where)))
    if not board and not events:
        raise SourceError(f'{where}: needs at least one board or events mapping')
    return SourceSpec(name, topic, type_name, _qos(body.get('qos'), f'{where}.qos'), frame,
                      board, events)


def _describe(describe: Describe, type_name: str, where: str) -> TypeInfo:
    try:
        return describe(type_name)
    except LookupError as error:
        raise SourceError(f'{where}: {error.args[0] if error.args else error}') from None


class _Schema:
    """Field paths checked against a message type and the types below it."""

    def __init__(self, describe: Describe, type_name: str, root: TypeInfo):
        self._describe = describe
        self.type_name = type_name
        self.root = root

    def info(self, type_name: str, where: str) -> TypeInfo:
        return _describe(self._describe, type_name, where)

    def resolve(self, text: Any, start: tuple[str, TypeInfo], where: str,
                allow_sequence: bool = True) -> tuple[tuple[str, ...], FieldType | None,
                                                      TypeInfo | None]:
        """Return (path, its FieldType or None for the start itself, its owner's TypeInfo)."""
        if not isinstance(text, str):
            raise SourceError(f'{where}: must be a field path string, got {text!r}')
        path = tuple(text.split('.')) if text else ()
        type_name, info = start
        owner, kind = info, None
        for index, name in enumerate(path):
            if kind is not None:
                if kind.sequence or not kind.is_message:
                    raise SourceError(f'{where}: {".".join(path[:index])} has no fields '
                                      f'({"a sequence" if kind.sequence else kind.base})')
                type_name, info = kind.base, self.info(kind.base, where)
            if name not in info.fields:
                raise SourceError(f'{where}: {type_name} has no field {name!r}'
                                  + did_you_mean(name, info.fields))
            owner, kind = info, info.fields[name]
        if kind is not None and kind.sequence and not allow_sequence:
            raise SourceError(f'{where}: {text} is a sequence (use each, or a transform)')
        return path, kind, owner

    def element(self, text: Any, where: str) -> tuple[tuple[str, ...], tuple[str, TypeInfo]]:
        """Return the path of an `each` sequence of messages and its element type."""
        path, kind, _ = self.resolve(text, (self.type_name, self.root), where)
        if kind is None or not kind.sequence or not kind.is_message:
            raise SourceError(f'{where}: {text!r} must be a sequence of messages')
        return path, (kind.base, self.info(kind.base, where))


def _board(body: Any, schema: _Schema, where: str) -> BoardMapping:
    body = _fields(body, BOARD_FIELDS, where)
    each, start = _each(body, schema, where)
    remove = body.get('remove', False)
    if not isinstance(remove, bool):
        raise SourceError(f'{where}.remove: must be true or false, got {remove!r}')
    if remove and 'value' in body:
        raise SourceError(f'{where}: a mapping that removes its key takes no value')
    if remove and 'when' not in body:
        raise SourceError(f'{where}: a mapping that removes its key needs a when condition')
    ttl_s = _at_least_zero(body.get('ttl_s', 0.0), f'{where}.ttl_s')
    ttl_periods = _at_least_zero(body.get('ttl_periods', 0.0), f'{where}.ttl_periods')
    if ttl_periods and 'header' not in schema.root.fields:
        raise SourceError(f'{where}.ttl_periods: {schema.type_name} has no header stamps '
                          'to measure its rate by')
    return BoardMapping(
        key=_key(body, schema, start, where), value=_value(body.get('value'), schema, start,
                                                           f'{where}.value'),
        each=each, newest=_newest(body, each, schema, start, where),
        ident=_ident(body, each, schema, start, where),
        when=_when(body.get('when'), schema, start, f'{where}.when'), remove=remove,
        stamp=_stamp(body, schema, start, where),
        importance=_importance(body.get('importance'), f'{where}.importance'),
        ttl_s=ttl_s, ttl_periods=ttl_periods, tags=_tags(body.get('tags'), f'{where}.tags'))


def _event(body: Any, schema: _Schema, where: str) -> EventMapping:
    body = _fields(body, EVENT_FIELDS, where)
    each, start = _each(body, schema, where)
    kind, kinds, watched = None, (), ()
    if ('kind' in body) == ('kinds' in body):
        raise SourceError(f'{where}: give either kind or kinds (with field)')
    if 'kind' in body:
        if 'field' in body:
            raise SourceError(f'{where}.field: only with kinds (kind takes a when condition)')
        kind = _kind(body['kind'], f'{where}.kind')
    else:
        if 'field' not in body or 'when' in body:
            raise SourceError(f'{where}: kinds needs a field to watch and takes no when')
        watched, _, owner = schema.resolve(body['field'], start, f'{where}.field', False)
        values = body['kinds']
        if not isinstance(values, Mapping) or not values:
            raise SourceError(f'{where}.kinds: must map field values to event kinds')
        kinds = tuple((_constant(value, owner, f'{where}.kinds'),
                       _kind(name, f'{where}.kinds.{value}')) for value, name in values.items())
    ident = _ident(body, each, schema, start, where)
    detail = body.get('detail')
    return EventMapping(
        key=_key(body, schema, start, where), kind=kind, kinds=kinds, watched=watched,
        when=_when(body.get('when'), schema, start, f'{where}.when'), each=each,
        newest=_newest(body, each, schema, start, where), ident=ident,
        detail=None if detail is None else _value(detail, schema, start, f'{where}.detail'),
        stamp=_stamp(body, schema, start, where),
        importance=_importance(body.get('importance'), f'{where}.importance'),
        tags=_tags(body.get('tags'), f'{where}.tags'))


def _each(body: Mapping, schema: _Schema,
          where: str) -> tuple[tuple[str, ...], tuple[str, TypeInfo]]:
    if 'each' not in body:
        return (), (schema.type_name, schema.root)
    return schema.element(body['each'], f'{where}.each')


def _ident(body: Mapping, each: tuple[str, ...], schema: _Schema,
           start: tuple[str, TypeInfo], where: str) -> tuple[str, ...] | None:
    found = _element_field(body, 'id', each, schema, start, where, 'elements to tell apart')
    return None if found is None else found[0]


def _newest(body: Mapping, each: tuple[str, ...], schema: _Schema,
            start: tuple[str, TypeInfo], where: str) -> tuple[str, ...] | None:
    found = _element_field(body, 'newest', each, schema, start, where,
                           'elements to choose the newest of')
    if found is None:
        return None
    path, kind = found
    if kind is None or kind.sequence or kind.base not in ORDERED_TYPES:
        raise SourceError(f'{where}.newest: must name a {TIME_TYPE} or a number field')
    return path


def _element_field(body: Mapping, name: str, each: tuple[str, ...], schema: _Schema,
                   start: tuple[str, TypeInfo], where: str,
                   purpose: str) -> tuple[tuple[str, ...], FieldType | None] | None:
    """Return (path, type) of the field of `each`'s elements that `name` gives; None without."""
    if name not in body:
        return None
    if not each:
        raise SourceError(f'{where}.{name}: only with each ({purpose})')
    path, kind, _ = schema.resolve(body[name], start, f'{where}.{name}')
    return path, kind


def _stamp(body: Mapping, schema: _Schema, start: tuple[str, TypeInfo],
           where: str) -> tuple[str, ...] | None:
    if 'stamp' not in body:
        return None
    path, kind, _ = schema.resolve(body['stamp'], start, f'{where}.stamp', False)
    if kind is None or kind.base != TIME_TYPE:
        raise SourceError(f'{where}.stamp: must name a {TIME_TYPE} field')
    return path


def _key(body: Mapping, schema: _Schema, start: tuple[str, TypeInfo], where: str) -> Key:
    text = _text(body, 'key', where)
    fields = tuple(schema.resolve(name, start, f'{where}.key {{{name}}}')[0]
                   for name in _PLACEHOLDER.findall(text))
    if not fields:
        problem = name_problem(text, f'{where}.key')
        if problem is not None:
            raise SourceError(problem)
    return Key(text, fields)


def _value(spec: Any, schema: _Schema, start: tuple[str, TypeInfo], where: str) -> Value:
    if spec is None:
        return Value()
    if isinstance(spec, str):
        return Value(schema.resolve(spec, start, where)[0])
    if not isinstance(spec, Mapping) or not spec:
        raise SourceError(f'{where}: must be a field path, a transform or a mapping of '
                          f'names to values, got {spec!r}')
    if 'transform' in spec:
        return _transform(spec, schema, start, where)
    return Value(parts=tuple((str(name), _value(part, schema, start, f'{where}.{name}'))
                             for name, part in spec.items()))


def _transform(spec: Mapping, schema: _Schema, start: tuple[str, TypeInfo],
               where: str) -> Value:
    spec = _fields(spec, TRANSFORM_FIELDS, where)
    name = spec['transform']
    if name not in TRANSFORMS:
        raise SourceError(f'{where}.transform: unknown transform {name!r}'
                          + did_you_mean(str(name), TRANSFORMS))
    for option, owner in (('max_points', 'polyline'), ('at_least', 'zones')):
        if option in spec and name != owner:
            raise SourceError(f'{where}.{option}: only for {owner}')
    path, kind, _ = schema.resolve(spec.get('field', ''), start, f'{where}.field')
    base = start[0] if kind is None else kind.base
    if name == 'yaw':
        fields = schema.info(base, where).fields if '/' in base else {}
        if (kind is not None and kind.sequence) or not {'x', 'y', 'z', 'w'} <= set(fields):
            raise SourceError(f'{where}.field: yaw needs a quaternion, got {base}')
    elif name == 'zones':
        fields = schema.info(base, where).fields if '/' in base else {}
        if (kind is not None and kind.sequence) or not {'info', 'data'} <= set(fields):
            raise SourceError(f'{where}.field: zones needs an occupancy grid '
                              f'(nav_msgs/msg/OccupancyGrid), got {base}')
    else:
        fields = schema.info(base, where).fields if '/' in base else {}
        if kind is None or not kind.sequence or not (
                {'pose', 'position', 'x'} & set(fields)):
            raise SourceError(f'{where}.field: polyline needs a sequence of poses, stamped '
                              f'poses or points, got {base}')
    max_points = spec.get('max_points', 0)
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 0:
        raise SourceError(f'{where}.max_points: must be an integer >= 0, got {max_points!r}')
    at_least = spec.get('at_least', 100)
    if isinstance(at_least, bool) or not isinstance(at_least, int) or not 1 <= at_least <= 127:
        raise SourceError(f'{where}.at_least: must be an integer in [1, 127] (an occupancy), '
                          f'got {at_least!r}')
    return Value(path, name, max_points, at_least)


def _when(spec: Any, schema: _Schema, start: tuple[str, TypeInfo], where: str) -> When | None:
    if spec is None:
        return None
    spec = _fields(spec, WHEN_FIELDS, where)
    if 'field' not in spec or ('at_least' in spec) == ('in' in spec):
        raise SourceError(f'{where}: needs a field and one of at_least, in')
    path, _, owner = schema.resolve(spec['field'], start, f'{where}.field', False)
    if 'at_least' in spec:
        threshold = _constant(spec['at_least'], owner, f'{where}.at_least')
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise SourceError(f'{where}.at_least: must be a number, got {threshold!r}')
        return When(path, at_least=float(threshold))
    values = spec['in']
    if not isinstance(values, list) or not values:
        raise SourceError(f'{where}.in: must be a list of values')
    return When(path, among=tuple(_constant(value, owner, f'{where}.in') for value in values))


def _constant(value: Any, owner: TypeInfo | None, where: str) -> Any:
    """Return a value, a constant's name (`ERROR`, `STATUS_ABORTED`) read as its value."""
    if isinstance(value, str) and owner is not None and owner.constants:
        if value in owner.constants:
            return plain(owner.constants[value], where)
        if value.isupper():
            raise SourceError(f'{where}: unknown constant {value!r}'
                              + did_you_mean(value, owner.constants))
    return value


def _kind(name: Any, where: str) -> EventKind:
    if name not in EventKind.__members__:
        raise SourceError(f'{where}: unknown event kind {name!r}'
                          + did_you_mean(str(name), EventKind.__members__))
    return EventKind[name]


def _qos(spec: Any, where: str) -> QosSpec:
    if spec is None:
        return QosSpec()
    spec = _fields(spec, QOS_FIELDS, where)
    for name, choices in (('reliability', RELIABILITIES), ('durability', DURABILITIES)):
        if name in spec and spec[name] not in choices:
            raise SourceError(f'{where}.{name}: must be one of {", ".join(choices)}, got '
                              f'{spec[name]!r}' + did_you_mean(str(spec[name]), choices, False))
    depth = spec.get('depth', 10)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise SourceError(f'{where}.depth: must be an integer >= 1, got {depth!r}')
    return QosSpec(spec.get('reliability'), spec.get('durability'), depth)


def _fields(body: Any, known: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise SourceError(f'{where}: must be a mapping, got {body!r}')
    for name in body:
        if name not in known:
            raise SourceError(f'{where}.{name}: unknown field' + did_you_mean(str(name), known))
    return body


def _text(body: Mapping, name: str, where: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise SourceError(f'{where}.{name}: required, a non-empty string (got {value!r})')
    return value


def _list(body: Mapping, name: str, where: str) -> list:
    value = body.get(name, [])
    if not isinstance(value, list):
        raise SourceError(f'{where}.{name}: must be a list of mappings, got {value!r}')
    return value


def _at_least_zero(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0.0 <= value < math.inf):
        raise SourceError(f'{where}: must be a finite number >= 0, got {value!r}')
    return float(value)


def _importance(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise SourceError(f'{where}: must be a number in [0, 1], got {value!r}')
    return float(value)


def _tags(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SourceError(f'{where}: must be a list of tags, got {value!r}')
    for tag in value:
        problem = name_problem(tag, where)
        if problem is not None:
            raise SourceError(problem)
    return tuple(value)

# -- conversion ---------------------------------------------------------------------


@dataclass(frozen=True)
class Conversion:
    """What one message gives: board entries, removed keys, events, and what was rejected.

    The entries' values are deeply frozen and strict JSON, as `BoardSnapshot.apply(...,
    checked=True)` takes them; `refused` holds the outputs rejected for their size (see
    `inputs.BoardBatch`), apart from `errors`.
    """

    entries: tuple[BoardEntry, ...] = ()
    removed_keys: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()
    errors: tuple[str, ...] = ()
    refused: tuple[Oversize, ...] = ()


class SourceMap:
    """Convert one source's messages; keeps what transitions and rates need between them.

    An output value or detail over `limit` bytes of JSON is refused (`inputs.check_size`).
    """

    def __init__(self, spec: SourceSpec, limit: int = MAX_VALUE_BYTES):
        self.spec = spec
        self.limit = limit
        # Per mapping, {element id: last state}, oldest first (transitions fire on change).
        self._states: dict[int, collections.OrderedDict] = collections.defaultdict(
            collections.OrderedDict)
        self._stamps: collections.deque[float] = collections.deque(maxlen=RATE_WINDOW)

    def convert(self, msg: Any, received: float) -> Conversion:
        """Return what `msg`, received at `received` [s], gives; ValueError rejects it whole.

        Outputs that fail alone (a non-finite number, a key that cannot be one) are
        rejected one by one in `errors`, those too large in `refused`; the others still
        apply.
        """
        spec = self.spec
        header = _header(msg)
        stamp = received
        if header is not None:
            frame_id = read(header, ('frame_id',))
            if spec.frame is not None and frame_id not in ('', spec.frame):
                raise ValueError(f'header.frame_id {frame_id!r} is not {spec.frame!r} '
                                 '(no TF lookup is done)')
            stamp = _seconds(read(header, ('stamp',)), received, 'header.stamp')
            self._stamps.append(stamp)
        entries: dict[str, BoardEntry] = {}
        removed: dict[str, None] = {}
        events: list[Event] = []
        errors: list[str] = []
        refused: list[Oversize] = []
        for index, mapping in enumerate(spec.board):
            for element, where in self._elements(msg, mapping, f'board[{index}]', errors):
                try:
                    key = self._board_output(index, mapping, element, stamp, entries, where)
                except TooLarge as error:
                    refused.append(error.oversize)
                    continue
                except (ValueError, AttributeError, KeyError, TypeError) as error:
                    errors.append(f'{where}: {_reason(error)}')
                    continue
                if key is not None:
                    removed[key] = None
                    entries.pop(key, None)
        for index, mapping in enumerate(spec.events):
            for element, where in self._elements(msg, mapping, f'events[{index}]', errors):
                try:
                    event = self._event_output(index, mapping, element, stamp, where)
                except TooLarge as error:
                    refused.append(error.oversize)
                    continue
                except (ValueError, AttributeError, KeyError, TypeError) as error:
                    errors.append(f'{where}: {_reason(error)}')
                    continue
                if event is not None:
                    events.append(event)
        for key in entries:
            removed.pop(key, None)
        return Conversion(tuple(entries.values()), tuple(removed), tuple(events), tuple(errors),
                          tuple(refused))

    @staticmethod
    def _elements(msg: Any, mapping: BoardMapping | EventMapping, where: str,
                  errors: list[str]) -> Iterator[tuple[Any, str]]:
        """Yield (element, where) of the mapping's `each` (the message itself without).

        With `newest` only the element greatest in that field (the later one of equals).
        """
        each = mapping.each
        if not each:
            yield msg, where
            return
        try:
            elements = list(read(msg, each))
            positions = range(len(elements))
            if mapping.newest is not None and elements:
                positions = (newest_position(elements, mapping.newest),)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            errors.append(f'{where}: {_reason(error)}')
            return
        name = '.'.join(each)
        for position in positions:
            yield elements[position], f'{where} {name}[{position}]'

    def _board_output(self, index: int, mapping: BoardMapping, element: Any, stamp: float,
                      entries: dict[str, BoardEntry], where: str) -> str | None:
        """Add `element`'s entry to `entries`; return a key to remove instead, or None."""
        key = mapping.key.make(element)
        if mapping.remove:
            ident = _ident_of(mapping, element, key, where)
            return key if self._fires(index, ident, mapping.when.holds(element)) else None
        if mapping.when is not None and not mapping.when.holds(element):
            return None
        # Measured frozen: the text a frozen object keeps is the one the working set uses.
        value = deep_freeze(mapping.value.make(element, where))
        check_size(value, self.limit, f'{where}: board entry {shown_name(key)}: value', key)
        entries[key] = BoardEntry(key=key, value=value, stamp=_stamp_of(mapping, element, stamp),
                                  importance=mapping.importance, ttl=self._ttl(mapping),
                                  tags=mapping.tags)
        return None

    def _event_output(self, index: int, mapping: EventMapping, element: Any, stamp: float,
                      where: str) -> Event | None:
        key = mapping.key.make(element)
        ident = _ident_of(mapping, element, key, where)
        if mapping.kinds:
            value = plain(read(element, mapping.watched), where)
            kind = dict(mapping.kinds).get(value)
            if not self._fires(-1 - index, ident, value) or kind is None:
                return None
        else:
            kind = mapping.kind
            if mapping.when is not None and not self._fires(-1 - index, ident,
                                                            mapping.when.holds(element)):
                return None
        detail = None if mapping.detail is None else mapping.detail.make(element, where)
        check_size(detail, self.limit, f'{where}: log event {shown_name(key)}: detail',
                   event_refusal_key(kind.value, key))
        return Event(stamp=_stamp_of(mapping, element, stamp), kind=kind,
                     source=self.spec.name, key=key, detail=detail,
                     importance=mapping.importance, tags=mapping.tags)

    def _fires(self, mapping: int, ident: str, state: Any) -> bool:
        """Note `state` of element `ident`; True on a change to a true-ish state."""
        states = self._states[mapping]
        before = states.pop(ident, None)
        states[ident] = state
        if len(states) > MAX_TRACKED:
            states.popitem(last=False)
        return state is not False and state is not None and state != before

    def _ttl(self, mapping: BoardMapping) -> float:
        """Return the ttl [s]: given, or periods of the header stamps' measured rate."""
        stamps = self._stamps
        if mapping.ttl_periods and len(stamps) > 1 and stamps[-1] > stamps[0]:
            return mapping.ttl_periods * (stamps[-1] - stamps[0]) / (len(stamps) - 1)
        return mapping.ttl_s


def newest_position(elements: list[Any], path: tuple[str, ...]) -> int:
    """Return the position of the element greatest in the Time or number field at `path`.

    Of equals the later one: an action's status array lists the goals it remembers,
    and the newest goal is the one accepted last (`goal_info.stamp`).
    """
    where = '.'.join(path)

    def order(position: int) -> tuple:
        value = read(elements[position], path)
        if isinstance(value, Mapping) or hasattr(value, 'sec'):   # a Time, compared exactly
            return (int(read(value, ('sec',))), int(read(value, ('nanosec',))), position)
        return (number(value, where), position)
    return max(range(len(elements)), key=order)


def _ident_of(mapping: BoardMapping | EventMapping, element: Any, key: str, where: str) -> str:
    """Return what tells `element` apart for transitions: its `id` field, else its key."""
    if mapping.ident is None:
        return key
    return key_text(plain(read(element, mapping.ident), where))


class _Time(NamedTuple):
    """A builtin_interfaces/Time of any form, as `inputs.stamp_or` reads it."""

    sec: int
    nanosec: int


def _stamp_of(mapping: BoardMapping | EventMapping, element: Any, stamp: float) -> float:
    """Return the output's stamp [s]: its mapping's Time field, else the message's `stamp`."""
    if mapping.stamp is None:
        return stamp
    return _seconds(read(element, mapping.stamp), stamp, '.'.join(mapping.stamp))


def _seconds(time: Any, fallback: float, what: str) -> float:
    """Return a Time of any form in seconds, `fallback` [s] when it is zero."""
    return stamp_or(_Time(read(time, ('sec',)), read(time, ('nanosec',))), fallback, what)


def _header(msg: Any) -> Any:
    try:
        return read(msg, ('header',))
    except (AttributeError, KeyError):
        return None


def _reason(error: Exception) -> str:
    if isinstance(error, (AttributeError, KeyError)):
        return f'field missing: {error}'
    return str(error)


class Sources:
    """All sources of a node by topic; `convert` counts what each source received and took."""

    def __init__(self, specs: Iterable[SourceSpec], limit: int = MAX_VALUE_BYTES):
        self.maps = {spec.topic: SourceMap(spec, limit) for spec in specs}
        self.counts = {topic: SourceCounts() for topic in self.maps}

    def convert(self, topic: str, msg: Any, received: float) -> Conversion:
        """Return what a message on `topic` gives; a rejected message gives nothing."""
        counts = self.counts[topic]
        counts.received += 1
        try:
            conversion = self.maps[topic].convert(msg, received)
        except (ValueError, AttributeError, KeyError, TypeError) as error:
            conversion = Conversion(errors=(f'message rejected: {_reason(error)}',))
        reasons = rejections(conversion.errors, conversion.refused)
        if reasons:
            counts.rejected += 1
            counts.last_rejection = reasons[-1]
        else:
            counts.taken += 1
        return conversion

    def reject(self, topic: str, reason: str) -> None:
        """Count a message on `topic` rejected before conversion (bytes that do not decode)."""
        counts = self.counts[topic]
        counts.received += 1
        counts.rejected += 1
        counts.last_rejection = reason


@dataclass
class SourceCounts:
    """Per source, on /diagnostics: messages received, taken whole, rejected (in part)."""

    received: int = 0
    taken: int = 0
    rejected: int = 0
    last_rejection: str = ''
    reported: int = 0   # rejections told on /diagnostics already


def sources_status(sources: Sources) -> list[Status]:
    """Return the `sources` status (none without sources): per source its counters."""
    if not sources.maps:
        return []
    values, problems = [], []
    for topic, counts in sources.counts.items():
        name = sources.maps[topic].spec.name
        values += [(f'{name}.received', str(counts.received)), (f'{name}.taken', str(counts.taken)),
                   (f'{name}.rejected', str(counts.rejected)),
                   (f'{name}.last_rejection', counts.last_rejection)]
        if counts.rejected > counts.reported:
            problems.append(f'{name}: {counts.rejected - counts.reported} rejected')
            counts.reported = counts.rejected
    if problems:
        return [Status('sources', Level.WARN, '; '.join(problems), tuple(values))]
    return [Status('sources', Level.OK, f'{len(sources.maps)} sources healthy', tuple(values))]
