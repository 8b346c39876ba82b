"""A doctor for the three symptoms of working-memory faults, read off a recorded run.

1. Suddenly dumb (it gets wrong what it used to get right): most often a key item
   missing or evicted from the tick's working set. Check the manifest and the eviction
   log at the wrong decisions (`suggest` finds them and what each lacked).
2. Decision drift (the same situation, different decisions): check the per-tick
   freeze. Two cabins on different frames in one tick (tearing), a decision on a
   frame the node never froze, the same pack answered with different decisions (a kept
   route and the planner's timed replan are one answer), and
   frames the replay does not reproduce from the recorded inputs.
3. Frequent capacity alarms: check the scoping. Which manifest scope asks for how
   many items (board globs, event windows; map windows are not working-set items).
   Pressure is real when the capacity alarm fires or an eviction costs something (an
   item a manifest requires, a wrong decision lacked, or of importance PRESSING or
   more); forgetting cheap readings is value-based forgetting at work, nothing to fix.
   Under real pressure the fixes come cheapest first, each checked by replay:
   tightening a scope nothing in the run needed (a board glob no decision named and
   no manifest requires; an event window, never shorter than the oldest event a
   decision named nor MIN_EVENT_WINDOW_S), then growing the capacity. Map windows
   are no working-set items: no fix touches a radius.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from working_memory.core.assembly import EVENT_ITEM_PREFIX
from working_memory.core.items import MissingReason
from working_memory.core.manifest import Manifest, Patterns, is_glob
from working_memory.tools.recording import Run
from working_memory.tools.replay import (Agreeing, Agreement, Mismatch, Settings, Step, replay,
                                         replay_into, tick_text)
from working_memory.tools.suggest import Archaeology, Suggestions, decision_names, names_event

EVICTED = MissingReason.EVICTED.value
SCOPES_CHECKED = 3
SHOWN = 6


@dataclass(frozen=True)
class Drift:
    """Symptom 2: what breaks the per-tick freeze or answers one pack two ways."""

    tearing: tuple[tuple[int, Mapping[str, tuple[str, ...]]], ...]   # tick, digest -> cabins
    unfrozen: tuple[tuple[int, str, str], ...]                      # tick, cabin, digest
    same_pack: tuple[tuple[str, str, tuple[str, ...], tuple[int, ...]], ...]
    replay: Agreement

    @property
    def found(self) -> bool:
        """True when anything here breaks the freeze."""
        return bool(self.tearing or self.unfrozen or self.same_pack or self.replay.mismatches)


@dataclass(frozen=True)
class Scope:
    """One manifest scope at the peak tick: items it asks for, and those only it asks for."""

    cabin: str
    name: str           # 'board_keys sensor:*' or 'events'
    keys: tuple[str, ...]
    only_here: tuple[str, ...]
    exempt: tuple[str, ...]   # those of `only_here` that are exempt (goal, safety, GOAL, ...)
    importance: float   # mean of its items': the cheapest scope to narrow has the lowest


@dataclass(frozen=True)
class Fix:
    """A change that relieves the pressure, and what the replay says it gives.

    `losses` and `evictions` are the run's with the change; `kind` is 'scope' (a
    manifest scope tightened) or 'capacity'.
    """

    kind: str
    cabin: str
    change: str
    values: Mapping[str, object]
    evictions: int
    losses: Mapping[str, str]
    alarm_ticks: tuple[int, ...]


@dataclass(frozen=True)
class Pressure:
    """Symptom 3: capacity alarms, evictions and the scopes behind the asks."""

    capacity: int
    alarm_ticks: tuple[int, ...]
    evictions: int
    ticks: int
    peak_tick: int
    peak_asked: int
    peak_exempt: int
    asked_range: tuple[int, int]
    scopes: tuple[Scope, ...]
    maps: tuple[str, ...]
    losses: Mapping[str, str]     # costly evictions: key -> why it counts (its first)
    fixes: tuple[Fix, ...]

    @property
    def found(self) -> bool:
        """True when the capacity alarm fired (exempt items alone over capacity)."""
        return bool(self.alarm_ticks)

    @property
    def pressing(self) -> bool:
        """True when the pressure costs something: an alarm or a costly eviction."""
        return bool(self.alarm_ticks or self.losses)


@dataclass(frozen=True)
class Diagnosis:
    """The three symptoms' findings."""

    dumb: Suggestions
    drift: Drift
    pressure: Pressure

    @property
    def found(self) -> bool:
        """True when any symptom shows."""
        return bool(self.dumb.findings) or self.drift.found or self.pressure.pressing


