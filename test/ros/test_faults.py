"""From a fault to a better manifest, on recorded closed-loop runs of the delivery demo.

The runs (`recorded_run`, once per session) record the whole loop; everything after
the recording is offline: replay through the core, suggest, doctor.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from working_memory.tools import inspect
from working_memory.tools.bag import BagReader
from working_memory.tools.doctor import doctor
from working_memory.tools.recording import load_recording, load_run
from working_memory.tools.replay import agreement, recorded_settings
from working_memory.tools.suggest import suggest

WHOLE_LOOP = {'/board', '/log', '/map', '/odom', '/clock', '/parameter_events',
              '/resync/request', '/resync/answer',
              '/working_memory/frame', '/working_memory/evictions', '/diagnostics',
              '/working_memory/planner/window', '/working_memory/executor/window',
              '/planner/status', '/executor/status', '/monitor/status'}
# Recorded for the report, RViz2 and Foxglove.
VIEWS = {'/sim_world/status', '/working_memory/planner/map_window',
         '/working_memory/executor/map_window', '/working_memory/route', '/working_memory/markers'}
# The recorder's own: who published each recorded message (RecordedIds).
MESSAGE_IDS = {'/recorder_node/_message_ids'}


def suggestions(bag, cabin=None):
    run = load_run(bag)
    return suggest(run, recorded_settings(run), cabin)


@pytest.mark.parametrize('name', ['baseline', 'no_constraints', 'no_doors'])
def test_a_recorded_demo_run_replays_to_full_digest_agreement(recorded_run, name, capsys):
    _, bag = recorded_run(name)
    run = load_run(bag)
    result = agreement(run, recorded_settings(run))

    assert result.ticks == len(run.recording.frames) > 10
    assert result.mismatches == (), result.mismatches[:3]
    assert inspect.main(['replay', str(bag)]) == 0
    assert '(100.0 %)' in capsys.readouterr().out


def test_the_demo_bag_holds_the_whole_loop_and_reads_with_an_independent_mcap_reader(
        recorded_run):
    mcap_reader = pytest.importorskip('mcap.reader', reason='the mcap package is not installed')
    _, bag = recorded_run('baseline')
    (path,) = bag.glob('*.mcap')
    counts = {}
    with open(path, 'rb') as stream:
        reader = mcap_reader.make_reader(stream)
        channels = {channel.topic: channel for channel in reader.get_summary().channels.values()}
        for _, channel, _ in reader.iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
    assert set(channels) == WHOLE_LOOP | VIEWS | MESSAGE_IDS
    # /parameter_events carries only runtime changes: the configuration at configure is in
    # the bag's metadata (the node declares its parameters before the recorder hears them).
    assert all(counts.get(topic) for topic in WHOLE_LOOP - {'/parameter_events'}), counts
    assert channels['/working_memory/frame'].message_encoding == 'cdr'
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    offered = {t['topic_metadata']['name']: t['topic_metadata']['offered_qos_profiles']
               for t in metadata['topics_with_message_count']}
    # The map is latched (transient local) and reliable as map_server publishes it.
    (map_qos,) = offered['/map']
    assert (map_qos['durability'], map_qos['reliability']) == ('transient_local', 'reliable')


def test_the_demo_bag_joins_every_pack_with_its_window_sent_only_when_it_changed(recorded_run):
    _, bag = recorded_run('baseline')
    recording = load_recording(bag)
    assert recording.windows_missing == ()
    named = [(frame.tick, pack) for frame in recording.frames for pack in frame.packs.values()
             if pack.map_window_digest]
    assert named and all(pack.map_window.cells.size for _, pack in named)
    with BagReader(bag) as reader:
        reader.register(['/working_memory/planner/window', '/working_memory/frame'])
        windows = [m.msg for m in reader.messages(['/working_memory/planner/window'])]
    planner = [pack.map_window_digest for _, pack in named if pack.cabin == 'planner']
    # One window message per change of the planner's window, not one per tick.
    changes = 1 + sum(a != b for a, b in zip(planner, planner[1:]))
    assert len(windows) == changes < len(planner)
    assert [w.digest for w in windows] == [d for i, d in enumerate(planner)
                                           if i == 0 or d != planner[i - 1]]


def test_suggest_recovers_the_dropped_constraint_for_the_planner(recorded_run):
    _, bag = recorded_run('no_constraints')
    result = suggestions(bag, 'planner')

    (decision,) = result.decisions
    assert decision.kind == 'alarm' and 'constraint_validation' in decision.summary
    top = result.findings[0]
    assert (top.cabin, top.key, top.reason) == ('planner', 'safety:zone/high_voltage',
                                                'INJECTED_DROP')
    assert 'safety:*' not in result.patch['planner']['drop']
    assert 'safety:*' in result.patch['planner']['required']
    assert result.check.passed, result.check
    assert result.check.present[('planner', 'safety:zone/high_voltage')] == (
        len(decision.ticks), len(decision.ticks))


def test_suggest_proposes_door_glob_for_an_executor_manifest_without_it(recorded_run, tmp_path,
                                                                        capsys):
    outcome, bag = recorded_run('no_doors')
    assert outcome.collisions >= 1 and not outcome.delivered  # it drove into the closed door
    result = suggestions(bag)

    assert [d.kind for d in result.decisions] == ['repeated failure']
    top = result.findings[0]
    assert (top.cabin, top.key, top.reason) == ('executor', 'door:main', 'NOT_IN_MANIFEST')
    assert result.patch == {'executor': {'board_keys': [
        'action:*', 'pose', 'route', 'goal:*', 'safety:*', 'door:*']}}
    assert result.check.passed, result.check

    patch = tmp_path / 'patch.yaml'
    assert inspect.main(['suggest', str(bag), '--cabin', 'executor', '--out', str(patch)]) == 0
    capsys.readouterr()
    assert inspect.main(['replay', str(bag), '--manifests', str(patch), '--cabin',
                         'executor']) == 0
    text = capsys.readouterr().out
    assert '+ door:main: present at ticks 1-' in text, text


def test_suggest_proposes_nothing_on_the_baseline_run(recorded_run, capsys):
    _, bag = recorded_run('baseline')
    result = suggestions(bag)

    assert (result.decisions, result.findings, result.patch) == ((), (), {})
    assert inspect.main(['suggest', str(bag)]) == 0
    assert 'nothing to suggest' in capsys.readouterr().out


@pytest.mark.parametrize('name, item, reason', [
    ('no_constraints', 'safety:zone/high_voltage', 'INJECTED_DROP'),
    ('no_doors', 'door:main', 'NOT_IN_MANIFEST')])
def test_doctor_names_the_missing_item_and_says_it_found_something(recorded_run, capsys, name,
                                                                   item, reason):
    _, bag = recorded_run(name)
    assert inspect.main(['doctor', str(bag)]) == inspect.FINDS
    text = capsys.readouterr().out
    assert f'lacked {item}: {reason}' in text, text
    assert 'found: suddenly dumb' in text


def test_doctor_finds_nothing_to_fix_on_the_baseline(recorded_run, capsys):
    _, bag = recorded_run('baseline')
    run = load_run(bag)
    result = doctor(run, recorded_settings(run))
    assert inspect.main(['doctor', str(bag)]) == 0
    report = capsys.readouterr().out

    assert not result.found, report
    assert not result.drift.tearing and not result.drift.unfrozen
    # Capacity 40 is tight on purpose: the sensor readings (0.05) go first, and that is all.
    assert result.pressure.evictions and not result.pressure.losses
    assert result.pressure.fixes == ()
    assert 'nothing to fix: every eviction was of an item no manifest requires' in report
    assert 'found: nothing' in report


def test_doctor_under_real_pressure_proposes_the_smallest_capacity_that_keeps_what_counts(
        recorded_run, capsys):
    _, bag = recorded_run('capacity_12')
    run = load_run(bag)
    result = doctor(run, recorded_settings(run))
    pressure = result.pressure
    # The monitor requires the battery; at capacity 12 it is evicted.
    assert pressure.losses == {'battery': 'required by the monitor manifest'}
    # Dropping the sensors does not keep it (14 asks remain): the capacity does.
    (fix,) = pressure.fixes
    assert fix.kind == 'capacity' and not fix.losses and not fix.alarm_ticks
    smallest = fix.values['capacity']
    assert 12 < smallest < pressure.peak_asked
    one_less = doctor_pressure_with_capacity(run, smallest - 1)
    assert one_less.losses, 'the proposed capacity is not the smallest'
    assert inspect.main(['doctor', str(bag)]) == inspect.FINDS
    assert f'capacity 12 -> {smallest} (the smallest' in capsys.readouterr().out


def doctor_pressure_with_capacity(run, capacity):
    from working_memory.tools.doctor import pressure
    return pressure(run, recorded_settings(run).with_values({'capacity': capacity}, 'test'))


SOURCE = Path(__file__).resolve().parents[2]
# A clean interpreter: the pip-installed copy first; ROS and the source tree unreachable.
WITHOUT_ROS = """
import importlib.abc, sys
BLOCKED = ('rclpy', 'ament_index_python', 'working_memory.msg', 'rosidl_runtime_py')
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith(BLOCKED):
            raise ModuleNotFoundError(name + ' is blocked: no ROS here')
