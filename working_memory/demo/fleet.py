"""Record a small fleet to try `wm-inspect fleet` on: runs of several robots, some misconfigured.

make fleet                                  # 6 runs of 3 robots into out/fleet/<robot>/
make fleet ARGS="--runs 4 --out /tmp/fleet"

Each robot runs the demo in its own namespace with its own params files (the packaged
config, then the robot's): alpha as packaged, beta with a planner manifest that lacks the
safety constraints, gamma with an executor manifest that lacks the failures. Seeds differ
per run. Each run is the demo's own command, one after the other.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from working_memory.ros.share import share_path

# robot -> the params files after the packaged one (config/examples/...), by name
ROBOTS: dict[str, tuple[str, ...]] = {
    'alpha': (),
    'beta': ('planner_without_safety.yaml',),
    'gamma': ('executor_without_failures.yaml',),
}


def commands(runs: int, out: Path, first_seed: int = 7) -> list[list[str]]:
    """Return the demo command of each run, robots taking turns, seeds counting up."""
    robots = list(ROBOTS)
    result = []
    for run in range(runs):
        robot = robots[run % len(robots)]
        command = [sys.executable, '-P', '-m', 'working_memory.demo', '--robot', robot,
                   '--out', str(out), '--seed', str(first_seed + run // len(robots)),
                   '--after-alarm', '3']
        for name in ROBOTS[robot]:
            command += ['--params', str(share_path('config', 'examples', name))]
        result.append(command)
    return result


def main(argv: list[str] | None = None) -> int:
    """Record the fleet; return 0 when every run recorded a bag, 1 when one did not."""
    parser = argparse.ArgumentParser(prog='working_memory fleet', description=__doc__.split(
        '\n\n')[0])
    parser.add_argument('--runs', type=int, default=6, help='runs in all (default: 6)')
    parser.add_argument('--out', type=Path, default=Path('out/fleet'),
                        help='folder of the fleet: OUT/<robot>/<run> (default: out/fleet)')
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error('--runs: must be >= 1')
    failed = 0
    for number, command in enumerate(commands(args.runs, args.out), 1):
        robot = command[command.index('--robot') + 1]
        seed = command[command.index('--seed') + 1]
        done = subprocess.run(command, capture_output=True, text=True)
        outcome = next((line.strip() for line in done.stdout.splitlines()
                        if line.startswith('== ')), 'no summary')
        # Exit 1 is a run that did not end as intended: a misconfigured robot's, on purpose.
        failed += done.returncode not in (0, 1)
        print(f'run {number}/{args.runs}: {robot} seed {seed}: {outcome}', flush=True)
        if done.returncode not in (0, 1):
            print(done.stderr[-2000:], file=sys.stderr)
    print(f'fleet recorded under {args.out}: tools/rosenv wm-inspect fleet {args.out}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
