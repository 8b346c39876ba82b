"""Recorder node: any list of topics into a rosbag2 bag, as `ros2 bag record` would.

Each topic's type is found at run time in the ROS graph, and its subscription's
QoS adapts to the publishers (reliable or transient local only when every
publisher offers it). A topic not yet in the graph is looked for again every
`discovery_period_s`. Subscriptions are raw: the CDR bytes go into the bag as
received, with no deserialize/serialize round trip. The bag's metadata states
the QoS each publisher actually offered. Beside the messages, on its hidden topic
`<recorder>/_message_ids` (RecordedIds, a few times a second), the bag holds who
published each one: its publisher's gid and number from rclpy's message info, which
a working-memory node's receipts name too (ContextFrame.input_starts), so a replay
tells exactly which recorded messages a node took; and the metadata names each
publisher's node as the graph showed it (`working_memory.writers`), so a replay names
the writer of an owned key as the node did. The subscriptions are taken as the
node takes its inputs (ros/intake.py `Intake`, on the helper `<recorder>_inputs`):
that hands every message its info in any executor. The bag itself is written by
`working_memory.tools.bag.BagWriter` (ROS-free, reusable in-process).
"""

from __future__ import annotations

import importlib
import json
import sys
import time

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile,
                       ReliabilityPolicy)
from rclpy.serialization import serialize_message
from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
                                QosTime)

from working_memory.msg import RecordedIds
from working_memory.ros.graph import publisher_node
from working_memory.ros.intake import Intake
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.usage import parse_node_options
from working_memory.tools.bag import (BagError, BagWriter, IDS_TOPIC_SUFFIX, IDS_TYPE, MessageIds,
                                      STORAGES, WRITERS_KEY, adapted_qos, receive_stamp)

# Reader-side history: a recorder busy writing must not drop messages that already arrived.
HISTORY_DEPTH = 1000
DEFAULT_TOPICS = ['/working_memory/frame', '/working_memory/evictions', '/diagnostics']

# (name, default, description); all read-only: a bag's topics are fixed when it opens.
PARAMS = (
    ('bag_path', '', "Bag directory to create (must not exist); '' = wm_<date>-<time> in the cwd"),
    ('storage', 'mcap', f'Storage plugin: {" or ".join(STORAGES)}'),
    ('topics', DEFAULT_TOPICS,
     "Topics to record (relative names resolve in this node's namespace); each type is "
     'found in the graph'),
    ('discovery_period_s', 0.1,
     'Look for topics not in the graph yet (and for new publishers) this often [s], wall time'),
)


