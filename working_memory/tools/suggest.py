"""Manifest additions from a run's fault history: archaeology on the cabins' wrong decisions.

The second half of the missing-item method: run manifest completeness in reverse.
For every wrong decision in a recorded run, replay the run to that tick and find
what was true then (on the board, in the log) and relevant to the decision, but
absent from the deciding cabin's pack, with the core's reason; rank it, turn it
into a manifest patch, and check the patch by replaying the run with it.

Wrong decisions, as the bag shows them:
- an ALARM event of a cabin (the planner's constraint validation, ...);
- a tearing alarm (two cabins on different frames in one tick: a freeze problem,
  which no manifest item fixes; `doctor` looks into it);
- a FAILURE that repeats an action: the cabin's first decision after the failure
  reached its pack still does the failed action the same way;
- a decision status that says it held for want of something (`hold` with a reason).

Relevant means: the decision names the item (its key, or a glob or category that
covers it), or the item lies near the robot (within NEAR_M) when it decided.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import yaml

from working_memory.core.assembly import event_item_key
from working_memory.core.explain import NOT_IN_MANIFEST, PRESENT, explain
from working_memory.core.gridmap import as_point
from working_memory.core.items import Event, EventKind, MissingReason
from working_memory.core.manifest import (BOARD_PREFIX, EVENTS_PREFIX, MAP, Manifest, is_glob)
from working_memory.engine import inputs
from working_memory.tools.recording import DecisionRecord, Run
from working_memory.tools.replay import Settings, Step, replay, replay_into, tick_text

NEAR_M = 1.5                # [m] an item this close to the robot is relevant to what it did
EVENT_HORIZON_S = 120.0     # [s] events older than this at a decision are not looked at
ALARM, TEARING, REPEATED, HELD = 'alarm', 'tearing', 'repeated failure', 'held'
HOLD_DECISIONS = ('hold',)
# Reasons a manifest change can fix; STALE and NEVER_SEEN are the board's matter.
FIXABLE = (NOT_IN_MANIFEST, MissingReason.INJECTED_DROP.value, MissingReason.EVICTED.value,
           MissingReason.OUT_OF_SCOPE.value)
SHOWN = 8


@dataclass(frozen=True)
class WrongDecision:
    """A decision the bag shows as wrong: who, at which ticks, and what it names and where.

    `names` are the keys, globs or categories the decision itself names (what it
    says it lacked, the failed action); `tags` those of its event; `own` the
    (source, kind, key) of the alarm it raised, which is its output, not its input.
    """

    cabin: str
    ticks: tuple[int, ...]
    kind: str
    summary: str
    names: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    own: tuple[str, EventKind, str] | None = None


@dataclass
class Finding:
    """An item true and relevant at a wrong decision's ticks but absent from the cabin's pack."""

    cabin: str
    key: str
    reason: str
    detail: str
    score: int
    why_relevant: str
    decision: WrongDecision
    ticks: list[int] = field(default_factory=list)
    event: Event | None = None
    importance: float = 0.0
    age_s: float = 0.0     # [s] how old the event was at its last faulty tick
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """The patch replayed: per finding key, at how many of its faulty ticks it is present."""

    present: Mapping[tuple[str, str], tuple[int, int]]
    alarm_ticks: tuple[int, ...]

    @property
    def passed(self) -> bool:
        """True when every patched item is present at all its faulty ticks and no alarm fires."""
        return not self.alarm_ticks and all(n == total for n, total in self.present.values())


@dataclass(frozen=True)
class Suggestions:
    """Wrong decisions, what each was missing (ranked), the manifest patch and its check."""

    settings: Settings
    decisions: tuple[WrongDecision, ...]
    findings: tuple[Finding, ...]
    patch: Mapping[str, Mapping[str, Any]]       # cabin -> field -> full new value
    notes: Mapping[str, tuple[str, ...]]          # cabin -> why each field changes
    check: Check | None


# -- wrong decisions ------------------------------------------------------------------


def logged_events(run: Run) -> list[tuple[int, Event]]:
    """Return every event of the log input with the tick whose receipt first includes it."""
    kinds = inputs.event_kinds(run.event_kinds)
    found = []
    for topic, msgtype in run.input_types.items():
        if not msgtype.endswith('/LogEvent'):
            continue
        frames = run.recording.frames
        index = 0
        for position, (stamp_ns, msg) in enumerate(run.inputs[topic]):
            while index < len(frames) and frames[index].inputs.get(topic, 0) <= position:
                index += 1
            if index == len(frames):
                break  # arrived after the last tick
            try:
                found.append((frames[index].tick, inputs.event_from_msg(msg, stamp_ns * 1e-9,
                                                                        kinds)))
            except ValueError:
                continue  # the node rejected it too
    return found


def wrong_decisions(run: Run, cabins: Iterable[str]) -> list[WrongDecision]:
    """Return the run's wrong decisions of `cabins`, one per episode, in tick order."""
    cabins = list(cabins)
    statuses: dict[str, dict[int, DecisionRecord]] = {cabin: {} for cabin in cabins}
    for status in run.decisions:
        if status.cabin in statuses:
            statuses[status.cabin].setdefault(status.tick, status)
    found: list[WrongDecision] = []
    for tick, event in logged_events(run):
        detail = event.detail if isinstance(event.detail, Mapping) else {}
        at = detail.get('tick') if isinstance(detail.get('tick'), int) else tick
        if event.kind is EventKind.ALARM and isinstance(detail.get('digests'), Mapping):
            torn = sorted({c for group in detail['digests'].values() for c in group})
            found.append(WrongDecision(event.source, (at,), TEARING,
                                       f'tearing: {", ".join(torn)} on different frames',
                                       (), tuple(event.tags), _identity(event)))
        elif event.kind is EventKind.ALARM and event.source in statuses:
            found.append(_alarm(event, at, detail, statuses[event.source]))
        elif event.kind is EventKind.FAILURE:
            found += _repeats(event, tick, detail, statuses)
    found += _holds(statuses, found)
    return sorted(found, key=lambda decision: (decision.ticks[0], decision.cabin))


