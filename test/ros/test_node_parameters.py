"""Strict parameters of the memory node: declared before configure, typos and wrong types named.

In-process parameter calls (node.set_parameters is what the parameter services call); no
message has to cross DDS.
"""

import pytest
from rcl_interfaces.msg import ParameterType
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from working_memory.engine.config import PARAMS, cabin_param_specs
from working_memory.ros.parameters import parameter_type

SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE


def configure_error(capfd):
    """Return the last 'configure failed' log line written so far."""
    errors = [line for line in capfd.readouterr().err.splitlines() if 'configure failed' in line]
    assert errors, 'no configure failure logged'
    return errors[-1]


def test_the_whole_table_is_declared_with_its_descriptors_before_configure(start_memory):
    node, _ = start_memory(configure=False)
    declared = set(node.list_parameters([], 0).names)
    specs = [*PARAMS, *cabin_param_specs('planner'), *cabin_param_specs('executor')]
    assert {spec.name for spec in specs} <= declared
    for spec in specs:
        descriptor = node.describe_parameter(spec.name)
        assert descriptor.description == spec.description, spec.name
        assert descriptor.type == parameter_type(spec).value, spec.name
        assert descriptor.read_only == spec.read_only, spec.name
    capacity = node.describe_parameter('capacity').integer_range[0]
    assert (capacity.from_value, capacity.to_value) == (1, 1_000_000)
    assert node.describe_parameter('tick_hz').floating_point_range[0].from_value == 0.1
    # Empty string-array defaults are string arrays, not the byte arrays rclpy makes of [].
    assert node.get_parameter('cabins.planner.drop').type_ is Parameter.Type.STRING_ARRAY


def test_a_value_set_before_configure_takes_effect_at_configure(start_memory):
    node, _ = start_memory(configure=False)
    [result] = node.set_parameters([Parameter('capacity', value=7)])
    assert result.successful
    assert node.trigger_configure() == SUCCESS
    assert node._engine.config.capacity == 7


@pytest.mark.parametrize('configure', [False, True])
def test_a_wrong_type_set_is_refused_naming_the_parameter_and_the_type(start_memory, configure):
    node, _ = start_memory(configure=configure, activate=False)
    [result] = node.set_parameters([Parameter('capacity', value='many')])
    assert not result.successful
    assert result.reason == "capacity: must be an integer, got 'many'"
    assert node.get_parameter('capacity').value == 256
    # rclpy wrote 'string' into the dynamically typed descriptor; the table's type is kept.
    assert node.describe_parameter('capacity').type == ParameterType.PARAMETER_INTEGER
    [result] = node.set_parameters([Parameter('cabins.planner.drop', value='safety:*')])
    assert result.reason.startswith('cabins.planner.drop: must be a list of strings')


def test_an_out_of_range_set_is_refused_naming_the_parameter_and_the_range(start_memory):
    node, _ = start_memory(configure=False)
    # rclpy checks the descriptor's range itself, with a message naming both.
    [result] = node.set_parameters([Parameter('capacity', value=0)])
    assert not result.successful
    assert 'capacity' in result.reason and '1000000' in result.reason, result.reason
    [result] = node.set_parameters([Parameter('tick_hz', value=0)])   # an integer, below 0.1
    assert not result.successful
    assert all(part in result.reason for part in ('tick_hz', '0.1', '1000.0')), result.reason


def test_command_line_typing_is_taken_as_the_parameter_type(start_memory):
    node, probe = start_memory()
    # `ros2 param set ... tick_hz 20` sends an integer, `... drop "[]"` an empty bool array.
    results = node.set_parameters([Parameter('tick_hz', Parameter.Type.INTEGER, 20),
                                   Parameter('cabins.planner.drop', Parameter.Type.BOOL_ARRAY, [])])
    assert all(result.successful for result in results), results
    assert node.get_parameter('tick_hz').type_ is Parameter.Type.DOUBLE
    assert node.get_parameter('tick_hz').value == 20.0
    assert node.get_parameter('cabins.planner.drop').type_ is Parameter.Type.STRING_ARRAY
    probe.wait_frame()


