"""Route following and door handling from a cabin's pack: pure pursuit plus a door retry policy.

Retry policy (delivery world contract):
- adaptive: the first `open_door` request uses strategy "push"; once the pack
  holds a FAILURE of `open_door` the executor switches to "remote_open".
- conservative: when the pack shows failures were dropped by injection
  (Missing INJECTED_DROP for `events:FAILURE` or `events:*`) the executor cannot
  learn from failures, so it repeats "push" with a long backoff.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from working_memory.core.items import EventKind, MissingReason
from working_memory.core.pack_view import PackValueError, PackView
from working_memory.decision.doors import door_from_pack

ADAPTIVE = 'adaptive'
CONSERVATIVE = 'conservative'
PUSH = 'push'
REMOTE_OPEN = 'remote_open'
OPEN_DOOR = 'open_door'
FOLLOW_ROUTE = 'follow_route'
HOLD = 'hold'
ARRIVED = 'arrived'
WAIT_ROUTE = 'wait_route'
# Drop categories that hide FAILURE events from the pack.
FAILURE_DROPS = ('events:FAILURE', 'events:*')


@dataclass(frozen=True)
class ExecutorConfig:
    """Executor settings: controller limits [m, m/s, rad/s] and door retry timing [s]."""

    lookahead_m: float = 0.6
    max_speed: float = 0.5
    max_turn_rate: float = 1.2
    goal_tolerance_m: float = 0.3
    door_stop_m: float = 0.9        # stop this close to a closed door and ask it to open
    retry_backoff_s: float = 4.0    # adaptive: wait this long for an outcome before asking again
    conservative_backoff_s: float = 12.0
    route_key: str = 'route'
    pose_key: str = 'pose'
    door_key: str = 'door:main'

    def __post_init__(self):
        for name in ('lookahead_m', 'max_speed', 'max_turn_rate', 'goal_tolerance_m',
                     'door_stop_m', 'retry_backoff_s', 'conservative_backoff_s'):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0.0):
                raise ValueError(f'{name}: must be > 0, got {value!r}')
        for name in ('route_key', 'pose_key', 'door_key'):
            if not getattr(self, name):
                raise ValueError(f'{name}: must not be empty')


@dataclass(frozen=True)
class Action:
    """The executor's current action, as published on the board key `action:current`."""

    name: str
    strategy: str
    attempt: int = 0

    def as_value(self) -> dict:
        """Return the board value {"name", "strategy", "attempt"}."""
        return {'name': self.name, 'strategy': self.strategy, 'attempt': self.attempt}


@dataclass(frozen=True)
class Command:
    """One tick's decision: velocity [m/s, rad/s], decision name, action and JSON-able detail."""

    linear: float
    angular: float
    decision: str
    action: Action
    detail: Mapping[str, Any] = field(default_factory=dict)


def retry_policy(pack: PackView) -> str:
    """Return "conservative" when the pack shows FAILURE events were dropped, else "adaptive"."""
    dropped = {item.key for item in pack.missing_with(MissingReason.INJECTED_DROP)}
    return CONSERVATIVE if dropped.intersection(FAILURE_DROPS) else ADAPTIVE


def pure_pursuit(pose: tuple[float, float, float], waypoints: np.ndarray, lookahead_m: float,
                 max_speed: float,
                 max_turn_rate: float) -> tuple[float, float, tuple[float, float]]:
    """Return (v [m/s], w [rad/s], lookahead point [m]) steering `pose` (x, y, yaw) on `waypoints`.

    The lookahead point lies `lookahead_m` further along the polyline than the
    robot's closest point on it. Speed drops with the heading error; a target
    behind the robot turns it in place. Turn rate is capped, and speed with it,
    so the commanded arc keeps its curvature.
    """
    x, y, yaw = pose
    position = np.array([x, y])
    target = _lookahead_point(position, waypoints, lookahead_m)
    distance = float(np.hypot(*(target - position)))
    if distance < 1e-9:
        return 0.0, 0.0, (float(target[0]), float(target[1]))
    alpha = math.atan2(target[1] - y, target[0] - x) - yaw
    alpha = math.atan2(math.sin(alpha), math.cos(alpha))
    if abs(alpha) > math.pi / 2.0:
        return 0.0, math.copysign(max_turn_rate, alpha), (float(target[0]), float(target[1]))
    curvature = 2.0 * math.sin(alpha) / distance
    speed = max_speed * math.cos(alpha) * min(1.0, distance / lookahead_m)
    turn = speed * curvature
    if abs(turn) > max_turn_rate:
        turn = math.copysign(max_turn_rate, turn)
        speed = abs(turn / curvature)
    return speed, turn, (float(target[0]), float(target[1]))


