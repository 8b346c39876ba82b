"""ROS test fixtures: an rclpy context per test module, an executor and a bounded spin_until.

Nodes run over real DDS in this process, in the domain of ROS_DOMAIN_ID
(test/conftest.py sets one when the Makefile did not).
"""

import itertools
import os
import time
from pathlib import Path

import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import OccupancyGrid
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from working_memory.msg import BoardUpdate, ContextFrame, EvictionBatch, LogEvent
from working_memory.ros import qos
from working_memory.ros.node import WorkingMemoryNode
from working_memory.ros.ticking import make_executor
from working_memory.srv import Assemble, Explain
from working_memory.tools.recording import load_run
from working_memory.tools.replay import Agreement, Settings, agreement

SPIN_LIMIT_S = 20.0  # bounds a hung test; never a timing assertion
_namespaces = itertools.count()


@pytest.fixture(scope='module')
def context():
    """Yield an initialised rclpy context of this test module, in the domain of ROS_DOMAIN_ID."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    yield context
    context.try_shutdown()


@pytest.fixture
def executor(context):
    """Yield the executor arrangement the node runs in (`make_executor`), shut down after."""
    executor = make_executor(context)
    yield executor
    # Destroyed before the shutdown, which forgets the executor's nodes.
    for node in list(executor.get_nodes()):
        executor.remove_node(node)
        node.destroy_node()
    executor.shutdown()


@pytest.fixture
def add_node(executor):
    """Return add(node) -> node: spin `node` with the test's executor, destroy it after."""
    def add(node):
        executor.add_node(node)
        return node
    return add


@pytest.fixture
def spin_until(executor):
    """Return spin(predicate, timeout=SPIN_LIMIT_S, on_spin=None) -> bool.

    Spins the executor until `predicate()` holds (True) or `timeout` [s] of
    wall time passes (False); `on_spin()` runs before every spin step.
    """
    def spin(predicate, timeout=SPIN_LIMIT_S, on_spin=None):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                return False
            if on_spin is not None:
                on_spin()
            executor.spin_once(timeout_sec=0.01)
        return True
    return spin


@pytest.fixture
def change_state_ready(spin_until):
    """Return ready(client) -> bool: a lifecycle change_state client's replies come through.

    service_is_ready sees the request side only; a loaded machine may not yet have matched
    the reply side, and a reply then is dropped (rmw: 'failed to send response'), which
    for a transition is not to be retried. A transition of no known name, refused, proves
    the reply way first.
    """
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    def answered(client):
        future = client.call_async(ChangeState.Request(transition=Transition(label='no_such')))
        if spin_until(future.done, timeout=1.0):
            assert not future.result().success
            return True
        client.remove_pending_request(future)
        return False

    def ready(client):
        return spin_until(client.service_is_ready) and spin_until(lambda: answered(client))
    return ready


@pytest.fixture
def namespace():
    """Return a namespace of this test's own, so no endpoint of an earlier test can match."""
    return f'/wm_test_{os.getpid()}_{next(_namespaces)}'


