"""Cabin manifests: each cabin's contract of what its context pack must hold.

A manifest is validated once, when it is loaded, and then frozen. Every field
is a ROS parameter type (string, double, integer, string array), so the node
can declare `cabins.<cabin>.<field>` parameters from `MANIFEST_FIELDS` and pass
the same nested mapping to `Manifest.from_dict` that a YAML file gives.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import yaml

from working_memory.core.checks import did_you_mean, is_finite_number, is_unit_interval
from working_memory.core.items import EventKind

MAP = 'map'
EVENTS_PREFIX = 'events:'
BOARD_PREFIX = 'board:'
ALL_KINDS = '*'
_GLOB_CHARS = frozenset('*?[')
_CABIN_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_]*\Z')


class ManifestError(ValueError):
    """A manifest field is invalid; the message starts with the field's dotted name."""


@dataclass(frozen=True)
class ManifestField:
    """One manifest field as a ROS parameter: dotted name relative to the cabin."""

    name: str
    type: str         # 'string', 'double', 'integer' or 'string_array'
    default: Any
    description: str


MANIFEST_FIELDS = (
    ManifestField('board_keys', 'string_array', (),
                  'Board keys read directly; exact keys or globs such as "goal:*".'),
    ManifestField('required', 'string_array', (),
                  'Keys or globs that must be in the pack (read even when not in board_keys), '
                  '"events:<KIND>" or "events:*" for at least one event in the window, '
                  'or "map" for the map window.'),
    ManifestField('weights', 'string_array', (),
                  'Importance per key or glob as "pattern=weight" in [0, 1]; an exact key wins, '
                  'then the first matching glob. Event items are keyed event:<KIND>:<key>#<seq>.'),
    ManifestField('default_weight', 'double', 0.5,
                  'Importance in [0, 1] of an item no weight matches and whose source gave none.'),
    ManifestField('map.radius_m', 'double', 0.0,
                  'Half side [m] of the map window around the pose; 0 means no window.'),
    ManifestField('map.corridor_m', 'double', 0.0,
                  'Half-width [m] of the corridor around the route; 0 means no corridor.'),
    ManifestField('map.route_key', 'string', '',
                  "Board key of the route polyline; empty means the node's route key."),
    ManifestField('events.window_s', 'double', 0.0,
                  'Length [s] of the event window ending now; 0 means no events.'),
    ManifestField('events.max_count', 'integer', 0,
                  'Newest events kept from the window (before the tag filter); 0 means no cap.'),
    ManifestField('events.kinds', 'string_array', (),
                  'Event kinds in the window (ACTION, FAILURE, CONSTRAINT, OBSERVATION, GOAL, '
                  'ALARM); empty means all kinds.'),
    ManifestField('tags.include', 'string_array', (),
                  'A tagged item must carry one of these tags (untagged items pass); '
                  'empty means every tag passes.'),
    ManifestField('tags.exclude', 'string_array', (),
                  'Items carrying one of these tags are left out (goal and safety items never '
                  'are).'),
    ManifestField('tags.from_goal', 'string', '',
                  'Board key or glob of goal entries whose JSON "tags" extend tags.include.'),
    ManifestField('drop', 'string_array', (),
                  'Injected drops for missing-item tests: keys or globs, "board:<glob>", '
                  '"events:<KIND>", "events:*" or "map".'),
)
_FIELDS = {spec.name: spec for spec in MANIFEST_FIELDS}


class Patterns:
    """A set of exact keys and globs, matched with one set lookup and one regex."""

    __slots__ = ('patterns', '_exact', '_globs')

    def __init__(self, patterns: tuple[str, ...]):
        self.patterns = patterns
        self._exact = frozenset(p for p in patterns if not is_glob(p))
        globs = [fnmatch.translate(p) for p in patterns if is_glob(p)]
        self._globs = re.compile('|'.join(globs)) if globs else None

    def match(self, key: str) -> bool:
        """Return True when `key` equals an exact key or matches a glob."""
        return key in self._exact or (self._globs is not None
                                      and self._globs.match(key) is not None)

    def __bool__(self) -> bool:
        return bool(self.patterns)


def is_glob(pattern: str) -> bool:
    """Return True when `pattern` contains a glob character."""
    return not _GLOB_CHARS.isdisjoint(pattern)


@dataclass(frozen=True)
class MapScope:
    """Spatial scope: a window around the pose and/or a corridor around the route [m]."""

    radius_m: float = 0.0
    corridor_m: float = 0.0
    route_key: str = ''

    @property
    def enabled(self) -> bool:
        """True when the cabin asks for any map window."""
        return self.radius_m > 0.0 or self.corridor_m > 0.0