@pytest.mark.parametrize('override, value, suggestion', [
    ('capacty', 5, 'capacity'),
    ('cabins.planner.default_wieght', 0.3, 'cabins.planner.default_weight'),
    ('cabins.plannr.drop', ['pose'], 'cabins.planner.drop'),
])
def test_an_unknown_override_fails_configure_naming_it_and_the_closest(start_memory, capfd,
                                                                       override, value,
                                                                       suggestion):
    node, _ = start_memory({override: value}, configure=False)
    assert node.trigger_configure() == FAILURE
    assert f'{override}: unknown parameter (did you mean {suggestion}?)' in configure_error(capfd)


@pytest.mark.parametrize('retired, value', [('gc_pacing', True), ('prepare_lead_s', 0.002)])
def test_a_retired_parameter_of_an_older_params_file_is_ignored_with_a_warning(
        start_memory, capfd, retired, value):
    node, probe = start_memory({retired: value}, configure=False)
    assert node.trigger_configure() == SUCCESS
    warnings = [line for line in capfd.readouterr().err.splitlines()
                if f'{retired}: no longer a parameter, ignored' in line]
    assert warnings and 'WARN' in warnings[0], warnings
    assert not node.has_parameter(retired)


def test_an_unknown_field_in_manifests_file_fails_configure_naming_the_closest(start_memory,
                                                                               capfd, tmp_path):
    path = tmp_path / 'cabins.yaml'
    path.write_text('cabins:\n  monitor:\n    default_wieght: 0.3\n')
    node, _ = start_memory({'manifests_file': str(path)}, configure=False)
    assert node.trigger_configure() == FAILURE
    assert 'monitor.default_wieght: unknown field (did you mean default_weight?)' in \
        configure_error(capfd)


def test_a_drop_override_of_a_manifests_file_cabin_is_known(start_memory, tmp_path):
    path = tmp_path / 'cabins.yaml'
    path.write_text('cabins:\n  monitor:\n    board_keys: ["threshold:*"]\n')
    node, _ = start_memory({'manifests_file': str(path), 'cabins.monitor.drop': ['map']},
                           configure=False)
    assert not node.has_parameter('cabins.monitor.drop')   # the file is read at configure
    assert node.trigger_configure() == SUCCESS
    assert node.get_parameter('cabins.monitor.drop').value == ['map']


def test_a_refused_override_keeps_the_node_up_and_fails_configure_until_set_right(
        start_memory, capfd):
    node, probe = start_memory({'capacity': 'many', 'diagnostics_period_s': 0.1},
                               configure=False)
    assert node.get_parameter('capacity').value == 256
    assert node.trigger_configure() == FAILURE
    assert "capacity: must be an integer, got 'many'" in configure_error(capfd)
    probe.status('lifecycle', lambda s: s.message.startswith('unconfigured: configure failed'))
    [result] = node.set_parameters([Parameter('capacity', value=12)])
    assert result.successful
    # /diagnostics no longer carries the failure the set cleared.
    since = len(probe.diagnostics)

    def lifecycle_messages():
        return [s.message for array in probe.diagnostics[since:] for s in array.status
                if s.name.endswith(': lifecycle')]
    assert probe.spin_until(lambda: len(lifecycle_messages()) >= 2)
    assert lifecycle_messages()[-1] == 'unconfigured: waiting for configure'
    assert node.trigger_configure() == SUCCESS
    assert node._engine.config.capacity == 12


def test_an_integer_override_of_a_double_is_taken_as_a_double(start_memory):
    # A params file's `tick_hz: 20` reaches the node as an integer.
    node, _ = start_memory({'tick_hz': 20}, configure=False)
    assert node.get_parameter('tick_hz').type_ is Parameter.Type.DOUBLE
    assert node.trigger_configure() == SUCCESS
    assert node._engine.config.tick_hz == 20.0


