"""QoS profiles of the working-memory node's topics, shared with its clients and the simulator.

Subscribers of `~/frame` must use `frame_qos()`: a late subscriber (a planner that
starts after the node) then receives the current frame at once.
"""

from typing import Any, Iterable

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_policy_name_from_kind)


# Resync answers a node's subscription holds (each writer keeps its last one).
ANSWERS_KEPT = 256


def latched_qos(depth: int = 1) -> QoSProfile:
    """Return reliable, transient-local, keep-last-`depth`: the latest wait for late joiners."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def frame_qos() -> QoSProfile:
    """Return the QoS of `~/frame` (ContextFrame): latched, one frame per tick."""
    return latched_qos()


def map_qos() -> QoSProfile:
    """Return the QoS of the `map` input, as map_server publishes it (latched).

    A volatile map publisher is incompatible with it; the node reports that on /diagnostics.
    """
    return latched_qos()


def stream_qos(depth: int = 100) -> QoSProfile:
    """Return reliable, volatile, keep-last-`depth`: every message of a bursty stream arrives.

    Used for `board`, `log`, `~/evictions` and the tick trigger, where a lost
    message would be a silently lost update. A reliable volatile subscription also
    accepts transient-local publishers.
    """
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def input_qos() -> QoSProfile:
    """Return the QoS of the node's `board` and `log` subscriptions: stream_qos, 1000 deep.

    Deep enough to absorb a burst of 1000 updates while a tick runs. A sustained
    flood beyond the node's ingestion rate still overwrites the oldest queued
    updates (DDS keep-last on both ends); Fast DDS does not report that as lost.
    """
    return stream_qos(depth=1000)


def best_effort_qos(depth: int) -> QoSProfile:
    """Return best-effort, volatile, keep-last-`depth`: any publisher's reliability matches."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def pose_qos() -> QoSProfile:
    """Return best-effort keep-last-5 for `odom` / `pose`: only the newest pose matters."""
    return best_effort_qos(5)


def command_qos() -> QoSProfile:
    """Return best-effort keep-last-10 for a `cmd_vel` subscription (any sender matches)."""
    return best_effort_qos(10)


def event_log_qos() -> QoSProfile:
    """Return the QoS of an event producer's `log` publisher: latched, keep last 1000.

    Volatile subscribers get events from the moment they match; subscribers that
    ask for transient local also get the history (e.g. the opening GOAL and CONSTRAINT).
    """
    return latched_qos(depth=1000)


def diagnostics_qos() -> QoSProfile:
    """Return the QoS of /diagnostics: reliable, volatile, keep last 10 (as diagnostic_updater)."""
    return stream_qos(depth=10)


def drop_event_handlers(node: Node, publishers: Iterable[Publisher]) -> int:
    """Remove the QoS event handlers of `node`'s `publishers`; return how many were removed.

    rclpy gives a publisher created without event callbacks default incompatible-QoS
    and incompatible-type handlers that only log, and each handler is one more entity
    in every wait set a wait-set executor builds (at every wake-up). For publishers
    whose events the node does not report (/parameter_events, /diagnostics, windows,
    views), that is CPU for nothing.
    """
    dropped = 0
    for publisher in publishers:
        for handler in publisher.event_handlers:
            node.remove_waitable(handler)
            handler.destroy()
            dropped += 1
        # Node.destroy_publisher removes what is left listed here.
        publisher.event_handlers = []
    return dropped


def input_events(topic: str, health: Any, logger: Any) -> SubscriptionEventCallbacks:
    """Return the QoS event callbacks of an input `topic`: counted in `health`, logged.

    Only what /diagnostics reports (an incompatible publisher, messages lost): no
    default handlers, as each one is an entity in every wait set.
    """
    def incompatible(info) -> None:
        policy = qos_policy_name_from_kind(info.last_policy_kind)
        health.input_incompatible(topic, info.total_count, policy)
        logger.error(f'{topic}: a publisher offers incompatible QoS ({policy}); '
                     'its messages do not arrive')

    def lost(info) -> None:
        health.lost(topic, info.total_count)
    return SubscriptionEventCallbacks(incompatible_qos=incompatible, message_lost=lost,
                                      use_default_callbacks=False)


def output_events(topic: str, health: Any, logger: Any) -> PublisherEventCallbacks:
    """Return the QoS event callbacks of an output `topic`: an incompatible subscriber, logged."""
    def incompatible(info) -> None:
        policy = qos_policy_name_from_kind(info.last_policy_kind)
        health.output_incompatible(topic, info.total_count, policy)
        logger.error(f'{topic}: a subscriber requests incompatible QoS ({policy}); '
                     'it receives nothing')
    return PublisherEventCallbacks(incompatible_qos=incompatible, use_default_callbacks=False)
