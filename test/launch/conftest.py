"""Launch-test fixtures: the package's launch files, their processes' output, a probe node.

The launch tests start the real launch files with launch_pytest (launch, launch_ros and
launch_pytest come from ../shared/wheels); without those tools they are skipped with a
reason. The probe runs in the test's thread in a context of its own, spins only while a
test waits for something, and bounds every wait (a hung launch, never a timing assertion).
"""

import pathlib
import time

import pytest

try:
    from launch_pytest.fixture import (get_event_loop_fixture, get_launch_context_fixture,
                                       get_launch_service_fixture)
except ImportError:  # the launch tests skip themselves with the reason
    pass
else:
    # One launch per test module, shared by its tests. launch_pytest would put these in the
    # module itself, but it looks the module up by stack frame, which pytest's importlib
    # import mode defeats.
    event_loop = get_event_loop_fixture(scope='module')
    launch_service = get_launch_service_fixture(scope='module')
    launch_context = get_launch_context_fixture(scope='module')

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_DIR = ROOT / 'launch'
WAIT_S = 30.0  # bounds a hung launch, never a timing assertion
# A read-only request not answered after this long [s] is sent again (a dropped reply).
RESEND_S = 2.0


@pytest.fixture(scope='module')
def params_file():
    """Return the packaged params file, config/working_memory.yaml."""
    return ROOT / 'config' / 'working_memory.yaml'


@pytest.fixture(scope='module')
def include():
    """Return make(file_name, **arguments): the package's launch file as an include action."""
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    def make(file_name, **arguments):
        return IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(LAUNCH_DIR / file_name)),
            launch_arguments={name: str(value) for name, value in arguments.items()}.items())
    return make


class Processes:
    """What the launched processes wrote on stderr and how they exited."""

    def __init__(self):
        self.stderr: list[str] = []
        self.exits: list[tuple[str, int]] = []

    def handlers(self):
        """Return the actions recording every launched process's stderr lines and exit."""
        from launch.actions import RegisterEventHandler
        from launch.event_handlers import OnProcessExit, OnProcessIO
        return [
            RegisterEventHandler(OnProcessIO(
                on_stderr=lambda event: self.stderr.extend(event.text.decode().splitlines()))),
            RegisterEventHandler(OnProcessExit(
                on_exit=lambda event, context: self.exits.append(
                    (event.action.name, event.returncode)))),
        ]


@pytest.fixture(scope='module')
def processes():
    """Return a Processes record; put its handlers() first in the launch description."""
    return Processes()


class Probe:
    """A node beside the launched ones: subscribes, calls services, waits with a bound."""

    RESEND_S = RESEND_S

    def __init__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('launch_probe', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def close(self):
        self.executor.remove_node(self.node)
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()

    def wait_for(self, predicate, what, timeout=WAIT_S):
        """Spin until `predicate()` holds; fail naming `what` after `timeout` [s]."""
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f'timed out waiting for {what}'
            self.executor.spin_once(timeout_sec=0.05)

    def collect(self, msg_type, topic, qos):
        """Subscribe to `topic`; return the list its messages are appended to."""
        received = []
        self.node.create_subscription(msg_type, topic, received.append, qos)
        return received

    def call(self, srv_type, name, request, resend_s=None):
        """Call service `name` once it is available; return the response.

        `service_is_ready` sees the request's way only: a reply sent before the client's
        reply reader is matched is dropped (Fast DDS: "failed to send response"). A
        request that only reads may be sent again every `resend_s` [s] until one is answered.
        """
        client = self.node.create_client(srv_type, name)
        self.wait_for(client.service_is_ready, f'service {name}')
        futures = [client.call_async(request)]
        sent = time.monotonic()

        def answered():
            nonlocal sent
            if resend_s is not None and time.monotonic() - sent > resend_s:
                futures.append(client.call_async(request))
                sent = time.monotonic()
            return any(future.done() for future in futures)
        self.wait_for(answered, f'an answer from {name}')
        self.node.destroy_client(client)
        return next(future for future in futures if future.done()).result()

    def state(self, node_name):
        """Return the lifecycle state label of `node_name` (fully qualified)."""
        from lifecycle_msgs.srv import GetState
        return self.call(GetState, f'{node_name}/get_state', GetState.Request(),
                         resend_s=RESEND_S).current_state.label

    def wait_for_state(self, node_name, label):
        """Wait until lifecycle node `node_name` reports state `label`."""
        states = []

        def reached():
            states.append(self.state(node_name))
            return states[-1] == label
        self.wait_for(reached, f'{node_name} to be {label} (last seen: {states[-1:]})')

    def parameters(self, node_name, names):
        """Return {name: value} of `node_name`'s parameters, read with a GetParameters call."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python
        response = self.call(GetParameters, f'{node_name}/get_parameters',
                             GetParameters.Request(names=names), resend_s=RESEND_S)
        return {name: parameter_value_to_python(value)
                for name, value in zip(names, response.values)}

    def status(self, diagnostics, name, predicate=lambda status: True):
        """Wait until a status called `name` satisfying `predicate` is in `diagnostics`."""
        found = []

        def seen():
            found[:] = [status for array in diagnostics for status in array.status
                        if status.name == name and predicate(status)]
            return bool(found)
        self.wait_for(seen, f'diagnostic status {name!r} as expected')
        return found[-1]


@pytest.fixture
def probe():
    """Yield a Probe node, closed after the test."""
    probe = Probe()
    yield probe
    probe.close()