@dataclass(frozen=True)
class EventScope:
    """Temporal scope: the newest `max_count` events of `kinds` in the last `window_s` [s]."""

    window_s: float = 0.0
    max_count: int = 0
    kinds: tuple[EventKind, ...] = ()

    @property
    def enabled(self) -> bool:
        """True when the cabin asks for events."""
        return self.window_s > 0.0

    def selects(self, kind: EventKind) -> bool:
        """Return True when events of `kind` are in scope."""
        return self.enabled and (not self.kinds or kind in self.kinds)

    def kinds_named(self, name: str) -> list[EventKind]:
        """Return the kinds in scope that `name` ("FAILURE", ... or "*") names."""
        return [kind for kind in EventKind
                if self.selects(kind) and name in (ALL_KINDS, kind.value)]


@dataclass(frozen=True)
class TagFilter:
    """Semantic scope: tags to keep and to leave out, optionally extended by the goal's tags."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    from_goal: str = ''


@dataclass(frozen=True)
class Drops:
    """Injected drops parsed by category."""

    map: bool
    event_kinds: frozenset[EventKind]
    board: Patterns    # board keys only ("board:<glob>")
    any_key: Patterns  # board keys and event item keys


@dataclass(frozen=True)
class Requirements:
    """Required items parsed by category."""

    map: bool
    event_kinds: tuple[str, ...]  # EventKind values or ALL_KINDS
    board: tuple[str, ...]


@dataclass(frozen=True)
class Manifest:
    """One cabin's contract; build it with `Manifest.from_dict` (validated, frozen)."""

    name: str
    board_keys: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    weights: tuple[tuple[str, float], ...] = ()
    default_weight: float = 0.5
    map: MapScope = MapScope()
    events: EventScope = EventScope()
    tags: TagFilter = TagFilter()
    drop: tuple[str, ...] = ()
    # Derived lookups, computed from the fields above.
    selects: Patterns = field(init=False, repr=False, compare=False)
    requirements: Requirements = field(init=False, repr=False, compare=False)
    drops: Drops = field(init=False, repr=False, compare=False)
    _exact_weights: dict = field(init=False, repr=False, compare=False)
    _glob_weights: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # Each field's own values first: a bad value is named as itself, not as a
        # requirement it happens to break (a negative radius, not "map" needing one).
        self._check_values()
        requirements = self._parse_required()
        setters = {
            'requirements': requirements,
            'drops': self._parse_drops(),
            # Required board keys are read even when board_keys does not list them.
            'selects': Patterns(tuple(dict.fromkeys(self.board_keys + requirements.board))),
            '_exact_weights': {p: w for p, w in reversed(self.weights) if not is_glob(p)},
            '_glob_weights': tuple((re.compile(fnmatch.translate(p)), w)
                                   for p, w in self.weights if is_glob(p)),
        }
        for name, value in setters.items():
            object.__setattr__(self, name, value)

    # -- construction -------------------------------------------------------

    @classmethod
    def from_dict(cls, name: str, mapping: Mapping[str, Any]) -> Manifest:
        """Validate and build the manifest of cabin `name` from a nested (or dotted) mapping.

        Raises ManifestError naming the field, e.g. `planner.map.radius_m: must be >= 0 m`.
        """
        if not is_cabin_name(name):
            raise ManifestError(f'cabin name: must be a letter then letters, digits or _, '
                                f'got {name!r}')
        if not isinstance(mapping, Mapping):
            raise ManifestError(f'{name}: must be a mapping of manifest fields, '
                                f'got {type(mapping).__name__}')
        values = {spec.name: spec.default for spec in MANIFEST_FIELDS}
        for dotted, value in _flatten(mapping, name):
            spec = _FIELDS.get(dotted)
            if spec is None:
                raise ManifestError(f'{name}.{dotted}: unknown field'
                                    + did_you_mean(dotted, _FIELDS))
            values[dotted] = _check_type(value, spec, f'{name}.{dotted}')
        return cls(
            name=name,
            board_keys=values['board_keys'],
            required=values['required'],
            weights=tuple(_parse_weight(text, f'{name}.weights[{index}]')
                          for index, text in enumerate(values['weights'])),
            default_weight=values['default_weight'],
            map=MapScope(values['map.radius_m'], values['map.corridor_m'],
                         values['map.route_key']),
            events=EventScope(values['events.window_s'], values['events.max_count'],
                              tuple(_parse_kind(kind, f'{name}.events.kinds[{index}]')
                                    for index, kind in enumerate(values['events.kinds']))),
            tags=TagFilter(values['tags.include'], values['tags.exclude'],
                           values['tags.from_goal']),
            drop=values['drop'],
        )

    def _parse_required(self) -> Requirements:
        board, kinds, wants_map = [], [], False
        for index, spec in enumerate(self.required):
            where = f'{self.name}.required[{index}]'
            _check_pattern(spec, where)
            if spec == MAP:
                if not self.map.enabled:
                    raise ManifestError(f'{where}: "map" needs map.radius_m or map.corridor_m > 0')
                wants_map = True
            elif spec.startswith(EVENTS_PREFIX):
                kind = spec[len(EVENTS_PREFIX):]
                if kind != ALL_KINDS:
                    kind = _parse_kind(kind, where).value
                if not self.events.enabled or (kind != ALL_KINDS
                                               and not self.events.selects(EventKind(kind))):
                    raise ManifestError(f'{where}: {spec!r} is outside events '
                                        f'(window_s {self.events.window_s}, kinds '
                                        f'{[k.value for k in self.events.kinds] or "all"})')
                kinds.append(kind)
            else:
                board.append(spec)
        return Requirements(wants_map, tuple(kinds), tuple(board))

    def _parse_drops(self) -> Drops:
        board, any_key, kinds, drops_map = [], [], set(), False
        for index, spec in enumerate(self.drop):
            where = f'{self.name}.drop[{index}]'
            _check_pattern(spec, where)
            if spec == MAP:
                drops_map = True
            elif spec.startswith(EVENTS_PREFIX):
                kind = spec[len(EVENTS_PREFIX):]
                kinds.update(EventKind if kind == ALL_KINDS else (_parse_kind(kind, where),))
            elif spec.startswith(BOARD_PREFIX):
                _check_pattern(spec[len(BOARD_PREFIX):], where)
                board.append(spec[len(BOARD_PREFIX):])
            else:
                any_key.append(spec)
        return Drops(drops_map, frozenset(kinds), Patterns(tuple(board)), Patterns(tuple(any_key)))

    def _check_values(self) -> None:
        name = self.name
        for index, pattern in enumerate(self.board_keys):
            _check_pattern(pattern, f'{name}.board_keys[{index}]')
        for pattern, weight in self.weights:
            _check_weight(weight, f'{name}.weights[{pattern!r}]')
        _check_weight(self.default_weight, f'{name}.default_weight')
        _check_at_least_zero(self.map.radius_m, f'{name}.map.radius_m', 'm')
        _check_at_least_zero(self.map.corridor_m, f'{name}.map.corridor_m', 'm')
        _check_at_least_zero(self.events.window_s, f'{name}.events.window_s', 's')
        if self.events.max_count < 0:
            raise ManifestError(f'{name}.events.max_count: must be >= 0, '
                                f'got {self.events.max_count!r}')
        for group in ('include', 'exclude'):
            for index, tag in enumerate(getattr(self.tags, group)):
                if not tag:
                    raise ManifestError(f'{name}.tags.{group}[{index}]: must not be empty')
        both = set(self.tags.include) & set(self.tags.exclude)
        if both:
            raise ManifestError(f'{name}.tags: {sorted(both)} both included and excluded')

    # -- queries ------------------------------------------------------------

    def weight_for(self, key: str) -> float:
        """Return the importance of `key`: exact weight, else first matching glob, else default."""
        weight = self._exact_weights.get(key)
        if weight is not None:
            return weight
        for regex, weight in self._glob_weights:
            if regex.match(key):
                return weight
        return self.default_weight


