"""The report of a recorded run: the story at a glance, as a self-contained page (or one PNG).

What it tells, each part with an id in the page: the outcome (`outcome`: delivered or not,
and why), the setup (`setup`: seed, drops), on a time axis in sim seconds (`timeline`) the
working set against its capacity, evictions per second with the top keys, missing items per
cabin and reason, alarms and failures marked; the map at a chosen tick (`map`) with the
robot's path, the route, the zones, the goal, the door and each cabin's window; and tables
of the alarms and failures (`events`), the evicted keys (`evictions`) and the missing items
(`missing`). Data comes from the frames (`recording.py`) and, where the demo recorded them,
/odom, /map, /log and /sim_world/status (`story.py`). matplotlib's object API with the Agg
canvas: no display needed.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle
from matplotlib.ticker import MaxNLocator

from working_memory.tools.bag import BagError
from working_memory.tools.recording import (EventRecord, FrameRecord, MapWindow, Recording,
                                            describe_ticks, tick_ranges)
from working_memory.tools.series import capacity_alarms
from working_memory.tools.story import Story, load_story

REPORT_SUFFIXES = ('.html', '.png')
# Occupancy 0 (free) white to 100 (occupied) black; unknown (-1) cells light blue.
MAP_COLORS = colormaps['gray_r'].with_extremes(bad='lightsteelblue')
CABIN_COLORS = ('tab:blue', 'tab:purple', 'tab:green', 'tab:brown', 'tab:pink', 'tab:olive')
TOP_KEYS = 4                  # eviction keys shown by name; the rest are 'other'
WALL_CLOCK_STAMPS = 1e6       # [s] stamps above this are wall time: plot from the first tick


@dataclass(frozen=True)
class Marked:
    """An alarm or a failure on the time axis."""

    stamp: float
    kind: str
    source: str
    key: str
    detail: str


@dataclass(frozen=True)
class MapScene:
    """What the map shows at one tick; points [m]."""

    tick: int
    stamp: float
    world: MapWindow | None
    windows: dict[str, MapWindow]
    path: np.ndarray                      # (n, 2) robot positions, whole run
    pose: tuple[float, float] | None
    route: tuple[tuple[float, float], ...]
    zones: dict[str, tuple[tuple[float, float], ...]]
    goals: dict[str, tuple[float, float]]
    doors: dict[str, tuple[float, float, str]]
    path_source: str


@dataclass(frozen=True)
class ReportData:
    """Everything the report draws and lists, from one recording and its story."""

    title: str
    outcome: str
    delivered: bool | None
    setup: list[tuple[str, str]]
    time_origin: float
    times: np.ndarray
    served: np.ndarray
    working_set: np.ndarray               # (n, 3): stamp, items, capacity (from /diagnostics)
    capacity_hint: int | None
    eviction_stamps: dict[str, np.ndarray]  # top keys + 'other'
    evicted: list[tuple[str, int, float]]   # key, times, last importance
    missing: dict[tuple[str, str], np.ndarray]  # (cabin, reason) -> count per frame
    missing_rows: list[tuple[str, str, str, str, str]]
    marked: list[Marked]
    alarm_spans: list[tuple[float, float]]
    alarm_source: str
    scene: MapScene | None
    notes: list[str] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)   # [s] a working memory's new start

    def t(self, stamp: float) -> float:
        """Return `stamp` on the report's time axis [s]."""
        return stamp - self.time_origin


def json_value(text: str) -> Any:
    """Return the decoded JSON of an item value, None when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def point(value: Any) -> tuple[float, float] | None:
    """Return (x, y) of {x, y} or [x, y] with finite numbers, else None."""
    if isinstance(value, dict):
        value = (value.get('x'), value.get('y'))
    try:
        x, y = float(value[0]), float(value[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (x, y) if np.isfinite(x) and np.isfinite(y) else None


def points(values: Any) -> tuple[tuple[float, float], ...]:
    """Return a list of [x, y] as points, () when any is malformed."""
    if not isinstance(values, list):
        return ()
    found = tuple(point(value) for value in values)
    return () if any(p is None for p in found) else found


def frame_at(recording: Recording, tick: int | None, marked: list[Marked]) -> FrameRecord | None:
    """Return the map's frame: `tick`, else the first alarm's or failure's, else the last."""
    if not recording.frames:
        return None
    if tick is not None:
        return recording.frame(tick)
    if marked:
        first = min(m.stamp for m in marked)
        return next((f for f in recording.frames if f.stamp >= first), recording.frames[-1])
    return recording.frames[-1]


