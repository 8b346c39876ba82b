"""The fault history of a fleet: every robot's recorded runs, the manifest changes that fix them.

`suggest` and `doctor` read one bag; a team has many runs of several robots, each with its
own configuration, and asks which manifest change fixes the most wrong decisions, on which
robots, and what it costs. Two kinds of task, each one bag:

1. `examine(bag)`: the bag's own archaeology (suggest's wrong decisions and findings with the
   bag's recorded configuration; the doctor's drift and pressure symptoms) and the atomic
   candidate changes its patch makes (one entry added to a list, one value set);
2. `check(examined, changes)`: every candidate of the fleet that applies to the bag (its
   cabin exists there) replayed on it, each apart: the bag's wrong decisions it fixes (the
   replayed pack holds a missing item at every faulty tick of the decision) and the
   pressure it adds (evictions, capacity alarms) against the plain replay.

Tasks get a path (the check also the bag's examination) and give small results back;
`aggregate` merges them in path order, so the local process pool and Ray give the same
answer. A task holds one bag's run at a time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import yaml

from working_memory.engine.config import CABINS_PREFIX, cabin_param_specs
from working_memory.tools.bag import BagError
from working_memory.tools.doctor import Pressing, drift
from working_memory.tools.recording import RecordingError, load_run
from working_memory.tools.replay import (Agreeing, ReplayError, Settings, recorded_settings,
                                         replay, replay_into)
from working_memory.tools.suggest import Archaeology, Finding, node_key, served

METADATA = 'metadata.yaml'
LOCAL, RAY = 'local', 'ray'
TOP_EVICTED = 3


class FleetError(ValueError):
    """The fleet cannot be analysed as asked (no bag under the paths, a bad engine)."""


@dataclass(frozen=True, order=True)
class Change:
    """One atomic manifest change: `op` 'add' or 'remove' an entry of a list field, or 'set'."""

    cabin: str
    field: str
    op: str
    value: Any

    @property
    def name(self) -> str:
        """Return the node parameter it changes."""
        return f'{CABINS_PREFIX}{self.cabin}.{self.field}'

    def text(self) -> str:
        """Return e.g. 'planner board_keys += safety:*'."""
        sign = {'add': '+=', 'remove': '-=', 'set': '='}[self.op]
        return f'{self.cabin} {self.field} {sign} {self.value}'

    def applied(self, values: Mapping[str, Any]) -> Any:
        """Return the parameter's new value in a configuration of `values`."""
        if self.op == 'set':
            return self.value
        current = list(values.get(self.name, _default(self.cabin, self.field)))
        if self.op == 'add':
            return current if self.value in current else current + [self.value]
        return [entry for entry in current if entry != self.value]


def _cabin_field(name: str) -> tuple[str, str]:
    """Return (cabin, field) of a `cabins.<cabin>.<field>` parameter name."""
    cabin, _, field_name = name.removeprefix(CABINS_PREFIX).partition('.')
    return cabin, field_name


def _default(cabin: str, field_name: str) -> Any:
    spec = next(s for s in cabin_param_specs(cabin) if s.name.endswith('.' + field_name))
    return spec.default


@dataclass(frozen=True)
class Wrong:
    """A wrong decision of a bag and the items it lacked (as the check replays them)."""

    cabin: str
    kind: str
    summary: str
    ticks: tuple[int, ...]
    lacked: tuple[tuple[str, int | None], ...]   # (key, event seq or None)


@dataclass(frozen=True)
class BagResult:
    """What one bag shows: its robot, its wrong decisions, symptoms and candidate changes."""

    path: str
    robot: str
    ok: bool
    error: str = ''
    started_ns: int = 0
    wrong: tuple[Wrong, ...] = ()
    changes: tuple[Change, ...] = ()
    symptoms: tuple[str, ...] = ()
    evicted: tuple[tuple[str, int], ...] = ()
    cabins: tuple[str, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)   # its cabins.* parameters
    node: str = ''
    # For the check, so that it replays only the changes: each wrong decision with what it
    # lacked, and the plain replay's evictions and capacity-alarm ticks.
    lacked: tuple[tuple[Any, tuple[Finding, ...]], ...] = ()
    evictions: int = 0
    alarms: int = 0

    @property
    def wrong_decisions(self) -> int:
        """Return how many wrong decisions the bag shows."""
        return len(self.wrong)