# -- symptom 2 ------------------------------------------------------------------------


# Decisions that are one answer to the same pack: the reference planner replans on its own
# timer (replan_period_s), not on its pack, so a still robot's unchanged pack is answered
# `keep_route` until the timer runs out and `route` (the same kind of answer) then.
_ONE_ANSWER = {'keep_route': 'route'}


def drift(run: Run, replayed: Agreement, cabin: str | None = None) -> Drift:
    """Look for tearing, unfrozen frames and one pack answered with different decisions."""
    frames = {frame.tick: frame for frame in run.recording.frames}
    reported: dict[int, dict[str, list[str]]] = {}
    unfrozen, answers = [], {}
    for status in run.decisions:
        if not status.tick or (cabin is not None and status.cabin != cabin):
            continue
        reported.setdefault(status.tick, {}).setdefault(status.digest, []).append(status.cabin)
        frame = frames.get(status.tick)
        if frame is None:
            continue
        if status.digest != frame.digest:
            unfrozen.append((status.tick, status.cabin, status.digest))
        pack = frame.packs.get(status.cabin)
        if pack is not None:
            answers.setdefault((status.cabin, pack.digest), []).append(
                (status.tick, _ONE_ANSWER.get(status.decision, status.decision)))
    tearing = tuple((tick, {digest: tuple(cabins) for digest, cabins in digests.items()})
                    for tick, digests in sorted(reported.items()) if len(digests) > 1)
    same_pack = tuple(
        (name, digest, tuple(sorted({d for _, d in seen})), tuple(t for t, _ in seen))
        for (name, digest), seen in sorted(answers.items()) if len({d for _, d in seen}) > 1)
    return Drift(tearing, tuple(unfrozen), same_pack, replayed)


# -- symptom 3 ------------------------------------------------------------------------


def _asked(step: Step, name: str) -> set[str]:
    """Return the keys `name`'s pack asked the working set for: served or evicted this tick."""
    pack = step.frame.packs[name]
    keys = {item.key for item in pack.items}
    keys |= {f'{EVENT_ITEM_PREFIX}{e.kind.value}:{e.key}#{e.seq}' for e in pack.events}
    return keys | {key for key, note in pack.absent.items()
                   if note.reason is MissingReason.EVICTED}


def _scope_of(manifest: Manifest, key: str) -> str:
    if key.startswith(EVENT_ITEM_PREFIX):
        kinds = ', '.join(k.value for k in manifest.events.kinds) or 'all kinds'
        cap = f', newest {manifest.events.max_count}' if manifest.events.max_count else ''
        return f'events (window {manifest.events.window_s:g} s, {kinds}{cap})'
    pattern = next((p for p in manifest.selects.patterns if manifest_matches(p, key)), key)
    return f'board_keys {pattern}'


def manifest_matches(pattern: str, key: str) -> bool:
    """Return True when a manifest pattern (exact key or glob) selects `key`."""
    return Patterns((pattern,)).match(key)


def scopes_at(step: Step, cabin: str | None = None,
              evicted: Mapping[str, float] | None = None) -> list[Scope]:
    """Return every cabin's scopes at the step, largest first.

    `evicted` holds the importance of items evicted before the step (by key).
    """
    asked = {name: _asked(step, name) for name in step.frame.packs
             if cabin is None or name == cabin}
    exempt = {item.key for item in step.working_set.items() if item.exempt}
    importance = dict(evicted or {})
    importance.update((record.key, record.importance) for record in step.frame.evictions)
    importance.update((item.key, item.importance) for item in step.working_set.items())
    scopes: list[Scope] = []
    for name, keys in asked.items():
        manifest = step.manifests[name]
        others = set().union(*(k for n, k in asked.items() if n != name))
        by_scope: dict[str, list[str]] = {}
        for key in sorted(keys):
            by_scope.setdefault(_scope_of(manifest, key), []).append(key)
        for scope, members in by_scope.items():
            only_here = tuple(k for k in members if k not in others)
            scopes.append(Scope(name, scope, tuple(members), only_here,
                                tuple(k for k in only_here if k in exempt),
                                sum(importance.get(k, 1.0) for k in members) / len(members)))
    return sorted(scopes, key=lambda s: (-len(s.only_here), -len(s.keys), s.cabin, s.name))


