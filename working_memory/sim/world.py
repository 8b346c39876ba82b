"""The shared delivery world: grid, unicycle robot, door, zone, dock, sensors (seeded).

Pure Python + numpy. Time is passed in or advanced by `step`; the world never
reads a clock. Board entries and events are the core's value types, so the ROS
adapter converts them with the same functions as every other board owner.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.sim.mission import DOOR_KEY, Mission, SOURCE, pose_entry

FREE = 0
OCCUPIED = 100

DOCK_TARGET = 'loading_dock'
GOAL_TAGS = ('delivery', 'navigation', 'safety')
OPEN_DOOR = 'open_door'
DELIVERED = 'delivered'
PUSH = 'push'
REMOTE_OPEN = 'remote_open'
STRATEGIES = (PUSH, REMOTE_OPEN)


@dataclass(frozen=True, slots=True)
class WorldConfig:
    """Geometry and dynamics of the delivery world; lengths [m], angles [rad], times [s]."""

    width_m: float = 20.0
    height_m: float = 12.0
    resolution: float = 0.1                  # [m/cell]
    wall_thickness_m: float = 0.2
    inner_wall_x: float = 10.0
    door_y: float = 6.0
    door_width_m: float = 1.2
    start: tuple[float, float, float] = (2.0, 6.0, 0.0)  # x, y, yaw
    dock: tuple[float, float] = (17.0, 3.0)
    dock_radius_m: float = 0.5
    # On the straight line door -> dock, so a planner that ignores it drives through.
    zone_polygon: tuple[tuple[float, float], ...] = (
        (12.0, 3.5), (15.0, 3.5), (15.0, 5.5), (12.0, 5.5))
    charging_stations: tuple[tuple[float, float], ...] = ((3.0, 10.0), (6.0, 2.0), (18.0, 10.0))
    robot_radius_m: float = 0.2
    max_linear_mps: float = 1.0              # commands are clamped like a real base does
    max_angular_rps: float = 2.0
    door_reach_m: float = 1.0                # open_door only works this close to the door centre
    remote_open_delay_s: float = 2.0
    push_failures_max: int = 3               # the seed draws 1..max failing pushes
    battery_idle_drain_per_s: float = 1e-4
    battery_drain_per_m: float = 2e-3
    sensor_count: int = 30
    sensor_noise_std_m: float = 0.02
    sensor_max_range_m: float = 5.0

    def __post_init__(self):
        positive = ('width_m', 'height_m', 'resolution', 'wall_thickness_m', 'door_width_m',
                    'dock_radius_m', 'robot_radius_m', 'max_linear_mps', 'max_angular_rps',
                    'door_reach_m', 'sensor_max_range_m')
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'world config {name}: must be > 0, got {value!r}')
        non_negative = ('remote_open_delay_s', 'battery_idle_drain_per_s',
                        'battery_drain_per_m', 'sensor_noise_std_m')
        for name in non_negative:
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'world config {name}: must be >= 0, got {value!r}')
        if self.push_failures_max < 1:
            raise ValueError(f'world config push_failures_max: must be >= 1, '
                             f'got {self.push_failures_max!r}')
        if self.sensor_count < 0:
            raise ValueError(f'world config sensor_count: must be >= 0, got {self.sensor_count!r}')
        if len(self.zone_polygon) < 3:
            raise ValueError('world config zone_polygon: needs at least 3 vertices')

    @property
    def door_xy(self) -> tuple[float, float]:
        """Return the door centre [m]."""
        return (self.inner_wall_x, self.door_y)


@dataclass(frozen=True, slots=True)
class Pose:
    """Planar robot pose: position [m], heading [rad] in the map frame."""

    x: float
    y: float
    yaw: float


@dataclass(frozen=True, slots=True)
class StepReport:
    """What one `step` did: whether the motion was blocked, and the events it caused."""

    collided: bool
    events: tuple[Event, ...] = ()


class ActionResult(str, enum.Enum):
    """How the world answered a requested action."""

    FAILED = 'FAILED'
    OPENED = 'OPENED'
    PENDING = 'PENDING'            # remote open requested; the door opens after a delay
    ALREADY_OPEN = 'ALREADY_OPEN'
    IGNORED = 'IGNORED'            # not an action the world resolves


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """The world's answer to `request_action`, with the events to log."""

    result: ActionResult
    events: tuple[Event, ...] = ()


