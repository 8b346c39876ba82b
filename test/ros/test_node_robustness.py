"""The node keeps ticking under floods, slow clients, sim-time resets and QoS mismatches."""

import threading

from nav_msgs.msg import OccupancyGrid
from rclpy.duration import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Empty

from working_memory.core.items import BoardEntry
from working_memory.msg import ContextFrame
from working_memory.ros.conversions import board_update_msg, seconds_from_time
from working_memory.sim.conversions import clock_msg
from working_memory.srv import Assemble

TICK_HZ = 20.0


def test_board_flood_and_unanswered_service_calls_do_not_stall_ticking(start_memory):
    node, probe = start_memory({'tick_hz': TICK_HZ})
    probe.wait_matched(probe.board)
    first = probe.wait_frame()
    stop = threading.Event()
    published = []

    def flood():
        # As fast as one thread can publish, plus assemble calls whose answers nobody takes.
        count = 0
        while not stop.is_set():
            probe.board.publish(board_update_msg([BoardEntry(f'reading:{count % 50}', count, 0.0)],
                                                 0.0))
            if count % 20 == 0:
                probe.assemble_client.call_async(Assemble.Request(cabin='planner'))
            count += 1
        published.append(count)
    flooder = threading.Thread(target=flood)
    flooder.start()
    try:
        # 40 ticks at 20 Hz take 2 s of calm; the bound is generous, the progress is the claim.
        assert probe.spin_until(lambda: probe.frames[-1].tick >= first.tick + 40, timeout=15.0)
    finally:
        stop.set()
        flooder.join()
    assert published[0] > 1000, published   # it really was a flood
    # Ingestion caught up: the flood's last value reaches a frame.
    last = published[0] - 1
    key = f'reading:{last % 50}'
    assert probe.wait_frame(lambda f: any(item.key == key and item.value == str(last)
                                          for item in f.packs[0].items))
    status = probe.status('inputs')
    print('flood:', published[0], 'published,', probe.values(status)['board.received'],
          'taken,', probe.values(status)['board.lost'], 'reported lost by the middleware')


def test_ticks_resume_after_sim_time_jumps_backwards(start_memory):
    node, probe = start_memory({'use_sim_time': True, 'tick_hz': TICK_HZ})
    clock = probe.node.create_publisher(Clock, '/clock', 10)
    probe.wait_matched(clock)
    sim = {'now': 100.0}

    def advance():
        sim['now'] += 0.01
        clock.publish(clock_msg(sim['now']))

    def stamps():
        return [seconds_from_time(frame.header.stamp) for frame in probe.frames]
    assert probe.spin_until(lambda: sum(s > 100.0 for s in stamps()) >= 3, on_spin=advance)
    sim['now'] = 10.0   # world reset
    assert probe.spin_until(lambda: sum(s < 50.0 for s in stamps()) >= 3, on_spin=advance)
    after = [s for s in stamps() if s < 50.0]
    assert after == sorted(after) and after[0] >= 10.0
    ticks = [frame.tick for frame in probe.frames]
    assert ticks == sorted(set(ticks))   # tick numbers keep increasing across the reset
    status = probe.status('ticks', lambda s: probe.values(s)['clock_epoch'] == '1',
                          on_spin=advance)
    assert 'epoch 1' in probe.values(status)['clock_jumps']


def test_trigger_topic_ticks_once_per_message(start_memory):
    node, probe = start_memory({'trigger_topic': 'decide'})
    trigger = probe.node.create_publisher(Empty, 'decide', 10)
    probe.wait_matched(trigger)
    assert not probe.spin_until(lambda: probe.frames, timeout=0.3)   # no timer ticks
    for count in range(1, 4):
        trigger.publish(Empty())
        assert probe.wait_frame().tick == count


def test_incompatible_qos_peers_are_reported_on_diagnostics(start_memory):
    node, probe = start_memory()
    # A volatile map publisher cannot serve the node's transient-local map subscription,
    volatile_map = probe.node.create_publisher(OccupancyGrid, 'map', QoSProfile(depth=1))
    # and a frame subscriber asking for a deadline gets no offer from the node.
    demanding = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           deadline=Duration(seconds=1))
    probe.node.create_subscription(ContextFrame, 'working_memory/frame', lambda _: None,
                                   demanding)
    status = probe.status('qos', lambda s: len(s.values) == 2)
    assert status.level == b'\x02'
    values = probe.values(status)
    assert 'DURABILITY' in values['map'] and 'DEADLINE' in values['~/frame']
    assert volatile_map.get_subscription_count() == 0


def test_every_board_update_is_taken_or_counted_lost_when_the_queue_overflows(start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.board)

    def board_values():
        return probe.values(probe.status('inputs'))

    probe.board.publish(board_update_msg([BoardEntry('reading:0', 0, 0.0)], 0.0))
    assert probe.spin_until(lambda: int(board_values()['board.received']) >= 1)
    # Without spinning, 2500 updates overrun the node's 1000-deep queue (and the probe's
    # 100-deep writer history); Fast DDS reports none of it as lost.
    total = 2501
    for count in range(1, total):
        probe.board.publish(board_update_msg([BoardEntry(f'reading:{count % 50}', count, 0.0)],
                                             0.0))
    assert probe.spin_until(lambda: int(board_values()['board.received']) +
                            int(board_values()['board.lost']) >= total)
    values = board_values()
    assert int(values['board.lost_gaps']) > 0
    assert int(values['board.received']) + int(values['board.lost']) == total
    assert 'board:' in probe.status('inputs').message and 'lost' in probe.status('inputs').message
