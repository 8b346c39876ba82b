"""The fleet report: faults per robot over its runs and the top changes, as one HTML page."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from working_memory.tools.report import STYLE, image, png, table

if TYPE_CHECKING:
    from working_memory.tools.fleet import Fleet

TOP = 10


def faults_png(fleet: Fleet) -> bytes:
    """Return wrong decisions per run, one line per robot, runs in recording order."""
    figure = Figure(figsize=(10, 4), layout='constrained', dpi=90)
    axes = figure.add_subplot(1, 1, 1)
    for robot in sorted({bag.robot for bag in fleet.bags if bag.ok}):
        runs = sorted((bag for bag in fleet.bags if bag.ok and bag.robot == robot),
                      key=lambda bag: (bag.started_ns, bag.path))
        axes.plot(range(1, len(runs) + 1), [bag.wrong_decisions for bag in runs], marker='o',
                  label=robot)
    axes.set_xlabel('run of the robot (recording order)')
    axes.set_ylabel('wrong decisions')
    axes.set_title('faults per robot over its runs', loc='left', fontsize='medium')
    axes.legend(fontsize='small')
    return png(figure)


def changes_png(fleet: Fleet) -> bytes:
    """Return the top changes as bars: wrong decisions fixed, runs with added pressure."""
    top = fleet.changes[:TOP]
    figure = Figure(figsize=(10, 1.2 + 0.45 * max(len(top), 1)), layout='constrained', dpi=90)
    axes = figure.add_subplot(1, 1, 1)
    labels = [ranked.change.text() for ranked in top][::-1]
    axes.barh(labels, [ranked.fixed for ranked in top][::-1], color='tab:green',
              label='wrong decisions fixed')
    axes.barh(labels, [len(ranked.pressure) for ranked in top][::-1], color='tab:red',
              alpha=0.6, label='runs with added pressure')
    axes.set_title('the top changes and what they fix (checked by replay)', loc='left',
                   fontsize='medium')
    axes.legend(fontsize='small')
    return png(figure)


def write(fleet: Fleet, path: Path) -> Path:
    """Write the report page to `path`; return it."""
    bags = [(bag.path, bag.robot, 'yes' if bag.ok else 'no', bag.wrong_decisions,
             ', '.join(bag.symptoms) or '-', bag.error or '-') for bag in fleet.bags]
    changes = [(rank, ranked.change.text(), ranked.fixed, len(ranked.runs),
                ', '.join(ranked.robots), len(ranked.pressure))
               for rank, ranked in enumerate(fleet.changes, 1)]
    page = '\n'.join([
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        f'<title>fleet report</title><style>{STYLE}</style></head><body>',
        f'<h1>Fleet: {len(fleet.bags)} bags of {len({b.robot for b in fleet.bags})} robots '
        f'({html.escape(fleet.engine)})</h1>',
        image('faults', faults_png(fleet), 'wrong decisions per robot over its runs'),
        image('top-changes', changes_png(fleet), 'the top changes and what they fix'),
        table('changes', 'Changes, ranked by the wrong decisions they fix',
              ('rank', 'change', 'fixed', 'runs', 'robots', 'runs with added pressure'),
              changes, 'no manifest change fixed a wrong decision on replay'),
        table('bags', 'Bags', ('path', 'robot', 'read', 'wrong decisions', 'symptoms',
                               'why not read'), bags, 'no bag'),
        '</body></html>'])
    path.write_text(page, encoding='utf-8')
    return path
