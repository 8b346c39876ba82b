"""ROS-level benchmark: the node beside raw-rclpy baselines measured in the same run.

Run with `make bench-ros` (`python -m working_memory.bench.ros_bench`; `--quick` for one
short repetition). Every process (the real `working_memory_node`, the load, the probe,
the plain baselines of `bench/roles_node.py`) runs separately on loopback in a domain of
its own. Each figure is repeated (`--repeats`, default 3) and printed as min / median
beside its baseline with the ratio; nothing here asserts a time.

Figures: frame latency tick -> receipt (p50, p99) at 10 and 100 Hz; frame size; node
CPU at 100 Hz ticks + 1 kHz board updates; late frames at 100 Hz under that load (the
ros2-performance rule: interval > period + min(0.2 period, 5 ms)); board messages taken
per second under a flood while ticking at 100 Hz; `~/assemble` round trip, planner and
monitor packs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'working_memory.yaml'
# -P: the installed package (with its generated msg/srv), not the source tree in the cwd.
ROLES = [sys.executable, '-P', '-m', 'working_memory.bench.roles_node']
CLOCK_TICKS = os.sysconf('SC_CLK_TCK')


# -- pure figures ------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    """Return the q-th percentile of `samples`, q in 0..100; NaN when there are none."""
    return float(np.percentile(samples, q)) if samples else float('nan')


def late_share(receipts: list[float], period_s: float) -> float:
    """Return the share of frame intervals longer than period + min(0.2 period, 5 ms)."""
    if len(receipts) < 2:
        return float('nan')
    intervals = np.diff(np.asarray(receipts))
    limit = period_s + min(0.2 * period_s, 0.005)
    return float(np.mean(intervals > limit))


def rate_from_counts(samples: list[tuple[float, int]]) -> float:
    """Return the rate [1/s] of a counter sampled as (time [s], value); NaN with < 2 samples."""
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return float('nan')
    (t0, v0), (t1, v1) = samples[0], samples[-1]
    return (v1 - v0) / (t1 - t0)


@dataclass(frozen=True)
class Figure:
    """One row: this package's samples and the baseline's, one value per repetition."""

    name: str
    unit: str
    ours: tuple[float, ...]
    baseline: tuple[float, ...] = ()
    baseline_name: str = ''

    def ratio(self) -> float:
        """Return median(ours) / median(baseline); NaN without a baseline."""
        if not self.baseline or not self.ours:
            return float('nan')
        base = statistics.median(self.baseline)
        return statistics.median(self.ours) / base if base else float('nan')


def _cell(values: tuple[float, ...], unit: str) -> str:
    if not values:
        return ''
    return f'{min(values):.3g} / {statistics.median(values):.3g} {unit}'


def format_figures(figures: list[Figure]) -> str:
    """Return the figures as a Markdown table: min / median of each side and the ratio."""
    rows = [('figure', 'this package (min / median)', 'baseline (min / median)', 'ratio')]
    for figure in figures:
        ratio = figure.ratio()
        baseline = _cell(figure.baseline, figure.unit)
        if figure.baseline_name:
            baseline = f'{baseline} ({figure.baseline_name})'
        rows.append((figure.name, _cell(figure.ours, figure.unit), baseline,
                     '' if ratio != ratio else f'{ratio:.2f}x'))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ['| ' + ' | '.join(cell.ljust(width) for cell, width in zip(row, widths)) + ' |'
             for row in rows]
    lines.insert(1, '|' + '|'.join('-' * (width + 2) for width in widths) + '|')
    return '\n'.join(lines)


# -- processes ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU time [s] a live process has used (from /proc)."""
    fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Run:
    """The processes of one measurement; all stopped (SIGINT, then kill) on exit."""

    def __init__(self, workdir: pathlib.Path, env: dict[str, str]):
        self.workdir, self.env = workdir, env
        self.processes: list[subprocess.Popen] = []
        self._logs: dict[int, pathlib.Path] = {}
        self._count = 0

    def start(self, command: list[str]) -> subprocess.Popen:
        """Start `command`, its output in a log file of the work directory."""
        self._count += 1
        path = self.workdir / f'process{self._count}.log'
        with open(path, 'w', encoding='utf-8') as log:
            process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        self._logs[process.pid] = path
        return process

    def role(self, role: str, out: str, *options: str) -> subprocess.Popen:
        """Start a benchmark role writing its result to `out` in the work directory."""
        return self.start([*ROLES, role, '--out', str(self.workdir / out), *options])

    def result(self, process: subprocess.Popen, out: str, timeout_s: float) -> dict:
        """Wait for a role process and return its JSON result."""
        code = process.wait(timeout=timeout_s)
        if code != 0:
            tail = self._logs[process.pid].read_text().strip().splitlines()[-5:]
            raise RuntimeError(f'{process.args[3]} exited {code}: ' + '\n'.join(tail))
        return json.loads((self.workdir / out).read_text())

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


