"""ROS-level benchmark: the node beside raw-rclpy baselines measured in the same run.

Run with `make bench-ros` (`python -m working_memory.bench.ros_bench`; `--quick` for one
short repetition). Every process (the real `working_memory_node`, the load, the probe,
the plain baselines of `bench/roles_node.py`) runs separately on loopback in a domain of
its own. Each figure is repeated (`--repeats`, default 3) and printed as min / median
beside its baseline with the ratio; nothing here asserts a time.

Figures: frame latency tick -> receipt (p50, p99) at 10 and 100 Hz; frame size; wire
bytes per tick (frames + window topics) with map windows by reference beside inline; node
CPU at 100 Hz ticks + 1 kHz board updates; late frames at 100 Hz under that load (the
ros2-performance rule: interval > period + min(0.2 period, 5 ms)); board messages taken
per second under a flood while ticking at 100 Hz; `~/assemble` round trip, planner and
monitor packs; a board that only grows (`growing`: 100,000 keys under one glob, 99 % stale,
1,000 new keys a second, 100 Hz, capacity 40) beside a 100-key board; node CPU fed a
robot's six typed topics as sources against the equivalent BoardUpdates (bench/sources.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import yaml

from working_memory.bench.profile import format_profile, parse_raw
from working_memory.ros.share import share_path

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


def node_command(tick_hz: float, node: tuple[str, ...] = NODE,
                 params_file: pathlib.Path = CONFIG, overrides: tuple[str, ...] = ()) -> list[str]:
    """Return the command line of the real node, autostarted with `params_file`.

    `node` is the executable (with any leading arguments): another build of the node
    for an A/B comparison in the same run; `overrides` are more `name:=value` parameters.
    """
    params = [arg for override in overrides for arg in ('-p', override)]
    return [*node, '--autostart', '--ros-args', '--params-file', str(params_file),
            '-p', f'tick_hz:={tick_hz}', '-p', 'diagnostics_period_s:=0.5', *params,
            '--log-level', 'warn']


def one_cabin_config(path: pathlib.Path, cabin: str, keys: str, capacity: int,
                     node: str = '', manifest: str = '') -> pathlib.Path:
    """Write a params file: one `cabin` selecting the glob `keys`, at `capacity`.

    `node` and `manifest` are more YAML lines of the node and of the cabin.
    """
    path.write_text(
        '/**:\n  ros__parameters:\n'
        f'    capacity: {capacity}\n{node}'
        f'    cabin_names: [{cabin}]\n'
        f'    cabins:\n      {cabin}:\n        board_keys: ["{keys}"]\n{manifest}',
        encoding='utf-8')
    return path


def bulk_config(path: pathlib.Path, items: int) -> pathlib.Path:
    """Write a params file with one cabin selecting every `item:*` key, room for all of them."""
    return one_cabin_config(path, 'bulk', 'item:*', items + 64)


def growing_config(path: pathlib.Path, capacity: int) -> pathlib.Path:
    """Write a params file with one cabin selecting `obj:*` (per-object state) at `capacity`."""
    return one_cabin_config(path, 'tracker', 'obj:*', capacity)


# Figure groups, each runnable alone (--only). soak runs only when asked (--soak).
GROUPS = ('frames10', 'frames100', 'wire', 'flood', 'burst', 'assemble', 'scaling',
          'board100k', 'restart', 'growing', 'sources', 'core')
CABINS = ('planner', 'executor', 'monitor')
SELECTED_ITEMS = (10, 100, 1000, 5000)
CHANGES_PER_TICK = 10
BIG_BOARD_KEYS = 100_000
BIG_BOARD_CHANGES_HZ = 1000.0   # [1/s] keys changed per second on the big board
BIG_BOARD_TICK_HZ = 20.0        # [Hz]
BIG_BOARD_CAPACITY = 256
GROWING_NEW_HZ = 1000.0         # [1/s] keys never seen before, a second, on the growing board
GROWING_TTL_S = 1.0             # [s] their ttl: 1 % of 100,000 keys fresh, 99 % stale
GROWING_TICK_HZ = 100.0         # [Hz]
GROWING_CAPACITY = 40
GROWING_SMALL_KEYS = 100        # the baseline's board: as many updates over 100 keys
BURST_S = 3.0                   # [s] flood burst
RESTART_KEYS = 1000             # board keys the writers hold when the node starts
RESTART_EVENTS = 5000           # events in their window
RESTART_WINDOW_S = 60.0         # [s] the cabin's event window
RECOVERY_WINDOW_S = 0.5         # [s] a window at >= 90 % of the nominal tick rate: recovered
SOAK_KEYS = 1000                # live sensor keys in the soak (the monitor selects them)
FLOOD_SOAK_HZ = 1000.0          # [1/s] updates of the never-removed flood, each setting
FLOOD_SOAK_KEYS = (1, 5)        # this many sensor keys never seen before (drawn), ttl 1 s
SOAK_WINDOW_S = 60.0            # [s] the flood soak's tick rate and CPU are told per window
P99_FRAMES = 500                # frames per repetition at least, for the latency figures
LATE_FRAMES = 1500              # frames per repetition, for the late-frames share (<= 1 min)


# The sources group's robot (bench/sources.py): its topics' rates [Hz] by source name.
SOURCE_RATES = {'odometry': 50.0, 'amcl': 10.0, 'plan': 1.0, 'battery': 1.0, 'diagnostics': 1.0,
                'navigate': 1.0}
PLAN_POSES = 500
DIAGNOSTIC_STATUSES = 20
NAV2_SOURCES = share_path('config', 'sources', 'nav2.yaml')
ODOMETRY_SOURCE = {
    'topic': '/odom', 'type': 'nav_msgs/msg/Odometry', 'frame': 'map',
    'board': [{'key': 'odometry', 'importance': 0.4, 'ttl_s': 0.5, 'tags': ['navigation'],
               'value': {'x': 'pose.pose.position.x', 'y': 'pose.pose.position.y',
                         'yaw': {'transform': 'yaw', 'field': 'pose.pose.orientation'},
                         'v': 'twist.twist.linear.x', 'w': 'twist.twist.angular.z'}}]}


def write_sources(path: pathlib.Path) -> pathlib.Path:
    """Write the sources group's file: nav2.yaml's sources but the goal, and odometry."""
    document = yaml.safe_load(NAV2_SOURCES.read_text(encoding='utf-8'))
    sources = {name: body for name, body in document['sources'].items()
               if name in SOURCE_RATES}
    sources['odometry'] = ODOMETRY_SOURCE
    path.write_text(yaml.safe_dump({'sources': sources}), encoding='utf-8')
    return path


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
    selected: tuple[int, ...] = SELECTED_ITEMS
    big_board_keys: int = BIG_BOARD_KEYS
    soak_s: float = 0.0
    growing_soak: bool = False    # the soak is the never-removed flood (ever-new keys)
    quick: bool = False
    profile: pathlib.Path | None = None   # py-spy's raw output of the node at 100 Hz + 1 kHz
    params: tuple[str, ...] = ()          # `name:=value` parameters of the node in every group

    def command(self, tick_hz: float, params_file: pathlib.Path = CONFIG,
                overrides: tuple[str, ...] = ()) -> list[str]:
        """Return the node's command line (`node_command`) with this run's parameters."""
        return node_command(tick_hz, self.node, params_file, (*self.params, *overrides))


@dataclass(frozen=True)
class Scene:
    """What runs beside the subject: the load's options, the probe's, and the tick rate."""

    tick_hz: float
    load: tuple[str, ...]
    probe: tuple[str, ...] = ()
    settle_s: float | None = None   # [s] before measuring; None: the settings' settle_s
    measure_s: float | None = None  # [s] measured; None: the settings' measure_s


def _frames_under_load(workdir: pathlib.Path, env: dict, settings: Settings, scene: Scene,
                       subject: list[str] | None, frame_file: str) -> dict:
    """Run the subject (the node, or the plain baseline when None) with load and a probe."""
    settle = settings.settle_s if scene.settle_s is None else scene.settle_s
    measure = settings.measure_s if scene.measure_s is None else scene.measure_s
    with Run(workdir, env) as run:
        if subject is None:
            target = run.role('plain', 'plain.json', '--frame-file', frame_file,
                              '--tick-hz', str(scene.tick_hz),
                              '--duration', str(settle + measure + 5))
        else:
            target = run.start(subject)
        load = run.role('load', 'load.json', *scene.load,
                        '--duration', str(settle + measure + 1))
        time.sleep(settle)
        probe = run.role('probe', 'probe.json', *scene.probe, '--duration', str(measure))
        cpu_start, started = cpu_seconds(target.pid), time.monotonic()
        result = run.result(probe, 'probe.json', measure + 30)
        result['cpu_share'] = (cpu_seconds(target.pid) - cpu_start) / (time.monotonic() - started)
        sent = run.result(load, 'load.json', 30)
        result['board_hz'] = sent['sent'] / sent['elapsed_s']
        return result


def frame_rate(receipts: list[float]) -> float:
    """Return frames per second [Hz] over the receipts (NaN with fewer than two)."""
    if len(receipts) < 2 or receipts[-1] <= receipts[0]:
        return float('nan')
    return (len(receipts) - 1) / (receipts[-1] - receipts[0])


def _load_options(settings: Settings, rate: float, *more: str) -> tuple[str, ...]:
    return ('--rate', str(rate), '--map-side', str(settings.map_side), *more)


def _capture(workdir: pathlib.Path, env: dict, settings: Settings,
             subject: list[str] | None = None, load: tuple[str, ...] | None = None,
             cabins: tuple[str, ...] = CABINS,
             frame_file: str = 'frame.cdr', window: bool = True) -> dict:
    """Save a frame of the node (and each cabin's Assemble response); return their sizes.

    Without `window` the frame need not name a map window (the bulk cabin asks for none).
    """
    with Run(workdir, env) as run:
        run.start(subject or settings.command(10.0))
        run.role('load', 'load.json', *(load or _load_options(settings, 100.0)),
                 '--duration', '60')
        capture = run.role('capture', 'capture.json', '--frame-file', str(workdir / frame_file),
                           '--response-prefix', str(workdir / 'assemble_'),
                           '--cabins', *cabins, '--duration', '40',
                           *(() if window else ('--no-window',)))
        return run.result(capture, 'capture.json', 90)


def _in_window(times: list[float], start: float, end: float) -> list[float]:
    return [t for t in times if start <= t <= end]


def _flood(workdir: pathlib.Path, env: dict, settings: Settings, baseline: bool,
           frame_file: str) -> dict:
    """Return board messages taken per second and ticks/s at 100 Hz under a flood."""
    duration = settings.measure_s
    with Run(workdir, env) as run:
        if baseline:
            subject = run.role('plain', 'plain.json', '--frame-file', frame_file,
                               '--tick-hz', '100',
                               '--duration', str(settings.settle_s + duration + 3))
        else:
            run.start(settings.command(100.0))
            subject = run.role('probe', 'probe.json',
                               '--duration', str(settings.settle_s + duration + 2))
        time.sleep(settings.settle_s)
        flood = run.role('flood', 'flood.json', '--duration', str(duration),
                         '--map-side', '100')
        sent = run.result(flood, 'flood.json', duration + 30)
        start, end = sent['started'], sent['ended']
        if baseline:
            plain = run.result(subject, 'plain.json', 30)
            taken = len(_in_window(plain['board_times'], start, end)) / (end - start)
            ticks = len(_in_window(plain['tick_times'], start, end)) / (end - start)
        else:
            probe = run.result(subject, 'probe.json', 30)
            samples = [(t, int(values['board.received'])) for t, values in probe['board']
                       if start <= t <= end]
            taken = rate_from_counts(samples)
            ticks = len(_in_window(probe['receipt'], start, end)) / (end - start)
        return {'taken': taken, 'ticks': ticks, 'sent': sent['messages'] / (end - start)}


def rate_before(receipts: list[float], start: float, before_s: float) -> float:
    """Return [Hz] the receipt rate over the `before_s` before `start`, from the first receipt.

    The probe starts `before_s` ahead of the burst but takes part of that to start and match:
    the window begins at its first frame, not at its launch. NaN without two receipts.
    """
    window = sorted(t for t in receipts if start - before_s <= t <= start)
    if len(window) < 2:
        return float('nan')
    return (len(window) - 1) / (start - window[0]) if start > window[0] else float('nan')


def recovery_time(receipts: list[float], after: float, tick_hz: float,
                  window_s: float = RECOVERY_WINDOW_S, horizon_s: float = 30.0) -> float:
    """Return [s] from `after` to the first window of `window_s` with >= 90 % of the ticks.

    NaN when no such window starts within `horizon_s` of `after` in the receipts.
    """
    times = np.asarray(sorted(receipts))
    need = 0.9 * tick_hz * window_s
    for start in np.arange(after, min(after + horizon_s, times[-1] if len(times) else after),
                           0.05):
        count = np.count_nonzero((times >= start) & (times < start + window_s))
        if count >= need and start + window_s <= times[-1] + 1e-9:
            return float(start - after)
    return float('nan')


def _counters(probe: dict) -> dict[str, float]:
    """Return the node's last reported board.* counters (numbers only)."""
    if not probe['board']:
        return {}
    last = probe['board'][-1][1]
    values = {}
    for key, value in last.items():
        try:
            values[key] = float(value)
        except ValueError:
            continue
    return values


def _burst(workdir: pathlib.Path, env: dict, settings: Settings) -> dict:
    """Flood the node for BURST_S under its 100 Hz + 1 kHz load; how it copes and recovers."""
    before, after = 2.0, 7.0
    burst = 1.0 if settings.quick else BURST_S
    with Run(workdir, env) as run:
        run.start(settings.command(100.0))
        load = run.role('load', 'load.json', *_load_options(settings, settings.board_hz),
                        '--duration', str(settings.settle_s + before + burst + after))
        time.sleep(settings.settle_s)
        probe = run.role('probe', 'probe.json', '--check-hz', '5',
                         '--duration', str(before + burst + after + 3))
        time.sleep(before)
        flood = run.role('flood', 'flood.json', '--duration', str(burst), '--map-side', '100')
        sent = run.result(flood, 'flood.json', burst + 30)
        loaded = run.result(load, 'load.json', after + 30)
        result = run.result(probe, 'probe.json', after + 30)
    start, end = sent['started'], sent['ended']
    receipts = result['receipt']
    counters = _counters(result)
    messages = sent['messages'] + loaded['messages']
    lost = counters.get('board.lost', 0.0)
    checks = [(t, missing) for t, _, missing in result['planner_missing'] if t >= start]
    return {
        'nominal': rate_before(receipts, start, before),
        'during': len(_in_window(receipts, start, end)) / (end - start),
        'burst_s': end - start,
        'flood_hz': sent['messages'] / (end - start),
        'recovery_s': recovery_time(receipts, end, 100.0),
        'lost': lost,
        'silent': messages - counters.get('board.received', 0.0) - lost,
        'sent': messages,
        'goal_pose_missing': sum(1 for _, missing in checks
                                 if 'pose' in missing or 'goal:*' in missing),
        'checks': len(checks),
    }


SERVICE = '/working_memory/assemble'  # the node's ~/assemble, as the rtt role calls it
PLAIN_ASSEMBLE = '/bench_plain/assemble'


def _round_trips(workdir: pathlib.Path, env: dict, settings: Settings,
                 cabin: str) -> tuple[float, float]:
    """Return the RTT p50 [ms] of our `~/assemble` and of a plain service, called in turns.

    Both servers run at once beside the node's load; one client alternates its calls
    between them, so each pair of calls sees the same machine (run one after the other,
    the plain service's own median moved 0.34 -> 0.96 ms between repeats).
    """
    with Run(workdir, env) as run:
        run.role('plain_assemble', 'plain.json', '--response-prefix', str(workdir / 'assemble_'),
                 '--cabin', cabin, '--service', PLAIN_ASSEMBLE, '--duration', '120')
        run.start(settings.command(10.0))
        run.role('load', 'load.json', *_load_options(settings, 100.0), '--duration', '120')
        time.sleep(settings.settle_s)
        rtt = run.role('rtt', 'rtt.json', '--cabin', cabin, '--calls', '300', '--duration', '20',
                       '--baseline-service', PLAIN_ASSEMBLE)
        times = run.result(rtt, 'rtt.json', 120)['rtt_ms']
    return percentile(times[SERVICE], 50), percentile(times[PLAIN_ASSEMBLE], 50)


def _repeat(settings: Settings, measure_once) -> tuple:
    return tuple(measure_once() for _ in range(settings.repeats))


def paired(settings: Settings, measure_ours, measure_baseline) -> tuple[list, list]:
    """Measure ours and its baseline `settings.repeats` times each, in turns.

    Each repeat runs the two back to back, which goes first changing every repeat: a
    machine that drifts (the latency of one configuration moved 20 % over six runs in
    a row) then favours neither side, exactly with an even number of repeats and nearly
    with an odd one (3: ours goes first twice).
    """
    ours, baseline = [], []
    for repeat in range(settings.repeats):
        turns = ((ours, measure_ours), (baseline, measure_baseline))
        for results, measure_once in turns if repeat % 2 == 0 else turns[::-1]:
            results.append(measure_once())
    return ours, baseline


def _frame_figures(workdir, env, settings: Settings, frame_file: str,
                   tick_hz: float) -> list[Figure]:
    # Long enough for a p99 that is one: at 10 Hz, 5 s hold 50 frames, whose p99 is their
    # largest but one; P99_FRAMES frames put the 1 % in the 5 largest, so that one stray
    # frame does not make the figure. The late-frames target (100 Hz) is in points, one being
    # 5 of 500 frames: a run takes LATE_FRAMES or a minute's frames, whichever is fewer, and
    # never fewer than P99_FRAMES (60 s at 10 Hz, 15 s at 100 Hz; --quick: measure_s).
    frames = max(P99_FRAMES, min(LATE_FRAMES, 60 * tick_hz))
    measure = settings.measure_s if settings.quick else max(settings.measure_s,
                                                            frames / tick_hz)
    scene = Scene(tick_hz, _load_options(settings, settings.board_hz), measure_s=measure)
    ours, plain = paired(
        settings,
        lambda: _frames_under_load(workdir, env, settings, scene, settings.command(tick_hz),
                                   frame_file),
        lambda: _frames_under_load(workdir, env, settings, scene, None, frame_file))
    load = f'{tick_hz:g} Hz + {settings.board_hz:g} Hz board'
    figures = [Figure(f'frame latency p{q}, {load}', 'ms',
                      tuple(percentile(r['latency_ms'], q) for r in ours),
                      tuple(percentile(r['latency_ms'], q) for r in plain), 'plain node')
               for q in (50, 99)]
    figures.append(Figure(f'node CPU, {load}', '% core',
                          tuple(100 * r['cpu_share'] for r in ours),
                          tuple(100 * r['cpu_share'] for r in plain), 'plain node'))
    figures.append(Figure(f'late frames, {tick_hz:g} Hz', '%',
                          tuple(100 * late_share(r['receipt'], 1 / tick_hz) for r in ours),
                          tuple(100 * late_share(r['receipt'], 1 / tick_hz) for r in plain),
                          'plain node'))
    return figures


def wire_bytes_per_tick(probe: dict) -> float:
    """Return the bytes [B] frames and windows put on the wire per frame received."""
    frames = probe['sizes']
    if not frames:
        return float('nan')
    start = probe['receipt'][0]
    windows = [size for at, size in probe['window_sizes'] if at >= start]
    return (sum(frames) + sum(windows)) / len(frames)


def _wire_figures(workdir, env, settings: Settings) -> list[Figure]:
    """Wire bytes per tick with windows by reference (the default) beside inline windows."""
    tick_hz = 100.0
    scene = Scene(tick_hz, _load_options(settings, settings.board_hz),
                  probe=('--windows', *CABINS))
    subjects = [settings.command(tick_hz, overrides=(f'map_windows:={mode}',))
                for mode in ('reference', 'inline')]
    reference, inline = paired(settings, *(
        lambda subject=subject: _frames_under_load(workdir, env, settings, scene, subject, '')
        for subject in subjects))
    modes = {'reference': reference, 'inline': inline}
    load = f'{tick_hz:g} Hz + {settings.board_hz:g} Hz board, pose still'
    figures = [Figure(f'wire bytes per tick (frames + windows), {load}', 'kB',
                      tuple(wire_bytes_per_tick(r) / 1e3 for r in modes['reference']),
                      tuple(wire_bytes_per_tick(r) / 1e3 for r in modes['inline']),
                      'map_windows: inline')]
    for q in (50, 99):
        figures.append(Figure(f'frame latency p{q}, windows by reference vs inline, {load}',
                              'ms', tuple(percentile(r['latency_ms'], q)
                                          for r in modes['reference']),
                              tuple(percentile(r['latency_ms'], q) for r in modes['inline']),
                              'map_windows: inline'))
    figures.append(Figure(f'node CPU, windows by reference vs inline, {load}', '% core',
                          tuple(100 * r['cpu_share'] for r in modes['reference']),
                          tuple(100 * r['cpu_share'] for r in modes['inline']),
                          'map_windows: inline'))
    return figures


def _flood_figures(workdir, env, settings: Settings, frame_file: str) -> list[Figure]:
    ours, plain = paired(settings,
                         lambda: _flood(workdir, env, settings, False, frame_file),
                         lambda: _flood(workdir, env, settings, True, frame_file))
    sent = statistics.median(r['sent'] for r in ours + plain)
    return [Figure(f'board msgs taken/s, flood (~{sent:.3g} msg/s sent) + 100 Hz ticks',
                   'msg/s', tuple(r['taken'] for r in ours), tuple(r['taken'] for r in plain),
                   'plain node'),
            Figure('ticks/s under that flood', 'Hz', tuple(r['ticks'] for r in ours),
                   tuple(r['ticks'] for r in plain), 'plain node')]


def _burst_figures(workdir, env, settings: Settings) -> list[Figure]:
    runs = _repeat(settings, lambda: _burst(workdir, env, settings))
    flood = statistics.median(r['flood_hz'] for r in runs)
    return [
        Figure('ticks/s before a flood burst (100 Hz + 1 kHz board)', 'Hz',
               tuple(r['nominal'] for r in runs)),
        Figure(f'ticks/s during the burst (~{flood:.3g} msg/s for '
               f'{statistics.median(r["burst_s"] for r in runs):.2g} s)', 'Hz',
               tuple(r['during'] for r in runs)),
        Figure('back at >= 90 % of 100 Hz after the burst', 's',
               tuple(r['recovery_s'] for r in runs)),
        Figure('board updates lost in the run, counted on /diagnostics', 'msgs',
               tuple(r['lost'] for r in runs)),
        Figure('board updates lost silently (sent - taken - counted)', 'msgs',
               tuple(r['silent'] for r in runs)),
        Figure('planner packs without goal or pose, during/after the burst', 'packs',
               tuple(r['goal_pose_missing'] for r in runs)),
    ]


def _scaling_figures(workdir, env, settings: Settings) -> list[Figure]:
    """CPU per tick against the number of selected items, CHANGES_PER_TICK changing a tick."""
    tick_hz = 10.0
    figures = []
    for items in settings.selected:
        config = bulk_config(workdir / f'bulk_{items}.yaml', items)
        subject = settings.command(tick_hz, config)
        load = ('--rate', str(tick_hz), '--keys', str(items), '--prefix', 'item:',
                '--per-msg', str(min(items, CHANGES_PER_TICK)), '--fill',
                '--map-side', '100')
        frame_file = f'bulk_{items}.cdr'
        _capture(workdir, env, settings, subject, load, ('bulk',), frame_file, window=False)
        scene = Scene(tick_hz, load, settle_s=settings.settle_s + 1.0)
        ours, plain = paired(
            settings,
            *(lambda who=who: _cpu_per_tick_ms(workdir, env, settings, scene, who,
                                               str(workdir / frame_file))
              for who in (subject, None)))
        figures.append(Figure(f'CPU per tick, {items} selected items, '
                              f'{min(items, CHANGES_PER_TICK)} changing', 'ms',
                              tuple(ours), tuple(plain), 'plain node, same frame'))
    return figures


def _cpu_per_tick_ms(workdir, env, settings: Settings, scene: Scene, subject: list[str] | None,
                     frame_file: str, attempts: int = 3) -> float:
    """Return the subject's CPU per frame received [ms]; a run without frames is said and redone."""
    for attempt in range(1, attempts + 1):
        result = _frames_under_load(workdir, env, settings, scene, subject, frame_file)
        rate = frame_rate(result['receipt'])
        if rate == rate:
            return 1e3 * result['cpu_share'] / rate
        print(f'bench: {"the node" if subject else "the plain node"} sent '
              f'{len(result["receipt"])} frame(s) to the probe in {settings.measure_s} s '
              f'(attempt {attempt} of {attempts})', file=sys.stderr)
    return float('nan')


def _board100k_figures(workdir, env, settings: Settings) -> list[Figure]:
    keys = settings.big_board_keys
    per_msg = 10
    scene = Scene(BIG_BOARD_TICK_HZ,
                  _load_options(settings, BIG_BOARD_CHANGES_HZ / per_msg, '--keys', str(keys),
                                '--prefix', 'noise:', '--per-msg', str(per_msg), '--fill'),
                  settle_s=settings.settle_s + keys / 10_000)
    subject = settings.command(BIG_BOARD_TICK_HZ,
                               overrides=(f'capacity:={BIG_BOARD_CAPACITY}',))
    runs = _repeat(settings, lambda: _frames_under_load(workdir, env, settings, scene, subject,
                                                        ''))
    name = f'{keys:,} board keys, {BIG_BOARD_CHANGES_HZ:g} changes/s, capacity ' \
           f'{BIG_BOARD_CAPACITY}'
    return [Figure(f'ticks/s, {name} (target {BIG_BOARD_TICK_HZ:g})', 'Hz',
                   tuple(frame_rate(r['receipt']) for r in runs)),
            Figure(f'node CPU, {name}', '% core', tuple(100 * r['cpu_share'] for r in runs)),
            Figure(f'frame latency p50, {name}', 'ms',
                   tuple(percentile(r['latency_ms'], 50) for r in runs))]


def restart_config(path: pathlib.Path, keys: int, events: int) -> pathlib.Path:
    """Write a params file: one cabin reading every `item:*` key and every event in its window."""
    return one_cabin_config(path, 'bulk', 'item:*', keys + events + 64,
                            node=f'    event_log_limit: {2 * events}\n',
                            manifest=f'        events:\n          window_s: {RESTART_WINDOW_S}\n')


def restart_times(frames: list, since: float, keys: int, events: int) -> dict[str, float]:
    """Return [s] from `since` (the process start) to the first frame, and to the first whole one.

    Also from the node's own start (`started`, its configure) to the whole frame, which
    leaves out the interpreter's start. NaN for what no frame reached.
    """
    nan = float('nan')
    if not frames:
        return {'first': nan, 'whole': nan, 'whole_from_start': nan, 'resyncing_s': nan}
    whole = next(((at, started) for at, started, _, items, held in frames
                  if items >= keys and held >= events), None)
    resyncing = [at for at, _, flag, _, _ in frames if flag]
    return {'first': frames[0][0] - since,
            'whole': nan if whole is None else whole[0] - since,
            'whole_from_start': nan if whole is None else whole[0] - whole[1],
            'resyncing_s': (resyncing[-1] - frames[0][0]) if resyncing else 0.0}


def _restart(workdir: pathlib.Path, env: dict, settings: Settings, keys: int,
             events: int) -> dict[str, float]:
    """Start the node beside writers holding `keys` keys and `events` events; time its re-read."""
    config = restart_config(workdir / f'restart_{keys}.yaml', RESTART_KEYS, RESTART_EVENTS)
    with Run(workdir, env) as run:
        if keys or events:
            run.role('writers', 'writers.json', '--keys', str(keys), '--events', str(events),
                     '--window', str(RESTART_WINDOW_S), '--duration', '60')
        probe = run.role('restart_probe', 'restart.json', '--cabin', 'bulk', '--duration',
                         str(settings.settle_s + 12.0))
        time.sleep(settings.settle_s)   # writers filled, probe matched to nothing yet
        since = time.time()
        run.start(settings.command(20.0, config))
        frames = run.result(probe, 'restart.json', 60)['frames']
    return restart_times(frames, since, keys, events)


def _restart_figures(workdir, env, settings: Settings) -> list[Figure]:
    """Return the restart figures: a node starting beside writers with keys and events."""
    ours, empty = paired(
        settings,
        lambda: _restart(workdir, env, settings, RESTART_KEYS, RESTART_EVENTS),
        lambda: _restart(workdir, env, settings, 0, 0))
    held = f'{RESTART_KEYS:,} keys + {RESTART_EVENTS:,} events'
    return [
        Figure(f'restart: process start to first frame, writers holding {held}', 's',
               tuple(r['first'] for r in ours), tuple(r['first'] for r in empty),
               'nothing to re-read'),
        Figure(f'restart: process start to the first frame holding all of it ({held})', 's',
               tuple(r['whole'] for r in ours), tuple(r['first'] for r in empty),
               'first frame, nothing to re-read'),
        Figure(f'restart: node start (configure) to the frame holding all of it ({held})', 's',
               tuple(r['whole_from_start'] for r in ours)),
    ]


def _robot_cpu(workdir: pathlib.Path, env: dict, settings: Settings, sources_file: pathlib.Path,
               typed: bool) -> float:
    """Return the node's CPU [% core] at 100 Hz ticks fed the robot's six topics.

    `typed`: as typed-topic sources (sources_file); else the same entries and events
    as BoardUpdate and LogEvent.
    """
    with Run(workdir, env) as run:
        # No writer answers a resync here: without it, its bound (5 s) would mark the
        # frames of the measured seconds, in one variant more than in the other.
        overrides = ('resync_timeout_s:=0.0',
                     *((f'sources_file:={sources_file}',) if typed else ()))
        target = run.start(settings.command(100.0, overrides=overrides))
        run.role('robot', 'robot.json', '--sources-file', str(sources_file),
                 *(() if typed else ('--as-board',)),
                 '--duration', str(settings.settle_s + settings.measure_s + 2))
        time.sleep(settings.settle_s)
        cpu_start, started = cpu_seconds(target.pid), time.monotonic()
        time.sleep(settings.measure_s)
        return 100 * (cpu_seconds(target.pid) - cpu_start) / (time.monotonic() - started)


def _sources_figures(workdir, env, settings: Settings) -> list[Figure]:
    """Six typed sources at robot rates against the same as BoardUpdates; conversion costs."""
    path = write_sources(workdir / 'sources.yaml')
    ours, baseline = paired(settings, lambda: _robot_cpu(workdir, env, settings, path, True),
                            lambda: _robot_cpu(workdir, env, settings, path, False))
    figures = [Figure('node CPU, 100 Hz ticks, six typed sources at robot rates (target <= '
                      '1.3x)', '% core', tuple(ours), tuple(baseline),
                      'the same node fed the equivalent BoardUpdates')]
    draws = []
    for _ in range(settings.repeats):
        with Run(workdir, env) as run:
            costs = run.role('convert', 'convert.json', '--sources-file', str(path),
                             '--calls', '20' if settings.quick else '200')
            draws.append(run.result(costs, 'convert.json', 120))
    for name in draws[0]:
        figures.append(Figure(f'sources: one {name} message converted', 'us',
                              tuple(draw[name][0] for draw in draws),
                              tuple(draw[name][1] for draw in draws),
                              'rosidl message_to_ordereddict'))
    return figures


def _growing_figures(workdir, env, settings: Settings) -> list[Figure]:
    """Measure a board that only grows under one glob beside a 100-key board, same updates."""
    keys, per_msg = settings.big_board_keys, 10
    subject = settings.command(GROWING_TICK_HZ,
                               growing_config(workdir / 'growing.yaml', GROWING_CAPACITY))

    def scene(board_keys: int, *new: str) -> Scene:
        return Scene(GROWING_TICK_HZ, (
            '--rate', str(GROWING_NEW_HZ / per_msg), '--keys', str(board_keys), '--prefix',
            'obj:', '--per-msg', str(per_msg), '--fill', '--ttl', str(GROWING_TTL_S),
            '--map-side', '100', *new), settle_s=settings.settle_s + keys / 10_000 + 1.0)
    grown, small = paired(settings, *(
        lambda scene=scene: _frames_under_load(workdir, env, settings, scene, subject, '')
        for scene in (scene(keys, '--new-keys'), scene(GROWING_SMALL_KEYS))))
    name = (f'{keys:,} keys under obj:*, 99 % stale, {GROWING_NEW_HZ:g} new keys/s, '
            f'{GROWING_TICK_HZ:g} Hz, capacity {GROWING_CAPACITY}')
    baseline = f'{GROWING_SMALL_KEYS}-key board, same updates'
    return [Figure(f'ticks/s, {name} (target >= 95)', 'Hz',
                   tuple(frame_rate(r['receipt']) for r in grown),
                   tuple(frame_rate(r['receipt']) for r in small), baseline),
            Figure(f'frame size p99, {name} (target < 16)', 'kB',
                   tuple(percentile(r['sizes'], 99) / 1e3 for r in grown),
                   tuple(percentile(r['sizes'], 99) / 1e3 for r in small), baseline),
            # The tick's time as its consumers see it: from the frame's stamp to its receipt.
            Figure(f'tick time, frame latency p50, {name} (target <= 1.5x)', 'ms',
                   tuple(percentile(r['latency_ms'], 50) for r in grown),
                   tuple(percentile(r['latency_ms'], 50) for r in small), baseline),
            # Beside it, the node's whole CPU per tick: the intake of the updates included.
            Figure(f'node CPU per tick, {name}', 'ms',
                   tuple(1e3 * r['cpu_share'] / frame_rate(r['receipt']) for r in grown),
                   tuple(1e3 * r['cpu_share'] / frame_rate(r['receipt']) for r in small),
                   baseline)]


def rss_mib(pid: int) -> float:
    """Return the resident set size [MiB] of a live process (from /proc)."""
    for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
    return float('nan')


def rss_slope(samples: list[tuple[float, float]]) -> float:
    """Return the least-squares slope [MiB/min] of (time [s], RSS [MiB]) samples."""
    if len(samples) < 2:
        return float('nan')
    times, values = np.asarray(samples).T
    return float(np.polyfit(times / 60.0, values, 1)[0])


def _soak_figures(workdir, env, settings: Settings) -> list[Figure]:
    """Run the node at 100 Hz + 1 kHz board for soak_s; RSS from /proc every 5 s."""
    warmup = min(60.0, settings.soak_s / 4)
    with Run(workdir, env) as run:
        node = run.start(settings.command(100.0))
        run.role('load', 'load.json', *_load_options(settings, settings.board_hz),
                 '--keys', str(SOAK_KEYS), '--duration', str(settings.soak_s + 5))
        probe = run.role('probe', 'probe.json', '--duration', str(settings.soak_s))
        started = time.monotonic()
        cpu_start = cpu_seconds(node.pid)
        samples = []
        while probe.poll() is None:
            samples.append((time.monotonic() - started, rss_mib(node.pid)))
            time.sleep(5.0)
        cpu = (cpu_seconds(node.pid) - cpu_start) / (time.monotonic() - started)
        result = run.result(probe, 'probe.json', 30)
    warm = [(t, rss) for t, rss in samples if t >= warmup]
    half = [(t, rss) for t, rss in warm if t >= (warmup + settings.soak_s) / 2]
    name = f'soak {settings.soak_s / 60:g} min, 100 Hz + {settings.board_hz:g} Hz board ' \
           f'over {SOAK_KEYS} keys'
    return [Figure(f'RSS after {warmup:g} s warm-up, {name}', 'MiB', (warm[0][1],)),
            Figure(f'RSS at the end, {name}', 'MiB', (samples[-1][1],)),
            Figure(f'RSS growth, second half, {name}', 'MiB/min', (rss_slope(half),)),
            Figure(f'ticks/s, {name}', 'Hz', (frame_rate(result['receipt']),)),
            Figure(f'node CPU, {name}', '% core', (100 * cpu,))]


def _flood_soak_figures(workdir, env, settings: Settings) -> list[Figure]:
    """Run the packaged node at 100 Hz under a flood of sensor keys nobody removes.

    1,000 updates a second, each of 1 to 5 keys never seen before (the monitor selects
    `sensor:*`), for soak_s: the tick rate and node CPU per minute (first and last), the
    slowest 10 s, RSS, and how much a tick costs more per 100,000 keys on the board.
    """
    low, high = FLOOD_SOAK_KEYS
    with Run(workdir, env) as run:
        node = run.start(settings.command(100.0))
        load = run.role('load', 'load.json', '--rate', str(FLOOD_SOAK_HZ), '--new-keys',
                        '--per-msg', str(low), '--per-msg-max', str(high), '--ttl', '1.0',
                        '--map-side', '100', '--duration', str(settings.soak_s + 5))
        probe = run.role('probe', 'probe.json', '--duration', str(settings.soak_s))
        started = time.monotonic()
        samples = []   # (time [s], node CPU [s], RSS [MiB])
        while probe.poll() is None:
            samples.append((time.monotonic() - started, cpu_seconds(node.pid),
                            rss_mib(node.pid)))
            time.sleep(5.0)
        result = run.result(probe, 'probe.json', 30)
        sent = run.result(load, 'load.json', 30)
    receipts = np.asarray(result['receipt'])
    receipts -= receipts[0]
    keys_per_s = sent['keys_set'] / sent['elapsed_s']
    window = min(SOAK_WINDOW_S, settings.soak_s / 4)

    def rate(start: float, span: float) -> float:
        return int(np.count_nonzero((receipts >= start) & (receipts < start + span))) / span

    def cpu_per_tick(start: float) -> float:
        inside = [(t, cpu) for t, cpu, _ in samples if start <= t <= start + window]
        if len(inside) < 2:
            return float('nan')
        (t0, c0), (t1, c1) = inside[0], inside[-1]
        return 1e3 * (c1 - c0) / max(1.0, rate(start, window) * (t1 - t0))
    end = receipts[-1] - window
    first, last = cpu_per_tick(window), cpu_per_tick(end)
    slowest = min(rate(start, 10.0) for start in np.arange(window, receipts[-1] - 10.0, 5.0))
    keys_late = keys_per_s * (end + window / 2) / 1e5   # board keys, 100,000s, mid window
    keys_early = keys_per_s * (1.5 * window) / 1e5
    name = (f'flood soak {settings.soak_s / 60:g} min, 100 Hz, {FLOOD_SOAK_HZ:g} updates/s of '
            f'{low}-{high} new sensor keys (none removed)')
    return [Figure(f'ticks/s, second minute, {name}', 'Hz', (rate(window, window),)),
            Figure(f'ticks/s, last minute, {name}', 'Hz', (rate(end, window),)),
            Figure(f'ticks/s, slowest 10 s, {name}', 'Hz', (slowest,)),
            Figure(f'node CPU per tick, second minute, {name}', 'ms', (first,)),
            Figure(f'node CPU per tick, last minute, {name}', 'ms', (last,)),
            Figure(f'tick cost per 100,000 more board keys, {name}', 'ms',
                   ((last - first) / max(1e-9, keys_late - keys_early),)),
            Figure(f'board keys at the end, {name}', 'keys', (float(sent['keys_set']),)),
            Figure(f'RSS at the end, {name}', 'MiB', (samples[-1][2],)),
            Figure(f'RSS per 100,000 board keys, {name}', 'MiB',
                   (np.polyfit([keys_per_s * t / 1e5 for t, _, _ in samples],
                               [rss for _, _, rss in samples], 1)[0],))]


def _core_figures(settings: Settings) -> list[Figure]:
    """Return the core benchmark's headline figures (bench/core.py) as rows of this table."""
    from working_memory.bench import core
    side = core.QUICK_MAP_SIDE if settings.quick else core.MAP_SIDE
    frames = 5 if settings.quick else 300
    means = []
    for _ in range(settings.repeats):
        row = core.assembly_rows(side, frames, 500, 5, 256)[0]
        means.append(float(row[1]))
    figures = [Figure('core: three-cabin frame, mean (make bench; target <= 1 ms)', 'ms',
                      tuple(means))]
    ops = 200 if settings.quick else 20_000
    # Every repetition measures every capacity (each the best of core.REPEATS turns), so the
    # figure is a min / median over `repeats` like the others, not one draw of a noisy VM.
    capacities = core.QUICK_CAPACITIES if settings.quick else core.CAPACITIES
    draws = [{capacity: core.measure_capacity(capacity, ops)['evict'] for capacity in capacities}
             for _ in range(settings.repeats)]
    for capacity in capacities:
        figures.append(Figure(f'core: evict per op at {capacity:,} (target <= 2x)', 'us',
                              tuple(draw[capacity]['ours'] * 1e6 for draw in draws),
                              tuple(draw[capacity]['cachetools'] * 1e6 for draw in draws),
                              'cachetools.LRUCache'))
    return figures


def bench_env(domain: int) -> dict[str, str]:
    """Return the environment of every process: this one's, in `domain`, on loopback."""
    return {**os.environ, 'ROS_DOMAIN_ID': str(domain),
            'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}


def profile_node(workdir: pathlib.Path, env: dict, settings: Settings) -> str:
    """Sample the node with py-spy at 100 Hz ticks + the 1 kHz board; return the summary.

    The raw stacks are kept at `settings.profile` (flame graphs: `py-spy`'s raw
    format is Brendan Gregg's collapsed stacks).
    """
    spy = shutil.which('py-spy')
    if spy is None:
        raise RuntimeError('py-spy not found: it is in tools/requirements.txt (make setup)')
    with Run(workdir, env) as run:
        target = run.start(settings.command(100.0))
        run.role('load', 'load.json', *_load_options(settings, settings.board_hz),
                 '--duration', str(settings.settle_s + settings.measure_s + 3))
        time.sleep(settings.settle_s)
        # --nonblocking: the node is not paused while sampled (no added latency).
        subprocess.run([spy, 'record', '--pid', str(target.pid), '--nonblocking',
                        '--duration', str(max(1, round(settings.measure_s))), '--rate', '200',
                        '--format', 'raw', '--output', str(settings.profile)],
                       check=True, capture_output=True, timeout=settings.measure_s + 60)
    text = settings.profile.read_text(encoding='utf-8')
    return format_profile(parse_raw(text), f'py-spy profile of `{" ".join(settings.node)}`, '
                          f'100 Hz ticks + {settings.board_hz:g} Hz board')


def measure(settings: Settings, domain: int) -> list[Figure]:
    """Run every figure group of `settings` `settings.repeats` times; return the table rows."""
    env = bench_env(domain)
    groups = settings.groups
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix='wm_bench_') as tmp:
        workdir = pathlib.Path(tmp)
        frame_file = str(workdir / 'frame.cdr')
        if {'frames10', 'frames100', 'flood', 'assemble'} & set(groups):
            sizes = _capture(workdir, env, settings)
            figures.append(Figure('frame size (serialized)', 'kB', (sizes['frame'] / 1e3,)))
        for tick_hz, group in ((10.0, 'frames10'), (100.0, 'frames100')):
            if group in groups:
                figures += _frame_figures(workdir, env, settings, frame_file, tick_hz)
        if 'wire' in groups:
            figures += _wire_figures(workdir, env, settings)
        if 'flood' in groups:
            figures += _flood_figures(workdir, env, settings, frame_file)
        if 'burst' in groups:
            figures += _burst_figures(workdir, env, settings)
        if 'assemble' in groups:
            for cabin in ('planner', 'monitor'):
                ours, baseline = zip(*(_round_trips(workdir, env, settings, cabin)
                                       for _ in range(settings.repeats)))
                figures.append(Figure(
                    f'~/assemble RTT p50, {cabin} pack ({sizes[cabin] / 1e3:.1f} kB)', 'ms',
                    ours, baseline, 'plain service, same response, calls alternated'))
        if 'scaling' in groups:
            figures += _scaling_figures(workdir, env, settings)
        if 'board100k' in groups:
            figures += _board100k_figures(workdir, env, settings)
        if 'restart' in groups:
            figures += _restart_figures(workdir, env, settings)
        if 'growing' in groups:
            figures += _growing_figures(workdir, env, settings)
        if 'sources' in groups:
            figures += _sources_figures(workdir, env, settings)
        if settings.soak_s > 0:
            figures += (_flood_soak_figures if settings.growing_soak else _soak_figures)(
                workdir, env, settings)
    if 'core' in groups:
        figures += _core_figures(settings)
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
    parser.add_argument('--soak', action='store_true',
                        help='also the 10-minute soak at 100 Hz + 1 kHz (RSS from /proc)')
    parser.add_argument('--soak-s', type=float, default=600.0, help='soak duration [s]')
    parser.add_argument('--growing-soak', action='store_true',
                        help='also the soak of the never-removed flood: 100 Hz ticks, 1,000 '
                             'updates/s of 1-5 new sensor keys each')
    parser.add_argument('--profile', type=pathlib.Path, metavar='RAW',
                        help='instead of the figures: sample the node with py-spy at 100 Hz + '
                             '1 kHz, keep the raw stacks in RAW, print the top functions')
    parser.add_argument('--node', default=' '.join(NODE),
                        help='command that runs the node (an A/B build), default %(default)s')
    parser.add_argument('--param', action='append', default=[], metavar='NAME:=VALUE',
                        help='a parameter of the node in every group (an A/B setting), e.g. '
                             'map_windows:=inline; repeatable')
    args = parser.parse_args(argv)
    quick = args.quick
    settings = Settings(repeats=1 if quick else args.repeats,
                        measure_s=2.0 if quick else args.measure_s,
                        settle_s=1.5 if quick else 2.0,
                        map_side=500 if quick else args.map_side,
                        node=tuple(args.node.split()),
                        groups=tuple(g for g in GROUPS if g in args.only),
                        selected=(10, 100) if quick else SELECTED_ITEMS,
                        big_board_keys=5000 if quick else BIG_BOARD_KEYS,
                        soak_s=(min(args.soak_s, 30.0) if quick else args.soak_s)
                        if args.soak or args.growing_soak else 0.0,
                        growing_soak=args.growing_soak,
                        quick=quick, profile=args.profile, params=tuple(args.param))
    started = time.monotonic()
    if settings.profile is not None:
        with tempfile.TemporaryDirectory(prefix='wm_profile_') as tmp:
            print(profile_node(pathlib.Path(tmp), bench_env(args.domain), settings))
        return 0
    figures = measure(settings, args.domain)
    longer = '' if settings.quick else f' (latency: {P99_FRAMES}+ frames)'
    print(f'ROS-level benchmark: {settings.repeats} repetition(s) of {settings.measure_s:g} s'
          f'{longer}, '
          f'map {settings.map_side} x {settings.map_side} cells, domain {args.domain}, '
          f'{time.monotonic() - started:.0f} s')
    print(format_figures(figures))
    return 0


if __name__ == '__main__':
    sys.exit(main())
