"""bringup.launch.py with cabins:=trees: the planner runs as a py_trees tree, same topics."""

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from launch import LaunchDescription  # noqa: E402

from working_memory.msg import ContextFrame, DecisionStatus  # noqa: E402
from working_memory.ros.qos import frame_qos, stream_qos  # noqa: E402

NAMESPACE = '/trees'
NODES = ('working_memory', 'planner', 'executor', 'monitor')


@launch_pytest.fixture(scope='module')
def launch_description(include, processes):
    return LaunchDescription([*processes.handlers(),
                              include('bringup.launch.py', namespace=NAMESPACE[1:],
                                      cabins='trees'),
                              launch_pytest.actions.ReadyToTest()])


@pytest.mark.launch(fixture=launch_description)
def test_the_tree_planner_reports_the_frame_it_read(probe):
    frames = probe.collect(ContextFrame, f'{NAMESPACE}/working_memory/frame', frame_qos())
    statuses = probe.collect(DecisionStatus, f'{NAMESPACE}/planner/status', stream_qos(10))
    probe.wait_for(lambda: statuses and frames, 'a frame and a status of the planner tree')
    digests = {frame.tick: frame.digest for frame in frames}
    probe.wait_for(lambda: any(status.tick in digests for status in statuses),
                   'a planner status of a tick the probe received')
    status = next(status for status in statuses if status.tick in digests)
    assert (status.cabin, status.digest) == ('planner', digests[status.tick])


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_the_planner_process_is_the_tree_and_every_node_exits_cleanly(processes):
    assert len(processes.exits) == len(NODES)
    assert all(code == 0 for _, code in processes.exits), processes.exits
    assert [name for name, _ in processes.exits if name.startswith('planner_tree_node')], \
        processes.exits
