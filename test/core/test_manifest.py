"""Manifests: loading from ROS-params YAML, validation naming the field, weights."""

import dataclasses
import pathlib

import pytest
import yaml

from working_memory.core.items import EventKind
from working_memory.core.manifest import (
    MANIFEST_FIELDS, Manifest, ManifestError, load_manifests, manifests_from_params)

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'working_memory.yaml'
ROS_TYPES = {'string': str, 'double': float, 'integer': int, 'string_array': tuple}


def test_config_file_loads_the_delivery_cabins_in_order():
    manifests = load_manifests(str(CONFIG))
    assert list(manifests) == ['planner', 'executor', 'monitor']
    planner, executor = manifests['planner'], manifests['executor']
    assert planner.map.radius_m == pytest.approx(8.0)
    assert 'charging' in planner.tags.exclude
    assert set(planner.events.kinds) == {EventKind.CONSTRAINT, EventKind.FAILURE}
    assert planner.selects.match('goal:deliver') and planner.selects.match('safety:zone/a')
    assert executor.events.window_s == pytest.approx(30.0)
    assert set(executor.events.kinds) == {EventKind.FAILURE, EventKind.ACTION}


def _leaves(node, path=''):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f'{path}.{key}' if path else key)
    else:
        yield path, node


def test_config_file_has_no_value_the_ros_yaml_parser_rejects():
    # rcl's parser cannot type an empty array and refuses an empty value.
    document = yaml.safe_load(CONFIG.read_text())
    bad = [path for path, value in _leaves(document) if value in ('', [], None)]
    assert not bad


def test_nested_and_dotted_mappings_give_the_same_manifest():
    nested = Manifest.from_dict('planner', {'map': {'radius_m': 8, 'corridor_m': 1.5},
                                            'events': {'window_s': 30.0}})
    dotted = Manifest.from_dict('planner', {'map.radius_m': 8.0, 'map.corridor_m': 1.5,
                                            'events.window_s': 30})
    assert nested == dotted


def test_every_field_table_default_builds_the_default_manifest():
    defaults = {spec.name: list(spec.default) if spec.type == 'string_array' else spec.default
                for spec in MANIFEST_FIELDS}
    assert Manifest.from_dict('cabin', defaults) == Manifest.from_dict('cabin', {})
    for spec in MANIFEST_FIELDS:
        assert isinstance(spec.default, ROS_TYPES[spec.type]), spec.name


