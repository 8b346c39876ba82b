"""The py_trees room with the real py_trees: one frozen pack per tree tick, read-only, explained."""

import py_trees
import pytest

from working_memory.core.items import Event, EventKind, Missing, MissingReason
from working_memory.core.pack_view import PackView
from working_memory.decision.monitor import TearingMonitor
from working_memory.trees import (Decide, KeyFresh, KeyPresent, NotMissingFor, TreeDecisions,
                                  WorkingMemoryToBlackboard, why_missing)
from working_memory.trees.blackboard import ExposureConflict, PackExposure

Status = py_trees.common.Status
Access = py_trees.common.Access
Blackboard = py_trees.blackboard.Blackboard
EVICTED = Missing('safety:zone/high_voltage', MissingReason.EVICTED,
                  'evicted at tick 41 (capacity): importance 0.30, unused since', since=95.0)


@pytest.fixture(autouse=True)
def clean_blackboard():
    Blackboard.clear()
    yield
    Blackboard.clear()


def pack(tick, cabin='planner', values=None, missing=(), frame_digest=None, stamp=None,
         stamps=None):
    values = {'pose': {'x': 1.0, 'y': 2.0}, 'goal:deliver': {'x': 5.0, 'y': 5.0}} \
        if values is None else values
    return PackView(cabin=cabin, tick=tick, stamp=100.0 + tick if stamp is None else stamp,
                    stamps=stamps or {},
                    digest=f'pack{tick}', frame_digest=frame_digest or f'frame{tick}',
                    values=values,
                    events=(Event(seq=1, stamp=99.0, kind=EventKind.FAILURE, source='executor',
                                  key='open_door', detail={'door': 'd1'}),),
                    missing=tuple(missing), map_window=None)


class Source:
    """What WorkingMemoryClient.latest() would return: the newest pack that arrived."""

    def __init__(self, view=None):
        self.view = view

    def __call__(self):
        return self.view


class Probe(py_trees.behaviour.Behaviour):
    """Reads `tick` of the pack on the blackboard; optionally lets a new pack arrive first."""

    def __init__(self, name, cabin='planner', arrive=None):
        super().__init__(name)
        self.board = self.attach_blackboard_client(name=name, namespace=f'/wm/{cabin}')
        self.board.register_key(key='tick', access=Access.READ)
        self.board.register_key(key='values/pose', access=Access.READ)
        self.arrive, self.seen = arrive, []

    def update(self):
        if self.arrive is not None:
            self.arrive()
        self.seen.append(self.board.tick)
        return Status.SUCCESS


def tree_of(*children, memory=False):
    root = py_trees.composites.Sequence('root', memory=memory, children=list(children))
    tree = py_trees.trees.BehaviourTree(root)
    tree.setup()
    return tree


def test_a_pack_arriving_mid_tree_tick_is_seen_at_the_next_tree_tick():
    source = Source(pack(1))
    memory = WorkingMemoryToBlackboard('planner', source)
    before = Probe('before', arrive=lambda: setattr(source, 'view', pack(source.view.tick + 1)))
    after = Probe('after')
    tree = tree_of(memory, before, after)
    tree.tick()
    # Pack 2 arrived between the two reads: the whole tree tick still read pack 1.
    assert before.seen == after.seen == [1]
    assert source.view.tick == 2
    tree.tick()
    assert before.seen == after.seen == [1, 2]
    assert memory.view.tick == 2


def test_the_blackboard_holds_the_pack_under_the_cabin_namespace():
    view = pack(7, missing=[EVICTED])
    memory = WorkingMemoryToBlackboard('planner', Source(view))
    tree_of(memory).tick()
    assert Blackboard.get('/wm/planner/tick') == 7
    assert Blackboard.get('/wm/planner/digest') == 'frame7'
    assert Blackboard.get('/wm/planner/pack_digest') == 'pack7'
    assert Blackboard.get('/wm/planner/stamp') == 107.0
    assert Blackboard.storage['/wm/planner/values/goal:deliver'] == {'x': 5.0, 'y': 5.0}
    assert Blackboard.get('/wm/planner/events')[0].key == 'open_door'
    assert Blackboard.get('/wm/planner/map_window') is None
    missing = Blackboard.get('/wm/planner/missing')
    assert missing['safety:zone/high_voltage'].reason is MissingReason.EVICTED
    assert Blackboard.get('/wm/planner/pack').tick == 7


