"""The main job: the closed-loop delivery, headless, with a bag, a report and a summary.

    make demo                                   # drop nothing: the delivery succeeds
    make demo ARGS="--drop planner:constraints" # the planner raises a constraint alarm
    make demo ARGS="--drop executor:failures"   # the executor's retry policy degrades
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import rclpy
from rclpy.signals import SignalHandlerOptions

from working_memory.demo.scenario import DROP_CATEGORIES, Outcome, ScenarioOptions, \
    parse_drops, run_scenario
from working_memory.tools import inspect


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='working_memory demo',
        description='Run the delivery robot in the built-in simulator with working memory.')
    parser.add_argument('--drop', action='append', default=[], metavar='CABIN:CATEGORY',
                        help='missing-item injection: drop a category from a cabin manifest '
                             f'({", ".join(DROP_CATEGORIES)}, or a raw manifest drop entry)')
    parser.add_argument('--seed', type=int, default=7, help='world seed (door outcomes, noise)')
    parser.add_argument('--out', type=Path, default=Path('out'),
                        help='directory for the bag and the report (default: out/)')
    parser.add_argument('--real-time-factor', type=float, default=2.0,
                        help='sim seconds per wall second (default: 2)')
    parser.add_argument('--sim-time-limit', type=float, default=150.0,
                        help='stop after this much sim time [s] (default: 150)')
    parser.add_argument('--after-alarm', type=float, default=10.0,
                        help='stop this much sim time [s] after the first alarm (default: 10)')
    return parser.parse_args(argv)


def status_line(outcome: Outcome, status: dict) -> str:
    """One progress line: sim time, tick, pose, door, what went wrong so far."""
    pose = status.get('pose', {})
    return (f't={outcome.sim_time_s:6.1f}s tick={outcome.ticks:4d} '
            f'pose=({pose.get("x", 0.0):5.2f},{pose.get("y", 0.0):5.2f}) '
            f'door={outcome.door or "?":6s} failures={outcome.failures} '
            f'evictions={outcome.evictions} alarms={len(outcome.alarms)} '
            f'policy={"/".join(sorted(outcome.retry_policies)) or "-"}')


def summary(outcome: Outcome, drops: dict[str, tuple[str, ...]]) -> str:
    alarms = ', '.join(sorted({f'{key} (from {source})' for source, key in outcome.alarms})) \
        or 'none'
    verdict = 'DELIVERED' if outcome.delivered else 'NOT DELIVERED'
    lines = [
        '',
        f'== {verdict} after {outcome.sim_time_s:.1f} s sim time '
        f'({outcome.wall_time_s:.1f} s wall), {outcome.ticks} ticks',
        f'   injected drops:   {drops or "none"}',
        f'   evictions:        {outcome.evictions}',
        f'   alarms:           {alarms}',
        f'   door attempts:    {", ".join(outcome.door_strategies) or "none"} '
        f'({outcome.failures} failed)',
        f'   retry policy:     {"/".join(sorted(outcome.retry_policies)) or "-"}',
        f'   zone violations:  {outcome.zone_violations}   collisions: {outcome.collisions}',
    ]
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        drops = parse_drops(args.drop)
    except ValueError as error:
        print(f'demo: {error}', file=sys.stderr)
        return 2
    tag = '_'.join(['drop'] + [spec.replace(':', '-') for spec in args.drop]) \
        if args.drop else 'baseline'
    tag = ''.join(char if char.isalnum() or char in '-_' else '_' for char in tag)
    args.out.mkdir(parents=True, exist_ok=True)
    bag = args.out / f'delivery_{tag}'
    report = args.out / f'delivery_{tag}.html'
    if bag.exists():
        shutil.rmtree(bag)
    options = ScenarioOptions(seed=args.seed, drops=drops, bag_path=bag,
                              real_time_factor=args.real_time_factor,
                              sim_time_limit_s=args.sim_time_limit)
    print(f'working_memory demo: delivery world seed {args.seed}, drops {drops or "none"}, '
          f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")} (loopback only)', flush=True)
    # Ctrl-C ends the run between spins, so the bag is still closed and the report written.
    interrupted = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    rclpy.init(args=None, signal_handler_options=SignalHandlerOptions.NO)
    try:
        outcome = run_scenario(
            options, progress=lambda o, s: print(status_line(o, s), flush=True),
            until=lambda o: interrupted.is_set() or (
                o.first_alarm_s is not None and o.sim_time_s - o.first_alarm_s >= args.after_alarm))
    finally:
        rclpy.try_shutdown()
    print(summary(outcome, drops))
    started = time.monotonic()
    code = inspect.main([str(bag), '--report', str(report)])
    print(f'   bag:              {bag}')
    print(f'   report:           {report} ({time.monotonic() - started:.1f} s)' if code == 0
          else '   report:           FAILED (see above)')
    print('\nInspect it:')
    print(f'   tools/rosenv wm-inspect {bag}                         # every tick')
    print(f'   tools/rosenv wm-inspect {bag} --tick 20 --cabin planner')
    print(f'   tools/rosenv wm-inspect {bag} --why safety:zone/high_voltage --cabin planner')
    print(f'   tools/rosenv wm-inspect doctor {bag}                  # the three symptoms')
    print(f'   tools/rosenv wm-inspect suggest {bag} --out {args.out / "patch.yaml"}'
          '   # what wrong decisions lacked')
    return 0 if (outcome.delivered or drops) and code == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
