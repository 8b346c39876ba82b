"""Health bookkeeping of the node, summarised as diagnostic statuses (no message types here).

The node reports what it sees (receipts, rejections, QoS events, tick
durations, evictions) as it happens; `Health.statuses()` turns the counters
into a few named statuses that `ros/conversions.py` publishes on /diagnostics.
Times are effective seconds (see `core.timebase.TimeBase`), so a simulation
reset never produces negative ages.
"""

from __future__ import annotations

import bisect
import collections
import enum
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from working_memory.core.items import Missing, MissingSummary
from working_memory.engine.receipts import Receipts


class Level(enum.IntEnum):
    """diagnostic_msgs/DiagnosticStatus levels."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass(frozen=True, slots=True)
class Status:
    """One diagnostic status: a named summary with key/value details."""

    name: str
    level: Level
    message: str
    values: tuple[tuple[str, str], ...] = ()


# How often /diagnostics is published while the node does not tick [s], when
# diagnostics_period_s is 0 ("every tick").
IDLE_PERIOD_S = 1.0


def idle_period_s(diagnostics_period_s: float) -> float:
    """Return the period [s] of /diagnostics while the node is not ticking."""
    return diagnostics_period_s or IDLE_PERIOD_S


def stall(silence_s: float, tick_period_s: float | None, idle_period: float,
          trigger_topic: str = '', trigger_interval_s: float | None = None,
          ros_advance_s: float | None = None) -> str | None:
    """Say why an active node has not ticked for `silence_s` [s] (steady clock), or None.

    Never before two idle diagnostics periods. On a trigger topic (`tick_period_s`
    None): at once if no trigger came since activation, else after five of the last
    intervals between two (`trigger_interval_s`), so a slow trigger is no stall. On
    the timer under sim time (`ros_advance_s`: how far ROS time moved since the last
    tick): sim time that did not move a period is a missing /clock, one that moved two
    periods without a tick is a held executor, and slow sim time in between is none.
    On the timer and the system clock: after two periods.
    """
    if silence_s < 2.0 * idle_period:
        return None
    gone = f'no tick for {silence_s:.1f} s'
    if tick_period_s is None:
        if trigger_interval_s is not None and silence_s < 5.0 * trigger_interval_s:
            return None
        return f'{gone}: no message on {trigger_topic}'
    held = f'{gone}: the tick timer did not run (a callback holding the executor?)'
    if ros_advance_s is not None:
        if ros_advance_s < tick_period_s:
            return f'{gone}: sim time does not advance (is /clock published?)'
        return held if ros_advance_s >= 2.0 * tick_period_s else None
    return held if silence_s >= 2.0 * tick_period_s else None


def lifecycle_status(state: str, failure: str | None = None, stalled: str | None = None) -> Status:
    """Return the `lifecycle` status of a node in lifecycle `state` (a primary state label).

    Active is OK, or a WARN with `stalled` (why no tick comes); unconfigured with a
    `failure` (why configure failed) is an ERROR carrying it; any other state
    (waiting for configure, inactive, finalized) is a WARN: the node serves no frames.
    """
    values = (('state', state), ('failure', failure or ''))
    if state == 'active' and stalled:
        return Status('lifecycle', Level.WARN, f'active: {stalled}', values)
    if state == 'active':
        return Status('lifecycle', Level.OK, 'active: ticking', values)
    if state == 'unconfigured' and failure:
        return Status('lifecycle', Level.ERROR, f'unconfigured: {failure}', values)
    message = {'unconfigured': 'unconfigured: waiting for configure',
               'inactive': 'inactive: not ticking'}.get(state, f'{state}: not ticking')
    return Status('lifecycle', Level.WARN, message, values)


@dataclass(slots=True)
class InputHealth:
    """What arrived on one input topic.

    `max_silence_s` is None for sporadic or latched topics (board changes,
    events, the map), whose silence says nothing about their health.
    """

    max_silence_s: float | None
    last_received: float | None = None
    rejected: int = 0
    rejected_reported: int = 0
    last_rejection: str = ''
    lost_reported: int = 0   # the middleware's message-lost count
    incompatible_qos: int = 0
    incompatible_policy: str = ''


@dataclass(frozen=True, slots=True)
class CapacityUse:
    """The working set's fill level at a tick."""

    items: int
    capacity: int
    size_bytes: int
    size_budget: int | None
    alarm: bool


