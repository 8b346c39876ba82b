"""QoS profiles of the working-memory node's topics, shared with its clients.

Subscribers of `~/frame` must use `frame_qos()`: a late subscriber (a planner that
starts after the node) then receives the current frame at once.
"""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def latched_qos() -> QoSProfile:
    """Return reliable, transient-local, keep-last-1: the latest message waits for late joiners."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
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


def pose_qos() -> QoSProfile:
    """Return best-effort keep-last-5 for `odom` / `pose`: only the newest pose matters.

    Best effort accepts both reliable and best-effort publishers.
    """
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5,
                      reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def diagnostics_qos() -> QoSProfile:
    """Return the QoS of /diagnostics: reliable, volatile, keep last 10 (as diagnostic_updater)."""
    return stream_qos(depth=10)