def test_manifest_is_frozen():
    manifest = Manifest.from_dict('planner', {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.board_keys = ('x',)


@pytest.mark.parametrize('fields, message', [
    ({'map': {'radius_m': -1}}, 'planner.map.radius_m: must be >= 0 m'),
    ({'map': {'corridor_m': float('inf')}}, 'planner.map.corridor_m: must be a finite number'),
    ({'map': {'raduis_m': 1.0}}, 'planner.map.raduis_m: unknown field (did you mean '
                                 'map.radius_m?)'),
    ({'default_wieght': 0.3}, 'planner.default_wieght: unknown field (did you mean '
                              'default_weight?)'),
    ({'board_key': ['pose']}, 'planner.board_key: unknown field'),
    ({'board_keys': 'goal:*'}, 'planner.board_keys: must be a list of strings'),
    ({'board_keys': ['pose', ' route']}, 'planner.board_keys[1]: a key or glob'),
    ({'weights': ['battery']}, 'planner.weights[0]: expected "pattern=weight"'),
    ({'weights': ['pose=1', 'battery=1.5']}, 'planner.weights[1]: must be in [0, 1]'),
    ({'weights': ['battery=high']}, 'planner.weights[0]: weight must be a number'),
    ({'default_weight': True}, 'planner.default_weight: must be a finite number'),
    ({'default_weight': 2.0}, 'planner.default_weight: must be in [0, 1]'),
    ({'events': {'kinds': ['FAILURE', 'FAILUR']}}, 'planner.events.kinds[1]: unknown event kind'),
    ({'events': {'max_count': 2.5}}, 'planner.events.max_count: must be an integer'),
    ({'events': {'window_s': 5.0, 'max_count': -1}}, 'planner.events.max_count: must be >= 0'),
    ({'events': {'window_s': -5.0}}, 'planner.events.window_s: must be >= 0 s'),
    ({'required': ['map']}, 'planner.required[0]: "map" needs map.radius_m'),
    # The bad value is named as itself, not as the requirement it breaks.
    ({'required': ['map'], 'map': {'radius_m': -1.0}}, 'planner.map.radius_m: must be >= 0 m'),
    ({'required': ['pose', 'events:FAILURE']}, 'planner.required[1]:'),
    ({'events': {'window_s': 5.0, 'kinds': ['ACTION']}, 'required': ['events:FAILURE']},
     'planner.required[0]:'),
    ({'drop': ['events:NOPE']}, 'planner.drop[0]: unknown event kind'),
    ({'drop': ['board:']}, 'planner.drop[0]: a key or glob'),
    ({'tags': {'include': ['a'], 'exclude': ['a']}}, 'planner.tags:'),
    ({'tags': {'include': ['']}}, 'planner.tags.include[0]: must not be empty'),
    ({'tags': {'from_goal': 3}}, 'planner.tags.from_goal: must be a string'),
    ({'map': 8.0}, 'planner.map: unknown field'),
])
def test_invalid_field_is_rejected_naming_the_field(fields, message):
    with pytest.raises(ManifestError) as error:
        Manifest.from_dict('planner', fields)
    assert str(error.value).startswith(message), str(error.value)


def test_invalid_cabin_name_is_rejected():
    with pytest.raises(ManifestError, match='cabin name'):
        Manifest.from_dict('plan ner', {})


@pytest.mark.parametrize('params, message', [
    ({'cabin_names': ['planner', 'executor'], 'cabins': {'planner': {}}},
     'cabins.executor: listed in cabin_names but not configured'),
    ({'cabin_names': ['planner'], 'cabins': {'planner': {}, 'monitor': {}}},
     'cabins.monitor: configured but not listed in cabin_names'),
    ({'cabin_names': ['planner', 'planner'], 'cabins': {'planner': {}}},
     'cabin_names: names must be unique'),
    ({'cabin_names': 'planner', 'cabins': {'planner': {}}}, 'cabin_names: must be a non-empty'),
    ({'cabins': {}}, 'cabins: must be a non-empty mapping'),
])
def test_cabin_list_mismatch_is_rejected_naming_the_cabin(params, message):
    with pytest.raises(ManifestError) as error:
        manifests_from_params(params)
    assert str(error.value).startswith(message), str(error.value)


def test_plain_cabins_layout_keeps_file_order(tmp_path):
    path = tmp_path / 'plain.yaml'
    path.write_text('cabins:\n  monitor: {board_keys: [battery]}\n  planner: {}\n')
    assert list(load_manifests(str(path))) == ['monitor', 'planner']


def test_file_errors_name_the_file_and_the_field(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('working_memory:\n  ros__parameters:\n    cabin_names: [planner]\n'
                    '    cabins:\n      planner:\n        map: {radius_m: -1.0}\n')
    with pytest.raises(ManifestError, match=r'bad\.yaml: planner\.map\.radius_m: must be >= 0'):
        load_manifests(str(path))


def test_file_with_an_unknown_field_names_it_and_the_closest_field(tmp_path):
    path = tmp_path / 'typo.yaml'
    path.write_text('cabins:\n  planner:\n    default_wieght: 0.3\n')
    with pytest.raises(ManifestError, match=r'typo\.yaml: planner\.default_wieght: unknown field '
                                            r'\(did you mean default_weight\?\)'):
        load_manifests(str(path))


def test_ros_layout_is_found_under_the_any_namespace_key(tmp_path):
    path = tmp_path / 'ros.yaml'
    path.write_text('/**/working_memory:\n  ros__parameters:\n    cabin_names: [planner]\n'
                    '    cabins:\n      planner: {board_keys: [pose]}\n')
    assert list(load_manifests(str(path))) == ['planner']


def test_file_without_cabins_is_rejected(tmp_path):
    path = tmp_path / 'other.yaml'
    path.write_text('some_node:\n  ros__parameters:\n    tick_hz: 10.0\n')
    with pytest.raises(ManifestError, match='working_memory.ros__parameters: missing'):
        load_manifests(str(path))


def test_weight_exact_key_wins_then_first_matching_glob_then_default():
    manifest = Manifest.from_dict('planner', {
        'weights': ['goal:*=0.9', 'goal:deliver=1.0', 'g*=0.1', 'battery=0.2'],
        'default_weight': 0.4})
    assert manifest.weight_for('goal:deliver') == 1.0
    assert manifest.weight_for('goal:charge') == 0.9
    assert manifest.weight_for('gps') == 0.1
    assert manifest.weight_for('battery') == 0.2
    assert manifest.weight_for('pose') == 0.4


def test_required_keys_are_read_even_when_board_keys_omit_them():
    manifest = Manifest.from_dict('planner', {'board_keys': ['goal:*'], 'required': ['pose']})
    assert manifest.selects.match('pose')
    assert manifest.selects.match('goal:x')
    assert not manifest.selects.match('battery')


def test_drop_categories_are_parsed():
    manifest = Manifest.from_dict('planner', {
        'drop': ['events:FAILURE', 'map', 'board:door:*', 'battery']})
    drops = manifest.drops
    assert drops.map
    assert drops.event_kinds == {EventKind.FAILURE}
    assert drops.board.match('door:3') and not drops.board.match('battery')
    assert drops.any_key.match('battery')
    every_kind = Manifest.from_dict('planner', {'drop': ['events:*']}).drops.event_kinds
    assert every_kind == set(EventKind)