def _map_text(step: Step) -> list[str]:
    texts = []
    for name, pack in step.frame.packs.items():
        window = pack.map_window
        if window is not None:
            manifest = step.manifests[name]
            height, width = window.data.shape
            scope = (f'corridor {manifest.map.corridor_m:g} m' if manifest.map.corridor_m
                     else f'radius {manifest.map.radius_m:g} m')
            texts.append(f'{name} {width}x{height} cells ({scope})')
    return texts


# An evicted item this important is a loss that counts (the manifests' weights: goals,
# constraints, pose and route weigh 0.7-1.0; background readings 0.05-0.3).
PRESSING = 0.5
# [s] no event window is proposed shorter than this: a few seconds of history is the least a
# cabin that takes events at all can mean.
MIN_EVENT_WINDOW_S = 5.0


def _loss(record, manifests: Mapping[str, Manifest], lacked: set[str]) -> str | None:
    """Return why evicting `record` costs something, or None when it is a cheap forgetting."""
    required = [name for name, m in manifests.items() if Patterns(m.required).match(record.key)]
    if required:
        return f'required by the {", ".join(required)} manifest'
    if record.key in lacked:
        return 'lacked by a wrong decision'
    if record.importance >= PRESSING:
        return f'importance {record.importance:.2f}'
    return None


def _needed_event_ages(step: Step, names: Mapping[str, tuple[str, ...]]) -> dict[str, float]:
    """Return per cabin the age [s] of the oldest event in its pack its decision named."""
    ages = {}
    for cabin, named in names.items():
        pack = step.frame.packs.get(cabin)
        if pack is None or not named:
            continue
        for event in pack.events:
            if names_event(named, event):
                ages[cabin] = max(ages.get(cabin, 0.0), step.frame.stamp - event.stamp)
    return ages


@dataclass
class _Watch:
    """What one replay shows of the pressure: alarms, evictions, the costly ones.

    `lacked` (what wrong decisions lacked) may be told after the replay: the evictions
    are kept and judged when `losses` is read.
    """

    manifests: Mapping[str, Manifest]
    lacked: set[str]
    alarms: list[int] = field(default_factory=list)
    evictions: int = 0
    evicted: dict[str, float] = field(default_factory=dict)   # key -> importance
    records: list = field(default_factory=list)

    def step(self, step: Step) -> None:
        self.evictions += len(step.frame.evictions)
        if step.frame.capacity_alarm:
            self.alarms.append(step.recorded.tick)
        for record in step.frame.evictions:
            self.evicted[record.key] = record.importance
            self.records.append(record)

    @property
    def losses(self) -> dict[str, str]:
        """Return {key: why its eviction cost something}, the first costly eviction of each."""
        losses: dict[str, str] = {}
        for record in self.records:
            if record.key not in losses:
                why = _loss(record, self.manifests, self.lacked)
                if why is not None:
                    losses[record.key] = why
        return losses


