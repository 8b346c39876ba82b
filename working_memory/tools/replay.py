"""Replay a recorded run offline through the node's engine: the same inputs, ticks, frames.

The working-memory node stamps every frame with a receipt: per input topic, how
many messages it had received when it froze the tick (`ContextFrame.inputs`).
The replay hands exactly those recorded messages of each topic, in order, to the
doors of the same engine the node drives (engine/engine.py `Engine`), with the same
input conversions (`engine/inputs.py`), and makes each tick at the recorded tick
time; it holds no step of the node's own. An input that arrived between the recorder's
copy and the tick is therefore no guess: the receipt says whether the tick saw it.

Which recorded messages a node took is exact too: every frame names, per input topic
and publisher, the first message the node start took (`ContextFrame.input_starts`,
the publisher's gid and number), and the recorder stores each message's publisher
and number beside it (`RecordedIds`). So a node that started after the recorder, or
again (a restart: discovery takes each publisher at its own time), is replayed from
exactly where it began; its writers' answers to its resync are applied, as the node
applies them, after the tick's live inputs and in the order it took them (the order
it first heard their publishers: each writer answers a node start once). And the
order: each publisher's messages keep their own (DDS keeps it), and the frame's runs
(`ContextFrame.taken_from`, `taken_count`) say how the node interleaved several
publishers' since the last frame (two writers of one key, two loggers whose events
are numbered as they come). Where the bag cannot tell, the step's notes say so.

The node's configuration comes from its parameter events in the bag
(`/parameter_events`, recorded from before the node configured), else from a
parameters file. What-if: `overrides` change any parameter (capacity, a cabin's
manifest field, ...) before the replay; the replayed packs then say what would
have been present or absent with the same inputs (the decisions, which would
have changed the inputs, are not re-run).

Needs only numpy, PyYAML and rosbags (no ROS): the core is used directly.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping


from working_memory.core.eviction import WorkingSet
from working_memory.core.frames import Frame
from working_memory.core.manifest import (Manifest, ManifestError, load_manifests,
                                          manifests_from_params)
from working_memory.core.owners import Owners, owners_from_params
from working_memory.engine import inputs
from working_memory.engine.config import (CABINS_PREFIX, NodeConfig, OWNERS_PREFIX,
                                          cabin_param_specs, config_from_values, default_values,
                                          drop_param_spec)
from working_memory.engine.engine import Arrival, Engine, Listener, build_engine
from working_memory.engine.ownership import Ownership
from working_memory.engine.params_files import (ParamsFileError, flatten, node_parameters,
                                                read_document)
from working_memory.engine.source_map import (FieldType, SourceError, SourceSpec, TypeInfo,
                                              load_sources)
from working_memory.tools.bag import WRITERS_KEY, full_typestore, share_dir
from working_memory.tools.recording import (FrameRecord, Messages, PackRecord, Run,
                                            describe_ticks, frames_whole)

FRAME_SUFFIX = '/frame'
# Inputs a node gets the last of when it subscribes, however old (transient local).
LATCHED_INPUTS = frozenset({'nav_msgs/msg/OccupancyGrid'})
# Inputs that change nothing in the core (a trigger topic's ticks).
INERT_INPUTS = frozenset({'std_msgs/msg/Empty'})
DEFAULT_PARAMS = 'config/working_memory.yaml'


class ReplayError(Exception):
    """The run cannot be replayed (no configuration, a bad override); the message says why."""


# -- configuration --------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The node's parameter values (table names and `cabins.<cabin>.<field>`), and whence."""

    values: Mapping[str, Any]
    source: str
    node: str

    @property
    def config(self) -> NodeConfig:
        """Return the node configuration; ReplayError naming the parameter when invalid."""
        try:
            return config_from_values({**default_values(), **self.values})
        except ValueError as error:
            raise ReplayError(f'configuration ({self.source}): {error}') from None

    def manifests(self) -> dict[str, Manifest]:
        """Return the cabins' manifests as the node builds them (file cabins, then parameters)."""
        config = self.config
        values = self.values
        manifests: dict[str, Manifest] = {}
        try:
            if config.manifests_file:
                for name, manifest in load_manifests(config.manifests_file,
                                                     self.node.lstrip('/')).items():
                    drop = values.get(drop_param_spec(name, ()).name, manifest.drop)
                    manifests[name] = dataclasses.replace(manifest, drop=tuple(drop))
            if config.cabin_names:
                cabins = {}
                for name in config.cabin_names:
                    prefix = f'{CABINS_PREFIX}{name}.'
                    cabins[name] = {spec.name.removeprefix(prefix): values.get(spec.name,
                                                                               spec.default)
                                    for spec in cabin_param_specs(name)}
                manifests.update(manifests_from_params(
                    {'cabin_names': list(config.cabin_names), 'cabins': cabins}))
        except (ManifestError, OSError) as error:
            raise ReplayError(f'manifests ({self.source}): {error}') from None
        return manifests

    def owners(self) -> Owners:
        """Return the node's owners of board keys (owner_names); ReplayError when invalid."""
        names = self.config.owner_names
        values = self.values
        try:
            return owners_from_params(names, {name: (
                tuple(values.get(f'{OWNERS_PREFIX}{name}.keys', ())),
                tuple(values.get(f'{OWNERS_PREFIX}{name}.nodes', ()))) for name in names})
        except ValueError as error:
            raise ReplayError(f'owners ({self.source}): {error}') from None

    def with_values(self, changes: Mapping[str, Any], why: str) -> Settings:
        """Return these settings with `changes`; new cabins join `cabin_names`."""
        values = {**self.values, **changes}
        names = list(values.get('cabin_names', ()))
        for name in changes:
            if name.startswith(CABINS_PREFIX):
                cabin = name[len(CABINS_PREFIX):].partition('.')[0]
                if cabin not in names:
                    names.append(cabin)
        values['cabin_names'] = names
        return Settings(values, f'{self.source} + {why}', self.node)


