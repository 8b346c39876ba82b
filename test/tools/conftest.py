"""Fixtures: a small synthetic run as a bag; 'battery' is present, evicted, dropped, then stale.

Ticks 1-9, one every 0.5 s. Planner requires 'battery' and the exempt 'goal:deliver':
  ticks 1-3  battery served (importance 0.20)
  tick 4     battery evicted (capacity), last used at tick 2; missing EVICTED at ticks 4-5
  ticks 6-7  missing INJECTED_DROP (the category 'board:batt*' was dropped)
  ticks 8-9  missing STALE
The executor never sees battery. Diagnostics raise the capacity alarm at tick 5 and clear it at 7.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.serialization import serialize_message

from working_memory.msg import (ContextFrame, ContextPack, Eviction, EvictionBatch, LogEvent,
                                MissingItem, WorkingItem)
from working_memory.tools.bag import BagWriter, DIAGNOSTICS_TYPE, EVICTION_BATCH_TYPE, FRAME_TYPE

FRAME_TOPIC = '/working_memory/frame'
EVICTIONS_TOPIC = '/working_memory/evictions'
DIAGNOSTICS_TOPIC = '/diagnostics'
TICKS = range(1, 10)
MAP_WIDTH, MAP_HEIGHT = 20, 10


def stamp_of(tick: int) -> Time:
    """Return the tick time: 0.5 s per tick."""
    return Time(sec=tick // 2, nanosec=500_000_000 * (tick % 2))


def ns_of(tick: int) -> int:
    """Return the tick time [ns]."""
    return tick * 500_000_000


def item(key: str, importance: float, tick: int, exempt: bool = False) -> WorkingItem:
    """Return a working item last used at `tick`."""
    return WorkingItem(key=key, value='{"v": 1}', source='board', importance=importance,
                       last_used=stamp_of(tick), stale=False, exempt=exempt)


def planner_pack(tick: int) -> ContextPack:
    """Return the planner's pack of `tick` following the module's story."""
    pack = ContextPack(tick=tick, cabin='planner', digest=f'planner{tick:04d}')
    pack.header.stamp = stamp_of(tick)
    pack.items = [item('goal:deliver', 1.0, tick, exempt=True)]
    if tick <= 3:
        pack.items.append(item('battery', 0.2, tick))
    elif tick <= 5:
        pack.missing = [MissingItem(key='battery', reason=MissingItem.EVICTED,
                                    detail='evicted at tick 4')]
    elif tick <= 7:
        pack.missing = [MissingItem(key='board:batt*', reason=MissingItem.INJECTED_DROP,
                                    detail='dropped by injection')]
    else:
        pack.missing = [MissingItem(key='battery', reason=MissingItem.STALE,
                                    detail='stale: its ttl of 1.0 s ran out', ages=True,
                                    since=Time(sec=2, nanosec=500_000_000))]
    pack.nearby_map.info.width = MAP_WIDTH
    pack.nearby_map.info.height = MAP_HEIGHT
    pack.nearby_map.info.resolution = 0.1
    pack.nearby_map.info.origin.position.x = float(tick)
    pack.nearby_map.data = [(-1 if (i // MAP_WIDTH) == 0 else (100 if i % 7 == 0 else 0))
                            for i in range(MAP_WIDTH * MAP_HEIGHT)]
    return pack


def executor_pack(tick: int) -> ContextPack:
    """Return the executor's pack: the goal and one failure event."""
    pack = ContextPack(tick=tick, cabin='executor', digest=f'executor{tick:04d}')
    pack.items = [item('goal:deliver', 1.0, tick, exempt=True)]
    event = LogEvent(kind=LogEvent.FAILURE, source='executor', key='open_door',
                     detail='{"door": "d1"}')
    event.header.stamp = stamp_of(tick)
    pack.recent_events = [event]
    return pack


def frame(tick: int) -> ContextFrame:
    """Return the frame of `tick`."""
    msg = ContextFrame(tick=tick, digest=f'{tick:02d}' + 'ab' * 31,
                       packs=[planner_pack(tick), executor_pack(tick)])
    msg.header.stamp = stamp_of(tick)
    return msg


def eviction(tick: int, key: str, importance: float, last_used_tick: int) -> Eviction:
    """Return an eviction at `tick`."""
    msg = Eviction(tick=tick, key=key, importance=importance, last_used=stamp_of(last_used_tick),
                   reason=Eviction.CAPACITY)
    msg.header.stamp = stamp_of(tick)
    return msg


def eviction_batch(tick: int, evictions=(), readmitted=()) -> EvictionBatch:
    """Return the transitions of `tick`: Eviction messages and readmitted keys."""
    msg = EvictionBatch(tick=tick, evictions=list(evictions), readmitted=list(readmitted))
    msg.header.stamp = stamp_of(tick)
    return msg


def alarm_status(tick: int, alarm: bool) -> DiagnosticArray:
    """Return the node's diagnostics reporting the capacity alarm at `tick`."""
    status = DiagnosticStatus(level=DiagnosticStatus.ERROR if alarm else DiagnosticStatus.OK,
                              name='/working_memory: capacity', message='capacity alarm' if alarm
                              else 'ok', values=[KeyValue(key='capacity', value='1'),
                                                 KeyValue(key='exempt_overflow', value=str(alarm))])
    msg = DiagnosticArray(status=[status])
    msg.header.stamp = stamp_of(tick)
    return msg


def write_synthetic_run(path: Path, storage: str = 'mcap') -> Path:
    """Write the run to a new bag at `path` and return it."""
    with BagWriter(path, storage) as writer:
        writer.add_topic(FRAME_TOPIC, FRAME_TYPE, latched=True)
        for tick in TICKS:
            writer.write(FRAME_TOPIC, FRAME_TYPE, serialize_message(frame(tick)), ns_of(tick))
            if tick == 4:
                batch = eviction_batch(tick, [eviction(tick, key, importance, last_used)
                                              for key, importance, last_used
                                              in (('battery', 0.2, 2), ('scan', 0.1, 3))])
                writer.write(EVICTIONS_TOPIC, EVICTION_BATCH_TYPE, serialize_message(batch),
                             ns_of(tick))
            if tick in (5, 7):
                writer.write(DIAGNOSTICS_TOPIC, DIAGNOSTICS_TYPE,
                             serialize_message(alarm_status(tick, tick == 5)), ns_of(tick))
    return path


@pytest.fixture
def synthetic_bag(tmp_path: Path) -> Path:
    """Return the synthetic run as an MCAP bag."""
    return write_synthetic_run(tmp_path / 'run')


@pytest.fixture
def write_run(tmp_path: Path):
    """Return a function that writes the synthetic run with a given storage plugin."""
    return lambda storage: write_synthetic_run(tmp_path / f'run-{storage}', storage)
