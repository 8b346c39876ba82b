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
   many items (board globs, event windows; map windows are not working-set items),
   and how far each would have to shrink to fit the capacity, checked by replay.
   Tightening a scope is cheaper than growing the capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from working_memory.core.assembly import EVENT_ITEM_PREFIX
from working_memory.core.items import MissingReason
from working_memory.core.manifest import Manifest, Patterns
from working_memory.tools.recording import Run
from working_memory.tools.replay import (Agreement, Mismatch, Settings, Step, agreement, replay,
                                         tick_text)
from working_memory.tools.suggest import Suggestions, suggest

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
class Shrink:
    """A scope narrowed so the asks fit the capacity, and what the replay says it gives."""

    scope: Scope
    change: str
    values: Mapping[str, object]
    evictions: int
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
    shrinks: tuple[Shrink, ...]

    @property
    def found(self) -> bool:
        """True when the capacity alarm fired (exempt items alone over capacity)."""
        return bool(self.alarm_ticks)


@dataclass(frozen=True)
class Diagnosis:
    """The three symptoms' findings."""

    dumb: Suggestions
    drift: Drift
    pressure: Pressure

    @property
    def found(self) -> bool:
        """True when any symptom shows."""
        return bool(self.dumb.findings) or self.drift.found or self.pressure.found


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


def scopes_at(step: Step, cabin: str | None = None) -> list[Scope]:
    """Return every cabin's scopes at the step, largest first."""
    asked = {name: _asked(step, name) for name in step.frame.packs
             if cabin is None or name == cabin}
    exempt = {item.key for item in step.working_set.items() if item.exempt}
    importance = {record.key: record.importance for record in step.frame.evictions}
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


def _shrink_values(scope: Scope, manifest: Manifest, members: tuple[str, ...], remove: int,
                   step: Step) -> tuple[str, dict[str, object]]:
    """Return (description, parameter changes) narrowing `scope` so `remove` of `members` go.

    An event window is shortened past the oldest of them; a board glob becomes the exact
    keys it keeps (the first in sorted order), or goes when it keeps none.
    """
    prefix = f'cabins.{scope.cabin}.'
    if scope.name.startswith('events'):
        ages = sorted(step.frame.stamp - stamp for stamp in _event_stamps(step, scope, members))
        kept = len(ages) - remove
        window = 0.0 if kept <= 0 else math.floor(ages[kept - 1] * 10 + 1) / 10.0
        return (f'events.window_s {manifest.events.window_s:g} -> {window:g} s'
                + (' (no events)' if not window else ''), {prefix + 'events.window_s': window})
    pattern = scope.name.removeprefix('board_keys ')
    going = set(sorted(members, reverse=True)[:remove])
    kept = sorted(k for k in scope.keys if k not in going)
    board_keys = [p for p in manifest.board_keys if p != pattern] + kept
    what = (f'board_keys without {pattern}' if not kept else
            f'board_keys {pattern} -> {len(kept)} exact keys ({", ".join(kept[:3])}'
            + (', ...' if len(kept) > 3 else '') + ')')
    return what, {prefix + 'board_keys': board_keys}


def _event_stamps(step: Step, scope: Scope, members: tuple[str, ...]) -> list[float]:
    wanted = set(members)
    pack = step.frame.packs[scope.cabin]
    return [e.stamp for e in pack.events
            if f'{EVENT_ITEM_PREFIX}{e.kind.value}:{e.key}#{e.seq}' in wanted]


def _shrink_plan(scopes: tuple[Scope, ...], needed: int,
                 exempt_only: bool) -> list[tuple[Scope, tuple[str, ...], int]]:
    """Return (scope, the keys to narrow among, how many go) for the scopes to check.

    The cheapest scopes (lowest importance) that alone could give `needed` items come
    first; when none can, the biggest are narrowed as far as they go.
    """
    def members(scope: Scope) -> tuple[str, ...]:
        return scope.exempt if exempt_only else scope.only_here

    def whole(scope: Scope) -> bool:
        # Goals and safety constraints are exempt for life: never offer to drop a whole glob.
        return exempt_only and not scope.name.startswith('events') and \
            len(members(scope)) == len(scope.keys)
    scopes = tuple(s for s in scopes if not whole(s))
    able = sorted((s for s in scopes if len(members(s)) >= needed),
                  key=lambda s: (s.importance, -len(members(s))))
    if not able:
        able = sorted((s for s in scopes if members(s)), key=lambda s: -len(members(s)))
    return [(s, members(s), min(needed, len(members(s)))) for s in able[:SCOPES_CHECKED]]