def parameters_in_file(path: str | Path, node: str) -> dict[str, Any]:
    """Return the dotted parameters of `node` in a params file (or a plain mapping of them).

    Accepts the ROS layout (every section whose key names the node: `<node>:`,
    `/**/<node>:`, `/**:`, with `ros__parameters:`) and a plain `cabins:` mapping such as
    `wm-inspect suggest` prints. ReplayError when unreadable.
    """
    try:
        document = read_document(path)
    except ParamsFileError as error:
        raise ReplayError(str(error)) from None
    found = node_parameters(document, '/' + node.lstrip('/'))
    if found is not None:
        return found
    if 'cabins' in document or 'capacity' in document:
        return flatten(document)
    raise ReplayError(f'{path}: no {node.lstrip("/")}.ros__parameters section and no '
                      'top-level cabins mapping')


# The bag metadata (custom_data) key of the node's parameters at configure, as JSON.
PARAMETERS_KEY = 'working_memory.parameters'


def recorded_settings(run: Run, node: str | None = None,
                      params_file: str | Path | None = None) -> Settings:
    """Return the node's settings as the bag records them, else those of `params_file`.

    The bag holds the parameters at configure (metadata, PARAMETERS_KEY) and the
    parameter events; those stamped before the first tick are part of the start.
    With neither in the bag and without a file the packaged config is used; with
    events that lack the node's start (no `cabin_names`), the packaged config with
    the events over it.
    """
    node = node or node_of(run)
    changes = [change for change in run.parameters if change.node == node]
    snapshot = run.custom_data.get(PARAMETERS_KEY) if params_file is None else None
    if (changes or snapshot) and params_file is None:
        values: dict[str, Any] = {}
        try:
            values.update(json.loads(snapshot) if snapshot else {})
        except ValueError as error:
            raise ReplayError(f'bag metadata {PARAMETERS_KEY}: not JSON ({error})') from None
        heard = any('cabin_names' in change.values for change in changes)
        source = (f'parameters of {node} at configure (bag metadata)' if snapshot else
                  f'parameter events of {node} in the bag')
        if not snapshot and not heard:
            # A node declares its parameters as it starts, usually before a recorder has
            # matched it: then the events hold only later changes, which go over the
            # packaged config.
            values.update(parameters_in_file(share_dir() / DEFAULT_PARAMS, node))
            source = (f'the packaged config (the bag has not the parameters {node} started '
                      f'with) + its parameter events in the bag')
        for change in changes:
            if change.stamp_ns > first_tick_ns(run):
                break  # later changes are applied by the replay at their tick
            values.update(change.values)
        values = {name: value for name, value in values.items() if value is not None}
        lost = sum(run.undecodable.get(topic, 0) for topic in run.parameter_topics)
        return Settings(values, source + (
            f' ({lost} undecodable, left out)' if lost else ''), node)
    path = Path(params_file) if params_file is not None else share_dir() / DEFAULT_PARAMS
    why = (f'{path}' if params_file is not None else
           f'{path} (no parameter events of {node} in the bag)')
    return Settings(parameters_in_file(path, node), why, node)


def _is_zero(stamp) -> bool:
    """Return True for a zero builtin_interfaces/Time: the sender left it unset."""
    return not (stamp.sec or stamp.nanosec)


def first_tick_ns(run: Run) -> int:
    """Return the first recorded tick's time [ns] (0 without frames)."""
    return run.recording.frames[0].stamp_ns if run.recording.frames else 0


def node_of(run: Run) -> str:
    """Return the working-memory node's name, from its frame topic ('/working_memory')."""
    frame_topic = run.recording.frame_topic
    return frame_topic[:-len(FRAME_SUFFIX)] if frame_topic.endswith(FRAME_SUFFIX) else frame_topic


# -- replay ------------------------------------------------------------------


class Rejections(Listener):
    """Keep what the engine rejected while replaying, as `topic: reason` lines."""

    def __init__(self):
        self.lines: list[str] = []

    def rejected(self, topic: str, reason: str) -> None:
        """Keep a rejection."""
        self.lines.append(f'{topic}: {reason}')