NODE = ('working_memory_node',)


def node_command(tick_hz: float, node: tuple[str, ...] = NODE) -> list[str]:
    """Return the command line of the real node, autostarted with the delivery config.

    `node` is the executable (with any leading arguments): another build of the node
    for an A/B comparison in the same run.
    """
    return [*node, '--autostart', '--ros-args', '--params-file', str(CONFIG),
            '-p', f'tick_hz:={tick_hz}', '-p', 'diagnostics_period_s:=0.5',
            '--log-level', 'warn']


# Figure groups, each runnable alone (--only): frames at 10 and 100 Hz, flood intake, assemble.
GROUPS = ('frames10', 'frames100', 'flood', 'assemble')


@dataclass
class Settings:
    """Durations [s] and sizes of one benchmark run."""

    repeats: int = 3
    measure_s: float = 5.0
    settle_s: float = 2.0
    map_side: int = 4000
    board_hz: float = 1000.0
    node: tuple[str, ...] = NODE
    groups: tuple[str, ...] = GROUPS


def _frames_under_load(workdir: pathlib.Path, env: dict, settings: Settings, tick_hz: float,
                       subject: list[str] | None, frame_file: str) -> dict:
    """Run the subject (the node, or the plain baseline when None) with load and a probe."""
    with Run(workdir, env) as run:
        if subject is None:
            target = run.role('plain', 'plain.json', '--frame-file', frame_file,
                              '--tick-hz', str(tick_hz),
                              '--duration', str(settings.settle_s + settings.measure_s + 5))
        else:
            target = run.start(subject)
        load = run.role('load', 'load.json', '--rate', str(settings.board_hz),
                        '--map-side', str(settings.map_side),
                        '--duration', str(settings.settle_s + settings.measure_s + 1))
        time.sleep(settings.settle_s)
        probe = run.role('probe', 'probe.json', '--duration', str(settings.measure_s))
        cpu_start, started = cpu_seconds(target.pid), time.monotonic()
        result = run.result(probe, 'probe.json', settings.measure_s + 30)
        result['cpu_share'] = (cpu_seconds(target.pid) - cpu_start) / (time.monotonic() - started)
        sent = run.result(load, 'load.json', 30)
        result['board_hz'] = sent['sent'] / sent['elapsed_s']
        return result


def _capture(workdir: pathlib.Path, env: dict, settings: Settings) -> dict:
    with Run(workdir, env) as run:
        run.start(node_command(10.0, settings.node))
        run.role('load', 'load.json', '--rate', '100', '--map-side', str(settings.map_side),
                 '--duration', '30')
        capture = run.role('capture', 'capture.json', '--frame-file', str(workdir / 'frame.cdr'),
                           '--response-prefix', str(workdir / 'assemble_'), '--duration', '20')
        return run.result(capture, 'capture.json', 60)


def _flood(workdir: pathlib.Path, env: dict, settings: Settings, baseline: bool,
           frame_file: str) -> float:
    """Return board messages taken per second while ticking at 100 Hz under a flood."""
    duration = settings.measure_s
    with Run(workdir, env) as run:
        if baseline:
            plain = run.role('plain', 'plain.json', '--frame-file', frame_file, '--tick-hz', '100',
                             '--duration', str(settings.settle_s + duration + 1))
        else:
            run.start(node_command(100.0, settings.node))
            probe = run.role('probe', 'probe.json',
                             '--duration', str(settings.settle_s + duration + 1.5))
        time.sleep(settings.settle_s)
        flood = run.role('flood', 'flood.json', '--duration', str(duration),
                         '--map-side', '100')
        run.result(flood, 'flood.json', duration + 30)
        if baseline:
            return run.result(plain, 'plain.json', 30)['board_received'] / duration
        samples = run.result(probe, 'probe.json', 30)['board_received']
        return rate_from_counts([(t, v) for t, v in samples])


def _round_trips(workdir: pathlib.Path, env: dict, settings: Settings, cabin: str,
                 baseline: bool) -> float:
    with Run(workdir, env) as run:
        if baseline:
            run.role('plain_assemble', 'plain.json', '--response-prefix',
                     str(workdir / 'assemble_'), '--cabin', cabin, '--duration', '120')
        else:
            run.start(node_command(10.0, settings.node))
            run.role('load', 'load.json', '--rate', '100', '--map-side', str(settings.map_side),
                     '--duration', '120')
            time.sleep(settings.settle_s)
        rtt = run.role('rtt', 'rtt.json', '--cabin', cabin, '--calls', '300', '--duration', '20')
        return percentile(run.result(rtt, 'rtt.json', 120)['rtt_ms'], 50)


