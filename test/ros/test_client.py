"""WorkingMemoryClient over real DDS: latched frames, this cabin's pack, blocking service calls."""

import json
import threading
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor

from working_memory.client import (TWIN_AFTER_FRAMES, WorkingMemoryClient, WorkingMemoryError,
                                   WorkingMemoryTimeout)
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import MissingReason
from working_memory.core.windows import WINDOWS_KEPT, window_digest
from working_memory.msg import ContextFrame, ContextPack, MissingItem, WorkingItem
from working_memory.msg import MapWindow as MapWindowMsg
from working_memory.ros import qos
from working_memory.ros.conversions import (cabin_pack_from_frame, map_window_msg,
                                            time_from_seconds)
from working_memory.ros.qos import frame_qos
from working_memory.srv import Assemble, Explain

WAIT_S = 20.0  # bounds a hung test, never a timing assertion


def pack_msg(cabin, tick, values, missing=(), stamp=None):
    msg = ContextPack(tick=tick, cabin=cabin, digest=f'{cabin}-{tick}',
                      items=[WorkingItem(key=key, value=json.dumps(value))
                             for key, value in values.items()],
                      missing=[MissingItem(key=key, reason=getattr(MissingItem, reason.value))
                               for key, reason in missing])
    msg.header.stamp = time_from_seconds(time.time() if stamp is None else stamp)
    return msg


def frame_msg(tick, packs, stamp=None, started=0.0, start_id=''):
    """Return a frame of `tick` made at `stamp` [s] (now: a working memory that is alive)."""
    stamp = time.time() if stamp is None else stamp
    msg = ContextFrame(tick=tick, digest=f'frame-{tick}',
                       packs=[pack_msg(cabin, tick, values, stamp=stamp)
                              for cabin, values in packs.items()],
                       started=time_from_seconds(started), start_id=start_id)
    msg.header.stamp = time_from_seconds(stamp)
    return msg


PACKS = {'planner': {'goal:deliver': {'x': 17, 'y': 3}}, 'executor': {'pose': {'x': 1, 'y': 2}}}


@pytest.fixture
def wm_namespace(namespace):
    return f'{namespace}/working_memory'


@pytest.fixture
def frames(context, add_node, wm_namespace):
    """Return publish(frame): a fake working memory's latched ~/frame publisher."""
    node = add_node(rclpy.create_node('fake_working_memory', context=context))
    publisher = node.create_publisher(ContextFrame, f'{wm_namespace}/frame', frame_qos())
    return publisher.publish


def client_node(context, name):
    return rclpy.create_node(name, context=context)


def test_late_client_gets_the_latched_frame(context, add_node, spin_until, frames, wm_namespace):
    frames(frame_msg(3, PACKS))
    client = WorkingMemoryClient(add_node(client_node(context, 'planner')), 'planner',
                                 wm_namespace)
    assert client.latest() is None
    assert spin_until(lambda: client.latest() is not None)
    view = client.latest()
    assert (view.cabin, view.tick, view.frame_digest, view.digest) == \
        ('planner', 3, 'frame-3', 'planner-3')
    assert dict(view.values) == {'goal:deliver': {'x': 17, 'y': 3}}


def test_each_client_gets_its_own_cabins_pack(context, add_node, spin_until, frames, wm_namespace):
    planner = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace)
    executor = WorkingMemoryClient(add_node(client_node(context, 'e')), 'executor', wm_namespace)
    frames(frame_msg(5, PACKS))
    assert spin_until(lambda: planner.latest() and executor.latest())
    assert planner.latest().value('pose') is None
    assert executor.latest().value('pose') == {'x': 1, 'y': 2}
    assert planner.latest().frame_digest == executor.latest().frame_digest == 'frame-5'


def test_on_pack_runs_once_per_new_frame(context, add_node, spin_until, frames, wm_namespace):
    ticks = []
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace,
                                 on_pack=lambda view: ticks.append(view.tick))
    for tick in (1, 2, 2, 3):
        frames(frame_msg(tick, PACKS))
        assert spin_until(lambda: client.latest() is not None and client.latest().tick == tick)
    assert ticks == [1, 2, 3]


