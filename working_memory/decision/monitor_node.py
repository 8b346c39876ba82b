"""Reference monitor node: alarms when cabins report different frames for one tick (tearing)."""

from __future__ import annotations

from typing import Any

from working_memory.core.items import EventKind
from working_memory.core.pack_view import PackView
from working_memory.decision.conversions import decision_status_from_msg
from working_memory.decision.decision_node import DecisionNode, run_decision_node
from working_memory.decision.monitor import TearingAlarm, TearingMonitor
from working_memory.engine.config import ParamSpec, ParamType
from working_memory.msg import DecisionStatus
from working_memory.ros import qos

TEARING_KEY = 'tearing'


class MonitorNode(DecisionNode):
    """Compare the (tick, frame digest) every cabin reports, its own pack's included.

    A second digest for a tick already reported publishes an ALARM event (key
    `tearing`, detail {"tick", "digests": {digest: [cabins]}}). Statuses of tick 0
    (no frame yet) are ignored.

    ROS Parameters:
        DecisionNode's, plus `status_topics` and `keep_ticks` (see PARAMS).
    Subscriptions:
        `<working_memory_namespace>/frame` (ContextFrame), each of `status_topics`
        (DecisionStatus; relative names, remappable).
    Publishers:
        `log` (LogEvent: ALARM), `~/status` (DecisionStatus: decision ok / tearing).
    """

    PARAMS = (
        ParamSpec('status_topics', ParamType.STRING_ARRAY, ['planner/status', 'executor/status'],
                  'DecisionStatus topics of the cabins to compare', read_only=True),
        ParamSpec('keep_ticks', ParamType.INTEGER, 64,
                  'Number of newest ticks whose reports are kept for comparison',
                  range=(1, 100_000), read_only=True),
    )

    def __init__(self, **kwargs: Any):
        super().__init__('monitor', 'monitor', **kwargs)
        self._monitor = TearingMonitor(self.params['keep_ticks'])
        self._alarms = 0
        self._status_subs = [
            self.create_subscription(DecisionStatus, topic, self._on_status, qos.stream_qos(50))
            for topic in self.params['status_topics']]

    def decide(self, view: PackView, now: float) -> None:
        """Report this node's own (tick, digest) like any cabin, then publish the status."""
        alarm = self._observe(self.cabin, view.tick, view.frame_digest or '', now)
        self.publish_status(view, 'ok' if alarm is None else TEARING_KEY,
                            {'alarms': self._alarms,
                             'reports': [list(pair) for pair in self._monitor.reports(view.tick)]},
                            now)

    def _on_status(self, msg: DecisionStatus) -> None:
        try:
            cabin, tick, digest, _ = decision_status_from_msg(msg)
        except ValueError as error:
            self.get_logger().error(f'status rejected: {error}', throttle_duration_sec=5.0)
            return
        if tick:
            self._observe(cabin, tick, digest, self.now())

    def _observe(self, cabin: str, tick: int, digest: str, now: float) -> TearingAlarm | None:
        alarm = self._monitor.observe(cabin, tick, digest)
        if alarm is not None:
            self._alarms += 1
            digests = {digest: list(cabins) for digest, cabins in alarm.digests.items()}
            self.get_logger().error(f'tearing at tick {alarm.tick}: {digests}')
            self.publish_event(EventKind.ALARM, TEARING_KEY,
                               {'tick': alarm.tick, 'digests': digests}, now,
                               tags=('safety',), importance=1.0)
        return alarm


USAGE = (
    'Reference monitor of the delivery demo: compares the (tick, frame digest) that each cabin '
    "reports on its DecisionStatus topic (status_topics) with its own pack's, read from "
    '<working_memory_namespace>/frame, and logs an ALARM on log (key tearing) when one tick has '
    'two digests (tearing). Its own decisions go to ~/status.')


def main(args: list[str] | None = None) -> int:
    """Run the monitor node; `-h/--help` prints its usage."""
    return run_decision_node(MonitorNode, 'monitor', USAGE, args)
