"""One timeline through the node: /clock resets and jumps never freshen, hide or un-age data.

Each test drives sim time itself on /clock (a step per spin) and jumps it as Gazebo's
world reset does; the claims are read from the node's published frames, evictions,
diagnostics and explain answers only.
"""

import threading
import time

from rosgraph_msgs.msg import Clock

from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.ros.conversions import board_update_msg, log_event_msg, seconds_from_time
from working_memory.sim.conversions import clock_msg

TICK_HZ = 20.0
CLOCK_PERIOD_S = 0.005   # [s] wall time between /clock messages


class SimClock:
    """Sim time on /clock running at wall-clock rate; `jump_to()` resets it as Gazebo does.

    `advance()` (the spin hook) publishes the current sim time, at most every
    CLOCK_PERIOD_S, so sim time does not depend on how many callbacks a spin runs.
    """

    def __init__(self, probe, start):
        self.publisher = probe.node.create_publisher(Clock, '/clock', 10)
        probe.wait_matched(self.publisher)
        self.lock = threading.Lock()
        self._base, self._since, self._sent = start, time.monotonic(), 0.0

    @property
    def now(self):
        """Current sim time [s]."""
        with self.lock:
            return self._base + time.monotonic() - self._since

    def advance(self):
        wall = time.monotonic()
        if wall - self._sent >= CLOCK_PERIOD_S:
            self._sent = wall
            self.publisher.publish(clock_msg(self.now))

    def jump_to(self, seconds):
        with self.lock:
            self._base, self._since = seconds, time.monotonic()
        self._sent = 0.0
        self.advance()


def stamp(msg):
    return seconds_from_time(msg.header.stamp)


def planner(frame):
    return next(p for p in frame.packs if p.cabin == 'planner')


def keys(pack):
    return {item.key for item in pack.items}


def publish(probe, clock, *entries):
    probe.board.publish(board_update_msg(entries, clock.now))


def publish_constraint(probe, key, at):
    probe.log.publish(log_event_msg(Event(stamp=at, kind=EventKind.CONSTRAINT, source='test',
                                          key=key, detail={'zone': key})))


def ages_are_never_negative(probe):
    """Every published age is >= 0: pack headers vs item last_used, batches vs evictions."""
    for frame in probe.frames:
        for pack in frame.packs:
            for item in pack.items:
                assert stamp(pack) - seconds_from_time(item.last_used) >= -1e-9, (frame.tick, item)
    for batch in probe.batches:
        for eviction in batch.evictions:
            assert stamp(batch) - seconds_from_time(eviction.last_used) >= -1e-9, eviction
            assert stamp(eviction) == stamp(batch)
    for array in probe.diagnostics:
        for status in array.status:
            for pair in status.values:
                if pair.key.endswith('.age_s') and pair.value != 'never':
                    assert float(pair.value) >= 0.0, (status.name, pair)


def wait_for(probe, on_spin, predicate, what):
    """Spin (stepping the clock) until a frame from now on satisfies `predicate`; return it."""
    start = len(probe.frames)
    found = []

    def seen():
        found[:] = [f for f in probe.frames[start:] if predicate(f)]
        return bool(found)
    assert probe.spin_until(seen, on_spin=on_spin), f'no frame {what}'
    return found[0]


def wait_stamp(probe, on_spin, low, high=50.0):
    """Spin until a frame from now on is stamped in (low, high) [s]; return it."""
    return wait_for(probe, on_spin, lambda f: low < stamp(f) < high,
                    f'stamped in ({low}, {high}) s')


def start(start_memory, at, **params):
    """Start the node on sim time from `at` [s]; return (probe, clock) once it ticks."""
    node, probe = start_memory({'use_sim_time': True, 'tick_hz': TICK_HZ, **params})
    probe.wait_matched(probe.board, probe.log)
    clock = SimClock(probe, at)
    assert probe.spin_until(lambda: probe.frames and stamp(probe.frames[-1]) > at,
                            on_spin=clock.advance)
    return probe, clock


