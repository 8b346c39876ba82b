"""Recorder node over DDS: the topics it is given land in a bag the tools read back."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rclpy
import yaml
from ament_index_python.packages import get_package_prefix
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist
from mcap.reader import make_reader
from nav_msgs.msg import OccupancyGrid
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

from working_memory.msg import (ContextFrame, ContextPack, Eviction, EvictionBatch, MissingItem,
                                WorkingItem)
from working_memory.ros.qos import (best_effort_qos, diagnostics_qos, frame_qos, map_qos,
                                    stream_qos)
from working_memory.tools.bag import BagError, BagReader
from working_memory.tools.inspect import main as inspect_main
from working_memory.tools.recorder_node import RecorderNode
from working_memory.tools.recording import load_recording, message_ids

FRAME_TOPIC = '/working_memory/frame'
EVICTIONS_TOPIC = '/working_memory/evictions'
TIMEOUT_S = 15.0


@pytest.fixture
def context():
    """Yield an rclpy context of this test's own."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    ctx.try_shutdown()


@pytest.fixture
def executor(context):
    """Yield an executor of the test's context; nodes added to it are destroyed afterwards."""
    executor = SingleThreadedExecutor(context=context)
    yield executor
    for node in executor.get_nodes():
        node.destroy_node()
    executor.shutdown()


def spin_until(executor, condition, what: str) -> None:
    """Spin until `condition()` holds; fail naming `what` after TIMEOUT_S."""
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        executor.spin_once(timeout_sec=0.05)


def frame(tick: int, battery: bool) -> ContextFrame:
    """Return a frame whose planner pack serves 'battery' or reports it evicted."""
    pack = ContextPack(tick=tick, cabin='planner', digest=f'p{tick}')
    if battery:
        pack.items = [WorkingItem(key='battery', value='0.8', source='board', importance=0.3)]
    else:
        pack.missing = [MissingItem(key='battery', reason=MissingItem.EVICTED,
                                    detail='evicted at tick 3')]
    msg = ContextFrame(tick=tick, digest=f'digest{tick}', packs=[pack])
    msg.header.stamp.sec = tick
    return msg


def recorder_node(context, bag: Path) -> RecorderNode:
    """Return a recorder writing to `bag`."""
    return RecorderNode(context=context,
                        parameter_overrides=[Parameter('bag_path', value=str(bag))])


def test_recorder_writes_every_frame_eviction_and_diagnostic(context, executor, tmp_path):
    source = rclpy.create_node('wm_source', context=context)
    frames = source.create_publisher(ContextFrame, FRAME_TOPIC, frame_qos())
    evictions = source.create_publisher(EvictionBatch, EVICTIONS_TOPIC, stream_qos())
    diagnostics = source.create_publisher(DiagnosticArray, '/diagnostics', diagnostics_qos())
    recorder = recorder_node(context, tmp_path / 'bag')
    executor.add_node(source)
    executor.add_node(recorder)
    spin_until(executor, lambda: all(p.get_subscription_count() for p in
                                     (frames, evictions, diagnostics)), 'recorder subscriptions')
    for tick in range(1, 6):
        if tick == 3:
            eviction = Eviction(tick=3, key='battery', importance=0.3, reason=Eviction.CAPACITY)
            eviction.header.stamp.sec, eviction.last_used.sec = 3, 1
            batch = EvictionBatch(tick=3, evictions=[eviction])
            batch.header.stamp.sec = 3
            evictions.publish(batch)
        frames.publish(frame(tick, battery=tick < 3))
        spin_until(executor, lambda: recorder.counts[FRAME_TOPIC] == tick, f'frame {tick}')
    status = DiagnosticStatus(name='/working_memory: capacity', level=DiagnosticStatus.ERROR,
                              values=[KeyValue(key='exempt_overflow', value='True')])
    diagnostics.publish(DiagnosticArray(status=[status]))
    spin_until(executor, lambda: recorder.counts['/diagnostics'] == 1, 'diagnostics')
    spin_until(executor, lambda: recorder.counts[EVICTIONS_TOPIC] == 1, 'eviction')
    recorder.close()

    recording = load_recording(recorder.bag_path)
    assert recording.ticks == [1, 2, 3, 4, 5]
    assert [f.digest for f in recording.frames] == [f'digest{t}' for t in range(1, 6)]
    assert recording.frame(2).packs['planner'].item('battery').importance == 0.3
    assert recording.frame(4).packs['planner'].missing[0].reason == 'EVICTED'
    (evicted,) = recording.evictions
    expected = (3, 'battery', 'CAPACITY', 2.0)
    assert (evicted.tick, evicted.key, evicted.reason, evicted.age) == expected
    (diagnostic,) = recording.diagnostics
    assert (diagnostic.level, diagnostic.values) == ('ERROR', {'exempt_overflow': 'True'})
    assert inspect_main([str(recorder.bag_path), '--why', 'battery']) == 0


def test_late_recorder_still_gets_the_latched_frame(context, executor, tmp_path):
    source = rclpy.create_node('wm_source', context=context)
    source.create_publisher(ContextFrame, FRAME_TOPIC, frame_qos()).publish(frame(7, True))
    recorder = recorder_node(context, tmp_path / 'bag')
    executor.add_node(source)
    executor.add_node(recorder)
    spin_until(executor, lambda: recorder.counts[FRAME_TOPIC] == 1, 'the latched frame')
    recorder.close()
    assert load_recording(recorder.bag_path).ticks == [7]


def test_existing_bag_path_is_refused_naming_it(context, tmp_path):
    (tmp_path / 'bag').mkdir()
    with pytest.raises(BagError, match=f'cannot create bag {tmp_path / "bag"}'):
        recorder_node(context, tmp_path / 'bag')


