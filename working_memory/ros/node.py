"""The working-memory lifecycle node: a thin adapter between ROS and the pure core.

Callbacks convert (ros/conversions.py), hand over to the core and publish;
the logic lives in working_memory/core.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockChange, ClockType, JumpHandle, JumpThreshold
from rclpy.duration import Duration
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.exceptions import InvalidTopicNameException, ParameterException
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.service import Service
from rclpy.subscription import Subscription
from rclpy.timer import Timer
from rclpy.utilities import remove_ros_args
from std_msgs.msg import Empty

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import EvictionRecord, HalfLifeBlend, ImportanceLRU, WorkingSet
from working_memory.core.explain import explain
from working_memory.core.frames import Frame, FrameNotFound, FrameStore
from working_memory.core.gridmap import GridMap
from working_memory.core.manifest import (Manifest, ManifestError, load_manifests,
                                          manifests_from_params)
from working_memory.core.timebase import TimeBase
from working_memory.msg import BoardUpdate, ContextFrame, EvictionBatch, LogEvent
from working_memory.ros import conversions as conv
from working_memory.ros import qos
from working_memory.ros.diagnostics import (CapacityUse, Health, Status, idle_period_s,
                                            lifecycle_status, stall)
from working_memory.ros.gc_pacing import PACING
from working_memory.ros.params import (CABINS_PREFIX, NodeConfig, PARAMS, SPECS,
                                       cabin_param_specs, cabin_specs, check_known,
                                       check_parameter, check_refused, config_from_values,
                                       drop_cabin, drop_param_spec)
from working_memory.ros.spin import Intake, run_node, seconds_reader
from working_memory.ros.tick_grid import TickGrid, intake_schedule, warm_due
from working_memory.ros.views import Views
from working_memory.ros.window_topics import WindowTopics
from working_memory.srv import Assemble, Explain

NOT_ACTIVE = 'node is not active'
# Board and log are taken in batches (spin.Intake): before each tick, and in rounds
# on the steady clock in every configured state (as often as Intake.pace says), at
# most INTAKE_BUDGET_S [s] per topic each time (less when a tick is due sooner).
INTAKE_BUDGET_S = 0.008
TICK_INTAKE_BUDGET_S = 0.002
# A tick this long [s] after the last one starts cold (other processes have had the CPU's
# caches): it encodes the last frame again first (FrameOutput.warm), before its inputs
# are taken and its time read, so its assembly and encoding run warm; only a frame of at
# most WARM_MAX_BYTES, as re-encoding a large one costs more than it saves (BENCHMARKS.md).
WARM_AFTER_IDLE_S = 0.02
WARM_MAX_BYTES = 16_384
# Jumps that switch clocks (use_sim_time set at runtime), not a reset of the same clock.
CLOCK_SWITCHES = (ClockChange.ROS_TIME_ACTIVATED, ClockChange.ROS_TIME_DEACTIVATED)


@dataclass
class Memory:
    """Everything `on_configure` builds and `on_cleanup` drops: the core and its health."""

    config: NodeConfig
    manifests: dict[str, Manifest]
    board: BoardSnapshot
    log: EventLog
    working_set: WorkingSet
    assembler: Assembler
    frames: FrameStore
    health: Health
    output: conv.FrameOutput
    grid: GridMap | None = None
    pose: tuple[float, float] | None = None
    tick: int = 0
    last_diagnostics: float | None = None
    # Evictions caused between ticks (a smaller capacity set at runtime), published next tick.
    pending_evictions: list[EvictionRecord] = field(default_factory=list)
    # Input topics as resolved for the frame's receipts.
    resolved_names: dict[str, str] = field(default_factory=dict)

    def resolved(self, topic: str, resolve: Callable[[str], str]) -> str:
        """Return `resolve(topic)`, resolved once (names do not change while configured)."""
        name = self.resolved_names.get(topic)
        if name is None:
            name = self.resolved_names[topic] = resolve(topic)
        return name

    @property
    def timebase(self) -> TimeBase:
        """The one effective timeline of ticks, receipts, stamps, evictions: the working set's."""
        return self.working_set.timebase


