"""Benchmark: a cabin's pack on the py_trees blackboard per tree tick, against py_trees' own write.

Run with `tools/rosenv python -P -m working_memory.bench.trees` (`--quick` for a smoke run).
Per tree tick, best of `core.REPEATS` rounds, garbage collector off while timing:
- **expose**: `PackExposure.expose` of a new pack of `--items` board values (the values deeply
  frozen, the values and the 8 fixed keys written, keys the pack dropped removed);
- **freeze**: the part of `expose` that makes the pack's values deeply immutable;
- **same pack**: `expose` of the pack already on the blackboard (a tree ticking faster than
  the working memory);
- baselines, measured in the same run: py_trees' own write of the same values by a client
  with WRITE access, as attributes (`setattr(client, key, value)`, what `client.key = value`
  does) and through `Client.set`.
The packs are made beforehand: decoding the frame is the client's cost, not the tree's.
"""

from __future__ import annotations

import argparse

import py_trees

from working_memory.bench.core import format_table, time_calls
from working_memory.core.items import Event, EventKind, Missing, MissingReason
from working_memory.core.pack_view import PackView
from working_memory.trees.blackboard import PackExposure, VALUES, frozen_pack

ITEMS = 50
TICKS = 2000
QUICK_TICKS = 20
CABIN = 'planner'


def board_values(tick: int, items: int) -> dict:
    """Return `items` board values of the delivery kind, changing with `tick`."""
    values = {}
    for index in range(items):
        kind = index % 5
        if kind == 0:
            value = {'x': tick * 0.1 + index, 'y': 2.5, 'yaw': 0.1 * index}
        elif kind == 1:
            value = 0.5 + (tick % 7) * 0.01
        elif kind == 2:
            value = f'state-{tick % 3}'
        elif kind == 3:
            value = [tick, index, tick + index]
        else:
            value = {'polygon': [[4.0, 1.5], [6.0, 1.5], [6.0, 3.5], [4.0, 3.5 + tick % 2]],
                     'tags': ['safety']}
        values[f'sensor/{index:03d}' if kind else f'pose/{index:03d}'] = value
    return values


def packs(ticks: int, items: int) -> list[PackView]:
    """Return one pack per tick: `items` values, 5 events, 3 missing notes."""
    events = tuple(Event(float(seq), EventKind.ACTION, 'executor', 'open_door', {'n': seq},
                         seq=seq) for seq in range(5))
    missing = (Missing('safety:zone/b', MissingReason.EVICTED, 'evicted at tick 4 (capacity)'),
               Missing('battery', MissingReason.STALE, 'stale'),
               Missing('events:FAILURE', MissingReason.INJECTED_DROP, 'dropped'))
    return [PackView(cabin=CABIN, tick=tick, stamp=float(tick), digest=f'p{tick}',
                     frame_digest=f'f{tick}', values=board_values(tick, items), events=events,
                     missing=missing, map_window=None) for tick in range(1, ticks + 1)]


def measure(ticks: int, items: int) -> list[tuple]:
    """Return the table rows: method, us per tree tick, its cost against py_trees' write."""
    views = packs(ticks, items)
    names = [VALUES + key for key in views[0].values]
    py_trees.blackboard.Blackboard.clear()
    try:
        exposure = PackExposure(CABIN)
        writer = py_trees.blackboard.Client(name='plain writer', namespace='/plain')
        for name in names:
            writer.register_key(key=name, access=py_trees.common.Access.WRITE)

        def write_attributes(view):
            for name, value in zip(names, view.values.values()):
                setattr(writer, name, value)

        def write_set(view):
            for name, value in zip(names, view.values.values()):
                writer.set(name, value)

        plain = time_calls(write_attributes, [(view,) for view in views])
        via_set = time_calls(write_set, [(view,) for view in views])
        # Consecutive packs differ (a round starts again at the first after the last).
        new = time_calls(exposure.expose, [(view,) for view in views])
        freeze = time_calls(frozen_pack, [(view,) for view in views])
        exposure.expose(views[0])
        same = time_calls(exposure.expose, [(views[0],)] * ticks)
    finally:
        py_trees.blackboard.Blackboard.clear()
    return [(f'py_trees write, {items} values as attributes', f'{plain * 1e6:.1f}', '1.00'),
            (f'py_trees write, {items} values by Client.set', f'{via_set * 1e6:.1f}',
             f'{via_set / plain:.2f}'),
            (f'expose a new {items}-item pack', f'{new * 1e6:.1f}', f'{new / plain:.2f}'),
            ('  of which: freeze its values', f'{freeze * 1e6:.1f}', f'{freeze / plain:.2f}'),
            ('expose the pack already there', f'{same * 1e6:.1f}', f'{same / plain:.2f}')]


def main(argv=None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(prog='python -m working_memory.bench.trees',
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--items', type=int, default=ITEMS, help='board values per pack')
    parser.add_argument('--quick', action='store_true',
                        help='a few ticks: checks that the bench runs, numbers mean nothing')
    args = parser.parse_args(argv)
    if args.items < 1:
        parser.error(f'--items: must be >= 1, got {args.items}')
    ticks = QUICK_TICKS if args.quick else TICKS
    print(f'A {args.items}-item pack on the py_trees blackboard per tree tick ({ticks} ticks; '
          'us per tree tick, best of rounds; x write = cost / py_trees attribute write)')
    print(format_table(('method', 'us per tick', 'x write'), measure(ticks, args.items)))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
