"""wm-watch's view model: what a terminal shows of the latest frame, evictions and diagnostics.

Pure: records in (`tools/recording.py`, the same ones a bag gives), plain rows out
(`watch_model`), and a rich renderable of them (`render`). `tools/watch_node.py`
is the ROS face that feeds a `WatchState` and redraws on every frame.
Times are float seconds of ROS time (sim time under a simulator).
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Iterable

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from working_memory.tools.recording import (DiagnosticRecord, EvictionRecord, FrameRecord,
                                            MissingRecord)

CAPACITY_STATUS = 'capacity'
ALARM_KIND = 'ALARM'
FAILURE_KIND = 'FAILURE'
RATE_FRAMES = 20          # frames the tick rate is measured over
RATE_WINDOW_S = 10.0      # [s] evictions per second are counted over this much ROS time
EVICTIONS_KEPT = 200
GAUGE_WIDTH = 20          # characters of the capacity bar
DIGEST_WIDTH = 12
REASON_STYLES = {'EVICTED': 'magenta', 'STALE': 'yellow', 'INJECTED_DROP': 'bold red',
                 'NEVER_SEEN': 'red', 'OUT_OF_SCOPE': 'cyan'}


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One item of a pack as shown: importance, age since last use [s], flags."""

    key: str
    importance: float
    age_s: float
    stale: bool
    exempt: bool
    value: str


@dataclass(frozen=True, slots=True)
class CabinPanel:
    """One cabin's pack: items (exempt first, then by importance), missing items (aged)."""

    cabin: str
    digest: str
    items: tuple[ItemRow, ...]
    missing: tuple[MissingRecord, ...]
    events: int


@dataclass(frozen=True, slots=True)
class Gauge:
    """Working-set use: `items` of `capacity` (None: no /diagnostics yet), alarm flag."""

    items: int
    capacity: int | None
    alarm: bool
    source: str

    @property
    def fraction(self) -> float | None:
        """Return items / capacity, None when the capacity is unknown."""
        return None if not self.capacity else self.items / self.capacity


@dataclass(frozen=True, slots=True)
class Alarm:
    """Something to show in red: a capacity alarm, or an ALARM / FAILURE event in a pack."""

    kind: str
    key: str
    source: str
    stamp: float


@dataclass(frozen=True, slots=True)
class WatchModel:
    """Everything one screen shows."""

    tick: int
    stamp: float
    digest: str
    tick_rate_hz: float | None
    gauge: Gauge
    evictions_per_s: float | None
    panels: tuple[CabinPanel, ...]
    evictions: tuple[EvictionRecord, ...]
    alarms: tuple[Alarm, ...]


class WatchState:
    """The latest frame, recent evictions and the node's capacity status, as they arrive."""

    def __init__(self, node_name: str = '/working_memory', evictions_kept: int = EVICTIONS_KEPT):
        """Watch the node `node_name`, fully qualified (its statuses are '<name>: ...')."""
        self.node_name = node_name
        self.frame: FrameRecord | None = None
        self.evictions: collections.deque[EvictionRecord] = collections.deque(
            maxlen=evictions_kept)
        self.capacity: DiagnosticRecord | None = None
        self._stamps: collections.deque[float] = collections.deque(maxlen=RATE_FRAMES)

    def add_frame(self, frame: FrameRecord) -> bool:
        """Keep `frame` if it is new; return True when the screen should be redrawn."""
        if self.frame is not None and (frame.tick, frame.digest) == (self.frame.tick,
                                                                     self.frame.digest):
            return False
        if self._stamps and frame.stamp < self._stamps[-1]:
            self._stamps.clear()  # the clock went back (a simulation reset)
        self._stamps.append(frame.stamp)
        self.frame = frame
        return True

    def add_evictions(self, records: Iterable[EvictionRecord]) -> None:
        """Keep the latest evictions."""
        self.evictions.extend(records)

    def add_diagnostics(self, records: Iterable[DiagnosticRecord]) -> None:
        """Keep this node's latest capacity status."""
        for record in records:
            if record.name == f'{self.node_name}: {CAPACITY_STATUS}':
                self.capacity = record

    def tick_rate_hz(self) -> float | None:
        """Return ticks per second of ROS time over the last frames, None before two."""
        if len(self._stamps) < 2 or self._stamps[-1] <= self._stamps[0]:
            return None
        return (len(self._stamps) - 1) / (self._stamps[-1] - self._stamps[0])

    def model(self, cabin: str | None = None) -> WatchModel | None:
        """Return the screen of the latest frame (only `cabin`'s pack when given), or None."""
        if self.frame is None:
            return None
        return watch_model(self.frame, self.evictions, self.capacity, cabin=cabin,
                           tick_rate_hz=self.tick_rate_hz())


def item_rows(frame: FrameRecord, cabin: str) -> tuple[ItemRow, ...]:
    """Return `cabin`'s items: exempt first, then by importance (highest first), then key."""
    pack = frame.packs[cabin]
    rows = [ItemRow(item.key, item.importance, max(0.0, frame.stamp - item.last_used),
                    item.stale, item.exempt, item.value) for item in pack.items]
    return tuple(sorted(rows, key=lambda row: (not row.exempt, -row.importance, row.key)))


