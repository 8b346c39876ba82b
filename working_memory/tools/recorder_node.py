"""Recorder node: every ContextFrame and EvictionBatch (and /diagnostics) into a rosbag2 bag.

Subscriptions are raw: the CDR bytes go into the bag as received, with no
deserialize/serialize round trip. The bag itself is written by
`working_memory.tools.bag.BagWriter` (ROS-free, reusable in-process).
"""

from __future__ import annotations

import sys
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from working_memory.msg import ContextFrame, EvictionBatch
from working_memory.ros.spin import run_node
from working_memory.ros.qos import diagnostics_qos, frame_qos, stream_qos
from working_memory.tools.bag import (DIAGNOSTICS_TYPE, EVICTION_BATCH_TYPE, FRAME_TYPE,
                                      STORAGES, BagError, BagWriter)

# Reader-side history for the latched frame topic: the publisher keeps 1, but a
# recorder that is busy writing must not drop frames that already arrived.
FRAME_HISTORY = 100

# (name, default, description); all read-only: a bag's topics are fixed when it opens.
PARAMS = (
    ('bag_path', '', "Bag directory to create (must not exist); '' = wm_<date>-<time> in the cwd"),
    ('storage', 'mcap', f'Storage plugin: {" or ".join(STORAGES)}'),
    ('frame_topic', '/working_memory/frame', 'ContextFrame topic (latched)'),
    ('evictions_topic', '/working_memory/evictions', 'EvictionBatch topic'),
    ('diagnostics_topic', '/diagnostics', "DiagnosticArray topic; '' = not recorded"),
)


class RecorderNode(Node):
    """Record the working-memory node's outputs to a rosbag2 bag (MCAP or SQLite3).

    ROS Parameters (read-only):
        bag_path, storage, frame_topic, evictions_topic, diagnostics_topic (see PARAMS).
    Subscriptions:
        frame_topic (working_memory/ContextFrame): reliable, transient local, keep last 100.
        evictions_topic (working_memory/EvictionBatch): reliable, keep last 100.
        diagnostics_topic (diagnostic_msgs/DiagnosticArray): reliable, keep last 10.
    The bag's receive stamps are this node's clock. Call `close()` (or destroy the
    node) to finish the bag: only then is it readable.
    """

    def __init__(self, **kwargs) -> None:
        """Declare the parameters, open the bag and subscribe.

        Raises BagError (bag exists, duplicate topic), ValueError (storage) or
        ParameterException (a parameter of the wrong type).
        """
        self._writer: BagWriter | None = None  # destroy_node() may run before the bag opens
        super().__init__('recorder_node', **kwargs)
        for name, default, description in PARAMS:
            self.declare_parameter(name, default,
                                   ParameterDescriptor(description=description, read_only=True))
        value = {name: self.get_parameter(name).value for name, _, _ in PARAMS}
        bag_path = value['bag_path'] or time.strftime('wm_%Y_%m_%d-%H_%M_%S')
        self._writer = BagWriter(bag_path, value['storage'])
        self._reported: set[str] = set()
        self._subscribe(ContextFrame, FRAME_TYPE, value['frame_topic'],
                        frame_qos_for_recording(), latched=True)
        self._subscribe(EvictionBatch, EVICTION_BATCH_TYPE, value['evictions_topic'],
                        stream_qos())
        if value['diagnostics_topic']:
            self._subscribe(DiagnosticArray, DIAGNOSTICS_TYPE, value['diagnostics_topic'],
                            diagnostics_qos())
        self.get_logger().info(f'recording to {self._writer.path} ({value["storage"]})')

    @property
    def bag_path(self):
        """Return the bag directory."""
        return self._writer.path

    @property
    def counts(self) -> dict[str, int]:
        """Return {topic: messages written} so far."""
        return dict(self._writer.counts)

    def record_topic(self, topic: str, msg_class, msgtype: str, qos,
                     latched: bool = False) -> None:
        """Record one more topic (before the run starts); `latched` replays it transient local."""
        self._subscribe(msg_class, msgtype, topic, qos, latched)

    def set_custom_data(self, key: str, value: str) -> None:
        """Store `key: value` in the bag's metadata (the demo stores its seed and drops)."""
        self._writer.set_custom_data(key, value)

    def _subscribe(self, msg_class, msgtype: str, topic: str, qos, latched: bool = False) -> None:
        topic = self.resolve_topic_name(topic)
        self._writer.add_topic(topic, msgtype, latched=latched)
        self.create_subscription(msg_class, topic,
                                 lambda data: self._on_message(topic, msgtype, data), qos, raw=True)

    def _on_message(self, topic: str, msgtype: str, data: bytes) -> None:
        try:
            self._writer.write(topic, msgtype, data, self.get_clock().now().nanoseconds)
        except BagError as err:
            self.get_logger().error(f'{topic}: not recorded: {err}', throttle_duration_sec=5.0)
            return
        if topic not in self._reported:
            self._reported.add(topic)
            self.get_logger().info(f'first message on {topic} recorded')

    def close(self) -> None:
        """Finish the bag (index and metadata.yaml) and log what it holds; idempotent."""
        if self._writer is None or self._writer.closed:
            return
        self._writer.close()
        held = ', '.join(f'{count} on {topic}' for topic, count in self._writer.counts.items())
        # After an external shutdown the context is down and /rosout unusable: console only.
        logger = self.get_logger() if self.context.ok() else rclpy.logging.get_logger('recorder')
        logger.info(f'bag {self._writer.path} closed: {held}')

    def destroy_node(self) -> None:
        """Finish the bag, then destroy the node."""
        self.close()
        super().destroy_node()


def frame_qos_for_recording():
    """Return the frame QoS (latched) with a deeper reader history, see FRAME_HISTORY."""
    qos = frame_qos()
    qos.depth = FRAME_HISTORY
    return qos


def main(args: list[str] | None = None) -> int:
    """Run the recorder until SIGINT/SIGTERM; the bag is closed cleanly either way."""
    return run_node(RecorderNode, args,
                    construction_errors=(BagError, ValueError, ParameterException))


if __name__ == '__main__':
    sys.exit(main())