class RecorderNode(Node):
    """Record a list of topics to a rosbag2 bag (MCAP or SQLite3).

    ROS Parameters (read-only):
        bag_path, storage, topics, discovery_period_s (see PARAMS).
    Subscriptions:
        each of `topics` (raw) once a publisher of it is in the graph: QoS reliable only
        when every publisher is reliable, transient local only when every one is
        (as `ros2 bag record`), keep last HISTORY_DEPTH.
    Writes `~/_message_ids` (RecordedIds) into the bag: each recorded message's publisher
    and number. The bag's receive stamps are this node's clock, at each message's arrival
    (its message info's receive time, moved onto that clock). Call `close()` (or destroy
    the node) to finish the bag: only then is it readable.
    """

    def __init__(self, **kwargs) -> None:
        """Declare the parameters, open the bag and subscribe to the topics already there.

        Raises BagError (bag exists), ValueError (storage, discovery period) or
        ParameterException (a parameter of the wrong type).
        """
        self._writer: BagWriter | None = None  # destroy_node() may run before the bag opens
        super().__init__('recorder_node', **kwargs)
        for name, default, description in PARAMS:
            self.declare_parameter(name, default,
                                   ParameterDescriptor(description=description, read_only=True))
        value = {name: self.get_parameter(name).value for name, _, _ in PARAMS}
        if not value['discovery_period_s'] > 0.0:
            raise ValueError(f'discovery_period_s: must be > 0 s, got '
                             f'{value["discovery_period_s"]!r}')
        bag_path = value['bag_path'] or time.strftime('wm_%Y_%m_%d-%H_%M_%S')
        self._writer = BagWriter(bag_path, value['storage'])
        self._wanted = list(dict.fromkeys(self.resolve_topic_name(t) for t in value['topics']))
        self._subscribed: dict[str, tuple[str, QoSProfile]] = {}
        self._publishers_seen: dict[str, set[str]] = {}
        self._reported: set[str] = set()
        self._ids = MessageIds()
        self._stamps: dict[str, int] = {}   # the latest stamp per topic [ns]
        self._writers: dict[str, str] = {}  # {publisher gid (hex): its node}, as the graph said
        self._ids_topic = self.get_fully_qualified_name() + IDS_TOPIC_SUFFIX
        self._intake = RecorderIntake(self, lambda: self._intake.round(None))
        self._discover()
        self.create_timer(value['discovery_period_s'], self._discover,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(f'recording to {self._writer.path} ({value["storage"]}): '
                               f'{", ".join(self._wanted)}')

    @property
    def bag_path(self):
        """Return the bag directory."""
        return self._writer.path

    @property
    def counts(self) -> dict[str, int]:
        """Return {topic: messages written} so far for every wanted topic."""
        return {topic: self._writer.counts.get(topic, 0) for topic in self._wanted}

    def set_custom_data(self, key: str, value: str) -> None:
        """Store `key: value` in the bag's metadata (the demo stores its seed and drops)."""
        self._writer.set_custom_data(key, value)

    @property
    def waiting_for(self) -> list[str]:
        """Return the wanted topics that have no publisher in the graph yet."""
        return [topic for topic in self._wanted if topic not in self._subscribed]

    def _discover(self) -> None:
        """Subscribe to wanted topics that appeared; note publishers that joined later."""
        if self._writer is None or self._writer.closed:
            return
        self._write_ids()
        types = dict(self.get_topic_names_and_types())
        for topic in self._wanted:
            offers = self._offers(topic)
            if topic in self._subscribed:
                self._note_new_publishers(topic, offers)
            elif offers and len(types.get(topic, ())) == 1:
                self._subscribe(topic, types[topic][0], offers)
            elif len(types.get(topic, ())) > 1:
                self._report_once(topic, f'{topic}: several types {types[topic]}; not recorded')

    def _offers(self, topic: str) -> dict[str, Qos]:
        """Return {publisher gid: offered QoS} of `topic`'s publishers in the graph.

        Each publisher's node is noted too (WRITERS_KEY): a replay names the writer of a
        message by it, as the node did through the graph (owned keys).
        """
        infos = self.get_publishers_info_by_topic(topic)
        for info in infos:
            node = publisher_node(info)   # None until the graph names it: asked again later
            if node is not None:
                self._writers.setdefault(_gid(info), node)
        return {_gid(info): bag_qos(info.qos_profile) for info in infos}

    def _subscribe(self, topic: str, msgtype: str, offers: dict[str, Qos]) -> None:
        try:
            msg_class = message_class(msgtype)
            self._writer.add_topic(topic, msgtype, offers=list(offers.values()))
        except (BagError, ImportError, AttributeError) as err:
            self._report_once(topic, f'{topic}: not recorded: {err}')
            return
        reliability, durability = adapted_qos(list(offers.values()))
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=HISTORY_DEPTH,
                         reliability=ReliabilityPolicy[reliability.name],
                         durability=DurabilityPolicy[durability.name])
        self._intake.subscribe(
            msg_class, topic, lambda data, info: self._on_message(topic, msgtype, data, info),
            qos, None, raw=True)
        self._subscribed[topic] = (msgtype, qos)
        self._publishers_seen[topic] = set(offers)
        self.get_logger().info(f'subscribed to {topic} [{msgtype}]: {reliability.name.lower()}, '
                               f'{durability.name.lower()} ({len(offers)} publisher(s))')

    def _note_new_publishers(self, topic: str, offers: dict[str, Qos]) -> None:
        """Add a later publisher's QoS to the metadata; warn when it cannot reach the bag."""
        _, qos = self._subscribed[topic]
        for gid in set(offers) - self._publishers_seen[topic]:
            self._publishers_seen[topic].add(gid)
            offer = offers[gid]
            self._writer.add_offer(topic, offer)
            if (qos.reliability == ReliabilityPolicy.RELIABLE
                    and offer.reliability != QosReliability.RELIABLE):
                self.get_logger().warning(f'{topic}: a best-effort publisher joined after the '
                                          'reliable subscription was made: its messages are '
                                          'not recorded')

    def _on_message(self, topic: str, msgtype: str, data: bytes, info: dict) -> None:
        # Stamped when it arrived, not when a round took it (up to a few ms later).
        stamp = self._stamps[topic] = receive_stamp(
            self.get_clock().now().nanoseconds, time.time_ns(), info.get('received_timestamp'),
            self._stamps.get(topic, 0))
        try:
            self._writer.write(topic, msgtype, data, stamp)
        except BagError as err:
            self.get_logger().error(f'{topic}: not recorded: {err}', throttle_duration_sec=5.0)
            return
        gid = info.get('publisher_gid') or {}
        self._ids.add(topic, bytes(gid.get('data', b'')), info.get('publication_sequence_number'))
        if topic not in self._reported:
            self._reported.add(topic)
            self.get_logger().info(f'first message on {topic} recorded')

    def _write_ids(self) -> None:
        """Write who published the messages recorded since the last call (RecordedIds)."""
        stamp = self.get_clock().now().nanoseconds
        for batch in self._ids.flush():
            msg = RecordedIds(topic=batch.topic, first_index=batch.first_index,
                              publishers=list(batch.publishers),
                              publisher=list(batch.publisher), sequence=list(batch.sequence))
            try:
                self._writer.write(self._ids_topic, IDS_TYPE, serialize_message(msg), stamp)
            except BagError as err:
                self.get_logger().error(f'{self._ids_topic}: not recorded: {err}',
                                        throttle_duration_sec=5.0)

    def _report_once(self, topic: str, message: str) -> None:
        if topic not in self._reported:
            self._reported.add(topic)
            self.get_logger().error(message)

    def close(self) -> None:
        """Finish the bag (index and metadata.yaml) and log what it holds; idempotent."""
        if self._writer is None or self._writer.closed:
            return
        self._write_ids()
        self._writer.set_custom_data(WRITERS_KEY, json.dumps(self._writers, sort_keys=True))
        self._writer.close()
        held = ', '.join(f'{count} on {topic}' for topic, count in self._writer.counts.items())
        missing = self.waiting_for
        if missing:
            held += f'; never published: {", ".join(missing)}'
        # After an external shutdown the context is down and /rosout unusable: console only.
        logger = self.get_logger() if self.context.ok() else rclpy.logging.get_logger('recorder')
        logger.info(f'bag {self._writer.path} closed: {held}')

    def destroy_node(self) -> None:
        """Finish the bag, then destroy the helper node and the node."""
        self.close()
        if getattr(self, '_intake', None) is not None:
            self._intake.destroy()
            self._intake = None
        super().destroy_node()