def gauge(frame: FrameRecord, capacity: DiagnosticRecord | None) -> Gauge:
    """Return the working-set gauge from the capacity status, else from the frame alone."""
    if capacity is not None:
        values = capacity.values
        try:
            return Gauge(int(values['items']), int(values['capacity']),
                         values.get('exempt_overflow', '').strip().lower() == 'true',
                         '/diagnostics')
        except (KeyError, ValueError):
            pass  # a status of another shape: fall back to what the frame says
    served = len({item.key for pack in frame.packs.values() for item in pack.items})
    return Gauge(served, None, False, 'keys served (no /diagnostics yet)')


def evictions_per_s(evictions: Iterable[EvictionRecord], now: float,
                    capacity: DiagnosticRecord | None = None) -> float | None:
    """Return the node's own eviction rate [1/s] from its capacity status, else the seen one.

    The seen rate is that of the evictions over the RATE_WINDOW_S before `now` [s]; None
    without either.
    """
    if capacity is not None and 'evictions_per_s' in capacity.values:
        try:
            return float(capacity.values['evictions_per_s'])
        except ValueError:
            pass  # not a number: estimate from what this watcher saw
    recent = [e for e in evictions if now - RATE_WINDOW_S < e.stamp <= now]
    return len(recent) / RATE_WINDOW_S if recent or evictions else None


def frame_alarms(frame: FrameRecord, gauge_: Gauge) -> tuple[Alarm, ...]:
    """Return the capacity alarm and every ALARM / FAILURE event in the frame's packs, once."""
    alarms = []
    if gauge_.alarm:
        alarms.append(Alarm('CAPACITY', 'exempt items exceed capacity', 'working_memory',
                            frame.stamp))
    seen = set()
    for pack in frame.packs.values():
        for event in pack.events:
            signature = (event.kind, event.key, event.source, event.stamp)
            if event.kind in (ALARM_KIND, FAILURE_KIND) and signature not in seen:
                seen.add(signature)
                alarms.append(Alarm(event.kind, event.key, event.source, event.stamp))
    return tuple(sorted(alarms, key=lambda alarm: (alarm.kind != 'CAPACITY', -alarm.stamp)))


def watch_model(frame: FrameRecord, evictions: Iterable[EvictionRecord] = (),
                capacity: DiagnosticRecord | None = None, *, cabin: str | None = None,
                tick_rate_hz: float | None = None, evictions_shown: int = 8) -> WatchModel:
    """Return the screen of `frame`: every cabin's panel (or only `cabin`'s), gauge, alarms.

    Raises KeyError naming the valid cabins when `cabin` has no pack in the frame.
    """
    if cabin is not None and cabin not in frame.packs:
        raise KeyError(f'cabin {cabin!r} has no pack in tick {frame.tick} '
                       f'(cabins: {", ".join(frame.packs) or "none"})')
    cabins = [cabin] if cabin is not None else list(frame.packs)
    panels = tuple(CabinPanel(
        name, frame.packs[name].digest, item_rows(frame, name),
        tuple(MissingRecord(m.key, m.reason, m.text(frame.stamp))
              for m in frame.packs[name].missing)
        # A glob's absent keys counted (a few of them listed above): one row for all.
        + tuple(MissingRecord(f'{s.pattern} (counted)', s.reason, s.text(frame.stamp))
                for s in frame.packs[name].summaries),
        len(frame.packs[name].events)) for name in cabins)
    evictions = list(evictions)
    use = gauge(frame, capacity)
    return WatchModel(frame.tick, frame.stamp, frame.digest, tick_rate_hz, use,
                      evictions_per_s(evictions, frame.stamp, capacity), panels,
                      tuple(reversed(evictions[-evictions_shown:])), frame_alarms(frame, use))


# -- rendering -------------------------------------------------------------------


def gauge_text(use: Gauge) -> Text:
    """Return e.g. 'capacity [##########----------] 20/40' coloured by fill level."""
    text = Text('capacity ')
    fraction = use.fraction
    if fraction is None:
        return text.append(f'{use.items} items ({use.source})', style='dim')
    filled = min(GAUGE_WIDTH, round(fraction * GAUGE_WIDTH))
    style = 'bold red' if use.alarm else ('yellow' if fraction >= 1.0 else 'green')
    text.append('[').append('#' * filled, style=style).append('-' * (GAUGE_WIDTH - filled))
    text.append(f'] {use.items}/{use.capacity}', style=style)
    if use.alarm:
        text.append('  EXEMPT OVERFLOW', style='bold white on red')
    return text


