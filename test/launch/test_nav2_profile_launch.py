"""bringup.launch.py profile:=nav2: the Nav2 profile's cabins and sources, no second driver.

With the real launch tools, as a user types `ros2 launch working_memory bringup.launch.py
profile:=nav2`: the node takes the profile's params file and nav2.yaml's sources, a source
writes every required key, no reference executor runs (Nav2's controller drives), and the
reference planner, on a robot that publishes no zone, does not hold.
"""

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from launch import LaunchDescription  # noqa: E402

from working_memory.msg import DecisionStatus  # noqa: E402
from working_memory.ros.qos import diagnostics_qos, stream_qos  # noqa: E402

NAMESPACE = '/nav2_robot'
NODE = f'{NAMESPACE}/working_memory'


@launch_pytest.fixture(scope='module')
def launch_description(include, processes):
    return LaunchDescription([*processes.handlers(),
                              include('bringup.launch.py', namespace=NAMESPACE[1:],
                                      profile='nav2'),
                              launch_pytest.actions.ReadyToTest()])


@pytest.mark.launch(fixture=launch_description)
def test_the_node_takes_the_nav2_profile_and_its_sources(probe):
    diagnostics = probe.collect(DiagnosticArray, '/diagnostics', diagnostics_qos())
    probe.wait_for_state(NODE, 'active')
    parameters = probe.parameters(NODE, ['cabin_names', 'cabins.executor.required',
                                         'sources_file', 'capacity'])
    assert parameters['cabin_names'] == ['planner', 'executor', 'monitor']
    assert parameters['cabins.executor.required'] == ['action:current', 'pose']
    assert parameters['sources_file'].endswith('share/working_memory/config/sources/nav2.yaml')
    assert parameters['capacity'] == 256
    required = probe.status(diagnostics, f'{NODE}: required')
    assert required.message == 'a source writes every required key'
    sources = probe.status(diagnostics, f'{NODE}: sources')
    assert {'amcl.received', 'keepout.received', 'collision_stop.received',
            'navigate.received'} <= {pair.key for pair in sources.values}
    assert probe.parameters(f'{NAMESPACE}/planner', ['goal_key', 'route_key',
                                                     'require_safety']) == {
        'goal_key': 'goal:current', 'route_key': 'route:reference', 'require_safety': False}


@pytest.mark.launch(fixture=launch_description)
def test_no_reference_executor_drives_and_the_planner_holds_for_no_missing_zone(probe):
    statuses = probe.collect(DecisionStatus, f'{NAMESPACE}/planner/status', stream_qos(10))
    probe.wait_for(lambda: len(statuses) >= 3, 'three planner decisions')
    # No goal yet: no route (kept until the replan is due), and no alarm on a robot that
    # publishes no zone.
    assert {status.decision for status in statuses} <= {'no_route', 'keep_route'}

    def names():
        return {name for name, namespace in probe.node.get_node_names_and_namespaces()
                if namespace == NAMESPACE}
    # Discovery shows the nodes one by one: wait for the three, then there is no executor.
    probe.wait_for(lambda: {'working_memory', 'planner', 'monitor'} <= names(),
                   'the working memory, the planner and the monitor in the graph')
    assert 'executor' not in names()


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_every_node_exits_cleanly(processes):
    assert len(processes.exits) == 3
    assert all(code == 0 for _, code in processes.exits), processes.exits