class MemoryProbe:
    """A test node around one working-memory node: feeds its inputs and records its outputs."""

    def __init__(self, context, namespace, spin_until, node_name='working_memory'):
        self.node = rclpy.create_node('wm_probe', namespace=namespace, context=context)
        self.spin_until = spin_until
        self.node_name = node_name
        self.fully_qualified_name = f'{namespace}/{node_name}'
        self.frames, self.batches, self.diagnostics = [], [], []
        own = f'{namespace}/{node_name}'
        self.board = self.node.create_publisher(BoardUpdate, 'board', qos.stream_qos())
        self.map = self.node.create_publisher(OccupancyGrid, 'map', qos.map_qos())
        self.log = self.node.create_publisher(LogEvent, 'log', qos.stream_qos())
        self.node.create_subscription(ContextFrame, f'{own}/frame', self.frames.append,
                                      qos.frame_qos())
        self.node.create_subscription(EvictionBatch, f'{own}/evictions', self.batches.append,
                                      qos.stream_qos())
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self.diagnostics.append,
                                      qos.diagnostics_qos())
        self.assemble_client = self.node.create_client(Assemble, f'{own}/assemble')
        self.explain_client = self.node.create_client(Explain, f'{own}/explain')

    @property
    def evictions(self):
        """Return every Eviction received so far, from all eviction batches."""
        return [eviction for batch in self.batches for eviction in batch.evictions]

    def call(self, client, request):
        """Call a service and return its response (spinning until it arrives)."""
        assert self.spin_until(client.service_is_ready), f'{client.srv_name} not available'
        future = client.call_async(request)
        assert self.spin_until(future.done), f'no answer from {client.srv_name}'
        return future.result()

    def assemble(self, cabin, tick=0):
        return self.call(self.assemble_client, Assemble.Request(cabin=cabin, tick=tick))

    def explain(self, cabin, key, tick=0):
        return self.call(self.explain_client, Explain.Request(cabin=cabin, key=key, tick=tick))

    def wait_matched(self, *publishers):
        """Spin until each publisher has a subscriber (volatile messages are lost before)."""
        assert self.spin_until(lambda: all(p.get_subscription_count() for p in publishers))

    def wait_frame(self, predicate=lambda frame: True, timeout=SPIN_LIMIT_S):
        """Spin until a frame received from now on satisfies `predicate`; return it."""
        start = len(self.frames)
        found = []

        def seen():
            found.extend(f for f in self.frames[start + len(found):] if predicate(f))
            return bool(found)
        assert self.spin_until(seen, timeout), 'no matching frame'
        return found[0]

    def status(self, name, predicate=lambda status: True, on_spin=None):
        """Spin until this node's diagnostic status `name` satisfies `predicate`; return it."""
        full_name = f'{self.fully_qualified_name}: {name}'
        found = []

        def seen():
            found[:] = [s for array in self.diagnostics for s in array.status
                        if s.name == full_name and predicate(s)]
            return bool(found)
        assert self.spin_until(seen, on_spin=on_spin), \
            f'no diagnostic status {full_name!r} as expected'
        return found[-1]

    @staticmethod
    def values(status):
        """Return a DiagnosticStatus's key/values as a dict."""
        return {pair.key: pair.value for pair in status.values}


# Two small cabins: a planner with a map window and constraint/failure events, an executor.
CABINS = {
    'cabin_names': ['planner', 'executor'],
    'cabins.planner.board_keys': ['goal:*', 'safety:*', 'pose', 'battery', 'reading:*'],
    'cabins.planner.required': ['goal:*', 'pose', 'map'],
    'cabins.planner.weights': ['goal:*=1.0', 'pose=0.9', 'reading:*=0.1'],
    'cabins.planner.map.radius_m': 1.0,
    'cabins.planner.events.window_s': 60.0,
    'cabins.planner.events.kinds': ['CONSTRAINT', 'FAILURE'],
    'cabins.planner.tags.exclude': ['charging'],
    'cabins.executor.board_keys': ['action:*', 'pose'],
    'cabins.executor.required': ['action:current'],
    'cabins.executor.events.window_s': 30.0,
}
FAST = {'tick_hz': 50.0, 'diagnostics_period_s': 0.0}


@pytest.fixture
def start_memory(context, namespace, add_node, spin_until):
    """Return start(params=None, configure=True, activate=True, cli_args=None, cabins=True).

    It returns (node, probe). The node gets CABINS (unless not `cabins`: its params files
    name them) and FAST plus `params`, in this test's namespace.
    """
    def start(params=None, configure=True, activate=True, cli_args=None, cabins=True):
        values = {**(CABINS if cabins else {}), **FAST, **(params or {})}
        node = add_node(WorkingMemoryNode(
            namespace=namespace, context=context, cli_args=cli_args,
            parameter_overrides=[Parameter(name, value=value) for name, value in values.items()]))
        probe = MemoryProbe(context, namespace, spin_until)
        add_node(probe.node)
        if configure:
            assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        if configure and activate:
            assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        return node, probe
    return start