def test_a_behaviour_reading_the_pack_gets_the_access_error_when_it_writes():
    tree_of(WorkingMemoryToBlackboard('planner', Source(pack(1))), Probe('reader')).tick()
    reader = py_trees.blackboard.Client(name='tree leaf', namespace='/wm/planner')
    reader.register_key(key='values/pose', access=Access.READ)
    with pytest.raises(AttributeError, match='does not have write access'):
        reader.set('values/pose', {'x': 0.0, 'y': 0.0})
    with pytest.raises(AttributeError, match='does not have write access'):
        setattr(reader, 'values/pose', {'x': 0.0, 'y': 0.0})
    assert Blackboard.storage['/wm/planner/values/pose'] == {'x': 1.0, 'y': 2.0}


@pytest.mark.parametrize('key', ['tick', 'digest', 'missing', 'values/pose'])
def test_a_behaviour_cannot_take_write_access_to_a_working_memory_key(key):
    tree_of(WorkingMemoryToBlackboard('planner', Source(pack(1)))).tick()
    writer = py_trees.blackboard.Client(name='tree leaf', namespace='/wm/planner')
    with pytest.raises(AttributeError, match='exclusive writer'):
        writer.register_key(key=key, access=Access.WRITE)
    with pytest.raises(AttributeError, match='already associated'):
        writer.register_key(key=key, access=Access.EXCLUSIVE_WRITE)


def test_a_writer_that_came_first_is_a_conflict_named_by_the_exposure():
    early = py_trees.blackboard.Client(name='early writer', namespace='/wm/planner')
    early.register_key(key='values/battery', access=Access.WRITE)
    exposure = PackExposure('planner')
    with pytest.raises(ExposureConflict, match='/wm/planner/values/battery'):
        exposure.expose(pack(1, values={'battery': 0.5}))


def test_exposed_values_cannot_be_changed_in_place():
    tree_of(WorkingMemoryToBlackboard('planner', Source(pack(1)))).tick()
    pose = Blackboard.storage['/wm/planner/values/pose']
    with pytest.raises(TypeError, match='frozen'):
        pose['x'] = 9.0
    with pytest.raises(TypeError, match='frozen'):
        Blackboard.get('/wm/planner/pack').values['pose']['x'] = 9.0
    with pytest.raises(TypeError):
        Blackboard.get('/wm/planner/missing')['pose'] = None


def test_a_key_the_next_pack_does_not_hold_leaves_the_blackboard_and_stays_claimed():
    source = Source(pack(1, values={'pose': {'x': 0, 'y': 0}, 'battery': 0.9}))
    tree = tree_of(WorkingMemoryToBlackboard('planner', source))
    tree.tick()
    assert Blackboard.storage['/wm/planner/values/battery'] == 0.9
    source.view = pack(2, values={'pose': {'x': 0, 'y': 0}})
    tree.tick()
    assert '/wm/planner/values/battery' not in Blackboard.storage
    writer = py_trees.blackboard.Client(name='tree leaf', namespace='/wm/planner')
    with pytest.raises(AttributeError):
        writer.register_key(key='values/battery', access=Access.WRITE)


def test_the_behaviour_waits_for_the_first_pack_and_refuses_another_cabins():
    source = Source()
    memory = WorkingMemoryToBlackboard('planner', source)
    tree = tree_of(memory)
    tree.tick()
    assert memory.status is Status.RUNNING
    assert 'waiting for the first pack of cabin planner' in memory.feedback_message
    source.view = pack(3, cabin='executor')
    tree.tick()
    assert memory.status is Status.FAILURE
    assert "pack of cabin 'executor'" in memory.feedback_message


