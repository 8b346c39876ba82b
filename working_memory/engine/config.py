"""The node's parameters: one declarative table, a frozen snapshot and its validation.

Pure Python (no rclpy): `ros/conversions.py` turns each `ParamSpec` into a
ParameterDescriptor; the node declares the table in its constructor (so
`ros2 param list` and `ros2 param describe` show it before configure), reads the
values into a `NodeConfig` at configure and swaps in a new one after every
accepted runtime change.

When what is declared: the table and, for each cabin in `cabin_names` (read-only,
so its launch value decides), every `cabins.<cabin>.<field>` at construction; the
`cabins.<cabin>.drop` of a cabin from `manifests_file` at configure, when the file
is read. Configure fails on any override that names no declared parameter (a
typo: the closest valid name is suggested) or that the table refuses.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from working_memory.core.checks import did_you_mean
from working_memory.core.manifest import MANIFEST_FIELDS, ManifestField, is_cabin_name
from working_memory.engine.inputs import MAX_VALUE_BYTES


class ParamType(str, enum.Enum):
    """ROS parameter types used by the table."""

    BOOL = 'bool'
    INTEGER = 'integer'
    DOUBLE = 'double'
    STRING = 'string'
    STRING_ARRAY = 'string_array'


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One row of the parameter table.

    `range` is inclusive `(low, high)` for numbers; `choices` lists the valid
    strings; a `read_only` parameter keeps its launch value for the node's life.
    """

    name: str
    type: ParamType
    default: Any
    description: str
    range: tuple[float, float] | None = None
    choices: tuple[str, ...] = ()
    read_only: bool = False


EVICTION_POLICIES = ('importance_lru', 'half_life')
POSE_SOURCES = ('board', 'odometry', 'pose_stamped')
MAP_WINDOWS = ('reference', 'inline')
INT32_MAX = 2**31 - 1

PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec('tick_hz', ParamType.DOUBLE, 10.0,
              'Assembly rate on the node clock [Hz] (ignored when trigger_topic is set)',
              range=(0.1, 1000.0)),
    ParamSpec('trigger_topic', ParamType.STRING, '',
              "Topic (std_msgs/Empty) whose messages trigger a tick; '' ticks on the timer",
              read_only=True),
    ParamSpec('capacity', ParamType.INTEGER, 256,
              'Maximum number of items in the working set, exempt items included: they '
              'count towards it but are never evicted (exempt items alone over capacity '
              'raise the capacity alarm)',
              range=(1, 1_000_000)),
    ParamSpec('size_budget_bytes', ParamType.INTEGER, 0,
              'Maximum total JSON size of the working set [bytes], at least max_value_bytes; '
              '0 means no budget',
              range=(0, INT32_MAX)),
    ParamSpec('max_value_bytes', ParamType.INTEGER, MAX_VALUE_BYTES,
              'Largest JSON size of one value [bytes]: a board entry, an event detail, a value '
              'a source maps; a larger one is refused (counted on /diagnostics, logged once '
              'per key, told by ~/explain) and its key keeps the value it had',
              range=(1024, INT32_MAX), read_only=True),
    ParamSpec('exempt_prefixes', ParamType.STRING_ARRAY, ['goal', 'safety'],
              'Key prefixes of items that are never evicted (goals, safety constraints)',
              read_only=True),
    ParamSpec('eviction_policy', ParamType.STRING, 'importance_lru',
              'importance_lru: lowest importance first, then least recently used; '
              'half_life: importance decayed by time since last use',
              choices=EVICTION_POLICIES, read_only=True),
    ParamSpec('half_life_s', ParamType.DOUBLE, 30.0,
              "Half-life of an unused item's value for eviction_policy half_life [s]",
              range=(0.001, 1e6), read_only=True),
    ParamSpec('frames_kept', ParamType.INTEGER, 100,
              'Number of past frozen frames the assemble/explain services can answer from',
              range=(1, 100_000), read_only=True),
    ParamSpec('event_log_limit', ParamType.INTEGER, 10_000,
              'Maximum number of events kept from the log topic (oldest dropped first)',
              range=(1, 10_000_000), read_only=True),
    ParamSpec('pose_source', ParamType.STRING, 'board',
              'Where the robot pose comes from: board (key pose_key), odometry (odom topic) '
              'or pose_stamped (pose topic)',
              choices=POSE_SOURCES, read_only=True),
    ParamSpec('pose_key', ParamType.STRING, 'pose',
              'Board key holding the pose as JSON {x, y, yaw} when pose_source is board',
              read_only=True),
    ParamSpec('map_frame', ParamType.STRING, 'map',
              'Frame of the map, of poses and of every published map window; inputs in '
              'another frame are rejected (no TF lookup)',
              read_only=True),
    ParamSpec('stale_check', ParamType.BOOL, True,
              'Report the odom or pose input (pose_source odometry or pose_stamped) as stale '
              'on /diagnostics when it is silent for longer than stale_after_s'),
    ParamSpec('stale_after_s', ParamType.DOUBLE, 5.0,
              'Silence after which the odom or pose input counts as stale [s]',
              range=(0.01, 1e6)),
    ParamSpec('diagnostics_period_s', ParamType.DOUBLE, 1.0,
              'Minimum time between two /diagnostics messages [s]; 0 publishes every tick',
              range=(0.0, 3600.0)),
    ParamSpec('resync_timeout_s', ParamType.DOUBLE, 5.0,
              'After configure (an empty memory) the node asks the writers for the truth on '
              '`resync` and re-reads it at most this long [s]; meanwhile frames say resyncing '
              'and absent keys read RESYNCING; 0: no resync', range=(0.0, 60.0),
              read_only=True),
    ParamSpec('manifests_file', ParamType.STRING, '',
              "YAML file with cabin manifests (a cabins: mapping); '' reads only cabins.* "
              'parameters', read_only=True),
    ParamSpec('sources_file', ParamType.STRING, '',
              "YAML file of typed-topic sources (the robot's own topics mapped to board "
              "entries and events, docs/SOURCES.md); '' takes none", read_only=True),
    ParamSpec('cabin_names', ParamType.STRING_ARRAY, [],
              'Cabins whose manifests come from cabins.<name>.<field> parameters, in order',
              read_only=True),
    ParamSpec('owner_names', ParamType.STRING_ARRAY, [],
              'Owners of board keys, each with owners.<name>.keys (globs) and '
              'owners.<name>.nodes (fully qualified node names or /**/name) that alone may '
              'write them; [] leaves every key open to every writer', read_only=True),
    ParamSpec('views', ParamType.BOOL, False,
              'Publish RViz2/Foxglove views (~/<cabin>/map_window, ~/route, ~/markers), each '
              'only while someone subscribes', read_only=True),
    ParamSpec('map_windows', ParamType.STRING, 'reference',
              'reference: each pack names its map window by digest and the window goes on '
              '~/<cabin>/window (latched) only when it changes; inline: every frame carries '
              'every window in nearby_map', choices=MAP_WINDOWS, read_only=True),
)

CABINS_PREFIX = 'cabins.'
DROP_FIELD = 'drop'
_FIELDS = {field.name: field for field in MANIFEST_FIELDS}
_DROP = _FIELDS[DROP_FIELD]


def cabin_param_specs(cabin: str) -> tuple[ParamSpec, ...]:
    """Return the rows of `cabins.<cabin>.<field>`, one per manifest field.

    Only `drop` (the missing-item injection) can change at runtime; the rest of
    a manifest is the cabin's contract and stays as launched.
    """
    return tuple(_cabin_field_spec(cabin, field, field.default) for field in MANIFEST_FIELDS)


def drop_param_spec(cabin: str, default: tuple[str, ...]) -> ParamSpec:
    """Return the row of `cabins.<cabin>.drop` alone (for cabins from manifests_file)."""
    return _cabin_field_spec(cabin, _DROP, default)


def _cabin_field_spec(cabin: str, field: ManifestField, default: Any) -> ParamSpec:
    # Parameter values are lists where manifests hold tuples.
    default = list(default) if isinstance(default, tuple) else default
    return ParamSpec(f'{CABINS_PREFIX}{cabin}.{field.name}', ParamType(field.type), default,
                     field.description, read_only=field is not _DROP)


def cabin_specs(cabin_names: Any) -> tuple[ParamSpec, ...]:
    """Return the `cabins.<cabin>.<field>` rows of every valid, distinct name in `cabin_names`.

    Invalid names are left out: configure fails on them, naming the cabin.
    """
    names = cabin_names if isinstance(cabin_names, (list, tuple)) else ()
    return tuple(spec for name in dict.fromkeys(names) if is_cabin_name(name)
                 for spec in cabin_param_specs(name))


