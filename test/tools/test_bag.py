"""BagWriter/BagReader: storage plugins, type hashes, QoS records and clear errors."""

import json
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_share_directory
from rosbags.rosbag2 import Reader

from working_memory.tools.bag import BagError, BagReader, BagWriter, FRAME_TYPE, receive_stamp
from working_memory.tools.recording import load_recording


@pytest.mark.parametrize('storage, suffix', [('mcap', '.mcap'), ('sqlite3', '.db3')])
def test_both_storage_plugins_hold_the_whole_run(write_run, storage, suffix):
    bag = write_run(storage)
    assert any(path.suffix == suffix for path in bag.iterdir())
    recording = load_recording(bag)
    assert recording.ticks == list(range(1, 10))
    assert [e.key for e in recording.evictions] == ['battery', 'scan']
    assert {d.level for d in recording.diagnostics} == {'ERROR', 'OK'}


def test_bag_type_hashes_match_the_ones_rosidl_generated(synthetic_bag):
    share = Path(get_package_share_directory('working_memory')) / 'msg'
    with Reader(synthetic_bag) as reader:
        recorded = {c.msgtype: c.digest for c in reader.connections}
    for msgtype in ('ContextFrame', 'EvictionBatch'):
        generated = json.loads((share / f'{msgtype}.json').read_text())['type_hashes'][0]
        assert recorded[f'working_memory/msg/{msgtype}'] == generated['hash_string']


def test_bag_carries_full_definitions_and_latched_frame_qos(synthetic_bag):
    with Reader(synthetic_bag) as reader:
        (frames,) = [c for c in reader.connections if c.msgtype == FRAME_TYPE]
    assert 'MSG: working_memory/ContextPack' in frames.msgdef.data
    assert 'MSG: nav_msgs/OccupancyGrid' in frames.msgdef.data
    (qos,) = frames.ext.offered_qos_profiles
    assert (qos.durability.name, qos.reliability.name, qos.depth) == (
        'TRANSIENT_LOCAL', 'RELIABLE', 1)


def test_writer_refuses_an_existing_bag(synthetic_bag):
    with pytest.raises(BagError, match='cannot create bag .*exists'):
        BagWriter(synthetic_bag)


def test_writer_rejects_unknown_storage(tmp_path):
    with pytest.raises(ValueError, match="storage: must be one of mcap, sqlite3, got 'rosbag1'"):
        BagWriter(tmp_path / 'bag', 'rosbag1')


def test_writer_rejects_a_second_type_on_one_topic(tmp_path):
    with BagWriter(tmp_path / 'bag') as writer:
        writer.add_topic('/t', FRAME_TYPE)
        with pytest.raises(BagError, match='/t carries working_memory/msg/ContextFrame'):
            writer.write('/t', 'working_memory/msg/Eviction', b'', 0)


def test_writing_after_close_is_an_error(tmp_path):
    writer = BagWriter(tmp_path / 'bag')
    writer.close()
    with pytest.raises(BagError, match='is closed'):
        writer.write('/t', FRAME_TYPE, b'', 0)


def test_unfinished_bag_is_reported_as_such(tmp_path):
    (tmp_path / 'cut').mkdir()
    with pytest.raises(BagError, match='no metadata.yaml; was the recorder stopped cleanly'):
        BagReader(tmp_path / 'cut')


def test_reader_accepts_the_storage_file_inside_the_bag(synthetic_bag):
    (mcap,) = synthetic_bag.glob('*.mcap')
    assert load_recording(mcap).ticks == list(range(1, 10))


def test_several_frame_topics_need_a_choice(tmp_path, synthetic_bag):
    with BagWriter(tmp_path / 'two') as writer:
        writer.add_topic('/a/frame', FRAME_TYPE)
        writer.add_topic('/b/frame', FRAME_TYPE)
    with pytest.raises(BagError, match=r'several .*ContextFrame topics \(/a/frame, /b/frame\)'):
        load_recording(tmp_path / 'two')
    with pytest.raises(BagError, match='no working_memory/msg/ContextFrame topic /c/frame'):
        load_recording(synthetic_bag, frame_topic='/c/frame')


def test_a_message_is_stamped_when_it_arrived_never_before_the_topics_last_nor_after_now():
    # Taken 3 ms after it arrived (wall clock): stamped 3 ms before now on the recorder's clock.
    assert receive_stamp(1_000_000_000, 50_003_000_000, 50_000_000_000, 0) == 997_000_000
    assert receive_stamp(1_000_000_000, 50_003_000_000, 50_000_000_000, 998_000_000) \
        == 998_000_000   # not before the topic's previous message: the bag keeps their order
    assert receive_stamp(1_000_000_000, 50_000_000_000, 50_003_000_000, 0) == 1_000_000_000
    assert receive_stamp(1_000_000_000, 50_003_000_000, None, 0) == 1_000_000_000