class WorkingMemoryNode(LifecycleNode):
    """Assemble each cabin's frozen context once per tick, publish it and answer from it.

    ROS Parameters:
        The table in `working_memory.ros.params.PARAMS` (tick_hz, capacity, ...), and
        `cabins.<cabin>.<field>` for each cabin in `cabin_names` (fields of
        `core.manifest.MANIFEST_FIELDS`; only `cabins.<cabin>.drop` changes at runtime).
        Declared in the constructor (a manifests_file cabin's drop at configure, see
        ros/params.py); values take effect at configure; runtime sets are validated,
        refusals name the parameter, and applied between ticks.
    Subscriptions:
        `board` (BoardUpdate), `map` (nav_msgs/OccupancyGrid, latched), `log` (LogEvent),
        `odom` (nav_msgs/Odometry) or `pose` (geometry_msgs/PoseStamped) per `pose_source`,
        `trigger_topic` (std_msgs/Empty) when set. Inputs are taken while inactive too: the
        board mirror must not miss a change while the node is paused. `board` and `log`
        belong to the helper node `<name>_inputs` and are taken in batches (spin.Intake).
    Publishers (lifecycle: silent unless active):
        `~/frame` (ContextFrame, reliable + transient local + keep last 1),
        `~/evictions` (EvictionBatch, in ticks with evictions or readmissions),
        `~/<cabin>/window` (MapWindow, with map_windows reference: when it changes,
        reliable + transient local + keep last 4),
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
        self._active = False
        self._entities: list[Subscription | Service] = []
        # board and log, on a helper node: they never wake the executor (_take_inputs).
        self._intake: Intake | None = None
        self._receipt_time = seconds_reader(self.get_clock())   # as _now, for every input
        self._inputs: dict[str, Subscription] = {}
        self._intake_timer: Timer | None = None
        self._jump_handle: JumpHandle | None = None
        self._timer: Timer | None = None
        # Which period the tick timer's last tick served (ros/tick_grid.py).
        self._grid: TickGrid | None = None
        self._gc_paced = False   # holding ros/gc_pacing.PACING while the timer ticks
        self._frame_pub = self._evictions_pub = None
        # Why the node is unconfigured (a failed configure, an error), for /diagnostics.
        self._failure: str | None = None
        self._finalized = False
        self._idle_timer: Timer | None = None
        self._last_tick_s = 0.0   # [s] steady clock: when the node last ticked or activated
        self._last_tick_ros = 0.0   # [s] node clock: the same moment
        self._trigger_interval_s: float | None = None   # [s] steady: between the last two
        self._failed_on_refused = False   # the last configure failed on refused overrides
        # Overrides the table refused at declaration, by name: configure fails with them.
        self._refused: dict[str, str] = {}
        self.add_pre_set_parameters_callback(self._on_pre_set_parameters)
        self._views: Views | None = None
        self._windows: WindowTopics | None = None
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._on_parameters_set)
        # The whole table before configure, so ros2 param list/describe show it.
        refused = conv.declare_table(self, PARAMS)
        refused.update(conv.declare_table(
            self, cabin_specs(self.get_parameter('cabin_names').value)))
        self._refused = refused
        # /diagnostics in every lifecycle state: a plain publisher, and a steady timer for
        # the states without ticks (it runs without /clock too).
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics',
                                                      qos.diagnostics_qos())
        # Their QoS events are not reported: no handlers in the executor's wait sets.
        qos.drop_event_handlers(self, self.publishers)
        self._start_idle_diagnostics()

    # -- lifecycle ------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Validate parameters and overrides, load manifests, build the core and the entities."""
        try:
            self._failed_on_refused = bool(self._refused)   # check_refused raises then
            check_refused(self._refused)
            config = config_from_values(conv.parameter_values(self, PARAMS))
            manifests = self._load_manifests(config)
            # After _load_manifests: it declares the drops of the manifests_file cabins.
            check_known(conv.parameter_overrides(self), conv.declared_names(self))
            self._memory = self._build_memory(config, manifests)
            self._create_entities(config)
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
        self.get_logger().info(f'configured: cabins {", ".join(manifests)}, '
                               f'capacity {config.capacity}, ' + self._tick_description(config))
        requiring = pose_requirers(config, manifests)
        if requiring:
            self.get_logger().warning(
                f'pose_source {config.pose_source}: the {self._pose_topic(config)} topic places '
                f'the map windows; {", ".join(requiring)} require the board key '
                f'{config.pose_key!r}, which only the board gives (publish it there, as '
                f'mission_node does, or leave it out of required)')
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start ticking (the timer, or accept trigger messages) and enable the publishers."""
        self._start_ticking()
        self._active = True
        # A stall counts from here; no trigger interval is known yet.
        self._last_tick_s, self._last_tick_ros = time.monotonic(), self._now()
        self._trigger_interval_s = None
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
        self._active = False
        self._stop_ticking()
        self._release()
        self._finalized = True
        self._stop_idle_diagnostics()
        self._publish_lifecycle()
        return super().on_shutdown(state)

    @property
    def finalized(self) -> bool:
        """True once shut down (the lifecycle's finalized state): the process may end."""
        return self._finalized

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything so the node can be configured again."""
        self.get_logger().error(f'error while {state.label}: releasing state')
        self._active = False
        self._stop_ticking()
        self._release()
        self._failure = f'error while {state.label}: released'
        return TransitionCallbackReturn.SUCCESS

    # -- configuration --------------------------------------------------------

    def _load_manifests(self, config: NodeConfig) -> dict[str, Manifest]:
        """Load cabins from `manifests_file` and from `cabins.<name>.*` parameters.

        Every cabin gets a runtime `cabins.<name>.drop` parameter; a file cabin's
        initial drops come from the file.
        """
        manifests = {}
        if config.manifests_file:
            for name, manifest in load_manifests(config.manifests_file, self.get_name()).items():
                if name in config.cabin_names:
                    raise ManifestError(f'cabin_names: {name!r} is also defined in '
                                        f'manifests_file {config.manifests_file}')
                spec = drop_param_spec(name, manifest.drop)
                check_refused(conv.declare_table(self, (spec,)))
                drop = self.get_parameter(spec.name).value
                manifests[name] = dataclasses.replace(manifest, drop=tuple(drop))
        if config.cabin_names:
            cabins = {}
            for name in config.cabin_names:
                prefix = f'{CABINS_PREFIX}{name}.'
                values = conv.parameter_values(self, cabin_param_specs(name))
                cabins[name] = {key.removeprefix(prefix): value for key, value in values.items()}
            manifests.update(manifests_from_params(
                {'cabin_names': list(config.cabin_names), 'cabins': cabins}))
        return manifests

    def _build_memory(self, config: NodeConfig, manifests: dict[str, Manifest]) -> Memory:
        policy = (HalfLifeBlend(config.half_life_s) if config.eviction_policy == 'half_life'
                  else ImportanceLRU())
        working_set = WorkingSet(config.capacity, config.size_budget,
                                 config.exempt_prefixes, policy)
        # Board changes, events and the latched map are sporadic: their silence is no fault.
        inputs = {'board': None, 'map': None, 'log': None}
        pose_topic = self._pose_topic(config)
        if pose_topic:
            inputs[pose_topic] = config.stale_after_s
        if config.trigger_topic:
            inputs[config.trigger_topic] = None
        # Board and log place stamps on the working set's timeline: one timeline for all.
        timebase = working_set.timebase
        return Memory(config=config, manifests=manifests, board=BoardSnapshot(timebase),
                      log=EventLog(config.event_log_limit, timebase), working_set=working_set,
                      assembler=Assembler(manifests, working_set, pose_key=(
                          config.pose_key if config.pose_source == 'board' else None)),
                      frames=FrameStore(config.frames_kept),
                      health=Health(inputs, working_set.timebase.observe(self._now())),
                      output=conv.FrameOutput())

    def _create_entities(self, config: NodeConfig) -> None:
        """Create subscriptions, publishers, services and the clock-jump handler."""
        self._intake = Intake(self)
        # The board taken serialized: read in place, without building message objects.
        self._input(BoardUpdate, 'board', raw=True)
        self._input(LogEvent, 'log')
        self._entities += [
            self.create_subscription(OccupancyGrid, 'map', self._on_map, qos.map_qos(),
                                     event_callbacks=self._input_events('map')),
        ]
        pose_topic = self._pose_topic(config)
        if pose_topic:
            msg_type, convert = {'odom': (Odometry, conv.pose_from_odometry),
                                 'pose': (PoseStamped, conv.pose_from_pose_stamped)}[pose_topic]
            self._entities.append(self.create_subscription(
                msg_type, pose_topic, functools.partial(self._on_pose, pose_topic, convert),
                qos.pose_qos(), event_callbacks=self._input_events(pose_topic)))
        if config.trigger_topic:
            try:
                self._entities.append(self.create_subscription(
                    Empty, config.trigger_topic, self._on_trigger, qos.stream_qos(depth=10),
                    event_callbacks=self._input_events(config.trigger_topic)))
            except InvalidTopicNameException as error:
                raise ValueError(f'trigger_topic: {error}') from None
        self._frame_pub = self.create_lifecycle_publisher(
            ContextFrame, '~/frame', qos.frame_qos(),
            event_callbacks=self._output_events('~/frame'))
        self._evictions_pub = self.create_lifecycle_publisher(
            EvictionBatch, '~/evictions', qos.stream_qos(),
            event_callbacks=self._output_events('~/evictions'))
        self._entities += [
            self.create_service(Assemble, '~/assemble', self._handle_assemble),
            self.create_service(Explain, '~/explain', self._handle_explain),
        ]
        self._intake_timer = self.create_timer(Intake.IDLE_PERIOD_S, self._on_intake,
                                               clock=Clock(clock_type=ClockType.STEADY_TIME))
        # Any backward jump (a simulation reset) starts a new epoch; a switch to or from
        # ROS time (use_sim_time set at runtime) moves the tick grid.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=True),
            post_callback=self._on_clock_jump)

    def _release(self) -> None:
        """Destroy every entity created in configure and drop the core state."""
        if self._jump_handle is not None:
            self._jump_handle.unregister()
            self._jump_handle = None
        if self._intake_timer is not None:
            self.destroy_timer(self._intake_timer)
            self._intake_timer = None
        for entity in self._entities:
            self._destroy(entity)
        self._entities.clear()
        self._inputs.clear()
        if self._intake is not None:
            self._intake.destroy()
            self._intake = None
        for publisher in (self._frame_pub, self._evictions_pub):
            if publisher is not None:
                self.destroy_lifecycle_publisher(publisher)
        self._frame_pub = self._evictions_pub = None
        if self._views is not None:
            self._views.destroy()
            self._views = None
        if self._windows is not None:
            self._windows.destroy()
            self._windows = None
        self._memory = None

    def _destroy(self, entity: Subscription | Service) -> None:
        """Destroy through the node, which also drops a subscription's QoS event handlers."""
        if isinstance(entity, Subscription):
            self.destroy_subscription(entity)
        else:
            self.destroy_service(entity)

    @staticmethod
    def _pose_topic(config: NodeConfig) -> str | None:
        return {'odometry': 'odom', 'pose_stamped': 'pose'}.get(config.pose_source)

    @staticmethod
    def _tick_description(config: NodeConfig) -> str:
        if config.trigger_topic:
            return f'ticking on {config.trigger_topic}'
        return f'ticking at {config.tick_hz} Hz'

    # -- runtime parameters ---------------------------------------------------

    def _on_pre_set_parameters(self, parameters: list[Parameter]) -> list[Parameter]:
        """Take loosely typed command-line values as their row's type (20 for 20.0)."""
        return [conv.coerced_parameter(parameter) for parameter in parameters]

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a change: each value by its row, a configured node's config as a whole.

        Rows are dynamically typed (conv.declare_table), so the type is checked here
        and the refusal names the parameter and the type or range it expects.
        """
        rejection = None
        try:
            for parameter in parameters:
                check_parameter(parameter.name, parameter.value)
            if self._memory is not None:
                self._candidate(parameters)
        except ValueError as error:
            rejection = str(error)
        conv.keep_declared_types(self, parameters)
        return conv.set_parameters_result(rejection)

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        """Apply an accepted change: between two ticks, as callbacks never overlap."""
        cleared = False
        for parameter in parameters:
            # A valid value replaces an override the table refused.
            cleared |= self._refused.pop(parameter.name, None) is not None
        if cleared and self._memory is None and self._failed_on_refused:
            # The failure was the refused overrides: what remains of it is what is left.
            self._failure = ('configure failed: ' + '; '.join(self._refused.values())
                             if self._refused else None)
            self._publish_lifecycle()
        if self._idle_timer is not None and any(
                parameter.name == 'diagnostics_period_s' for parameter in parameters):
            self._stop_idle_diagnostics()
            self._start_idle_diagnostics()
        memory = self._memory
        if memory is None:
            return
        config, manifests = self._candidate(parameters)
        old = memory.config
        memory.config = config
        if (config.capacity, config.size_budget) != (old.capacity, old.size_budget):
            # Evicted in the next tick: the last frame still holds what goes.
            memory.pending_evictions += memory.assembler.set_limits(
                config.capacity, config.size_budget, tick=memory.tick + 1)
        if manifests != memory.manifests:
            memory.manifests = manifests
            memory.assembler.set_manifests(manifests)
        if config.tick_hz != old.tick_hz and self._timer is not None:
            self._stop_ticking()
            self._start_ticking()
        self.get_logger().info('parameters set: ' + ', '.join(
            f'{parameter.name}={parameter.value!r}' for parameter in parameters))

    def _candidate(self, parameters: list[Parameter]) -> tuple[NodeConfig, dict[str, Manifest]]:
        """Return the config and manifests `parameters` would give; raise ValueError if invalid."""
        memory = self._memory
        config = memory.config.replace(
            {parameter.name: parameter.value for parameter in parameters
             if parameter.name in SPECS})
        manifests = dict(memory.manifests)
        for parameter in parameters:
            cabin = drop_cabin(parameter.name)
            if cabin in manifests:
                manifests[cabin] = dataclasses.replace(manifests[cabin],
                                                       drop=tuple(parameter.value))
        return config, manifests

    # -- ticking --------------------------------------------------------------

    def _start_ticking(self) -> None:
        if not self._memory.config.trigger_topic:
            # Pacing starts with a full collection: before the timer, so the first tick still
            # comes a whole period after it.
            if self._memory.config.gc_pacing and not self._gc_paced:
                PACING.hold()
                self._gc_paced = True
            self._timer = self.create_timer(self._memory.config.tick_period_s,
                                            self._on_tick_timer)
            self._grid = TickGrid(self._timer.timer_period_ns, self._next_tick_ns())

    def _stop_ticking(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
            self._grid = None
        self._release_gc()

    def _release_gc(self) -> None:
        if self._gc_paced:
            PACING.release()
            self._gc_paced = False

    def destroy_node(self) -> None:
        """Destroy the node; one destroyed while ticking gives the garbage collector back."""
        self._release_gc()
        super().destroy_node()

    def _on_trigger(self, msg: Empty) -> None:
        self._received(self._memory.config.trigger_topic)
        if self._active:
            self._trigger_interval_s = time.monotonic() - self._last_tick_s
            self._on_tick()

    def _on_tick_timer(self) -> None:
        # An event queued before ticking stopped (deactivate, trigger mode) finds no grid.
        if self._grid is not None and self._grid.on_timer(self._next_tick_ns()):
            self._on_tick()

    def _tick_if_due(self) -> None:
        """Tick first if the timer's tick is due but queued behind this callback (tick_grid)."""
        if self._grid is not None and self._grid.due(self.get_clock().now().nanoseconds):
            self._on_tick()

    def _next_tick_ns(self) -> int:
        """Return the tick timer's next call time on the node clock [ns]."""
        return self.get_clock().now().nanoseconds + self._timer.time_until_next_call()

    def _on_tick(self) -> None:
        """Assemble and freeze one frame, then publish it, its evictions and diagnostics."""
        started = time.perf_counter()
        memory = self._memory
        config = memory.config
        if warm_due(time.monotonic() - self._last_tick_s, WARM_AFTER_IDLE_S,
                    None if config.trigger_topic else config.tick_hz):
            memory.output.warm(WARM_MAX_BYTES)
        # What arrived before the tick's time is in its frame.
        self._take_inputs(TICK_INTAKE_BUDGET_S)
        now = self._now()
        self._last_tick_s, self._last_tick_ros = time.monotonic(), now
        effective = memory.timebase.observe(now)
        memory.tick += 1
        frame = memory.assembler.assemble(memory.tick, now, memory.board, memory.log,
                                          memory.grid, memory.pose)
        # The receipt per input topic lets an offline replay apply exactly what this tick saw.
        received = {memory.resolved(topic, self.resolve_topic_name): count
                    for topic, count in memory.health.received_counts().items()}
        # A window goes out before the first frame that names it (map_windows: reference).
        if self._windows is not None:
            self._windows.publish(frame)
        self._frame_pub.publish(memory.output.frame_bytes(frame, config.map_frame, received,
                                                          self._windows is None))
        # Retained for ~/assemble and ~/explain once it is out (no callback runs in between).
        memory.frames.publish(frame)
        if self._views is not None:
            self._views.publish(frame, memory.pose)
        evictions = memory.pending_evictions + list(frame.evictions)
        memory.pending_evictions = []
        if evictions or frame.readmitted:
            self._evictions_pub.publish(conv.eviction_batch_msg(
                frame.tick, evictions, frame.readmitted, now, frame.effective))
        memory.health.evicted(len(evictions), effective)
        if (memory.last_diagnostics is None
                or effective - memory.last_diagnostics >= config.diagnostics_period_s):
            memory.last_diagnostics = effective
            self._publish_diagnostics(frame, now, effective)
        period = None if config.trigger_topic else config.tick_period_s
        memory.health.tick_done(time.perf_counter() - started, period)
        if self._gc_paced:
            PACING.after_tick()

    def _publish_diagnostics(self, frame: Frame, now: float, effective: float) -> None:
        memory = self._memory
        working_set = memory.working_set
        use = CapacityUse(len(working_set), working_set.capacity, working_set.size_bytes,
                          working_set.size_budget, working_set.capacity_alarm)
        statuses = memory.health.statuses(
            effective, epoch=memory.timebase.epoch, capacity=use,
            missing={cabin: pack.missing for cabin, pack in frame.packs.items()},
            stale_check=memory.config.stale_check)
        self._publish_statuses([self._lifecycle_status(), *statuses], now)

    def _start_idle_diagnostics(self) -> None:
        period = idle_period_s(self.get_parameter('diagnostics_period_s').value)
        self._idle_timer = self.create_timer(period, self._on_idle_diagnostics,
                                             clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _stop_idle_diagnostics(self) -> None:
        if self._idle_timer is not None:
            self.destroy_timer(self._idle_timer)
            self._idle_timer = None

    def _on_idle_diagnostics(self) -> None:
        """Publish the lifecycle status while the node does not tick (ticks publish their own).

        Also while active without ticks (a trigger topic that is silent, sim time without
        /clock): then a WARN says since when and why.
        """
        if not self._active:
            self._publish_lifecycle()
            return
        config = self._memory.config
        ros_advance = (self._now() - self._last_tick_ros
                       if self.get_clock().ros_time_is_active else None)
        why = stall(time.monotonic() - self._last_tick_s,
                    None if config.trigger_topic else config.tick_period_s,
                    idle_period_s(config.diagnostics_period_s), config.trigger_topic,
                    self._trigger_interval_s, ros_advance)
        if why is not None:
            self._publish_statuses([lifecycle_status('active', self._failure, why)], self._now())

    def _publish_lifecycle(self) -> None:
        self._publish_statuses([self._lifecycle_status()], self._now())

    def _lifecycle_status(self) -> Status:
        if self._finalized:
            state = 'finalized'
        elif self._memory is None:
            state = 'unconfigured'
        else:
            state = 'active' if self._active else 'inactive'
        return lifecycle_status(state, self._failure)

    def _publish_statuses(self, statuses: list[Status], now: float) -> None:
        self._diagnostics_pub.publish(conv.diagnostic_array(
            statuses, self.get_fully_qualified_name(), now))

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
        if self._timer is not None:
            # Next tick one period after the jump, whatever the rcl version does.
            self._timer.reset()
            self._grid.restart(self._next_tick_ns())

    # -- inputs -----------------------------------------------------------------

    def _on_board(self, data: bytes, info: dict) -> None:
        memory, now = self._received('board', info)
        # Values parsed frozen and strict: the board keeps them as they are (checked=True).
        batch = self._checked('board', conv.board_batch_from_bytes, data, now)
        if batch is None:
            return
        for error in batch.errors:
            self._reject('board', error)
        self._checked('board', memory.board.apply_checked, batch.entries, batch.removed_keys)

    def _on_log(self, msg: LogEvent, info: dict) -> None:
        memory, now = self._received('log', info)
        event = self._checked('log', conv.event_from_msg, msg, now)
        if event is not None:
            memory.log.append(event)

    def _take_inputs(self, budget_s: float) -> None:
        """Take what board and log queued, for at most `budget_s` [s] each (see spin.Intake)."""
        for topic, callback in (('board', self._on_board), ('log', self._on_log)):
            subscription = self._inputs.get(topic)
            if subscription is not None:
                for msg, info in self._intake.take(subscription, budget_s):
                    callback(msg, info)

    def _on_intake(self) -> None:
        """Take queued inputs between ticks, in every configured state; leave room for a tick."""
        self._tick_if_due()
        until_tick = None if self._timer is None else self._timer.time_until_next_call()
        budget = INTAKE_BUDGET_S
        if until_tick is not None:
            budget = min(budget, 0.5e-9 * until_tick)
        self._take_inputs(budget)
        memory = self._memory
        lead_ns = round(memory.config.prepare_lead_s * 1e9)
        if lead_ns:
            # What came is selected now; the tick does what comes after (the same frame).
            memory.assembler.prepare(self._now(), memory.board)
        if self._gc_paced:
            PACING.between_ticks()
        # The last round before a tick comes its lead before it, on the steady clock (which
        # runs with the system clock; under sim time the intake keeps its pace).
        timer, ticker = self._intake_timer, self._timer
        aimed = ticker is not None and not self.get_clock().ros_time_is_active
        period_ns, reset = intake_schedule(
            round(self._intake.pace() * 1e9), ticker.time_until_next_call() if aimed else None,
            lead_ns, ticker.timer_period_ns if aimed else 0, timer.time_until_next_call(),
            timer.timer_period_ns)
        if timer.timer_period_ns != period_ns:
            timer.timer_period_ns = period_ns
        if reset:
            timer.reset()

    def _on_map(self, msg: OccupancyGrid) -> None:
        self._tick_if_due()
        memory, _ = self._received('map')
        grid = self._checked('map', conv.grid_from_msg, msg, memory.config.map_frame)
        if grid is not None:
            memory.grid = grid

    def _on_pose(self, topic: str, convert: Callable, msg: Odometry | PoseStamped) -> None:
        self._tick_if_due()
        memory, _ = self._received(topic)
        pose = self._checked(topic, convert, msg, memory.config.map_frame)
        if pose is not None:
            memory.pose = pose

    def _received(self, topic: str, info: dict | None = None) -> tuple[Memory, float]:
        """Count a message on `topic`; return the memory and the ROS time [s] of receipt.

        With its message `info`, a gap in the publisher's sequence numbers counts as lost.
        """
        memory, now = self._memory, self._receipt_time()
        memory.health.received(topic, memory.timebase.observe(now),
                               *(conv.publication(info) if info else ()))
        return memory, now

    def _input(self, msg_type: type, topic: str, raw: bool = False) -> None:
        """Subscribe a stream input (board, log): taken in batches (see spin.Intake)."""
        self._inputs[topic] = self._intake.subscribe(
            msg_type, self.resolve_topic_name(topic), qos.input_qos(),
            self._input_events(topic), raw=raw)

    def _checked(self, topic: str, function: Callable, *args: Any) -> Any:
        """Return `function(*args)`; bad input (ValueError) is logged, counted, and gives None."""
        try:
            return function(*args)
        except ValueError as error:
            self._reject(topic, str(error))
            return None

    def _reject(self, topic: str, reason: str) -> None:
        self._memory.health.rejected(topic, reason)
        self.get_logger().warning(f'{topic}: rejected input: {reason}',
                                  throttle_duration_sec=1.0)

    def _input_events(self, topic: str) -> SubscriptionEventCallbacks:
        def incompatible(info) -> None:
            policy = conv.incompatible_qos_policy(info)
            self._memory.health.input_incompatible(topic, info.total_count, policy)
            self.get_logger().error(f'{topic}: a publisher offers incompatible QoS ({policy}); '
                                    'its messages do not arrive')

        def lost(info) -> None:
            self._memory.health.lost(topic, info.total_count)
        # Only what /diagnostics reports: no default handlers (each costs every wait set).
        return SubscriptionEventCallbacks(incompatible_qos=incompatible, message_lost=lost,
                                          use_default_callbacks=False)

    def _output_events(self, topic: str) -> PublisherEventCallbacks:
        def incompatible(info) -> None:
            policy = conv.incompatible_qos_policy(info)
            self._memory.health.output_incompatible(topic, info.total_count, policy)
            self.get_logger().error(f'{topic}: a subscriber requests incompatible QoS '
                                    f'({policy}); it receives nothing')
        return PublisherEventCallbacks(incompatible_qos=incompatible, use_default_callbacks=False)

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
                                      self._memory.output)

    def _handle_explain(self, request: Explain.Request,
                        response: Explain.Response) -> Explain.Response:
        self._tick_if_due()
        try:
            query = conv.explain_query(request)
            # Only drops change at runtime and packs record them, so the current
            # manifests explain past frames too.
            answer = explain(self._frame(query.tick), self._memory.manifests, query.cabin,
                             query.key, self._memory.log)
        except (LookupError, ValueError) as error:
            return conv.failed_response(response, str(error))
        return conv.explain_response(response, answer)

    def _frame(self, tick: int) -> Frame:
        """Return the frozen frame of `tick` (0: latest); LookupError says what is valid."""
        if not self._active:
            raise LookupError(NOT_ACTIVE)
        frames = self._memory.frames
        if tick:
            return frames.get(tick)
        frame = frames.latest()
        if frame is None:
            raise FrameNotFound('tick 0 (latest): no frame has been frozen yet')
        return frame

    def _now(self) -> float:
        """Return the node clock's time [s] (ROS time: /clock under use_sim_time)."""
        return self.get_clock().now().nanoseconds * 1e-9


def pose_requirers(config: NodeConfig, manifests: dict[str, Manifest]) -> list[str]:
    """Return the cabins requiring the board key `pose_key` while the pose comes from a topic."""
    if config.pose_source == 'board':
        return []
    return [name for name, manifest in manifests.items() if config.pose_key in manifest.required]


EXECUTORS = ('single', 'events')


def make_executor(context=None, kind: str = 'events') -> Executor:
    """Return the executor the node runs in: `events` (default) or `single`, by measurement.

    `events` is rclpy's EventsExecutor (a C++ event queue, no wait set rebuilt per
    wake-up): at 100 Hz ticks + a 1 kHz board it costs about a quarter less CPU than
    the single-threaded executor, with less jitter (BENCHMARKS.md, "Issue 12, node
    CPU"). It serves events in arrival order, so a due tick could wait behind a flood
    of service requests; the node's own callbacks therefore tick first when the
    tick is overdue (ros/tick_grid.py), and board and log never wake it (spin.Intake).
    `single` is rclpy's SingleThreadedExecutor, which serves every ready timer before
    the other entities of each wait: with a board flood of ~14 000 msgs/s from
    another process (2 shared cores, 100 Hz ticks) it kept 95-98 ticks/s; a
    MultiThreadedExecutor with ingestion, tick and service callback groups kept
    92-94 ticks/s: threads only add GIL hand-overs.
    """
    if kind == 'single':
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


def main(args: list[str] | None = None) -> int:
    """Run the node; `--autostart` configures and activates it without a lifecycle manager."""
    parser = argparse.ArgumentParser(prog='working_memory_node')
    parser.add_argument('--autostart', action='store_true',
                        help='configure and activate at start')
    parser.add_argument('--executor', choices=EXECUTORS, default='events',
                        help='rclpy executor to spin in (default: %(default)s)')
    options = parser.parse_args(remove_ros_args(args if args is not None else sys.argv)[1:])

    def autostart(node: WorkingMemoryNode) -> bool:
        return not options.autostart or (
            node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            and node.trigger_activate() == TransitionCallbackReturn.SUCCESS)

    return run_node(WorkingMemoryNode, args, start=autostart,
                    make_executor=lambda: make_executor(kind=options.executor),
                    finished=lambda node: node.finalized)
