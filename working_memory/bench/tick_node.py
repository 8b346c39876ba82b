"""The node's tick from stamp to bytes, in one process (a ROS face: the node's own encoder).

Run with `tools/rosenv python -P -m working_memory.bench.tick_node [--sleep 0.01] [--profile]
[--tick-hz 10]`.
It replays the tick `make bench-ros` measures at 100 Hz + 1 kHz (the frames100 group): the
demo's three cabins (config/working_memory.yaml), a 4000 x 4000 map at 0.05 m, 30 sensor
keys of which 10 change per tick, the mission and pose re-sent every second; each tick runs
`Assembler.assemble` and the node's `FrameOutput.frame_bytes` (windows by reference).
`--sleep` sleeps between ticks as the node does: on a shared 2-core VM the same code then
runs 2-2.5x slower (cold caches), and those are the figures the node's latency sees.
Prints the per-tick medians; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import statistics
import time

import numpy as np

from working_memory.bench.core import CONFIG
from working_memory.bench.roles_node import _mission_entries
from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import ACCELERATED, ImportanceLRU, WorkingSet
from working_memory.core.frames import FrameStore
from working_memory.core.gridmap import GridMap
from working_memory.core.items import BoardEntry
from working_memory.core.manifest import load_manifests
from working_memory.ros import conversions as conv

SENSORS = 30             # sensor keys, as `make bench-ros` sends them
CHANGES_PER_TICK = 10    # 1 kHz board at 100 Hz ticks
TICK_S = 0.01            # [s]
BOARD_HZ = 1000.0        # [1/s] board updates, one sensor each
WARM_UP_TICKS = 300


class TickReplay:
    """The bench's board and the node's assembler and encoder, ticked on a fixed clock."""

    def __init__(self, capacity: int = 40, tick_s: float | None = None,
                 changes: int | None = None):
        """Tick every `tick_s` [s], `changes` board updates each (None: the module defaults)."""
        self.tick_s = TICK_S if tick_s is None else tick_s
        self.changes = CHANGES_PER_TICK if changes is None else changes
        working_set = WorkingSet(capacity, None, ('goal', 'safety'), ImportanceLRU())
        self.board = BoardSnapshot(working_set.timebase)
        self.log = EventLog(10_000, working_set.timebase)
        self.assembler = Assembler(load_manifests(str(CONFIG)), working_set, pose_key='pose')
        self.frames = FrameStore(100)
        self.output = conv.FrameOutput()
        cells = np.zeros((4000, 4000), dtype=np.int8)
        cells[:, ::200] = 100   # walls every 5 % of the side, as the bench's map
        self.grid = GridMap(cells, (0.0, 0.0), 0.05)
        self.sent = 0
        self.tick = 0
        self._start = time.time()

    def inputs(self) -> float:
        """Apply one tick's board changes; return the tick's time [s]."""
        self.tick += 1
        now = self._start + self.tick * self.tick_s
        for _ in range(self.changes):
            index = self.sent % SENSORS
            self.board.apply([BoardEntry(f'sensor:{index}', {'reading': math.sin(self.sent)},
                                         now, importance=0.05, ttl=1.0, tags=('sensor',))])
            self.sent += 1
        if self.tick % round(1.0 / self.tick_s) == 1:
            self.board.apply([*_mission_entries(now), BoardEntry(
                'pose', {'x': 2.0, 'y': 6.0, 'yaw': 0.0}, now, importance=0.6,
                tags=('navigation',))])
        return now

    def run(self, now: float) -> tuple[float, float, bytes]:
        """Assemble and encode the tick at `now`; return (assembly [s], encoding [s], bytes)."""
        started = time.perf_counter()
        frame = self.assembler.assemble(self.tick, now, self.board, self.log, self.grid)
        assembled = time.perf_counter()
        data = self.output.frame_bytes(frame, 'map', {'/board': self.sent}, False)
        encoded = time.perf_counter()
        # Retained once it is out, as the node does (dropping the oldest frame is not timed).
        self.frames.publish(frame)
        return assembled - started, encoded - assembled, data


def main(argv: list[str] | None = None) -> int:
    """Print the per-tick median assembly and encoding times [ms]; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--ticks', type=int, default=1000, help='measured ticks per run')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--sleep', type=float, default=0.0,
                        help='[s] asleep between ticks, as the node (cold caches)')
    parser.add_argument('--profile', action='store_true', help='cProfile the ticks instead')
    parser.add_argument('--tick-hz', type=float, default=1.0 / TICK_S,
                        help='[Hz] ticks of the 1 kHz board (10: the frames10 group, every '
                             'sensor changed per tick)')
    args = parser.parse_args(argv)
    replay = TickReplay(tick_s=1.0 / args.tick_hz, changes=round(BOARD_HZ / args.tick_hz))
    for _ in range(WARM_UP_TICKS):
        replay.run(replay.inputs())
    print(f'C put: {"yes" if ACCELERATED else "no (pure-Python reference)"}')
    if args.profile:
        profile = cProfile.Profile()
        for _ in range(args.ticks):
            now = replay.inputs()
            profile.enable()
            replay.run(now)
            profile.disable()
        pstats.Stats(profile).sort_stats('tottime').print_stats(30)
        return 0
    for _ in range(args.repeats):
        assembly, encoding = [], []
        for _ in range(args.ticks):
            assembled, encoded, data = replay.run(replay.inputs())
            assembly.append(assembled)
            encoding.append(encoded)
            if args.sleep:
                time.sleep(args.sleep)
        print(f'{"cold" if args.sleep else "hot"}: assemble p50 '
              f'{statistics.median(assembly) * 1e3:.3f} ms, encode p50 '
              f'{statistics.median(encoding) * 1e3:.3f} ms, {len(data)} bytes, '
              f'{len(replay.frames.latest().packs)} packs')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
