"""wm-inspect: answer why-questions from a bag of working-memory frames and evictions.

    wm-inspect BAG                          list ticks: stamp, digest, items per cabin, missing
    wm-inspect BAG --tick N [--cabin C]     the pack(s) of tick N
    wm-inspect BAG --why KEY [--cabin C]    a key's timeline: present, evicted, back, stale, ...
    wm-inspect BAG --report FILE.html|FILE.png [--map-tick N] [--cabin C] [--capacity N]
    wm-inspect replay BAG [--manifests FILE] [--capacity N] [--set NAME=VALUE] ...
                                            replay the run offline; what-if with changes
    wm-inspect suggest BAG [--cabin C] [--out FILE]
                                            manifest additions from the run's wrong decisions
    wm-inspect doctor BAG                   the three symptoms: suddenly dumb, decision drift,
                                            capacity pressure
    wm-inspect fleet PATH... [--workers N] [--engine local|ray] [--ray-address ADDR]
                             [--json FILE] [--report FILE.html] [--out DIR]
                                            every bag under the paths: the manifest changes
                                            that fix the most wrong decisions, by replay

Needs only rosbags, numpy and matplotlib (no rclpy). Exit code 0 on success, 1 when
the bag or the question is wrong (missing bag, unknown cabin, tick not recorded), 2 on
bad usage; `replay` exits 3 when a digest disagrees, `doctor` 3 when it finds anything,
`fleet` 3 when a change fixes wrong decisions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

import yaml

from working_memory.core.checks import did_you_mean
from working_memory.engine.config import CABINS_PREFIX, SPECS, cabin_param_specs, param_spec
from working_memory.tools import doctor, fleet, suggest
from working_memory.tools.bag import BagError
from working_memory.tools.recording import (FrameRecord, PackRecord, Recording, RecordingError,
                                            describe_ticks, load_recording, load_run)
from working_memory.tools.replay import (Replay, ReplayError, agreement, format_agreement,
                                         format_what_if, parameters_in_file, recorded_settings,
                                         what_if)
from working_memory.tools.report import REPORT_SUFFIXES, write_report
from working_memory.tools.why import (NOT_IN_PACK, PRESENT, PRESENT_STALE, WhyAnswer,
                                      eviction_detail, why)

VALUE_WIDTH = 48
DIGEST_WIDTH = 12
SERVED_OR_UNREQUIRED = (PRESENT, PRESENT_STALE, NOT_IN_PACK)


def tick_label(first: int, last: int) -> str:
    """Return 'tick 4' or 'ticks 4-9'."""
    return f'tick {first}' if first == last else f'ticks {first}-{last}'


def shorten(text: str, width: int) -> str:
    """Return `text` cut to `width` characters, marking the cut."""
    return text if len(text) <= width else text[:width - 1] + '…'


def format_tick_list(recording: Recording, cabin: str | None = None) -> str:
    """Return one line per recorded tick: stamp, digest, items per cabin and missing count.

    The missing count is every absence the packs report: listed, or counted per glob.
    """
    if cabin is not None:
        recording.check_cabin(cabin)
    cabins = [cabin] if cabin is not None else recording.cabins
    header = ['tick', 'stamp [s]', 'digest'] + [f'{name} items' for name in cabins] + ['missing']
    rows = [header]
    for frame in recording.frames:
        packs = [frame.packs.get(name) for name in cabins]
        rows.append([str(frame.tick), f'{frame.stamp:.3f}', frame.digest[:DIGEST_WIDTH]]
                    + ['-' if pack is None else str(len(pack.items)) for pack in packs]
                    + [str(sum(sum(pack.absent_counts().values())
                               for pack in packs if pack is not None))])
    widths = [max(len(row[col]) for row in rows) for col in range(len(header))]
    lines = ['  '.join(cell.rjust(width) for cell, width in zip(row, widths)) for row in rows]
    lines.append(f'{len(recording.frames)} frames, ticks {describe_ticks(recording.ticks)}; '
                 f'{len(recording.evictions)} evictions')
    return '\n'.join(lines)


def format_pack(frame: FrameRecord, pack: PackRecord) -> str:
    """Return one cabin's pack: items, events, map window and missing items with reasons."""
    lines = [f'tick {frame.tick}  stamp {frame.stamp:.3f} s  cabin {pack.cabin}  '
             f'digest {pack.digest}', f'items ({len(pack.items)}):']
    for item in pack.items:
        flags = ''.join(f'  {flag}' for flag, on in (('stale', item.stale),
                                                     ('exempt', item.exempt)) if on)
        lines.append(f'  {item.key}  importance {item.importance:.2f}  last_used '
                     f'{item.last_used:.3f} s{flags}  = {shorten(item.value, VALUE_WIDTH)}')
    lines.append(f'events ({len(pack.events)}):')
    lines += [f'  {event.stamp:.3f} s  {event.kind}  {event.source}  {event.key}'
              f'  {shorten(event.detail, VALUE_WIDTH)}' for event in pack.events]
    window = pack.map_window
    height, width = window.cells.shape
    lines.append('map window: none' if not window.cells.size else
                 f'map window: {width}x{height} cells at {window.resolution:.3f} m/cell, '
                 f'origin ({window.origin_x:.2f}, {window.origin_y:.2f}) m')
    lines.append(f'missing ({len(pack.missing)}):')
    lines += [f'  {missing.key}  {missing.reason}  {missing.text(frame.stamp)}'
              for missing in pack.missing]
    if pack.summaries:
        lines.append(f'missing, counted per glob ({len(pack.summaries)}):')
        lines += [f'  {summary.pattern}  {summary.reason}  {summary.text(frame.stamp)}'
                  for summary in pack.summaries]
    return '\n'.join(lines)


