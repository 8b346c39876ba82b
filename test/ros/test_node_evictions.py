"""Eviction is an event on ~/evictions: one batch per tick with transitions, no steady state."""

from rclpy.parameter import Parameter

from working_memory.core.items import BoardEntry
from working_memory.msg import Eviction
from working_memory.ros.conversions import board_update_msg, seconds_from_time

STEADY_TICKS = 30


def planner_keys(frame):
    return {item.key for item in frame.packs[0].items}


def test_a_steady_over_capacity_selection_publishes_evictions_in_its_first_tick_only(
        start_memory):
    node, probe = start_memory({'capacity': 4})
    probe.wait_matched(probe.board)
    readings = [BoardEntry(f'reading:{n}', {'v': n}, 0.0) for n in range(8)]
    probe.board.publish(board_update_msg(
        [BoardEntry('goal:deliver', {'to': 'dock'}, 0.0)] + readings, 0.0))
    first = probe.wait_frame(lambda f: 'goal:deliver' in planner_keys(f))
    probe.wait_frame(lambda f: f.tick >= first.tick + STEADY_TICKS)
    # One batch: the tick that settled the selection, all its evictions together. Under load the
    # probe's keep-last reader may have been handed a later frame first: the node's retained
    # packs say which tick first held the goal.
    (batch,) = probe.batches
    assert batch.tick <= first.tick and len(batch.evictions) == 5

    def held(tick):
        answer = probe.assemble('planner', tick)
        assert answer.success, answer.message
        return 'goal:deliver' in {item.key for item in answer.pack.items}
    assert held(batch.tick) and (batch.tick == 1 or not held(batch.tick - 1))
    assert all(e.reason == Eviction.CAPACITY and e.tick == batch.tick for e in batch.evictions)
    assert batch.readmitted == []
    evicted = {e.key for e in batch.evictions}
    assert all(planner_keys(f) == {'goal:deliver', *(r.key for r in readings)} - evicted
               for f in probe.frames if f.tick >= first.tick)
    # "Last used ... ago" is the time since the item was last used, not 0.0 s every tick.
    latest = probe.frames[-1]
    key = sorted(evicted)[0]
    answer = probe.explain('planner', key, latest.tick)
    assert answer.reason == 'EVICTED'
    unused = float(answer.detail.rsplit('since its last use ', 1)[1].split()[0])
    elapsed = seconds_from_time(latest.header.stamp) - seconds_from_time(first.header.stamp)
    assert unused >= elapsed - 0.05 > 0.5, answer.detail
    status = probe.status('capacity', lambda s: probe.values(s)['evictions_total'] == '5')
    assert probe.values(status)['evictions_total'] == '5'


def test_a_capacity_lowered_between_ticks_evicts_in_the_next_tick(start_memory):
    # The last frame before the change still holds what it evicts: the eviction is of the
    # tick after it, the batch's.
    node, probe = start_memory({'capacity': 4})
    probe.wait_matched(probe.board)
    probe.board.publish(board_update_msg(
        [BoardEntry(f'reading:{n}', {'v': n}, 0.0, importance=0.1 * (n + 1)) for n in range(3)],
        0.0))
    before = probe.wait_frame(lambda f: len(planner_keys(f)) == 3)
    assert node.set_parameters([Parameter('capacity', value=2)])[0].successful
    assert probe.spin_until(lambda: probe.batches)
    (batch,) = probe.batches
    assert [(e.key, e.tick) for e in batch.evictions] == [('reading:0', batch.tick)]
    assert batch.tick > before.tick
    held = probe.assemble('planner', batch.tick - 1)
    assert held.success and 'reading:0' in {item.key for item in held.pack.items}
    gone = probe.assemble('planner', batch.tick)
    assert gone.success and 'reading:0' not in {item.key for item in gone.pack.items}
    answer = probe.explain('planner', 'reading:0', batch.tick)
    assert answer.reason == 'EVICTED' and f'evicted at tick {batch.tick} ' in answer.detail


def test_evicted_items_come_back_when_capacity_is_raised_and_explain_says_when(start_memory):
    node, probe = start_memory({'capacity': 3})
    probe.wait_matched(probe.board)
    probe.board.publish(board_update_msg(
        [BoardEntry(f'reading:{n}', {'v': n}, 0.0, importance=0.1 * (n + 1)) for n in range(5)],
        0.0))
    assert probe.spin_until(lambda: probe.batches)
    (evicted,) = probe.batches
    assert sorted(e.key for e in evicted.evictions) == ['reading:0', 'reading:1']
    assert node.set_parameters([Parameter('capacity', value=4)])[0].successful
    assert probe.spin_until(lambda: len(probe.batches) == 2)
    back = probe.batches[1]
    assert back.evictions == [] and back.readmitted == ['reading:1']   # the more valuable
    frame = probe.wait_frame(lambda f: f.tick >= back.tick)
    assert 'reading:1' in planner_keys(frame) and 'reading:0' not in planner_keys(frame)
    answer = probe.explain('planner', 'reading:1', frame.tick)
    assert answer.present
    assert answer.detail.endswith(f'back since tick {back.tick} '
                                  f'(evicted at tick {evicted.tick})')
