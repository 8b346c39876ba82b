"""From a fault to a better manifest, on recorded closed-loop runs of the delivery demo.

The runs (`recorded_run`, once per session) record the whole loop; everything after
the recording is offline: replay through the core, suggest, doctor.
"""

import pytest
import yaml

from working_memory.tools import inspect
from working_memory.tools.doctor import doctor
from working_memory.tools.recording import load_run
from working_memory.tools.replay import agreement, recorded_settings, replay
from working_memory.tools.suggest import suggest

WHOLE_LOOP = {'/board', '/log', '/map', '/odom', '/clock', '/parameter_events',
              '/working_memory/frame', '/working_memory/evictions', '/diagnostics',
              '/planner/status', '/executor/status', '/monitor/status'}


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
    assert set(channels) == WHOLE_LOOP
    assert all(counts.get(topic) for topic in WHOLE_LOOP), counts
    assert channels['/working_memory/frame'].message_encoding == 'cdr'
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    offered = {t['topic_metadata']['name']: t['topic_metadata']['offered_qos_profiles']
               for t in metadata['topics_with_message_count']}
    # The map is latched (transient local) and reliable as map_server publishes it.
    (map_qos,) = offered['/map']
    assert (map_qos['durability'], map_qos['reliability']) == ('transient_local', 'reliable')


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


def test_doctor_finds_nothing_on_the_baseline_and_shows_how_far_scopes_would_shrink(
        recorded_run, capsys):
    _, bag = recorded_run('baseline')
    run = load_run(bag)
    result = doctor(run, recorded_settings(run))

    assert not result.found
    assert not result.drift.tearing and not result.drift.unfrozen
    # Capacity 40 is tight on purpose: the 30 sensor readings are the cheapest to narrow.
    cheapest = result.pressure.shrinks[0]
    assert (cheapest.scope.cabin, cheapest.scope.name) == ('monitor', 'board_keys sensor:*')
    assert cheapest.evictions < result.pressure.evictions and not cheapest.alarm_ticks
    assert inspect.main(['doctor', str(bag)]) == 0
    assert 'found: nothing' in capsys.readouterr().out