def serve_battery_and_constraint(probe, clock, ttl):
    """Publish a `ttl` [s] battery entry and a CONSTRAINT event now; wait until both are served."""
    publish(probe, clock, BoardEntry('battery', 0.5, clock.now, ttl=ttl))
    publish_constraint(probe, 'zone', clock.now)
    return wait_for(probe, clock.advance, lambda f: 'battery' in keys(planner(f))
                    and planner(f).recent_events, 'serving battery and the constraint')


def test_after_a_100_s_reset_ttl_entries_are_stale_constraints_stay_and_ages_hold(start_memory):
    probe, clock = start(start_memory, 100.0, capacity=5)
    on_spin = clock.advance
    publish(probe, clock, BoardEntry('goal:deliver', {'to': 'dock'}, clock.now),
            BoardEntry('pose', {'x': 1.0, 'y': 1.0}, clock.now),
            BoardEntry('reading:old', 1, clock.now, importance=0.01, ttl=0.3))
    publish_constraint(probe, 'zone', clock.now)
    constraint_seen = lambda f: any(e.key == 'zone' for e in planner(f).recent_events)  # noqa
    assert probe.spin_until(lambda: any('reading:old' in keys(planner(f)) and constraint_seen(f)
                                        for f in probe.frames), on_spin=on_spin)
    # A 1 s ttl entry stamped just before the reset; the old reading has gone stale by then.
    publish(probe, clock, BoardEntry('battery', 0.5, clock.now, importance=0.5, ttl=1.0))
    assert probe.spin_until(lambda: {'battery'} == keys(planner(probe.frames[-1])) - {
        'goal:deliver', 'pose'}, on_spin=on_spin)
    before = len(probe.frames)

    clock.jump_to(0.0)   # Gazebo world reset: /clock jumps back 100 s
    latest = wait_stamp(probe, on_spin, 1.5)
    after = [f for f in probe.frames[before:] if stamp(f) < 50.0]
    # The ttl entry is stale on the effective timeline, not fresh for another 100 s.
    assert 'battery' not in keys(planner(latest))
    answer = probe.explain('planner', 'battery', latest.tick)
    assert (answer.present, answer.reason) == (False, 'STALE'), answer
    assert answer.detail.startswith('stale: its ttl of 1.0 s ran out ')
    assert answer.detail.endswith(' s ago') and float(answer.detail.split()[-3]) < 5.0
    # The exempt pre-reset constraint is still in the planner's pack.
    assert all(constraint_seen(f) for f in after)
    assert probe.explain('planner', 'events:CONSTRAINT', latest.tick).present
    # A new reading after the reset evicts the stale one, last used before the reset.
    publish(probe, clock, BoardEntry('reading:new', 2, clock.now, importance=0.1))
    assert probe.spin_until(lambda: any(e.key == 'reading:old' for e in probe.evictions),
                            on_spin=on_spin)
    (batch,) = [b for b in probe.batches if any(e.key == 'reading:old' for e in b.evictions)]
    assert stamp(batch) < 50.0
    status = probe.status('ticks', lambda s: probe.values(s)['clock_epoch'] == '1',
                          on_spin=on_spin)
    assert 'epoch 1: -100' in probe.values(status)['clock_jumps']
    ages_are_never_negative(probe)


def test_a_forward_jump_ages_entries_and_events_by_the_time_skipped(start_memory):
    probe, clock = start(start_memory, 10.0)
    on_spin = clock.advance
    serve_battery_and_constraint(probe, clock, ttl=5.0)
    clock.jump_to(clock.now + 100.0)   # time skipped
    latest = wait_stamp(probe, on_spin, 105.0, 1e9)
    assert 'battery' not in keys(planner(latest)) and not planner(latest).recent_events
    assert probe.explain('planner', 'battery', latest.tick).reason == 'STALE'
    status = probe.status('ticks', on_spin=on_spin)
    assert probe.values(status)['clock_epoch'] == '0'   # a forward jump is no new epoch
    ages_are_never_negative(probe)


