"""The working-memory lifecycle node: its lifecycle, its entities and short callbacks.

Each callback converts (ros/conversions.py), hands over to the core and publishes;
the logic lives in working_memory/core. The node composes: its parameter table
(ros/parameters.py `NodeParameters`), the core it builds at configure (ros/memory.py),
its tick timer (ros/ticking.py), its `/diagnostics` (ros/diagnostics_topic.py), the
map-window and view topics (ros/window_topics.py, ros/views.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import ClockChange, JumpHandle, JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import InvalidTopicNameException, ParameterException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.service import Service
from rclpy.subscription import Subscription
from std_msgs.msg import Empty

from working_memory.core.explain import explain
from working_memory.core.frames import Frame
from working_memory.msg import (BoardUpdate, ContextFrame, EvictionBatch, LogEvent, Resync,
                                ResyncAnswer)
from working_memory.ros import collector, conversions as conv
from working_memory.ros import qos
from working_memory.ros.diagnostics import Status, lifecycle_status
from working_memory.ros.diagnostics_topic import DiagnosticsTopic
from working_memory.ros.memory import (ANSWER_TOPIC, Memory, REQUEST_TOPIC, build_memory,
                                       check_distinct_inputs, event_window_s, pose_requirers,
                                       pose_topic, tick_description)
from working_memory.ros.ownership import Ownership
from working_memory.ros.parameters import NodeParameters, changed
from working_memory.ros.params import NodeConfig
from working_memory.ros.params_files import parameter_args
from working_memory.ros.requirements import describe_unsourced
from working_memory.ros.source_map import load_sources
from working_memory.ros.sources import describe, subscribe_sources
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.ticking import EXECUTORS, Intake, TickTimer, make_executor
from working_memory.ros.twins import TwinCheck
from working_memory.ros.views import Views
from working_memory.ros.window_topics import WindowTopics
from working_memory.srv import Assemble, Explain

NOT_ACTIVE = 'node is not active'
# Jumps that switch clocks (use_sim_time set at runtime), not a reset of the same clock.
CLOCK_SWITCHES = (ClockChange.ROS_TIME_ACTIVATED, ClockChange.ROS_TIME_DEACTIVATED)


class WorkingMemoryNode(LifecycleNode):
    """Assemble each cabin's frozen context once per tick, publish it and answer from it.

    ROS Parameters:
        The table in `working_memory.ros.params.PARAMS` (tick_hz, capacity, ...), and
        `cabins.<cabin>.<field>` for each cabin in `cabin_names` (fields of
        `core.manifest.MANIFEST_FIELDS`; only `cabins.<cabin>.drop` changes at runtime).
        Declared in the constructor (a manifests_file cabin's drop at configure:
        ros/parameters.py); values take effect at configure; runtime sets are validated,
        refusals name the parameter, and applied between ticks.
    Subscriptions:
        `board` (BoardUpdate), `map` (nav_msgs/OccupancyGrid, latched), `log` (LogEvent),
        `odom` (nav_msgs/Odometry) or `pose` (geometry_msgs/PoseStamped) per `pose_source`,
        `trigger_topic` (std_msgs/Empty) when set; each source's topic of `sources_file`
        (its own message type, ros/sources.py; taken as `board` and `log` are), mapped to
        board entries and events.
        Inputs are taken while inactive too: the board mirror must not miss a change
        while the node is paused. All but the trigger
        belong to the helper node `<name>_inputs` and are taken in batches (ros/ticking.py
        `Intake`: far less CPU at a 1 kHz board than one executor wake-up per message,
        and each message's info, whose publisher and number the receipts name).
    Publishers (lifecycle: silent unless active):
        `~/frame` (ContextFrame, reliable + transient local + keep last 1),
        `~/evictions` (EvictionBatch, in ticks with evictions or readmissions),
        `~/<cabin>/window` (MapWindow, with map_windows reference: when it changes,
        reliable + transient local + keep last 4),
    Resync (from configure to cleanup, unless resync_timeout_s is 0; core/resync.py):
        publishes `resync/request` (Resync, reliable + transient local + keep last 1) once
        per configure, asking the writers for the truth they hold; takes their answers on
        `resync/answer` (ResyncAnswer, reliable + transient local, on `<name>_inputs`).
    Publishers (every state):
        `/diagnostics` (diagnostic_msgs/DiagnosticArray), statuses named
        `<fully qualified node name>: <status>`: per tick while active, else a
        `lifecycle` status every diagnostics_period_s (ERROR after a failed configure).
    Services (answer only while active):
        `~/assemble` (Assemble), `~/explain` (Explain), from the retained frozen frames.
    """

    def __init__(self, node_name: str = 'working_memory', **kwargs: Any):
        super().__init__(node_name, **kwargs)
        self._memory: Memory | None = None
        self._output: conv.FrameOutput | None = None   # the frames as they go out
        self._active = False
        self._entities: list[Subscription | Service] = []
        self._jump_handle: JumpHandle | None = None
        self._ticker: TickTimer | None = None   # while active, unless a trigger topic ticks
        self._intake: Intake | None = None      # board and log, while configured
        self._frame_pub = self._evictions_pub = self._resync_pub = None
        self._twins: TwinCheck | None = None   # another node of this name, while configured
        self._ownership: Ownership | None = None   # owned board keys, while configured
        self._ask: Resync | None = None   # the resync request of this configure
        # A configure after one that succeeded (a cleanup between) is a restart; the first
        # is the process's start, even a respawned one (it cannot know).
        self._configured_before = False
        # Why the node is unconfigured (a failed configure, an error), for /diagnostics.
        self._failure: str | None = None
        self._finalized = False
        self._views: Views | None = None
        self._windows: WindowTopics | None = None
        # What rcl merged for this node: process arguments first, then the node's own.
        files, overridden = parameter_args(
            [*(sys.argv if kwargs.get('use_global_arguments', True) else ()),
             *(kwargs.get('cli_args') or ())])
        overridden |= {p.name for p in kwargs.get('parameter_overrides') or ()}
        self._table = NodeParameters(self, files, overridden)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._on_parameters_set)
        self._diagnostics = DiagnosticsTopic(
            self, self.get_parameter('diagnostics_period_s').value, self._on_idle)
        # Their QoS events are not reported: no handlers in the executor's wait sets.
        qos.drop_event_handlers(self, self.publishers)

    # -- lifecycle ------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Validate parameters and overrides, load manifests, build the core and the entities."""
        try:
            config, manifests = self._table.read()
            sources = load_sources(config.sources_file, describe) if config.sources_file else ()
            self._memory = build_memory(config, manifests, self._now(), sources,
                                        restart=self._configured_before)
            self._output = conv.FrameOutput()
            # Before subscribing: one topic under two types fails in the middleware.
            check_distinct_inputs(self._resolved_inputs())
            self._create_entities(config)
            self._memory.resolved_names = {topic: self.resolve_topic_name(topic)
                                           for topic in self._memory.health.received_counts()}
            # The writers of owned keys: on board, and answering a resync (if asked).
            topics = [self._memory.resolved_names[topic] for topic in ('board', ANSWER_TOPIC)
                      if topic in self._memory.resolved_names]
            self._ownership = Ownership(self._table.owners(config), lambda: [
                publisher for topic in topics for publisher in self._publishers_of(topic)])
            self._views = Views(self, manifests, config.map_frame) if config.views else None
            if config.map_windows == 'reference':
                self._windows = WindowTopics(self, manifests, config.map_frame)
            qos.drop_event_handlers(self, [publisher for publisher in self.publishers if publisher
                                           not in (self._frame_pub, self._evictions_pub)])
        except (ParameterException, ValueError, OSError) as error:
            # ManifestError is a ValueError; each names the parameter or field at fault.
            self.get_logger().error(f'configure failed: {error}')
            self._release()
            self._failure = f'configure failed: {error}'
            self._publish_lifecycle()
            return TransitionCallbackReturn.FAILURE
        self._failure = None
        self._configured_before = True
        self.get_logger().info(f'configured: cabins {", ".join(manifests)}, '
                               f'capacity {config.capacity}, ' + tick_description(config))
        if self._memory.unsourced:
            self.get_logger().warning(
                'required keys no source writes (a writer on board must): '
                + describe_unsourced(self._memory.unsourced))
        requiring = pose_requirers(config, manifests)
        if requiring:
            self.get_logger().warning(
                f'pose_source {config.pose_source}: the {pose_topic(config)} topic places '
                f'the map windows; {", ".join(requiring)} require the board key '
                f'{config.pose_key!r}, which only the board gives (map the topic to it as a '
                f'source, sources_file, or leave it out of required)')
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start ticking (the timer, or accept trigger messages) and enable the publishers."""
        self._start_ticking()
        self._active = True
        # A stall counts from here; no trigger interval is known yet.
        self._diagnostics.ticked(self._now(), activated=True)
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop ticking; the board mirror, event log and frames are kept."""
        self._active = False
        self._stop_ticking()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop the core state and every entity; parameters keep their values."""
        self._release()
        return super().on_cleanup(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything from whichever state the node is in; a last lifecycle status."""
        self._release()
        self._finalized = True
        self._diagnostics.destroy()
        self._publish_lifecycle()
        return super().on_shutdown(state)

    @property
    def finalized(self) -> bool:
        """True once shut down (the lifecycle's finalized state): the process may end."""
        return self._finalized

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything so the node can be configured again."""
        self.get_logger().error(f'error while {state.label}: releasing state')
        self._release()
        self._failure = f'error while {state.label}: released'
        return TransitionCallbackReturn.SUCCESS

    # -- entities -------------------------------------------------------------

    def _create_entities(self, config: NodeConfig) -> None:
        """Create subscriptions, publishers, services and the clock-jump handler."""
        # QoS events are counted for /diagnostics and logged.
        events = (self._memory.health, self.get_logger())
        # Board and log are taken in batches on the helper node `<name>_inputs` (Intake).
        self._intake = Intake(self, self._on_intake)
        # The board taken serialized: read in place, without building message objects.
        self._intake.subscribe(BoardUpdate, 'board', self._on_board, qos.input_qos(),
                               qos.input_events('board', *events), raw=True)
        self._intake.subscribe(LogEvent, 'log', self._on_log, qos.input_qos(),
                               qos.input_events('log', *events))
        if config.resync_timeout_s > 0.0:
            self._intake.subscribe(ResyncAnswer, ANSWER_TOPIC, self._on_answer,
                                   qos.latched_qos(qos.ANSWERS_KEPT),
                                   qos.input_events(ANSWER_TOPIC, *events))
        # Map and pose too: the intake hands every message its info (the EventsExecutor
        # cannot), whose publisher and number the frame's receipts name (input_starts).
        self._intake.subscribe(OccupancyGrid, 'map', self._on_map, qos.map_qos(),
                               qos.input_events('map', *events))
        topic = pose_topic(config)
        if topic:
            self._intake.subscribe(Odometry if topic == 'odom' else PoseStamped, topic,
                                   self._on_pose, qos.pose_qos(),
                                   qos.input_events(topic, *events))
        self._create_sources(events)
        if config.trigger_topic:
            try:
                self._entities.append(self.create_subscription(
                    Empty, config.trigger_topic, self._on_trigger, qos.stream_qos(depth=10),
                    event_callbacks=qos.input_events(config.trigger_topic, *events)))
            except InvalidTopicNameException as error:
                raise ValueError(f'trigger_topic: {error}') from None
        # A second node of this name is told by a second publisher of this topic (ros/twins.py).
        frame_topic = self.resolve_topic_name('~/frame')
        self._twins = TwinCheck(self.get_fully_qualified_name(), frame_topic,
                                lambda: self._publishers_of(frame_topic))
        self._frame_pub = self.create_lifecycle_publisher(
            ContextFrame, '~/frame', qos.frame_qos(),
            event_callbacks=qos.output_events('~/frame', *events))
        self._twins.created()
        self._evictions_pub = self.create_lifecycle_publisher(
            EvictionBatch, '~/evictions', qos.stream_qos(),
            event_callbacks=qos.output_events('~/evictions', *events))
        if config.resync_timeout_s > 0.0:
            # Asked once the subscriptions exist: an answer cannot come before they do.
            self._resync_pub = self.create_publisher(Resync, REQUEST_TOPIC, qos.latched_qos(1))
            resync = self._memory.resync
            self._ask = conv.resync_msg(self.get_fully_qualified_name(), resync.started,
                                        event_window_s(self._memory.manifests), resync.start_id)
            self._resync_pub.publish(self._ask)
        self._entities += [
            self.create_service(Assemble, '~/assemble', self._handle_assemble),
            self.create_service(Explain, '~/explain', self._handle_explain),
        ]
        # Any backward jump (a simulation reset) starts a new epoch; a switch to or from
        # ROS time (use_sim_time set at runtime) moves the tick grid.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=True),
            post_callback=self._on_clock_jump)

    def _resolved_inputs(self) -> dict[str, str]:
        """Return {input topic: resolved name}; a name that is no topic is left to its entity."""
        resolved = {}
        for topic in self._memory.health.received_counts():
            try:
                resolved[topic] = self.resolve_topic_name(topic)
            except (InvalidTopicNameException, RuntimeError):
                continue   # rcl's RCLError (a RuntimeError) for a name it cannot expand
        return resolved

    def _create_sources(self, events: tuple) -> None:
        """Subscribe to the typed-topic sources (sources_file), each with its own type."""
        specs = [source.spec for source in self._memory.sources.maps.values()]
        subscribe_sources(self._intake, self, specs, self._on_source, self._on_undecodable,
                          lambda topic: qos.input_events(topic, *events))

    def _release(self) -> None:
        """Stop ticking, destroy every entity created in configure and drop the core state."""
        self._active = False
        self._stop_ticking()
        if self._jump_handle is not None:
            self._jump_handle.unregister()
            self._jump_handle = None
        for entity in self._entities:
            self._destroy(entity)
        self._entities.clear()
        if self._intake is not None:
            self._intake.destroy()
            self._intake = None
        for publisher in (self._frame_pub, self._evictions_pub):
            if publisher is not None:
                self.destroy_lifecycle_publisher(publisher)
        if self._resync_pub is not None:
            self.destroy_publisher(self._resync_pub)
        self._frame_pub = self._evictions_pub = self._resync_pub = None
        self._twins = self._ownership = None
        if self._views is not None:
            self._views.destroy()
            self._views = None
        if self._windows is not None:
            self._windows.destroy()
            self._windows = None
        self._memory = None
        self._output = None
        collector.unfreeze()   # what the configured node held may be collected now

    def _destroy(self, entity: Subscription | Service) -> None:
        """Destroy through the node, which also drops a subscription's QoS event handlers."""
        if isinstance(entity, Subscription):
            self.destroy_subscription(entity)
        else:
            self.destroy_service(entity)

    # -- runtime parameters ---------------------------------------------------

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a change; a configured node's with its configuration as a whole."""
        memory = self._memory
        return self._table.check(
            parameters, None if memory is None else (memory.config, memory.manifests))

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        """Apply an accepted change: between two ticks, as callbacks never overlap."""
        # A valid value replaces an override the table refused.
        refused = self._table.refused
        if (self._table.accepted(parameters) and self._memory is None
                and self._table.failed_on_refused):
            # The failure was the refused overrides: what remains of it is what is left.
            self._failure = ('configure failed: ' + '; '.join(refused.values())
                             if refused else None)
            self._publish_lifecycle()
        if not self._finalized and any(
                parameter.name == 'diagnostics_period_s' for parameter in parameters):
            self._diagnostics.restart(self.get_parameter('diagnostics_period_s').value)
        memory = self._memory
        if memory is None:
            return
        old = memory.reconfigure(*changed(memory.config, memory.manifests, parameters))
        if memory.config.tick_hz != old.tick_hz and self._ticker is not None:
            self._stop_ticking()
            self._start_ticking()
        self.get_logger().info('parameters set: ' + ', '.join(
            f'{parameter.name}={parameter.value!r}' for parameter in parameters))

    # -- ticking --------------------------------------------------------------

    def _start_ticking(self) -> None:
        config = self._memory.config
        if not config.trigger_topic:
            self._ticker = TickTimer(self, config.tick_period_s, self._on_tick)

    def _stop_ticking(self) -> None:
        if self._ticker is not None:
            self._ticker.destroy()
            self._ticker = None

    def _on_trigger(self, msg: Empty) -> None:
        self._received(self._memory.config.trigger_topic)
        if self._active:
            self._diagnostics.triggered()
            self._on_tick()

    def _tick_if_due(self) -> None:
        """Tick first if the tick is due but queued behind this callback (ros/ticking.py)."""
        if self._ticker is not None:
            self._ticker.tick_if_due()

    def _on_tick(self) -> None:
        """Assemble and freeze one frame, then publish it, its evictions and diagnostics."""
        started = time.perf_counter()
        memory = self._memory
        config = memory.config
        # What arrived before the tick's time is in its frame; writers' answers after it.
        self._intake.take(Intake.TICK_BUDGET_S)
        memory.apply_answers()
        now = self._now()
        self._diagnostics.ticked(now)
        effective = memory.timebase.observe(now)
        memory.tick += 1
        frame = memory.assembler.assemble(memory.tick, now, memory.board, memory.log,
                                          memory.grid, memory.pose)
        if memory.resync.active:
            frame = memory.resynced(frame, time.monotonic(), self._writers())
            # Asked again every tick until it ends: a latched sample published before a
            # writer matched reaches it only at the next heartbeat (Fast DDS: up to 3 s);
            # a new one goes at once. Writers answer each request once.
            self._resync_pub.publish(self._ask)
        # A window goes out before the first frame that names it (map_windows: reference).
        if self._windows is not None:
            self._windows.publish(frame)
        # The receipt per input topic lets an offline replay apply exactly what this tick saw:
        # how many, from where (input starts) and in which order.
        starts = memory.input_starts()
        self._frame_pub.publish(self._output.frame_bytes(
            frame, config.map_frame, memory.receipts(), self._windows is None,
            memory.resync.started, memory.resync.active, memory.resync.start_id,
            starts, memory.taken_order(starts), restart=memory.resync.restart))
        # Retained for ~/assemble and ~/explain once it is out (no callback runs in between).
        memory.frames.publish(frame)
        if self._views is not None:
            self._views.publish(frame, memory.pose)
        evictions = memory.evictions(frame, effective)
        if evictions or frame.readmitted:
            self._evictions_pub.publish(conv.eviction_batch_msg(
                frame.tick, evictions, frame.readmitted, now, frame.effective))
        if memory.diagnostics_due(effective):
            self._diagnostics.publish([self._lifecycle_status(),
                                       *memory.statuses(frame, effective),
                                       self._twin_status(), *self._owners_status()], now)
        period = None if config.trigger_topic else config.tick_period_s
        memory.health.tick_done(time.perf_counter() - started, period)

    def _writers(self) -> dict[bytes, str]:
        """Return {gid: node name} of the writers that answer a resync (the graph's now)."""
        return {gid: name for name, gid in self._publishers_of(
            self._memory.resolved_names[ANSWER_TOPIC])}

    def _publishers_of(self, topic: str) -> list[tuple[str, bytes]]:
        """Return (fully qualified node name, gid) of each publisher of `topic` in the graph."""
        return [(f'{info.node_namespace.rstrip("/")}/{info.node_name}', bytes(info.endpoint_gid))
                for info in self.get_publishers_info_by_topic(topic)]

    def _owners_status(self) -> list[Status]:
        """Return the `owners` status when owner_names names any, else nothing."""
        ownership = self._ownership
        return [ownership.status()] if ownership is not None and ownership.owners else []

    def _twin_status(self) -> Status:
        """Return the `twins` status; log a newly seen twin as an error."""
        status, new = self._twins.status()
        if new:
            self.get_logger().error(status.message)
        return status

    def _on_idle(self) -> None:
        """Publish the lifecycle status while the node does not tick (ticks publish their own).

        Also while active without ticks (a trigger topic that is silent, sim time without
        /clock): then a WARN says since when and why.
        """
        if not self._active:
            self._publish_lifecycle()
            return
        why = self._diagnostics.stall(self._memory.config, self._now(),
                                      self.get_clock().ros_time_is_active)
        if why is not None:
            self._diagnostics.publish([lifecycle_status('active', self._failure, why),
                                       self._twin_status()], self._now())

    def _publish_lifecycle(self) -> None:
        # A configured node not ticking says already which required keys no source writes.
        required = [] if self._memory is None else [self._memory.required_status(None)]
        twins = [] if self._twins is None else [self._twin_status()]
        self._diagnostics.publish([self._lifecycle_status(), *required, *twins], self._now())

    def _lifecycle_status(self) -> Status:
        if self._finalized:
            state = 'finalized'
        elif self._memory is None:
            state = 'unconfigured'
        else:
            state = 'active' if self._active else 'inactive'
        return lifecycle_status(state, self._failure)

    def _on_clock_jump(self, jump) -> None:
        """Start a new epoch after the clock went backwards and re-arm the tick timer."""
        if jump.clock_change in CLOCK_SWITCHES:
            # use_sim_time set at runtime: the next tick's time judges the timeline as
            # before; the tick grid follows the other clock's times now.
            self._rearm_ticks()
            return
        memory = self._memory
        delta = jump.delta.nanoseconds * 1e-9
        memory.timebase.observe(self._now())
        memory.health.clock_jumped(f'epoch {memory.timebase.epoch}: {delta:+.3f} s')
        self.get_logger().warning(f'clock jumped back {delta:+.3f} s: epoch '
                                  f'{memory.timebase.epoch}')
        self._rearm_ticks()

    def _rearm_ticks(self) -> None:
        if self._ticker is not None:
            # Next tick one period after the jump, whatever the rcl version does.
            self._ticker.rearm()

    # -- inputs -----------------------------------------------------------------

    def _on_intake(self) -> None:
        """Take queued board and log messages between ticks; leave room for a tick."""
        self._tick_if_due()
        self._intake.round(None if self._ticker is None else self._ticker.until_next_ns())

    def _on_board(self, data: bytes, info: dict) -> None:
        memory, now = self._received('board', info)
        try:
            # Values parsed frozen and strict: the board keeps them as they are.
            batch = conv.board_batch_from_bytes(data, now, memory.config.max_value_bytes)
            for error in batch.errors:
                self._reject('board', error)
            self._refuse('board', batch.refused, now)
            memory.take_board(self._owned(batch, info))
        except ValueError as error:
            self._reject('board', str(error))

    def _owned(self, batch: conv.BoardBatch, info: dict) -> conv.BoardBatch:
        """Return `batch` without the owned keys its writer may not write; log each once."""
        batch, first = self._ownership.take(batch, conv.publication(info)[0])
        self._log_refused('board', first)
        return batch

    def _log_refused(self, topic: str, first: list[tuple[str, str, str]]) -> None:
        """Log each writer and owned key refused for the first time."""
        for writer, key, owner in first:
            self.get_logger().warning(f'{topic}: {writer} may not write {key!r} (owner {owner}: '
                                      f'owners.{owner}.nodes); refused, counted on /diagnostics')

    def _on_log(self, msg: LogEvent, info: dict) -> None:
        memory, now = self._received('log', info)
        try:
            memory.take_event(conv.event_from_msg(msg, now, memory.config.max_value_bytes))
        except conv.TooLarge as error:
            self._refuse('log', (error.oversize,), now)
        except ValueError as error:
            self._reject('log', str(error))

    def _on_answer(self, msg: ResyncAnswer, info: dict) -> None:
        """Take a writer's answer to this node's request; counted only then (the receipt)."""
        memory = self._memory
        if not conv.answers(msg, memory.resync.start_id):
            return   # to another node, or a latched answer to an earlier start
        memory, now = self._received(ANSWER_TOPIC, info)
        try:
            answer = conv.answer_from_msg(msg, now, memory.config.max_value_bytes)
        except ValueError as error:
            self._reject(ANSWER_TOPIC, str(error))
            return
        for error in answer.errors:
            self._reject(ANSWER_TOPIC, error)
        self._refuse(ANSWER_TOPIC, answer.refused, now)
        answer, first = self._ownership.take_answer(answer, conv.publication(info)[0])
        self._log_refused(ANSWER_TOPIC, first)
        memory.take_answer(answer)
        if not memory.resync.heard(conv.publication(info)[0]):
            self.get_logger().warning(
                f'{ANSWER_TOPIC}: {msg.writer} answered after the re-reading ended '
                f'({memory.resync.status(time.monotonic())}); taken now')

    def _on_source(self, topic: str, msg: Any, info: dict) -> None:
        """Map a source's message (ros/source_map.py) onto the board and the log."""
        memory, now = self._received(topic, info)
        conversion = memory.sources.convert(topic, msg, now)
        for error in conversion.errors:
            self._reject(topic, error)
        self._refuse(topic, conversion.refused, now)
        try:
            memory.take_source(conversion)
        except ValueError as error:
            self._reject(topic, str(error))

    def _on_undecodable(self, topic: str, error: str, info: dict) -> None:
        memory, _ = self._received(topic, info)
        memory.sources.reject(topic, error)
        self._reject(topic, error)

    def _on_map(self, msg: OccupancyGrid, info: dict) -> None:
        memory, _ = self._received('map', info)
        try:
            memory.grid = conv.grid_from_msg(msg, memory.config.map_frame)
        except ValueError as error:
            self._reject('map', str(error))

    def _on_pose(self, msg: Odometry | PoseStamped, info: dict) -> None:
        topic = pose_topic(self._memory.config)
        memory, _ = self._received(topic, info)
        try:
            memory.pose = conv.pose_from_msg(msg, memory.config.map_frame)
        except ValueError as error:
            self._reject(topic, str(error))

    def _received(self, topic: str, info: dict | None = None) -> tuple[Memory, float]:
        """Count a message on `topic`; return the memory and the ROS time [s] of receipt.

        With its message `info`, a gap in the publisher's sequence numbers counts as lost.
        """
        memory, now = self._memory, self._now()
        memory.health.received(topic, memory.timebase.observe(now),
                               *(conv.publication(info) if info else ()))
        return memory, now

    def _reject(self, topic: str, reason: str) -> None:
        """Count and log bad input on `topic`; the rest of the node goes on as before."""
        self._memory.health.rejected(topic, reason)
        self.get_logger().warning(f'{topic}: rejected input: {reason}',
                                  throttle_duration_sec=1.0)

    def _refuse(self, topic: str, refused: tuple[conv.Oversize, ...], now: float) -> None:
        """Count values refused for their size; log a key's first refusal, not every one."""
        if not refused:
            return
        for oversize in self._memory.refuse(topic, refused, now):
            self.get_logger().warning(
                f'{topic}: rejected input: {oversize.reason}; further refusals of '
                f'{oversize.key!r} are counted on /diagnostics, not logged, until a value of '
                'it is taken')

    # -- services -------------------------------------------------------------

    def _handle_assemble(self, request: Assemble.Request,
                         response: Assemble.Response) -> Assemble.Response:
        self._tick_if_due()
        try:
            query = conv.assemble_query(request)
            pack = self._frame(query.tick).pack(query.cabin)
        except (LookupError, ValueError) as error:
            return conv.failed_response(response, str(error))
        return conv.assemble_response(response, pack, self._memory.config.map_frame,
                                      self._output)

    def _handle_explain(self, request: Explain.Request,
                        response: Explain.Response) -> Explain.Response:
        self._tick_if_due()
        try:
            query = conv.explain_query(request)
            # Only drops change at runtime and packs record them, so the current
            # manifests explain past frames too.
            answer = explain(self._frame(query.tick), self._memory.manifests, query.cabin,
                             query.key, self._memory.log, self._memory.refusals)
            refused = self._ownership.refusal_note(query.key)
            if refused:   # the owned key's writes from others (Who may write what)
                answer = answer._replace(detail=f'{answer.detail}; {refused}')
        except (LookupError, ValueError) as error:
            return conv.failed_response(response, str(error))
        return conv.explain_response(response, answer)

    def _frame(self, tick: int) -> Frame:
        """Return the frozen frame of `tick` (0: latest); LookupError says what is valid."""
        if not self._active:
            raise LookupError(NOT_ACTIVE)
        return self._memory.frames.get(tick)

    def _now(self) -> float:
        """Return the node clock's time [s] (ROS time: /clock under use_sim_time)."""
        return self.get_clock().now().nanoseconds * 1e-9


def main(args: list[str] | None = None) -> int:
    """Run the node; `--autostart` configures and activates it without a lifecycle manager."""
    parser = argparse.ArgumentParser(prog='working_memory_node')
    parser.add_argument('--autostart', action='store_true',
                        help='configure and activate at start')
    parser.add_argument('--executor', choices=EXECUTORS, default='events',
                        help='rclpy executor to spin in (default: %(default)s)')
    options = parser.parse_args(own_arguments(args if args is not None else sys.argv)[1:])

    def autostart(node: WorkingMemoryNode) -> bool:
        return not options.autostart or (
            node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            and node.trigger_activate() == TransitionCallbackReturn.SUCCESS)

    collector.freeze_after_full_collections()
    return run_node(WorkingMemoryNode, args, start=autostart,
                    make_executor=lambda: make_executor(kind=options.executor),
                    finished=lambda node: node.finalized)
