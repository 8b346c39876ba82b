"""Who may write what, through a real node: owned keys refused to others, counted, logged."""

import dataclasses
import json
from pathlib import Path

import rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from sensor_msgs.msg import BatteryState

from working_memory.client import BoardWriter
from working_memory.msg import BoardEntry, BoardUpdate
from working_memory.tools.recorder_node import RecorderNode
from working_memory.tools.replay import agreement, replay

OWNERS = {'owner_names': ['safety'],
          'owners.safety.keys': ['safety:*'],
          'owners.safety.nodes': ['/**/safety_monitor']}
ZONE = 'safety:zone/high_voltage'
NAV2 = Path(__file__).resolve().parents[2] / 'config' / 'sources' / 'nav2.yaml'


def planner_keys(frame):
    return {item.key for pack in frame.packs if pack.cabin == 'planner' for item in pack.items}


def test_an_owned_key_from_another_node_is_refused_and_the_rest_taken(
        start_memory, context, add_node, namespace):
    _, probe = start_memory(OWNERS)
    owner = BoardWriter(add_node(rclpy.create_node('safety_monitor', namespace=namespace,
                                                   context=context)))
    probe.wait_matched(probe.board, owner._publisher)
    # The probe node (wm_probe) owns nothing: its safety key is refused, its goal taken.
    probe.board.publish(BoardUpdate(entries=[
        BoardEntry(key='safety:stop', value=json.dumps(True), importance=1.0),
        BoardEntry(key='goal:deliver', value=json.dumps({'x': 1}), importance=1.0)]))
    owner.set(ZONE, {'polygon': [[0, 0], [1, 0], [1, 1]]}, importance=1.0)
    frame = probe.wait_frame(lambda frame: {'goal:deliver', ZONE} <= planner_keys(frame))
    assert 'safety:stop' not in planner_keys(frame)
    status = probe.status('owners', lambda status: status.level == b'\x01')
    assert f'{namespace}/wm_probe: safety:stop (1)' in status.message
    assert probe.values(status) == {f'{namespace}/wm_probe -> safety:stop':
                                    '1 refused (owner safety)'}
    # A removal from a non-owner is refused too: the owner's key stays.
    probe.board.publish(BoardUpdate(removed_keys=[ZONE]))
    probe.status('owners', lambda status: probe.values(status).get(
        f'{namespace}/wm_probe -> {ZONE}') == '1 refused (owner safety)')
    assert ZONE in planner_keys(probe.wait_frame())
    explained = probe.explain('planner', 'safety:stop')
    assert explained.success and not explained.present
    assert explained.detail.endswith(f'; writes refused since the node started (owner safety): '
                                     f'{namespace}/wm_probe (1)')
    assert 'writes refused' not in probe.explain('planner', 'goal:deliver').detail


def test_a_resync_answer_of_a_non_owner_is_refused_the_owners_comes_back(
        start_memory, context, add_node, namespace):
    node, probe = start_memory(OWNERS)
    writers = {name: BoardWriter(add_node(rclpy.create_node(name, namespace=namespace,
                                                            context=context)))
               for name in ('safety_monitor', 'teleop')}
    probe.wait_matched(*(writer._publisher for writer in writers.values()))
    writers['safety_monitor'].set(ZONE, {'polygon': [[0, 0], [1, 0], [1, 1]]})
    writers['teleop'].set('safety:stop', True)
    before = probe.wait_frame(lambda frame: ZONE in planner_keys(frame))
    for transition in (node.trigger_deactivate, node.trigger_cleanup, node.trigger_configure,
                       node.trigger_activate):
        assert transition() == TransitionCallbackReturn.SUCCESS
    after = probe.wait_frame(lambda frame: frame.start_id != before.start_id
                             and not frame.resyncing and ZONE in planner_keys(frame))
    assert 'safety:stop' not in planner_keys(after)
    # Counted anew by the restarted node: its answer alone (the live write went to the last).
    start = len(probe.diagnostics)
    status = probe.status('owners', lambda status: status.level == b'\x01' and any(
        status in array.status for array in probe.diagnostics[start:]))
    assert probe.values(status) == {f'{namespace}/teleop -> safety:stop':
                                    '1 refused (owner safety)'}


def test_owners_that_cannot_be_used_fail_configure_naming_the_parameter(start_memory):
    node, probe = start_memory({**OWNERS, 'owners.safety.nodes': []}, configure=False)
    assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
    probe.status('lifecycle', lambda status: (
        'owners.safety.nodes: no node may write safety:*' in status.message))


def test_a_typo_in_an_owner_field_names_the_closest_one(start_memory):
    node, probe = start_memory({**OWNERS, 'owners.safety.node': ['/a']}, configure=False)
    assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
    probe.status('lifecycle', lambda status: 'owners.safety.node: unknown parameter (did you '
                 'mean owners.safety.nodes?)' in status.message)


