"""Reference planner node: plans `route` from its pack; alarms when constraints are missing."""

from __future__ import annotations

from typing import Any

from working_memory.client import BoardWriter
from working_memory.core.items import EventKind
from working_memory.core.pack_view import PackView
from working_memory.decision.decision_node import DecisionNode, run_decision_node
from working_memory.decision.planner import (ConstraintAlarm, NoRoute, Planner, PlannerConfig,
                                             Route, check_constraints)
from working_memory.engine.config import ParamSpec, ParamType

ALARM_KEY = 'constraint_validation'


class PlannerNode(DecisionNode):
    """Plan a grid route from pose to goal on the planner pack, respecting every safety zone in it.

    Every tick: while a safety constraint is missing from the pack (one it reports
    missing, or with `require_safety` none at all: planner.check_constraints) it
    publishes an ALARM (key `constraint_validation`, once per alarm episode) and holds;
    otherwise it replans from `pose` to `goal_key` when due and publishes `route_key`
    on the board when the route changed.

    ROS Parameters:
        DecisionNode's, plus `robot_radius_m`, `clearance_m`, `clearance_cost`,
        `occupied_threshold`, `door_width_m`, `replan_period_s`, `goal_key`, `route_key`,
        `require_safety` (see PARAMS).
    Subscriptions:
        `<working_memory_namespace>/frame` (ContextFrame).
    Publishers:
        `board` (BoardUpdate: key `route_key`), `log` (LogEvent: ALARM), `~/status` (DecisionStatus:
        decision route / keep_route / no_route / alarm; detail has `alarm` and the reason).
    """

    PARAMS = (
        ParamSpec('robot_radius_m', ParamType.DOUBLE, 0.25,
                  'Obstacles and safety zones are inflated by this radius [m]',
                  range=(0.0, 5.0), read_only=True),
        ParamSpec('clearance_m', ParamType.DOUBLE, 0.4,
                  'Cells this far beyond robot_radius_m from an obstacle or zone cost more [m]',
                  range=(0.0, 5.0), read_only=True),
        ParamSpec('clearance_cost', ParamType.DOUBLE, 3.0,
                  'Extra step cost right at robot_radius_m (falls to 0 at clearance_m); '
                  '0 plans shortest routes that graze obstacles',
                  range=(0.0, 100.0), read_only=True),
        ParamSpec('occupied_threshold', ParamType.INTEGER, 50,
                  'Map cells at or above this occupancy [0..100] are obstacles',
                  range=(1, 100), read_only=True),
        ParamSpec('door_width_m', ParamType.DOUBLE, 1.0,
                  'Width of a closed door whose board value gives none [m]',
                  range=(0.01, 10.0), read_only=True),
        ParamSpec('replan_period_s', ParamType.DOUBLE, 1.0,
                  'Replan at most this often [s]; constraints are checked every tick',
                  range=(0.0, 3600.0), read_only=True),
        ParamSpec('goal_key', ParamType.STRING, 'goal:deliver',
                  'Board key of the goal it plans to (Nav2 profile: goal:current)',
                  read_only=True),
        ParamSpec('route_key', ParamType.STRING, 'route',
                  'Board key it publishes its route on (Nav2 profile: route:reference, '
                  "beside Nav2's own plan on route)", read_only=True),
        ParamSpec('require_safety', ParamType.BOOL, True,
                  'Hold and alarm on a pack without any safety constraint; false: a pack '
                  'without one is a robot without zones (it still holds when one goes missing)',
                  read_only=True),
    )

    def __init__(self, **kwargs: Any):
        super().__init__('planner', 'planner', **kwargs)
        self._planner = Planner(PlannerConfig(
            robot_radius_m=self.params['robot_radius_m'],
            clearance_m=self.params['clearance_m'],
            clearance_cost=self.params['clearance_cost'],
            occupied_threshold=self.params['occupied_threshold'],
            door_width_m=self.params['door_width_m'], goal_key=self.params['goal_key'],
            require_safety=self.params['require_safety']))
        self._board = BoardWriter(self)
        self._alarm_signature: list[str] | None = None
        self._planned_at: float | None = None
        self._published: tuple | None = None   # waypoints after the start point
        self._route_tick: int | None = None

    def decide(self, view: PackView, now: float) -> None:
        """Check constraints, replan when due, publish route, alarm and status."""
        config = self._planner.config
        alarm = check_constraints(view, config.safety_prefix, config.require_safety)
        if alarm is not None:
            self._hold(view, alarm, now)
            return
        self._constraints_back(view)
        if not self._due(now):
            self._keep_route(view, now)
            return
        self._replan(view, now)

    def _constraints_back(self, view: PackView) -> None:
        """End an alarm episode: the next plan is due at once."""
        if self._alarm_signature is not None:
            self.get_logger().info(f'tick {view.tick}: safety constraints back, alarm cleared')
            self._alarm_signature, self._planned_at = None, None

    def _keep_route(self, view: PackView, now: float) -> None:
        self.publish_status(view, 'keep_route', {'alarm': False, 'route_tick': self._route_tick},
                            now)

    def _replan(self, view: PackView, now: float) -> None:
        """Plan on `view` and publish the route, the no-route status or the alarm."""
        self._planned_at = now
        result = self._planner.plan(view)
        if isinstance(result, ConstraintAlarm):   # a constraint it could not read
            self._hold(view, result, now)
        elif isinstance(result, NoRoute):
            self.get_logger().warning(f'tick {view.tick}: no route: {result.reason}',
                                      throttle_duration_sec=5.0)
            self.publish_status(view, 'no_route', {'alarm': False, 'reason': result.reason}, now)
        else:
            self._publish_route(view, result, now)

    def _due(self, now: float) -> bool:
        """Return True when no plan was made yet, the period passed, or time jumped back."""
        return (self._planned_at is None or now < self._planned_at
                or now - self._planned_at >= self.params['replan_period_s'])

    def _publish_route(self, view: PackView, route: Route, now: float) -> None:
        # The start point moves with the robot every tick; the rest is what changes a route.
        shape = route.waypoints[1:]
        changed = shape != self._published
        if changed:
            self._board.set(self.params['route_key'], {
                'waypoints': [list(point) for point in route.waypoints],
                'reaches_goal': route.reaches_goal, 'tick': view.tick,
                'digest': view.frame_digest}, importance=0.8, tags=('delivery', 'navigation'),
                stamp=now)
            self._published, self._route_tick = shape, view.tick
        self.publish_status(view, 'route', {
            'alarm': False, 'published': changed, 'route_tick': self._route_tick,
            'waypoints': len(route.waypoints), 'length_m': round(route.length_m, 3),
            'reaches_goal': route.reaches_goal,
            'constraints': list(route.constraints)}, now)

    def _hold(self, view: PackView, alarm: ConstraintAlarm, now: float) -> None:
        """Publish the alarm once per episode (and when its reason changes); hold the route."""
        missing = [{'key': item.key, 'reason': item.reason.value,
                    'detail': item.text(view.stamp)} for item in alarm.missing]
        detail = {'alarm': True, 'reason': alarm.reason, 'missing': missing,
                  'needs': list(alarm.needs)}
        signature = [item['key'] + ':' + item['reason'] for item in missing] or [alarm.reason]
        if signature != self._alarm_signature:
            self.get_logger().error(f'tick {view.tick}: holding, {alarm.reason}')
            self.publish_event(EventKind.ALARM, ALARM_KEY,
                               dict(detail, tick=view.tick, digest=view.frame_digest), now,
                               tags=('safety', 'delivery'), importance=1.0)
            self._alarm_signature = signature
        self.publish_status(view, 'alarm', detail, now)


USAGE = (
    'Reference planner of the delivery demo. Each tick it reads the planner pack of the working '
    "memory's frame (<working_memory_namespace>/frame), plans a grid route from the robot's pose "
    'to the goal (goal_key) that keeps robot_radius_m off every obstacle and safety zone in the '
    'pack, and publishes it on board (key route_key) when it changed. While a safety constraint '
    'is missing from its pack (or, with require_safety, none is in it) it holds and logs an '
    'ALARM on log (key constraint_validation). Each decision goes to '
    '~/status with the (tick, frame digest) it was made on.')


def main(args: list[str] | None = None) -> int:
    """Run the planner node; `-h/--help` prints its usage."""
    return run_decision_node(PlannerNode, 'planner', USAGE, args)