@dataclass(frozen=True)
class Checked:
    """A candidate change replayed on one bag: decisions fixed, pressure against the plain run."""

    change: Change
    path: str
    fixed: int
    evictions: int
    evictions_before: int
    alarms: int
    alarms_before: int

    @property
    def pressure(self) -> bool:
        """True when the change adds evictions or capacity alarms on this bag."""
        return self.evictions > self.evictions_before or self.alarms > self.alarms_before


@dataclass(frozen=True)
class Ranked:
    """A candidate change across the fleet: what it fixes where, and where it adds pressure."""

    change: Change
    fixed: int
    runs: tuple[str, ...]
    robots: tuple[str, ...]
    pressure: tuple[str, ...]


@dataclass(frozen=True)
class Fleet:
    """The fleet's bags, its ranked changes, and the engine that ran it."""

    engine: str
    bags: tuple[BagResult, ...]
    changes: tuple[Ranked, ...]

    def as_json(self) -> dict:
        """Return the documented JSON contract (docs/TOOLS.md, "fleet")."""
        return {
            'engine': self.engine,
            'bags': [{'path': bag.path, 'robot': bag.robot, 'ok': bag.ok, 'error': bag.error,
                      'wrong_decisions': bag.wrong_decisions} for bag in self.bags],
            'changes': [{'cabin': r.change.cabin, 'field': r.change.field, 'op': r.change.op,
                         'value': r.change.value, 'fixed': r.fixed, 'runs': list(r.runs),
                         'robots': list(r.robots), 'pressure': list(r.pressure)}
                        for r in self.changes]}


# -- finding the bags ----------------------------------------------------------------------


def find_bags(paths: Iterable[str | Path]) -> list[Path]:
    """Return every bag folder under `paths` (any depth), sorted.

    A bag folder holds a rosbag2 `metadata.yaml` or MCAP files (a recording cut off before
    it closed has no metadata); a bag's own subfolders are not searched.
    """
    found: set[Path] = set()
    for root in map(Path, paths):
        if not root.exists():
            raise FleetError(f'{root}: no such file or folder')
        candidates = [root] if root.is_dir() else [root.parent]
        if root.is_dir():
            candidates += [Path(folder) for folder, _, _ in os.walk(root)]
        for folder in candidates:
            if _is_bag(folder) and not any(_is_bag(parent) for parent in folder.parents):
                found.add(folder)
    return sorted(found)


def _is_bag(folder: Path) -> bool:
    return (folder / METADATA).is_file() or any(folder.glob('*.mcap'))


def robot_of(path: Path, node: str | None) -> str:
    """Return the robot of a bag: its node's namespace, else the folder that holds the bag."""
    namespace = (node or '').rstrip('/').rpartition('/')[0].strip('/')
    return namespace or path.resolve().parent.name


# -- task 1: a bag's archaeology ------------------------------------------------------------


def examine(path: str) -> BagResult:
    """Return the bag's wrong decisions, symptoms and candidate changes; never raises on a bag."""
    bag = Path(path)
    if not (bag / METADATA).is_file():
        return BagResult(path, robot_of(bag, None), False,
                         f'no {METADATA}: the recording did not close (cut off?)')
    try:
        run = load_run(bag)
        settings = recorded_settings(run)
        robot = robot_of(bag, settings.node)
        if not run.recording.frames:
            return BagResult(path, robot, False, 'no frames of a working-memory node')
        # One replay read three ways: the archaeology, the agreement, the pressure.
        dumb, agreeing, pressing = Archaeology(run, settings), Agreeing(), Pressing(run, settings)
        replayer = replay_into(run, settings, dumb, agreeing, pressing, packs=False)
        found = dumb.result(check=False)
        lacked = tuple((d, tuple(lacked_by(d, found.findings))) for d in found.decisions)
        pressed = pressing.result(lacked={f.key for f in found.findings}, fixes=False)
        symptoms = [name for name, shown in (
            ('suddenly dumb', bool(found.findings)),
            ('decision drift', drift(run, agreeing.result(replayer)).found),
            ('capacity alarms', bool(pressed.alarm_ticks)),
            ('costly evictions', bool(pressed.losses))) if shown]
    except (BagError, RecordingError, ReplayError, OSError, KeyError, ValueError) as error:
        return BagResult(path, robot_of(bag, None), False, f'{type(error).__name__}: {error}')
    wrong = tuple(Wrong(d.cabin, d.kind, d.summary, d.ticks, tuple(
        (f.key, f.event.seq if f.event is not None else None) for f in findings))
        for d, findings in lacked)
    evicted = Counter(record.key for record in run.recording.evictions)
    return BagResult(path, robot, True, '', run.recording.frames[0].stamp_ns, wrong,
                     tuple(atomic_changes(found.patch, settings)), tuple(symptoms),
                     tuple(sorted(evicted.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_EVICTED]),
                     tuple(settings.manifests()),
                     {name: value for name, value in settings.values.items()
                      if name.startswith(CABINS_PREFIX)}, settings.node, lacked,
                     pressed.evictions, len(pressed.alarm_ticks))


