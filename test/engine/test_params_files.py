"""Params files read as rcl merges them: node keys, the command line, values rcl dropped."""

import pytest

from working_memory.engine.params_files import (ParamsFileError, dropped, file_values,
                                                node_key_matches, parameter_args)


@pytest.mark.parametrize('key, node, matches', [
    ('/**/working_memory', '/working_memory', True),
    ('/**/working_memory', '/robot1/working_memory', True),
    ('/**/working_memory', '/a/b/working_memory', True),
    ('/**', '/robot1/planner', True),
    ('working_memory', '/working_memory', True),
    ('working_memory', '/robot1/working_memory', False),
    ('/robot1/working_memory', '/robot2/working_memory', False),
    ('/*/working_memory', '/robot1/working_memory', True),
    ('/*/working_memory', '/working_memory', False),
    ('/**/working_memory', '/working_memory_2', False),
])
def test_a_node_key_names_the_nodes_rcl_gives_it_to(key, node, matches):
    assert node_key_matches(key, node) is matches


def test_parameter_args_are_the_params_files_in_order_and_the_names_p_sets():
    argv = ['prog', '--autostart', '--params-file', 'not_ros.yaml', '--ros-args',
            '--params-file', 'a.yaml', '-r', '__ns:=/x', '-p', 'capacity:=3',
            '--param', 'tick_hz:=5.0', '--params-file', 'b.yaml', '--', '--params-file', 'c']
    assert parameter_args(argv) == (['a.yaml', 'b.yaml'], {'capacity', 'tick_hz'})


def test_every_section_naming_the_node_counts_and_later_files_come_last(tmp_path):
    first, second = tmp_path / 'a.yaml', tmp_path / 'b.yaml'
    first.write_text('/**:\n  ros__parameters:\n    capacity: 40\n'
                     '/**/working_memory:\n  ros__parameters:\n    cabins: {planner: {drop: []}}\n'
                     '/**/planner:\n  ros__parameters:\n    capacity: 1\n')
    second.write_text('/robot1/working_memory:\n  ros__parameters:\n    capacity: forty\n')
    values = file_values([first, second], '/robot1/working_memory')
    assert values == {'capacity': [(40, str(first)), ('forty', str(second))],
                      'cabins.planner.drop': [([], str(first))]}
    assert file_values([first, second], '/working_memory')['capacity'] == [(40, str(first))]


def test_a_value_rcl_dropped_for_an_earlier_one_is_named_and_one_it_took_is_not():
    files = {'capacity': [(40, 'a.yaml'), ('forty', 'b.yaml')],
             'tick_hz': [(10.0, 'a.yaml'), (20, 'b.yaml')],
             'cabins.planner.drop': [(['x'], 'a.yaml'), ([], 'b.yaml')],
             'pose_key': [('~', 'a.yaml')]}
    overrides = {'capacity': 40, 'tick_hz': 20, 'cabins.planner.drop': None, 'pose_key': '~'}
    reasons = dropped(files, overrides, list(files))
    assert list(reasons) == ['capacity']
    assert reasons['capacity'].startswith(
        'capacity: b.yaml sets forty, but the ROS parser kept 40 from an earlier file')


def test_an_unreadable_params_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / 'list.yaml'
    path.write_text('- a\n- b\n')
    with pytest.raises(ParamsFileError, match='list.yaml: must hold a mapping'):
        file_values([path], '/working_memory')