@dataclass(frozen=True)
class Step:
    """One replayed tick: the recorded frame, the replayed one, and the truth behind it.

    `truth` (the engine: board mirror, event log, map, pose as the node held them) and
    `working_set` are live: read them before asking for the next step. Without
    `packs_read` the recorded frame is the run's index of it (its packs' digests only).
    """

    recorded: FrameRecord
    frame: Frame
    truth: Engine
    working_set: WorkingSet
    manifests: Mapping[str, Manifest]
    notes: tuple[str, ...]
    packs_read: bool = True

    @property
    def agrees(self) -> bool:
        """True when the replayed frame has the recorded digest."""
        return self.frame.digest == self.recorded.digest


class Replay:
    """Feed a recorded run's inputs through the core, tick by tick; iterate with `steps()`."""

    def __init__(self, run: Run, settings: Settings):
        self.run = run
        self.settings = settings
        self.config = settings.config
        self.manifests = settings.manifests()
        self._kinds = inputs.event_kinds(run.event_kinds)
        # The node's typed-topic sources, by the resolved topic the bag names them.
        self._specs = replay_sources(self.config.sources_file, settings.node)
        pose_topic, self._pose_convert = inputs.POSE_TOPICS.get(self.config.pose_source,
                                                                (None, None))
        self._pose_topic = None if pose_topic is None else '/' + pose_topic.lstrip('/')
        self._stamps: dict[str, list[int]] = {}
        # This node start's inputs (its own answers only) and where its receipts count from.
        self._inputs: dict[str, Messages] = dict(run.inputs)
        self._base: dict[str, int] = {topic: 0 for topic in run.inputs}
        # Topics applied by bag time: a restarted node's, in a bag without message ids.
        self._by_time: set[str] = set()
        # Each taken message's publisher, per topic whose publishers the bag tells.
        self._publishers: dict[str, tuple[bytes, ...]] = {}
        self._answer_topics = {topic for topic, msgtype in run.input_types.items()
                               if msgtype.endswith('/ResyncAnswer')}
        # Per node start, per input topic, {publisher: first number taken} in the order taken.
        self._starts: dict[str, dict[str, dict[bytes, int]]] = {}
        for frame in run.recording.frames:
            starts = self._starts.setdefault(frame.start_id, {})
            for topic, publisher, first in frame.input_starts:
                starts.setdefault(topic, {}).setdefault(publisher, first)
        # Per topic, ticks before whose frame the bag held a message the node took later.
        self.late: dict[str, int] = {}
        # Owned keys: each writer named as the node named it, by the recorder's graph.
        self._owners = settings.owners()
        self._writers = recorded_writers(run) if self._owners.owners else None
        # Board keys whose entry came without a stamp (entry and header zero), and how many
        # log events did: the node stamped them when it took them, which no bag holds.
        self._unstamped_keys: dict[str, None] = {}
        self._unstamped_events = 0

    def steps(self, packs: bool = True) -> Iterator[Step]:
        """Yield one Step per recorded frame, in tick order.

        A frame with a new `start_id` is a restarted node's: the replay starts again
        from an empty memory, as it did, and takes its receipts as counting anew.
        Without `packs` each step's recorded frame is the run's index of it (receipt and
        digests: see `Recording.whole`), and the bag's frames are not read again.
        """
        started = None
        applied = {topic: 0 for topic in self.run.inputs}
        later = [change for change in self.run.parameters
                 if change.node == self.settings.node]
        frames = frames_whole(self.run.recording) if packs else self.run.recording.frames
        for recorded in frames:
            notes = []
            if recorded.start_id != started:
                restart = started is not None
                if restart:
                    notes.append(f'the node started again at {recorded.started:.3f} s (tick '
                                 f'{recorded.tick}): a new memory, re-read from the writers')
                started = recorded.start_id
                engine = self._empty_memory(recorded, applied, restart)
                if self._owners.owners and not self._writers:
                    notes.append('owned keys: the bag does not name the writers (recorded '
                                 'without them): every write taken, refused ones too')
            notes += self._apply_inputs(engine, recorded, applied)
            notes += self._runtime_changes(later, recorded, engine)
            tick = engine.tick(recorded.stamp_ns * 1e-9, recorded.tick, recorded.resyncing)
            self._observe.ticked(recorded.stamp_ns * 1e-9)
            yield Step(recorded, tick.frame, engine, engine.working_set, engine.manifests,
                       tuple(notes), packs)

    def _empty_memory(self, first: FrameRecord, applied: dict[str, int],
                      restart: bool) -> Engine:
        """Return the engine of the node start of `first`; choose the inputs its receipts count.

        A node start counts its receipts from 0, from wherever its subscriptions began
        to take each publisher (discovery after a restart takes each at its own time):
        its frames' input starts say where, the bag's message ids which messages those
        are (`_taken`). A bag without message ids (or a frame without input starts)
        cannot tell: then a restarted node's inputs are applied by bag time
        (approximate, and its notes say so), but on `resync/answer` by its receipts:
        the answers to its own start only (`inputs.answers`: the node counts no
        other), exact.
        """
        engine = build_engine(self.config, self.manifests, first.started, self._specs.values(),
                              first.restart, start_id=first.start_id, steady=0.0,
                              listener=Rejections())
        # The node observed its clock at each receipt, from its start on.
        self._observe = _Observer(first.started)
        if self._writers:
            writers = [(node, gid) for gid, node in self._writers.items()]
            engine.ownership = Ownership(self._owners, lambda: writers)
        exact = self._exact_topics(first.start_id)
        self._inputs = dict(self.run.inputs)
        self._publishers = {}
        for topic in exact:
            self._inputs[topic], self._publishers[topic] = self._taken(topic, first.start_id)
        for topic in self._answer_topics - exact:
            answers = self._inputs[topic]
            self._inputs[topic] = answers.subset([
                index for index, (_, msg) in enumerate(answers)
                if inputs.answers(msg, first.start_id)])
        self._stamps = {}
        self._base = {topic: 0 for topic in self._inputs}
        self._by_time = set() if not restart else {
            topic for topic in self._inputs
            if topic not in exact | self._answer_topics
            and self.run.input_types[topic] not in INERT_INPUTS}
        for topic in self._inputs:
            applied[topic] = 0
            if topic in self._by_time:
                # What the bag got before the node started never reached it, but the last
                # of a latched topic (the map), which it gets again.
                stamps = self._inputs[topic].stamps
                before = bisect.bisect_right(stamps, first.started * 1e9)
                latched = self.run.input_types[topic] in LATCHED_INPUTS
                applied[topic] = max(0, before - 1) if latched else before
        return engine

    def _exact_topics(self, start_id: str) -> set[str]:
        """Return the input topics whose messages this node start took the bag can tell.

        Those with message ids in the bag, once the start's frames name input starts:
        a topic with starts, or one it took nothing from (a middleware that numbers
        nothing names no starts).
        """
        starts = self._starts.get(start_id, {})
        if not starts:
            return set()
        last = max((frame for frame in self.run.recording.frames
                    if frame.start_id == start_id), key=lambda frame: frame.tick)
        return {topic for topic in self.run.message_ids
                if topic in starts or not last.inputs.get(topic, 0)}

    def _taken(self, topic: str, start_id: str) -> tuple[Messages, tuple[bytes, ...]]:
        """Return the recorded messages on `topic` that node start `start_id` took, in order.

        Each publisher's from the first the node took on (its frames' input starts);
        the answers to its resync in the order the node took them (the order it first
        heard their writers, each answering a node start once; the receipts count no
        other answer). Returned with each one's publisher.
        """
        firsts = self._starts.get(start_id, {}).get(topic, {})
        messages = self.run.inputs[topic]
        taken = [(index, publisher, sequence)
                 for index, (publisher, sequence) in enumerate(self.run.message_ids[topic])
                 if publisher in firsts and sequence >= firsts[publisher]]
        if topic in self._answer_topics:
            order = {publisher: index for index, publisher in enumerate(firsts)}
            taken = sorted((item for item in taken
                            if inputs.answers(messages[item[0]][1], start_id)),
                           key=lambda item: (order[item[1]], item[2]))
        return (messages.subset([index for index, _, _ in taken]),
                tuple(publisher for _, publisher, _ in taken))

    def _apply_inputs(self, engine: Engine, recorded: FrameRecord,
                      applied: dict[str, int]) -> Iterator[str]:
        """Apply what the tick's receipt says the node had received; yield notes on gaps.

        The bag's own order tells when the recorder got a message; the receipt tells
        whether the node had it at the tick. More recorded before the frame than the
        node had is an input that arrived between the two (the receipt places it
        exactly); fewer means the bag lacks messages the node had.
        """
        frame_ns = recorded.received * 1e9
        pending = []
        for topic, messages in self._inputs.items():
            stamps = self._stamps.setdefault(topic, sorted(messages.stamps))
            by_time = bisect.bisect_right(stamps, frame_ns)
            receipts = bool(recorded.inputs) and topic not in self._by_time
            wanted = (self._base[topic] + recorded.inputs[topic] if receipts
                      and topic in recorded.inputs else applied[topic] if receipts
                      else max(by_time, applied[topic]))
            if wanted > len(messages):
                undecodable = self.run.undecodable.get(topic, 0)
                cause = (f'{undecodable} in the bag rosbags cannot decode' if undecodable
                         else f'the recorder missed {wanted - len(messages)}')
                yield (f'{topic}: the node had received {wanted} messages, the bag holds '
                       f'{len(messages)} ({cause})')
                wanted = len(messages)
            elif wanted > by_time and receipts:
                yield (f'{topic}: the node had received {wanted} messages, the bag only '
                       f'{by_time} before this frame (missed by the recorder, or late to it)')
            elif wanted < by_time and receipts:
                self.late[topic] = self.late.get(topic, 0) + 1
            publishers = self._publishers.get(topic)
            pending += [(stamp_ns, topic, msg,
                         None if publishers is None else publishers[index])
                        for index, (stamp_ns, msg) in enumerate(
                            messages[applied[topic]:wanted], applied[topic])]
            applied[topic] = max(applied[topic], wanted)
        pending, unordered = self._as_taken(pending, recorded)
        if unordered:
            yield unordered
        for stamp_ns, topic, msg, publisher in pending:
            arrival = Arrival(stamp_ns * 1e-9, self._observe.receipt(msg, recorded.stamp_ns * 1e-9),
                              publisher or b'')
            self._apply(engine, topic, msg, arrival)
            self._note_stamps(topic, msg)
        for topic, received in recorded.inputs.items():
            if received and topic not in self.run.inputs:
                yield (f'{topic}: the node had received {received} messages, the bag holds '
                       'none (the recorder never subscribed: a publisher gone before the '
                       "recorder's discovery reached it, or a topic left out)")
        if not recorded.inputs:
            yield 'no receipt in the frame: inputs applied by bag time (approximate)'
        elif self._by_time:
            yield ('a restarted node: its inputs applied by bag time (approximate: where its '
                   'subscriptions began to take is not in the bag), its answers by receipt')
        yield from self._unstamped_notes()

    def _as_taken(self, pending: list[tuple], recorded: FrameRecord) -> tuple[list[tuple], str]:
        """Return the tick's messages in the order the node took them, and a note if unsure.

        Several publishers (on one topic or several: typed-topic sources and the board may
        write one key, the log numbers events as they come) are interleaved as the
        frame's runs say; each publisher's own messages keep their order. The writers'
        answers go last, in the order taken: the node applies them after the tick's live
        inputs (engine/engine.py apply_answers). Where the runs do not say it (a bag without
        message ids, a frame of a node that reports no order, or one that lost it), the
        bag's receive order stands in, and the note says so.
        """
        pending.sort(key=lambda taken: taken[0])
        answers, inert, live = [], [], []
        for taken in pending:
            topic = taken[1]
            (answers if topic in self._answer_topics else
             inert if self.run.input_types[topic] in INERT_INPUTS else live).append(taken)
        publishers = {taken[3] for taken in live}
        if len(publishers) < 2:
            return live + inert + answers, ''
        queues: dict[bytes, collections.deque] = {}
        for taken in live:
            queues.setdefault(taken[3], collections.deque()).append(taken)
        runs = self._runs(recorded)
        counts = collections.Counter()
        for publisher, count in runs or ():
            counts[publisher] += count
        if runs is None or None in queues or counts != {p: len(q) for p, q in queues.items()}:
            note = '' if not recorded.input_starts else (
                f'{len(live)} messages of {len(publishers)} publishers taken since the last '
                "frame: the order the node took them in is not in the frame's receipt (or not "
                "for these messages); the bag's receive order stands in")
            return live + inert + answers, note
        ordered = [queues[publisher].popleft() for publisher, count in runs
                   for _ in range(count)]
        return ordered + inert + answers, ''

    def _runs(self, recorded: FrameRecord) -> list[tuple[bytes, int]] | None:
        """Return the frame's runs (publisher, count) on the topics the replay tells apart.

        None when a run names no input start (a damaged receipt).
        """
        starts, runs = recorded.input_starts, []
        for index, count in recorded.taken:
            if index >= len(starts):
                return None
            topic, publisher, _ = starts[index]
            if topic in self._publishers and topic not in self._answer_topics:
                runs.append((publisher, count))
        return runs

    def _note_stamps(self, topic: str, msg) -> None:
        """Note what of `msg` the node stamped on receipt (its stamps are zero)."""
        msgtype = self.run.input_types[topic]
        if msgtype.endswith('/BoardUpdate'):
            header = _is_zero(msg.header.stamp)
            for key in msg.removed_keys:
                self._unstamped_keys.pop(key, None)
            for entry in msg.entries:
                if header and _is_zero(entry.stamp):
                    self._unstamped_keys[entry.key] = None
                else:
                    self._unstamped_keys.pop(entry.key, None)
        elif msgtype.endswith('/LogEvent') and _is_zero(msg.header.stamp):
            self._unstamped_events += 1

    def _unstamped_notes(self) -> Iterator[str]:
        """Say which inputs on the board or in the log the node stamped on receipt."""
        keys = list(self._unstamped_keys)
        why = ('the node stamped them when it took them, this replay when the recorder did: '
               'stamp the entries or the header for an exact replay')
        if keys:
            shown = ', '.join(keys[:3]) + (f' and {len(keys) - 3} more' if len(keys) > 3 else '')
            yield f'board: {len(keys)} key(s) set without a stamp ({shown}): {why}'
        if self._unstamped_events:
            yield f'log: {self._unstamped_events} event(s) without a stamp: {why}'

    def _apply(self, engine: Engine, topic: str, msg, arrival: Arrival) -> None:
        """Hand one input message to the engine's door the node's callback hands it to."""
        msgtype = self.run.input_types[topic]
        if topic in self._specs:
            engine.take_source(self._specs[topic].topic, arrival, msg)
        elif msgtype.endswith('/BoardUpdate'):
            engine.take_board(arrival, lambda now, limit: inputs.board_batch_from_msg(
                msg, now, True, limit))
        elif msgtype.endswith('/ResyncAnswer'):
            engine.take_answer(arrival, lambda now, limit: inputs.answer_from_msg(
                msg, now, self._kinds, limit))
        elif msgtype.endswith('/LogEvent'):
            engine.take_event(arrival, lambda now, limit: inputs.event_from_msg(
                msg, now, self._kinds, limit))
        elif msgtype.endswith('/OccupancyGrid'):
            engine.take_map(arrival, lambda map_frame: inputs.grid_from_msg(msg, map_frame))
        elif topic == self._pose_topic:
            engine.take_pose(arrival, lambda map_frame: self._pose_convert(msg, map_frame))
        elif msgtype in INERT_INPUTS and engine.config.trigger_topic:
            engine.take_trigger(arrival)

    def _runtime_changes(self, changes: list, recorded: FrameRecord,
                         engine: Engine) -> list[str]:
        """Apply parameter changes the node made at runtime before this tick (node clock)."""
        notes = []
        while changes and (changes[0].stamp_ns <= first_tick_ns(self.run)
                           or changes[0].stamp_ns < recorded.stamp_ns):
            change = changes.pop(0)
            if change.stamp_ns <= first_tick_ns(self.run):
                continue  # part of the configuration the replay started from
            settings = self.settings.with_values(
                {k: v for k, v in change.values.items() if v is not None}, 'runtime change')
            engine.reconfigure(settings.config, settings.manifests(), tick=recorded.tick)
            self.settings = settings
            notes.append('parameters set at runtime: ' + ', '.join(
                f'{k}={v!r}' for k, v in change.values.items()))
        return notes