def atomic_changes(patch: Mapping[str, Mapping[str, Any]], settings: Settings) -> list[Change]:
    """Return a patch's changes one entry or value each, against the bag's configuration."""
    changes = []
    for cabin, fields in patch.items():
        for name, value in fields.items():
            change = Change(cabin, name, 'set', value)
            if isinstance(value, list):
                before = list(settings.values.get(change.name, _default(cabin, name)))
                changes += [Change(cabin, name, 'add', v) for v in value if v not in before]
                changes += [Change(cabin, name, 'remove', v) for v in before if v not in value]
            else:
                changes.append(change)
    return changes


# -- task 2: the fleet's candidates on one bag ----------------------------------------------


def check(examined: BagResult, changes: Sequence[Change]) -> list[Checked]:
    """Replay the examined bag once per applicable change; return what each gives.

    A wrong decision counts fixed when one item it lacked (absent at its faulty ticks in
    the run, by construction) is served at every one of them; the pressure compares with
    the plain replay's figures the examination brought.
    """
    changes = [change for change in changes if change.cabin in examined.cabins]
    if not changes:
        return []   # none applies here: the bag is not read again
    run = load_run(examined.path)
    settings = recorded_settings(run)
    checked = []
    for change in changes:
        changed = settings.with_values({change.name: change.applied(settings.values)},
                                       change.text())
        try:
            after = _replayed(run, changed, examined.lacked)
        except ReplayError:
            continue  # the change does not make a valid manifest here
        fixed = sum(1 for decision, findings in examined.lacked
                    if decision.cabin == change.cabin
                    and any(after.present[id(f)] == len(f.ticks) for f in findings))
        checked.append(Checked(change, examined.path, fixed, after.evictions,
                               examined.evictions, after.alarms, examined.alarms))
    return checked


def lacked_by(decision, findings: Iterable[Finding]) -> list[Finding]:
    """Return what a wrong decision lacked: the findings of its cabin absent at its ticks.

    suggest files a finding under the first decision it was found for; wrong decisions
    of one cabin often overlap (a failure repeated again and again).
    """
    return [f for f in findings
            if f.cabin == decision.cabin and not set(f.ticks).isdisjoint(decision.ticks)]


@dataclass
class _Replayed:
    present: Counter
    evictions: int = 0
    alarms: int = 0


def _replayed(run, settings: Settings, found) -> _Replayed:
    """Replay: per finding, at how many of its faulty ticks its item is served; pressure."""
    result = _Replayed(Counter())
    wanted: dict[int, list[Finding]] = {}
    unique = {id(finding): finding for _, findings in found for finding in findings}
    for finding in unique.values():
        result.present[id(finding)] += 0
        for tick in finding.ticks:
            wanted.setdefault(tick, []).append(finding)
    for step in replay(run, settings, packs=False):
        result.evictions += len(step.frame.evictions)
        result.alarms += bool(step.frame.capacity_alarm)
        for finding in wanted.get(step.recorded.tick, ()):
            if served(step, finding):
                result.present[id(finding)] += 1
    return result


# -- the merge --------------------------------------------------------------------------------