OWNERS_PREFIX = 'owners.'
OWNER_FIELDS = {
    'keys': 'Board keys and globs this owner holds: only its nodes may set or remove them',
    'nodes': 'Nodes that may write the keys: fully qualified names, or /**/name for that '
             'name in any namespace',
}


def owner_specs(owner_names: Any) -> tuple[ParamSpec, ...]:
    """Return the `owners.<name>.keys` and `.nodes` rows of every valid, distinct owner name."""
    names = owner_names if isinstance(owner_names, (list, tuple)) else ()
    return tuple(ParamSpec(f'{OWNERS_PREFIX}{name}.{field}', ParamType.STRING_ARRAY, [],
                           description, read_only=True)
                 for name in dict.fromkeys(names) if is_cabin_name(name)
                 for field, description in OWNER_FIELDS.items())


def param_spec(name: str) -> ParamSpec | None:
    """Return the row of parameter `name` (table or `cabins.<cabin>.<field>`), else None."""
    if name in SPECS:
        return SPECS[name]
    cabin, _, field = name.removeprefix(CABINS_PREFIX).partition('.')
    if not name.startswith(CABINS_PREFIX) or field not in _FIELDS:
        return None
    return _cabin_field_spec(cabin, _FIELDS[field], _FIELDS[field].default)


def coerce(spec: ParamSpec, value: Any) -> Any:
    """Return `value` as the row's type where a command line typed it loosely, else unchanged.

    `ros2 param set` types `20` as an integer (a double row takes it as 20.0) and
    `[]` as a bool array; a params file's `[]` reaches the node as no value at all (the
    ROS YAML parser cannot type an empty list). A string-array row takes either as an
    empty list, which is what the file says.
    """
    if spec.type is ParamType.DOUBLE and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if spec.type is ParamType.STRING_ARRAY and (value is None or (
            isinstance(value, (list, tuple)) and not value)):
        return []
    return value


def check_parameter(name: str, value: Any) -> None:
    """Raise ValueError naming parameter `name` unless `value` suits its row (if it has one)."""
    spec = param_spec(name)
    if spec is not None:
        check_value(spec, value)


# Parameters the node no longer has, each with what became of it: an override of one is
# ignored with a warning (`retired`), so a params file written for an earlier release loads.
RETIRED = {
    'gc_pacing': "Python's collector runs as CPython schedules it (pacing it moved no "
                 'benchmark target)',
    'prepare_lead_s': 'inputs are selected at the tick (selecting them ahead moved no '
                      'benchmark target)',
}


def retired(overrides: Iterable[str]) -> list[str]:
    """Return a warning for each override of a RETIRED parameter: it is ignored."""
    return [f'{name}: no longer a parameter, ignored: {RETIRED[name]}'
            for name in overrides if name in RETIRED]


def check_known(overrides: Iterable[str], declared: Iterable[str]) -> None:
    """Raise ValueError naming every override (a parameter name) that is not `declared`.

    `overrides` are the names the launch gave the node (params files, -p, constructor);
    each unknown one comes with the closest declared name, as a typo usually is. A
    RETIRED name is not unknown: `retired` warns of it.
    """
    declared = set(declared)
    problems = [f'{name}: unknown parameter' + did_you_mean(name, declared, list_known=False)
                for name in overrides if name not in declared and name not in RETIRED]
    if problems:
        raise ValueError('; '.join(problems))


def check_refused(refused: Mapping[str, str]) -> None:
    """Raise ValueError with every reason in `refused` ({name: why its override was refused})."""
    if refused:
        raise ValueError('; '.join(refused.values()))