def test_repeated_resets_keep_one_timeline(start_memory):
    probe, clock = start(start_memory, 100.0)
    on_spin = clock.advance
    serve_battery_and_constraint(probe, clock, ttl=1.5)
    clock.jump_to(0.0)
    wait_stamp(probe, on_spin, 1.0)
    clock.jump_to(0.0)
    # Frames still in flight from the first epoch are stamped near 1 s: wait past that.
    latest = wait_stamp(probe, on_spin, 1.6)
    # Effective time went on through both resets: the 1.5 s ttl has run out, though ROS
    # time stayed below the entry's stamp all along.
    assert 'battery' not in keys(planner(latest))
    assert [e.key for e in planner(latest).recent_events] == ['zone']
    status = probe.status('ticks', lambda s: probe.values(s)['clock_epoch'] == '2',
                          on_spin=on_spin)
    assert probe.values(status)['clock_epoch'] == '2'
    ticks = [frame.tick for frame in probe.frames]
    assert ticks == sorted(set(ticks))
    ages_are_never_negative(probe)


def test_a_reset_in_the_middle_of_a_board_flood(start_memory):
    probe, clock = start(start_memory, 100.0)
    on_spin = clock.advance
    publish(probe, clock, BoardEntry('battery', 0.5, clock.now, ttl=1.0))
    # Served before the flood starts: an unbounded flood may overflow the input queue
    # (a loss counted on /diagnostics, not what this test is about).
    wait_for(probe, on_spin, lambda f: 'battery' in keys(planner(f)), 'serving the battery')
    stop, sent = threading.Event(), []

    def flood():
        count = 0
        while not stop.is_set():
            # Stamped by the flooder's own view of sim time: some are in flight at the reset.
            at = clock.now
            probe.board.publish(board_update_msg(
                [BoardEntry(f'reading:{count % 20}', count, at, ttl=5.0)], at))
            count += 1
        sent.append(count)
    flooder = threading.Thread(target=flood)
    flooder.start()
    try:
        wait_stamp(probe, on_spin, 100.5, 1e9)
        clock.jump_to(0.0)
        wait_stamp(probe, on_spin, 1.5)
    finally:
        stop.set()
        flooder.join()
    assert sent[0] > 100, sent
    # An entry stamped on the new epoch is fresh; the one stamped before the reset is stale.
    publish(probe, clock, BoardEntry('reading:last', 'after', clock.now, ttl=5.0))
    latest = wait_for(probe, on_spin, lambda f: 'reading:last' in keys(planner(f)),
                      'serving the entry stamped after the reset')
    assert stamp(latest) < 50.0 and 'battery' not in keys(planner(latest))
    assert probe.explain('planner', 'battery', latest.tick).reason == 'STALE'
    after = [f for f in probe.frames if stamp(f) < 50.0]
    assert len(after) >= 10   # ticking went on through the reset and the flood
    ticks = [frame.tick for frame in probe.frames]
    assert ticks == sorted(set(ticks))
    ages_are_never_negative(probe)


def test_ticks_go_on_when_use_sim_time_is_switched_on_and_off_at_runtime(start_memory):
    from rclpy.parameter import Parameter
    node, probe = start_memory({'tick_hz': TICK_HZ})
    assert probe.spin_until(lambda: len(probe.frames) >= 3)
    assert stamp(probe.frames[-1]) > 1e9          # system time
    node.set_parameters([Parameter('use_sim_time', value=True)])
    clock = SimClock(probe, 500.0)     # once the node subscribes /clock
    on_sim = wait_stamp(probe, clock.advance, 500.0, 600.0)
    # Ticks keep following sim time, one per period.
    later = wait_for(probe, clock.advance, lambda f: f.tick >= on_sim.tick + 5, '5 ticks later')
    assert 500.0 < stamp(later) < 600.0
    node.set_parameters([Parameter('use_sim_time', value=False)])
    assert wait_for(probe, clock.advance, lambda f: stamp(f) > 1e9, 'on system time again')
