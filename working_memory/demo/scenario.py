"""The closed-loop delivery scenario in one process: simulator, working memory, decision nodes.

The demo (`working_memory.demo`) and the closed-loop tests both run it. Every node
is the real one, talking over DDS on loopback; the harness only starts them, watches
the outcome on their topics and stops them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String

from working_memory.core.items import EventKind
from working_memory.decision.conversions import decision_detail_from_msg, decision_status_from_msg
from working_memory.decision.executor_node import ExecutorNode
from working_memory.decision.monitor_node import MonitorNode
from working_memory.decision.planner_node import PlannerNode
from working_memory.msg import DecisionStatus, EvictionBatch, LogEvent
from working_memory.ros import conversions as conv
from working_memory.ros import qos
from working_memory.ros.node import WorkingMemoryNode
from working_memory.ros.share import share_path
from working_memory.sim.conversions import json_from_string_msg
from working_memory.sim.sim_node import SimWorldNode
from working_memory.sim.world import DELIVERED
from working_memory.tools.recorder_node import RecorderNode
from working_memory.tools.replay import PARAMETERS_KEY
from working_memory.trees.planner_tree_node import PlannerTreeNode

# What `--drop CABIN:CATEGORY` removes from a manifest; any other CATEGORY is taken as a
# raw manifest drop entry (a key, a glob, "board:<glob>", "events:<KIND>" or "map").
DROP_CATEGORIES: dict[str, tuple[str, ...]] = {
    'constraints': ('safety:*', 'events:CONSTRAINT'),
    'failures': ('events:FAILURE',),
    'actions': ('events:ACTION', 'action:*'),
    'goals': ('goal:*', 'events:GOAL'),
    'map': ('map',),
}


# The decision nodes of `--cabins`: the plain reference cabins, or the planner as a py_trees
# tree (working_memory/trees) beside the plain executor and monitor; same topics either way.
CABIN_SETS: dict[str, tuple[type, ...]] = {
    'plain': (PlannerNode, ExecutorNode, MonitorNode),
    'trees': (PlannerTreeNode, ExecutorNode, MonitorNode),
}


# Topics that stay global whatever the robot's namespace: sim time and the graph-wide ones.
GLOBAL_TOPICS = ('/clock', '/parameter_events', '/diagnostics')


def robot_topic(namespace: str, topic: str) -> str:
    """Return an absolute demo topic inside the robot's namespace (global ones unchanged)."""
    return topic if not namespace or topic in GLOBAL_TOPICS else namespace + topic


# What the demo records: the inputs (board, log, map, odom, clock) and the node's configuration,
# its outputs (frame, evictions, diagnostics), and what the cabins decided (statuses; alarms
# are ALARM events on the log): enough to replay the run offline and ask what was missing.
RECORDED_TOPICS = ('/board', '/log', '/map', '/odom', '/clock', '/parameter_events',
                   # What a node re-read after it started (msg/Resync.msg).
                   '/resync/request', '/resync/answer',
                   '/working_memory/frame', '/working_memory/evictions', '/diagnostics',
                   # Each cabin's map window, named by digest in the frames (map_windows).
                   '/working_memory/planner/window', '/working_memory/executor/window',
                   '/planner/status', '/executor/status', '/monitor/status',
                   # For the report, RViz2 and Foxglove (config/): the outcome and the views.
                   '/sim_world/status', '/working_memory/planner/map_window',
                   '/working_memory/executor/map_window', '/working_memory/route',
                   '/working_memory/markers')
# The bag metadata (custom_data) key of the params files given after the packaged one (JSON).
PARAMS_FILES_KEY = 'working_memory.params_files'
# [s] wall time the recorder may take to find the node's outputs before ticking starts.
RECORDER_DISCOVERY_S = 10.0
# [s] wall time the graph is watched for a working memory already running before a start:
# discovery of a node in another process takes a second or two on loopback.
ALREADY_RUNNING_WAIT_S = 3.0


def already_running(namespace: str, context=None,
                    wait_s: float = ALREADY_RUNNING_WAIT_S) -> list[str]:
    """Return the working memories already in the graph under `namespace` ('' the root).

    Watches the graph for `wait_s` [s] of wall time (discovery takes it), less once
    one is seen: a second node of the same name would interleave its frames with the
    scenario's own (engine/twins.py).
    """
    wanted = f'{namespace}/working_memory'
    node = Node('demo_graph_check', context=context, start_parameter_services=False)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            found = sorted({f'{space.rstrip("/")}/{name}' for name, space
                            in node.get_node_names_and_namespaces()} & {wanted})
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)   # the graph fills in from discovery, no callback to wait on
    finally:
        node.destroy_node()


