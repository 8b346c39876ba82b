"""Report of a recorded run: per-tick plots and a map window, as PNG or a self-contained page.

Uses matplotlib's object API with the Agg canvas (no pyplot, no display needed).
"""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from working_memory.tools.recording import MapWindow, Recording, describe_ticks, tick_ranges
from working_memory.tools.series import TickSeries, tick_series

REPORT_SUFFIXES = ('.html', '.png')
# Occupancy 0 (free) white to 100 (occupied) black; unknown (-1) cells blue.
MAP_COLORS = colormaps['gray_r'].with_extremes(bad='lightsteelblue')


@dataclass(frozen=True, slots=True)
class MapChoice:
    """The map window shown in the report."""

    tick: int
    cabin: str
    window: MapWindow


def choose_map(recording: Recording, tick: int | None = None,
               cabin: str | None = None) -> MapChoice | None:
    """Return the map window of `tick` (default: the last tick with one) for `cabin`.

    Without `cabin`, the first cabin whose window is not empty; None when there is none.
    """
    if cabin is not None:
        recording.check_cabin(cabin)
    frames = [recording.frame(tick)] if tick is not None else list(reversed(recording.frames))
    for frame in frames:
        if cabin is not None and tick is not None:
            return MapChoice(frame.tick, cabin, recording.pack(frame.tick, cabin).map_window)
        for name in ([cabin] if cabin is not None else list(frame.packs)):
            pack = frame.packs.get(name)
            if pack is not None and pack.map_window.cells.size:
                return MapChoice(frame.tick, name, pack.map_window)
    return None


def alarm_runs(series: TickSeries) -> list[tuple[int, int]]:
    """Return (first, last) tick runs with a capacity alarm."""
    if series.alarms is None:
        return []
    return tick_ranges([int(t) for t in series.ticks[series.alarms]])