def _episode(statuses: Mapping[int, DecisionRecord], first: int, same) -> tuple[int, ...]:
    """Return `first` and the following consecutive ticks whose status satisfies `same`."""
    ticks = [first]
    while ticks[-1] + 1 in statuses and same(statuses[ticks[-1] + 1]):
        ticks.append(ticks[-1] + 1)
    return tuple(ticks)


def _alarm(event: Event, tick: int, detail: Mapping, statuses: Mapping[int, DecisionRecord]
           ) -> WrongDecision:
    status = statuses.get(tick)
    ticks = (tick,) if status is None else _episode(
        statuses, tick, lambda s: s.decision == status.decision)
    missing = detail.get('missing') if isinstance(detail.get('missing'), list) else []
    names = [event.key] + [m['key'] for m in missing if isinstance(m, Mapping) and 'key' in m]
    names += _needs(detail)
    reason = detail.get('reason')
    return WrongDecision(event.source, ticks, ALARM, f'ALARM {event.key}'
                         + (f' ({reason})' if reason else ''), tuple(names), tuple(event.tags),
                         _identity(event))


def _needs(detail: Mapping) -> list[str]:
    """Return the keys or globs a decision says it needed (its detail's `needs`)."""
    needs = detail.get('needs')
    return [name for name in needs if isinstance(name, str)] if isinstance(needs, list) else []


def _identity(event: Event) -> tuple[str, EventKind, str]:
    return event.source, event.kind, event.key


def _action(status: DecisionRecord) -> tuple[str, str] | None:
    action = status.detail.get('action') if isinstance(status.detail, Mapping) else None
    if not isinstance(action, Mapping):
        return None
    return str(action.get('name', '')), str(action.get('strategy', ''))