def point_in_polygon(x: float, y: float, polygon) -> bool:
    """Return True when (x, y) [m] lies inside `polygon` (even-odd rule)."""
    inside = False
    count = len(polygon)
    for i in range(count):
        (x1, y1), (x2, y2) = polygon[i], polygon[(i + 1) % count]
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def delivery_mission(config: WorldConfig, door_open: bool = False) -> Mission:
    """Return the mission of the world `config` describes: deliver to the dock, avoid the zone."""
    x, y = config.dock
    door_x, door_y = config.door_xy
    return Mission(x, y, DOCK_TARGET, GOAL_TAGS, config.zone_polygon, door_x, door_y,
                   config.door_width_m, 'open' if door_open else 'closed')


def build_grid(config: WorldConfig) -> tuple[np.ndarray, tuple[slice, slice]]:
    """Return the occupancy grid (rows = y, int8, door closed) and the door's cell slices."""
    res = config.resolution
    rows, cols = round(config.height_m / res), round(config.width_m / res)
    grid = np.full((rows, cols), FREE, dtype=np.int8)
    thick = max(1, round(config.wall_thickness_m / res))
    grid[:thick, :] = grid[-thick:, :] = grid[:, :thick] = grid[:, -thick:] = OCCUPIED
    half_wall = config.wall_thickness_m / 2.0
    wall_cols = slice(round((config.inner_wall_x - half_wall) / res),
                      round((config.inner_wall_x + half_wall) / res))
    grid[:, wall_cols] = OCCUPIED
    half_door = config.door_width_m / 2.0
    door_rows = slice(round((config.door_y - half_door) / res),
                      round((config.door_y + half_door) / res))
    return grid, (door_rows, wall_cols)


