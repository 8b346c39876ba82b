"""The working-memory engine: what each input does to the memory, and what a tick is.

One `Engine` takes every input through one door each (a board update, a log event, a
writer's resync answer, a source's message, the map, the pose, a trigger) and makes a
tick (`tick`: the frozen frame, its evictions and its receipt). Its two drivers turn
their messages into those inputs: the node (ros/node.py) ROS messages as they arrive,
the replay (tools/replay.py) a bag's recorded messages, in the order the frames'
receipts say. Both therefore run the same steps, written here only; `build_engine` is
what the node's configure makes and its cleanup drops. Pure Python (no rclpy).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple

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
from working_memory.engine.config import NodeConfig
from working_memory.engine.health import BoardGrowth, CapacityUse, Health, Level, Status
from working_memory.engine.inputs import Answer, Oversize, POSE_TOPICS, TooLarge
from working_memory.engine.ownership import Ownership
from working_memory.engine.receipts import Receipt, Receipts
from working_memory.engine.requirements import describe_unsourced, required_status, unsourced
from working_memory.engine.source_map import SourceSpec, Sources, sources_status


class Arrival(NamedTuple):
    """A message as it reached the node: when, and from which publisher."""

    received: float           # [s] ROS time of receipt: the stamp of what comes unstamped
    observed: float | None    # [s] ROS time the timeline observes at receipt (None: none)
    publisher: bytes = b''    # the publisher's gid (b'': not known)
    sequence: int | None = None   # the publisher's number of the message (None: not known)


class Listener:
    """What the engine tells its driver as it takes inputs: the node logs it, a replay keeps it."""

    def rejected(self, topic: str, reason: str) -> None:
        """Hear that input on `topic` could not be used (counted on /diagnostics already)."""

    def refusing(self, topic: str, oversize: Oversize) -> None:
        """Hear that refusals of `oversize.key` for its size begin (later ones are only counted)."""

    def owner_refused(self, topic: str, writer: str, key: str, owner: str) -> None:
        """Hear that `writer` wrote the owned `key` and was refused, the first time."""

    def answered_late(self, writer: str, status: str) -> None:
        """Hear a writer's resync answer that came after the re-reading ended (taken now)."""


# (entries, removed keys, errors, ...) decoded from a message: the driver's codec, handed to a
# door with the arrival's time and the size limit, so a message that is bad whole is rejected
# (ValueError) where it is counted.
Decode = Callable[[float, int | None], Any]


class Tick(NamedTuple):
    """One tick's output: the frozen frame, the evictions it publishes, its receipt."""

    frame: Frame
    effective: float               # [s] the tick's time on the effective timeline
    evictions: list[EvictionRecord]
    receipt: Receipt