@dataclass(slots=True)
class TickHealth:
    """Tick counters: overruns are ticks whose work took longer than the period."""

    ticks: int = 0
    overruns: int = 0
    last_duration_s: float = 0.0
    max_duration_s: float = 0.0
    clock_jumps: list[str] = field(default_factory=list)


class Health:
    """Counters of one configured node; `statuses()` summarises them."""

    def __init__(self, inputs: Mapping[str, float | None], started: float,
                 rate_window_s: float = 10.0, receipts: Receipts | None = None):
        """Track `inputs` ({topic: max silence [s] or None}) from effective time `started` [s].

        `receipts` count what each input took (its own, when not given).
        """
        self._inputs = {topic: InputHealth(silence) for topic, silence in inputs.items()}
        self.receipts = Receipts(inputs) if receipts is None else receipts
        self._started = started
        self._rate_window_s = rate_window_s
        self._evictions: collections.deque[tuple[float, int]] = collections.deque()
        self._evictions_total = 0
        self._outputs_incompatible: dict[str, tuple[int, str]] = {}
        self.ticks = TickHealth()

    def received(self, topic: str, now: float) -> None:
        """Note a message on `topic` at effective time `now` [s] (the receipts count it)."""
        self._inputs[topic].last_received = now

    def lost_of(self, topic: str) -> int:
        """Return the updates known lost on `topic`: the middleware's count or the gaps, larger.

        Both may count the same message (a sample the writer gave up on is a gap
        too), so they are not added; each alone is a lower bound.
        """
        return max(self._inputs[topic].lost_reported, self.receipts.gaps[topic].missed)

    def rejected(self, topic: str, reason: str) -> None:
        """Count input on `topic` that could not be used, with the reason."""
        state = self._inputs[topic]
        state.rejected += 1
        state.last_rejection = reason

    def lost(self, topic: str, total: int) -> None:
        """Record the middleware's count of messages lost on `topic`."""
        self._inputs[topic].lost_reported = total

    def input_incompatible(self, topic: str, total: int, policy: str) -> None:
        """Record a publisher on input `topic` whose QoS does not match ours."""
        state = self._inputs[topic]
        state.incompatible_qos = total
        state.incompatible_policy = policy

    def output_incompatible(self, topic: str, total: int, policy: str) -> None:
        """Record a subscriber of output `topic` requesting QoS we do not offer."""
        self._outputs_incompatible[topic] = (total, policy)

    def tick_done(self, duration_s: float, period_s: float | None) -> None:
        """Count a tick that took `duration_s` [s]; over `period_s` [s] it is an overrun."""
        ticks = self.ticks
        ticks.ticks += 1
        ticks.last_duration_s = duration_s
        ticks.max_duration_s = max(ticks.max_duration_s, duration_s)
        if period_s is not None and duration_s > period_s:
            ticks.overruns += 1

    def clock_jumped(self, description: str) -> None:
        """Record a backward jump of the node clock (a new epoch)."""
        self.ticks.clock_jumps.append(description)

    def evicted(self, count: int, now: float) -> None:
        """Count `count` evictions at effective time `now` [s]."""
        if count:
            self._evictions.append((now, count))
            self._evictions_total += count

    def evictions_per_s(self, now: float) -> float:
        """Return the eviction rate [1/s] over the last rate window before `now` [s]."""
        while self._evictions and self._evictions[0][0] < now - self._rate_window_s:
            self._evictions.popleft()
        window = min(self._rate_window_s, max(now - self._started, 1e-9))
        return sum(count for _, count in self._evictions) / window

    def statuses(self, now: float, *, epoch: int, capacity: CapacityUse,
                 missing: Mapping[str, Iterable[Missing]],
                 stale_check: bool,
                 counted: Mapping[str, Iterable[MissingSummary]] | None = None) -> list[Status]:
        """Return the statuses at effective time `now` [s]; `missing` lists each cabin's gaps.

        `counted` holds each cabin's missing summaries (the absent keys of a glob, counted).
        """
        return [self._capacity_status(now, capacity), self._ticks_status(epoch),
                self._inputs_status(now, stale_check), self._qos_status(),
                self._missing_status(missing, counted or {})]

    def _capacity_status(self, now: float, use: CapacityUse) -> Status:
        budget = 'none' if use.size_budget is None else str(use.size_budget)
        values = (('items', str(use.items)), ('capacity', str(use.capacity)),
                  ('size_bytes', str(use.size_bytes)), ('size_budget_bytes', budget),
                  ('evictions_per_s', f'{self.evictions_per_s(now):.2f}'),
                  ('evictions_total', str(self._evictions_total)),
                  ('exempt_overflow', str(use.alarm)))
        if use.alarm:
            return Status('capacity', Level.ERROR,
                          'exempt items alone exceed the capacity or size budget', values)
        return Status('capacity', Level.OK, f'{use.items}/{use.capacity} items', values)

    def _ticks_status(self, epoch: int) -> Status:
        ticks = self.ticks
        values = (('ticks', str(ticks.ticks)), ('overruns', str(ticks.overruns)),
                  ('last_duration_s', f'{ticks.last_duration_s:.6f}'),
                  ('max_duration_s', f'{ticks.max_duration_s:.6f}'),
                  ('clock_epoch', str(epoch)),
                  ('clock_jumps', '; '.join(ticks.clock_jumps[-3:])))
        level = Level.WARN if ticks.overruns or ticks.clock_jumps else Level.OK
        message = f'{ticks.ticks} ticks, {ticks.overruns} overruns, clock epoch {epoch}'
        return Status('ticks', level, message, values)

    def _inputs_status(self, now: float, stale_check: bool) -> Status:
        values, problems = [], []
        receipts = self.receipts
        for topic, state in self._inputs.items():
            age = 'never' if state.last_received is None else f'{now - state.last_received:.3f}'
            lost = self.lost_of(topic)
            values += [(f'{topic}.received', str(receipts.received[topic])),
                       (f'{topic}.age_s', age),
                       (f'{topic}.rejected', str(state.rejected)),
                       (f'{topic}.last_rejection', state.last_rejection),
                       (f'{topic}.lost', str(lost)),
                       (f'{topic}.lost_reported', str(state.lost_reported)),
                       (f'{topic}.lost_gaps', str(receipts.gaps[topic].missed))]
            if state.rejected > state.rejected_reported:
                problems.append(f'{topic}: {state.rejected - state.rejected_reported} rejected')
                state.rejected_reported = state.rejected
            if lost:
                problems.append(f'{topic}: {lost} lost')
            silent_since = self._started if state.last_received is None else state.last_received
            if (stale_check and state.max_silence_s is not None
                    and now - silent_since > state.max_silence_s):
                problems.append(f'{topic}: stale (no message for {now - silent_since:.1f} s)')
        if problems:
            return Status('inputs', Level.WARN, '; '.join(problems), tuple(values))
        return Status('inputs', Level.OK, 'inputs healthy', tuple(values))

    def _qos_status(self) -> Status:
        incompatible = {topic: (state.incompatible_qos, state.incompatible_policy)
                        for topic, state in self._inputs.items() if state.incompatible_qos}
        incompatible.update(self._outputs_incompatible)
        values = tuple((topic, f'{total} incompatible peer(s), last policy {policy}')
                       for topic, (total, policy) in incompatible.items())
        if incompatible:
            return Status('qos', Level.ERROR,
                          'incompatible QoS on ' + ', '.join(incompatible), values)
        return Status('qos', Level.OK, 'no QoS incompatibility', values)

    def _missing_status(self, missing: Mapping[str, Iterable[Missing]],
                        counted: Mapping[str, Iterable[MissingSummary]]) -> Status:
        values, gaps = [], []
        for cabin, items in missing.items():
            items = list(items)
            summaries = list(counted.get(cabin, ()))
            values.append((cabin, ', '.join(f'{m.key} ({m.reason.value})' for m in items)))
            if summaries:
                values.append((f'{cabin}.counted', ', '.join(
                    f'{s.pattern}: {s.count} {s.reason.value}' for s in summaries)))
            unlisted = sum(summary.count - summary.listed for summary in summaries)
            if items:
                more = f' ({unlisted} more counted per glob)' if unlisted else ''
                gaps.append(f'{cabin}: {len(items)} missing{more}')
        if gaps:
            return Status('missing', Level.WARN, '; '.join(gaps), tuple(values))
        return Status('missing', Level.OK, 'no required item missing', tuple(values))


