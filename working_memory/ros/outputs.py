"""What the node publishes per tick: the frame, its evictions, the resync request, windows, views.

The frame goes out serialized by `conversions.FrameOutput` with the tick's receipt; a
second node of the same name is told by a second publisher of the frame topic
(engine/twins.py).
"""

from __future__ import annotations

from rclpy.lifecycle import LifecycleNode

from working_memory.engine.engine import Engine, REQUEST_TOPIC, Tick, event_window_s
from working_memory.engine.twins import TwinCheck
from working_memory.msg import ContextFrame, EvictionBatch, Resync
from working_memory.ros import conversions as conv
from working_memory.ros import qos
from working_memory.ros.views import Views
from working_memory.ros.window_topics import WindowTopics


class Outputs:
    """The node's publishers of one configure, and what a tick publishes on them."""

    def __init__(self, node: LifecycleNode, engine: Engine, publishers_of):
        """Create `node`'s publishers for `engine`; `publishers_of(topic)` reads the graph."""
        self._node = node
        config, manifests = engine.config, engine.manifests
        events = (engine.health, node.get_logger())
        self.encoder = conv.FrameOutput()
        frame_topic = node.resolve_topic_name('~/frame')
        self.twins = TwinCheck(node.get_fully_qualified_name(), frame_topic,
                               lambda: publishers_of(frame_topic))
        self._frame = node.create_lifecycle_publisher(
            ContextFrame, '~/frame', qos.frame_qos(),
            event_callbacks=qos.output_events('~/frame', *events))
        self.twins.created()
        self._evictions = node.create_lifecycle_publisher(
            EvictionBatch, '~/evictions', qos.stream_qos(),
            event_callbacks=qos.output_events('~/evictions', *events))
        self._resync = self._ask = None
        if config.resync_timeout_s > 0.0:
            # Asked once the subscriptions exist: an answer cannot come before they do.
            self._resync = node.create_publisher(Resync, REQUEST_TOPIC, qos.latched_qos(1))
            resync = engine.resync
            self._ask = conv.resync_msg(node.get_fully_qualified_name(), resync.started,
                                        event_window_s(manifests), resync.start_id)
            self._resync.publish(self._ask)
        self._views = Views(node, manifests, config.map_frame) if config.views else None
        self._windows = (WindowTopics(node, manifests, config.map_frame)
                         if config.map_windows == 'reference' else None)
        self.reported = (self._frame, self._evictions)   # their QoS events reach /diagnostics

    def publish(self, tick: Tick, engine: Engine, asking: bool, now: float) -> None:
        """Publish `tick` of `engine` at node time `now` [s]; `asking`: the writers are re-read."""
        frame, receipt, resync = tick.frame, tick.receipt, engine.resync
        if asking:
            # Asked again every tick until it ends: a latched sample published before a
            # writer matched reaches it only at the next heartbeat (Fast DDS: up to 3 s);
            # a new one goes at once. Writers answer each request once.
            self._resync.publish(self._ask)
        # A window goes out before the first frame that names it (map_windows: reference).
        if self._windows is not None:
            self._windows.publish(frame)
        self._frame.publish(self.encoder.frame_bytes(
            frame, engine.config.map_frame, receipt.counts, self._windows is None,
            resync.started, resync.active, resync.start_id, receipt.starts, receipt.order,
            restart=resync.restart))
        if self._views is not None:
            self._views.publish(frame, engine.pose)
        if tick.evictions or frame.readmitted:
            self._evictions.publish(conv.eviction_batch_msg(
                frame.tick, tick.evictions, frame.readmitted, now, frame.effective))

    def destroy(self) -> None:
        """Destroy every publisher (and the window and view topics)."""
        node = self._node
        for publisher in (self._frame, self._evictions):
            node.destroy_lifecycle_publisher(publisher)
        if self._resync is not None:
            node.destroy_publisher(self._resync)
        for topics in (self._views, self._windows):
            if topics is not None:
                topics.destroy()