def header(model: WatchModel) -> Text:
    """Return the top line: tick, time, digest, tick rate, capacity, eviction rate."""
    rate = '-' if model.tick_rate_hz is None else f'{model.tick_rate_hz:.1f}'
    text = Text.assemble(('tick ', 'dim'), (str(model.tick), 'bold'),
                         (f'  t={model.stamp:.1f} s  ', ''), ('digest ', 'dim'),
                         (model.digest[:DIGEST_WIDTH], 'bold cyan'), f'  {rate} ticks/s  ')
    text.append_text(gauge_text(model.gauge))
    if model.evictions_per_s is not None:
        text.append(f'  evictions {model.evictions_per_s:.1f}/s')
    return text


def alarm_lines(model: WatchModel) -> Text:
    """Return one red (ALARM, capacity) or yellow (FAILURE) line per alarm."""
    lines = Text()
    for alarm in model.alarms:
        style = 'yellow' if alarm.kind == FAILURE_KIND else 'bold white on red'
        if lines:
            lines.append('\n')
        lines.append(f' {alarm.kind} {alarm.key} ', style=style)
        lines.append(f' from {alarm.source} at t={alarm.stamp:.1f} s')
    return lines


def flags(row: ItemRow) -> Text:
    """Return the item's flags: exempt (green), stale (yellow)."""
    text = Text()
    if row.exempt:
        text.append('exempt ', style='green')
    if row.stale:
        text.append('stale', style='bold yellow')
    return text


def cabin_panel(panel: CabinPanel, max_items: int | None = None) -> Panel:
    """Return a cabin's panel: an item table, then its missing items with reasons."""
    table = Table(box=None, pad_edge=False, expand=True, header_style='dim')
    table.add_column('key', overflow='fold', ratio=3)
    table.add_column('imp', justify='right', no_wrap=True)
    table.add_column('age', justify='right', no_wrap=True)
    table.add_column('flags', no_wrap=True)
    shown = panel.items if max_items is None else panel.items[:max_items]
    for row in shown:
        table.add_row(row.key, f'{row.importance:.2f}', f'{row.age_s:.1f}s', flags(row),
                      style='yellow' if row.stale else None)
    parts: list[RenderableType] = [table]
    if len(shown) < len(panel.items):
        parts.append(Text(f'… {len(panel.items) - len(shown)} more items', style='dim'))
    if panel.missing:
        missing = Text('missing:', style='bold red')
        for row in panel.missing:
            missing.append(f'\n {row.key} ')
            missing.append(row.reason, style=REASON_STYLES.get(row.reason, 'red'))
            if row.detail:
                missing.append(f' {row.detail}', style='dim')
        parts.append(missing)
    else:
        parts.append(Text('missing: none', style='green'))
    title = Text.assemble((panel.cabin, 'bold'), f' {len(panel.items)} items, '
                          f'{panel.events} events')
    return Panel(Group(*parts), title=title, title_align='left',
                 subtitle=panel.digest[:DIGEST_WIDTH], subtitle_align='right',
                 border_style='red' if panel.missing else 'blue')


def evictions_table(model: WatchModel) -> Table:
    """Return the latest evictions, newest first."""
    table = Table(title='latest evictions', title_justify='left', box=None, header_style='dim',
                  pad_edge=False)
    for name, justify in (('tick', 'right'), ('key', 'left'), ('imp', 'right'),
                          ('unused', 'right'), ('reason', 'left')):
        table.add_column(name, justify=justify, no_wrap=True)
    for eviction in model.evictions:
        table.add_row(str(eviction.tick), eviction.key, f'{eviction.importance:.2f}',
                      f'{eviction.age:.1f}s', eviction.reason)
    if not model.evictions:
        table.add_row('', Text('none yet', style='dim'), '', '', '')
    return table


def columns_for(width: int, panels: int) -> int:
    """Return how many cabin panels fit side by side in `width` characters (about 40 each)."""
    return max(1, min(panels, width // 40))


def items_that_fit(height: int | None, model: WatchModel, columns: int) -> int | None:
    """Return the items per panel that keep the screen within `height` lines (None: all)."""
    if height is None:
        return None
    rows = math.ceil(len(model.panels) / columns)
    fixed = 2 + len(model.alarms) + 3 + len(model.evictions)
    missing = max((len(panel.missing) for panel in model.panels), default=0)
    per_row = (height - fixed) // max(rows, 1) - 4 - max(missing, 1)
    return max(3, per_row)


def render(model: WatchModel | None, width: int = 120, height: int | None = None,
           waiting_for: str = '') -> RenderableType:
    """Return the whole screen; `height` [lines] trims long item lists (None: show all)."""
    if model is None:
        return Text(f'waiting for the first frame on {waiting_for} …', style='dim')
    columns = columns_for(width, len(model.panels))
    limit = items_that_fit(height, model, columns)
    grid = Table.grid(expand=True, padding=(0, 1))
    for _ in range(columns):
        grid.add_column(ratio=1)
    panels = [cabin_panel(panel, limit) for panel in model.panels]
    for start in range(0, len(panels), columns):
        row = panels[start:start + columns]
        grid.add_row(*row, *([''] * (columns - len(row))))
    parts: list[RenderableType] = [header(model)]
    if model.alarms:
        parts.append(alarm_lines(model))
    parts += [grid, evictions_table(model)]
    return Group(*parts)