def recorded_writers(run: Run) -> dict[bytes, str]:
    """Return {publisher gid: its node} as the recorder's graph showed them ({}: not recorded)."""
    try:
        return {bytes.fromhex(gid): node
                for gid, node in json.loads(run.custom_data.get(WRITERS_KEY, '{}')).items()}
    except (ValueError, AttributeError) as error:
        raise ReplayError(f'bag metadata {WRITERS_KEY}: {error}') from None


def replay_sources(path: str, node: str) -> dict[str, SourceSpec]:
    """Return the node's sources (its `sources_file`) by resolved topic; {} without one.

    Validated against rosbags' message types, as the node validated them against its own.
    """
    if not path:
        return {}
    try:
        specs = load_sources(path, typestore_describe(full_typestore()))
    except SourceError as error:
        raise ReplayError(f'the node took typed-topic sources: {error}') from None
    namespace, _, name = node.rpartition('/')
    resolved = {}
    for spec in specs:
        topic = spec.topic
        if topic.startswith('~'):
            topic = f'{namespace}/{name}{topic[1:]}'
        elif not topic.startswith('/'):
            topic = f'{namespace}/{topic}'
        resolved[topic] = spec
    return resolved


def typestore_describe(typestore):
    """Return source_map's `Describe` of the message types a rosbags typestore knows."""
    def describe(type_name: str) -> TypeInfo:
        if type_name not in typestore.fielddefs:
            raise LookupError(f'unknown message type {type_name!r} (rosbags has no definition '
                              'of it)')
        constants, fields = typestore.fielddefs[type_name]
        return TypeInfo({name: _field_type(node) for name, node in fields},
                        {name: value for name, _, value in constants})
    return describe