class DeliveryWorld:
    """The seeded delivery world: robot kinematics, collisions, door, zone, dock, sensors.

    Two generators are spawned from `seed`: one draws the door outcome, one the
    sensor noise, so how often sensors are sampled never changes the door.
    `door_push_failures` overrides the seeded number of failing pushes.
    """

    def __init__(self, config: WorldConfig | None = None, seed: int = 0,
                 door_push_failures: int | None = None):
        self.config = config if config is not None else WorldConfig()
        door_seed, sensor_seed = np.random.SeedSequence(seed).spawn(2)
        self._sensor_rng = np.random.default_rng(sensor_seed)
        if door_push_failures is None:
            door_push_failures = int(np.random.default_rng(door_seed).integers(
                1, self.config.push_failures_max + 1))
        elif door_push_failures < 0:
            raise ValueError(f'door_push_failures: must be >= 0, got {door_push_failures!r}')
        self._grid, self._door_cells = build_grid(self.config)
        self.push_failures_left = door_push_failures
        self.door_open = False
        self.remote_open_at: float | None = None
        self.map_version = 0
        self.time_ns = 0                 # integer, so many small steps add up exactly
        self.pose = Pose(*self.config.start)
        self.velocity = (0.0, 0.0)       # applied (v [m/s], w [rad/s]) of the last step
        self.battery = 1.0
        self.delivered = False
        self.zone_violations = 0
        self.collisions = 0
        self._in_contact = False
        if self._blocked(self.pose.x, self.pose.y):
            raise ValueError(f'world config start: robot footprint at {self.config.start} '
                             'overlaps an occupied cell')

    @property
    def time(self) -> float:
        """Return the world time [s] (starts at 0)."""
        return self.time_ns / 1e9

    @property
    def grid(self) -> np.ndarray:
        """Return a read-only view of the occupancy grid: rows = y, columns = x, int8."""
        view = self._grid.view()
        view.flags.writeable = False
        return view

    def step(self, dt: float, v: float, w: float) -> StepReport:
        """Advance time by `dt` [s] driving with `v` [m/s], `w` [rad/s] (clamped to the limits).

        A motion that would overlap an occupied cell (or leave the grid) is not
        applied: the robot stops where it was and the step reports a collision.
        """
        if not (math.isfinite(dt) and dt > 0.0):
            raise ValueError(f'step dt: must be > 0 s, got {dt!r}')
        if not (math.isfinite(v) and math.isfinite(w)):
            raise ValueError(f'step command: v and w must be finite, got v={v!r}, w={w!r}')
        cfg = self.config
        v = min(max(v, -cfg.max_linear_mps), cfg.max_linear_mps)
        w = min(max(w, -cfg.max_angular_rps), cfg.max_angular_rps)
        collided = not self._drive(dt, v, w)
        self.velocity = (0.0, 0.0) if collided else (v, w)
        moved = 0.0 if collided else abs(v) * dt
        self.battery = max(0.0, self.battery - cfg.battery_idle_drain_per_s * dt
                           - cfg.battery_drain_per_m * moved)
        if collided and not self._in_contact:
            self.collisions += 1
        self._in_contact = collided
        self.time_ns += round(dt * 1e9)
        events = []
        if self.remote_open_at is not None and self.time >= self.remote_open_at:
            events.append(self._open_door(REMOTE_OPEN, self.time))
        if point_in_polygon(self.pose.x, self.pose.y, cfg.zone_polygon):
            self.zone_violations += 1
        at_dock = math.dist((self.pose.x, self.pose.y), cfg.dock) <= cfg.dock_radius_m
        if not self.delivered and at_dock:
            self.delivered = True
            events.append(Event(stamp=self.time, kind=EventKind.OBSERVATION, source=SOURCE,
                                key=DELIVERED, detail=self.mission.goal_value(), importance=1.0,
                                tags=('delivery',)))
        return StepReport(collided=collided, events=tuple(events))

    def request_action(self, name: str, strategy: str, now: float) -> ActionOutcome:
        """Resolve an action the robot requests at `now` [s]; only `open_door` is resolved.

        `push` fails as many times as the seed (or the override) says, then opens
        the door; `remote_open` opens it `remote_open_delay_s` later (reported by
        the `step` that reaches that time). Both need the robot within
        `door_reach_m` of the door centre.
        """
        if name != OPEN_DOOR:
            return ActionOutcome(ActionResult.IGNORED)
        if self.door_open:
            return ActionOutcome(ActionResult.ALREADY_OPEN)
        if strategy not in STRATEGIES:
            return self._failure(name, strategy, now,
                                 f'unknown strategy {strategy!r} (known: {", ".join(STRATEGIES)})')
        distance = math.dist((self.pose.x, self.pose.y), self.config.door_xy)
        if distance > self.config.door_reach_m:
            return self._failure(name, strategy, now,
                                 f'out of reach: {distance:.2f} m from the door '
                                 f'(reach {self.config.door_reach_m:.2f} m)')
        if strategy == REMOTE_OPEN:
            if self.remote_open_at is None:
                self.remote_open_at = now + self.config.remote_open_delay_s
            return ActionOutcome(ActionResult.PENDING)
        if self.push_failures_left > 0:
            self.push_failures_left -= 1
            return self._failure(name, strategy, now, 'door stuck')
        return ActionOutcome(ActionResult.OPENED, (self._open_door(PUSH, now),))

    @property
    def mission(self) -> Mission:
        """Return the mission as it stands (the door's state changes when it opens)."""
        return delivery_mission(self.config, self.door_open)

    def start_events(self, now: float) -> list[Event]:
        """Return the mission's opening events: the GOAL and the zone CONSTRAINT."""
        return self.mission.start_events(now)

    def static_entries(self, now: float) -> list[BoardEntry]:
        """Return the board keys that change rarely: goal, zone, door, charging stations."""
        entries = self.mission.static_entries(now)
        entries += [BoardEntry(f'charging:station/{n}', {'x': x, 'y': y}, now, 0.3, 0.0,
                               ('charging',))
                    for n, (x, y) in enumerate(self.config.charging_stations)]
        return entries

    def pose_entry(self, now: float) -> BoardEntry:
        """Return the `pose` board entry (ttl 0.5 s)."""
        return pose_entry(self.pose.x, self.pose.y, self.pose.yaw, now)

    def battery_entry(self, now: float) -> BoardEntry:
        """Return the `battery` board entry (ttl 2 s)."""
        return BoardEntry('battery', {'level': self.battery}, now, 0.2, 2.0, ('power',))

    def sensor_entries(self, now: float) -> list[BoardEntry]:
        """Return one noisy range reading [m] per sensor (`sensor:<n>`, ttl 1 s)."""
        return [BoardEntry(f'sensor:{n}', {'reading': float(reading)}, now, 0.05, 1.0, ('sensor',))
                for n, reading in enumerate(self.sensor_ranges())]

    def sensor_ranges(self) -> np.ndarray:
        """Return noisy ranges [m] to the nearest occupied cell on evenly spaced bearings."""
        cfg = self.config
        count = cfg.sensor_count
        bearings = self.pose.yaw + np.linspace(-math.pi, math.pi, count, endpoint=False)
        distances = np.arange(cfg.resolution / 2.0, cfg.sensor_max_range_m, cfg.resolution / 2.0)
        xs = self.pose.x + np.outer(np.cos(bearings), distances)
        ys = self.pose.y + np.outer(np.sin(bearings), distances)
        hits = self._occupied_at(xs, ys)
        first = np.where(hits.any(axis=1), hits.argmax(axis=1), -1)
        ranges = np.where(first >= 0, distances[first], cfg.sensor_max_range_m)
        noise = self._sensor_rng.normal(0.0, cfg.sensor_noise_std_m, count)
        return np.clip(ranges + noise, 0.0, cfg.sensor_max_range_m)

    def status(self) -> dict:
        """Return the outcome so far as JSON-able data (tests and the demo read it)."""
        return {
            'time': self.time,
            'pose': {'x': self.pose.x, 'y': self.pose.y, 'yaw': self.pose.yaw},
            'battery': self.battery,
            'delivered': self.delivered,
            'zone_violations': self.zone_violations,
            'collisions': self.collisions,
            'door': {'state': 'open' if self.door_open else 'closed',
                     'push_failures_left': self.push_failures_left,
                     'remote_open_at': self.remote_open_at},
        }

    def _drive(self, dt: float, v: float, w: float) -> bool:
        """Integrate the unicycle over `dt`; return False on a collision (it stops at the wall)."""
        # Sub-steps of at most half a cell so a fast command cannot tunnel through a wall.
        substeps = max(1, math.ceil(abs(v) * dt / (self.config.resolution / 2.0)))
        h = dt / substeps
        x, y, yaw = self.pose.x, self.pose.y, self.pose.yaw
        free = True
        for _ in range(substeps):
            heading = yaw + w * h / 2.0
            nx, ny = x + v * h * math.cos(heading), y + v * h * math.sin(heading)
            yaw += w * h
            if free and self._blocked(nx, ny):
                free = False  # stop at the wall, but a disc can still turn in place
            if free:
                x, y = nx, ny
        self.pose = Pose(x, y, math.atan2(math.sin(yaw), math.cos(yaw)))
        return free

    def _blocked(self, x: float, y: float) -> bool:
        """Return True when the robot disc at (x, y) [m] overlaps an occupied or outside cell."""
        res, radius = self.config.resolution, self.config.robot_radius_m
        rows, cols = self._grid.shape
        c0, c1 = math.floor((x - radius) / res), math.floor((x + radius) / res)
        r0, r1 = math.floor((y - radius) / res), math.floor((y + radius) / res)
        if c0 < 0 or r0 < 0 or c1 >= cols or r1 >= rows:
            return True
        # Disc-versus-square test: distance from the centre to each cell's nearest point.
        col_idx, row_idx = np.arange(c0, c1 + 1), np.arange(r0, r1 + 1)
        dx = np.clip(x, col_idx * res, (col_idx + 1) * res) - x
        dy = np.clip(y, row_idx * res, (row_idx + 1) * res) - y
        touches = dy[:, None] ** 2 + dx[None, :] ** 2 <= radius ** 2
        return bool((self._grid[r0:r1 + 1, c0:c1 + 1][touches] >= OCCUPIED).any())

    def _occupied_at(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Return a mask of points [m] that lie in an occupied cell or outside the grid."""
        rows, cols = self._grid.shape
        col = np.floor(xs / self.config.resolution).astype(np.int64)
        row = np.floor(ys / self.config.resolution).astype(np.int64)
        inside = (col >= 0) & (col < cols) & (row >= 0) & (row < rows)
        hit = ~inside
        hit[inside] = self._grid[row[inside], col[inside]] >= OCCUPIED
        return hit

    def _open_door(self, strategy: str, now: float) -> Event:
        """Clear the doorway cells and return the OBSERVATION event that reports it."""
        self._grid[self._door_cells] = FREE
        self.door_open = True
        self.remote_open_at = None
        self.map_version += 1
        detail = dict(self.mission.door_value(), action=OPEN_DOOR, strategy=strategy)
        return Event(stamp=now, kind=EventKind.OBSERVATION, source=SOURCE, key=DOOR_KEY,
                     detail=detail, importance=0.7, tags=('delivery', 'navigation'))

    def collision_failure(self, action: str, strategy: str, now: float) -> Event:
        """Return the FAILURE a bumper reports for a new collision: of `action`, in force then.

        The robot stopped against an obstacle; the action that drove it there failed.
        """
        return self._failure(action, strategy, now, f'collision at ({self.pose.x:.2f}, '
                             f'{self.pose.y:.2f})').events[0]

    def _failure(self, name: str, strategy: str, now: float, reason: str) -> ActionOutcome:
        """Return a FAILED outcome with the FAILURE event naming the strategy and the reason."""
        event = Event(stamp=now, kind=EventKind.FAILURE, source=SOURCE, key=name,
                      detail={'strategy': strategy, 'reason': reason}, importance=0.8,
                      tags=('delivery',))
        return ActionOutcome(ActionResult.FAILED, (event,))
