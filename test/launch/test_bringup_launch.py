"""bringup.launch.py in a namespace on sim time: every node up, the decision nodes get frames.

The test plays the simulator's /clock, from sim time 1000 s: every stamp the nodes
publish is sim time, and ticks follow it.
"""

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch tools come from ../shared/wheels (make installs them there)')

from launch import LaunchDescription  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402

from working_memory.msg import ContextFrame, DecisionStatus  # noqa: E402
from working_memory.ros.conversions import seconds_from_time, time_from_seconds  # noqa: E402
from working_memory.ros.qos import frame_qos, stream_qos  # noqa: E402

NAMESPACE = '/fleet'
NODES = ('working_memory', 'planner', 'executor', 'monitor')
SIM_START_S = 1000.0
CLOCK_STEP_NS = 50_000_000   # sim time per clock message, one per 50 ms of wall time


@launch_pytest.fixture(scope='module')
def launch_description(include, processes):
    return LaunchDescription([*processes.handlers(),
                              include('bringup.launch.py', namespace=NAMESPACE[1:],
                                      use_sim_time='true'),
                              launch_pytest.actions.ReadyToTest()])


@pytest.fixture
def sim_clock(probe):
    """Publish /clock from SIM_START_S while the probe spins; return the list of sent times [s]."""
    publisher = probe.node.create_publisher(Clock, '/clock', QoSProfile(depth=10))
    sent = [SIM_START_S]

    def tick():
        # Whole nanoseconds: the stamps the nodes echo back compare exactly.
        sent.append(SIM_START_S + len(sent) * CLOCK_STEP_NS * 1e-9)
        publisher.publish(Clock(clock=time_from_seconds(sent[-1])))
    probe.node.create_timer(CLOCK_STEP_NS * 1e-9, tick)
    return sent


@pytest.mark.launch(fixture=launch_description)
def test_every_node_comes_up_in_the_namespace_on_sim_time(probe):
    def all_up():
        return set(NODES) <= {name for name, namespace in
                              probe.node.get_node_names_and_namespaces()
                              if namespace == NAMESPACE}
    probe.wait_for(all_up, f'{NODES} in {NAMESPACE}')
    for name in NODES:
        assert probe.parameters(f'{NAMESPACE}/{name}', ['use_sim_time']) == {
            'use_sim_time': True}, name
    assert probe.parameters(f'{NAMESPACE}/planner', ['robot_radius_m']) == {
        'robot_radius_m': 0.35}   # the params file's /**/planner key
    probe.wait_for_state(f'{NAMESPACE}/working_memory', 'active')


@pytest.mark.launch(fixture=launch_description)
def test_the_decision_nodes_receive_frames_stamped_in_sim_time(probe, sim_clock):
    frames = probe.collect(ContextFrame, f'{NAMESPACE}/working_memory/frame', frame_qos())
    statuses = {cabin: probe.collect(DecisionStatus, f'{NAMESPACE}/{cabin}/status',
                                     stream_qos(10))
                for cabin in ('planner', 'executor', 'monitor')}
    probe.wait_for(lambda: frames and seconds_from_time(frames[-1].header.stamp) > SIM_START_S,
                   'a frame ticked on the test clock')
    probe.wait_for(lambda: all(statuses.values()), 'a status from every decision node')
    for cabin, received in statuses.items():
        status = received[-1]
        assert (status.cabin, status.tick > 0) == (cabin, True)
        stamp = seconds_from_time(status.header.stamp)
        assert SIM_START_S <= stamp <= sim_clock[-1] + 1e-6, (cabin, stamp)


@pytest.mark.launch(fixture=launch_description, shutdown=True)
def test_every_node_exits_cleanly(processes):
    assert len(processes.exits) == len(NODES)
    assert all(code == 0 for _, code in processes.exits), processes.exits
