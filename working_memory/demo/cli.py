"""The demo's command line as a newcomer meets it (no ROS entities here).

Options, drops checked at once, progress, the verdict, the summary and hints that point at
what this run did.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import re
from pathlib import Path
from typing import Mapping

from working_memory.core.items import EventKind
from working_memory.core.manifest import Manifest, ManifestError
from working_memory.demo.scenario import (CABIN_SETS, DROP_CATEGORIES, Outcome,
                                          default_params_file, describe_drops, parse_drops)
from working_memory.tools.recording import Recording
from working_memory.tools.replay import ReplayError, Settings, parameters_in_file

EXIT_OK, EXIT_NOT_AS_INTENDED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
BOARD_PREFIX, EVENTS_PREFIX, EVENT_KEY_PREFIX = 'board:', 'events:', 'event:'
NODE = '/working_memory'
DEFAULT_SEED = 7


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Return the demo's options (argparse exits 2 on bad usage)."""
    parser = argparse.ArgumentParser(
        prog='working_memory demo',
        description='Run the delivery robot in the built-in simulator with working memory.')
    parser.add_argument('--drop', action='append', default=[], metavar='CABIN:CATEGORY',
                        help='missing-item injection: drop a category from a cabin manifest '
                             f'({", ".join(DROP_CATEGORIES)}, or a raw manifest drop entry)')
    parser.add_argument('--params', action='append', default=[], type=Path, metavar='FILE',
                        help="a robot's own params file (manifests, capacity, ...) or the patch "
                             '`wm-inspect suggest --out` wrote, loaded after the packaged one by '
                             'every node; repeatable, later files win')
    parser.add_argument('--robot', type=robot_name, default='', metavar='NAME',
                        help="run the loop in the robot's namespace (/NAME/board, "
                             '/NAME/working_memory, ...) and write the bag under OUT/NAME/, as '
                             "a fleet's robot (default: the root namespace)")
    parser.add_argument('--cabins', choices=sorted(CABIN_SETS), default='plain',
                        help='decision nodes: the plain reference cabins, or the planner as a '
                             'py_trees behaviour tree (default: plain)')
    parser.add_argument('--restart-wm-at', type=float, default=None, metavar='SECONDS',
                        help='at this sim time the working memory loses everything it holds '
                             '(cleanup, configure, activate: a restart) and re-reads the '
                             'writers')
    parser.add_argument('--seed', type=int, default=DEFAULT_SEED,
                        help=f'world seed (door outcomes, noise; default {DEFAULT_SEED}); '
                             'another seed names the bag ..._seed<N>')
    parser.add_argument('--out', type=Path, default=Path('out'),
                        help='directory for the bag and the report (default: out/)')
    parser.add_argument('--real-time-factor', type=float, default=2.0,
                        help='sim seconds per wall second (default: 2)')
    parser.add_argument('--sim-time-limit', type=float, default=150.0,
                        help='stop after this much sim time [s] (default: 150)')
    parser.add_argument('--wall-time-limit', type=float, default=80.0,
                        help='stop after this much wall time [s], whatever the sim time: a '
                             'machine slower than the real-time factor stops here first '
                             '(default: 80)')
    parser.add_argument('--after-alarm', type=float, default=10.0,
                        help='stop this much sim time [s] after the first alarm (default: 10)')
    return parser.parse_args(argv)


def robot_name(text: str) -> str:
    """Return `text` if it is a ROS name token (a namespace of one level) or '' (the root).

    argparse passes the default ('') through this too.
    """
    if text and not re.fullmatch(r'[A-Za-z][A-Za-z0-9_]*', text):
        raise argparse.ArgumentTypeError(f'{text!r}: a robot name is a letter, then letters, '
                                         'digits or _ (a ROS namespace of one level)')
    return text


def demo_manifests(params_files: list[Path]) -> dict[str, Manifest]:
    """Return the working memory's manifests from the packaged params file and `params_files`.

    Raises ValueError naming the file or field at fault (a missing file, a bad manifest).
    """
    values: dict = {}
    for path in [default_params_file(), *params_files]:
        try:
            values.update(parameters_in_file(path, NODE))
        except ReplayError as error:
            raise ValueError(f'--params {path}: {error}') from None
    try:
        return Settings(values, 'the params files', NODE).manifests()
    except ReplayError as error:
        raise ValueError(f'--params: {error}') from None


def category_help(manifest: Manifest) -> str:
    """Return what a drop category of `manifest`'s cabin may be."""
    kinds = ', '.join(kind.value for kind in EventKind)
    return (f'categories: {", ".join(DROP_CATEGORIES)}; or board:<glob>, events:<KIND> '
            f'({kinds} or *), or a key or glob the {manifest.name} manifest selects '
            f'({", ".join(manifest.selects.patterns)})')


