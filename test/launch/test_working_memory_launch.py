"""working_memory.launch.py as a user runs it: defaults only, the node comes up active."""

import time

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from launch import LaunchDescription  # noqa: E402

from working_memory.msg import ContextFrame  # noqa: E402
from working_memory.ros.qos import diagnostics_qos, frame_qos  # noqa: E402

NODE = '/working_memory'


@launch_pytest.fixture(scope='module')
def launch_description(include, processes):
    return LaunchDescription([*processes.handlers(), include('working_memory.launch.py'),
                              launch_pytest.actions.ReadyToTest()])


@pytest.mark.launch(fixture=launch_description)
def test_autostart_reaches_active_and_publishes_frames(probe):
    frames = probe.collect(ContextFrame, f'{NODE}/frame', frame_qos())
    probe.wait_for_state(NODE, 'active')
    probe.wait_for(lambda: frames and frames[-1].tick > 0, f'a frame on {NODE}/frame')
    assert [pack.cabin for pack in frames[-1].packs] == ['planner', 'executor', 'monitor']


@pytest.mark.launch(fixture=launch_description)
def test_the_node_is_configured_as_the_packaged_params_file_says(probe):
    assert probe.parameters(NODE, ['capacity', 'cabin_names', 'cabins.planner.map.radius_m',
                                   'use_sim_time']) == {
        'capacity': 40, 'cabin_names': ['planner', 'executor', 'monitor'],
        'cabins.planner.map.radius_m': 8.0, 'use_sim_time': False}


@pytest.mark.launch(fixture=launch_description)
def test_diagnostics_name_the_node_and_report_it_active(probe):
    diagnostics = probe.collect(DiagnosticArray, '/diagnostics', diagnostics_qos())
    status = probe.status(diagnostics, f'{NODE}: lifecycle',
                          lambda status: status.level == DiagnosticStatus.OK)
    assert (status.message, status.hardware_id) == ('active: ticking', NODE)


@pytest.mark.launch(fixture=launch_description)
def test_the_launch_activates_once_and_a_later_configure_stays_inactive(probe):
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    def change(transition):
        request = ChangeState.Request(transition=Transition(id=transition))
        assert probe.call(ChangeState, f'{NODE}/change_state', request).success
    probe.wait_for_state(NODE, 'active')
    # A transition of no known name, refused (and so safe to send again), proves the
    # reply way before the transitions, which are not to be sent twice.
    assert not probe.call(ChangeState, f'{NODE}/change_state', ChangeState.Request(
        transition=Transition(label='no_such')), resend_s=probe.RESEND_S).success
    for transition in (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_CLEANUP,
                       Transition.TRANSITION_CONFIGURE):
        change(transition)
    time.sleep(1.0)   # the launch's handler, were it still listening, would have activated
    assert probe.state(NODE) == 'inactive'
    change(Transition.TRANSITION_ACTIVATE)   # as the other tests of this launch expect it
    probe.wait_for_state(NODE, 'active')


def test_the_activation_handler_is_registered_for_one_transition():
    # What the test above can only watch for a second: the handler is handle_once.
    import importlib.util
    import pathlib

    from launch import LaunchContext
    from launch.actions import RegisterEventHandler
    from launch_ros.event_handlers import OnStateTransition
    path = pathlib.Path(__file__).parents[2] / 'launch' / 'working_memory.launch.py'
    spec = importlib.util.spec_from_file_location('working_memory_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    context = LaunchContext()
    context.launch_configurations.update({'respawn': 'false', 'respawn_delay': '1.0'})
    handlers = [entity.event_handler for entity in module.node_and_transitions(context)
                if isinstance(entity, RegisterEventHandler)
                and isinstance(entity.event_handler, OnStateTransition)]
    assert len(handlers) == 1 and handlers[0].handle_once
    # With respawn each process brings itself up (launch's events would reach the first).
    context.launch_configurations['respawn'] = 'true'
    node, = module.node_and_transitions(context)
    assert '--autostart' in [getattr(part, 'text', None) for part in sum(node.cmd, [])]


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_the_node_exits_cleanly_at_shutdown(processes):
    assert processes.exits and all(code == 0 for _, code in processes.exits), processes.exits
