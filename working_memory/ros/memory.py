"""What a configured working-memory node holds: the core, built from its configuration.

Pure Python (no rclpy): `build_memory` is what `on_configure` makes and `on_cleanup`
drops. The node's callbacks hand their inputs to it and its tick asks it for a frame.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Iterable

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import EvictionRecord, HalfLifeBlend, ImportanceLRU, WorkingSet
from working_memory.core.frames import Frame, FrameStore
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry, Event
from working_memory.core.manifest import Manifest
from working_memory.core.refusals import Refusal, Refusals, event_refusal_key
from working_memory.core.resync import Resync, mark_resyncing, resyncing_detail
from working_memory.core.timebase import TimeBase
from working_memory.ros.diagnostics import BoardGrowth, CapacityUse, Health, Level, Status
from working_memory.ros.inputs import Answer, BoardBatch, Oversize, POSE_TOPICS
from working_memory.ros.params import NodeConfig
from working_memory.ros.requirements import required_status, unsourced
from working_memory.ros.source_map import Conversion, SourceSpec, Sources, sources_status


@dataclass
class Memory:
    """The core and its health: board mirror, event log, working set, assembler, frames."""

    config: NodeConfig
    manifests: dict[str, Manifest]
    board: BoardSnapshot
    log: EventLog
    working_set: WorkingSet
    assembler: Assembler
    frames: FrameStore
    health: Health
    # The re-reading of the writers: this memory started empty (core/resync.py).
    resync: Resync
    grid: GridMap | None = None
    pose: tuple[float, float] | None = None
    tick: int = 0
    last_diagnostics: float | None = None
    # Evictions caused between ticks (a smaller capacity set at runtime), published next tick.
    pending_evictions: list[EvictionRecord] = field(default_factory=list)
    # Input topics by their resolved names, for the frame's receipts (set with the entities).
    resolved_names: dict[str, str] = field(default_factory=dict)
    # The board mirror's size and growth, and the key prefixes that pile up (/diagnostics).
    growth: BoardGrowth = field(default_factory=BoardGrowth)
    # The typed-topic sources (sources_file), by topic.
    sources: Sources = field(default_factory=lambda: Sources(()))
    # Writers' answers taken since the last tick, applied at the tick (apply_answers).
    answers: list[Answer] = field(default_factory=list)
    # {cabin: required board keys no source writes}: a writer on `board` must (requirements.py).
    unsourced: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Values refused for their size (max_value_bytes), the latest per key: for ~/explain.
    refusals: Refusals = field(default_factory=Refusals)

    def receipts(self) -> dict[str, int]:
        """Return {resolved input topic: messages received so far}, for the frame's receipts."""
        return {self.resolved_names[topic]: count
                for topic, count in self.health.received_counts().items()}

    def input_starts(self) -> tuple[tuple[str, bytes, int], ...]:
        """Return (resolved topic, publisher gid, first sequence number) per publisher taken.

        Topic by topic, each topic's publishers in the order first taken: the frame's
        receipts of where this node start began to take each one.
        """
        names = self.resolved_names
        return tuple((names[topic], publisher, first)
                     for topic, starts in self.health.input_starts().items()
                     for publisher, first in starts.items())

    def reconfigure(self, config: NodeConfig, manifests: dict[str, Manifest]) -> NodeConfig:
        """Take a runtime change of the configuration and manifests; return the old config.

        Between ticks: items a smaller capacity evicts are evicted in the next tick (the
        last frame still holds them), so they are published with it.
        """
        old, self.config = self.config, config
        if (config.capacity, config.size_budget) != (old.capacity, old.size_budget):
            self.pending_evictions += self.assembler.set_limits(
                config.capacity, config.size_budget, tick=self.tick + 1)
        if manifests != self.manifests:
            self.manifests = manifests
            self.assembler.set_manifests(manifests)
        return old

    def take_board(self, batch: BoardBatch) -> None:
        """Apply a live board update (entries frozen by the intake); note its removals."""
        self.board.apply_checked(batch.entries, batch.removed_keys)
        if batch.removed_keys:
            self.resync.removed(batch.removed_keys, batch.stamp)
        if self.refusals.latest:
            self._taken(batch.entries)

    def take_event(self, event: Event) -> None:
        """Append a live event to the log."""
        self.log.append(event)
        if self.refusals.latest:
            self._taken(events=(event,))

    def take_source(self, conversion: Conversion) -> None:
        """Apply what a source's message gave: board entries and removals, events."""
        if conversion.entries or conversion.removed_keys:
            # Frozen and measured by the source map: kept as they are.
            self.board.apply(conversion.entries, conversion.removed_keys, checked=True)
            if self.refusals.latest:
                self._taken(conversion.entries)
        for event in conversion.events:
            self.take_event(event)

    def _taken(self, entries: Iterable[BoardEntry] = (), events: Iterable[Event] = ()) -> None:
        """Note values of these keys taken: their refusals are over."""
        self.refusals.taken([*(entry.key for entry in entries),
                             *(event_refusal_key(event.kind.value, event.key)
                               for event in events)])

    def refuse(self, topic: str, refused: Iterable[Oversize], now: float) -> list[Oversize]:
        """Count and record values refused for their size on `topic` at `now` [s, ROS time].

        Return those whose key's refusals begin: the node logs these, not every message.
        """
        effective = self.timebase.observe(now)
        beginning = []
        for oversize in refused:
            self.health.rejected(topic, oversize.reason)
            if self.refusals.refuse(Refusal(oversize.key, oversize.size, oversize.limit, now,
                                            effective)):
                beginning.append(oversize)
        return beginning

    def taken_order(self, starts: tuple[tuple[str, bytes, int], ...]
                    ) -> tuple[tuple[int, int], ...] | None:
        """Return the runs of inputs taken since the last frame as (index into `starts`, count).

        `starts` are the frame's input starts; None when the order is not known (too
        many runs, or a publisher that numbers nothing and so has no start).
        """
        runs = self.health.order.take()
        if runs is None:
            return None
        index = {publisher: position for position, (_, publisher, _) in enumerate(starts)}
        try:
            return tuple((index[publisher], count) for publisher, count in runs)
        except KeyError:
            return None

    def take_answer(self, answer: Answer) -> None:
        """Keep a writer's answer to the resync for the next tick (`apply_answers`)."""
        self.answers.append(answer)

    def apply_answers(self) -> None:
        """Apply the answers kept since the last tick, in the order taken, after the live inputs.

        Only then: however the intake's rounds interleaved them with live updates and
        events, the tick sees the live inputs its receipt counts first and the answers
        last, an order a replay repeats from the receipts alone. Of an answer, what is
        not older than the live updates is taken.
        """
        answers, self.answers = self.answers, []
        for answer in answers:
            standing = self.resync.standing(answer.entries, self.board)
            self.board.apply(standing)
            events = self.log.take_answered(answer.events)
            if self.refusals.latest:
                self._taken(standing, events)

    def resynced(self, frame: Frame, now: float, writers: dict[bytes, str]) -> Frame:
        """Return `frame` as it goes out at `now` [s, steady]: marked while the writers are re-read.

        `writers` ({gid: node name}) are the publishers on `resync/answer` the graph shows.
        """
        if not self.resync.update(now, writers):
            return frame
        return mark_resyncing(frame, resyncing_detail(self.resync.started, self.resync.restart))

    def evictions(self, frame: Frame, effective: float) -> list[EvictionRecord]:
        """Return the evictions `frame`'s tick publishes (a runtime change's first), counted."""
        evictions = self.pending_evictions + list(frame.evictions)
        self.pending_evictions = []
        self.health.evicted(len(evictions), effective)
        return evictions

    def diagnostics_due(self, effective: float) -> bool:
        """Return True (and note it) if a tick at `effective` [s] publishes its diagnostics."""
        if (self.last_diagnostics is not None
                and effective - self.last_diagnostics < self.config.diagnostics_period_s):
            return False
        self.last_diagnostics = effective
        return True

    def statuses(self, frame: Frame, effective: float,
                 steady: float | None = None) -> list[Status]:
        """Return the health statuses of `frame`'s tick at `effective` [s] (the timeline's).

        `steady` [s] is the steady clock's now (None: read it), the resync's time.
        """
        working_set = self.working_set
        use = CapacityUse(len(working_set), working_set.capacity, working_set.size_bytes,
                          working_set.size_budget, working_set.capacity_alarm)
        resync = self.resync
        return [*self.health.statuses(
            effective, epoch=self.timebase.epoch, capacity=use,
            missing={cabin: pack.missing for cabin, pack in frame.packs.items()},
            stale_check=self.config.stale_check,
            counted={cabin: pack.summaries for cabin, pack in frame.packs.items()}),
            self.growth.status(effective, len(self.board), self.board.growth()),
            Status('resync', Level.WARN if resync.active or resync.unheard else Level.OK,
                   resync.status(time.monotonic() if steady is None else steady),
                   (('started', f'{resync.started:.3f}'), ('start_id', resync.start_id),
                    ('active', str(resync.active)), ('complete', str(resync.complete)),
                    ('took_s', '' if resync.took is None else f'{resync.took:.3f}'),
                    ('not_heard', ', '.join(resync.unheard)),
                    ('duplicate_events', str(self.log.duplicates)))),
            *sources_status(self.sources), self.required_status(frame)]

    def required_status(self, frame: Frame | None) -> Status:
        """Return the `required` status of `frame` (None: before the first tick)."""
        return required_status(
            self.unsourced, None if frame is None else {
                cabin: pack.missing for cabin, pack in frame.packs.items()},
            self.resync.active, 0.0 if frame is None else frame.stamp - self.resync.started)

    @property
    def timebase(self) -> TimeBase:
        """The one effective timeline of ticks, receipts, stamps, evictions: the working set's."""
        return self.working_set.timebase


