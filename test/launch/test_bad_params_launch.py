"""working_memory.launch.py with a typo in the params file: unconfigured, and it says why."""

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from launch import LaunchDescription  # noqa: E402

from working_memory.ros.qos import diagnostics_qos  # noqa: E402

NODE = '/bad/working_memory'
REASON = 'capacty: unknown parameter (did you mean capacity?)'


@pytest.fixture(scope='module')
def typo_params_file(params_file, tmp_path_factory):
    """Return a copy of the packaged params file with `capacity` misspelt."""
    text = params_file.read_text()
    assert '    capacity: 40' in text
    path = tmp_path_factory.mktemp('params') / 'typo.yaml'
    path.write_text(text.replace('    capacity: 40', '    capacty: 40'))
    return path


@launch_pytest.fixture(scope='module')
def launch_description(include, processes, typo_params_file):
    return LaunchDescription([
        *processes.handlers(),
        include('working_memory.launch.py', namespace='bad', params_file=typo_params_file),
        launch_pytest.actions.ReadyToTest()])


@pytest.mark.launch(fixture=launch_description)
def test_a_failed_configure_is_an_error_on_diagnostics_and_the_node_stays_unconfigured(probe):
    diagnostics = probe.collect(DiagnosticArray, '/diagnostics', diagnostics_qos())
    status = probe.status(diagnostics, f'{NODE}: lifecycle',
                          lambda status: status.level == DiagnosticStatus.ERROR)
    assert status.message == f'unconfigured: configure failed: {REASON}'
    assert status.hardware_id == NODE
    assert probe.state(NODE) == 'unconfigured'


@pytest.mark.launch(fixture=launch_description)
def test_the_log_names_the_typo_and_the_closest_parameter(probe, processes):
    probe.wait_for(lambda: any(f'configure failed: {REASON}' in line
                               for line in processes.stderr), 'the configure failure in the log')


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_the_unconfigured_node_still_exits_cleanly(processes):
    assert processes.exits and all(code == 0 for _, code in processes.exits), processes.exits
