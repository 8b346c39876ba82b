"""Real-browser fixtures: the tools of tools/browser, a demo run, and what is installed.

`tools/browser/install` (which `make test` runs) installs Debian's Chromium and the pinned npm
packages; without them, or without node, the browser tests skip with a one-line reason.
"""

import hashlib
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
import rclpy

from working_memory.demo.scenario import ScenarioOptions, run_scenario
from working_memory.tools.recording import load_recording
from working_memory.tools.report import write_report

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / 'tools' / 'browser'
CHROMIUM = Path(os.environ.get('CHROMIUM', '/usr/bin/chromium'))
WALL_LIMIT_S = 120.0
MIN_NODE_MAJOR = 18  # puppeteer-core 24's engines


def load_tool(name: str) -> ModuleType:
    """Return the module tools/browser/<name>.py (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location(f'browser_{name}', TOOLS / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='session')
def range_server() -> ModuleType:
    return load_tool('range_server')


@pytest.fixture(scope='session')
def pixels() -> ModuleType:
    return load_tool('pixels')


def node_modules() -> Path:
    """Return where tools/browser/install puts the npm packages (named by the lock's hash)."""
    digest = hashlib.sha256((TOOLS / 'package-lock.json').read_bytes()).hexdigest()[:12]
    default = Path.home() / '.cache' / 'working_memory' / f'browser-{digest}'
    return Path(os.environ.get('WM_BROWSER_DIR', default)) / 'node_modules'


def missing_browser_tools() -> str | None:
    """Return why the browser tests cannot run here, None when they can."""
    install = 'tools/browser/install (make test runs it)'
    if not os.access(CHROMIUM, os.X_OK):
        return f'no Chromium at {CHROMIUM}: {install} installs it from Debian as root'
    node = shutil.which('node')
    if node is None:
        return 'no node on PATH (Node.js 18 or later drives Chromium with puppeteer-core)'
    version = subprocess.run([node, '--version'], capture_output=True, text=True).stdout
    if int(version.lstrip('v').split('.')[0] or 0) < MIN_NODE_MAJOR:
        return f'node {version.strip()} is older than {MIN_NODE_MAJOR}'
    modules = node_modules()
    for package in ('puppeteer-core', '@foxglove/studio-base', 'react', 'react-dom'):
        if not (modules / package / 'package.json').is_file():
            return f'npm package {package} not in {modules}: run {install}'
    return None


@pytest.fixture(scope='session')
def browser_tools() -> Path:
    """Return the npm packages' node_modules; skip the test when a browser tool is missing."""
    reason = missing_browser_tools()
    if reason is not None:
        pytest.skip(reason)
    return node_modules()


@pytest.fixture(scope='module')
def demo_run(browser_tools, tmp_path_factory):
    """Return (bag, report) of one baseline demo run, the bag with its views recorded."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(os.environ['ROS_DOMAIN_ID']))
    try:
        bag = tmp_path_factory.mktemp('runs') / 'delivery_baseline'
        outcome = run_scenario(ScenarioOptions(bag_path=bag, wall_time_limit_s=WALL_LIMIT_S),
                               context=context)
    finally:
        context.try_shutdown()
    assert outcome.delivered, outcome
    report = write_report(load_recording(bag), bag.parent / f'{bag.name}.html')
    return bag, report