def is_cabin_name(name: object) -> bool:
    """Return True for a valid cabin name: a letter, then letters, digits or _."""
    return isinstance(name, str) and _CABIN_NAME.match(name) is not None


def _flatten(mapping: Mapping[str, Any], where: str, prefix: str = ''):
    """Yield (dotted field name, value); nested mappings and dotted keys are the same thing."""
    for key, value in mapping.items():
        if not isinstance(key, str) or not key:
            raise ManifestError(f'{where}.{prefix}{key!r}: field names must be non-empty strings')
        dotted = prefix + key
        if isinstance(value, Mapping):
            yield from _flatten(value, where, dotted + '.')
        else:
            yield dotted, value


def _check_type(value: Any, spec: ManifestField, where: str) -> Any:
    if spec.type == 'string_array':
        if (not isinstance(value, (list, tuple))
                or not all(isinstance(item, str) for item in value)):
            raise ManifestError(f'{where}: must be a list of strings, got {value!r}')
        return tuple(value)
    if spec.type == 'double':
        if not is_finite_number(value):
            raise ManifestError(f'{where}: must be a finite number, got {value!r}')
        return float(value)
    if spec.type == 'integer':
        if isinstance(value, bool) or not isinstance(value, int):
            raise ManifestError(f'{where}: must be an integer, got {value!r}')
        return value
    if not isinstance(value, str):
        raise ManifestError(f'{where}: must be a string, got {value!r}')
    return value