def _repeats(event: Event, tick: int, detail: Mapping,
             statuses: Mapping[str, Mapping[int, DecisionRecord]]) -> list[WrongDecision]:
    """Return the cabins whose first decision once the FAILURE held repeats the failed action."""
    failed = (event.key, str(detail.get('strategy', '')))
    found = []
    for cabin, by_tick in statuses.items():
        after = [t for t in by_tick if t >= tick]
        if not after or _action(by_tick[min(after)]) != failed:
            continue
        ticks = _episode(by_tick, min(after), lambda s: _action(s) == failed)
        why = f': {detail["reason"]}' if detail.get('reason') else ''
        found.append(WrongDecision(
            cabin, ticks, REPEATED,
            f'FAILURE of {failed[0]} ({failed[1] or "no strategy"}){why}; repeated after it',
            (event.key,), tuple(event.tags)))
    return found


def decision_names(status: DecisionRecord) -> tuple[str, ...]:
    """Return the keys, globs and actions a decision names as what it acted on or needed."""
    detail = status.detail if isinstance(status.detail, Mapping) else {}
    action = _action(status)
    names = ([action[0]] if action else []) + _needs(detail) + list(_hold_names(status))
    constraints = detail.get('constraints')
    if isinstance(constraints, list):
        names += [name for name in constraints if isinstance(name, str)]
    return tuple(dict.fromkeys(names))


def names_event(names: Iterable[str], event: Event) -> bool:
    """Return True when one of a decision's `names` covers `event` (its key or its kind)."""
    return any(_names_it(name, event.key, event) for name in names)


def _hold_names(status: DecisionRecord) -> tuple[str, ...]:
    """Return the keys a hold names: its `missing` keys, else the key its reason starts with."""
    detail = status.detail if isinstance(status.detail, Mapping) else {}
    missing = detail.get('missing')
    if isinstance(missing, list):
        return tuple(m['key'] for m in missing if isinstance(m, Mapping) and 'key' in m)
    reason = str(detail.get('reason', ''))
    head = reason.partition(': ')[0]
    return (head,) if head and ' ' not in head else ()


def _holds(statuses: Mapping[str, Mapping[int, DecisionRecord]],
           known: list[WrongDecision]) -> list[WrongDecision]:
    """Episodes of `hold` decisions not already part of another wrong decision."""
    covered = {(d.cabin, tick) for d in known for tick in d.ticks}
    found = []
    for cabin, by_tick in statuses.items():
        for tick in sorted(by_tick):
            status = by_tick[tick]
            if (status.decision not in HOLD_DECISIONS or (cabin, tick) in covered
                    or not _hold_names(status)):
                continue
            names = _hold_names(status)
            ticks = _episode(by_tick, tick, lambda s: s.decision == status.decision
                             and _hold_names(s) == names)
            covered.update((cabin, t) for t in ticks)
            reason = status.detail.get('reason', '') if isinstance(status.detail, Mapping) else ''
            found.append(WrongDecision(cabin, ticks, HELD, f'held: {reason or ", ".join(names)}',
                                       names))
    return found


# -- what was missing ---------------------------------------------------------------


def _names_it(name: str, key: str, event: Event | None) -> bool:
    """Return True when a name of the decision covers `key` (an event: its kind or its key)."""
    if event is not None:
        if name in (EVENTS_PREFIX + event.kind.value, EVENTS_PREFIX + '*'):
            return True
        if _matches(name, event.key):
            return True
    return _matches(name.removeprefix(BOARD_PREFIX), key)


def _matches(pattern: str, key: str) -> bool:
    return pattern == key or (is_glob(pattern) and fnmatch.fnmatchcase(key, pattern))


def place_of(value: Any) -> np.ndarray | None:
    """Return the points [m] a value describes ({x, y}, a polygon), or None."""
    if isinstance(value, Mapping) and isinstance(value.get('polygon'), (list, tuple)):
        try:
            return np.array([as_point(p, 'polygon') for p in value['polygon']])
        except ValueError:
            return None
    try:
        return np.array([as_point(value, 'value')])
    except ValueError:
        return None


