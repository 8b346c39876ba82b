"""Lifecycle transitions, parameter validation and the inactive state of the memory node."""

import gc

import pytest
from lifecycle_msgs.msg import State
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from working_memory.msg import MissingItem
from working_memory.ros import collector

SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE


def state_id(node):
    return node._state_machine.current_state[0]


def test_transitions_walk_through_every_state(start_memory):
    node, probe = start_memory(configure=False)
    assert state_id(node) == State.PRIMARY_STATE_UNCONFIGURED
    assert node.trigger_configure() == SUCCESS
    assert state_id(node) == State.PRIMARY_STATE_INACTIVE
    assert node.trigger_activate() == SUCCESS
    assert state_id(node) == State.PRIMARY_STATE_ACTIVE
    # Ticks enough that the numbering's restart shows whichever of the first new frames
    # the probe matches in time for (a late joiner gets the latest of them).
    before = probe.wait_frame(lambda frame: frame.tick >= 10)
    assert node.trigger_deactivate() == SUCCESS
    assert state_id(node) == State.PRIMARY_STATE_INACTIVE
    assert node.trigger_cleanup() == SUCCESS
    assert state_id(node) == State.PRIMARY_STATE_UNCONFIGURED
    assert node.trigger_configure() == SUCCESS
    assert node.trigger_activate() == SUCCESS
    # Cleanup dropped the state: tick numbering starts again.
    again = probe.wait_frame(lambda frame: frame.tick < before.tick)
    assert again.tick >= 1
    assert node.trigger_shutdown() == SUCCESS
    assert state_id(node) == State.PRIMARY_STATE_FINALIZED


def test_the_first_configure_is_a_start_and_a_configure_after_cleanup_a_restart(start_memory):
    node, probe = start_memory()   # no writer answers: the re-reading lasts its 5 s bound

    def resyncing_note(frame):
        (pack,) = [pack for pack in frame.packs if pack.cabin == 'planner']
        (note,) = [note for note in pack.missing if note.key == 'pose']
        assert note.reason == MissingItem.RESYNCING
        return note.detail
    first = probe.wait_frame(lambda frame: frame.resyncing)
    assert not first.restart
    assert resyncing_note(first).startswith('not heard since the node started at ')
    assert 'restart' not in resyncing_note(first)
    for transition in (node.trigger_deactivate, node.trigger_cleanup, node.trigger_configure,
                       node.trigger_activate):
        assert transition() == SUCCESS
    again = probe.wait_frame(lambda frame: frame.start_id != first.start_id and frame.resyncing)
    assert again.restart
    assert resyncing_note(again).endswith(': it re-reads the writers (a restart)')


def test_deactivate_stops_ticking_and_keeps_the_state(start_memory, spin_until):
    node, probe = start_memory()
    last = probe.wait_frame()
    assert node.trigger_deactivate() == SUCCESS
    stopped_at = len(probe.frames)
    latest = probe.frames[-1].tick
    assert not spin_until(lambda: len(probe.frames) > stopped_at, timeout=0.3)
    assert node.trigger_activate() == SUCCESS
    resumed = probe.wait_frame()
    assert resumed.tick == latest + 1 and resumed.tick > last.tick


def test_services_answer_not_active_while_inactive(start_memory):
    node, probe = start_memory()
    probe.wait_frame()
    assert probe.assemble('planner').success
    assert node.trigger_deactivate() == SUCCESS
    for response in (probe.assemble('planner'), probe.explain('planner', 'pose')):
        assert not response.success
        assert response.message == 'node is not active'


def test_shutdown_from_active_releases_everything(start_memory):
    node, probe = start_memory()
    probe.wait_frame()
    assert node.trigger_shutdown() == SUCCESS
    assert state_id(node) == State.PRIMARY_STATE_FINALIZED
    assert not list(node.subscriptions) and not list(node.timers)
    services = [service.srv_name for service in node.services]
    assert not [name for name in services if name.endswith(('/assemble', '/explain'))]