def parameter_snapshot(node: Node) -> dict:
    """Return every parameter of `node` by name, as JSON-able values."""
    names = node.list_parameters([], 0).names
    return {parameter.name: (list(parameter.value) if isinstance(parameter.value, (list, tuple))
                             or type(parameter.value).__name__ == 'array' else parameter.value)
            for parameter in node.get_parameters(names)}


def parse_drops(specs: list[str]) -> dict[str, tuple[str, ...]]:
    """Turn ["planner:constraints", ...] into {cabin: manifest drop entries}.

    Raises ValueError naming the malformed spec.
    """
    drops: dict[str, list[str]] = {}
    for spec in specs:
        cabin, sep, category = spec.partition(':')
        if not sep or not cabin or not category:
            raise ValueError(f'--drop {spec!r}: expected CABIN:CATEGORY, categories: '
                             f'{", ".join(DROP_CATEGORIES)} or a manifest drop entry')
        drops.setdefault(cabin, []).extend(DROP_CATEGORIES.get(category, (category,)))
    return {cabin: tuple(entries) for cabin, entries in drops.items()}


def describe_drops(drops: dict[str, tuple[str, ...]]) -> str:
    """Return e.g. 'planner: safety:*, events:CONSTRAINT' or 'none'."""
    return '; '.join(f'{cabin}: {", ".join(entries)}' for cabin, entries in drops.items()) \
        or 'none'


def default_params_file() -> Path:
    """Return the installed config/working_memory.yaml (the source tree's when not installed)."""
    return share_path('config', 'working_memory.yaml')


@dataclass(frozen=True)
class ScenarioOptions:
    """How to run the delivery scenario."""

    seed: int = 7
    drops: dict[str, tuple[str, ...]] = field(default_factory=dict)
    real_time_factor: float = 2.0   # sim seconds per wall second
    sim_time_limit_s: float = 150.0
    wall_time_limit_s: float = 80.0
    settle_s: float = 2.0            # [s] sim time to keep running after delivery
    params_file: Path | None = None   # None: the packaged config/working_memory.yaml
    params_files: tuple[Path, ...] = ()   # loaded after params_file by every node, in order
    bag_path: Path | None = None
    extra_params: dict[str, object] = field(default_factory=dict)  # working_memory node
    cabins: str = 'plain'            # a key of CABIN_SETS
    # [s] sim time at which the working memory loses everything (cleanup, configure,
    # activate) and re-reads the writers; None: never.
    restart_wm_at_s: float | None = None
    # The robot's name: every node of the loop runs in its namespace (/<robot>/board,
    # /<robot>/working_memory, ...), as a fleet's robots do; '' the root namespace.
    robot: str = ''

    @property
    def namespace(self) -> str:
        """Return the namespace of the robot: '/alpha', or '' for the root."""
        return f'/{self.robot}' if self.robot else ''


@dataclass
class Outcome:
    """What happened, as seen on the topics."""

    delivered: bool = False
    delivered_at_s: float | None = None   # [s] sim time of the world's `delivered` event
    sim_time_s: float = 0.0               # [s] sim time of the latest status (the run's end)
    wall_time_s: float = 0.0
    ticks: int = 0
    evictions: int = 0
    zone_violations: int = 0
    collisions: int = 0
    door: str = ''
    alarms: list[tuple[str, str]] = field(default_factory=list)  # (source, key)
    first_alarm_s: float | None = None  # [s] sim time of the first ALARM event
    retry_policies: set[str] = field(default_factory=set)
    door_strategies: list[str] = field(default_factory=list)
    failures: int = 0
    planner_decisions: dict[str, int] = field(default_factory=dict)
    planner_last: str = ''   # the planner's latest decision ('alarm' while it holds)
    timed_out: bool = False
    limit: str = ''   # the time limit that ended the run, if one did
    bag_path: Path | None = None
    restarts: list[float] = field(default_factory=list)   # [s] sim times of WM restarts