sys.meta_path.insert(0, Block())
sys.path = [{target!r}] + [p for p in sys.path if not p.startswith({source!r})]
from working_memory.tools import bag, inspect
assert bag.msg_dir().is_relative_to({target!r}), bag.msg_dir()
sys.exit(inspect.main(sys.argv[1:]))
"""


@pytest.fixture(scope='module')
def pip_installed(tmp_path_factory):
    """Return the folder a non-editable `pip install --target .` put the package in.

    The dependencies (numpy, PyYAML, rosbags) are this venv's; pip builds the wheel in
    an isolated environment, fetching setuptools and wheel from the package index.
    """
    if importlib.util.find_spec('pip') is None:
        pytest.skip('pip is not installed')
    target = tmp_path_factory.mktemp('site')
    # From a copy: setuptools builds in the source folder (build/, *.egg-info).
    source = tmp_path_factory.mktemp('source') / 'working_memory'
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(
        '.git', '.build', 'build', '*.egg-info', '__pycache__', '.pytest_cache'))
    result = subprocess.run(
        [sys.executable, '-m', 'pip', 'install', '--quiet', '--no-deps', '--target',
         str(target), str(source)], capture_output=True, text=True)
    if result.returncode and 'setuptools' in result.stderr and 'satisf' in result.stderr:
        pytest.skip('no package index to build the wheel with: ' + result.stderr[-200:])
    assert result.returncode == 0, result.stderr
    return target


@pytest.mark.parametrize('command, name, expected', [
    (['replay'], 'baseline', '(100.0 %)'),
    (['suggest', '--cabin', 'planner'], 'no_constraints', 'safety:zone/high_voltage'),
    (['doctor'], 'no_doors', 'lacked door:main: NOT_IN_MANIFEST')])
def test_a_plain_pip_install_works_on_the_bag_without_ros(pip_installed, recorded_run, command,
                                                          name, expected, tmp_path):
    _, bag = recorded_run(name)
    script = WITHOUT_ROS.format(source=str(SOURCE), target=str(pip_installed))
    result = subprocess.run([sys.executable, '-I', '-c', script, command[0], str(bag),
                             *command[1:]], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode in (0, inspect.FINDS), result.stderr
    assert expected in result.stdout, result.stdout
    assert (pip_installed / 'share' / 'working_memory' / 'config' / 'working_memory.yaml').is_file()


def test_a_plain_pip_install_builds_the_working_sets_c_put(pip_installed, tmp_path):
    script = WITHOUT_ROS.split('from working_memory.tools')[0].format(
        source=str(SOURCE), target=str(pip_installed)) + (
        'from working_memory.core import eviction\n'
        'print(eviction.ACCELERATED, eviction.__file__)\n')
    result = subprocess.run([sys.executable, '-I', '-c', script], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ['True', str(pip_installed / 'working_memory' / 'core' /
                                                 'eviction.py')], result.stdout


def test_the_node_accepts_the_suggested_patch_after_its_own_params_file(recorded_run, context,
                                                                        tmp_path):
    from rclpy.lifecycle import TransitionCallbackReturn
    from working_memory.demo.scenario import default_params_file
    from working_memory.ros.node import WorkingMemoryNode
    from working_memory.tools.suggest import patch_yaml

    _, bag = recorded_run('no_doors')
    result = suggestions(bag)
    patch = tmp_path / 'patch.yaml'
    patch.write_text(patch_yaml(result, result.settings.node))
    node = WorkingMemoryNode(context=context, cli_args=[
        '--ros-args', '--params-file', str(default_params_file()), '--params-file', str(patch)])
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert 'door:*' in node.get_parameter('cabins.executor.board_keys').value
    finally:
        node.destroy_node()
