"""The node's inputs: each subscription hands its message to one door of the engine.

Every input is taken on the node's `Intake` (ros/intake.py: in batches, with each
message's info) and handed, with the codec that reads it (ros/conversions.py), to the
engine's door for its kind (engine/engine.py); the engine counts, checks and takes it.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Iterable

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.exceptions import InvalidTopicNameException
from rclpy.lifecycle import LifecycleNode

from working_memory.engine.engine import (ANSWER_TOPIC, Arrival, Engine, Listener,
                                          check_distinct_inputs)
from working_memory.msg import BoardUpdate, LogEvent, ResyncAnswer
from working_memory.ros import conversions as conv
from working_memory.ros import qos
from working_memory.ros.intake import Intake
from working_memory.ros.sources import subscribe_sources


class Subscriptions:
    """Subscribe the node's inputs on an Intake and hand each message to the engine."""

    def __init__(self, node: LifecycleNode, engine: Engine, on_round: Callable[[], None],
                 now: Callable[[], float]):
        """Subscribe `engine`'s inputs for `node`; `on_round` runs each intake round."""
        self._engine, self._now = engine, now
        # Before subscribing: one topic under two types fails in the middleware.
        names = engine.receipts.names
        names.update(resolved(node, names))
        check_distinct_inputs(names)
        # QoS events are counted for /diagnostics and logged.
        events = (engine.health, node.get_logger())
        self.intake = intake = Intake(node, on_round)
        # The board taken serialized: read in place, without building message objects.
        intake.subscribe(BoardUpdate, 'board', self._on_board, qos.input_qos(),
                         qos.input_events('board', *events), raw=True)
        intake.subscribe(LogEvent, 'log', self._on_log, qos.input_qos(),
                         qos.input_events('log', *events))
        if engine.config.resync_timeout_s > 0.0:
            intake.subscribe(ResyncAnswer, ANSWER_TOPIC, self._on_answer,
                             qos.latched_qos(qos.ANSWERS_KEPT),
                             qos.input_events(ANSWER_TOPIC, *events))
        # Map and pose too: the intake hands every message its info (the EventsExecutor
        # cannot), whose publisher and number the frame's receipts name (input_starts).
        intake.subscribe(OccupancyGrid, 'map', self._on_map, qos.map_qos(),
                         qos.input_events('map', *events))
        topic = engine.pose_topic
        if topic:
            intake.subscribe(Odometry if topic == 'odom' else PoseStamped, topic,
                             self._on_pose, qos.pose_qos(), qos.input_events(topic, *events))
        # The typed-topic sources (sources_file), each with its own type.
        subscribe_sources(intake, node, [source.spec for source in engine.sources.maps.values()],
                          self._on_source, self._on_undecodable,
                          lambda topic: qos.input_events(topic, *events))

    def arrival(self, info: dict | None = None) -> Arrival:
        """Return a message's arrival now: the node clock's time, its publisher and number."""
        now = self._now()
        return Arrival(now, now, *(conv.publication(info) if info else ()))

    def destroy(self) -> None:
        """Destroy the intake and its subscriptions."""
        self.intake.destroy()

    def _on_board(self, data: bytes, info: dict) -> None:
        # Read in place (ros/wire_in.py), values parsed frozen and strict.
        self._engine.take_board(self.arrival(info), partial(conv.board_batch_from_bytes, data))

    def _on_log(self, msg: LogEvent, info: dict) -> None:
        self._engine.take_event(self.arrival(info), partial(conv.event_from_msg, msg))

    def _on_answer(self, msg: ResyncAnswer, info: dict) -> None:
        # Only an answer to this node start counts (the receipt), not a latched older one.
        if conv.answers(msg, self._engine.resync.start_id):
            self._engine.take_answer(self.arrival(info), partial(conv.answer_from_msg, msg))

    def _on_source(self, topic: str, msg: Any, info: dict) -> None:
        self._engine.take_source(topic, self.arrival(info), msg)

    def _on_undecodable(self, topic: str, error: str, info: dict) -> None:
        self._engine.take_undecodable(topic, self.arrival(info), error)

    def _on_map(self, msg: OccupancyGrid, info: dict) -> None:
        self._engine.take_map(self.arrival(info), partial(conv.grid_from_msg, msg))

    def _on_pose(self, msg: Odometry | PoseStamped, info: dict) -> None:
        self._engine.take_pose(self.arrival(info), partial(conv.pose_from_msg, msg))


def resolved(node: LifecycleNode, topics: Iterable[str]) -> dict[str, str]:
    """Return {input topic: resolved name}; a name that is no topic is left to its entity."""
    names = {}
    for topic in topics:
        try:
            names[topic] = node.resolve_topic_name(topic)
        except (InvalidTopicNameException, RuntimeError):
            continue   # rcl's RCLError (a RuntimeError) for a name it cannot expand
    return names


class InputLog(Listener):
    """Log what the engine rejects and refuses (an engine `Listener`): once a second, once."""

    def __init__(self, logger):
        self._logger = logger

    def rejected(self, topic: str, reason: str) -> None:
        """Log bad input on `topic` (counted on /diagnostics), at most once a second."""
        self._logger.warning(f'{topic}: rejected input: {reason}', throttle_duration_sec=1.0)

    def refusing(self, topic: str, oversize) -> None:
        """Log the first refusal of a key's value for its size."""
        self._logger.warning(
            f'{topic}: rejected input: {oversize.reason}; further refusals of '
            f'{oversize.key!r} are counted on /diagnostics, not logged, until a value of '
            'it is taken')

    def owner_refused(self, topic: str, writer: str, key: str, owner: str) -> None:
        """Log a writer refused an owned key, the first time."""
        self._logger.warning(f'{topic}: {writer} may not write {key!r} (owner {owner}: '
                             f'owners.{owner}.nodes); refused, counted on /diagnostics')

    def answered_late(self, writer: str, status: str) -> None:
        """Log a writer's answer after the re-reading ended."""
        self._logger.warning(f'{ANSWER_TOPIC}: {writer} answered after the re-reading ended '
                             f'({status}); taken now')