class Observer(Node):
    """Collects the outcome from the topics the scenario's nodes publish."""

    def __init__(self, outcome: Outcome, **kwargs):
        super().__init__('scenario_observer', **kwargs)
        self.outcome = outcome
        self.status: dict = {}
        self.ticks_before = 0   # the ticks of the working memory's earlier starts
        # Relative names: the observer runs in the robot's namespace.
        self.create_subscription(String, 'sim_world/status', self._on_sim_status,
                                 qos.latched_qos())
        self.create_subscription(LogEvent, 'log', self._on_log, qos.stream_qos(100))
        self.create_subscription(EvictionBatch, 'working_memory/evictions', self._on_eviction,
                                 qos.stream_qos(100))
        self.create_subscription(DecisionStatus, 'executor/status', self._on_executor,
                                 qos.stream_qos(10))
        self.create_subscription(DecisionStatus, 'planner/status', self._on_planner,
                                 qos.stream_qos(10))

    def _on_sim_status(self, msg: String) -> None:
        self.status = json_from_string_msg(msg, '/sim_world/status')

    def _on_log(self, msg: LogEvent) -> None:
        try:
            event = conv.event_from_msg(msg, now=0.0)
        except ValueError:
            return  # the working-memory node reports malformed events
        if event.kind is EventKind.ALARM:
            self.outcome.alarms.append((event.source, event.key))
            if self.outcome.first_alarm_s is None:
                self.outcome.first_alarm_s = self.outcome.sim_time_s
        elif event.kind is EventKind.FAILURE:
            self.outcome.failures += 1
        elif (event.kind is EventKind.OBSERVATION and event.key == DELIVERED
              and self.outcome.delivered_at_s is None):
            self.outcome.delivered_at_s = event.stamp   # as the report reads it from the bag
        elif event.kind is EventKind.ACTION and event.key == 'open_door':
            self.outcome.door_strategies.append(str((event.detail or {}).get('strategy', '')))

    def _on_eviction(self, msg: EvictionBatch) -> None:
        self.outcome.evictions += len(msg.evictions)

    def _on_executor(self, msg: DecisionStatus) -> None:
        _, tick, _, _ = decision_status_from_msg(msg)
        detail = decision_detail_from_msg(msg)
        policy = detail.get('retry_policy') if isinstance(detail, dict) else None
        if policy:
            self.outcome.retry_policies.add(policy)
        # A restarted working memory counts its ticks from 1 again: after those before it.
        self.outcome.ticks = max(self.outcome.ticks, self.ticks_before + tick)

    def _on_planner(self, msg: DecisionStatus) -> None:
        _, _, _, decision = decision_status_from_msg(msg)
        counts = self.outcome.planner_decisions
        counts[decision] = counts.get(decision, 0) + 1
        self.outcome.planner_last = decision