class Pressing:
    """Measure, step by step of a replay, the asks against the capacity (see `pressure`)."""

    def __init__(self, run: Run, settings: Settings, cabin: str | None = None):
        self.run, self.settings, self.cabin = run, settings, cabin
        self.watch = _Watch(settings.manifests(), set())
        self.statuses: dict[int, dict[str, tuple[str, ...]]] = {}
        for status in run.decisions:
            self.statuses.setdefault(status.tick, {})[status.cabin] = decision_names(status)
        self.asked_counts: list[int] = []
        self.floors: dict[str, float] = {}
        self.peak = None

    def __call__(self, step: Step) -> None:
        """Read one replayed step: its evictions, alarm, asks, and the peak so far."""
        self.watch.step(step)
        for name, age in _needed_event_ages(
                step, self.statuses.get(step.recorded.tick, {})).items():
            self.floors[name] = max(self.floors.get(name, 0.0), age)
        asked = set().union(*(_asked(step, name) for name in step.frame.packs))
        self.asked_counts.append(len(asked))
        if self.peak is None or len(asked) > self.peak[0]:
            exempt = sum(1 for item in step.working_set.items() if item.exempt)
            self.peak = (len(asked), step.recorded.tick, exempt,
                         scopes_at(step, self.cabin, self.watch.evicted), _map_text(step), step)

    def result(self, lacked: Iterable[str] = (), fixes: bool = True) -> Pressure:
        """Return the pressure; `lacked`: what wrong decisions lacked (a costly eviction)."""
        run, settings, watch = self.run, self.settings, self.watch
        watch.lacked = set(lacked)
        capacity = settings.config.capacity
        if self.peak is None:
            return Pressure(capacity, (), 0, 0, 0, 0, 0, (0, 0), (), (), {}, ())
        asked, tick, exempt, scopes, maps, step = self.peak
        losses = watch.losses
        proposed: list[Fix] = []
        if fixes and (watch.alarms or losses):
            needed = exempt - capacity if watch.alarms else asked - capacity
            for scope_cabin, what, values in _scope_fixes(
                    scopes, step, needed, bool(watch.alarms), self.floors, losses,
                    self.statuses):
                proposed.append(_replayed(run, settings, watch, 'scope', scope_cabin, what,
                                          values))
            proposed = [fix for fix in proposed if _relieves(fix, watch)]
            proposed.append(_capacity_fix(run, settings, watch, max(self.asked_counts)))
        counts = self.asked_counts
        return Pressure(capacity, tuple(watch.alarms), watch.evictions, len(counts), tick,
                        asked, exempt, (min(counts), max(counts)), tuple(scopes), tuple(maps),
                        losses, tuple(proposed))


def pressure(run: Run, settings: Settings, cabin: str | None = None,
             lacked: Iterable[str] = (), fixes: bool = True) -> Pressure:
    """Measure the asks against the capacity; under real pressure propose fixes, replayed.

    Without `fixes` only the measure (one replay).
    """
    pressing = Pressing(run, settings, cabin)
    replay_into(run, settings, pressing, packs=False)
    return pressing.result(lacked, fixes)


def _relieves(fix: Fix, before: _Watch) -> bool:
    """Return True when the fix ends some costly evictions or capacity alarms."""
    return len(fix.losses) < len(before.losses) or len(fix.alarm_ticks) < len(before.alarms)


def _scope_fixes(scopes: Iterable[Scope], step: Step, needed: int, exempt_only: bool,
                 floors: Mapping[str, float], losses: Mapping[str, str],
                 statuses: Mapping[int, Mapping[str, tuple[str, ...]]]):
    """Yield (cabin, what, parameter values) tightening a scope nothing in the run needed.

    The cheapest scopes (lowest mean importance) first: a board glob of items none of
    which a manifest requires, a decision named, or was a costly loss goes; an event
    window is shortened to drop `needed` events, never below its floor.
    """
    named = {name for by_cabin in statuses.values() for names in by_cabin.values()
             for name in names}
    checked = 0
    for scope in sorted(scopes, key=lambda s: (s.importance, -len(s.only_here))):
        if checked == SCOPES_CHECKED:
            return
        manifest = step.manifests[scope.cabin]
        prefix = f'cabins.{scope.cabin}.'
        if scope.name.startswith('events'):
            window = _shorter_window(scope, step, needed, floors.get(scope.cabin, 0.0))
            if window is not None:
                checked += 1
                floor = max(MIN_EVENT_WINDOW_S, floors.get(scope.cabin, 0.0))
                yield scope.cabin, (f'events.window_s {manifest.events.window_s:g} -> '
                                    f'{window:g} s (the oldest event a decision named was '
                                    f'{floors.get(scope.cabin, 0.0):.1f} s old; floor '
                                    f'{floor:g} s)'), {prefix + 'events.window_s': window}
            continue
        pattern = scope.name.removeprefix('board_keys ')
        if (exempt_only or not is_glob(pattern) or scope.exempt
                or any(Patterns(manifest.required).match(k) for k in scope.keys)
                or any(k in losses or any(manifest_matches(n, k) or n == k for n in named)
                       for k in scope.keys)):
            continue
        checked += 1
        board_keys = [p for p in manifest.board_keys if p != pattern]
        yield scope.cabin, (f'board_keys without {pattern} ({len(scope.keys)} items of mean '
                            f'importance {scope.importance:.2f}; no decision named one, no '
                            'manifest requires one)'), {prefix + 'board_keys': board_keys}


