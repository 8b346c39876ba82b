"""The packaged params file configures namespaced nodes; /diagnostics names the node fully."""

import pathlib

import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from lifecycle_msgs.msg import State
from rclpy.lifecycle import TransitionCallbackReturn

from working_memory.decision.planner_node import PlannerNode
from working_memory.ros.node import WorkingMemoryNode

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'working_memory.yaml'
PARAMS_FILE = ['--ros-args', '--params-file', str(CONFIG)]
SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE
LEVEL = {DiagnosticStatus.OK: 'OK', DiagnosticStatus.WARN: 'WARN',
         DiagnosticStatus.ERROR: 'ERROR'}


def level(status):
    return LEVEL[status.level]


@pytest.mark.parametrize('suffix', ['', '/robot1', '/fleet/robot2'])
def test_packaged_params_file_configures_the_node_in_any_namespace(context, add_node, namespace,
                                                                   suffix):
    # '' puts the node in the root namespace, as `ros2 run` does by default.
    node_namespace = namespace + suffix if suffix else None
    node = add_node(WorkingMemoryNode(context=context, namespace=node_namespace,
                                      cli_args=PARAMS_FILE))
    assert node.get_parameter('capacity').value == 40          # declared before configure
    assert node.trigger_configure() == SUCCESS
    assert list(node._engine.manifests) == ['planner', 'executor', 'monitor']
    assert node._engine.config.capacity == 40
    assert node.get_parameter('cabins.planner.map.radius_m').value == 8.0


def test_planner_in_a_namespace_reads_its_key_of_the_packaged_file(context, add_node, namespace):
    planner = add_node(PlannerNode(context=context, namespace=f'{namespace}/robot1',
                                   cli_args=PARAMS_FILE))
    assert planner.params['robot_radius_m'] == 0.35


def test_statuses_are_named_by_the_fully_qualified_node_name(start_memory):
    _, probe = start_memory()
    status = probe.status('capacity')
    assert status.name == f'{probe.fully_qualified_name}: capacity'
    assert status.hardware_id == probe.fully_qualified_name
    array = next(array for array in reversed(probe.diagnostics)
                 if any(s.name == status.name for s in array.status))
    names = [s.name.removeprefix(f'{probe.fully_qualified_name}: ') for s in array.status]
    assert names == ['lifecycle', 'capacity', 'ticks', 'inputs', 'qos', 'missing', 'board',
                     'resync', 'required', 'twins']
    assert level(array.status[0]) == 'OK' and array.status[0].message == 'active: ticking'


def test_a_failed_configure_is_an_error_status_with_the_reason(start_memory):
    node, probe = start_memory({'capacty': 5}, configure=False)
    assert node.trigger_configure() == FAILURE
    assert node._state_machine.current_state[0] == State.PRIMARY_STATE_UNCONFIGURED
    status = probe.status('lifecycle', lambda s: level(s) == 'ERROR')
    assert status.message == ('unconfigured: configure failed: capacty: unknown parameter '
                              '(did you mean capacity?)')
    assert status.hardware_id == probe.fully_qualified_name
    assert probe.values(status)['state'] == 'unconfigured'


@pytest.mark.parametrize('configure, state, message', [
    (False, 'unconfigured', 'unconfigured: waiting for configure'),
    (True, 'inactive', 'inactive: not ticking'),
])
def test_a_node_that_does_not_tick_still_publishes_its_lifecycle_state(start_memory, configure,
                                                                       state, message):
    _, probe = start_memory({'diagnostics_period_s': 0.1}, configure=configure, activate=False)
    status = probe.status('lifecycle', lambda s: probe.values(s)['state'] == state)
    assert (level(status), status.message) == ('WARN', message)
    assert not probe.frames


def test_an_active_node_on_a_silent_trigger_topic_warns_on_diagnostics(start_memory):
    # Active, but no message on its trigger topic: /diagnostics says so, and why.
    node, probe = start_memory({'trigger_topic': 'decide', 'diagnostics_period_s': 0.1})
    status = probe.status('lifecycle', lambda s: s.message.startswith('active: no tick for '))
    assert probe.values(status)['state'] == 'active' and level(status) == 'WARN'
    assert status.message.endswith(': no message on decide')


def test_deactivate_turns_the_lifecycle_status_from_ok_to_inactive(start_memory):
    node, probe = start_memory({'diagnostics_period_s': 0.1})
    probe.status('lifecycle', lambda s: level(s) == 'OK')
    assert node.trigger_deactivate() == SUCCESS
    status = probe.status('lifecycle', lambda s: probe.values(s)['state'] == 'inactive')
    assert level(status) == 'WARN'