def aggregate(engine: str, bags: Sequence[BagResult], checks: Iterable[Checked]) -> Fleet:
    """Merge the tasks' results in path order: the changes ranked by what they fix."""
    robot = {bag.path: bag.robot for bag in bags}
    by_change: dict[Change, list[Checked]] = {}
    for checked in sorted(checks, key=lambda c: (c.change, c.path)):
        by_change.setdefault(checked.change, []).append(checked)
    ranked = []
    for change, results in by_change.items():
        helped = [c.path for c in results if c.fixed]
        if not helped:
            continue
        ranked.append(Ranked(change, sum(c.fixed for c in results), tuple(helped),
                             tuple(sorted({robot[p] for p in helped})),
                             tuple(c.path for c in results if c.pressure)))
    ranked.sort(key=lambda r: (-r.fixed, len(r.pressure), r.change))
    return Fleet(engine, tuple(sorted(bags, key=lambda b: b.path)), tuple(ranked))


# -- engines -----------------------------------------------------------------------------------


def run_fleet(paths: Iterable[str | Path], engine: str = LOCAL, workers: int | None = None,
              ray_address: str | None = None,
              progress: Callable[[str, int, int], None] | None = None) -> Fleet:
    """Examine every bag, check every candidate on every bag, merge; on a pool or on Ray.

    The local pool forks: call it from a process without middleware threads (`wm-inspect
    fleet` is one; in a process with a ROS context the forked workers would crash).
    """
    bags = [str(path) for path in find_bags(paths)]
    if not bags:
        raise FleetError('no bag under ' + ', '.join(map(str, paths)))
    mapper = _local_map(workers) if engine == LOCAL else _ray_map(ray_address)
    report = progress or (lambda stage, done, total: None)
    results = mapper(examine, [(path,) for path in bags], lambda n: report('examine', n, len(bags)))
    candidates = sorted({change for result in results for change in result.changes})
    readable = [result for result in results if result.ok]
    checks: list[Checked] = []
    if candidates:
        for found in mapper(check, [(result, candidates) for result in readable],
                            lambda n: report('check', n, len(readable))):
            checks += found
    return aggregate(engine, results, checks)


def _local_map(workers: int | None):
    def run(function, arguments, done):
        # Forked: spawning would run the calling script again (console scripts have no
        # __main__ guard).
        with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1,
                                 mp_context=multiprocessing.get_context('fork')) as pool:
            futures = [pool.submit(function, *args) for args in arguments]
            results = []
            for count, future in enumerate(futures, 1):
                results.append(future.result())
                done(count)
            return results
    return run


def _ray_map(address: str | None):
    try:
        import ray
    except ImportError as error:
        raise FleetError(f'--engine ray: Ray is not installed ({error})') from None

    def run(function, arguments, done):
        if not ray.is_initialized():
            # This machine's own cluster on loopback, or the one at `address`; Ray's usage
            # statistics would go to its makers: off unless the user turned them on.
            os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     **({} if address else {'_node_ip_address': '127.0.0.1'}))
        remote = ray.remote(function)
        pending = [remote.remote(*args) for args in arguments]
        results = ray.get(pending[:1]) if pending else []
        done(len(results))
        for count, ref in enumerate(pending[1:], 2):
            results.append(ray.get(ref))
            done(count)
        return results
    return run


# -- outputs -----------------------------------------------------------------------------------


def patches(fleet: Fleet) -> dict[str, str]:
    """Return the combined patch as params files, {file stem: YAML text}.

    Per robot, the changes that fixed something and added no pressure, applied in rank
    order to the configuration of its latest run; one file `all` where every robot's
    patch comes out the same, else one per robot.
    """
    useful = [ranked.change for ranked in fleet.changes if not ranked.pressure]
    latest: dict[str, BagResult] = {}
    for bag in sorted((b for b in fleet.bags if b.ok), key=lambda b: (b.started_ns, b.path)):
        latest[bag.robot] = bag
    per_robot: dict[str, dict[str, Any]] = {}
    for robot, bag in sorted(latest.items()):
        changed: dict[str, Any] = {}
        for change in useful:
            if change.cabin in bag.cabins:
                changed[change.name] = change.applied({**bag.values, **changed})
        # Only what differs from the robot's own configuration.
        per_robot[robot] = {name: value for name, value in changed.items()
                            if value != bag.values.get(name, _default(*_cabin_field(name)))}
    if not any(per_robot.values()):
        return {}
    if len({json.dumps(values, sort_keys=True) for values in per_robot.values()}) == 1:
        robot = next(iter(per_robot))
        return {'all': _patch_text(per_robot[robot], 'every robot', latest[robot].node)}
    return {robot: _patch_text(values, f'robot {robot}', latest[robot].node)
            for robot, values in per_robot.items() if values}