def format_tick(recording: Recording, tick: int, cabin: str | None = None) -> str:
    """Return the packs of `tick` (only `cabin`'s when given)."""
    if cabin is not None:
        return format_pack(recording.frame(tick), recording.pack(tick, cabin))
    frame = recording.frame(tick)
    return f'frame digest {frame.digest}\n\n' + '\n\n'.join(
        format_pack(frame, pack) for pack in frame.packs.values())


def state_label(state: str) -> str:
    """Return 'present', 'not in pack', ... or 'missing EVICTED' for a span state."""
    return state if state in SERVED_OR_UNREQUIRED else f'missing {state}'


def eviction_runs(evictions) -> list[list]:
    """Group evictions of consecutive ticks with the same reason (older bags: every tick)."""
    runs: list[list] = []
    for eviction in evictions:
        if runs and runs[-1][-1].tick + 1 == eviction.tick \
                and runs[-1][-1].reason == eviction.reason:
            runs[-1].append(eviction)
        else:
            runs.append([eviction])
    return runs


def format_eviction_run(run: list) -> str:
    """Return one line for a run of evictions: its ticks, reason, importance and age."""
    first, last = run[0], run[-1]
    if len(run) == 1:
        return f'  {eviction_detail(first)}'
    return (f'  evicted at every tick {first.tick}-{last.tick} ({len(run)} times, {first.reason}): '
            f'importance {min(e.importance for e in run):.2f}-'
            f'{max(e.importance for e in run):.2f}, '
            f'unused for up to {max(e.age for e in run):.2f} s')


def format_transitions(answer: WhyAnswer) -> list[str]:
    """Return one line per eviction (run) and readmission of the key, in tick order."""
    lines = [(run[0].tick, 0, format_eviction_run(run)) for run in eviction_runs(answer.evictions)]
    for readmission in answer.readmissions:
        before = [e.tick for e in answer.evictions if e.tick < readmission.tick]
        since = f' (evicted at tick {max(before)})' if before else ''
        lines.append((readmission.tick, 1, f'  readmitted at tick {readmission.tick}{since}'))
    return [line for _, _, line in sorted(lines)]


