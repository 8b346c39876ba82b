"""The working-memory lifecycle node: the ROS face of the engine, its lifecycle and wiring.

At configure the node builds the engine (engine/engine.py) and its faces: the inputs
(ros/subscriptions.py: each message to one door of the engine), the outputs
(ros/outputs.py: what a tick publishes), the services (ros/services.py). Its tick timer
(ros/ticking.py) asks the engine for a tick and hands it to the outputs. It also holds
its parameter table (ros/parameters.py `NodeParameters`) and its `/diagnostics`
(ros/diagnostics_topic.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import ClockChange, JumpHandle, JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import InvalidTopicNameException, ParameterException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.subscription import Subscription
from std_msgs.msg import Empty

from working_memory.core.owners import Owners
from working_memory.engine.engine import (ANSWER_TOPIC, Engine, build_engine,
                                          configure_warnings, tick_description)
from working_memory.engine.health import Status, lifecycle_status
from working_memory.engine.ownership import Ownership
from working_memory.engine.params_files import parameter_args
from working_memory.engine.source_map import load_sources
from working_memory.ros import collector
from working_memory.ros import qos
from working_memory.ros.diagnostics_topic import DiagnosticsTopic
from working_memory.ros.graph import publisher_node
from working_memory.ros.intake import Intake
from working_memory.ros.outputs import Outputs
from working_memory.ros.parameters import NodeParameters, changed
from working_memory.ros.services import FrameServices
from working_memory.ros.sources import describe
from working_memory.ros.spin import own_arguments, run_node
from working_memory.ros.subscriptions import InputLog, Subscriptions
from working_memory.ros.ticking import EXECUTORS, TickTimer, make_executor

# Jumps that switch clocks (use_sim_time set at runtime), not a reset of the same clock.
CLOCK_SWITCHES = (ClockChange.ROS_TIME_ACTIVATED, ClockChange.ROS_TIME_DEACTIVATED)


class WorkingMemoryNode(LifecycleNode):
    """Assemble each cabin's frozen context once per tick, publish it and answer from it.

    ROS Parameters:
        The table in `working_memory.engine.config.PARAMS` (tick_hz, capacity, ...), and
        `cabins.<cabin>.<field>` for each cabin in `cabin_names` (fields of
        `core.manifest.MANIFEST_FIELDS`; only `cabins.<cabin>.drop` changes at runtime).
        Declared in the constructor (a manifests_file cabin's drop at configure:
        ros/parameters.py); values take effect at configure; runtime sets are validated,
        refusals name the parameter, and applied between ticks.
    Subscriptions:
        `board` (BoardUpdate), `map` (nav_msgs/OccupancyGrid, latched), `log` (LogEvent),
        `odom` (nav_msgs/Odometry) or `pose` (geometry_msgs/PoseStamped) per `pose_source`,
        `trigger_topic` (std_msgs/Empty) when set; each source's topic of `sources_file`
        (its own type, ros/sources.py), mapped to board entries and events. Taken while
        inactive too (the board mirror misses no change while paused); all but the trigger
        on the helper node `<name>_inputs`, in batches (ros/intake.py `Intake`: far less
        CPU than an executor wake-up per message, and each message's info).
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
    Services (only while active): `~/assemble`, `~/explain`, from the retained frozen frames.
    """

    def __init__(self, node_name: str = 'working_memory', **kwargs: Any):
        super().__init__(node_name, **kwargs)
        # While configured: the engine, its inputs, outputs and services, the trigger.
        self._engine: Engine | None = None
        self._inputs: Subscriptions | None = None
        self._outputs: Outputs | None = None
        self._frame_services: FrameServices | None = None
        self._trigger: Subscription | None = None
        self._active = False
        self._jump_handle: JumpHandle | None = None
        self._ticker: TickTimer | None = None   # while active, unless a trigger topic ticks
        # A configure after one that succeeded is a restart (not so a respawned process's).
        self._configured_before = False
        # Why the node is unconfigured (a failed configure, an error), for /diagnostics.
        self._failure: str | None = None
        self._finalized = False
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
            self._engine = build_engine(config, manifests, self._now(), sources,
                                        restart=self._configured_before,
                                        listener=InputLog(self.get_logger()))
            self._create_entities(self._table.owners(config))
            qos.drop_event_handlers(self, [publisher for publisher in self.publishers
                                           if publisher not in self._outputs.reported])
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
        for warning in configure_warnings(self._engine):
            self.get_logger().warning(warning)
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

    def destroy_node(self) -> None:
        """Release what configure made (the tick timer first: no tick after this), then destroy."""
        self._release()
        super().destroy_node()

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

    def _create_entities(self, owners: Owners) -> None:
        """Create the inputs, the trigger, the outputs, the services and the clock-jump handler."""
        engine = self._engine
        self._inputs = Subscriptions(self, engine, self._on_intake, self._now)
        # The writers of owned keys: on board, answering a resync (if asked), on the sources.
        names = engine.receipts.names
        topics = [names[topic] for topic in ('board', ANSWER_TOPIC, *engine.sources.maps)
                  if topic in names]
        engine.ownership = Ownership(owners, lambda: [
            publisher for topic in topics for publisher in self._publishers_of(topic)])
        topic = engine.config.trigger_topic
        if topic:
            try:
                self._trigger = self.create_subscription(
                    Empty, topic, self._on_trigger, qos.stream_qos(depth=10),
                    event_callbacks=qos.input_events(topic, engine.health, self.get_logger()))
            except InvalidTopicNameException as error:
                raise ValueError(f'trigger_topic: {error}') from None
        self._outputs = Outputs(self, engine, self._publishers_of)
        self._frame_services = FrameServices(self, engine, self._outputs.encoder,
                                             lambda: self._active, self._tick_if_due)
        # Any backward jump (a simulation reset) starts a new epoch; a switch to or from
        # ROS time (use_sim_time set at runtime) moves the tick grid.
        self._jump_handle = self.get_clock().create_jump_callback(
            JumpThreshold(min_forward=None, min_backward=Duration(nanoseconds=-1),
                          on_clock_change=True),
            post_callback=self._on_clock_jump)

    def _release(self) -> None:
        """Stop ticking, destroy every entity created in configure and drop the engine."""
        self._active = False
        self._stop_ticking()
        if self._jump_handle is not None:
            self._jump_handle.unregister()
            self._jump_handle = None
        for part in (self._inputs, self._outputs, self._frame_services):
            if part is not None:
                part.destroy()
        if self._trigger is not None:
            self.destroy_subscription(self._trigger)
        self._inputs = self._outputs = self._frame_services = self._trigger = None
        self._engine = None
        collector.unfreeze()   # what the configured node held may be collected now

    # -- runtime parameters ---------------------------------------------------

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a change; a configured node's with its configuration as a whole."""
        engine = self._engine
        return self._table.check(
            parameters, None if engine is None else (engine.config, engine.manifests))

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        """Apply an accepted change: between two ticks, as callbacks never overlap."""
        # A valid value replaces an override the table refused.
        refused = self._table.refused
        if (self._table.accepted(parameters) and self._engine is None
                and self._table.failed_on_refused):
            # The failure was the refused overrides: what remains of it is what is left.
            self._failure = ('configure failed: ' + '; '.join(refused.values())
                             if refused else None)
            self._publish_lifecycle()
        if not self._finalized and any(
                parameter.name == 'diagnostics_period_s' for parameter in parameters):
            self._diagnostics.restart(self.get_parameter('diagnostics_period_s').value)
        engine = self._engine
        if engine is None:
            return
        old = engine.reconfigure(*changed(engine.config, engine.manifests, parameters))
        if engine.config.tick_hz != old.tick_hz and self._ticker is not None:
            self._stop_ticking()
            self._start_ticking()
        self.get_logger().info('parameters set: ' + ', '.join(
            f'{parameter.name}={parameter.value!r}' for parameter in parameters))

    # -- ticking --------------------------------------------------------------

    def _start_ticking(self) -> None:
        config = self._engine.config
        if not config.trigger_topic:
            self._ticker = TickTimer(self, config.tick_period_s, self._on_tick)

    def _stop_ticking(self) -> None:
        if self._ticker is not None:
            self._ticker.destroy()
            self._ticker = None

    def _tick_if_due(self) -> None:
        """Tick first if the tick is due but queued behind this callback (ros/ticking.py)."""
        if self._ticker is not None:
            self._ticker.tick_if_due()

    def _on_tick(self) -> None:
        """Make one tick of the engine, then publish its frame, evictions and diagnostics."""
        started = time.perf_counter()
        engine = self._engine
        # What arrived before the tick's time is in its frame.
        self._inputs.intake.take(Intake.TICK_BUDGET_S)
        now = self._now()
        self._diagnostics.ticked(now)
        asking = engine.resync.active
        tick = engine.tick(now, resyncing=engine.still_resyncing(time.monotonic(), self._writers))
        self._outputs.publish(tick, engine, asking, now)
        if engine.diagnostics_due(tick.effective):
            self._diagnostics.publish([self._lifecycle_status(),
                                       *engine.statuses(tick.frame, tick.effective),
                                       self._twin_status()], now)
        config = engine.config
        engine.health.tick_done(time.perf_counter() - started,
                                None if config.trigger_topic else config.tick_period_s)

    def _writers(self) -> dict[bytes, str]:
        """Return {gid: node name} of the writers that answer a resync (the graph's now)."""
        return {gid: name for name, gid in self._publishers_of(
            self._engine.receipts.names[ANSWER_TOPIC])}

    def _publishers_of(self, topic: str) -> list[tuple[str, bytes]]:
        """Return (fully qualified node name, gid) of each publisher the graph names (ros/graph)."""
        return [(node, bytes(info.endpoint_gid))
                for info in self.get_publishers_info_by_topic(topic)
                if (node := publisher_node(info)) is not None]

    def _twin_status(self) -> Status:
        """Return the `twins` status; log a newly seen twin as an error."""
        status, new = self._outputs.twins.status()
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
        why = self._diagnostics.stall(self._engine.config, self._now(),
                                      self.get_clock().ros_time_is_active)
        if why is not None:
            self._diagnostics.publish([lifecycle_status('active', self._failure, why),
                                       self._twin_status()], self._now())

    def _publish_lifecycle(self) -> None:
        # A configured node not ticking says already which required keys no source writes.
        required = [] if self._engine is None else [self._engine.required_status(None)]
        twins = [] if self._outputs is None else [self._twin_status()]
        self._diagnostics.publish([self._lifecycle_status(), *required, *twins], self._now())

    def _lifecycle_status(self) -> Status:
        if self._finalized:
            state = 'finalized'
        elif self._engine is None:
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
        delta = jump.delta.nanoseconds * 1e-9
        epoch = self._engine.clock_jumped(self._now(), delta)
        self.get_logger().warning(f'clock jumped back {delta:+.3f} s: epoch {epoch}')
        self._rearm_ticks()

    def _rearm_ticks(self) -> None:
        if self._ticker is not None:
            # Next tick one period after the jump, whatever the rcl version does.
            self._ticker.rearm()

    # -- inputs (ros/subscriptions.py) ---------------------------------------------------

    def _on_intake(self) -> None:
        """Take queued inputs between ticks; leave room for a tick."""
        self._tick_if_due()
        self._inputs.intake.round(None if self._ticker is None else self._ticker.until_next_ns())

    def _on_trigger(self, msg: Empty) -> None:
        self._engine.take_trigger(self._inputs.arrival())
        if self._active:
            self._diagnostics.triggered()
            self._on_tick()

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