def _patch_text(values: Mapping[str, Any], whom: str, node: str) -> str:
    """Return `cabins.*` parameter values as a params file that reaches `node` anywhere."""
    cabins: dict[str, Any] = {}
    for name, value in sorted(values.items()):
        cabin, _, rest = name.removeprefix(CABINS_PREFIX).partition('.')
        level = cabins.setdefault(cabin, {})
        *heads, leaf = rest.split('.')
        for head in heads:
            level = level.setdefault(head, {})
        level[leaf] = value
    header = (f'# Manifest changes wm-inspect fleet found for {whom}: each fixed wrong\n'
              "# decisions by replay on the fleet's runs and added no pressure. Pass it after\n"
              "# the robot's own params files (later files win); each field holds its full\n"
              '# new value.\n')
    return header + yaml.safe_dump({node_key(node): {'ros__parameters': {'cabins': cabins}}},
                                   default_flow_style=None, sort_keys=False, width=100)


def format_fleet(fleet: Fleet) -> str:
    """Return the printed summary: per robot and cabin, the ranked changes, unreadable bags."""
    ok = [bag for bag in fleet.bags if bag.ok]
    lines = [f'fleet: {len(fleet.bags)} bags ({len(ok)} read) of '
             f'{len({bag.robot for bag in fleet.bags})} robots, on {fleet.engine}']
    lines.append('per robot and cabin: runs, wrong decisions, symptoms, most evicted keys')
    for robot in sorted({bag.robot for bag in ok}):
        runs = [bag for bag in ok if bag.robot == robot]
        symptoms = Counter(s for bag in runs for s in bag.symptoms)
        evicted = Counter()
        for bag in runs:
            evicted.update(dict(bag.evicted))
        lines.append(f'  {robot}: {len(runs)} runs, '
                     f'{sum(b.wrong_decisions for b in runs)} wrong decisions; symptoms: '
                     + (', '.join(f'{name} ({n} runs)' for name, n in sorted(symptoms.items()))
                        or 'none')
                     + '; most evicted: ' + (', '.join(f'{k} ({n})' for k, n in
                                                       evicted.most_common(TOP_EVICTED)) or '-'))
        cabins = Counter(w.cabin for bag in runs for w in bag.wrong)
        for cabin, count in sorted(cabins.items()):
            kinds = Counter(w.kind for bag in runs for w in bag.wrong if w.cabin == cabin)
            lines.append(f'    {cabin}: {count} wrong decisions ('
                         + ', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items())) + ')')
    lines.append('changes, ranked by the wrong decisions they fix (checked by replay):')
    if not fleet.changes:
        lines.append('  none: no manifest change fixed a wrong decision on replay')
    for rank, ranked in enumerate(fleet.changes, 1):
        pressure = (f'; adds pressure on {len(ranked.pressure)} runs' if ranked.pressure
                    else '; no added pressure')
        lines.append(f'  {rank}. {ranked.change.text()}: fixes {ranked.fixed} wrong decisions '
                     f'in {len(ranked.runs)} runs of {", ".join(ranked.robots)}{pressure}')
    unread = [bag for bag in fleet.bags if not bag.ok]
    if unread:
        lines.append(f'bags not read ({len(unread)}), skipped:')
        lines += [f'  {bag.path}: {bag.error}' for bag in unread]
    return '\n'.join(lines)


def write_patches(fleet: Fleet, folder: str | Path) -> list[Path]:
    """Write the combined patch's params files into `folder`; return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, text in patches(fleet).items():
        written.append(folder / f'{stem}.yaml')
        written[-1].write_text(text, encoding='utf-8')
    return written


def write_report(fleet: Fleet, path: str | Path) -> Path:
    """Write the fleet report: faults per robot over time and the top changes, as one page."""
    from working_memory.tools import fleet_report
    return fleet_report.write(fleet, Path(path))