def distance_to(points: np.ndarray, xy: tuple[float, float]) -> float:
    """Return the distance [m] from `xy` to a point, or to a polygon's boundary (0 inside)."""
    if len(points) == 1:
        return float(math.dist(points[0], xy))
    x, y = xy
    inside = False
    for (x0, y0), (x1, y1) in zip(points, np.roll(points, -1, axis=0)):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    if inside:
        return 0.0
    starts, ends = points, np.roll(points, -1, axis=0)
    segments = ends - starts
    t = np.clip(((np.array(xy) - starts) * segments).sum(axis=1)
                / np.maximum((segments ** 2).sum(axis=1), 1e-12), 0.0, 1.0)
    closest = starts + t[:, None] * segments
    return float(np.hypot(*(closest - np.array(xy)).T).min())


def robot_at(step: Step, pose_key: str) -> tuple[float, float] | None:
    """Return the robot's (x, y) [m] the node knew at the step (pose topic, else board)."""
    if step.truth.pose is not None:
        return step.truth.pose
    entry = step.truth.board.view().get(pose_key)
    try:
        return None if entry is None else as_point(entry.value, pose_key)
    except ValueError:
        return None


def _relevance(decision: WrongDecision, key: str, event: Event | None, value: Any,
               tags: Iterable[str], robot: tuple[float, float] | None) -> tuple[int, str]:
    """Return (score, why) of an absent item for `decision`; score 0 means not relevant."""
    named = any(_names_it(name, key, event) for name in decision.names)
    points = place_of(value)
    distance = None if points is None or robot is None else distance_to(points, robot)
    near = distance is not None and distance <= NEAR_M
    if not (named or near):
        return 0, ''
    shared = sorted(set(tags) & set(decision.tags))
    why = ', '.join(part for part in (
        'named by the decision' if named else '',
        f'{distance:.2f} m from the robot' if near else '',
        f'tags {", ".join(shared)}' if shared else '') if part)
    return 4 * named + 3 * near + len(shared), why


def _absent_items(step: Step, decision: WrongDecision, pose_key: str):
    """Yield (key, event, value, tags, importance) true at the step but not in the pack."""
    pack = step.frame.packs[decision.cabin]
    now = step.frame.stamp
    for key, entry in step.truth.board.view().entries.items():
        if pack.item(key) is None and not entry.is_stale(now):
            yield key, None, entry.value, entry.tags, entry.importance
    served = {event.seq for event in pack.events}
    for event in step.truth.log.window(now - EVENT_HORIZON_S, now):
        if event.seq not in served and _identity(event) != decision.own:
            yield event_item_key(event), event, event.detail, event.tags, event.importance


def findings_at(step: Step, decision: WrongDecision, pose_key: str,
                found: dict[tuple[str, str], Finding]) -> None:
    """Add what `decision`'s cabin lacked at this step to `found` (keyed by cabin and key)."""
    robot = robot_at(step, pose_key)
    for key, event, value, tags, importance in _absent_items(step, decision, pose_key):
        score, why = _relevance(decision, key, event, value, tags, robot)
        if not score:
            continue
        answer = explain(step.frame, step.manifests, decision.cabin, key)
        if answer.reason == PRESENT or answer.reason not in FIXABLE:
            continue
        finding = found.setdefault((decision.cabin, key), Finding(
            decision.cabin, key, answer.reason, answer.detail, score, why, decision,
            event=event, importance=importance or 0.0, tags=tuple(tags)))
        if finding.ticks[-1:] != [step.recorded.tick]:   # one tick, whatever decisions share it
            finding.ticks.append(step.recorded.tick)
        finding.score = max(finding.score, score)


# -- the patch ----------------------------------------------------------------------


def pattern_for(key: str) -> str:
    """Return the glob a manifest should name for `key`: its namespace ('door:main' -> 'door:*')."""
    head, sep, _ = key.partition(':')
    return f'{head}:*' if sep and head else key


def _withholds(spec: str, finding: Finding) -> bool:
    """Return True when the drop entry `spec` withholds the finding's item."""
    event = finding.event
    if spec == MAP:
        return False
    if spec.startswith(EVENTS_PREFIX):
        kind = spec[len(EVENTS_PREFIX):]
        return event is not None and kind in ('*', event.kind.value)
    if spec.startswith(BOARD_PREFIX):
        return event is None and _matches(spec[len(BOARD_PREFIX):], finding.key)
    return _matches(spec, finding.key)