class RecorderIntake(Intake):
    """The node's intake with rounds every few milliseconds: the bag's stamps are a round's."""

    IDLE_PERIOD_S = 0.005


def message_class(msgtype: str):
    """Return the Python class of a ROS type name such as 'nav_msgs/msg/Odometry'."""
    package, kind, name = msgtype.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def _duration(duration) -> QosTime:
    nanoseconds = duration.nanoseconds
    return QosTime(nanoseconds // 1_000_000_000, nanoseconds % 1_000_000_000)


def bag_qos(profile: QoSProfile) -> Qos:
    """Return an rclpy QoS profile as the rosbag2 metadata record of an offered QoS."""
    return Qos(history=QosHistory[HistoryPolicy(profile.history).name],
               depth=profile.depth,
               reliability=QosReliability[ReliabilityPolicy(profile.reliability).name],
               durability=QosDurability[DurabilityPolicy(profile.durability).name],
               deadline=_duration(profile.deadline), lifespan=_duration(profile.lifespan),
               liveliness=QosLiveliness[LivelinessPolicy(profile.liveliness).name],
               liveliness_lease_duration=_duration(profile.liveliness_lease_duration),
               avoid_ros_namespace_conventions=profile.avoid_ros_namespace_conventions)


def _gid(info) -> str:
    return bytes(info.endpoint_gid).hex()


USAGE = (
    'Record topics to a rosbag2 bag (MCAP or SQLite3), as ros2 bag record would: each of topics '
    'is subscribed once it is in the graph, its type found there and its QoS adapted to its '
    "publishers, and its messages go to the bag at bag_path ('': wm_<date>-<time> in the current "
    'directory) until SIGINT or SIGTERM closes it.')


def main(args: list[str] | None = None) -> int:
    """Run the recorder until SIGINT/SIGTERM (the bag is closed cleanly); `-h` prints its usage."""
    parse_node_options('recorder_node', USAGE, 'recorder_node', [name for name, _, _ in PARAMS],
                       own_arguments(sys.argv if args is None else args))
    return run_node(RecorderNode, args,
                    construction_errors=(BagError, ValueError, ParameterException))


if __name__ == '__main__':
    sys.exit(main())