def board_since(bag: str, recording: Recording, key: str) -> int | None:
    """Return the first recorded tick at which the board held `key`, by a replay of the bag.

    None when it never did, or when the bag holds no inputs to replay (frames alone).
    """
    try:
        run = load_run(bag, recording)
        steps = Replay(run, recorded_settings(run)).steps(packs=False) if run.inputs else ()
        return next((step.recorded.tick for step in steps if key in step.truth.board), None)
    except (BagError, RecordingError, ReplayError, ValueError):
        return None


def format_why(answer: WhyAnswer, on_board: int | None = None) -> str:
    """Return the timeline of a why-answer; `on_board`: the first tick the board held the key."""
    lines = [f'why {answer.key!r}: {tick_label(*answer.ticks)} recorded']
    if on_board is not None:
        lines.append(f'  on the board from tick {on_board}')
    lines += format_transitions(answer)
    if not answer.histories:
        lines.append('  never served to or required by any cabin')
    for history in answer.histories:
        lines.append(f'cabin {history.cabin}:')
        never = 'never' + (f' (on the board from tick {on_board}, withheld: see below)'
                           if on_board is not None else '')
        lines.append('  first seen: ' + (never if history.first_seen is None
                                         else f'tick {history.first_seen}'))
        lines += [f'  {tick_label(span.first, span.last)}: {state_label(span.state)} '
                  f'({span.detail})' for span in history.spans]
        if history.stale_since is not None:
            lines.append(f'  stale since tick {history.stale_since}')
    return '\n'.join(lines)


def parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    cli = argparse.ArgumentParser(
        prog='wm-inspect', description='Answer why-questions from a working-memory bag.',
        epilog='Without --tick, --why or --report: list the recorded ticks. '
               'Also: wm-inspect {replay,suggest,doctor} BAG ... (wm-inspect replay -h).')
    cli.add_argument('bag', help='rosbag2 bag directory (or a file inside it)')
    mode = cli.add_mutually_exclusive_group()
    mode.add_argument('--tick', type=int, help='show the pack(s) of this tick')
    mode.add_argument('--why', metavar='KEY', help="explain a key's presence and absence over time")
    mode.add_argument('--report', metavar='FILE',
                      help='write plots to FILE.png or a self-contained FILE.html')
    cli.add_argument('--cabin', help='restrict to this cabin (for --report: the map window cabin)')
    cli.add_argument('--map-tick', type=int,
                     help='tick of the map in the report (default: the first alarm or '
                          "failure's, else the last tick)")
    cli.add_argument('--capacity', type=int,
                     help='working-set capacity: derive capacity alarms from the packs when '
                          '/diagnostics has none')
    cli.add_argument('--frame-topic', help='ContextFrame topic (default: the only one in the bag)')
    cli.add_argument('--evictions-topic',
                     help='EvictionBatch (or, in older bags, Eviction) topic '
                          '(default: the only one)')
    cli.add_argument('--diagnostics-topic', help='DiagnosticArray topic (default: the only one)')
    return cli


def run(args: argparse.Namespace) -> str:
    """Answer the question in `args`; return the text to print."""
    recording = load_recording(args.bag, frame_topic=args.frame_topic,
                               evictions_topic=args.evictions_topic,
                               diagnostics_topic=args.diagnostics_topic)
    if args.tick is not None:
        return format_tick(recording, args.tick, args.cabin)
    if args.why is not None:
        answer = why(recording, args.why, args.cabin)
        unseen = any(history.first_seen is None for history in answer.histories)
        return format_why(answer, board_since(args.bag, recording, args.why) if unseen else None)
    if args.report is not None:
        path = write_report(recording, args.report, map_tick=args.map_tick, cabin=args.cabin,
                            capacity=args.capacity)
        return f'report written to {path}'
    return format_tick_list(recording, args.cabin)


COMMANDS = ('replay', 'suggest', 'doctor')
DISAGREES = FINDS = 3