@pytest.mark.parametrize('params, named', [
    ({'tick_hz': 0.0}, 'tick_hz'),
    ({'capacity': 'many'}, 'capacity'),
    ({'eviction_policy': 'fifo'}, 'eviction_policy'),
    ({'pose_key': '', 'pose_source': 'board'}, 'pose_key'),
    ({'cabins.planner.default_weight': 1.5}, 'planner.default_weight'),
    ({'cabins.executor.events.kinds': ['SOMETIMES']}, 'executor.events.kinds[0]'),
    ({'cabin_names': []}, 'cabin_names'),
    ({'trigger_topic': 'no spaces allowed'}, 'trigger_topic'),
    ({'manifests_file': '/nonexistent/manifests.yaml'}, '/nonexistent/manifests.yaml'),
])
def test_bad_parameter_fails_configure_with_a_log_line_naming_it(start_memory, capfd,
                                                                 params, named):
    node, _ = start_memory(params, configure=False)
    assert node.trigger_configure() == FAILURE
    assert state_id(node) == State.PRIMARY_STATE_UNCONFIGURED
    errors = [line for line in capfd.readouterr().err.splitlines() if 'configure failed' in line]
    assert errors and named in errors[-1], errors


def test_runtime_sets_are_validated_and_rejections_name_the_parameter(start_memory):
    node, probe = start_memory()
    probe.wait_frame()
    rejected = {
        'tick_hz': 0.0,                      # out of the descriptor's range
        'eviction_policy': 'half_life',      # read-only
        'stale_after_s': float('nan'),
        'cabins.planner.drop': ['events:SOMETIMES'],
        'cabins.executor.weights': ['pose=1.0'],   # read-only, declared empty
    }
    for name, value in rejected.items():
        [result] = node.set_parameters([Parameter(name, value=value)])
        assert not result.successful, name
        assert name in result.reason or name.removeprefix('cabins.') in result.reason, \
            result.reason
    [result] = node.set_parameters([Parameter('tick_hz', value=100.0)])
    assert result.successful
    assert node.get_parameter('tick_hz').value == 100.0
    probe.wait_frame()


def test_manifests_file_cabins_get_a_runtime_drop_parameter(start_memory, tmp_path):
    path = tmp_path / 'manifests.yaml'
    path.write_text('cabins:\n'
                    '  monitor:\n'
                    '    board_keys: ["threshold:*"]\n'
                    '    drop: ["threshold:low"]\n')
    node, probe = start_memory({'manifests_file': str(path)})
    frame = probe.wait_frame()
    assert [pack.cabin for pack in frame.packs] == ['monitor', 'planner', 'executor']
    assert [(m.key, m.reason) for m in frame.packs[0].missing] == [
        ('threshold:low', MissingItem.INJECTED_DROP)]
    assert node.get_parameter('cabins.monitor.drop').value == ['threshold:low']
    no_drops = Parameter('cabins.monitor.drop', Parameter.Type.STRING_ARRAY, [])
    [result] = node.set_parameters([no_drops])
    assert result.successful
    cleared = probe.wait_frame(lambda frame: not frame.packs[0].missing)
    assert cleared.packs[0].cabin == 'monitor'


def test_ros2_node_info_shows_the_inputs_on_the_nodes_named_helper(start_memory, namespace,
                                                                   spin_until):
    # What `ros2 node info` and rqt_graph show: board, log, the resync answers, map and pose
    # on the node's helper `<name>_inputs` (ros/intake.py Intake), and no other node.
    node, probe = start_memory({'pose_source': 'odometry'})
    expected = {
        'working_memory_inputs': {f'{namespace}/board': ['working_memory/msg/BoardUpdate'],
                                  f'{namespace}/log': ['working_memory/msg/LogEvent'],
                                  f'{namespace}/resync/answer': [
                                      'working_memory/msg/ResyncAnswer'],
                                  f'{namespace}/map': ['nav_msgs/msg/OccupancyGrid'],
                                  f'{namespace}/odom': ['nav_msgs/msg/Odometry']},
    }

    def subscriptions(name):
        return dict(probe.node.get_subscriber_names_and_types_by_node(name, namespace))
    for name, topics in expected.items():
        assert spin_until(lambda: topics.items() <= subscriptions(name).items()), \
            (name, subscriptions(name))
    assert set(subscriptions('working_memory_inputs')) == set(expected['working_memory_inputs'])
    names = {name for name, space in probe.node.get_node_names_and_namespaces()
             if space == namespace}
    assert names == {'working_memory', 'working_memory_inputs', 'wm_probe'}, names


def test_cleanup_unfreezes_what_the_collector_froze(start_memory):
    node, _ = start_memory()
    collector.freeze_after_full_collections()   # as the node's process does
    gc.collect()
    try:
        assert gc.get_freeze_count() > 0
        assert node.trigger_deactivate() == SUCCESS
        assert node.trigger_cleanup() == SUCCESS
        assert gc.get_freeze_count() == 0
    finally:
        gc.callbacks.remove(collector._freeze)
        gc.unfreeze()