@dataclass
class Engine:
    """The memory of one configured node: board mirror, event log, working set, frames, health."""

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
    receipts: Receipts
    grid: GridMap | None = None
    pose: tuple[float, float] | None = None
    tick_number: int = 0
    last_diagnostics: float | None = None
    # Evictions caused between ticks (a smaller capacity set at runtime), published next tick.
    pending_evictions: list[EvictionRecord] = field(default_factory=list)
    # The board mirror's size and growth, and the key prefixes that pile up (/diagnostics).
    growth: BoardGrowth = field(default_factory=BoardGrowth)
    # The typed-topic sources (sources_file), by topic.
    sources: Sources = field(default_factory=lambda: Sources(()))
    # Writers' answers taken since the last tick, applied at the tick.
    answers: list[Answer] = field(default_factory=list)
    # {cabin: required board keys no source writes}: a writer on `board` must (requirements.py).
    unsourced: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Values refused for their size (max_value_bytes), the latest per key: for ~/explain.
    refusals: Refusals = field(default_factory=Refusals)
    # Owned board keys (owner_names), when the driver can name a message's writer.
    ownership: Ownership | None = None
    listener: Listener = field(default_factory=Listener)

    # -- the doors: one per kind of input ---------------------------------------------

    def take_board(self, arrival: Arrival, decode: Decode) -> None:
        """Take a board update: entries set, keys removed (`decode` gives its BoardBatch)."""
        batch = self._decoded('board', arrival, decode)
        if batch is None:
            return
        self._rejections('board', arrival, batch.errors, batch.refused)
        batch = self._owned('board', batch, arrival)
        try:
            # Entries frozen and strict JSON by the codec: the board keeps them as they are.
            self.board.apply_checked(batch.entries, batch.removed_keys)
        except ValueError as error:   # a key both set and removed: nothing of it is applied
            self._reject('board', str(error))
            return
        if batch.removed_keys:
            self.resync.removed(batch.removed_keys, batch.stamp)
        if self.refusals.latest:
            self._taken(batch.entries)

    def take_event(self, arrival: Arrival, decode: Decode) -> None:
        """Take a log event (`decode` gives the Event; inputs.TooLarge refuses it for its size)."""
        self._arrive('log', arrival)
        try:
            event = decode(arrival.received, self.config.max_value_bytes)
        except TooLarge as error:
            self._refuse('log', (error.oversize,), arrival)
            return
        except ValueError as error:
            self._reject('log', str(error))
            return
        self._append(event)

    def take_answer(self, arrival: Arrival, decode: Decode) -> None:
        """Take a writer's answer to this node start's resync; applied at the next tick.

        At the tick, after its live inputs, in the order taken: however they interleaved
        with live updates, a tick sees the live inputs its receipt counts first and the
        answers last, an order a replay repeats from the receipts alone.
        """
        answer = self._decoded(ANSWER_TOPIC, arrival, decode)
        if answer is None:
            return
        self._rejections(ANSWER_TOPIC, arrival, answer.errors, answer.refused)
        if self.ownership is not None:
            answer, first = self.ownership.take_answer(answer, arrival.publisher)
            self._owner_refusals(ANSWER_TOPIC, first)
        self.answers.append(answer)
        if not self.resync.heard(arrival.publisher):
            self.listener.answered_late(answer.writer, self.resync.status(time.monotonic()))

    def take_source(self, topic: str, arrival: Arrival, msg: Any) -> None:
        """Take a typed-topic source's message: mapped onto board entries and events."""
        self._arrive(topic, arrival)
        conversion = self.sources.convert(topic, msg, arrival.received)
        self._rejections(topic, arrival, conversion.errors, conversion.refused)
        # Owned keys from the publisher on the source's topic, as from a writer on board.
        conversion = self._owned(topic, conversion, arrival)
        if conversion.entries or conversion.removed_keys:
            try:
                # Frozen and measured by the source map: kept as they are.
                self.board.apply(conversion.entries, conversion.removed_keys, checked=True)
            except ValueError as error:
                self._reject(topic, str(error))
                return
            if self.refusals.latest:
                self._taken(conversion.entries)
        for event in conversion.events:
            self._append(event)

    def take_undecodable(self, topic: str, arrival: Arrival, error: str) -> None:
        """Count a source's message whose bytes do not decode as its type."""
        self._arrive(topic, arrival)
        self.sources.reject(topic, error)
        self._reject(topic, error)

    def take_map(self, arrival: Arrival, decode: Callable[[str], GridMap]) -> None:
        """Take the map (`decode(map_frame)` gives it)."""
        self._arrive('map', arrival)
        try:
            self.grid = decode(self.config.map_frame)
        except ValueError as error:
            self._reject('map', str(error))

    def take_pose(self, arrival: Arrival,
                  decode: Callable[[str], tuple[float, float]]) -> None:
        """Take the pose from its topic (pose_source; `decode(map_frame)` gives x, y)."""
        topic = self.pose_topic
        self._arrive(topic, arrival)
        try:
            self.pose = decode(self.config.map_frame)
        except ValueError as error:
            self._reject(topic, str(error))

    def take_trigger(self, arrival: Arrival) -> None:
        """Count a trigger message (trigger_topic): the driver ticks on it."""
        self._arrive(self.config.trigger_topic, arrival)

    # -- the tick --------------------------------------------------------------

    def tick(self, now: float, number: int | None = None, resyncing: bool = False) -> Tick:
        """Make the tick at ROS time `now` [s]: the writers' answers, then the frozen frame.

        `number` is the tick's (None: the next); `resyncing` marks the frame while the
        writers are re-read (the node asks `still_resyncing`, a replay the recorded frame).
        The frame is retained for ~/assemble and ~/explain (`frames`).
        """
        self._apply_answers()
        effective = self.timebase.observe(now)
        self.tick_number = self.tick_number + 1 if number is None else number
        frame = self.assembler.assemble(self.tick_number, now, self.board, self.log, self.grid,
                                        self.pose)
        if resyncing:
            frame = mark_resyncing(frame, resyncing_detail(self.resync.started,
                                                           self.resync.restart))
        self.frames.publish(frame)
        evictions = self.pending_evictions + list(frame.evictions)
        self.pending_evictions = []
        self.health.evicted(len(evictions), effective)
        return Tick(frame, effective, evictions, self.receipts.receipt())

    def clock_jumped(self, now: float, delta: float) -> int:
        """Take a backward jump of `delta` [s] of the clock, now at `now` [s]; return the epoch.

        The timeline starts a new epoch (core/timebase.py); the `ticks` status names it.
        """
        self.timebase.observe(now)
        self.health.clock_jumped(f'epoch {self.timebase.epoch}: {delta:+.3f} s')
        return self.timebase.epoch

    def still_resyncing(self, steady: float, writers: Callable[[], dict[bytes, str]]) -> bool:
        """Return True while the writers are re-read at steady time `steady` [s].

        `writers()` gives {gid: node name} of the publishers on `resync/answer` the graph
        shows; asked only while the re-reading lasts.
        """
        return self.resync.active and self.resync.update(steady, writers())

    def reconfigure(self, config: NodeConfig, manifests: dict[str, Manifest],
                    tick: int | None = None) -> NodeConfig:
        """Take a runtime change of the configuration and manifests; return the old config.

        Between ticks: items a smaller capacity evicts are evicted in tick `tick` (None:
        the next; the last frame still holds them), and published with it.
        """
        old, self.config = self.config, config
        if (config.capacity, config.size_budget) != (old.capacity, old.size_budget):
            self.pending_evictions += self.assembler.set_limits(
                config.capacity, config.size_budget,
                tick=self.tick_number + 1 if tick is None else tick)
        if manifests != self.manifests:
            self.manifests = manifests
            self.assembler.set_manifests(manifests)
        return old

    # -- steps of the doors ---------------------------------------------------------

    def _arrive(self, topic: str, arrival: Arrival) -> None:
        """Count a message on `topic` in the receipts and the health; observe its time."""
        self.receipts.took(topic, arrival.publisher, arrival.sequence)
        observed = arrival.observed
        effective = self.timebase.observe(observed) if observed is not None else (
            self.timebase.now if self.timebase.now is not None else arrival.received)
        self.health.received(topic, effective)

    def _decoded(self, topic: str, arrival: Arrival, decode: Decode) -> Any:
        """Count the message, then return what `decode` gives, None when it is bad whole."""
        self._arrive(topic, arrival)
        try:
            return decode(arrival.received, self.config.max_value_bytes)
        except ValueError as error:
            self._reject(topic, str(error))
            return None

    def _rejections(self, topic: str, arrival: Arrival, errors: Iterable[str],
                    refused: tuple[Oversize, ...]) -> None:
        for error in errors:
            self._reject(topic, error)
        if refused:
            self._refuse(topic, refused, arrival)

    def _reject(self, topic: str, reason: str) -> None:
        """Count bad input on `topic`; the rest goes on as before."""
        self.health.rejected(topic, reason)
        self.listener.rejected(topic, reason)

    def _refuse(self, topic: str, refused: Iterable[Oversize], arrival: Arrival) -> None:
        """Count and record values refused for their size; tell the first of each key."""
        effective = self.timebase.now if self.timebase.now is not None else arrival.received
        for oversize in refused:
            self.health.rejected(topic, oversize.reason)
            if self.refusals.refuse(Refusal(oversize.key, oversize.size, oversize.limit,
                                            arrival.received, effective)):
                self.listener.refusing(topic, oversize)

    def _owned(self, topic: str, batch: Any, arrival: Arrival) -> Any:
        """Return `batch` (a BoardBatch, a source's Conversion) without what its writer may not."""
        if self.ownership is None:
            return batch
        batch, first = self.ownership.take(batch, arrival.publisher)
        self._owner_refusals(topic, first)
        return batch

    def _owner_refusals(self, topic: str, first: list[tuple[str, str, str]]) -> None:
        for writer, key, owner in first:
            self.listener.owner_refused(topic, writer, key, owner)

    def _append(self, event: Event) -> None:
        self.log.append(event)
        if self.refusals.latest:
            self._taken(events=(event,))

    def _taken(self, entries: Iterable[BoardEntry] = (), events: Iterable[Event] = ()) -> None:
        """Note values of these keys taken: their refusals are over."""
        self.refusals.taken([*(entry.key for entry in entries),
                             *(event_refusal_key(event.kind.value, event.key)
                               for event in events)])

    def _apply_answers(self) -> None:
        """Apply the answers kept since the last tick, in the order taken.

        Of an answer, what is not older than the live updates is taken.
        """
        answers, self.answers = self.answers, []
        for answer in answers:
            standing = self.resync.standing(answer.entries, self.board)
            self.board.apply(standing)
            events = self.log.take_answered(answer.events)
            if self.refusals.latest:
                self._taken(standing, events)

    # -- what the driver publishes ------------------------------------------------

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
        owners = self.ownership
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
            *sources_status(self.sources), self.required_status(frame),
            *([owners.status()] if owners is not None and owners.owners else [])]

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

    @property
    def pose_topic(self) -> str | None:
        """The topic the pose comes from (`odom`, `pose`), None when the board gives it."""
        return pose_topic(self.config)


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