def command_parser() -> argparse.ArgumentParser:
    """Return the parser of the replay, suggest and doctor commands."""
    cli = argparse.ArgumentParser(prog='wm-inspect',
                                  description='Replay a recorded run offline and learn from it.')
    commands = cli.add_subparsers(dest='command', required=True)
    helps = {'replay': 'replay the run through the core: digest agreement, or a what-if',
             'suggest': 'manifest additions from the wrong decisions in the run, checked by '
                        'replay',
             'doctor': 'suddenly dumb, decision drift, capacity pressure: what the run shows'}
    for name in COMMANDS:
        command = commands.add_parser(name, help=helps[name], description=helps[name])
        command.add_argument('bag', help='rosbag2 bag directory recorded with the inputs')
        command.add_argument('--params', metavar='FILE',
                             help="node parameters file, for a bag without the node's "
                                  "parameter events (default: the bag's, else the packaged "
                                  'config)')
        command.add_argument('--cabin', help='only this cabin')
    what = commands.choices['replay']
    what.add_argument('--manifests', metavar='FILE',
                      help='what-if: cabin manifests (params file or plain cabins: mapping) '
                           'replacing the recorded fields they name')
    what.add_argument('--capacity', type=int, help='what-if: working-set capacity [items]')
    what.add_argument('--size-budget', type=int, metavar='BYTES',
                      help='what-if: size budget [bytes], 0 = none')
    what.add_argument('--eviction-policy', choices=('importance_lru', 'half_life'),
                      help='what-if: eviction policy')
    what.add_argument('--half-life', type=float, metavar='S', help='what-if: half life [s]')
    what.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                      help='what-if: any node parameter, e.g. cabins.planner.map.radius_m=4.0 '
                           '(VALUE in YAML); repeatable')
    commands.choices['suggest'].add_argument('--out', metavar='FILE',
                                             help='also write the manifest patch to FILE')
    return cli


def what_if_changes(args: argparse.Namespace, node: str) -> tuple[dict[str, object], str]:
    """Return the parameter changes the what-if options ask for (none: exact) and their words."""
    changes: dict[str, object] = {}
    words = []
    if args.manifests:
        changes.update(parameters_in_file(args.manifests, node))
        words.append(f'--manifests {args.manifests}')
    for name, value in (('capacity', args.capacity), ('size_budget_bytes', args.size_budget),
                        ('eviction_policy', args.eviction_policy),
                        ('half_life_s', args.half_life)):
        if value is not None:
            changes[name] = value
            words.append(f'{name}={value!r}')
    for assignment in args.set:
        name, sep, text = assignment.partition('=')
        if not sep or not name:
            raise ReplayError(f'--set {assignment!r}: expected NAME=VALUE')
        if param_spec(name) is None:
            raise ReplayError(f'--set {name}: unknown parameter'
                              f'{did_you_mean(name, known_names(name))}')
        try:
            changes[name] = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ReplayError(f'--set {name}: VALUE is not YAML: {error}') from None
        words.append(f'{name}={changes[name]!r}')
    return changes, ', '.join(words)


def known_names(name: str) -> list[str]:
    """Return the parameter names `name` may have meant: the table's, or its cabin's fields."""
    if name.startswith(CABINS_PREFIX):
        cabin = name[len(CABINS_PREFIX):].partition('.')[0]
        return [spec.name for spec in cabin_param_specs(cabin)]
    return list(SPECS)


def run_command(args: argparse.Namespace) -> tuple[str, int]:
    """Run replay, suggest or doctor; return the text to print and the exit code."""
    run = load_run(args.bag)
    if args.cabin is not None:
        run.recording.check_cabin(args.cabin)
    settings = recorded_settings(run, params_file=args.params)
    if args.command == 'replay':
        changes, why = what_if_changes(args, settings.node)
        if not changes:
            result = agreement(run, settings)
            return format_agreement(result, args.bag, settings), (
                0 if not result.mismatches else DISAGREES)
        changed = settings.with_values(changes, why)
        return format_what_if(what_if(run, settings, changed, args.cabin), args.bag, changed), 0
    if args.command == 'suggest':
        result = suggest.suggest(run, settings, args.cabin)
        if args.out and result.patch:
            with open(args.out, 'w', encoding='utf-8') as stream:
                stream.write(suggest.patch_yaml(result, settings.node))
        return suggest.format_suggestions(result, args.bag), 0
    result = doctor.doctor(run, settings, args.cabin)
    return doctor.format_doctor(result, args.bag), FINDS if result.found else 0