def _shorter_window(scope: Scope, step: Step, needed: int, floor: float) -> float | None:
    """Return an event window [s] that leaves `needed` of the scope's events out, or None.

    Never shorter than the oldest event a decision named (`floor`) nor
    MIN_EVENT_WINDOW_S, in whole seconds; None when that leaves none of them out.
    """
    manifest = step.manifests[scope.cabin]
    wanted = set(scope.only_here)
    ages = sorted(step.frame.stamp - e.stamp for e in step.frame.packs[scope.cabin].events
                  if f'{EVENT_ITEM_PREFIX}{e.kind.value}:{e.key}#{e.seq}' in wanted)
    if not ages:
        return None
    kept = max(0, len(ages) - max(needed, 1))
    window = float(math.ceil(max(MIN_EVENT_WINDOW_S, floor, ages[kept - 1] if kept else 0.0)))
    # A window that leaves none of them out, or is no shorter, is no fix.
    return window if window < min(manifest.events.window_s, ages[-1]) else None


def _capacity_fix(run: Run, settings: Settings, before: _Watch, most: int) -> Fix:
    """Return the smallest capacity with no costly eviction and no alarm, found by replay.

    Between today's capacity and `most` (the most items asked for in one tick, which
    always suffices), by bisection: each try is one replay.
    """
    capacity = settings.config.capacity

    def tried(value: int) -> Fix:
        return _replayed(run, settings, before, 'capacity', '', f'capacity {capacity} -> {value}',
                         {'capacity': value})
    low, high = capacity, max(most, capacity + 1)
    best = tried(high)
    while high - low > 1:
        middle = (low + high) // 2
        fix = tried(middle)
        if fix.losses or fix.alarm_ticks:
            low = middle
        else:
            high, best = middle, fix
    return dataclasses.replace(best, change=f'{best.change} (the smallest that keeps every '
                               f'costly item, by replay; the most asked for in one tick: {most})')


def _replayed(run: Run, settings: Settings, before: _Watch, kind: str, cabin: str, what: str,
              values: Mapping[str, object]) -> Fix:
    """Replay the run with `values`; return the fix with what it gives."""
    changed = settings.with_values(values, f'{cabin} {what}'.strip())
    watch = _Watch(changed.manifests(), before.lacked)
    for step in replay(run, changed, packs=False):
        watch.step(step)
    return Fix(kind, cabin, what, values, watch.evictions, dict(watch.losses),
               tuple(watch.alarms))


# -- all three ------------------------------------------------------------------------


def doctor(run: Run, settings: Settings, cabin: str | None = None) -> Diagnosis:
    """Examine the run for the three symptoms: one replay reads all three, then the checks."""
    dumb, agreeing, pressing = Archaeology(run, settings, cabin), Agreeing(), Pressing(
        run, settings, cabin)
    replayer = replay_into(run, settings, dumb, agreeing, pressing)
    found = dumb.result()
    return Diagnosis(found, drift(run, agreeing.result(replayer), cabin),
                     pressing.result({f.key for f in found.findings}))


def _dumb_lines(result: Suggestions, path: str | Path) -> list[str]:
    lines = ['1. Suddenly dumb: key items missing or evicted at the wrong decisions '
             '(check the manifest and the eviction log)']
    if not result.decisions:
        lines.append('   nothing found: no alarm, no repeated failure, no hold for want of an '
                     'item')
    for decision in result.decisions:
        own = [f for f in result.findings if f.decision is decision]
        lines.append(f'   {tick_text(decision.ticks)}, {decision.cabin}: {decision.summary}')
        if not own:
            lines.append('     nothing true and relevant was absent from its pack')
        for finding in own[:SHOWN]:
            lines.append(f'     lacked {finding.key}: {finding.reason} ({finding.detail})')
    if result.findings:
        lines.append(f'   -> the manifest patch and its check: wm-inspect suggest {path}')
    return lines


