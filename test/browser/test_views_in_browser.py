"""The demo's views in a real browser: Foxglove Studio 1.48 and the HTML report in Chromium.

The demo's bag and config/foxglove/working_memory.json open in Foxglove Studio's prebuilt web
app (npm @foxglove/studio-base), served on 127.0.0.1 by a server that answers Range requests;
tools/browser/views.js drives Debian's headless Chromium with puppeteer-core and writes what it
saw. The checks are what a person would look at: the Problems tab, the 3D view, the plots, and
the report's outcome and figures. WM_VIEWS_OUT=<folder> keeps the screenshots there.
"""

import csv
import json
import os
import signal
import subprocess
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from working_memory.tools.story import load_story

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / 'tools' / 'browser'
LAYOUT = ROOT / 'config' / 'foxglove' / 'working_memory.json'
AT_S = 25.0  # the chosen time of the run [s]: past the door, on the way to the dock
VIEWS_LIMIT_S = 150.0  # bounds a hung browser, never a timing assertion
MARGIN_PX = 10  # the walls keep this far from the 3D view's edges
ROBOT_MIN_PX = 20  # the robot's arrow covers about a hundred pixels at this zoom
ROBOT_TOLERANCE_M = 0.75  # its arrow's centre lies ahead of the pose, up to half its length


def views(modules: Path, command: str, out: Path, **args) -> dict:
    """Return what tools/browser/views.js saw (`command`: foxglove or report)."""
    # A session of its own: a hung run is ended with its browser, not only node.
    process = subprocess.Popen(
        ['node', str(TOOLS / 'views.js'), command, json.dumps({**args, 'out': str(out)})],
        env={**os.environ, 'NODE_PATH': str(modules)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=VIEWS_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f'views.js {command} still running after {VIEWS_LIMIT_S} s:\n{stderr}')
    assert process.returncode == 0, f'views.js {command} failed:\n{stderr}'
    return json.loads(stdout)


def out_dir(tmp_path_factory, name: str) -> Path:
    keep = os.environ.get('WM_VIEWS_OUT')
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope='module')
def layout() -> dict:
    return json.loads(LAYOUT.read_text())


@pytest.fixture(scope='module')
def foxglove(demo_run, browser_tools, range_server, tmp_path_factory):
    """Return what Foxglove Studio showed of the demo's bag at AT_S, and the server's log."""
    bag, _ = demo_run
    (mcap,) = bag.glob('*.mcap')
    mounts = {'/app/': browser_tools / '@foxglove' / 'studio-base' / 'assets',
              '/react/': browser_tools / 'react' / 'umd',
              '/react-dom/': browser_tools / 'react-dom' / 'umd',
              '/boot/': TOOLS / 'foxglove', '/bag/': bag}
    with range_server.RangeServer(mounts) as server:
        seconds, fraction = divmod(AT_S, 1)  # the bag's clock is sim time, from 0
        at = f'1970-01-01T00:00:{int(seconds):02d}.{round(fraction * 1e9):09d}Z'
        seen = views(browser_tools, 'foxglove', out_dir(tmp_path_factory, 'foxglove'),
                     base=server.url, bag=f'{server.url}/bag/{mcap.name}', layout=str(LAYOUT),
                     time=at, ready='ContextFrame @ ')
        seen['requests'] = list(server.requests)
    return seen


def test_foxglove_opens_the_demo_bag_and_layout_with_no_problem(foxglove, layout):
    assert foxglove['errors'] == [] and foxglove['console'] == [], foxglove
    assert foxglove['problems'] == {'tab': 'Problems', 'list': 'No problems found'}
    assert set(foxglove['panels']) == set(layout['configById'])
    # The app read the bag in pieces, as it does a remote file.
    assert any('/bag/' in line and status == 206 for line, status in foxglove['requests'])
    # The raw-message panel shows the frame of the chosen time: the app went there.
    raw = foxglove['panels']['RawMessages!frame']['text']
    assert 'working_memory/msg/ContextFrame @ ' in raw, raw
    received = float(raw.split(' @ ')[1].split()[0])
    assert AT_S - 0.5 < received <= AT_S


def test_foxglove_3d_view_holds_the_whole_world_and_the_robot_where_it_is(foxglove, pixels,
                                                                          demo_run):
    shot = foxglove['panels']['3D!working_memory']['screenshot']
    rgb = (matplotlib.image.imread(shot)[..., :3] * 255).round().astype(np.uint8)
    story = load_story(demo_run[0])
    x_min, x_max, y_min, y_max = story.world_map.extent
    width_m, height_m = x_max - x_min, y_max - y_min
    walls = pixels.wall_box(rgb)
    assert walls is not None, f'no map walls in {shot}'
    # All four outer walls inside the view, x to the right: the map's proportions, upright.
    assert pixels.inside(walls, rgb.shape, MARGIN_PX), (walls, rgb.shape)
    assert walls.width / walls.height == pytest.approx(width_m / height_m, rel=0.08), walls
    assert walls.width > 0.4 * rgb.shape[1], walls
    robot = pixels.robot_centre(rgb, ROBOT_MIN_PX)
    assert robot is not None, f'no robot marker in {shot}'
    assert walls.holds(*robot)
    metres_per_px = width_m / walls.width
    x = x_min + (robot[0] - walls.left) * metres_per_px
    y = y_min + (walls.bottom - robot[1]) * metres_per_px
    t, true_x, true_y = story.path[np.searchsorted(story.path[:, 0], AT_S) - 1]
    assert np.hypot(x - true_x, y - true_y) < ROBOT_TOLERANCE_M, ((x, y), (t, true_x, true_y))


def test_every_foxglove_plot_has_data_for_each_of_its_paths(foxglove, layout):
    plots = {panel: config for panel, config in layout['configById'].items()
             if panel.startswith('Plot!')}
    assert plots
    for panel, config in plots.items():
        table = foxglove['panels'][panel].get('csv')
        assert table, f'{panel}: no data downloaded'
        with open(table, newline='') as file:
            rows = list(csv.DictReader(file))
        for path in (p['value'] for p in config['paths']):
            values = [float(row['value']) for row in rows if row['topic'] == path]
            assert values and all(np.isfinite(values)), f'{panel}: no data for {path}'


def test_the_report_renders_in_chromium_with_its_outcome_and_figures(demo_run, browser_tools,
                                                                     tmp_path_factory):
    _, report = demo_run
    seen = views(browser_tools, 'report', out_dir(tmp_path_factory, 'report'),
                 url=report.resolve().as_uri())
    assert seen['errors'] == [] and seen['console'] == [], seen
    assert seen['outcome']['visible'], seen['outcome']
    assert seen['outcome']['text'].startswith('DELIVERED at t='), seen['outcome']
    figures = {image['id']: image for image in seen['images']}
    assert set(figures) == {'timeline', 'map'}
    for image in figures.values():
        assert image['complete'] and image['width'] > 100 and image['height'] > 100, image
