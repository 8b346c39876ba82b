"""Two working memories under one name are not missed: both say so, consumers do not mix them."""

import rclpy

from working_memory.client import WorkingMemoryClient
from working_memory.engine.health import Level
from working_memory.engine.twins import TwinCheck, gid_text, twin_status

OK, ERROR = bytes([Level.OK]), bytes([Level.ERROR])   # as DiagnosticStatus.level holds them


def frame_gids(node):
    """Return {gid text} of the publishers of `node`'s frame topic, from the graph."""
    return {gid_text(bytes(info.endpoint_gid))
            for info in node.get_publishers_info_by_topic(node.resolve_topic_name('~/frame'))}


def test_two_nodes_of_one_name_each_name_the_other_as_an_error(start_memory):
    first, probe = start_memory()
    start_memory()
    gids = frame_gids(first)
    assert len(gids) == 2
    named = set()

    def both_named(status):
        if status.level == ERROR:
            named.add(probe.values(status)['others'])
        return named == gids
    status = probe.status('twins', both_named)
    assert 'another node named' in status.message and 'stop one' in status.message


def test_a_twin_gone_the_node_says_it_is_alone_again(start_memory, executor):
    _, probe = start_memory()
    second, _ = start_memory()
    probe.status('twins', lambda status: status.level == ERROR)
    executor.remove_node(second)
    second.destroy_node()
    start = len(probe.diagnostics)
    probe.status('twins', lambda status: status.level == OK and any(
        status in array.status for array in probe.diagnostics[start:]))


def test_a_client_keeps_one_of_two_live_twins_and_counts_the_others_frames(
        start_memory, context, add_node, spin_until, namespace):
    start_memory()
    start_memory()
    seen = []
    client = WorkingMemoryClient(add_node(rclpy.create_node('twin_reader', context=context)),
                                 'planner', f'{namespace}/working_memory', on_pack=seen.append)
    assert spin_until(lambda: client.twin_frames >= 5)
    starts = [view.start_id for view in seen]
    switches = sum(1 for a, b in zip(starts, starts[1:]) if a != b)
    assert switches <= 1   # at most the one switch to the twin first seen after the first
    assert len(set(starts)) <= 2
    kept = starts[-1]
    assert all(start == kept for start in starts[starts.index(kept):])


def test_the_status_names_only_other_gids_of_its_own_name():
    own, other, elsewhere = b'\x01' * 16, b'\x02' * 16, b'\x03' * 16
    alone = twin_status('/wm', '/wm/frame', own, [('/wm', own), ('/robot1/wm', elsewhere)])
    assert alone.level == Level.OK
    twin = twin_status('/wm', '/wm/frame', own, [('/wm', own), ('/wm', other)])
    assert twin.level == Level.ERROR and dict(twin.values)['others'] == gid_text(other)
    unknown = twin_status('/wm', '/wm/frame', None, [('/wm', own), ('/wm', other)])
    assert unknown.level == Level.ERROR


def test_the_check_takes_its_own_gid_as_the_one_its_publisher_added_and_asks_once_a_period():
    own, other = b'\x01' * 16, b'\x02' * 16
    graph = [('/wm', other)]   # a twin already there
    asked = []

    def publishers():
        asked.append(True)
        return list(graph)
    check = TwinCheck('/wm', '/wm/frame', publishers, period_s=1.0)
    graph.append(('/wm', own))
    check.created()
    status, new = check.status(now=10.0)
    assert status.level == Level.ERROR and dict(status.values)['others'] == gid_text(other)
    assert new
    calls = len(asked)
    assert check.status(now=10.5) == (status, False) and len(asked) == calls
    graph.remove(('/wm', other))
    status, new = check.status(now=11.0)
    assert status.level == Level.OK and not new