# -- recorded closed-loop runs, shared by the whole session --------------------------------

# Wall-time bounds only stop a hung run; the assertions are about behaviour.
CLOSED_LOOP_WALL_LIMIT_S = 120.0


def executor_manifest_without_doors(path):
    """Write the packaged params with an executor manifest that lacks door:* to `path`."""
    import yaml
    from working_memory.demo.scenario import default_params_file
    document = yaml.safe_load(default_params_file().read_text())
    executor = document['/**/working_memory']['ros__parameters']['cabins']['executor']
    executor['board_keys'] = [key for key in executor['board_keys'] if key != 'door:*']
    executor['weights'] = [weight for weight in executor['weights']
                           if not weight.startswith('door:')]
    path.write_text(yaml.safe_dump(document))
    return path


EXAMPLES = Path(__file__).resolve().parents[2] / 'config' / 'examples'


def capacity_file(folder, capacity):
    """Write a params file that sets only the capacity; return its path."""
    path = folder / f'capacity_{capacity}.yaml'
    path.write_text(f'/**/working_memory:\n  ros__parameters:\n    capacity: {capacity}\n')
    return path


@pytest.fixture(scope='session')
def recorded_run(tmp_path_factory):
    """Return record(name) -> (Outcome, bag): each closed-loop run recorded once per session.

    Runs (a closed loop takes ~20 s wall, so tests share them):
    - 'baseline': nothing dropped, the delivery succeeds;
    - 'no_constraints': `--drop planner:constraints`, 12 s of sim time;
    - 'no_doors': an executor manifest without door:*; it stops 3 s of sim time after
      the robot hits the closed door (it cannot see it);
    - 'capacity_12': the packaged config with capacity 12 (real pressure) after it;
    - 'delta_no_safety': robot delta (namespace /delta) whose planner manifest lacks the
      safety constraints (config/examples), 4 s of sim time.
    """
    from working_memory.demo.scenario import ScenarioOptions, parse_drops, run_scenario
    runs = {}
    folder = tmp_path_factory.mktemp('recorded_runs')

    def record(name):
        if name in runs:
            return runs[name]
        options = {'baseline': {},
                   'no_constraints': {'drops': parse_drops(['planner:constraints']),
                                      'sim_time_limit_s': 12.0},
                   'no_doors': {'params_file': executor_manifest_without_doors(
                       folder / 'no_doors.yaml'), 'sim_time_limit_s': 60.0},
                   'capacity_12': {'params_files': (capacity_file(folder, 12),)},
                   'delta_no_safety': {'params_files': (EXAMPLES / 'planner_without_safety.yaml',),
                                       'robot': 'delta', 'sim_time_limit_s': 4.0}}[name]
        hit = []

        def until(outcome):
            if outcome.collisions and not hit:
                hit.append(outcome.sim_time_s)
            return bool(hit) and outcome.sim_time_s - hit[0] >= 3.0
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
        try:
            outcome = run_scenario(ScenarioOptions(
                bag_path=folder / name, wall_time_limit_s=CLOSED_LOOP_WALL_LIMIT_S, **options),
                context=context, until=until if name == 'no_doors' else None)
        finally:
            context.try_shutdown()
        runs[name] = outcome, folder / name
        return runs[name]
    return record


@pytest.fixture
def replayed():
    """Return `replay(recorder, node)`: close the recorder's bag, replay it as the node ran.

    The settings are the node's parameters as they are now; returns (run, settings, agreement).
    """
    def replay(recorder, node) -> tuple[object, Settings, Agreement]:
        recorder.close()
        run = load_run(recorder.bag_path)
        values = {name: parameter.value
                  for name, parameter in node.get_parameters_by_prefix('').items()}
        settings = Settings(values, 'the node', node.get_fully_qualified_name())
        return run, settings, agreement(run, settings)
    return replay
