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


def fleet_command(*args, cwd=None):
    """Run `wm-inspect fleet ARGS` as a user does (a process of its own); return it done."""
    return subprocess.run([sys.executable, '-m', 'working_memory.tools.inspect', 'fleet',
                           '--quiet', *map(str, args)], capture_output=True, text=True,
                          timeout=RUN_LIMIT_S, cwd=cwd)


@pytest.fixture(scope='module')
def local(fleet_folder, tmp_path_factory):
    """Return (the JSON, the printout, the folder of outputs) of the fleet on 2 local workers."""
    out = tmp_path_factory.mktemp('local')
    done = fleet_command(fleet_folder, '--workers', 2, '--json', out / 'fleet.json',
                         '--report', out / 'fleet.html', '--out', out / 'patches')
    assert done.returncode == inspect.FINDS, done.stderr[-3000:]
    assert 'Traceback' not in done.stderr
    return json.loads((out / 'fleet.json').read_text()), done.stdout, out


def changes_by_text(data):
    sign = {'add': '+=', 'remove': '-=', 'set': '='}
    return {f'{c["cabin"]} {c["field"]} {sign[c["op"]]} {c["value"]}': c for c in data['changes']}


def test_every_bag_is_found_with_its_robot_and_the_unreadable_ones_say_why(local, fleet_folder):
    data, printout, _ = local
    bags = {bag['path'].removeprefix(str(fleet_folder) + '/'): bag for bag in data['bags']}
    assert list(bags) == ['alpha/run1', 'beta/run1', 'beta/run2', 'elsewhere/run1',
                          'gamma/cut', 'gamma/notes']
    assert {name: bag['robot'] for name, bag in bags.items() if bag['ok']} == {
        'alpha/run1': 'alpha', 'beta/run1': 'beta', 'beta/run2': 'beta',
        'elsewhere/run1': 'delta'}   # the namespace /delta, not the folder
    assert bags['gamma/cut']['error'] == ('no metadata.yaml: the recording did not close '
                                          '(cut off?)')
    assert not bags['gamma/notes']['ok'] and 'BagError' in bags['gamma/notes']['error']
    assert bags['alpha/run1']['wrong_decisions'] == 0
    assert bags['elsewhere/run1']['wrong_decisions'] >= 1
    assert 'bags not read (2), skipped:' in printout


def test_changes_are_ranked_by_the_wrong_decisions_they_fix_on_replay(local, fleet_folder):
    data, printout, _ = local
    ranked = changes_by_text(data)
    doors = ranked['executor board_keys += door:*']
    assert doors['robots'] == ['beta'] and doors['fixed'] >= 1 and not doors['pressure']
    assert doors['runs'] == [str(fleet_folder / 'beta' / 'run1')]
    assert ranked['planner board_keys += safety:*']['robots'] == ['delta']
    # The injected drop's answer is to stop it: the drop entries go.
    assert ranked['planner drop -= safety:*']['robots'] == ['beta']
    fixed = [change['fixed'] for change in data['changes']]
    assert fixed == sorted(fixed, reverse=True)
    assert '1. ' in printout and 'checked by replay' in printout


def test_the_json_is_the_documented_contract_and_the_report_shows_the_changes(local):
    data, _, out = local
    assert list(data) == ['engine', 'bags', 'changes'] and data['engine'] == 'local'
    assert all(list(bag) == ['path', 'robot', 'ok', 'error', 'wrong_decisions']
               for bag in data['bags'])
    assert all(list(change) == ['cabin', 'field', 'op', 'value', 'fixed', 'runs', 'robots',
                                'pressure'] for change in data['changes'])
    page = (out / 'fleet.html').read_text()
    assert 'id="faults"' in page and 'id="top-changes"' in page
    assert 'executor board_keys += door:*' in page


def test_the_combined_patch_loads_into_the_node_and_takes_effect(local, context):
    from working_memory.demo.scenario import default_params_file
    from working_memory.ros.node import WorkingMemoryNode
    _, _, out = local
    written = {path.stem: path for path in (out / 'patches').glob('*.yaml')}
    assert {'delta', 'beta'} <= set(written)
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
        on_ray = fleet.run_fleet([fleet_folder], fleet.RAY).as_json()
    finally:
        ray.shutdown()
    data, _, _ = local
    assert on_ray['engine'] == 'ray'
    assert on_ray['changes'] == data['changes'] and on_ray['bags'] == data['bags']


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
        done = fleet_command(fleet_folder, '--engine', 'ray', '--ray-address',
                             f'127.0.0.1:{port}', '--json', out)
        assert done.returncode == inspect.FINDS, done.stderr[-2000:]
        data = json.loads(out.read_text())
        assert data['engine'] == 'ray' and data['changes'] == local[0]['changes']
    finally:
        subprocess.run([ray_cli, 'stop', '--force'], capture_output=True, timeout=RUN_LIMIT_S)
        shutil.rmtree(temp, ignore_errors=True)