def build_engine(config: NodeConfig, manifests: dict[str, Manifest], now: float,
                 sources: Iterable[SourceSpec] = (), restart: bool = False, *,
                 start_id: str | None = None, steady: float | None = None,
                 listener: Listener | None = None) -> Engine:
    """Return the engine for `config` and `manifests`, its timeline starting at `now` [s].

    `sources` (from sources_file) are inputs too, their topics counted in the receipts;
    `restart`: the node built one before in this process (see `Resync`); `start_id`
    names this node start (None: a new one), `steady` [s] the steady clock's now
    (None: read it); `listener` hears what the engine rejects and refuses.
    """
    sources = tuple(sources)
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
    receipts = Receipts(inputs)
    return Engine(config=config, manifests=manifests, board=BoardSnapshot(timebase),
                  log=EventLog(config.event_log_limit, timebase), working_set=working_set,
                  assembler=Assembler(manifests, working_set, pose_key=(
                      config.pose_key if config.pose_source == 'board' else None)),
                  frames=FrameStore(config.frames_kept),
                  health=Health(inputs, timebase.observe(now), receipts=receipts),
                  resync=Resync(now, config.resync_timeout_s,
                                secrets.token_hex(8) if start_id is None else start_id,
                                time.monotonic() if steady is None else steady, restart),
                  receipts=receipts,
                  sources=Sources(sources, config.max_value_bytes),
                  unsourced=unsourced(manifests, sources),
                  listener=Listener() if listener is None else listener)


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


def configure_warnings(engine: Engine) -> list[str]:
    """Return what a configured node warns of: keys no source writes, a pose it cannot read."""
    config, warnings = engine.config, []
    if engine.unsourced:
        warnings.append('required keys no source writes (a writer on board must): '
                        + describe_unsourced(engine.unsourced))
    requiring = pose_requirers(config, engine.manifests)
    if requiring:
        warnings.append(
            f'pose_source {config.pose_source}: the {pose_topic(config)} topic places '
            f'the map windows; {", ".join(requiring)} require the board key '
            f'{config.pose_key!r}, which only the board gives (map the topic to it as a '
            f'source, sources_file, or leave it out of required)')
    return warnings


def pose_requirers(config: NodeConfig, manifests: dict[str, Manifest]) -> list[str]:
    """Return the cabins requiring the board key `pose_key` while the pose comes from a topic."""
    if config.pose_source == 'board':
        return []
    return [name for name, manifest in manifests.items() if config.pose_key in manifest.required]