def test_frame_without_this_cabin_keeps_the_previous_pack(context, add_node, spin_until, frames,
                                                          wm_namespace):
    monitor = WorkingMemoryClient(add_node(client_node(context, 'm')), 'monitor', wm_namespace)
    planner = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace)
    frames(frame_msg(1, dict(PACKS, monitor={})))
    assert spin_until(lambda: monitor.latest() and planner.latest())
    frames(frame_msg(2, PACKS))
    assert spin_until(lambda: planner.latest().tick == 2)
    assert monitor.latest().tick == 1


def test_unreadable_pack_names_the_field():
    frame = frame_msg(4, PACKS)
    frame.packs[0].items[0].value = '{not json'
    with pytest.raises(ValueError, match=r"pack 'planner' tick 4: items\['goal:deliver'\].value"):
        cabin_pack_from_frame(frame, 'planner')


def test_pack_tick_must_match_its_frame():
    frame = frame_msg(4, PACKS)
    frame.packs[1].tick = 3
    with pytest.raises(ValueError, match="pack 'executor' has tick 3"):
        cabin_pack_from_frame(frame, 'executor')


def test_missing_items_arrive_with_their_reasons():
    frame = ContextFrame(tick=2, digest='f', packs=[pack_msg(
        'planner', 2, {}, missing=[('safety:*', MissingReason.INJECTED_DROP)])])
    view = cabin_pack_from_frame(frame, 'planner')
    assert [(m.key, m.reason) for m in view.missing] == [('safety:*', MissingReason.INJECTED_DROP)]


class FakeServices:
    """A fake working memory answering Assemble and Explain for the cabins of PACKS."""

    def __init__(self, node, wm_namespace):
        self.calls = 0
        node.create_service(Assemble, f'{wm_namespace}/assemble', self._assemble)
        node.create_service(Explain, f'{wm_namespace}/explain', self._explain)

    def _assemble(self, request, response):
        self.calls += 1
        if request.cabin not in PACKS:
            response.message = f'cabin {request.cabin!r}: unknown (known: planner, executor)'
            return response
        response.success = True
        response.pack = pack_msg(request.cabin, request.tick or 9, PACKS[request.cabin])
        return response

    def _explain(self, request, response):
        response.success = True
        response.present = request.key in PACKS.get(request.cabin, {})
        response.reason = 'PRESENT' if response.present else 'NOT_IN_MANIFEST'
        response.detail = f'{request.cabin}/{request.key}'
        return response


@pytest.fixture
def multithreaded(context):
    """Return add(node): spin nodes in a MultiThreadedExecutor on a background thread."""
    executor = MultiThreadedExecutor(context=context)
    thread = threading.Thread(target=executor.spin, daemon=True)
    nodes = []

    def add(node):
        executor.add_node(node)
        nodes.append(node)
        if not thread.is_alive():
            thread.start()
        return node
    yield add
    executor.shutdown()
    thread.join(WAIT_S)
    for node in nodes:
        node.destroy_node()


def test_assemble_returns_the_pack_from_another_thread(context, multithreaded, wm_namespace):
    FakeServices(multithreaded(rclpy.create_node('fake_wm', context=context)), wm_namespace)
    client = WorkingMemoryClient(multithreaded(client_node(context, 'p')), 'planner',
                                 wm_namespace, timeout_s=WAIT_S)
    view = client.assemble(tick=7)
    assert (view.cabin, view.tick, view.digest, view.frame_digest) == ('planner', 7, 'planner-7',
                                                                       None)
    assert view.value('goal:deliver') == {'x': 17, 'y': 3}


def test_refused_request_raises_with_the_nodes_reason(context, multithreaded, wm_namespace):
    FakeServices(multithreaded(rclpy.create_node('fake_wm', context=context)), wm_namespace)
    client = WorkingMemoryClient(multithreaded(client_node(context, 'g')), 'ghost', wm_namespace,
                                 timeout_s=WAIT_S)
    with pytest.raises(WorkingMemoryError, match="cabin 'ghost': unknown"):
        client.assemble()