def fleet_parser() -> argparse.ArgumentParser:
    """Return the parser of `wm-inspect fleet`."""
    cli = argparse.ArgumentParser(
        prog='wm-inspect fleet',
        description="Read every robot's recorded runs under the paths and rank the manifest "
                    'changes by the wrong decisions they fix, each checked by replay on every '
                    'bag it applies to.')
    cli.add_argument('paths', nargs='+', help='folders holding bags, at any depth')
    cli.add_argument('--workers', type=int, default=None,
                     help='local processes (default: one per core)')
    cli.add_argument('--engine', choices=(fleet.LOCAL, fleet.RAY), default=fleet.LOCAL,
                     help='local: a process pool on this machine; ray: Ray tasks (this '
                          "machine's own cluster, or --ray-address)")
    cli.add_argument('--ray-address', metavar='ADDR',
                     help='a running Ray cluster (ray start --head prints it)')
    cli.add_argument('--json', metavar='FILE', help='write the results as JSON (a contract)')
    cli.add_argument('--report', metavar='FILE.html', help='write the fleet report')
    cli.add_argument('--out', metavar='DIR', help='write the combined patch params files')
    cli.add_argument('--quiet', action='store_true', help='no progress bar')
    return cli


def fleet_main(argv: list[str]) -> int:
    """Run `wm-inspect fleet`; 0 when no change fixes anything, 3 when one does, 1 on error."""
    try:
        args = fleet_parser().parse_args(argv)
        if args.workers is not None and args.workers < 1:
            fleet_parser().error('--workers: must be >= 1')
        if args.ray_address and args.engine != fleet.RAY:
            fleet_parser().error('--ray-address needs --engine ray')
    except SystemExit as exit_request:
        return int(exit_request.code or 0)
    try:
        with fleet_progress(args.quiet) as progress:
            result = fleet.run_fleet(args.paths, args.engine, args.workers, args.ray_address,
                                     progress)
    except fleet.FleetError as error:
        print(f'wm-inspect: error: {error}', file=sys.stderr)
        return 1
    print(fleet.format_fleet(result))
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as stream:
            json.dump(result.as_json(), stream, indent=2)
            stream.write('\n')
    if args.report:
        print(f'report written to {fleet.write_report(result, args.report)}')
    if args.out:
        for path in fleet.write_patches(result, args.out):
            print(f'patch written to {path}')
    return FINDS if result.changes else 0


@contextlib.contextmanager
def fleet_progress(quiet: bool):
    """Yield progress(stage, done, total): a rich progress bar on stderr, or nothing."""
    if quiet:
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress
    with Progress(console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)
        yield progress


def main(argv: list[str] | None = None) -> int:
    """Run wm-inspect with `argv` (default: the command line); return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == 'fleet':
        return fleet_main(argv[1:])
    if argv and argv[0] in COMMANDS:
        try:
            args = command_parser().parse_args(argv)
        except SystemExit as exit_request:
            return int(exit_request.code or 0)
        try:
            text, code = run_command(args)
        except (BagError, RecordingError, ReplayError, OSError) as err:
            print(f'wm-inspect: error: {err}', file=sys.stderr)
            return 1
        print(text)
        return code
    cli = parser()
    try:
        args = cli.parse_args(argv)
        if args.report is not None and not args.report.lower().endswith(REPORT_SUFFIXES):
            cli.error(f'--report: FILE must end in {" or ".join(REPORT_SUFFIXES)}')
        if args.map_tick is not None and args.report is None:
            cli.error('--map-tick only applies to --report')
        if args.capacity is not None and args.capacity < 0:
            cli.error('--capacity: must be >= 0')
    except SystemExit as exit_request:  # argparse exits on --help and on usage errors
        return int(exit_request.code or 0)
    try:
        print(run(args))
    except (BagError, RecordingError, OSError) as err:
        print(f'wm-inspect: error: {err}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