def drop_cabin(name: str) -> str | None:
    """Return the cabin of a `cabins.<cabin>.drop` parameter name, else None."""
    if name.startswith(CABINS_PREFIX) and name.endswith('.' + DROP_FIELD):
        return name[len(CABINS_PREFIX):-len(DROP_FIELD) - 1] or None
    return None


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """A validated snapshot of the table's parameters (units as in the table)."""

    tick_hz: float
    trigger_topic: str
    capacity: int
    size_budget_bytes: int
    max_value_bytes: int
    exempt_prefixes: tuple[str, ...]
    eviction_policy: str
    half_life_s: float
    frames_kept: int
    event_log_limit: int
    pose_source: str
    pose_key: str
    map_frame: str
    stale_check: bool
    stale_after_s: float
    diagnostics_period_s: float
    resync_timeout_s: float
    manifests_file: str
    sources_file: str
    cabin_names: tuple[str, ...]
    owner_names: tuple[str, ...]
    views: bool
    map_windows: str

    @property
    def size_budget(self) -> int | None:
        """Return the size budget [bytes], or None when there is none."""
        return self.size_budget_bytes or None

    @property
    def tick_period_s(self) -> float:
        """Return the timer period [s]."""
        return 1.0 / self.tick_hz

    def replace(self, values: Mapping[str, Any]) -> NodeConfig:
        """Return a validated copy with `values` (table names) changed."""
        return config_from_values({**dataclasses.asdict(self), **values})


SPECS = {spec.name: spec for spec in PARAMS}


def config_from_values(values: Mapping[str, Any]) -> NodeConfig:
    """Build a NodeConfig from parameter values, raising ValueError naming the first bad one."""
    config = NodeConfig(**{spec.name: check_value(spec, values[spec.name]) for spec in PARAMS})
    validate(config)
    return config


def default_values() -> dict[str, Any]:
    """Return the table's default values."""
    return {spec.name: spec.default for spec in PARAMS}


def check_value(spec: ParamSpec, value: Any) -> Any:
    """Return `value` normalised to the spec's type, raising ValueError naming the parameter."""
    if value is None:
        # What a params file's `[]` becomes: the ROS YAML parser cannot type an empty list.
        raise ValueError(f'{spec.name}: must be {_a_type(spec)}, got an empty list ([]); '
                         'leave the line out for the default')
    if spec.type is ParamType.STRING_ARRAY:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError(f'{spec.name}: must be a list of strings, got {value!r}')
        return tuple(value)
    expected = {ParamType.BOOL: bool, ParamType.INTEGER: int, ParamType.DOUBLE: (int, float),
                ParamType.STRING: str}[spec.type]
    if not isinstance(value, expected) or (isinstance(value, bool)
                                           and spec.type is not ParamType.BOOL):
        raise ValueError(f'{spec.name}: must be {_a_type(spec)}, got {value!r}')
    if spec.type is ParamType.DOUBLE:
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f'{spec.name}: must be finite, got {value!r}')
    if spec.range is not None and not spec.range[0] <= value <= spec.range[1]:
        raise ValueError(f'{spec.name}: must be in [{spec.range[0]}, {spec.range[1]}], '
                         f'got {value!r}')
    if spec.choices and value not in spec.choices:
        raise ValueError(f'{spec.name}: must be one of {", ".join(spec.choices)}, '
                         f'got {value!r}')
    return value


def _a_type(spec: ParamSpec) -> str:
    """Return the row's type with its article: 'an integer', 'a list of strings'."""
    if spec.type is ParamType.STRING_ARRAY:
        return 'a list of strings'
    return ('an ' if spec.type is ParamType.INTEGER else 'a ') + spec.type.value


def validate(config: NodeConfig) -> None:
    """Check rules that span fields, raising ValueError naming the parameter at fault."""
    if not all(config.exempt_prefixes):
        raise ValueError('exempt_prefixes: an empty prefix would exempt every key')
    if config.pose_source == 'board' and not config.pose_key:
        raise ValueError('pose_key: must name a board key when pose_source is board')
    if not config.map_frame:
        raise ValueError('map_frame: must not be empty')
    if 0 < config.size_budget_bytes < config.max_value_bytes:
        raise ValueError(f'size_budget_bytes: must be 0 (no budget) or at least max_value_bytes '
                         f'({config.max_value_bytes}), got {config.size_budget_bytes}: one '
                         'value the node takes must fit')
    if len(set(config.cabin_names)) != len(config.cabin_names) or not all(config.cabin_names):
        raise ValueError(f'cabin_names: must be distinct non-empty names, '
                         f'got {list(config.cabin_names)}')
    if not config.cabin_names and not config.manifests_file:
        raise ValueError('cabin_names: no cabins configured; list cabins in cabin_names '
                         '(with cabins.<name>.* parameters) or set manifests_file')