def test_a_silent_working_memory_holds_the_tree_instead_of_its_last_pack():
    # A client's latest() gives None once its pack is too old (the node killed, stalled).
    source = Source(pack(5))
    memory = WorkingMemoryToBlackboard('planner', source)
    decide = Decide(TreeDecisions(memory), 'go')
    tree = tree_of(memory, decide)
    tree.tick()
    assert memory.status is Status.SUCCESS and decide.status is Status.SUCCESS
    source.view = None
    tree.tick()
    assert memory.status is Status.RUNNING and decide.status is Status.INVALID
    assert 'the working memory is silent' in memory.feedback_message
    assert 'tick 5' in memory.feedback_message
    source.view = pack(6)
    tree.tick()
    assert memory.status is Status.SUCCESS and memory.view.tick == 6


def test_a_failing_key_present_names_the_key_reason_and_detail():
    memory = WorkingMemoryToBlackboard('planner', Source(pack(100, missing=[EVICTED])))
    condition = KeyPresent('safety:zone/high_voltage', 'planner')
    tree = tree_of(memory, condition)
    tree.tick()
    assert condition.status is Status.FAILURE
    assert condition.feedback_message == (
        'safety:zone/high_voltage: EVICTED (evicted at tick 41 (capacity): importance 0.30, '
        'unused since 105.0 s ago)')
    # py_trees' own display shows it.
    assert 'EVICTED (evicted at tick 41 (capacity)' in py_trees.display.unicode_tree(
        tree.root, show_status=True)


def test_a_drop_category_note_explains_a_key_it_covers():
    drop = Missing('board:safety:*', MissingReason.INJECTED_DROP, 'dropped by --drop')
    tree = tree_of(WorkingMemoryToBlackboard('planner', Source(pack(2, missing=[drop]))),
                   condition := KeyPresent('safety:zone/a', 'planner'))
    tree.tick()
    assert condition.feedback_message == ('safety:zone/a: INJECTED_DROP (dropped by --drop) '
                                          '[note on board:safety:*]')


def test_key_present_succeeds_on_a_present_key_and_names_what_the_pack_holds_instead():
    tree = tree_of(WorkingMemoryToBlackboard('planner', Source(pack(2))),
                   py_trees.composites.Selector('any', memory=False, children=[
                       current := KeyPresent('goal:current', 'planner'),
                       absent := KeyPresent('battery', 'planner'),
                       present := KeyPresent('pose', 'planner')]))
    tree.tick()
    assert present.status is Status.SUCCESS and current.status is Status.FAILURE
    # A required goal:* met by goal:deliver leaves no note on goal:current.
    assert current.feedback_message == ('goal:current: not in the planner pack of tick 2; of '
                                        'goal:* it holds goal:deliver (no missing note on '
                                        'goal:current)')
    assert absent.feedback_message == (
        'battery: not in the planner pack of tick 2 (no missing note: its manifest requires it '
        'neither by name nor by a glob that no key met)')
    held = ['obj:4', 'obj:1', 'obj:3', 'obj:2', 'objective']
    assert why_missing('obj:9', 'planner', 3, 0.0, {}, held).endswith(
        'of obj:* it holds obj:1, obj:2, obj:3 and 1 more (no missing note on obj:9)')


def test_a_condition_without_a_pack_on_the_blackboard_says_so():
    condition = KeyPresent('pose', 'planner')
    tree_of(condition).tick()
    assert condition.status is Status.FAILURE
    assert 'no planner pack on the blackboard' in condition.feedback_message


def test_key_fresh_fails_on_an_old_value_and_on_a_missing_key():
    # The pose was stamped 104.0 by its writer; the pack of tick 5 frozen at 105.0.
    clock = Source(110.0)
    view = pack(5, missing=[EVICTED], stamps={'pose': 104.0})
    memory = WorkingMemoryToBlackboard('planner', Source(view))
    fresh = KeyFresh('pose', 'planner', max_age_s=2.0, clock=clock)
    gone = KeyFresh('safety:zone/high_voltage', 'planner', max_age_s=2.0, clock=clock)
    tree = tree_of(memory, py_trees.composites.Parallel(
        'both', policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[fresh, gone]))
    tree.tick()   # the pose's value is 6 s old
    assert fresh.status is Status.FAILURE
    assert fresh.feedback_message == ('pose: in the pack of tick 5, its value 6.00 s old '
                                      '(more than 2 s)')
    clock.view = 105.5   # the pack is 0.5 s old, the value 1.5 s
    tree.tick()
    assert fresh.status is Status.SUCCESS
    assert fresh.feedback_message == 'pose: in the pack of tick 5, its value 1.50 s old'
    clock.view = 105.5 + 1.0   # the value 2.5 s old though the pack is not: a stopped writer
    tree.tick()
    assert fresh.status is Status.FAILURE
    assert gone.status is Status.FAILURE and 'EVICTED (evicted at tick 41' in gone.feedback_message
    with pytest.raises(ValueError, match='max_age_s'):
        KeyFresh('pose', 'planner', max_age_s=-1.0)


