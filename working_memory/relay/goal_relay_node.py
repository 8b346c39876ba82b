"""goal_relay: a one-shot goal (RViz2's "2D Goal Pose" on /goal_pose) survives a restart.

The working memory is a volatile cache: after a restart it re-reads the truth from the
writers that answer its resync (docs/NODE.md, "After a restart"). RViz2 publishes its
goal once and volatile, and `ros2 topic pub --once` exits, so a restarted node never
hears that goal again. This node holds it outside the working memory: it takes the
topics of the sources it relays (by default nav2.yaml's `goal` and `navigate`) with the
node's own mappings (`engine/source_map.py`) and keeps their board entries and removals in a
`BoardWriter` that publishes nothing live (the node takes those topics itself) and
answers each resync with what it holds: the goal until the newest navigation goal ends.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from working_memory.client import BoardWriter
from working_memory.engine.source_map import Sources, load_sources, select_sources
from working_memory.ros.share import share_path
from working_memory.ros.sources import describe, message_type, source_qos
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.usage import parse_node_options

# [s] between two log lines of rejected messages
REJECTION_LOG_S = 1.0

# (name, default, description); all read-only: the subscriptions are made at construction.
PARAMS = (
    ('sources_file', str(share_path('config', 'sources', 'nav2.yaml')),
     "The working memory node's sources file (docs/SOURCES.md)"),
    ('sources', ['goal', 'navigate'],
     'The sources of sources_file whose board entries this node holds for a restarted working '
     'memory: a topic published once (goal) and what removes its key (navigate)'),
)


class GoalRelayNode(Node):
    """Hold the board entries of one-shot source topics and answer a restarted working memory.

    ROS Parameters (read-only):
        sources_file, sources (see PARAMS).
    Subscriptions:
        each relayed source's topic, with its type and QoS as the working memory takes it.
    Publishers:
        `resync/answer` (ResyncAnswer, latched): what it holds, once per resync request.
    Subscribes `resync/request`; publishes nothing on `board` (the working memory takes
    the relayed topics itself).
    """

    def __init__(self, **kwargs: Any) -> None:
        """Declare the parameters, read the sources and subscribe to their topics.

        Raises SourceError (a ValueError: the file or a source name at fault) or
        ParameterException (a parameter of the wrong type).
        """
        super().__init__('goal_relay', **kwargs)
        for name, default, description in PARAMS:
            self.declare_parameter(name, default,
                                   ParameterDescriptor(description=description, read_only=True))
        path = self.get_parameter('sources_file').value
        specs = select_sources(load_sources(path, describe),
                               self.get_parameter('sources').value)
        self._sources = Sources(specs)
        self._board = BoardWriter(self)
        for spec in specs:
            self.create_subscription(message_type(spec.type), spec.topic,
                                     partial(self._on_message, spec.topic),
                                     source_qos(self, spec))
        self.get_logger().info(f'holding for a restarted working memory: '
                               f'{", ".join(spec.topic for spec in specs)} ({path})')

    @property
    def board(self) -> BoardWriter:
        """The writer that holds the relayed entries."""
        return self._board

    def _on_message(self, topic: str, msg: Any) -> None:
        conversion = self._sources.convert(topic, msg, self.get_clock().now().nanoseconds * 1e-9)
        self._board.hold(conversion.entries, conversion.removed_keys)
        if conversion.errors:
            self.get_logger().warning(f'{topic}: {conversion.errors[-1]}',
                                      throttle_duration_sec=REJECTION_LOG_S)


USAGE = (
    'Hold what the working memory cannot hear again after a restart: the board entries the '
    "node's sources file makes of a goal published once on /goal_pose (RViz2's 2D Goal Pose), "
    'until the newest navigate_to_pose goal ends, answered on resync/answer to each resync '
    'request of a restarted working memory. Run it beside the node, in its namespace, with the '
    "node's sources_file.")


def main(args: list[str] | None = None) -> int:
    """Run the relay until SIGINT/SIGTERM; `-h` prints its usage."""
    parse_node_options('goal_relay_node', USAGE, 'goal_relay', [name for name, _, _ in PARAMS],
                       own_arguments(sys.argv if args is None else args))
    return run_node(GoalRelayNode, args, construction_errors=(ValueError, ParameterException))


if __name__ == '__main__':
    sys.exit(main())