def test_configure_names_the_cabins_that_require_a_board_pose_the_pose_topic_cannot_give():
    from working_memory.core.manifest import Manifest
    from working_memory.engine.engine import pose_requirers
    from working_memory.engine.config import config_from_values, default_values
    manifests = {'planner': Manifest.from_dict('planner', {'board_keys': ['pose'],
                                                           'required': ['pose']}),
                 'monitor': Manifest.from_dict('monitor', {'board_keys': ['pose']})}
    values = {**default_values(), 'cabin_names': ['planner', 'monitor']}
    assert pose_requirers(config_from_values(values), manifests) == []
    odometry = config_from_values({**values, 'pose_source': 'odometry'})
    assert pose_requirers(odometry, manifests) == ['planner']


# -- params files as the node is started with them: what a patch after a robot's file meets --

ROBOT = ('/**/working_memory:\n  ros__parameters:\n'
         '    capacity: 30\n    cabins:\n      planner:\n        drop: ["safety:*"]\n')


def start_with_files(start_memory, tmp_path, *texts):
    """Start the node unconfigured with the packaged file, then params files of `texts`."""
    from working_memory.demo.scenario import default_params_file
    paths = []
    for number, text in enumerate(texts):
        paths.append(tmp_path / f'file{number}.yaml')
        paths[-1].write_text(text)
    args = ['--ros-args']
    for path in [default_params_file(), *paths]:
        args += ['--params-file', str(path)]
    node, _ = start_memory(configure=False, cli_args=args, cabins=False)
    return node


def patch(text):
    return f'/**/working_memory:\n  ros__parameters:\n{text}'


def test_an_empty_list_in_a_later_file_empties_the_list(start_memory, tmp_path):
    node = start_with_files(start_memory, tmp_path, ROBOT,
                            patch('    cabins:\n      planner:\n        drop: []\n'))
    assert node.trigger_configure() == SUCCESS
    assert node.get_parameter('cabins.planner.drop').value == []
    assert node._engine.manifests['planner'].drop == ()
    assert node._engine.config.capacity == 30


def test_an_empty_list_as_a_list_field_alone_is_an_empty_list(start_memory, tmp_path):
    node = start_with_files(start_memory, tmp_path,
                            patch('    cabins:\n      monitor:\n        drop: []\n'))
    assert node.trigger_configure() == SUCCESS
    assert node.get_parameter('cabins.monitor.drop').value == []


@pytest.mark.parametrize('text, reason', [
    # An empty list where a number belongs: the earlier file's 40 would silently stay.
    ('    capacity: []\n',
     'capacity: {path} sets [], but the ROS parser kept 40 from an earlier file'),
    # A YAML null reaches the node as the string '~'.
    ('    capacity: ~\n', 'capacity: {path} sets null, but the ROS parser kept 40'),
    # A string after the packaged double: rcl keeps 5.0 without a word.
    ('    stale_after_s: soon\n',
     'stale_after_s: {path} sets soon, but the ROS parser kept 5.0 from an earlier file: a later '
     "file cannot change a parameter's type (write a double, with a decimal point"),
    ('    cabins:\n      planner:\n        board_keys: goal\n',
     "cabins.planner.board_keys: must be a list of strings, got 'goal'"),
])
def test_a_value_the_ros_parser_drops_from_a_later_file_fails_configure_naming_it(
        start_memory, tmp_path, capfd, text, reason):
    node = start_with_files(start_memory, tmp_path, patch(text))
    assert node.trigger_configure() == FAILURE
    assert reason.format(path=tmp_path / 'file0.yaml') in configure_error(capfd)