def _field_type(node) -> FieldType:
    """Return a rosbags field definition (nodetype, details) as a FieldType."""
    nodetype, details = node
    if nodetype.name in ('ARRAY', 'SEQUENCE'):
        return FieldType(_field_type(details[0]).base, True)
    if nodetype.name == 'NAME':
        return FieldType(details)
    return FieldType(details[0])


class _Observer:
    """Say what time the node observed on its timeline at each input's receipt.

    The node observes its clock when a message arrives; the bag holds the recorder's
    receive time, which may run on another clock, so the replay observes the message's
    own header stamp instead (the sender's time on the same sim or ROS clock), never
    past the tick that took it and never backwards (a late message is no clock reset):
    not before the node's start, the latest receipt nor the tick before it, which the
    node observed too.
    """

    def __init__(self, started: float):
        self._latest = started

    def receipt(self, msg, tick_s: float) -> float | None:
        """Return the time [s] to observe at the receipt of `msg` before tick `tick_s` (None)."""
        header = getattr(msg, 'header', None)
        if header is None:
            return None
        stamp = min(inputs.seconds_from_time(header.stamp), tick_s)
        if stamp > 0.0 and stamp > self._latest:
            self._latest = stamp
            return stamp
        return None

    def ticked(self, tick_s: float) -> None:
        """Note a tick at ROS time `tick_s` [s]: a later receipt stamped before it is late."""
        if tick_s > self._latest:
            self._latest = tick_s