def _lookahead_point(position: np.ndarray, waypoints: np.ndarray, lookahead_m: float) -> np.ndarray:
    """Return the point `lookahead_m` [m] along the polyline past its point nearest `position`."""
    if len(waypoints) == 1:
        return waypoints[0]
    starts, ends = waypoints[:-1], waypoints[1:]
    segments = ends - starts
    lengths_sq = np.maximum((segments ** 2).sum(axis=1), 1e-12)
    t = np.clip(((position - starts) * segments).sum(axis=1) / lengths_sq, 0.0, 1.0)
    closest = starts + t[:, np.newaxis] * segments
    index = int(np.argmin(np.hypot(*(closest - position).T)))
    remaining, point = lookahead_m, closest[index]
    for end in waypoints[index + 1:]:
        step = float(np.hypot(*(end - point)))
        if step >= remaining:
            return point + (end - point) * (remaining / step)
        remaining -= step
        point = end
    return waypoints[-1]


class Executor:
    """Follows the pack's route and opens the door; keeps only its own retry bookkeeping.

    Bookkeeping across ticks is the executor's own controller state (attempt
    counter, time of the last request); everything it knows about the world
    comes from the pack of the tick.
    """

    def __init__(self, config: ExecutorConfig = ExecutorConfig()):
        self.config = config
        self._attempt = 0
        self._requested_at: float | None = None
        self._strategy = PUSH

    def decide(self, pack: PackView, now: float) -> Command:
        """Return this tick's command for `pack` at ROS time `now` [s].

        An absent or malformed pose, route or door value stops the robot, with the
        reason (naming the key) in the command's detail.
        """
        policy = retry_policy(pack)
        base = {'retry_policy': policy}
        try:
            pose = pack.pose(self.config.pose_key)
            route = pack.value(self.config.route_key)
            waypoints = route_waypoints(self.config.route_key, route)
            door = door_from_pack(pack, self.config.door_key)
        except PackValueError as err:
            return self._stop(HOLD, dict(base, reason=str(err)))
        base['route_tick'] = route.get('tick')
        remaining = math.dist(pose[:2], waypoints[-1])
        if remaining <= self.config.goal_tolerance_m:
            # A partial route (goal beyond the planner's map window) ends short of the goal:
            # wait there for the planner's next, longer route.
            arrived = route.get('reaches_goal', True) is not False
            return self._stop(ARRIVED if arrived else WAIT_ROUTE,
                              dict(base, remaining_m=round(remaining, 3)))
        if door is not None:
            near = math.dist(pose[:2], (door.x, door.y)) <= self.config.door_stop_m
            if not door.is_open and near:
                return self._door(pack, now, policy, base)
            if door.is_open:
                self._attempt, self._requested_at = 0, None
        v, w, target = pure_pursuit(pose, waypoints, self.config.lookahead_m,
                                    self.config.max_speed, self.config.max_turn_rate)
        return Command(v, w, FOLLOW_ROUTE, Action(FOLLOW_ROUTE, 'pure_pursuit'),
                       dict(base, lookahead=[round(target[0], 3), round(target[1], 3)],
                            remaining_m=round(remaining, 3)))

    def _door(self, pack: PackView, now: float, policy: str, base: dict) -> Command:
        """Stop at the closed door; request it to open per the retry policy."""
        failures = pack.events_of(EventKind.FAILURE, OPEN_DOOR)
        if policy == CONSERVATIVE:
            strategy, backoff = PUSH, self.config.conservative_backoff_s
        else:
            strategy = REMOTE_OPEN if failures else PUSH
            backoff = self.config.retry_backoff_s
        # Adaptive: a failure reported after our last request answers it, so ask again now.
        answered = policy == ADAPTIVE and self._requested_at is not None and any(
            event.stamp >= self._requested_at for event in failures)
        due = self._requested_at is None or answered or now - self._requested_at >= backoff
        if due:
            self._attempt += 1
            self._requested_at = now
            self._strategy = strategy
        action = Action(OPEN_DOOR, self._strategy, self._attempt)
        detail = dict(base, strategy=self._strategy, attempt=self._attempt,
                      failures_seen=len(failures), backoff_s=backoff,
                      requested=due)
        return Command(0.0, 0.0, OPEN_DOOR if due else 'wait_door', action, detail)

    def _stop(self, decision: str, detail: dict) -> Command:
        """Return a zero-velocity command."""
        return Command(0.0, 0.0, decision, Action(decision, 'stop'), detail)


def route_waypoints(key: str, value) -> np.ndarray:
    """Return a route value's waypoints as an (n, 2) array [m]; PackValueError names the key."""
    if value is None:
        raise PackValueError(f'{key}: not in the pack')
    try:
        points = np.asarray(value['waypoints'], dtype=float)
    except (TypeError, KeyError, ValueError) as err:
        raise PackValueError(f'{key}: expected {{"waypoints": [[x, y], ...]}}, '
                             f'got {value!r}') from err
    if points.ndim != 2 or points.shape[1] != 2 or len(points) == 0 \
            or not np.isfinite(points).all():
        raise PackValueError(f'{key}.waypoints: expected at least one finite [x, y] point [m], '
                             f'got {value["waypoints"]!r}')
    return points
