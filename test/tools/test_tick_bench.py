"""The tick benchmark replays the node's tick: real frames of the bench's three cabins."""

from rclpy.serialization import deserialize_message

from working_memory.bench import tick_node as tick
from working_memory.msg import ContextFrame


def test_the_tick_bench_encodes_the_bench_board_into_frames_of_three_cabins():
    replay = tick.TickReplay()
    for _ in range(120):    # past the first mission (tick 1) and its re-send (tick 101)
        assembled, encoded, data = replay.run(replay.inputs())
    assert assembled > 0 and encoded > 0
    frame = deserialize_message(data, ContextFrame)
    assert frame.tick == replay.tick
    packs = {pack.cabin: pack for pack in frame.packs}
    assert list(packs) == ['planner', 'executor', 'monitor']
    sensors = [item.key for item in packs['monitor'].items if item.key.startswith('sensor:')]
    assert len(sensors) == tick.SENSORS
    assert 'goal:deliver' in [item.key for item in packs['planner'].items]
    # The planner's required goal and pose are there: nothing it requires is missing.
    assert {missing.key for missing in packs['planner'].missing}.isdisjoint({'goal:*', 'pose'})


def test_the_tick_bench_prints_hot_medians(capsys):
    assert tick.main(['--ticks', '20', '--repeats', '1']) == 0
    out = capsys.readouterr().out
    assert 'hot: assemble p50' in out and '3 packs' in out, out