def pressure(run: Run, settings: Settings, cabin: str | None = None) -> Pressure:
    """Measure the asks against the capacity; narrow the biggest scopes and replay each."""
    capacity = settings.config.capacity
    alarms, asked_counts = [], []
    evictions = ticks = 0
    peak = None
    for step in replay(run, settings):
        ticks += 1
        evictions += len(step.frame.evictions)
        if step.frame.capacity_alarm:
            alarms.append(step.recorded.tick)
        asked = set().union(*(_asked(step, name) for name in step.frame.packs))
        asked_counts.append(len(asked))
        if peak is None or len(asked) > peak[0]:
            exempt = sum(1 for item in step.working_set.items() if item.exempt)
            peak = (len(asked), step.recorded.tick, exempt, scopes_at(step, cabin),
                    _map_text(step), step)
    if peak is None:
        return Pressure(capacity, (), 0, 0, 0, 0, 0, (0, 0), (), (), ())
    asked, tick, exempt, scopes, maps, step = peak
    # An alarm wants fewer exempt items; evictions alone fewer items of any kind.
    needed = exempt - capacity if alarms else asked - capacity
    shrinks = []
    if needed > 0:
        for scope, members, remove in _shrink_plan(tuple(scopes), needed, bool(alarms)):
            what, values = _shrink_values(scope, step.manifests[scope.cabin], members, remove,
                                          step)
            shrinks.append(_replayed_shrink(run, settings, scope, what, values))
    return Pressure(capacity, tuple(alarms), evictions, ticks, tick, asked, exempt,
                    (min(asked_counts), max(asked_counts)), tuple(scopes), tuple(maps),
                    tuple(shrinks))


def _replayed_shrink(run: Run, settings: Settings, scope: Scope, what: str,
                     values: Mapping[str, object]) -> Shrink:
    narrowed = settings.with_values(values, f'{scope.cabin} {what}')
    evictions, alarms = 0, []
    for step in replay(run, narrowed):
        evictions += len(step.frame.evictions)
        if step.frame.capacity_alarm:
            alarms.append(step.recorded.tick)
    return Shrink(scope, what, values, evictions, tuple(alarms))


# -- all three ------------------------------------------------------------------------


def doctor(run: Run, settings: Settings, cabin: str | None = None) -> Diagnosis:
    """Examine the run for the three symptoms."""
    return Diagnosis(suggest(run, settings, cabin),
                     drift(run, agreement(run, settings), cabin),
                     pressure(run, settings, cabin))


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
    excess = found.peak_asked - found.capacity
    needed = found.peak_exempt - found.capacity if found.alarm_ticks else excess
    if found.shrinks:
        what = 'exempt items' if found.alarm_ticks else 'items'
        lines.append(f'   to fit, the asks must shrink by {needed} {what}; checked by replay:')
    for shrink in found.shrinks:
        alarm = 'never' if not shrink.alarm_ticks else tick_text(shrink.alarm_ticks)
        lines.append(f'     {shrink.scope.cabin} {shrink.change}: evictions {found.evictions} '
                     f'-> {shrink.evictions}, capacity alarm {alarm}')
    if excess <= 0 and not found.alarm_ticks:
        lines.append('   nothing found: the asks fit the capacity')
    elif not found.alarm_ticks:
        lines.append('   no alarm: value-based forgetting keeps what matters (see the '
                     'evictions with wm-inspect BAG --why KEY)')
    return lines


def format_doctor(result: Diagnosis, path: str | Path) -> str:
    """Return what the doctor finds for each symptom, and the verdict."""
    lines = [f'doctor on {path} (configuration from {result.dumb.settings.source})', '']
    lines += _dumb_lines(result.dumb, path) + ['']
    lines += _drift_lines(result.drift) + ['']
    lines += _pressure_lines(result.pressure) + ['']
    verdict = [name for name, found in (('suddenly dumb', bool(result.dumb.findings)),
                                        ('decision drift', result.drift.found),
                                        ('capacity alarms', result.pressure.found)) if found]
    lines.append('found: ' + ', '.join(verdict) if verdict else 'found: nothing')
    return '\n'.join(lines)