class Scenario:
    """Build the closed loop in `context`, run it until delivery or a time limit, stop it."""

    def __init__(self, options: ScenarioOptions, context=None):
        if options.cabins not in CABIN_SETS:
            raise ValueError(f'cabins: must be one of {", ".join(CABIN_SETS)}, '
                             f'got {options.cabins!r}')
        self.options = options
        self.outcome = Outcome(bag_path=options.bag_path)
        sim_time = [Parameter('use_sim_time', value=True)]
        params_args = ['--ros-args']
        for path in (options.params_file or default_params_file(), *options.params_files):
            params_args += ['--params-file', str(path)]
        wm_overrides = sim_time + [Parameter(f'cabins.{cabin}.drop', value=list(entries))
                                   for cabin, entries in options.drops.items()]
        # The views are built only while someone subscribes: here the recorder.
        wm_overrides += [Parameter('views', value=options.bag_path is not None)]
        wm_overrides += [Parameter(name, value=value)
                         for name, value in options.extra_params.items()]
        recording = options.bag_path is not None
        namespace = options.namespace or None
        # The simulator's own topics are absolute (/map, /odom, /cmd_vel): into the namespace.
        sim_remaps = [] if not namespace else ['--ros-args'] + [
            arg for topic in ('/map', '/odom', '/cmd_vel')
            for arg in ('-r', f'{topic}:={robot_topic(namespace, topic)}')]
        self.sim = SimWorldNode(context=context, namespace=namespace, cli_args=sim_remaps,
                                parameter_overrides=[
                                    Parameter('seed', value=options.seed),
                                    Parameter('real_time_factor',
                                              value=options.real_time_factor),
                                    # The observer and the working-memory node listen to the
                                    # log, and the recorder.
                                    Parameter('log_listeners', value=3 if recording else 2)])
        self.memory = WorkingMemoryNode(
            context=context, namespace=namespace, parameter_overrides=wm_overrides,
            cli_args=params_args)
        self.deciders = [cls(context=context, namespace=namespace, parameter_overrides=sim_time,
                             cli_args=params_args)
                         for cls in CABIN_SETS[options.cabins]]
        self.observer = Observer(self.outcome, context=context, namespace=namespace)
        self.recorder = None
        if recording:
            self.recorder = RecorderNode(context=context, parameter_overrides=sim_time + [
                Parameter('bag_path', value=str(options.bag_path)),
                Parameter('topics', value=[robot_topic(options.namespace, topic)
                                           for topic in RECORDED_TOPICS])])
            self.recorder.set_custom_data('working_memory.seed', str(options.seed))
            self.recorder.set_custom_data('working_memory.drops', describe_drops(options.drops))
            self.recorder.set_custom_data(PARAMS_FILES_KEY, json.dumps(
                [str(path) for path in options.params_files]))
            # One line per recorded topic would bury the demo's progress.
            self.recorder.get_logger().set_level(LoggingSeverity.WARN)
        self.nodes = [self.sim, self.memory, *self.deciders, self.observer]
        if self.recorder is not None:
            self.nodes.append(self.recorder)

    def run(self, executor: Executor | None = None,
            progress: Callable[[Outcome, dict], None] | None = None,
            progress_period_s: float = 1.0,
            until: Callable[[Outcome], bool] | None = None) -> Outcome:
        """Run until delivered (+ settle time), `until(outcome)` holds or a limit; return it.

        Raises RuntimeError when the working-memory node does not configure or activate.
        """
        executor = executor or SingleThreadedExecutor(context=self.sim.context)
        for node in self.nodes:
            executor.add_node(node)
        if self.memory.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise RuntimeError('working_memory node did not configure; see its log')
        if self.recorder is not None:
            # The node declares its parameters when it is built, before the recorder can hear
            # its parameter events: the configuration goes into the bag's metadata instead.
            self.recorder.set_custom_data(PARAMETERS_KEY, json.dumps(parameter_snapshot(
                self.memory)))
            # The node's outputs exist from configure on: record them from the first tick.
            deadline = time.monotonic() + RECORDER_DISCOVERY_S
            while self.recorder.waiting_for and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
        if self.memory.trigger_activate() != TransitionCallbackReturn.SUCCESS:
            raise RuntimeError('working_memory node did not activate; see its log')
        options, outcome = self.options, self.outcome
        started = time.monotonic()
        next_progress = started
        delivered_at = None
        try:
            while True:
                executor.spin_once(timeout_sec=0.05)
                status = self.observer.status
                self._update(status)
                outcome.wall_time_s = time.monotonic() - started
                # From the first status on; after a stall, one line rather than a catch-up burst.
                if progress is not None and status and time.monotonic() >= next_progress:
                    progress(outcome, status)
                    next_progress = time.monotonic() + progress_period_s
                if (options.restart_wm_at_s is not None and not outcome.restarts
                        and outcome.sim_time_s >= options.restart_wm_at_s):
                    self._restart_memory()
                if outcome.delivered and delivered_at is None:
                    delivered_at = outcome.sim_time_s
                if (delivered_at is not None
                        and outcome.sim_time_s - delivered_at >= options.settle_s):
                    break
                if until is not None and until(outcome):
                    break
                if outcome.sim_time_s >= options.sim_time_limit_s:
                    outcome.limit = f'the sim-time limit ({options.sim_time_limit_s:g} s)'
                elif outcome.wall_time_s >= options.wall_time_limit_s:
                    # A machine slower than the real-time factor reaches this one first.
                    outcome.limit = f'the wall-time limit ({options.wall_time_limit_s:g} s)'
                if outcome.limit:
                    outcome.timed_out = not outcome.delivered
                    break
        finally:
            self.memory.trigger_deactivate()
            if self.recorder is not None:
                self.recorder.close()
            executor.shutdown(timeout_sec=1.0)
        return outcome

    def _restart_memory(self) -> None:
        """Empty the working memory as a restart does; it re-reads the writers (resync)."""
        memory = self.memory
        for transition in (memory.trigger_deactivate, memory.trigger_cleanup,
                           memory.trigger_configure, memory.trigger_activate):
            if transition() != TransitionCallbackReturn.SUCCESS:
                raise RuntimeError(f'working_memory restart: {transition.__name__} failed')
        self.outcome.restarts.append(self.outcome.sim_time_s)
        self.observer.ticks_before = self.outcome.ticks

    def destroy(self) -> None:
        """Destroy every node of the scenario."""
        for node in self.nodes:
            node.destroy_node()

    def _update(self, status: dict) -> None:
        if not status:
            return
        outcome = self.outcome
        outcome.sim_time_s = float(status.get('time', outcome.sim_time_s))
        outcome.delivered = bool(status.get('delivered', False))
        outcome.zone_violations = int(status.get('zone_violations', 0))
        outcome.collisions = int(status.get('collisions', 0))
        outcome.door = str(status.get('door', {}).get('state', ''))


def run_scenario(options: ScenarioOptions, context=None, **run_kwargs) -> Outcome:
    """Build, run and destroy one scenario; return its outcome."""
    scenario = Scenario(options, context=context)
    try:
        return scenario.run(**run_kwargs)
    finally:
        scenario.destroy()