def latest_values(recording: Recording, until: FrameRecord) -> dict[str, Any]:
    """Return every board key's latest decoded value in any pack up to frame `until`."""
    values: dict[str, Any] = {}
    for frame in recording.frames:
        if frame.tick > until.tick:
            break
        for pack in frame.packs.values():
            for item in pack.items:
                values[item.key] = item.value
    return {key: json_value(text) for key, text in values.items()}


def map_scene(recording: Recording, story: Story, frame: FrameRecord | None,
              cabin: str | None) -> MapScene | None:
    """Return the map at `frame`: world map, windows, path, route, zones, goals, doors."""
    if frame is None:
        return None
    values = latest_values(recording, frame)
    windows = {name: pack.map_window for name, pack in frame.packs.items()
               if pack.map_window.cells.size and (cabin is None or name == cabin)}
    if len(story.path):
        path, source = story.path[:, 1:3], '/odom'
    else:
        poses = [point(json_value(p.item('pose').value)) for f in recording.frames
                 for p in list(f.packs.values())[:1] if p.item('pose') is not None]
        path = np.array([p for p in poses if p is not None], dtype=float).reshape(-1, 2)
        source = 'pose in the frames'
    route = values.get('route')
    return MapScene(
        tick=frame.tick, stamp=frame.stamp, world=story.world_map, windows=windows, path=path,
        pose=point(values.get('pose')),
        route=points(route.get('waypoints')) if isinstance(route, dict) else (),
        zones={key: polygon for key, value in values.items()
               if key.startswith('safety:zone/') and isinstance(value, dict)
               and len(polygon := points(value.get('polygon'))) >= 3},
        goals={key: p for key, value in values.items()
               if key.startswith('goal:') and (p := point(value)) is not None},
        doors={key: (*p, str(value.get('state', '?'))) for key, value in values.items()
               if key.startswith('door:') and (p := point(value)) is not None},
        path_source=source)


def marked_events(recording: Recording, story: Story) -> list[Marked]:
    """Return the ALARM and FAILURE events: from /log when recorded, else from the packs."""
    if story.events:
        events = story.events_of('ALARM', 'FAILURE')
    else:
        seen: dict[tuple, EventRecord] = {}
        for frame in recording.frames:
            for pack in frame.packs.values():
                for event in pack.events:
                    if event.kind in ('ALARM', 'FAILURE'):
                        seen.setdefault((event.stamp, event.kind, event.source, event.key), event)
        events = sorted(seen.values(), key=lambda e: e.stamp)
    return [Marked(e.stamp, e.kind, e.source, e.key, e.detail) for e in events]


def alarm_reason(event: Marked) -> str:
    """Return the reason an ALARM's detail gives ('' when it gives none)."""
    detail = json_value(event.detail) if event.detail else None
    return str(detail.get('reason', '')) if isinstance(detail, dict) else ''


def outcome_text(recording: Recording, story: Story,
                 marked: list[Marked]) -> tuple[str, bool | None]:
    """Return (what happened and why, delivered or None when the bag does not say)."""
    status = story.world_status
    delivered_events = [e for e in story.events if e.kind == 'OBSERVATION'
                        and e.key == 'delivered']
    delivered = bool(status.get('delivered')) or bool(delivered_events) if (
        status or story.events) else None
    end = recording.frames[-1].stamp if recording.frames else 0.0
    safety = ''
    if status:
        safety = (f'; zone violations {status.get("zone_violations", 0)}, '
                  f'collisions {status.get("collisions", 0)}')
    if delivered:
        when = f' at t={delivered_events[0].stamp:.1f} s' if delivered_events else ''
        failures = [m for m in marked if m.kind == 'FAILURE']
        note = (f', after {len(failures)} failed {failures[0].key}' if failures else '')
        return f'DELIVERED{when}{note}{safety}', True
    alarms = [m for m in marked if m.kind == 'ALARM']
    if alarms:
        first = alarms[0]
        reason = alarm_reason(first)
        why = (f'{first.source} raised ALARM {first.key} at t={first.stamp:.1f} s'
               + (f' ({reason})' if reason else '') + ' and held')
    else:
        why = f'the run ended at t={end:.1f} s before the robot reached the goal'
    if delivered is None:
        return f'UNKNOWN: the bag holds no outcome (/sim_world/status, /log); {why}', None
    return f'NOT DELIVERED: {why}{safety}', False


