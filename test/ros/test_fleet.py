"""wm-inspect fleet on a small fleet of real recorded runs: ranked changes checked by replay.

The fleet: robot alpha's baseline run, robot beta's runs with an executor manifest without
doors and with the planner's constraints dropped, robot delta's namespaced run whose
planner manifest lacks the safety constraints (its folder is named otherwise: the
namespace names the robot), a bag cut off before it closed and a folder that is no bag.
"""

import json
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
from rclpy.lifecycle import TransitionCallbackReturn

from working_memory.tools import fleet, inspect

RUN_LIMIT_S = 600.0   # bounds a hung command, never a timing assertion


@pytest.fixture(scope='module')
def fleet_folder(recorded_run, tmp_path_factory):
    root = tmp_path_factory.mktemp('fleet')
    for name, place in (('baseline', 'alpha/run1'), ('no_doors', 'beta/run1'),
                        ('no_constraints', 'beta/run2'), ('delta_no_safety', 'elsewhere/run1')):
        _, bag = recorded_run(name)
        shutil.copytree(bag, root / place)
    cut = root / 'gamma' / 'cut'
    cut.mkdir(parents=True)
    mcap = next((root / 'alpha' / 'run1').glob('*.mcap'))
    cut.joinpath('cut_0.mcap').write_bytes(mcap.read_bytes()[:20_000])   # power lost
    (root / 'gamma' / 'notes').mkdir()
    (root / 'gamma' / 'notes' / 'metadata.yaml').write_text('just: notes\n')
    return root


@pytest.fixture(scope='module')
def local(fleet_folder):
    return fleet.run_fleet([fleet_folder], fleet.LOCAL, workers=2)


def test_every_bag_is_found_with_its_robot_and_the_unreadable_ones_say_why(local, fleet_folder):
    bags = {bag.path.removeprefix(str(fleet_folder) + '/'): bag for bag in local.bags}
    assert sorted(bags) == ['alpha/run1', 'beta/run1', 'beta/run2', 'elsewhere/run1',
                            'gamma/cut', 'gamma/notes']
    assert {name: bag.robot for name, bag in bags.items() if bag.ok} == {
        'alpha/run1': 'alpha', 'beta/run1': 'beta', 'beta/run2': 'beta',
        'elsewhere/run1': 'delta'}   # the namespace /delta, not the folder
    assert bags['gamma/cut'].error == 'no metadata.yaml: the recording did not close (cut off?)'
    assert not bags['gamma/notes'].ok and 'BagError' in bags['gamma/notes'].error
    assert bags['alpha/run1'].wrong_decisions == 0
    assert bags['elsewhere/run1'].wrong_decisions >= 1


def test_changes_are_ranked_by_the_wrong_decisions_they_fix_on_replay(local):
    ranked = {ranked.change.text(): ranked for ranked in local.changes}
    doors = ranked['executor board_keys += door:*']
    assert doors.robots == ('beta',) and doors.fixed >= 1 and not doors.pressure
    safety = ranked['planner board_keys += safety:*']
    assert safety.robots == ('delta',)
    # The injected drop's answer is to stop it: the drop entries go.
    assert 'planner drop -= safety:*' in ranked
    fixed = [r.fixed for r in local.changes]
    assert fixed == sorted(fixed, reverse=True)


def test_the_json_is_the_documented_contract(local, fleet_folder, tmp_path):
    out = tmp_path / 'fleet.json'
    code = inspect.main(['fleet', str(fleet_folder), '--workers', '2', '--quiet',
                         '--json', str(out), '--report', str(tmp_path / 'fleet.html'),
                         '--out', str(tmp_path / 'patches')])
    assert code == inspect.FINDS
    data = json.loads(out.read_text())
    assert list(data) == ['engine', 'bags', 'changes'] and data['engine'] == 'local'
    assert all(list(bag) == ['path', 'robot', 'ok', 'error', 'wrong_decisions']
               for bag in data['bags'])
    assert all(list(change) == ['cabin', 'field', 'op', 'value', 'fixed', 'runs', 'robots',
                                'pressure'] for change in data['changes'])
    assert data == local.as_json()
    page = (tmp_path / 'fleet.html').read_text()
    assert 'id="faults"' in page and 'id="top-changes"' in page
    assert 'executor board_keys += door:*' in page


def test_the_combined_patch_loads_into_the_node_and_takes_effect(local, context, tmp_path):
    from working_memory.demo.scenario import default_params_file
    from working_memory.ros.node import WorkingMemoryNode
    written = {path.stem: path for path in fleet.write_patches(local, tmp_path)}
    assert 'delta' in written and 'beta' in written
    node = WorkingMemoryNode(context=context, namespace='/delta', cli_args=[
        '--ros-args', '--params-file', str(default_params_file()),
        '--params-file', str(written['delta'])])
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert 'safety:*' in node.get_parameter('cabins.planner.board_keys').value
    finally:
        node.destroy_node()


def test_ray_gives_exactly_the_local_pools_changes(local, fleet_folder):
    pytest.importorskip('ray', reason='Ray comes from tools/requirements.txt')
    import ray
    try:
        on_ray = fleet.run_fleet([fleet_folder], fleet.RAY)
    finally:
        ray.shutdown()
    assert on_ray.engine == 'ray'
    assert on_ray.as_json()['changes'] == local.as_json()['changes']
    assert on_ray.as_json()['bags'] == local.as_json()['bags']


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_a_started_ray_cluster_runs_the_fleet_from_the_command_line(
        local, fleet_folder, tmp_path):
    pytest.importorskip('ray', reason='Ray comes from tools/requirements.txt')
    ray_cli = shutil.which('ray')
    port = free_port()
    # Short: Ray's sockets live in it, and a socket path has at most 107 characters.
    temp = tempfile.mkdtemp(prefix='ray', dir='/tmp')
    started = subprocess.run(
        [ray_cli, 'start', '--head', '--node-ip-address', '127.0.0.1', '--port', str(port),
         '--temp-dir', temp, '--include-dashboard', 'false', '--disable-usage-stats',
         '--num-cpus', '2'], capture_output=True, text=True, timeout=RUN_LIMIT_S)
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        out = tmp_path / 'fleet.json'
        done = subprocess.run(
            [sys.executable, '-c', 'import sys; from working_memory.tools.inspect import main; '
             'sys.exit(main())', 'fleet', str(fleet_folder), '--engine', 'ray',
             '--ray-address', f'127.0.0.1:{port}', '--quiet', '--json', str(out)],
            capture_output=True, text=True, timeout=RUN_LIMIT_S)
        assert done.returncode == inspect.FINDS, done.stderr[-2000:]
        data = json.loads(out.read_text())
        assert data['engine'] == 'ray' and data['changes'] == local.as_json()['changes']
    finally:
        subprocess.run([ray_cli, 'stop', '--force'], capture_output=True, timeout=RUN_LIMIT_S)
        shutil.rmtree(temp, ignore_errors=True)