def _patch_finding(finding: Finding, manifest: Manifest, fields: dict[str, Any],
                   notes: list[str], step_evictions: Mapping[str, float]) -> None:
    """Change the cabin's manifest `fields` so the finding's item would be served."""
    key, event = finding.key, finding.event
    recorded = {
        'board_keys': list(manifest.board_keys), 'required': list(manifest.required),
        'weights': [f'{p}={w:g}' for p, w in manifest.weights], 'drop': list(manifest.drop),
        'events.kinds': [k.value for k in manifest.events.kinds],
    }

    def add(name: str, value: str, note: str) -> None:
        values = list(fields.get(name, recorded[name]))
        if value not in values:
            fields[name] = values + [value]
            notes.append(note)

    if finding.reason == NOT_IN_MANIFEST and event is None:
        add('board_keys', pattern_for(key),
            f'board_keys += {pattern_for(key)}: {key} was not in the manifest')
    elif finding.reason == NOT_IN_MANIFEST:
        if not manifest.events.enabled:
            fields['events.window_s'] = EVENT_HORIZON_S
            notes.append(f'events.window_s = {EVENT_HORIZON_S:g}: the cabin took no events')
        if manifest.events.kinds:
            add('events.kinds', event.kind.value,
                f'events.kinds += {event.kind.value}: {key} was not in the manifest')
    elif finding.reason == MissingReason.INJECTED_DROP.value:
        drop = list(fields.get('drop', recorded['drop']))
        kept = [spec for spec in drop if not _withholds(spec, finding)]
        if kept != drop:
            fields['drop'] = kept
            notes.append(f'drop -= {", ".join(s for s in drop if s not in kept)}: the injected '
                         f'drop withheld {key} (stop the injection: --drop or '
                         f'cabins.{finding.cabin}.drop)')
        required = fields.get('required', recorded['required'])
        if event is None and not any(_matches(p, key) for p in required):
            add('required', pattern_for(key), f'required += {pattern_for(key)}: its absence '
                'is then reported (missing, /diagnostics) instead of silent')
    elif finding.reason == MissingReason.EVICTED.value:
        weight = min(1.0, round(max([finding.importance, *step_evictions.values()]) + 0.05, 2))
        pattern = key if event is not None else pattern_for(key)
        weights = [w for w in fields.get('weights', recorded['weights'])
                   if w.rpartition('=')[0] != pattern]
        fields['weights'] = [f'{pattern}={weight:g}'] + weights
        notes.append(f'weights: {pattern}={weight:g}: {key} was evicted ({finding.detail})')
    elif finding.reason == MissingReason.OUT_OF_SCOPE.value:
        _patch_scope(finding, manifest, fields, notes)


def _patch_scope(finding: Finding, manifest: Manifest, fields: dict[str, Any],
                 notes: list[str]) -> None:
    """Widen the tag filter or the event window that left the finding's item out."""
    event = finding.event
    if finding.detail.startswith('left out by tag filter'):
        excluded = [tag for tag in manifest.tags.exclude if tag in finding.tags]
        if excluded:
            fields['tags.exclude'] = [t for t in manifest.tags.exclude if t not in excluded]
            notes.append(f'tags.exclude -= {", ".join(excluded)}: they left {finding.key} out')
        else:
            fields['tags.include'] = list(dict.fromkeys(manifest.tags.include + finding.tags))
            notes.append(f'tags.include += {", ".join(finding.tags)}: the filter left '
                         f'{finding.key} out')
    elif event is not None and manifest.events.max_count and \
            finding.age_s <= manifest.events.window_s:
        count = 2 * manifest.events.max_count
        fields['events.max_count'] = count
        notes.append(f'events.max_count = {count}: {finding.key} was in the window but beyond '
                     f'the newest {manifest.events.max_count}')
    elif event is not None:
        window = math.ceil(finding.age_s + 1.0)
        fields['events.window_s'] = float(window)
        notes.append(f'events.window_s = {window}: {finding.key} was {finding.age_s:.1f} s old, '
                     f'outside the {manifest.events.window_s:g} s window')