def injected_drops(recording: Recording) -> str:
    """Return the drops the packs report as INJECTED_DROP, per cabin."""
    drops: dict[str, list[str]] = {}
    for frame in recording.frames:
        for cabin, pack in frame.packs.items():
            for missing in pack.missing:
                if missing.reason == 'INJECTED_DROP' and missing.key not in drops.get(cabin, []):
                    drops.setdefault(cabin, []).append(missing.key)
    return '; '.join(f'{cabin}: {", ".join(keys)}' for cabin, keys in drops.items()) or 'none'


def working_set(recording: Recording) -> np.ndarray:
    """Return (stamp, items, capacity) rows of the node's capacity statuses."""
    rows = []
    for status in recording.diagnostics:
        if status.name.endswith(': capacity'):
            try:
                rows.append((status.stamp, int(status.values['items']),
                             int(status.values['capacity'])))
            except (KeyError, ValueError):
                continue
    return np.array(sorted(rows), dtype=float).reshape(-1, 3)


def missing_table(recording: Recording) -> tuple[dict, list]:
    """Return per (cabin, reason) counts per frame, and rows (cabin, reason, key, ticks, times)."""
    frames = recording.frames
    # Every absence a pack reports: listed, or counted in a glob's summary (a row per glob).
    absent = [{cabin: pack.absent_counts() for cabin, pack in f.packs.items()} for f in frames]
    pairs = sorted({(cabin, reason) for packs in absent for cabin, pack in packs.items()
                    for reason in pack})
    counts = {pair: np.array([packs[pair[0]][pair[1]] if pair[0] in packs else 0
                              for packs in absent]) for pair in pairs}
    spans: dict[tuple[str, str, str], list[FrameRecord]] = {}
    for frame in frames:
        for cabin, pack in frame.packs.items():
            for missing in pack.missing:
                spans.setdefault((cabin, missing.reason, missing.key), []).append(frame)
            for summary in pack.summaries:
                spans.setdefault((cabin, summary.reason, f'{summary.pattern} (counted)'),
                                 []).append(frame)
    rows = [(cabin, reason, key, describe_ticks([f.tick for f in seen]),
             f'{seen[0].stamp:.1f}-{seen[-1].stamp:.1f} s')
            for (cabin, reason, key), seen in sorted(spans.items())]
    return counts, rows