# Where the writers answer a resync request (msg/ResyncAnswer.msg), and where it is asked.
ANSWER_TOPIC = 'resync/answer'
REQUEST_TOPIC = 'resync/request'


def event_window_s(manifests: dict[str, Manifest]) -> float:
    """Return the widest event window of the manifests [s] (0 when none reads events)."""
    return max((manifest.events.window_s for manifest in manifests.values()
                if manifest.events.enabled), default=0.0)


def pose_topic(config: NodeConfig) -> str | None:
    """Return the topic the pose comes from (`odom`, `pose`), None when the board gives it."""
    topic, _ = POSE_TOPICS.get(config.pose_source, (None, None))
    return topic


def build_memory(config: NodeConfig, manifests: dict[str, Manifest], now: float,
                 sources: tuple[SourceSpec, ...] = (), restart: bool = False) -> Memory:
    """Return the core for `config` and `manifests`, its timeline starting at `now` [s].

    `sources` (from sources_file) are inputs too, their topics counted in the receipts;
    `restart`: the node built one before in this process (see `Resync`).
    """
    policy = (HalfLifeBlend(config.half_life_s) if config.eviction_policy == 'half_life'
              else ImportanceLRU())
    working_set = WorkingSet(config.capacity, config.size_budget, config.exempt_prefixes, policy)
    # Board changes, events and the latched map are sporadic: their silence is no fault.
    inputs = {'board': None, 'map': None, 'log': None}
    if config.resync_timeout_s > 0.0:
        inputs[ANSWER_TOPIC] = None
    topic = pose_topic(config)
    if topic:
        inputs[topic] = config.stale_after_s
    if config.trigger_topic:
        inputs[config.trigger_topic] = None
    for spec in sources:
        if spec.topic in inputs:
            raise ValueError(f'sources_file: sources.{spec.name}.topic {spec.topic} is an '
                             'input of the node already; a source needs a topic of its own')
        inputs[spec.topic] = None
    # Board and log place stamps on the working set's timeline: one timeline for all.
    timebase = working_set.timebase
    return Memory(config=config, manifests=manifests, board=BoardSnapshot(timebase),
                  log=EventLog(config.event_log_limit, timebase), working_set=working_set,
                  assembler=Assembler(manifests, working_set, pose_key=(
                      config.pose_key if config.pose_source == 'board' else None)),
                  frames=FrameStore(config.frames_kept),
                  health=Health(inputs, timebase.observe(now)),
                  resync=Resync(now, config.resync_timeout_s, secrets.token_hex(8),
                                time.monotonic(), restart),
                  sources=Sources(sources, config.max_value_bytes),
                  unsourced=unsourced(manifests, sources))


def check_distinct_inputs(resolved: dict[str, str]) -> None:
    """Raise ValueError when two inputs ({topic as given: resolved}) are one topic.

    A source on `map`, `board` or another source's topic would be counted as one input
    and taken twice.
    """
    seen: dict[str, str] = {}
    for topic, name in resolved.items():
        if name in seen:
            raise ValueError(f'sources_file: topic {topic} is {name}, an input of the node '
                             f'already ({seen[name]}); a source needs a topic of its own')
        seen[name] = topic


def tick_description(config: NodeConfig) -> str:
    """Return how the node ticks, for its log: on a trigger topic or at a rate."""
    if config.trigger_topic:
        return f'ticking on {config.trigger_topic}'
    return f'ticking at {config.tick_hz} Hz'


def pose_requirers(config: NodeConfig, manifests: dict[str, Manifest]) -> list[str]:
    """Return the cabins requiring the board key `pose_key` while the pose comes from a topic."""
    if config.pose_source == 'board':
        return []
    return [name for name, manifest in manifests.items() if config.pose_key in manifest.required]
