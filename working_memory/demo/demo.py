"""The main job: the closed-loop delivery, headless, with a bag, a report and a summary.

make demo                                   # drop nothing: the delivery succeeds
make demo ARGS="--drop planner:constraints" # the planner raises a constraint alarm
make demo ARGS="--drop executor:failures"   # the executor's retry policy degrades
make demo ARGS="--cabins trees"             # the planner as a py_trees behaviour tree
make demo ARGS="--restart-wm-at 12"         # the working memory loses everything at 12 s
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time

import rclpy
from rclpy.signals import SignalHandlerOptions

from working_memory.demo.cli import (DEFAULT_SEED, EXIT_USAGE, Progress, demo_manifests,
                                     describe_drops, drops_from_specs, exit_code, hints,
                                     parse_args, summary)
from working_memory.demo.scenario import ScenarioOptions, already_running, run_scenario
from working_memory.tools.bag import BagError
from working_memory.tools.recording import RecordingError, load_recording
from working_memory.tools.report import write_report


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return 0 if it ended as intended, 1 if not, 2 on bad usage, 130 on Ctrl-C."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        drops = drops_from_specs(args.drop, demo_manifests(args.params))
    except ValueError as error:
        print(f'demo: {error}', file=sys.stderr)
        return EXIT_USAGE
    tag = '_'.join((['drop'] + [spec.replace(':', '-') for spec in args.drop] if args.drop else
                    [] if args.params else ['baseline']) + [path.stem for path in args.params])
    tag += '' if args.cabins == 'plain' else f'_{args.cabins}'
    tag += '' if args.seed == DEFAULT_SEED else f'_seed{args.seed}'
    tag += '' if args.restart_wm_at is None else f'_restart-{args.restart_wm_at:g}'
    tag = ''.join(char if char.isalnum() or char in '-_' else '_' for char in tag)
    folder = args.out / args.robot if args.robot else args.out
    folder.mkdir(parents=True, exist_ok=True)
    bag = folder / f'delivery_{tag}'
    report = folder / f'delivery_{tag}.html'
    options = ScenarioOptions(seed=args.seed, drops=drops, bag_path=bag,
                              real_time_factor=args.real_time_factor,
                              sim_time_limit_s=args.sim_time_limit,
                              wall_time_limit_s=args.wall_time_limit, cabins=args.cabins,
                              restart_wm_at_s=args.restart_wm_at,
                              params_files=tuple(path.resolve() for path in args.params),
                              robot=args.robot)
    params = f'params {", ".join(map(str, args.params))}, ' if args.params else ''
    robot = f'robot {args.robot} (namespace /{args.robot}), ' if args.robot else ''
    print(f'working_memory demo: delivery world seed {args.seed}, drops {describe_drops(drops)}, '
          f'cabins {args.cabins}, {params}{robot}'
          f'ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")} (loopback only)', flush=True)
    # Ctrl-C ends the run between spins, so the bag is still closed and the report written.
    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    rclpy.init(args=None, signal_handler_options=SignalHandlerOptions.NO)
    try:
        running = already_running(options.namespace)
        if running:
            print(f'demo: {", ".join(running)} already runs in ROS_DOMAIN_ID='
                  f'{os.environ.get("ROS_DOMAIN_ID", "0")}: a second one under its name would mix '
                  f'their frames; stop it, or run the demo in another domain '
                  f'(ROS_DOMAIN_ID=<n> make demo) or namespace (--robot NAME)', file=sys.stderr)
            return EXIT_USAGE
        if bag.exists():
            shutil.rmtree(bag)
        outcome = run_scenario(
            options, progress=Progress(lambda line: print(line, flush=True)),
            until=lambda o: interrupted.is_set() or (
                o.first_alarm_s is not None and o.planner_last == 'alarm'
                and o.sim_time_s - o.first_alarm_s >= args.after_alarm))
    finally:
        rclpy.try_shutdown()
        signal.signal(signal.SIGINT, previous)
    print(summary(outcome, drops, interrupted.is_set()))
    started = time.monotonic()
    recording, report_ok = None, False
    try:
        recording = load_recording(bag)
        write_report(recording, report, setup={'seed': str(args.seed),
                                               'drops': describe_drops(drops)})
        report_ok = True
        print(f'   bag:              {bag}')
        print(f'   report:           {report} ({time.monotonic() - started:.1f} s)')
    except (BagError, RecordingError, OSError) as error:
        print(f'   bag:              {bag}')
        print(f'   report:           FAILED: {error}')
    print('\nInspect it:')
    for line in hints(recording, bag, report, drops):
        print(f'   {line}')
    return exit_code(outcome, drops, interrupted.is_set(), report_ok)


if __name__ == '__main__':
    sys.exit(main())