def test_sigint_closes_the_bag_cleanly(context, executor, tmp_path):
    source = rclpy.create_node('wm_source', context=context)
    source.create_publisher(ContextFrame, FRAME_TOPIC, frame_qos()).publish(frame(1, True))
    executor.add_node(source)
    script = Path(get_package_prefix('working_memory')) / 'lib' / 'working_memory' / 'recorder_node'
    bag = tmp_path / 'bag'
    recorder = subprocess.Popen(
        [sys.executable, str(script), '--ros-args', '-p', f'bag_path:={bag}'],
        stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        os.set_blocking(recorder.stderr.fileno(), False)
        log = b''

        def recorded() -> bool:
            nonlocal log
            log += recorder.stderr.read() or b''
            return b'first message on /working_memory/frame recorded' in log

        spin_until(executor, recorded, 'the recorder to log the first frame')
        recorder.send_signal(signal.SIGINT)
        assert recorder.wait(timeout=TIMEOUT_S) == 0
    finally:
        if recorder.poll() is None:
            recorder.kill()
    assert load_recording(bag).ticks == [1]


def test_recorder_finds_types_in_the_graph_and_adapts_qos_to_the_publishers(
        context, executor, tmp_path):
    source = rclpy.create_node('wm_source', context=context)
    grids = source.create_publisher(OccupancyGrid, '/map', map_qos())          # latched
    grids.publish(OccupancyGrid())
    twists = source.create_publisher(Twist, '/cmd_vel', best_effort_qos(10))
    recorder = RecorderNode(context=context, parameter_overrides=[
        Parameter('bag_path', value=str(tmp_path / 'bag')),
        Parameter('topics', value=['/map', '/cmd_vel', '/later'])])
    executor.add_node(source)
    executor.add_node(recorder)
    spin_until(executor, lambda: recorder.counts['/map'] == 1, 'the latched map')
    spin_until(executor, twists.get_subscription_count, 'the /cmd_vel subscription')
    twists.publish(Twist())
    spin_until(executor, lambda: recorder.counts['/cmd_vel'] == 1, 'a twist')
    assert recorder.waiting_for == ['/later']  # no publisher yet: looked for again later
    subscribed = {topic: qos for topic, (_, qos) in recorder._subscribed.items()}
    assert subscribed['/map'].durability == DurabilityPolicy.TRANSIENT_LOCAL
    assert subscribed['/map'].reliability == ReliabilityPolicy.RELIABLE
    assert subscribed['/cmd_vel'].reliability == ReliabilityPolicy.BEST_EFFORT
    assert subscribed['/cmd_vel'].durability == DurabilityPolicy.VOLATILE
    later = source.create_publisher(DiagnosticArray, '/later', diagnostics_qos())
    spin_until(executor, later.get_subscription_count, 'the recorder to find /later')
    later.publish(DiagnosticArray())
    spin_until(executor, lambda: recorder.counts['/later'] == 1, 'a message on /later')
    recorder.close()

    metadata = (recorder.bag_path / 'metadata.yaml').read_text()
    topics = {t['topic_metadata']['name']: t['topic_metadata'] for t in yaml.safe_load(
        metadata)['rosbag2_bagfile_information']['topics_with_message_count']}
    assert topics['/cmd_vel']['type'] == 'geometry_msgs/msg/Twist'
    (offered,) = topics['/cmd_vel']['offered_qos_profiles']
    assert offered['reliability'] == 'best_effort'  # the graph does not tell the depth
    (offered,) = topics['/map']['offered_qos_profiles']
    assert offered['durability'] == 'transient_local'


def test_each_recorded_message_has_its_publisher_and_number_in_a_bag_any_mcap_reader_reads(
        context, executor, tmp_path):
    # Two publishers on one topic, interleaved: the bag's message ids name each message's
    # publisher (its gid) and number, in the order recorded, on the recorder's hidden topic.
    source = rclpy.create_node('wm_source', context=context)
    first, second = (source.create_publisher(DiagnosticArray, '/diagnostics', diagnostics_qos())
                     for _ in range(2))
    recorder = RecorderNode(context=context, parameter_overrides=[
        Parameter('bag_path', value=str(tmp_path / 'bag')),
        Parameter('topics', value=['/diagnostics'])])
    executor.add_node(source)
    executor.add_node(recorder)
    spin_until(executor, lambda: first.get_subscription_count()
               and second.get_subscription_count(), 'recorder subscription')
    for index, publisher in enumerate((first, second, second, first)):
        publisher.publish(DiagnosticArray(status=[DiagnosticStatus(name=f'm{index}')]))
        spin_until(executor, lambda: recorder.counts['/diagnostics'] == index + 1, f'm{index}')
    gids = {bytes(info.endpoint_gid): info for info in
            source.get_publishers_info_by_topic('/diagnostics')}
    recorder.close()
    with BagReader(recorder.bag_path) as reader:
        run_ids = message_ids([message.msg for message in reader.messages(
            ['/recorder_node/_message_ids'])])
    publishers = [gid for gid, _ in run_ids['/diagnostics']]
    assert publishers[0] == publishers[3] != publishers[1] == publishers[2]
    assert set(publishers) <= set(gids)
    assert [number for _, number in run_ids['/diagnostics']] == [1, 1, 2, 2]
    # Foxglove's MCAP reader decodes every message, the message ids' too (ros2msg schema).
    (path,) = recorder.bag_path.glob('*.mcap')
    with open(path, 'rb') as stream:
        seen = [(channel.topic, schema.name, schema.encoding)
                for schema, channel, _ in make_reader(stream).iter_messages()]
    assert ('/recorder_node/_message_ids', 'working_memory/msg/RecordedIds', 'ros2msg') in seen
    assert sum(topic == '/diagnostics' for topic, _, _ in seen) == 4