def draw_timelines(axes, series: TickSeries) -> None:
    """Draw working-set size, evictions, missing items and capacity alarms, one axis each."""
    size_ax, evict_ax, missing_ax, alarm_ax = axes
    ticks = series.ticks
    size_ax.plot(ticks, series.working_set, drawstyle='steps-mid', color='black',
                 label='working set (distinct items)')
    for cabin, counts in series.items_per_cabin.items():
        size_ax.plot(ticks, counts, drawstyle='steps-mid', linewidth=0.8, label=f'{cabin} items')
    size_ax.set_ylabel('items')
    size_ax.legend(loc='upper left', fontsize='small')
    evict_ax.bar(ticks, series.evictions, width=1.0, color='tab:red')
    evict_ax.set_ylabel('evictions')
    for reason, counts in series.missing_by_reason.items():
        missing_ax.plot(ticks, counts, drawstyle='steps-mid', label=reason)
    missing_ax.plot(ticks, series.missing, drawstyle='steps-mid', color='black', linewidth=0.8,
                    label='all')
    missing_ax.set_ylabel('missing')
    missing_ax.legend(loc='upper left', fontsize='small')
    if series.alarms is None:
        alarm_ax.text(0.5, 0.5, f'capacity alarm {series.alarm_source}', ha='center', va='center',
                      transform=alarm_ax.transAxes)
    else:
        alarm_ax.fill_between(ticks, series.alarms.astype(int), step='mid', color='tab:orange')
        alarm_ax.set_title(f'capacity alarm from {series.alarm_source}', fontsize='small')
    alarm_ax.set_ylabel('alarm')
    alarm_ax.set_yticks([0, 1])
    alarm_ax.set_xlabel('tick')
    for ax in axes[:3]:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        for first, last in alarm_runs(series):
            ax.axvspan(first - 0.5, last + 0.5, color='tab:orange', alpha=0.2)
    alarm_ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def draw_map(ax, choice: MapChoice | None) -> None:
    """Draw a map window (unknown cells shaded blue), or say there is none."""
    if choice is None:
        ax.text(0.5, 0.5, 'no map window recorded', ha='center', va='center',
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    cells = np.ma.masked_less(choice.window.cells.astype(float), 0.0)
    ax.imshow(cells, origin='lower', extent=choice.window.extent, cmap=MAP_COLORS,
              vmin=0, vmax=100, interpolation='nearest')
    height, width = choice.window.cells.shape
    ax.set_title(f'{choice.cabin} map window, tick {choice.tick} ({width}x{height} cells)',
                 fontsize='small')
    ax.set_xlabel('x [m]')
    ax.set_ylabel('y [m]')


def report_png(series: TickSeries, choice: MapChoice | None) -> bytes:
    """Render the report figure and return it as PNG bytes."""
    figure = Figure(figsize=(13, 8), layout='constrained')
    grid = figure.add_gridspec(4, 2, width_ratios=(3, 2))
    first = figure.add_subplot(grid[0, 0])
    axes = [first] + [figure.add_subplot(grid[row, 0], sharex=first) for row in range(1, 4)]
    draw_timelines(axes, series)
    draw_map(figure.add_subplot(grid[:, 1]), choice)
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


def summary_rows(recording: Recording, series: TickSeries,
                 choice: MapChoice | None) -> list[tuple[str, str]]:
    """Return the report table: (what, value) rows."""
    evicted = Counter(e.key for e in recording.evictions)
    top = ', '.join(f'{key} ×{count}' for key, count in evicted.most_common(5))
    missing = ', '.join(f'{reason} {int(counts.sum())}'
                        for reason, counts in series.missing_by_reason.items())
    alarmed = [] if series.alarms is None else [int(t) for t in series.ticks[series.alarms]]
    peak = int(np.argmax(series.working_set)) if len(series.ticks) else None
    return [
        ('bag', str(recording.path)),
        ('ticks recorded', f'{len(recording.frames)} ({describe_ticks(recording.ticks)})'),
        ('cabins', ', '.join(recording.cabins) or 'none'),
        ('largest working set', 'n/a' if peak is None else
         f'{int(series.working_set[peak])} items at tick {int(series.ticks[peak])}'),
        ('evictions', f'{len(recording.evictions)}' + (f' (most: {top})' if top else '')),
        ('missing items (pack-ticks)', missing or 'none'),
        ('capacity alarm', f'{series.alarm_source}; ticks: {describe_ticks(alarmed)}'
         if series.alarms is not None else series.alarm_source),
        ('map window', 'none' if choice is None else f'tick {choice.tick}, cabin {choice.cabin}'),
    ]


def report_html(png: bytes, rows: list[tuple[str, str]], title: str) -> str:
    """Return a self-contained HTML page: the PNG inline (base64) and the table."""
    table = '\n'.join(f'<tr><th>{html.escape(what)}</th><td>{html.escape(value)}</td></tr>'
                      for what, value in rows)
    image = base64.b64encode(png).decode('ascii')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} th{{text-align:left;padding-right:1em}}
img{{max-width:100%}}</style></head>
<body><h1>{html.escape(title)}</h1>
<table>
{table}
</table>
<img alt="per-tick working set, evictions, missing items, capacity alarms and map window"
 src="data:image/png;base64,{image}">
</body></html>
"""


def write_report(recording: Recording, path: str | Path, *, map_tick: int | None = None,
                 cabin: str | None = None, capacity: int | None = None) -> Path:
    """Write the report to `path` (.png or .html) and return the path."""
    path = Path(path)
    if path.suffix.lower() not in REPORT_SUFFIXES:
        raise ValueError(f'report path {path}: must end in {" or ".join(REPORT_SUFFIXES)}')
    series = tick_series(recording, capacity)
    choice = choose_map(recording, map_tick, cabin)
    png = report_png(series, choice)
    if path.suffix.lower() == '.png':
        path.write_bytes(png)
    else:
        title = f'working memory run {recording.path.name}'
        path.write_text(report_html(png, summary_rows(recording, series, choice), title))
    return path