def test_not_missing_for_fails_only_on_its_reason():
    memory = WorkingMemoryToBlackboard('planner', Source(pack(3, missing=[EVICTED])))
    evicted = NotMissingFor('safety:zone/high_voltage', 'planner', MissingReason.EVICTED)
    stale = NotMissingFor('safety:zone/high_voltage', 'planner', 'STALE')
    tree = tree_of(memory, py_trees.composites.Parallel(
        'both', policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[evicted, stale]))
    tree.tick()
    assert evicted.status is Status.FAILURE
    assert evicted.feedback_message.startswith('safety:zone/high_voltage: EVICTED (evicted at')
    assert stale.status is Status.SUCCESS
    with pytest.raises(ValueError, match='reason: must be one of'):
        NotMissingFor('pose', 'planner', 'GONE')


def test_the_decision_carries_the_pack_the_tree_read_not_the_newest():
    source = Source(pack(1))
    memory = WorkingMemoryToBlackboard('planner', source)
    decisions = TreeDecisions(memory)
    arrive = Probe('arrive', arrive=lambda: setattr(source, 'view', pack(2)))
    tree = tree_of(memory, arrive, Decide(decisions, 'route', detail=lambda view: view.tick))
    tree.tick()
    report = decisions.report(tree.root.status)
    assert (report.cabin, report.tick, report.digest, report.decision, report.detail) == (
        'planner', 1, 'frame1', 'route', 1)
    # No decision recorded: the root's status is the decision.
    tree.root.children[2].stop(Status.INVALID)
    assert decisions.report(Status.RUNNING).decision == 'running'


def test_no_report_before_the_first_pack():
    memory = WorkingMemoryToBlackboard('planner', Source())
    decisions = TreeDecisions(memory)
    tree_of(memory).tick()
    assert decisions.report(Status.RUNNING) is None


def _tree_report(cabin, view):
    memory = WorkingMemoryToBlackboard(cabin, Source(view))
    decisions = TreeDecisions(memory)
    tree = tree_of(memory, Decide(decisions, 'go'))
    tree.tick()
    return decisions.report(tree.root.status)


def test_the_monitor_raises_tearing_when_two_trees_read_different_frames_of_one_tick():
    monitor = TearingMonitor()
    planner = _tree_report('planner', pack(9, cabin='planner', frame_digest='frame-a'))
    executor = _tree_report('executor', pack(9, cabin='executor', frame_digest='frame-b'))
    assert monitor.observe(planner.cabin, planner.tick, planner.digest) is None
    alarm = monitor.observe(executor.cabin, executor.tick, executor.digest)
    assert alarm is not None and alarm.tick == 9
    assert dict(alarm.digests) == {'frame-a': ('planner',), 'frame-b': ('executor',)}


def test_two_trees_on_one_frame_raise_no_tearing():
    monitor = TearingMonitor()
    for cabin in ('planner', 'executor'):
        report = _tree_report(cabin, pack(9, cabin=cabin, frame_digest='frame-a'))
        assert monitor.observe(report.cabin, report.tick, report.digest) is None


def test_shutting_the_tree_down_releases_the_keys():
    tree = tree_of(WorkingMemoryToBlackboard('planner', Source(pack(1))))
    tree.tick()
    tree.shutdown()
    assert not [key for key in Blackboard.storage if key.startswith('/wm/planner/')]
    writer = py_trees.blackboard.Client(name='next', namespace='/wm/planner')
    writer.register_key(key='tick', access=Access.WRITE)