def test_without_owners_no_owners_status_is_published(start_memory):
    _, probe = start_memory()
    probe.status('capacity')
    assert not any(status.name.endswith(': owners') for array in probe.diagnostics
                   for status in array.status)


def test_a_writer_the_graph_does_not_show_yet_is_refused_owned_keys_until_it_does():
    from working_memory.core.items import BoardEntry as Entry
    from working_memory.core.owners import owners_from_params
    from working_memory.engine.inputs import BoardBatch
    from working_memory.engine.ownership import GRAPH_PERIOD_S, UNKNOWN_WRITER, Ownership
    graph, asked = [], []

    def publishers():
        asked.append(True)
        return list(graph)
    ownership = Ownership(owners_from_params(
        ('safety',), {'safety': (('safety:*',), ('/**/safety_monitor',))}), publishers)
    batch = BoardBatch(entries=(Entry('safety:stop', True, 0.0), Entry('door:a', 'open', 0.0)),
                       removed_keys=(), errors=())
    taken, first = ownership.take(batch, b'gid', now=0.0)
    assert [entry.key for entry in taken.entries] == ['door:a']
    assert first == [(UNKNOWN_WRITER, 'safety:stop', 'safety')]
    graph.append(('/robot1/safety_monitor', b'gid'))
    taken, _ = ownership.take(batch, b'gid', now=GRAPH_PERIOD_S / 2)   # not asked again yet
    assert len(taken.entries) == 1 and len(asked) == 1
    taken, first = ownership.take(batch, b'gid', now=GRAPH_PERIOD_S)
    assert len(taken.entries) == 2 and not first and len(asked) == 2
    assert ownership.refused == {(UNKNOWN_WRITER, 'safety:stop'): 2}


def test_a_sources_owned_key_is_taken_from_its_owner_only(start_memory, context, add_node,
                                                          namespace, tmp_path):
    # The battery comes from a typed topic: its publisher is its writer.
    sources = tmp_path / 'nav2.yaml'
    sources.write_text(NAV2.read_text().replace('topic: /', 'topic: '))
    _, probe = start_memory({'sources_file': str(sources),
                             'cabins.planner.board_keys': ['goal:*', 'battery'],
                             'owner_names': ['energy'], 'owners.energy.keys': ['battery'],
                             'owners.energy.nodes': ['/**/battery_driver']})
    stranger = add_node(rclpy.create_node('teleop', namespace=namespace, context=context))
    driver = add_node(rclpy.create_node('battery_driver', namespace=namespace, context=context))
    publishers = {node: node.create_publisher(BatteryState, 'battery_state', 10)
                  for node in (stranger, driver)}
    probe.wait_matched(*publishers.values())
    publishers[stranger].publish(BatteryState(percentage=0.1))
    status = probe.status('owners', lambda status: status.level == b'\x01')
    assert probe.values(status) == {f'{namespace}/teleop -> battery': '1 refused (owner energy)'}
    assert 'battery' not in planner_keys(probe.wait_frame())
    publishers[driver].publish(BatteryState(percentage=0.9))
    frame = probe.wait_frame(lambda frame: 'battery' in planner_keys(frame))
    battery, = [item for pack in frame.packs if pack.cabin == 'planner' for item in pack.items
                if item.key == 'battery']
    assert json.loads(battery.value)['percentage'] > 0.8


def test_the_replay_refuses_the_writes_the_node_refused(start_memory, context, add_node,
                                                        namespace, tmp_path, spin_until,
                                                        replayed):
    node, probe = start_memory(OWNERS)
    owner = BoardWriter(add_node(rclpy.create_node('safety_monitor', namespace=namespace,
                                                   context=context)))
    recorder = add_node(RecorderNode(context=context, parameter_overrides=[
        Parameter('bag_path', value=str(tmp_path / 'bag')),
        Parameter('topics', value=[f'{namespace}/working_memory/frame', f'{namespace}/board'])]))
    assert spin_until(lambda: not recorder.waiting_for and all(
        publisher.get_subscription_count() == 2
        for publisher in (probe.board, owner._publisher)))
    owner.set(ZONE, {'polygon': [[0, 0], [1, 0], [1, 1]]}, importance=1.0)
    probe.board.publish(BoardUpdate(entries=[
        BoardEntry(key='safety:stop', value=json.dumps(True), importance=1.0)]))
    probe.board.publish(BoardUpdate(removed_keys=[ZONE]))
    probe.status('owners', lambda status: len(probe.values(status)) == 2)
    first = probe.wait_frame().tick
    probe.wait_frame(lambda frame: frame.tick > first + 3)
    run, settings, result = replayed(recorder, node)
    assert result.ticks > 3 and result.agreeing == result.ticks, result.mismatches[:2]
    # A bag that does not name the writers takes every write: the refused ones show.
    unnamed = dataclasses.replace(run, custom_data={})
    assert agreement(unnamed, settings).agreeing < result.ticks
    assert any('the bag does not name the writers' in note
               for note in next(replay(unnamed, settings)).notes)
