"""A fake Nav2 robot, pure: what Nav2's usual topics would say, as plain data.

The Nav2 profile (config/profiles/nav2.yaml with config/sources/nav2.yaml) is tested
against a robot that publishes Nav2's topics with their real message types at Nav2's
rates: this is its state (the navigate_to_pose goals Nav2's action server remembers, the
recoveries' goals, the pose moving toward the goal being executed, the battery, the
keepout zones), stepped by the caller; `nav2_fake_node.py` publishes it. No rclpy here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# action_msgs/GoalStatus
ACCEPTED, EXECUTING, SUCCEEDED, CANCELED, ABORTED = 1, 2, 4, 5, 6
ENDED = (SUCCEEDED, CANCELED, ABORTED)
RECOVERIES = ('spin', 'backup', 'wait')


@dataclass
class Goal:
    """One action goal as its status array lists it: id (the uuid's first byte), status."""

    ident: int
    accepted: float          # [s] its goal_info.stamp
    status: int = ACCEPTED
    x: float = 0.0           # [m] where it leads (navigate_to_pose only)
    y: float = 0.0


@dataclass
class Nav2Robot:
    """The state a fake Nav2 publishes; every time is the caller's clock [s]."""

    x: float = 2.0            # [m] in map
    y: float = 2.0
    yaw: float = 0.0          # [rad]
    speed: float = 0.5        # [m/s] while a goal executes
    battery: float = 0.9      # [0, 1]
    goals: list[Goal] = field(default_factory=list)
    recoveries: dict[str, list[Goal]] = field(
        default_factory=lambda: {name: [] for name in RECOVERIES})
    zones: list[tuple[float, float, float, float]] = field(default_factory=list)
    velocity: float = 0.0     # [m/s] of the last step
    _next_id: int = 1

    def send_goal(self, x: float, y: float, now: float) -> Goal:
        """Accept a navigate_to_pose goal to (x, y) [m] at `now` [s]."""
        goal = Goal(self._take_id(), now, ACCEPTED, x, y)
        self.goals.append(goal)
        return goal

    def execute(self, goal: Goal) -> None:
        """Execute `goal`; a goal it replaces is aborted, as Nav2's preemption does."""
        for other in self.goals:
            if other is not goal and other.status in (ACCEPTED, EXECUTING):
                other.status = ABORTED
        goal.status = EXECUTING

    def end(self, goal: Goal, status: int) -> None:
        """End `goal` with `status` (SUCCEEDED, CANCELED, ABORTED)."""
        if status not in ENDED:
            raise ValueError(f'status {status} ends no goal')
        goal.status = status

    def recovery(self, name: str, now: float) -> Goal:
        """Start the recovery `name` (spin, backup, wait): a goal of its action, executing."""
        goal = Goal(self._take_id(), now, EXECUTING)
        self.recoveries[name].append(goal)
        return goal

    def executing(self) -> Goal | None:
        """Return the navigation goal being executed, None when none is."""
        return next((goal for goal in reversed(self.goals) if goal.status == EXECUTING), None)

    def step(self, dt: float) -> None:
        """Move `dt` [s] toward the executing goal at `speed`."""
        goal = self.executing()
        distance = 0.0 if goal is None else math.hypot(goal.x - self.x, goal.y - self.y)
        if distance < 1e-6:
            self.velocity = 0.0
            return
        self.yaw = math.atan2(goal.y - self.y, goal.x - self.x)
        travel = min(distance, self.speed * dt)
        self.x += travel * math.cos(self.yaw)
        self.y += travel * math.sin(self.yaw)
        self.velocity = travel / dt

    def plan(self, points: int = 200) -> list[tuple[float, float]]:
        """Return the global plan to the executing goal: a straight line of `points` [m]."""
        goal = self.executing()
        if goal is None:
            return []
        return [(self.x + (goal.x - self.x) * i / (points - 1),
                 self.y + (goal.y - self.y) * i / (points - 1)) for i in range(points)]

    def keepout_mask(self, width: int, height: int, resolution: float) -> np.ndarray:
        """Return the keepout filter's mask: 100 in each zone (x0, y0, x1, y1) [m], 0 elsewhere."""
        mask = np.zeros((height, width), dtype=np.int8)
        for x0, y0, x1, y1 in self.zones:
            mask[round(y0 / resolution):round(y1 / resolution),
                 round(x0 / resolution):round(x1 / resolution)] = 100
        return mask

    def _take_id(self) -> int:
        ident, self._next_id = self._next_id, self._next_id + 1
        return ident