def report_data(recording: Recording, story: Story | None = None, *,
                map_tick: int | None = None, cabin: str | None = None,
                capacity: int | None = None, setup: dict[str, str] | None = None) -> ReportData:
    """Return what the report shows of `recording` (RecordingError: unknown tick or cabin)."""
    story = story or Story()
    if cabin is not None:
        recording.check_cabin(cabin)
    frames = recording.frames
    stamps = np.array([f.stamp for f in frames], dtype=float)
    origin = stamps[0] if len(stamps) and stamps[0] > WALL_CLOCK_STAMPS else 0.0
    marked = marked_events(recording, story)
    outcome, delivered = outcome_text(recording, story, marked)
    evicted = Counter(e.key for e in recording.evictions)
    importance = {e.key: e.importance for e in recording.evictions}
    top = [key for key, _ in evicted.most_common(TOP_KEYS)]
    eviction_stamps = {key: np.array([e.stamp for e in recording.evictions if e.key == key])
                       for key in top}
    rest = [e.stamp for e in recording.evictions if e.key not in top]
    if rest:
        eviction_stamps['other'] = np.array(rest)
    counts, rows = missing_table(recording)
    alarms, alarm_source = capacity_alarms(recording, capacity)
    spans = [] if alarms is None else [
        (recording.frame(first).stamp, recording.frame(last).stamp)
        for first, last in tick_ranges([t for t, on in zip(recording.ticks, alarms) if on])]
    given = {**story.setup, **(setup or {})}
    span = f'{stamps[0]:.1f}-{stamps[-1]:.1f} s' if len(stamps) else 'none'
    setup_rows = [('seed', given.get('seed', 'not recorded')),
                  ('drops', given.get('drops') or injected_drops(recording)),
                  ('cabins', ', '.join(recording.cabins) or 'none'),
                  ('ticks', f'{len(frames)} ({describe_ticks(recording.ticks)}), '
                            f'sim time {span}'),
                  *([('restarts', ', '.join(f'at {frame.stamp:.1f} s (tick {frame.tick} of '
                                            f'the new start)' for frame in recording.restarts))]
                    if recording.restarts else []),
                  ('bag', str(recording.path))]
    data = ReportData(
        title=f'working memory run {recording.path.name}', outcome=outcome, delivered=delivered,
        setup=setup_rows, time_origin=origin, times=stamps,
        served=np.array([len({i.key for p in f.packs.values() for i in p.items})
                         for f in frames]),
        working_set=working_set(recording), capacity_hint=capacity,
        eviction_stamps=eviction_stamps,
        evicted=[(key, count, importance[key]) for key, count in evicted.most_common(10)],
        missing=counts, missing_rows=rows, marked=marked, alarm_spans=spans,
        alarm_source=alarm_source,
        scene=map_scene(recording, story, frame_at(recording, map_tick, marked), cabin),
        restarts=[frame.stamp for frame in recording.restarts])
    for topic, what in (('/odom', 'the true robot path'), ('/log', 'alarms and failures'),
                        ('/sim_world/status', 'the outcome'), ('/map', 'the whole map')):
        if topic not in story.topics:
            data.notes.append(f'{topic} not in the bag: {what} taken from the frames or not shown')
    return data


# -- drawing ---------------------------------------------------------------------


def mark_events(ax, data: ReportData, labels: bool) -> None:
    """Draw alarms (red), failures (orange) and restarts (purple) as vertical lines.

    Capacity alarms are shaded.
    """
    for first, last in data.alarm_spans:
        ax.axvspan(data.t(first), data.t(last), color='tab:red', alpha=0.12)
    for stamp in data.restarts:
        ax.axvline(data.t(stamp), color='tab:purple', linewidth=2.0, linestyle=':')
        if labels:
            ax.annotate('working memory restarted', (data.t(stamp), 1.0),
                        xycoords=('data', 'axes fraction'), xytext=(3, -24),
                        textcoords='offset points', color='tab:purple', fontsize='small',
                        fontweight='bold')
    for event in data.marked:
        color = 'tab:red' if event.kind == 'ALARM' else 'tab:orange'
        ax.axvline(data.t(event.stamp), color=color, linewidth=1.5,
                   linestyle='-' if event.kind == 'ALARM' else '--')
        if labels:
            ax.annotate(f'{event.kind} {event.key}', (data.t(event.stamp), 1.0),
                        xycoords=('data', 'axes fraction'), xytext=(3, -12),
                        textcoords='offset points', color=color, fontsize='small',
                        fontweight='bold')


def draw_working_set(ax, data: ReportData) -> None:
    """Draw the node's working set against its capacity, and the keys served."""
    rows = data.working_set
    if len(rows):
        ax.plot(data.t(rows[:, 0]), rows[:, 1], drawstyle='steps-post', color='black',
                linewidth=2, label='working set (items, /diagnostics)')
        ax.plot(data.t(rows[:, 0]), rows[:, 2], drawstyle='steps-post', color='tab:red',
                linestyle=':', linewidth=2, label='capacity')
    elif data.capacity_hint is not None:
        ax.axhline(data.capacity_hint, color='tab:red', linestyle=':', linewidth=2,
                   label='capacity (given)')
    ax.plot(data.t(data.times), data.served, drawstyle='steps-post', color='tab:gray',
            linewidth=1, label='distinct keys served to the cabins')
    ax.set_ylabel('items')
    top = max([*rows[:, 1:].ravel(), *data.served, data.capacity_hint or 0, 1])
    ax.set_ylim(0, top * 1.2)  # the capacity line clear of the frame
    ax.legend(loc='lower right', fontsize='small')
    ax.set_title('working set against capacity', loc='left', fontsize='medium')