def build_patch(findings: Iterable[Finding], manifests: Mapping[str, Manifest],
                evictions: Mapping[int, Mapping[str, float]]
                ) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[str, ...]]]:
    """Return {cabin: {field: full new value}} and the reason for each change."""
    patch: dict[str, dict[str, Any]] = {}
    notes: dict[str, list[str]] = {}
    for finding in findings:
        fields = patch.setdefault(finding.cabin, {})
        _patch_finding(finding, manifests[finding.cabin], fields,
                       notes.setdefault(finding.cabin, []),
                       evictions.get(finding.ticks[0], {}))
    patch = {cabin: fields for cabin, fields in patch.items() if fields}
    return patch, {cabin: tuple(notes[cabin]) for cabin in patch}


def patch_values(patch: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return a patch as node parameters `cabins.<cabin>.<field>`."""
    return {f'cabins.{cabin}.{name}': value
            for cabin, fields in patch.items() for name, value in fields.items()}


def node_key(node: str) -> str:
    """Return the params-file key of a node in any namespace: '/**/working_memory'."""
    return '/**/' + node.rsplit('/', 1)[-1]


def patch_yaml(result: Suggestions, node: str) -> str:
    """Return the patch as a params file the node accepts (after its own file)."""
    lines = ["# Manifest additions suggested by wm-inspect suggest from the run's wrong",
             "# decisions. Pass it after the node's own params file (later files win);",
             '# each field holds its full new value.']
    for cabin, notes in result.notes.items():
        lines += [f'# {cabin}: {note}' for note in notes]
    cabins: dict[str, dict[str, Any]] = {}
    for cabin, fields in result.patch.items():
        nested: dict[str, Any] = {}
        for name, value in fields.items():
            head, _, leaf = name.partition('.')
            if leaf:
                nested.setdefault(head, {})[leaf] = value
            else:
                nested[name] = value
        cabins[cabin] = nested
    # Keyed as the packaged file is (`/**/<name>`): it reaches the node in any namespace.
    document = {node_key(node): {'ros__parameters': {'cabins': cabins}}}
    return '\n'.join(lines) + '\n' + yaml.safe_dump(document, default_flow_style=None,
                                                    sort_keys=False, width=100)


# -- the whole archaeology ---------------------------------------------------------------


class Archaeology:
    """Find a run's wrong decisions and, step by step of its replay, what each was missing."""

    def __init__(self, run: Run, settings: Settings, cabin: str | None = None):
        self.run, self.settings = run, settings
        self.manifests = settings.manifests()
        cabins = [cabin] if cabin is not None else list(self.manifests)
        self.decisions = [d for d in wrong_decisions(run, cabins) if d.cabin in self.manifests]
        self.at: dict[int, list[WrongDecision]] = {}
        for decision in self.decisions:
            if decision.kind == TEARING:
                continue  # a freeze problem: what the pack held is not what went wrong
            for tick in decision.ticks:
                self.at.setdefault(tick, []).append(decision)
        self.found: dict[tuple[str, str], Finding] = {}
        self.evictions: dict[int, dict[str, float]] = {}

    def __call__(self, step: Step) -> None:
        """Read one replayed step: what the decisions at its tick lacked."""
        tick = step.recorded.tick
        for decision in self.at.get(tick, ()):
            findings_at(step, decision, self.settings.config.pose_key, self.found)
            self.evictions[tick] = {r.key: r.importance for r in step.frame.evictions}
            for finding in self.found.values():
                if finding.event is not None and finding.ticks[-1] == tick:
                    finding.age_s = step.frame.stamp - finding.event.stamp

    def result(self, check: bool = True) -> Suggestions:
        """Return the findings, the patch and (with `check`) the patch checked by a replay."""
        findings = sorted(self.found.values(),
                          key=lambda f: (-f.score, f.event is not None, -len(f.ticks), f.key))
        # A hold for want of something that was nowhere true was the right decision.
        decisions = [d for d in self.decisions
                     if d.kind != HELD or any(f.decision is d for f in findings)]
        patch, notes = build_patch(findings, self.manifests, self.evictions)
        checked = (check_patch(self.run, self.settings, patch, findings) if patch and check
                   else None)
        return Suggestions(self.settings, tuple(decisions), tuple(findings), patch, notes,
                           checked)


def suggest(run: Run, settings: Settings, cabin: str | None = None,
            check: bool = True) -> Suggestions:
    """Find the run's wrong decisions, what each was missing, a patch, and check it by replay.

    Without `check` the patch is not replayed (Suggestions.check is None).
    """
    archaeology = Archaeology(run, settings, cabin)
    if archaeology.at:
        replay_into(run, settings, archaeology, packs=False)
    return archaeology.result(check)


def check_patch(run: Run, settings: Settings, patch: Mapping[str, Mapping[str, Any]],
                findings: Iterable[Finding]) -> Check:
    """Replay with the patch: at how many faulty ticks each finding's item is present; alarms."""
    findings = [f for f in findings if f.cabin in patch]
    present = {(f.cabin, f.key): 0 for f in findings}
    wanted = {(f.cabin, f.key): set(f.ticks) for f in findings}
    alarms = []
    patched = settings.with_values(patch_values(patch), 'the suggested patch')
    for step in replay(run, patched, packs=False):
        tick = step.recorded.tick
        if step.frame.capacity_alarm:
            alarms.append(tick)
        for finding in findings:
            if tick in wanted[(finding.cabin, finding.key)] and served(step, finding):
                present[(finding.cabin, finding.key)] += 1
    return Check({key: (present[key], len(ticks)) for key, ticks in wanted.items()},
                 tuple(alarms))


def served(step: Step, finding: Finding) -> bool:
    """Return True when the step's pack of the finding's cabin holds its item."""
    pack = step.frame.packs.get(finding.cabin)
    if pack is None:
        return False
    if finding.event is None:
        return pack.item(finding.key) is not None
    return any(event.seq == finding.event.seq for event in pack.events)


# -- text ---------------------------------------------------------------------------------


def format_suggestions(result: Suggestions, path: str | Path) -> str:
    """Return the wrong decisions, their ranked missing items, the patch and its check."""
    lines = [f'suggest from {path} (configuration from {result.settings.source})']
    if not result.decisions:
        lines.append('no wrong decision in the run (no ALARM, no repeated FAILURE, no hold '
                     'for want of an item): nothing to suggest')
        return '\n'.join(lines)
    lines.append(f'{len(result.decisions)} wrong decision(s):')
    for decision in result.decisions:
        lines.append(f'  {tick_text(decision.ticks)} {decision.cabin}: {decision.summary}')
        own = [f for f in result.findings if f.decision is decision]
        if decision.kind == TEARING:
            lines.append('    a freeze problem, not a missing item: see wm-inspect doctor')
        elif not own:
            lines.append('    nothing true and relevant was absent from the pack')
        for rank, finding in enumerate(own[:SHOWN], 1):
            lines.append(f'    {rank}. {finding.key}  {finding.reason}  {finding.detail}  '
                         f'[{finding.why_relevant}; absent at {tick_text(finding.ticks)}]')
        if len(own) > SHOWN:
            lines.append(f'    ... and {len(own) - SHOWN} more')
    if not result.patch:
        lines.append('no manifest change would have served them')
        return '\n'.join(lines)
    lines.append("manifest patch (a params file; pass it after the node's own):")
    lines += ['  ' + line for line in patch_yaml(result, result.settings.node).splitlines()]
    check = result.check
    checked = ', '.join(f'{key} present at {n}/{total} faulty ticks'
                        for (_, key), (n, total) in check.present.items())
    alarm = 'never fires' if not check.alarm_ticks else f'fires at {tick_text(check.alarm_ticks)}'
    lines.append(f'checked by replay with the patch: {checked}; capacity alarm {alarm}'
                 + ('' if check.passed else '  (the patch does NOT fix it all)'))
    return '\n'.join(lines)