def measure(settings: Settings, domain: int) -> list[Figure]:
    """Run every figure `settings.repeats` times; return the table rows."""
    env = {**os.environ, 'ROS_DOMAIN_ID': str(domain),
           'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    with tempfile.TemporaryDirectory(prefix='wm_bench_') as tmp:
        workdir = pathlib.Path(tmp)
        sizes = _capture(workdir, env, settings)
        frame_file = str(workdir / 'frame.cdr')
        figures: list[Figure] = [Figure('frame size (serialized)', 'kB', (sizes['frame'] / 1e3,))]
        for tick_hz in [hz for hz, group in ((10.0, 'frames10'), (100.0, 'frames100'))
                        if group in settings.groups]:
            ours, plain = [], []
            for _ in range(settings.repeats):
                ours.append(_frames_under_load(workdir, env, settings, tick_hz,
                                               node_command(tick_hz, settings.node), frame_file))
                plain.append(_frames_under_load(workdir, env, settings, tick_hz, None,
                                                frame_file))
            for q in (50, 99):
                figures.append(Figure(
                    f'frame latency p{q}, {tick_hz:g} Hz + {settings.board_hz:g} Hz board', 'ms',
                    tuple(percentile(r['latency_ms'], q) for r in ours),
                    tuple(percentile(r['latency_ms'], q) for r in plain), 'plain node'))
            figures.append(Figure(
                f'node CPU, {tick_hz:g} Hz ticks + {settings.board_hz:g} Hz board', '% core',
                tuple(100 * r['cpu_share'] for r in ours),
                tuple(100 * r['cpu_share'] for r in plain), 'plain node'))
            figures.append(Figure(
                f'late frames, {tick_hz:g} Hz', '%',
                tuple(100 * late_share(r['receipt'], 1 / tick_hz) for r in ours),
                tuple(100 * late_share(r['receipt'], 1 / tick_hz) for r in plain), 'plain node'))
        if 'flood' in settings.groups:
            figures.append(Figure(
                'board msgs taken/s, flood + 100 Hz ticks', 'msg/s',
                tuple(_flood(workdir, env, settings, False, frame_file)
                      for _ in range(settings.repeats)),
                tuple(_flood(workdir, env, settings, True, frame_file)
                      for _ in range(settings.repeats)), 'plain node'))
        for cabin in ('planner', 'monitor') if 'assemble' in settings.groups else ():
            figures.append(Figure(
                f'~/assemble RTT p50, {cabin} pack ({sizes[cabin] / 1e3:.1f} kB)', 'ms',
                tuple(_round_trips(workdir, env, settings, cabin, False)
                      for _ in range(settings.repeats)),
                tuple(_round_trips(workdir, env, settings, cabin, True)
                      for _ in range(settings.repeats)), 'plain service, same response'))
        return figures


def main(argv: list[str] | None = None) -> int:
    """Print the ROS-level figures beside their same-run baselines."""
    parser = argparse.ArgumentParser(prog='python -m working_memory.bench.ros_bench',
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='one short repetition')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--measure-s', type=float, default=5.0)
    parser.add_argument('--map-side', type=int, default=4000,
                        help='cells per side of the square map (0.05 m/cell)')
    parser.add_argument('--domain', type=int, default=int(os.environ.get('WM_BENCH_DOMAIN', 77)))
    parser.add_argument('--only', nargs='+', choices=GROUPS, default=GROUPS,
                        help='figure groups to run (default: all)')
    parser.add_argument('--node', default=' '.join(NODE),
                        help='command that runs the node (an A/B build), default %(default)s')
    args = parser.parse_args(argv)
    settings = Settings(repeats=1 if args.quick else args.repeats,
                        measure_s=2.0 if args.quick else args.measure_s,
                        settle_s=1.5 if args.quick else 2.0,
                        map_side=500 if args.quick else args.map_side,
                        node=tuple(args.node.split()), groups=tuple(args.only))
    started = time.monotonic()
    figures = measure(settings, args.domain)
    print(f'ROS-level benchmark: {settings.repeats} repetition(s) of {settings.measure_s:g} s, '
          f'map {settings.map_side} x {settings.map_side} cells, domain {args.domain}, '
          f'{time.monotonic() - started:.0f} s')
    print(format_figures(figures))
    return 0


if __name__ == '__main__':
    sys.exit(main())