def draw_evictions(ax, data: ReportData) -> None:
    """Draw evictions per second, stacked by key (the top keys by name)."""
    if not data.eviction_stamps or not len(data.times):
        ax.text(0.5, 0.5, 'no evictions', ha='center', va='center', transform=ax.transAxes)
    else:
        start = np.floor(data.t(data.times[0]))
        edges = np.arange(start, np.ceil(data.t(data.times[-1])) + 1.0, 1.0)
        stacks = [np.histogram(data.t(stamps), bins=edges)[0]
                  for stamps in data.eviction_stamps.values()]
        ax.stackplot(edges[:-1], *stacks, step='post', labels=list(data.eviction_stamps),
                     alpha=0.85)
        ax.legend(loc='upper left', fontsize='small', ncol=3)
    ax.set_ylabel('evictions / s')
    ax.set_title('evictions per second (top keys)', loc='left', fontsize='medium')


def draw_missing(ax, data: ReportData) -> None:
    """Draw missing required items per cabin and reason."""
    for (cabin, reason), counts in data.missing.items():
        ax.plot(data.t(data.times), counts, drawstyle='steps-post', linewidth=2,
                label=f'{cabin}: {reason}')
    if data.missing:
        ax.legend(loc='upper left', fontsize='small', ncol=2)
    else:
        ax.text(0.5, 0.5, 'no required item missing', ha='center', va='center',
                transform=ax.transAxes)
    ax.set_ylabel('missing items')
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    ax.set_title('missing items per cabin and reason', loc='left', fontsize='medium')


def draw_timeline(axes, data: ReportData) -> None:
    """Draw the three timelines on a shared sim-time axis, alarms and failures marked."""
    draw_working_set(axes[0], data)
    draw_evictions(axes[1], data)
    draw_missing(axes[2], data)
    for index, ax in enumerate(axes):
        mark_events(ax, data, labels=index == 0)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel('sim time [s]' if not data.time_origin else 'time since first tick [s]')


def draw_map(ax, scene: MapScene | None) -> None:
    """Draw the map at the scene's tick with path, route, zones, goals, doors and windows."""
    if scene is None:
        ax.text(0.5, 0.5, 'no frame recorded', ha='center', va='center', transform=ax.transAxes)
        ax.set_axis_off()
        return
    background = scene.world or max(scene.windows.values(), key=lambda w: w.cells.size,
                                    default=None)
    if background is not None:
        ax.imshow(np.ma.masked_less(background.cells.astype(float), 0.0), origin='lower',
                  extent=background.extent, cmap=MAP_COLORS, vmin=0, vmax=100,
                  interpolation='nearest')
    for (cabin, window), color in zip(scene.windows.items(), CABIN_COLORS):
        x0, x1, y0, y1 = window.extent
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, edgecolor=color,
                               linewidth=2, linestyle='--', label=f'{cabin} window'))
    for key, polygon in scene.zones.items():
        ax.add_patch(Polygon(polygon, closed=True, facecolor='tab:red', alpha=0.3,
                             edgecolor='tab:red', linewidth=2, label=key))
    if len(scene.path):
        ax.plot(scene.path[:, 0], scene.path[:, 1], color='tab:cyan', linewidth=2,
                label='robot path')
    if scene.route:
        route = np.array(scene.route)
        ax.plot(route[:, 0], route[:, 1], color='tab:green', linewidth=2, linestyle='-.',
                marker='.', label=f'route at tick {scene.tick}')
    for key, (x, y) in scene.goals.items():
        ax.plot(x, y, marker='*', markersize=18, color='gold', markeredgecolor='black',
                linestyle='none', label=key)
    for key, (x, y, state) in scene.doors.items():
        ax.plot(x, y, marker='s', markersize=12, linestyle='none', markeredgecolor='black',
                color='tab:orange' if state != 'open' else 'tab:olive',
                label=f'{key} ({state})')
    if scene.pose is not None:
        ax.plot(*scene.pose, marker='o', markersize=11, color='tab:blue',
                markeredgecolor='white', linestyle='none', label=f'robot at tick {scene.tick}')
    ax.set_aspect('equal')
    ax.set_title(f'map at tick {scene.tick} (t={scene.stamp:.1f} s)', loc='left',
                 fontsize='medium')
    ax.set_xlabel('x [m]')
    ax.set_ylabel('y [m]')
    ax.legend(loc='upper center', bbox_to_anchor=(0.5, -0.1), ncol=4, fontsize='small')