def replay(run: Run, settings: Settings, packs: bool = True) -> Iterator[Step]:
    """Yield the replayed steps of `run` under `settings` (`packs`: see `Replay.steps`)."""
    return Replay(run, settings).steps(packs)


# -- comparing packs ---------------------------------------------------------------


def recorded_keys(pack: PackRecord) -> set[str]:
    """Return the item keys of a recorded pack, events as `event:<KIND>:<key>@<stamp>`.

    The map window counts as one key naming its size, `map <width>x<height> cells`.
    """
    height, width = pack.map_window.cells.shape
    return ({item.key for item in pack.items}
            | {f'event:{e.kind}:{e.key}@{e.stamp:.3f}' for e in pack.events}
            | ({_map_key(width, height)} if pack.map_window.cells.size else set()))


def replayed_keys(frame: Frame, cabin: str) -> set[str]:
    """Return the keys of a replayed pack in the form of `recorded_keys`."""
    pack = frame.packs.get(cabin)
    if pack is None:
        return set()
    window = pack.map_window
    return ({item.key for item in pack.items}
            | {f'event:{e.kind.value}:{e.key}@{e.stamp:.3f}' for e in pack.events}
            | ({_map_key(window.data.shape[1], window.data.shape[0])} if window is not None
               else set()))


