"""`python -m working_memory.bench.fleet`: the fleet analysis's speed and memory at scale.

A fleet of copies of recorded runs (hard links of the bags of `--source`, said so in the
printout): `--bags N` folders over `--robots R` robots. Figures, each against a baseline of
the same run:
- the analysis's time per bag against reading every message of the same bags with rosbags
  (the floor: no analysis reads less), 1 worker;
- 2 workers against 1 (the whole fleet);
- Ray on this machine against the local pool, both 2 workers;
- the peak RSS of a worker examining and checking a bag `--long` times longer against the
  short one (each in a fresh process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from working_memory.tools import fleet
from working_memory.tools.bag import BagReader

RSS_SCRIPT = """
import resource, sys
from working_memory.tools import fleet
result = fleet.examine(sys.argv[1])
fleet.check(result, list(result.changes))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_fleet(source: Path, folder: Path, bags: int, robots: int) -> list[Path]:
    """Link the source's bags round-robin into folder/robot<K>/run<N>; return the source bags."""
    originals = fleet.find_bags([source])
    originals = [bag for bag in originals if (bag / fleet.METADATA).is_file()]
    if not originals:
        raise SystemExit(f'no closed bag under {source}: record one (make fleet)')
    for number in range(bags):
        original = originals[number % len(originals)]
        target = folder / f'robot{number % robots}' / f'run{number:04d}'
        shutil.copytree(original, target, copy_function=os.link)
    return originals


def read_all(paths) -> float:
    """Return the seconds it takes to read and decode every message of the bags with rosbags."""
    started = time.perf_counter()
    for path in paths:
        with BagReader(path) as reader:
            topics = list(reader.topics)
            reader.register(topics)
            for _ in reader.messages(topics, skip_undecodable=True):
                pass
    return time.perf_counter() - started


def analyse(folder: Path, engine: str, workers: int) -> tuple[float, fleet.Fleet]:
    started = time.perf_counter()
    result = fleet.run_fleet([folder], engine, workers)
    return time.perf_counter() - started, result


def peak_rss_kib(bag: Path) -> int:
    """Return the peak RSS [KiB] of a fresh process that examines and checks `bag`."""
    done = subprocess.run([sys.executable, '-c', RSS_SCRIPT, str(bag)], capture_output=True,
                          text=True, check=True)
    return int(done.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the fleet benchmark and print its table."""
    parser = argparse.ArgumentParser(prog='bench.fleet', description=__doc__.split('\n\n')[0])
    parser.add_argument('--source', type=Path, default=Path('out/fleet'),
                        help='recorded runs to copy (default: out/fleet, `make fleet`)')
    parser.add_argument('--bags', type=int, default=200, help='bags in the fleet (200)')
    parser.add_argument('--robots', type=int, default=4, help='robots (4)')
    parser.add_argument('--long', type=Path, default=None,
                        help='a bag about 10 times longer than --short, for the peak RSS')
    parser.add_argument('--short', type=Path, default=None,
                        help="the short bag of the RSS figure (default: the source's first)")
    parser.add_argument('--no-ray', action='store_true', help='leave Ray out')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='fleet_bench') as temp:
        folder = Path(temp) / 'fleet'
        originals = make_fleet(args.source, folder, args.bags, args.robots)
        bags = fleet.find_bags([folder])
        print(f'fleet: {len(bags)} bags over {args.robots} robots, hard-linked copies of '
              f'{len(originals)} recorded runs of {args.source}', flush=True)
        floor = read_all(bags)
        print(f'read every message: {floor / len(bags):.3f} s per bag', flush=True)
        one, result = analyse(folder, fleet.LOCAL, 1)
        print(f'1 worker: {one / len(bags):.3f} s per bag', flush=True)
        two, _ = analyse(folder, fleet.LOCAL, 2)
        print(f'2 workers: {two / len(bags):.3f} s per bag', flush=True)
        rows = [('read every message (rosbags), per bag', floor / len(bags), 1.0),
                ('fleet analysis, 1 worker, per bag', one / len(bags), one / floor),
                ('fleet analysis, 2 workers, per bag', two / len(bags), two / floor)]
        print(f'{len(result.changes)} ranked changes; '
              f'{sum(not b.ok for b in result.bags)} bags not read', flush=True)
        if not args.no_ray:
            ray_s, on_ray = analyse(folder, fleet.RAY, 2)
            rows.append(('fleet analysis, Ray on this machine, per bag', ray_s / len(bags),
                         ray_s / floor))
            same = on_ray.as_json()['changes'] == result.as_json()['changes']
            print(f'Ray gives the same changes: {same}', flush=True)
    print('\n| figure | s per bag | x read |\n| --- | --- | --- |')
    for name, seconds, ratio in rows:
        print(f'| {name} | {seconds:.3f} | {ratio:.2f} |')
    print(f'\nspeed-up of 2 workers over 1: {one / two:.2f}x')
    if not args.no_ray:
        print(f'Ray against the local pool (2 workers): {ray_s / two:.2f}x')
    if args.long is not None:
        short_bag = args.short or originals[0]
        short, long = peak_rss_kib(short_bag), peak_rss_kib(args.long)
        print(f'peak RSS of a worker: {short / 1024:.0f} MiB ({short_bag}) against '
              f'{long / 1024:.0f} MiB ({args.long}): {long / short:.2f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