def png(figure: Figure) -> bytes:
    """Return the figure as PNG bytes."""
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


def timeline_png(data: ReportData) -> bytes:
    """Return the three timelines as one PNG."""
    figure = Figure(figsize=(11, 8), layout='constrained', dpi=90)
    first = figure.add_subplot(3, 1, 1)
    axes = [first] + [figure.add_subplot(3, 1, row, sharex=first) for row in (2, 3)]
    draw_timeline(axes, data)
    return png(figure)


def map_png(data: ReportData) -> bytes:
    """Return the map as one PNG."""
    figure = Figure(figsize=(11, 7.5), layout='constrained', dpi=90)
    draw_map(figure.add_subplot(1, 1, 1), data.scene)
    return png(figure)


def report_png(data: ReportData) -> bytes:
    """Return timelines and map side by side, the outcome as the title: one PNG."""
    figure = Figure(figsize=(18, 9), layout='constrained', dpi=80)
    figure.suptitle(data.outcome, fontsize='large', fontweight='bold',
                    color='darkgreen' if data.delivered else 'darkred')
    grid = figure.add_gridspec(3, 2, width_ratios=(3, 2))
    first = figure.add_subplot(grid[0, 0])
    axes = [first] + [figure.add_subplot(grid[row, 0], sharex=first) for row in (1, 2)]
    draw_timeline(axes, data)
    draw_map(figure.add_subplot(grid[:, 1]), data.scene)
    return png(figure)


# -- the page --------------------------------------------------------------------


def table(element_id: str, caption: str, header: tuple[str, ...], rows, empty: str) -> str:
    """Return an HTML table with an id (or a line saying `empty`)."""
    head = ''.join(f'<th>{html.escape(h)}</th>' for h in header)
    body = '\n'.join('<tr>' + ''.join(f'<td>{html.escape(str(cell))}</td>' for cell in row)
                     + '</tr>' for row in rows)
    if not body:
        return f'<section id="{element_id}"><h2>{html.escape(caption)}</h2><p>{empty}</p></section>'
    return (f'<section id="{element_id}"><h2>{html.escape(caption)}</h2>'
            f'<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></section>')


def map_legend(scene: MapScene | None) -> list[str]:
    """Return one line per thing the map shows (or says it cannot)."""
    if scene is None:
        return ['no frame recorded']
    windows = ', '.join(f'{cabin} {w.cells.shape[1]}x{w.cells.shape[0]} cells'
                        for cabin, w in scene.windows.items()) or 'none'
    door = ', '.join(f'{key} {state} at ({x:.1f}, {y:.1f})'
                     for key, (x, y, state) in scene.doors.items()) or 'none in the packs'
    return [f'robot path: {len(scene.path)} poses ({scene.path_source})',
            'robot at tick: ' + ('unknown' if scene.pose is None else
                                 f'({scene.pose[0]:.2f}, {scene.pose[1]:.2f})'),
            f'route: {len(scene.route)} waypoints' if scene.route else 'route: none',
            'zones: ' + (', '.join(scene.zones) or 'none in the packs'),
            'goal: ' + (', '.join(f'{k} at ({x:.1f}, {y:.1f})'
                                  for k, (x, y) in scene.goals.items()) or 'none'),
            f'door: {door}', f'cabin windows: {windows}',
            'background: ' + ('/map' if scene.world is not None else 'largest cabin window')]


def image(element_id: str, data: bytes, alt: str) -> str:
    """Return an inline PNG."""
    encoded = base64.b64encode(data).decode('ascii')
    return (f'<img id="{element_id}" alt="{html.escape(alt)}" '
            f'src="data:image/png;base64,{encoded}">')