def test_explain_from_a_callback_under_a_multithreaded_executor(context, multithreaded, frames,
                                                                wm_namespace):
    FakeServices(multithreaded(rclpy.create_node('fake_wm', context=context)), wm_namespace)
    answers, done = [], threading.Event()

    def on_pack(view):
        answers.append(client.explain('goal:deliver', tick=view.tick))
        done.set()
    client = WorkingMemoryClient(multithreaded(client_node(context, 'p')), 'planner',
                                 wm_namespace, on_pack=on_pack, timeout_s=WAIT_S)
    frames(frame_msg(2, PACKS))   # latched: the client gets it whenever it matches
    assert done.wait(WAIT_S)
    assert answers[0].present and answers[0].reason == 'PRESENT'
    assert answers[0].detail == 'planner/goal:deliver'


def test_call_from_a_single_threaded_callback_times_out_instead_of_deadlocking(
        context, add_node, spin_until, frames, wm_namespace):
    fake = FakeServices(add_node(rclpy.create_node('fake_wm', context=context)), wm_namespace)
    errors = []

    def on_pack(view):
        try:
            client.assemble(timeout_s=0.5)
        except WorkingMemoryTimeout as error:
            errors.append(error)
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace,
                                 on_pack=on_pack)
    frames(frame_msg(2, PACKS))
    assert spin_until(lambda: errors)
    assert 'no answer within 0.5 s' in str(errors[0]) and isinstance(errors[0], TimeoutError)
    # The executor is free again: the request it could not answer is served, and dropped.
    assert spin_until(lambda: fake.calls == 1)


def test_service_that_is_not_there_times_out_naming_it(context, add_node, wm_namespace):
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace)
    with pytest.raises(WorkingMemoryTimeout,
                       match=f'{wm_namespace}/explain: service not available'):
        client.explain('pose', timeout_s=0.3)


# -- map windows by reference: joined, checked, never used unchecked ------------------


def fake_window(origin_x=0.0):
    cells = np.zeros((4, 5), dtype=np.int8)
    cells[1, 2] = 100
    window = MapWindow(cells, (origin_x, 0.0), 0.1)
    return window, window_digest(window)


def fake_memory(context, add_node, wm_namespace):
    """Return (publish frame, publish planner window) of a fake working memory."""
    node = add_node(rclpy.create_node('fake_working_memory', context=context))
    frames = node.create_publisher(ContextFrame, f'{wm_namespace}/frame', qos.frame_qos())
    windows = node.create_publisher(MapWindowMsg, f'{wm_namespace}/planner/window',
                                    qos.latched_qos(WINDOWS_KEPT))
    return frames, windows


def referencing_frame(tick, digest):
    msg = frame_msg(tick, {'planner': {'goal:deliver': {'x': 17, 'y': 3}}})
    msg.packs[0].map_window_digest = digest
    return msg


def test_a_window_whose_cells_do_not_match_its_digest_is_rejected(context, add_node,
                                                                  spin_until, namespace):
    wm_namespace = f'{namespace}/working_memory'
    frames, windows = fake_memory(context, add_node, wm_namespace)
    client = WorkingMemoryClient(add_node(rclpy.create_node('planner', context=context)),
                                 'planner', wm_namespace)
    window, digest = fake_window()
    forged = map_window_msg('planner', digest, window, 'map', 1, 0.0)
    forged.grid.data[0] = 100   # one cell changed after the digest was taken
    assert spin_until(lambda: frames.get_subscription_count() and windows.get_subscription_count())
    windows.publish(forged)
    frames.publish(referencing_frame(1, digest))
    assert spin_until(lambda: client.rejected_windows == 1)
    assert client.latest() is None   # held: the frame's window has not arrived
    windows.publish(map_window_msg('planner', digest, window, 'map', 1, 0.0))
    assert spin_until(lambda: client.latest() is not None)
    view = client.latest()
    assert view.tick == 1 and np.array_equal(view.map_window.data, window.data)