# Board growth: keys that arrive under a prefix and are never removed pile up in the mirror
# (the board's truth) and in every selection that reads them. A prefix whose keys on the
# board grew by GROWTH_WARN_KEYS over the last GROWTH_WINDOW_S, and by a quarter of that
# over its latest half (still growing, not a board filled once), is named in a WARN.
GROWTH_WINDOW_S = 30.0
GROWTH_WARN_KEYS = 1000
_GROWTH_SAMPLE_S = 1.0   # [s] the samples the growth is measured between are this far apart
_GROWING_NAMED = 5


@dataclass(frozen=True, slots=True)
class _Sample:
    time: float                            # [s] effective
    keys: int
    counts: Mapping[str, tuple[int, int]]  # prefix -> (arrived, removed) so far


class BoardGrowth:
    """The board mirror's size and growth over a window, and the key prefixes that pile up."""

    def __init__(self, window_s: float = GROWTH_WINDOW_S, warn_keys: int = GROWTH_WARN_KEYS):
        self._window_s, self._warn_keys = window_s, warn_keys
        self._samples: collections.deque[_Sample] = collections.deque()

    def status(self, now: float, keys: int,
               counts: Mapping[str, tuple[int, int]]) -> Status:
        """Return the `board` status at effective `now` [s] of a board of `keys` keys.

        `counts` is the board's `growth()`: per key prefix, the keys that arrived and
        were removed so far.
        """
        samples = self._samples
        if not samples or now - samples[-1].time >= _GROWTH_SAMPLE_S:
            samples.append(_Sample(now, keys, dict(counts)))
        while len(samples) > 1 and samples[1].time <= now - self._window_s:
            samples.popleft()
        base = samples[0]
        span = now - base.time
        rate = (keys - base.keys) / span if span > 0.0 else 0.0
        values = [('keys', str(keys)), ('growth_keys_per_s', f'{rate:.2f}'),
                  ('growth_window_s', f'{span:.1f}')]
        growing = self._growing(now, counts, base, span)
        for gained, prefix, removed in growing:
            values.append((f'grows.{prefix or "(no prefix)"}',
                           f'+{gained} keys in {span:.0f} s, {removed} removed'))
        message = f'{keys} keys, {rate:+.1f} keys/s over {span:.0f} s'
        if not growing:
            return Status('board', Level.OK, message, tuple(values))
        named = ', '.join(f'{prefix or "(no prefix)"} +{gained} ({removed} removed)'
                          for gained, prefix, removed in growing)
        return Status('board', Level.WARN,
                      f'{message}; keys accumulate that nobody removes: {named} '
                      f'(remove keys that end: a ttl only marks them stale)', tuple(values))

    def _growing(self, now: float, counts: Mapping[str, tuple[int, int]], base: _Sample,
                 span: float) -> list[tuple[int, str, int]]:
        """Return (keys gained, prefix, keys removed) of the prefixes piling up, most first."""
        if span < self._window_s / 2.0:
            return []
        samples = self._samples
        at = bisect.bisect_left([sample.time for sample in samples], now - span / 2.0)
        middle = samples[min(at, len(samples) - 1)]
        growing = []
        for prefix, (arrived, removed) in counts.items():
            gained = _net(counts, prefix) - _net(base.counts, prefix)
            lately = _net(counts, prefix) - _net(middle.counts, prefix)
            if gained >= self._warn_keys and lately >= self._warn_keys / 4.0:
                growing.append((gained, prefix, removed - base.counts.get(prefix, (0, 0))[1]))
        growing.sort(key=lambda grown: (-grown[0], grown[1]))
        return growing[:_GROWING_NAMED]


def _net(counts: Mapping[str, tuple[int, int]], prefix: str) -> int:
    """Return how many keys under `prefix` the board holds by `counts` (arrived - removed)."""
    arrived, removed = counts.get(prefix, (0, 0))
    return arrived - removed
