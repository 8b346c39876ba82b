"""What the reference planner, executor and monitor nodes share: read the pack, decide, report.

Each node reads its own cabin's pack of every tick through WorkingMemoryClient,
hands it to the pure decision logic (working_memory/decision) and publishes a
DecisionStatus stamped with the (tick, frame digest) it used.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from rclpy.node import Node

from working_memory.client import EventLogger, WorkingMemoryClient
from working_memory.core.items import EventKind
from working_memory.core.pack_view import PackView
from working_memory.decision.conversions import decision_status_msg
from working_memory.engine.config import ParamSpec, ParamType
from working_memory.msg import DecisionStatus
from working_memory.ros import qos
from working_memory.ros.parameters import declare_parameters
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.usage import parse_node_options

COMMON_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec('cabin', ParamType.STRING, '',
              "Cabin whose pack this node reads; '' means the node's own cabin name",
              read_only=True),
    ParamSpec('working_memory_namespace', ParamType.STRING, 'working_memory',
              'Namespace of the working-memory node (its frame topic and services); '
              "relative names resolve in this node's namespace", read_only=True),
)


class DecisionNode(Node):
    """Base of the decision nodes.

    ROS Parameters:
        `cabin`, `working_memory_namespace` (COMMON_PARAMS), plus the subclass's `PARAMS`;
        all read-only (a decision node's settings are its contract for the run).
        `use_sim_time` makes every stamp and decision time sim time.
    Subscriptions:
        `<working_memory_namespace>/frame` (ContextFrame) through WorkingMemoryClient.
    Publishers:
        `~/status` (DecisionStatus), `log` (LogEvent); subclasses add theirs.
    """

    PARAMS: tuple[ParamSpec, ...] = ()

    def __init__(self, node_name: str, default_cabin: str, **kwargs: Any):
        super().__init__(node_name, **kwargs)
        self.params = declare_parameters(self, COMMON_PARAMS + self.PARAMS)
        self.cabin = self.params['cabin'] or default_cabin
        self._status_pub = self.create_publisher(DecisionStatus, '~/status', qos.stream_qos(10))
        self._log = EventLogger(self)
        self.client = WorkingMemoryClient(self, self.cabin,
                                          self.params['working_memory_namespace'],
                                          on_pack=self._on_pack)

    def decide(self, view: PackView, now: float) -> None:
        """Decide on one tick's pack at `now` [s] and publish; subclasses implement it."""
        raise NotImplementedError

    def now(self) -> float:
        """Return the node clock's time [s] (sim time under use_sim_time)."""
        return self.get_clock().now().nanoseconds * 1e-9

    def publish_status(self, view: PackView, decision: str, detail: dict, now: float) -> None:
        """Publish ~/status with the (tick, frame digest) of `view`."""
        self._status_pub.publish(decision_status_msg(self.cabin, view.tick,
                                                     view.frame_digest or '', decision, detail,
                                                     now))

    def publish_event(self, kind: EventKind, key: str, detail: Any, now: float,
                      tags: tuple[str, ...] = (), importance: float | None = None) -> None:
        """Publish one event on `log`, with this node's name as its source."""
        self._log.log(kind.value, key, detail, tags=tags, stamp=now,
                      importance=math.nan if importance is None else importance)

    def _on_pack(self, view: PackView) -> None:
        now = self.now()
        # On sim time the clock reads 0 until the first /clock: a latched frame can arrive
        # before it, and a decision stamped at 0 would lie about when it was made. The next
        # tick's frame comes with the clock.
        if now == 0.0:
            return
        self.decide(view, now)


def run_decision_node(node_class: type[DecisionNode], name: str, description: str,
                      args: list[str] | None, executable: str | None = None) -> int:
    """Run the `<name>_node` executable: its usage on `-h/--help`, else `node_class` (run_node).

    Args:
        node_class: the node to spin.
        name: its default node name; the executable is `<name>_node` unless `executable`.
        description: the paragraph `--help` prints on what the node does.
        args: the whole command line as rclpy.init takes it (None: sys.argv).
        executable: the executable's name when it is not `<name>_node`.
    """
    parse_node_options(executable or f'{name}_node', description, name,
                       [spec.name for spec in COMMON_PARAMS + node_class.PARAMS],
                       own_arguments(sys.argv if args is None else args))
    return run_node(node_class, args)