STYLE = """body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1100px;color:#222}
h1{font-size:1.4em;margin:.2em 0} h2{font-size:1.1em;margin:1.2em 0 .3em}
#outcome{font-size:1.3em;font-weight:bold;padding:.6em .8em;border-radius:6px}
.delivered{background:#e3f5e1;color:#14501a;border:2px solid #2e8b3a}
.not-delivered{background:#fde7e7;color:#7a1010;border:2px solid #c22}
.unknown{background:#eee;border:2px solid #888}
table{border-collapse:collapse;font-size:.92em} td,th{padding:.2em .7em;text-align:left;
border-bottom:1px solid #ddd;vertical-align:top} img{max-width:100%;display:block}
.ALARM td:nth-child(2){color:#c00;font-weight:bold} .FAILURE td:nth-child(2){color:#c60}
ul.legend{columns:2;font-size:.92em} .note{color:#666;font-size:.85em}"""


def report_html(data: ReportData) -> str:
    """Return the self-contained page."""
    verdict = {True: 'delivered', False: 'not-delivered', None: 'unknown'}[data.delivered]
    setup = ''.join(f'<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>'
                    for k, v in data.setup)
    events = '\n'.join(
        f'<tr class="{m.kind}"><td>{m.stamp:.1f} s</td><td>{m.kind}</td>'
        f'<td>{html.escape(m.source)}</td><td>{html.escape(m.key)}</td>'
        f'<td>{html.escape(alarm_reason(m) or m.detail)}</td></tr>' for m in data.marked)
    events_html = (f'<table><thead><tr><th>t</th><th>kind</th><th>source</th><th>key</th>'
                   f'<th>detail</th></tr></thead><tbody>{events}</tbody></table>' if events
                   else '<p>no alarm, no failure</p>')
    legend = ''.join(f'<li>{html.escape(line)}</li>' for line in map_legend(data.scene))
    notes = ''.join(f'<p class="note">{html.escape(note)}</p>' for note in data.notes)
    alarm_note = f'capacity alarm: {data.alarm_source}'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.title)}</title>
<style>{STYLE}</style></head>
<body><h1>{html.escape(data.title)}</h1>
<div id="outcome" class="{verdict}">{html.escape(data.outcome)}</div>
<section id="setup"><h2>setup</h2><table>{setup}</table></section>
<section id="alarms"><h2>alarms and failures</h2><div id="events">{events_html}</div></section>
<section><h2>timeline</h2>
{image("timeline", timeline_png(data), "working set against capacity, evictions per second "
       "with the top keys, missing items per cabin and reason; alarms and failures marked")}
<p class="note">red lines: ALARM, orange dashed: FAILURE, red shading: {html.escape(alarm_note)}
</p></section>
<section><h2>map</h2>
{image("map", map_png(data), "map with robot path, route, zones, goal, door and cabin windows")}
<ul class="legend" id="map-legend">{legend}</ul></section>
{table("evictions", "most evicted keys", ("key", "evictions", "importance"),
       [(k, n, f"{imp:.2f}") for k, n, imp in data.evicted], "no evictions")}
{table("missing", "missing items per cabin and reason",
       ("cabin", "reason", "key", "ticks", "sim time"), data.missing_rows,
       "no required item missing")}
{notes}
</body></html>
"""


def write_report(recording: Recording, path: str | Path, *, map_tick: int | None = None,
                 cabin: str | None = None, capacity: int | None = None,
                 setup: dict[str, str] | None = None, story: Story | None = None) -> Path:
    """Write the report to `path` (.png or .html) and return the path.

    `story` defaults to what the recording's bag holds besides frames (`load_story`).
    """
    path = Path(path)
    if path.suffix.lower() not in REPORT_SUFFIXES:
        raise ValueError(f'report path {path}: must end in {" or ".join(REPORT_SUFFIXES)}')
    if story is None:
        try:
            story = load_story(recording.path)
        except BagError:
            story = Story()  # a recording not read from a bag
    data = report_data(recording, story, map_tick=map_tick, cabin=cabin, capacity=capacity,
                       setup=setup)
    if path.suffix.lower() == '.png':
        path.write_bytes(report_png(data))
    else:
        path.write_text(report_html(data))
    return path