def _check_pattern(pattern: str, where: str) -> None:
    if not pattern or pattern != pattern.strip():
        raise ManifestError(f'{where}: a key or glob must be non-empty without surrounding '
                            f'spaces, got {pattern!r}')


def _check_weight(weight: float, where: str) -> None:
    if not is_unit_interval(weight):
        raise ManifestError(f'{where}: must be in [0, 1], got {weight!r}')


def _check_at_least_zero(value: float, where: str, unit: str) -> None:
    if not (math.isfinite(value) and value >= 0.0):
        raise ManifestError(f'{where}: must be >= 0 {unit}, got {value!r}')


def _parse_weight(text: str, where: str) -> tuple[str, float]:
    pattern, sep, number = text.rpartition('=')
    if not sep:
        raise ManifestError(f'{where}: expected "pattern=weight", got {text!r}')
    pattern = pattern.strip()
    _check_pattern(pattern, where)
    try:
        weight = float(number)
    except ValueError:
        raise ManifestError(f'{where}: weight must be a number, got {number!r}') from None
    _check_weight(weight, where)
    return pattern, weight


def _parse_kind(text: str, where: str) -> EventKind:
    try:
        return EventKind(text)
    except ValueError:
        raise ManifestError(f'{where}: unknown event kind {text!r} '
                            f'(known: {", ".join(k.value for k in EventKind)})') from None


def manifests_from_params(params: Mapping[str, Any]) -> dict[str, Manifest]:
    """Build manifests from `{cabin_names: [...], cabins: {name: {...}}}` in cabin_names order.

    Without `cabin_names` the order of `cabins` is used. Raises ManifestError.
    """
    cabins = params.get('cabins')
    if not isinstance(cabins, Mapping) or not cabins:
        raise ManifestError(f'cabins: must be a non-empty mapping of cabin manifests, '
                            f'got {cabins!r}')
    names = params.get('cabin_names', list(cabins))
    if (not isinstance(names, (list, tuple)) or not names
            or not all(isinstance(name, str) for name in names)):
        raise ManifestError(f'cabin_names: must be a non-empty list of strings, got {names!r}')
    if len(set(names)) != len(names):
        raise ManifestError(f'cabin_names: names must be unique, got {list(names)}')
    for name in names:
        if name not in cabins:
            raise ManifestError(f'cabins.{name}: listed in cabin_names but not configured')
    for name in cabins:
        if name not in names:
            raise ManifestError(f'cabins.{name}: configured but not listed in cabin_names')
    return {name: Manifest.from_dict(name, cabins[name]) for name in names}


def load_manifests(path: str, node_name: str = 'working_memory') -> dict[str, Manifest]:
    """Load manifests from a YAML file in ROS params layout or a plain `cabins:` mapping.

    ROS layout: `<key>: ros__parameters: {cabin_names: [...], cabins: {...}}`, the key
    `/**/<node_name>` (any namespace, as config/working_memory.yaml has it) or `<node_name>`.
    Raises ManifestError naming the file and field; OSError when it cannot be read.
    """
    with open(path, encoding='utf-8') as stream:
        try:
            document = yaml.safe_load(stream)
        except yaml.YAMLError as error:
            raise ManifestError(f'{path}: not valid YAML: {error}') from None
    if not isinstance(document, Mapping):
        raise ManifestError(f'{path}: must hold a mapping, got {type(document).__name__}')
    params = document
    if 'cabins' not in document:
        node = document.get(f'/**/{node_name}', document.get(node_name))
        params = node.get('ros__parameters') if isinstance(node, Mapping) else None
        if not isinstance(params, Mapping):
            raise ManifestError(f'{path}: /**/{node_name}.ros__parameters: missing; expected '
                                f'it (ROS params layout, or keyed {node_name}) or a top-level '
                                f'"cabins" mapping')
    try:
        return manifests_from_params(params)
    except ManifestError as error:
        raise ManifestError(f'{path}: {error}') from None