def overlaps(pattern: str, selected: tuple[str, ...]) -> bool:
    """Return True when key or glob `pattern` can match a key one of the `selected` globs match."""
    return any(fnmatch.fnmatchcase(pattern, s) or fnmatch.fnmatchcase(s, pattern)
               for s in selected)


def check_entry(manifest: Manifest, entry: str) -> None:
    """Raise ValueError unless `entry` is a drop that can withhold something from the cabin."""
    try:
        dataclasses.replace(manifest, drop=(entry,))
    except ManifestError as error:
        raise ValueError(str(error)) from None
    if entry == 'map' or entry.startswith((EVENTS_PREFIX, EVENT_KEY_PREFIX)):
        return
    if not overlaps(entry.removeprefix(BOARD_PREFIX), manifest.selects.patterns):
        raise ValueError(f'{entry!r} matches nothing the {manifest.name} manifest selects')


def drops_from_specs(specs: list[str], manifests: Mapping[str, Manifest]) -> dict:
    """Return {cabin: drop entries} of `--drop` specs, checked against the cabins' manifests.

    Raises ValueError naming the spec and listing the valid cabins or categories.
    """
    for spec in specs:
        ((cabin, entries),) = parse_drops([spec]).items()
        if cabin not in manifests:
            raise ValueError(f'--drop {spec}: unknown cabin {cabin!r}; cabins: '
                             f'{", ".join(manifests)}')
        category = spec.partition(':')[2]
        for entry in entries:
            try:
                check_entry(manifests[cabin], entry)
            except ValueError as error:
                raise ValueError(f'--drop {spec}: unknown category {category!r} ({error}); '
                                 f'{category_help(manifests[cabin])}') from None
    return parse_drops(specs)


def status_line(outcome: Outcome, status: Mapping) -> str:
    """One progress line: sim time, tick, the simulator's true pose, door, what went wrong."""
    pose = status['pose']
    return (f't={outcome.sim_time_s:6.1f}s tick={outcome.ticks:4d} '
            f'pose=({pose["x"]:5.2f},{pose["y"]:5.2f}) '
            f'door={outcome.door or "?":6s} failures={outcome.failures} '
            f'evictions={outcome.evictions} alarms={len(outcome.alarms)} '
            f'policy={"/".join(sorted(outcome.retry_policies)) or "-"}')


class Progress:
    """Print a status line once the simulator reports its pose, never the same line twice."""

    def __init__(self, write=print) -> None:
        self._write = write
        self._last: str | None = None

    def __call__(self, outcome: Outcome, status: Mapping) -> None:
        """Print the line of `status` unless it has no pose yet or repeats the last line."""
        if 'pose' not in status:
            return
        line = status_line(outcome, status)
        if line != self._last:
            self._last = line
            self._write(line)


def verdict(outcome: Outcome, drops: Mapping, interrupted: bool) -> tuple[bool, str]:
    """Return (ended as intended, why): a baseline must deliver; every run must stay safe."""
    if interrupted:
        return False, 'interrupted before the run ended'
    unsafe = [f'{count} {what}' for count, what in ((outcome.zone_violations, 'zone violation(s)'),
                                                    (outcome.collisions, 'collision(s)')) if count]
    if unsafe:
        return False, 'the robot was not kept safe: ' + ', '.join(unsafe)
    if not drops:
        if outcome.delivered:
            return True, 'delivered, as a run with nothing dropped must'
        return False, (f'not delivered within {outcome.limit or "the time limit"}'
                       if outcome.timed_out else 'not delivered') + ', though nothing was dropped'
    return True, ('the injected drop was survived safely' if outcome.delivered else
                  'the robot stayed safe without what was dropped')


def headline(outcome: Outcome, interrupted: bool) -> str:
    """Return the summary's first words: how the run ended and when [s sim time].

    A delivery is told at the world's `delivered` event, as the report tells it; the run
    stops a settle time later.
    """
    wall = f'{outcome.wall_time_s:.1f} s wall'
    if interrupted or not outcome.delivered:
        return (f'{"INTERRUPTED" if interrupted else "NOT DELIVERED"} after '
                f'{outcome.sim_time_s:.1f} s sim time ({wall})')
    if outcome.delivered_at_s is None:
        return f'DELIVERED (run stopped at {outcome.sim_time_s:.1f} s sim time, {wall})'
    return (f'DELIVERED at {outcome.delivered_at_s:.1f} s sim time (run stopped at '
            f'{outcome.sim_time_s:.1f} s, {wall})')