def single_file(tmp_path, name, raw):
    """Write a params file of an executor cabin whose parameter `name` is written as `raw`."""
    fields = {'board_keys': '[pose]'}
    top = {}
    if name.startswith('cabins.executor.'):
        fields[name.removeprefix('cabins.executor.')] = raw
    else:
        top[name] = raw
    lines = ['/**/working_memory:', '  ros__parameters:', '    cabin_names: [executor]']
    lines += [f'    {key}: {value}' for key, value in top.items()]
    lines += ['    cabins:', '      executor:']
    lines += [f'        {key}: {value}' for key, value in fields.items()]
    path = tmp_path / 'robot.yaml'
    path.write_text('\n'.join(lines) + '\n')
    return path


@pytest.mark.parametrize('name, raw, reason', [
    ('capacity', 'forty', "capacity: must be an integer, got 'forty'"),
    ('capacity', '~', "capacity: must be an integer, got '~'"),
    ('capacity', '[]', 'capacity: must be an integer, got an empty list ([]); leave the line '
                       'out for the default'),
    ('stale_after_s', 'true', 'stale_after_s: must be a double, got True'),
    ('cabins.executor.board_keys', '5', 'cabins.executor.board_keys: must be a list of strings, '
                                        'got 5'),
    ('cabins.executor.board_keys', '[1, 2]', 'cabins.executor.board_keys: must be a list of '
                                             'strings, got [1, 2]'),
    ('cabins.executor.events.window_s', 'soon',
     "cabins.executor.events.window_s: must be a double, got 'soon'"),
])
def test_a_wrong_value_in_a_params_file_fails_configure_and_the_node_stays_up(
        start_memory, tmp_path, capfd, name, raw, reason):
    path = single_file(tmp_path, name, raw)
    node, _ = start_memory(configure=False, cli_args=['--ros-args', '--params-file', str(path)],
                           cabins=False)
    assert node.trigger_configure() == FAILURE
    assert reason in configure_error(capfd)
    assert node.trigger_configure() == FAILURE   # still up, and says so again
    assert reason in configure_error(capfd)


def test_an_empty_list_as_a_required_list_means_no_required_key(start_memory, tmp_path):
    path = single_file(tmp_path, 'cabins.executor.required', '[]')
    node, _ = start_memory(configure=False, cli_args=['--ros-args', '--params-file', str(path)],
                           cabins=False)
    assert node.trigger_configure() == SUCCESS
    assert node._engine.manifests['executor'].required == ()


def test_a_parameter_set_on_the_command_line_over_the_files_is_not_taken_as_dropped(
        start_memory, tmp_path):
    path = single_file(tmp_path, 'capacity', '12')
    node, _ = start_memory(configure=False, cabins=False, cli_args=[
        '--ros-args', '--params-file', str(path), '-p', 'capacity:=14'])
    assert node.trigger_configure() == SUCCESS
    assert node._engine.config.capacity == 14


def test_a_size_budget_under_the_value_limit_is_refused_and_the_limit_is_read_only(
        start_memory, capfd):
    node, _ = start_memory(activate=False)
    [result] = node.set_parameters([Parameter('size_budget_bytes', value=100_000)])
    assert not result.successful
    assert result.reason == ('size_budget_bytes: must be 0 (no budget) or at least '
                             'max_value_bytes (262144), got 100000: one value the node takes '
                             'must fit')
    [result] = node.set_parameters([Parameter('size_budget_bytes', value=524_288)])
    assert result.successful and node._engine.config.size_budget == 524_288
    [result] = node.set_parameters([Parameter('max_value_bytes', value=10_000_000)])
    assert not result.successful and 'read-only' in result.reason
    small, _ = start_memory({'max_value_bytes': 65_536, 'size_budget_bytes': 65_535},
                            configure=False)
    assert small.trigger_configure() == FAILURE
    assert 'size_budget_bytes: must be 0 (no budget) or at least max_value_bytes (65536)' in (
        configure_error(capfd))