def _drift_lines(found: Drift) -> list[str]:
    lines = ['2. Decision drift: the per-tick freeze (check for tearing)']
    replayed = found.replay
    lines.append(f'   the replay reproduces {replayed.agreeing}/{replayed.ticks} frozen frames '
                 'from the recorded inputs' + ('' if not replayed.mismatches else
                                               f'; not {_mismatch_ticks(replayed.mismatches)} '
                                               '(wm-inspect replay says why)'))
    for tick, digests in found.tearing[:SHOWN]:
        groups = '; '.join(f'{", ".join(cabins)} on {digest[:12]}'
                           for digest, cabins in digests.items())
        lines.append(f'   tearing at tick {tick}: {groups}')
    for tick, name, digest in found.unfrozen[:SHOWN]:
        lines.append(f'   tick {tick}: {name} decided on frame {digest[:12] or "(none)"}, '
                     'not the one frozen for the tick')
    for name, digest, decisions, ticks in found.same_pack[:SHOWN]:
        lines.append(f'   {name}: the same pack {digest[:12]} answered {" / ".join(decisions)} '
                     f'at {tick_text(ticks)} (the decision reads something outside its pack)')
    if not found.found:
        lines.append('   nothing found: every tick one frame for all cabins, no pack answered '
                     'two ways')
    return lines


def _mismatch_ticks(mismatches: tuple[Mismatch, ...]) -> str:
    return tick_text([m.tick for m in mismatches])


def _pressure_lines(found: Pressure) -> list[str]:
    lines = [f'3. Capacity pressure: the scoping against the capacity of {found.capacity} items']
    lines.append('   capacity alarm (exempt items alone over capacity): '
                 + (tick_text(found.alarm_ticks) if found.alarm_ticks else 'never'))
    lines.append(f'   evictions: {found.evictions} in {found.ticks} ticks; items asked for per '
                 f'tick {found.asked_range[0]}-{found.asked_range[1]}, most at tick '
                 f'{found.peak_tick} ({found.peak_asked}, {found.peak_exempt} exempt)')
    lines.append(f'   who asks at tick {found.peak_tick} (items; only this scope asks for; '
                 'mean importance):')
    for scope in found.scopes[:SHOWN]:
        exempt = f', {len(scope.exempt)} exempt' if scope.exempt else ''
        lines.append(f'     {scope.cabin} {scope.name}: {len(scope.keys)} '
                     f'({len(scope.only_here)}{exempt}; importance {scope.importance:.2f})')
    if found.maps:
        lines.append(f'   map windows: {"; ".join(found.maps)}: not working-set items, so no '
                     'radius presses on the capacity')
    if found.losses:
        lines.append(f'   costly evictions: {_losses_text(found.losses)}')
    if not found.pressing:
        lines.append('   nothing to fix: ' + (
            'the asks fit the capacity' if found.peak_asked <= found.capacity else
            f'every eviction was of an item no manifest requires, no wrong decision lacked, of '
            f'importance under {PRESSING:g}: value-based forgetting at work'))
        return lines
    lines.append('   fixes, cheapest first, each checked by replay (tightening a scope is '
                 'cheaper than growing the capacity):')
    for fix in found.fixes:
        alarm = 'never' if not fix.alarm_ticks else tick_text(fix.alarm_ticks)
        who = f'{fix.cabin} ' if fix.cabin else ''
        lines.append(f'     {who}{fix.change}: costly evictions {len(found.losses)} -> '
                     f'{len(fix.losses)}, evictions {found.evictions} -> {fix.evictions}, '
                     f'capacity alarm {alarm}'
                     + (f' (still: {_losses_text(fix.losses)})' if fix.losses else ''))
    return lines


def _losses_text(losses: Mapping[str, str]) -> str:
    shown = [f'{key} ({why})' for key, why in list(losses.items())[:SHOWN]]
    more = len(losses) - SHOWN
    return ', '.join(shown) + (f', ... and {more} more' if more > 0 else '')


def format_doctor(result: Diagnosis, path: str | Path) -> str:
    """Return what the doctor finds for each symptom, and the verdict."""
    lines = [f'doctor on {path} (configuration from {result.dumb.settings.source})', '']
    lines += _dumb_lines(result.dumb, path) + ['']
    lines += _drift_lines(result.drift) + ['']
    lines += _pressure_lines(result.pressure) + ['']
    verdict = [name for name, found in (('suddenly dumb', bool(result.dumb.findings)),
                                        ('decision drift', result.drift.found),
                                        ('capacity alarms', result.pressure.found),
                                        ('costly evictions', bool(result.pressure.losses)))
               if found]
    lines.append('found: ' + ', '.join(verdict) if verdict else 'found: nothing')
    return '\n'.join(lines)