def test_a_pack_whose_window_never_comes_is_dropped_when_a_later_one_is_complete(
        context, add_node, spin_until, namespace):
    wm_namespace = f'{namespace}/working_memory'
    frames, windows = fake_memory(context, add_node, wm_namespace)
    packs = []
    client = WorkingMemoryClient(add_node(rclpy.create_node('planner', context=context)),
                                 'planner', wm_namespace, on_pack=packs.append)
    assert spin_until(lambda: frames.get_subscription_count() and windows.get_subscription_count())
    _, lost = fake_window(origin_x=1.0)
    frames.publish(referencing_frame(1, lost))   # its window is never published
    assert spin_until(lambda: client.waiting == 1)
    window, digest = fake_window()
    windows.publish(map_window_msg('planner', digest, window, 'map', 2, 0.0))
    frames.publish(referencing_frame(2, digest))
    assert spin_until(lambda: client.latest() is not None)
    assert [view.tick for view in packs] == [2] and client.dropped_packs == 1


# -- a silent or restarted working memory ------------------------------------------


def test_a_pack_older_than_the_bound_is_not_handed_out_as_current(
        context, add_node, spin_until, frames, wm_namespace):
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace,
                                 max_age_s=2.0)
    frames(frame_msg(7, PACKS, stamp=time.time() - 10.0))   # the last frame of a node gone
    assert spin_until(lambda: client.last() is not None)
    assert client.latest() is None
    assert client.last().tick == 7 and 9.0 < client.age() < 20.0
    frames(frame_msg(8, PACKS))
    assert spin_until(lambda: client.latest() is not None and client.latest().tick == 8)


def test_the_default_bound_is_a_few_measured_tick_periods(
        context, add_node, spin_until, frames, wm_namespace):
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace)
    now = time.time()
    frames(frame_msg(1, PACKS, stamp=now - 3.0))
    assert spin_until(lambda: client.last() is not None)
    assert client.max_age_s == pytest.approx(1.0)   # FIRST_MAX_AGE_S: no period known yet
    frames(frame_msg(3, PACKS, stamp=now - 2.0))     # two ticks in 1 s: a period of 0.5 s
    assert spin_until(lambda: client.last().tick == 3)
    assert client.max_age_s == pytest.approx(1.5)
    assert client.latest() is None and client.age() > 2.0
    frames(frame_msg(4, PACKS, stamp=time.time()))
    assert spin_until(lambda: client.latest() is not None)


def test_a_restarted_nodes_packs_replace_the_old_nodes_and_a_late_old_frame_does_not(
        context, add_node, spin_until, frames, wm_namespace):
    seen = []
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace,
                                 on_pack=seen.append)
    frames(frame_msg(500, PACKS, started=100.0, start_id='old'))
    assert spin_until(lambda: seen)
    frames(frame_msg(1, PACKS, start_id='new'))   # a new node: ticks from 1, sim time 0
    assert spin_until(lambda: client.latest().tick == 1)
    frames(frame_msg(501, PACKS, started=100.0, start_id='old'))   # a late frame of the node gone
    frames(frame_msg(2, PACKS, started=0.0, start_id='new'))
    assert spin_until(lambda: client.latest().tick == 2)
    assert [(view.start_id, view.tick) for view in seen] == [('old', 500), ('new', 1),
                                                             ('new', 2)]
    assert client.twin_frames == 0   # the old node's last frame in flight: no twin


def test_two_live_node_starts_are_not_mixed_the_client_keeps_one(
        context, add_node, spin_until, frames, wm_namespace):
    twin = add_node(rclpy.create_node('fake_working_memory', context=context)).create_publisher(
        ContextFrame, f'{wm_namespace}/frame', frame_qos()).publish
    seen = []
    client = WorkingMemoryClient(add_node(client_node(context, 'p')), 'planner', wm_namespace,
                                 on_pack=seen.append)
    ticks = iter(range(1, 2000))

    def interleave():   # two live nodes of one name, taking turns on one topic
        tick = next(ticks)
        (frames, twin)[tick % 2](frame_msg(tick, PACKS, start_id='ab'[tick % 2]))
    assert spin_until(lambda: client.twin_frames >= TWIN_AFTER_FRAMES, on_spin=interleave)
    starts = [view.start_id for view in seen]
    assert sum(1 for one, other in zip(starts, starts[1:]) if one != other) <= 1
    assert client.latest().start_id == starts[-1]