def _map_key(width: int, height: int) -> str:
    return f'map {width}x{height} cells'


def pack_differences(step: Step) -> list[str]:
    """Return, per cabin that disagrees, what the replayed pack has that the recorded lacks."""
    lines = []
    for cabin, recorded in step.recorded.packs.items():
        replayed = step.frame.packs.get(cabin)
        if replayed is None:
            lines.append(f'{cabin}: no pack in the replay (cabin not in the manifests)')
            continue
        if replayed.digest == recorded.digest:
            continue
        if not step.packs_read:
            lines.append(f'{cabin}: the digests differ (the recorded pack was not read: '
                         'replay with its packs to see how)')
            continue
        extra = sorted(replayed_keys(step.frame, cabin) - recorded_keys(recorded))
        lacking = sorted(recorded_keys(recorded) - replayed_keys(step.frame, cabin))
        values = sorted(item.key for item in replayed.items
                        if (old := recorded.item(item.key)) is not None
                        and old.value != _json(item.value))
        missing = ({(m.key, m.reason) for m in recorded.missing}
                   ^ {(m.key, m.reason.value) for m in replayed.missing})
        counted = ({(s.pattern, s.reason, s.count) for s in recorded.summaries}
                   ^ {(s.pattern, s.reason.value, s.count) for s in replayed.summaries})
        parts = [f'+{", +".join(extra)}' if extra else '',
                 f'-{", -".join(lacking)}' if lacking else '',
                 f'values differ: {", ".join(values)}' if values else '',
                 f'missing differ: {sorted(missing)}' if missing else '',
                 f'summaries differ: {sorted(counted)}' if counted else '']
        lines.append(f'{cabin}: ' + ('; '.join(p for p in parts if p) or
                                     'same keys and values (stamps, importance, the map or '
                                     "the events' numbers, which follow their arrival, differ)"))
    return lines


def _json(value: Any) -> str:
    """Return the compact JSON text the node publishes for an item value."""
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


# -- agreement and what-if -----------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """A tick whose replayed frame differs from the recorded one, and what may explain it."""

    tick: int
    notes: tuple[str, ...]
    differences: tuple[str, ...]


@dataclass(frozen=True)
class Agreement:
    """How many recorded ticks the replay reproduced, and every tick it did not."""

    ticks: int
    agreeing: int
    mismatches: tuple[Mismatch, ...]
    late: Mapping[str, int] = field(default_factory=dict)   # see Replay.late

    @property
    def share(self) -> float:
        """Return the share of agreeing ticks (1.0 for a run without frames)."""
        return self.agreeing / self.ticks if self.ticks else 1.0


class Agreeing:
    """Compare each replayed frame's digest with the recorded one, step by step."""

    def __init__(self):
        self.ticks = self.agreeing = 0
        self.mismatches: list[Mismatch] = []

    def __call__(self, step: Step) -> None:
        """Compare one step."""
        self.ticks += 1
        if step.agrees:
            self.agreeing += 1
        else:
            self.mismatches.append(Mismatch(step.recorded.tick, step.notes,
                                            tuple(pack_differences(step))))

    def result(self, replayer: Replay) -> Agreement:
        """Return the agreement of the steps seen (`replayer`: the replay that made them)."""
        return Agreement(self.ticks, self.agreeing, tuple(self.mismatches), dict(replayer.late))


def replay_into(run: Run, settings: Settings, *watchers: Callable[[Step], None],
                packs: bool = True) -> Replay:
    """Replay `run` once, handing every step to each of `watchers` in turn; return the replay.

    One pass serves several readings of the same replay (the archaeology, the agreement,
    the pressure): each watcher reads a step while it is live. `packs`: see `Replay.steps`.
    """
    replayer = Replay(run, settings)
    for step in replayer.steps(packs):
        for watch in watchers:
            watch(step)
    return replayer


def agreement(run: Run, settings: Settings) -> Agreement:
    """Replay `run` and compare every replayed frame's digest with the recorded one."""
    agreeing = Agreeing()
    return agreeing.result(replay_into(run, settings, agreeing))


@dataclass(frozen=True)
class PackChange:
    """A key present (`sign` '+') or absent ('-') in a cabin's what-if packs, unlike the recording.

    `why` is the what-if pack's reason for an absent key at its first tick ('' if none).
    """

    cabin: str
    key: str
    sign: str
    ticks: tuple[int, ...]
    why: str = ''


@dataclass(frozen=True)
class WhatIf:
    """What the changed core would have served, tick by tick, against the recording."""

    ticks: int
    changes: tuple[PackChange, ...]
    alarm_ticks: tuple[int, ...]            # capacity alarm in the what-if
    recorded_alarm_ticks: tuple[int, ...]   # capacity alarm in the exact replay
    evictions: int
    recorded_evictions: int


