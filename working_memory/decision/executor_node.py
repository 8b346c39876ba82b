"""Reference executor node: follows `route` from its cabin's pack to cmd_vel and opens the door."""

from __future__ import annotations

from typing import Any

from geometry_msgs.msg import Twist

from working_memory.client import BoardWriter
from working_memory.core.items import EventKind
from working_memory.core.pack_view import PackView
from working_memory.decision.conversions import twist_msg
from working_memory.decision.decision_node import DecisionNode, run_decision_node
from working_memory.decision.executor import Action, Executor, ExecutorConfig
from working_memory.engine.config import ParamSpec, ParamType
from working_memory.ros import qos

ACTION_KEY = 'action:current'


def _positive(name: str, default: float, description: str) -> ParamSpec:
    return ParamSpec(name, ParamType.DOUBLE, default, description, range=(0.001, 3600.0),
                     read_only=True)


class ExecutorNode(DecisionNode):
    """Drive along the pack's route (pure pursuit) and request the door per the retry policy.

    Every tick it publishes one cmd_vel and a status whose detail carries the
    `retry_policy` ("adaptive" or "conservative"). A changed action (follow the
    route, a new door attempt, hold, arrived) goes to the board as
    `action:current` and to the log as an ACTION event (key = action name,
    detail {"strategy", "attempt"}); the simulator resolves `open_door`. When no
    new pack arrives for `pack_timeout_s` the robot is stopped.

    ROS Parameters:
        DecisionNode's, plus the controller and retry settings in PARAMS.
    Subscriptions:
        `<working_memory_namespace>/frame` (ContextFrame).
    Publishers:
        `cmd_vel` (geometry_msgs/Twist), `board` (BoardUpdate: key `action:current`),
        `log` (LogEvent: ACTION), `~/status` (DecisionStatus).
    """

    PARAMS = (
        _positive('lookahead_m', 0.6, 'Pure-pursuit lookahead distance along the route [m]'),
        _positive('max_speed', 0.5, 'Forward speed limit [m/s]'),
        _positive('max_turn_rate', 1.2, 'Turn rate limit [rad/s]'),
        _positive('goal_tolerance_m', 0.3, 'Distance to the route end that counts as arrived [m]'),
        _positive('door_stop_m', 0.9,
                  'Stop this close to a closed door and request it to open [m]'),
        _positive('retry_backoff_s', 4.0,
                  'Adaptive policy: wait this long for a door outcome before asking again [s]'),
        _positive('conservative_backoff_s', 12.0,
                  'Conservative policy (failures dropped): time between two pushes [s]'),
        _positive('pack_timeout_s', 1.0, 'Stop the robot when no new pack came for this long [s]'),
    )

    def __init__(self, **kwargs: Any):
        super().__init__('executor', 'executor', **kwargs)
        self._executor = Executor(ExecutorConfig(**{
            name: self.params[name] for name in (
                'lookahead_m', 'max_speed', 'max_turn_rate', 'goal_tolerance_m', 'door_stop_m',
                'retry_backoff_s', 'conservative_backoff_s')}))
        self._cmd_pub = self.create_publisher(Twist, 'cmd_vel', qos.stream_qos(10))
        self._board = BoardWriter(self)
        self._action: Action | None = None
        self._last_pack_at: float | None = None
        self._moving = False
        self._watchdog = self.create_timer(self.params['pack_timeout_s'] / 2.0, self._on_watchdog)

    def decide(self, view: PackView, now: float) -> None:
        """Command the robot for this tick's pack and announce a changed action."""
        self._last_pack_at = now
        command = self._executor.decide(view, now)
        self._cmd_pub.publish(twist_msg(command.linear, command.angular))
        self._moving = command.linear != 0.0 or command.angular != 0.0
        if command.action != self._action:
            value = command.action.as_value()
            self._board.set(ACTION_KEY, value, importance=0.7, tags=('delivery',), stamp=now)
            self.publish_event(EventKind.ACTION, command.action.name,
                               {'strategy': value['strategy'], 'attempt': value['attempt']}, now,
                               tags=('delivery',))
            self._action = command.action
        self.publish_status(view, command.decision, dict(
            command.detail, v=round(command.linear, 4), w=round(command.angular, 4),
            action=command.action.as_value()), now)

    def _on_watchdog(self) -> None:
        """Stop a moving robot whose packs stopped coming (working memory down or stalled)."""
        now = self.now()
        if self._moving and (self._last_pack_at is None or now < self._last_pack_at
                             or now - self._last_pack_at > self.params['pack_timeout_s']):
            self.get_logger().warning(
                f'no pack for {self.params["pack_timeout_s"]:.1f} s: stopping the robot')
            self._cmd_pub.publish(twist_msg(0.0, 0.0))
            self._moving = False


USAGE = (
    'Reference executor of the delivery demo. Each tick it reads the executor pack of the working '
    "memory's frame (<working_memory_namespace>/frame), follows the pack's route on cmd_vel (pure "
    'pursuit), stops at a closed door and asks for it to open (adaptive retry policy, or '
    'conservative when the pack shows dropped failures). A changed action goes to board (key '
    'action:current) and to log (ACTION); the robot stops when no pack came for pack_timeout_s. '
    'Each decision goes to ~/status with the (tick, frame digest) it was made on.')


def main(args: list[str] | None = None) -> int:
    """Run the executor node; `-h/--help` prints its usage."""
    return run_decision_node(ExecutorNode, 'executor', USAGE, args)