def summary(outcome: Outcome, drops: Mapping, interrupted: bool) -> str:
    """Return the closing summary: headline, verdict and what happened."""
    alarms = ', '.join(sorted({f'{key} (from {source})' for source, key in outcome.alarms})) \
        or 'none'
    ok, why = verdict(outcome, drops, interrupted)
    return '\n'.join([
        '',
        f'== {headline(outcome, interrupted)}, {outcome.ticks} ticks'
        + (f', stopped by {outcome.limit}' if outcome.limit and not outcome.delivered else ''),
        f'   ended as intended: {"yes" if ok else "NO"} ({why})',
        f'   injected drops:   {describe_drops(drops)}',
        f'   evictions:        {outcome.evictions}',
        f'   alarms:           {alarms}',
        f'   door attempts:    {", ".join(outcome.door_strategies) or "none"} '
        f'({outcome.failures} failed)',
        f'   retry policy:     {"/".join(sorted(outcome.retry_policies)) or "-"}',
        f'   zone violations:  {outcome.zone_violations}   collisions: {outcome.collisions}',
    ] + ([f'   restarts:         working memory restarted at '
          f'{", ".join(f"{t:.1f} s" for t in outcome.restarts)}'] if outcome.restarts else []))


def exit_code(outcome: Outcome, drops: Mapping, interrupted: bool, report_ok: bool) -> int:
    """Return 0 when the run ended as intended and its report was written; 130 interrupted."""
    if interrupted:
        return EXIT_INTERRUPTED
    ok, _ = verdict(outcome, drops, interrupted)
    return EXIT_OK if ok and report_ok else EXIT_NOT_AS_INTENDED


def first_dropped_tick(recording: Recording, cabin: str, entry: str) -> int | None:
    """Return the first tick in which `cabin`'s pack lists `entry` as an injected drop."""
    for frame in recording.frames:
        pack = frame.packs.get(cabin)
        if pack is not None and any(m.key == entry and m.reason == 'INJECTED_DROP'
                                    for m in pack.missing):
            return frame.tick
    return None


def withheld_key(recording: Recording, entry: str) -> str | None:
    """Return a concrete key that a key or glob drop `entry` withheld, seen in another pack."""
    pattern = entry.removeprefix(BOARD_PREFIX)
    for frame in recording.frames:
        for pack in frame.packs.values():
            for item in pack.items:
                if fnmatch.fnmatchcase(item.key, pattern):
                    return item.key
    return None


def first_event_tick(recording: Recording, kind: str) -> tuple[int, str, str] | None:
    """Return (tick, cabin, event key) of the first pack holding an event of `kind`."""
    for frame in recording.frames:
        for cabin, pack in frame.packs.items():
            for event in pack.events:
                if event.kind == kind:
                    return frame.tick, cabin, event.key
    return None


def hints(recording: Recording | None, bag: Path, report: Path,
          drops: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Return the closing 'inspect it' commands, pointing at what this run dropped or met."""
    inspect = f'tools/rosenv wm-inspect {bag}'
    lines = [f'{inspect}   # every tick']
    if recording is None or not recording.frames:
        return lines
    for cabin, entries in drops.items():
        withheld: dict[int, list[str]] = {}
        for entry in entries:
            tick = first_dropped_tick(recording, cabin, entry)
            if tick is not None:
                withheld.setdefault(tick, []).append(entry)
        for tick, seen in withheld.items():
            lines.append(f'{inspect} --tick {tick} --cabin {cabin}   '
                         f'# {", ".join(seen)} withheld from the {cabin} (INJECTED_DROP)')
        keys = dict.fromkeys(withheld_key(recording, entry) for entry in entries
                             if entry != 'map' and not entry.startswith(EVENTS_PREFIX))
        lines += [f'{inspect} --why {key} --cabin {cabin}   # what the {cabin} did not get'
                  for key in keys if key is not None]
    failure = first_event_tick(recording, 'FAILURE')
    if failure is not None:
        tick, cabin, key = failure
        lines.append(f'{inspect} --tick {tick} --cabin {cabin}   # the {key} FAILURE, '
                     f'in the {cabin} pack')
    if recording.evictions and not drops:
        counts: dict[str, int] = {}
        for eviction in recording.evictions:
            counts[eviction.key] = counts.get(eviction.key, 0) + 1
        key = max(counts, key=lambda k: (counts[k], k))
        lines.append(f'{inspect} --why {key}   # evicted {counts[key]} times')
    alarm = first_event_tick(recording, 'ALARM')
    map_tick = (alarm or failure or (recording.ticks[-1], '', ''))[0]
    lines.append(f'{inspect} --report {report} --map-tick {map_tick}   '
                 '# the report, map at that tick')
    lines.append(f'tools/rosenv wm-inspect doctor {bag}   # the three symptoms')
    if drops or alarm or failure:
        lines.append(f'tools/rosenv wm-inspect suggest {bag}   # what the wrong decisions lacked')
    return lines