def what_if(run: Run, recorded: Settings, changed: Settings,
            cabin: str | None = None) -> WhatIf:
    """Replay `run` with `changed` and exactly, side by side; compare packs with the recording."""
    found: dict[tuple[str, str, str], list[int]] = {}
    why: dict[tuple[str, str, str], str] = {}
    alarms, recorded_alarms = [], []
    evictions = recorded_evictions = ticks = 0
    for exact, step in zip(replay(run, recorded, packs=False), replay(run, changed)):
        ticks += 1
        tick = step.recorded.tick
        evictions += len(step.frame.evictions)
        recorded_evictions += len(exact.frame.evictions)
        if step.frame.capacity_alarm:
            alarms.append(tick)
        if exact.frame.capacity_alarm:
            recorded_alarms.append(tick)
        for name, pack in step.recorded.packs.items():
            if cabin is not None and name != cabin:
                continue
            then, now = recorded_keys(pack), replayed_keys(step.frame, name)
            for sign, keys in (('+', now - then), ('-', then - now)):
                for key in keys:
                    found.setdefault((name, key, sign), []).append(tick)
                    if sign == '-' and (name, key, sign) not in why:
                        why[(name, key, sign)] = _absent_reason(step.frame, name, key)
    changes = tuple(PackChange(name, key, sign, tuple(ticks_of), why.get((name, key, sign), ''))
                    for (name, key, sign), ticks_of in sorted(found.items()))
    return WhatIf(ticks, changes, tuple(alarms), tuple(recorded_alarms), evictions,
                  recorded_evictions)


def _absent_reason(frame: Frame, cabin: str, key: str) -> str:
    """Return 'REASON: detail' for a key absent from a replayed pack ('' when not recorded)."""
    pack = frame.packs.get(cabin)
    if pack is None:
        return 'cabin not configured'
    missing = pack.absent.get(key) or next((m for m in pack.missing if m.key == key), None)
    return '' if missing is None else f'{missing.reason.value}: {missing.detail}'


# -- text ---------------------------------------------------------------------------

MISMATCHES_SHOWN = 10
CHANGES_SHOWN = 12


def tick_text(ticks) -> str:
    """Return 'tick 4', 'ticks 4-9' or '5 ticks (1-3, 7, 9)' for ascending ticks."""
    ticks = list(ticks)
    text = describe_ticks(ticks)
    if len(ticks) == 1:
        return f'tick {text}'
    if ',' in text:
        head = ', '.join(text.split(', ')[:3])
        more = ', ...' if text.count(',') > 2 else ''
        return f'{len(ticks)} ticks ({head}{more})'
    return f'ticks {text}'


def format_agreement(result: Agreement, path: str | Path, settings: Settings) -> str:
    """Return the share of agreeing digests and an explanation of every disagreement."""
    lines = [f'replay of {path}: {result.ticks} ticks through the core; configuration from '
             f'{settings.source}',
             f'digests agree: {result.agreeing}/{result.ticks} ticks ({100 * result.share:.1f} %)']
    for topic, ticks in result.late.items():
        lines.append(f'  {topic}: at {ticks} tick(s) the bag held a message from before the '
                     'frame that the node took only after the tick; the receipts placed it')
    for mismatch in result.mismatches[:MISMATCHES_SHOWN]:
        lines.append(f'  tick {mismatch.tick}: digest differs')
        lines += [f'    input: {note}' for note in mismatch.notes]
        lines += [f'    {difference}' for difference in mismatch.differences]
        if not mismatch.notes:
            lines.append('    no input gap or configuration change explains it: the replay '
                         'and the node disagree (report it)')
    if len(result.mismatches) > MISMATCHES_SHOWN:
        lines.append(f'  ... and {len(result.mismatches) - MISMATCHES_SHOWN} more ticks')
    return '\n'.join(lines)


def format_what_if(result: WhatIf, path: str | Path, changed: Settings) -> str:
    """Return per cabin which items the changed core would have served or not, by ticks."""
    lines = [f'what-if replay of {path}: {changed.source}',
             '(the recorded inputs through the changed core; the decisions are not re-run)']
    by_cabin: dict[str, list[PackChange]] = {}
    for change in result.changes:
        by_cabin.setdefault(change.cabin, []).append(change)
    if not by_cabin:
        lines.append('every pack holds the same items as recorded')
    for cabin, changes in by_cabin.items():
        changes.sort(key=lambda c: (-len(c.ticks), c.key))
        lines.append(f'{cabin}: {len(changes)} item(s) change')
        for change in changes[:CHANGES_SHOWN]:
            state = 'present' if change.sign == '+' else 'absent'
            why = f' ({change.why})' if change.why else ''
            lines.append(f'  {change.sign} {change.key}: {state} at {tick_text(change.ticks)}'
                         f'{why}')
        if len(changes) > CHANGES_SHOWN:
            lines.append(f'  ... and {len(changes) - CHANGES_SHOWN} more')
    lines.append(f'evictions: {result.evictions} (recorded {result.recorded_evictions})')
    lines.append('capacity alarm: ' + (tick_text(result.alarm_ticks) if result.alarm_ticks
                                       else 'never')
                 + ' (recorded: ' + (tick_text(result.recorded_alarm_ticks)
                                     if result.recorded_alarm_ticks else 'never') + ')')
    return '\n'.join(lines)
