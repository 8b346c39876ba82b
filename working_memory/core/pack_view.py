"""Immutable view of one cabin's frozen pack, as a planner or an executor reads it; no ROS types."""

from __future__ import annotations

import fnmatch
import math
import types
from dataclasses import dataclass, field
from typing import Any, Mapping

from working_memory.core.gridmap import MapWindow
from working_memory.core.items import Event, EventKind, Missing, MissingReason, MissingSummary


class PackValueError(ValueError):
    """A pack value a decision needs is absent or malformed; the message names the key."""


@dataclass(frozen=True)
class PackView:
    """One cabin's pack of one tick: decoded board values, events, missing items, map window.

    `digest` is the pack's own digest; `frame_digest` the digest of the whole
    ContextFrame it came from (None when the pack was fetched by the Assemble
    service, which returns the pack alone). `map_window` is the pack's window, inline or
    joined from its cabin's window topic, its cells checked against `map_window_digest`.
    Decision nodes report
    (tick, frame_digest) so the monitor can prove every cabin used the same frame.
    """

    cabin: str
    tick: int
    stamp: float                    # [s] tick time
    digest: str
    frame_digest: str | None
    values: Mapping[str, Any]       # board key -> decoded JSON value (shared: read only)
    events: tuple[Event, ...]       # oldest first
    missing: tuple[Missing, ...]
    map_window: MapWindow | None
    # Digest of the map window the pack names ('' without one); the window is checked against it.
    map_window_digest: str = ''
    # Per glob of the manifest and reason, the absent keys it selects, counted: `missing` lists
    # only the most valuable few of them (times are ROS time, as `missing`'s since).
    missing_summaries: tuple[MissingSummary, ...] = ()
    # When the node that made it started from an empty memory [s] (0: not known, the
    # Assemble service); its ticks count from 1 again after a restart.
    started: float = 0.0
    # True when the node was still re-reading the writers (items may be absent that the
    # board holds; absent keys read RESYNCING).
    resyncing: bool = False
    # Unique to the node start that made it ('': not known): a new one is a restarted node.
    start_id: str = ''
    # Board key -> when its value was produced, as its source stamped it [s, ROS time]
    # (empty when not known): `stamp` minus it is the value's own age.
    stamps: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, 'values', types.MappingProxyType(dict(self.values)))
        object.__setattr__(self, 'stamps', types.MappingProxyType(dict(self.stamps)))
        object.__setattr__(self, 'events', tuple(self.events))
        object.__setattr__(self, 'missing', tuple(self.missing))
        object.__setattr__(self, 'missing_summaries', tuple(self.missing_summaries))

    def value(self, key: str, default: Any = None) -> Any:
        """Return the decoded value of board key `key`, or `default` when it is not in the pack."""
        return self.values.get(key, default)

    def point(self, key: str) -> tuple[float, float]:
        """Return (x, y) [m] of a value {"x", "y", ...}; PackValueError when absent or malformed."""
        return self.pose(key)[:2]

    def pose(self, key: str) -> tuple[float, float, float]:
        """Return (x, y [m], yaw [rad]) of a value {"x", "y", "yaw"} (yaw defaults to 0).

        Raises PackValueError naming the key when it is absent or not finite numbers.
        """
        value = self.values.get(key)
        if value is None:
            raise PackValueError(f'{key}: not in the {self.cabin} pack of tick {self.tick}')
        try:
            pose = float(value['x']), float(value['y']), float(value.get('yaw', 0.0))
        except (TypeError, KeyError, ValueError, AttributeError) as err:
            raise PackValueError(f'{key}: expected {{"x": m, "y": m}}, got {value!r}') from err
        if not all(math.isfinite(part) for part in pose):
            raise PackValueError(f'{key}: x, y and yaw must be finite, got {value!r}')
        return pose

    def keys_matching(self, pattern: str) -> list[str]:
        """Return the pack's board keys matching glob `pattern`, sorted."""
        return sorted(key for key in self.values if fnmatch.fnmatchcase(key, pattern))

    def events_of(self, kind: EventKind, key: str | None = None) -> tuple[Event, ...]:
        """Return the pack's events of `kind` (and `key` when given), oldest first."""
        return tuple(event for event in self.events
                     if event.kind == kind and (key is None or event.key == key))

    def missing_with(self, reason: MissingReason) -> tuple[Missing, ...]:
        """Return the missing items reported with `reason`."""
        return tuple(item for item in self.missing if item.reason == reason)
