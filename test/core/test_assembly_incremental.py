"""A tick reclassifies only what changed: it assembles exactly what a start from scratch would."""

from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.assembly import Assembler
from working_memory.core.board import BoardSnapshot
from working_memory.core.eventlog import EventLog
from working_memory.core.eviction import WorkingSet
from working_memory.core.items import BoardEntry, Event, EventKind
from working_memory.core.manifest import Manifest

CABINS = {
    'planner': {'board_keys': ['goal:*', 'safety:*', 'pose', 'door:*', 'note:*'],
                'required': ['goal:*', 'pose', 'door:*'],
                'weights': ['door:*=0.6', 'pose=0.9', 'note:*=0.2'],
                'tags': {'exclude': ['charging'], 'from_goal': 'goal:*'},
                'events': {'window_s': 5.0, 'max_count': 4, 'kinds': ['FAILURE', 'CONSTRAINT']},
                'drop': ['door:d3']},
    'monitor': {'board_keys': ['sensor:*', 'pose', 'note:*', 'door:*'],
                'required': ['sensor:*', 'note:n1'],
                'weights': ['sensor:*=0.05', 'note:*=0.4'],
                'tags': {'include': ['energy']},
                'events': {'window_s': 3.0, 'kinds': ['ALARM', 'FAILURE']}},
}
KEYS = ('goal:a', 'goal:b', 'safety:z', 'pose', 'door:d1', 'door:d3', 'note:n1', 'note:n2',
        'sensor:s1', 'sensor:s2', 'sensor:s3', 'other:x')
TAGS = ((), ('energy',), ('charging',), ('delivery',))
GOAL_VALUES = ({'tags': ['delivery']}, {'tags': ['energy']}, {'x': 1})

entries = st.builds(
    lambda key, value, importance, ttl, tags: (key, value, importance, ttl, tags),
    st.sampled_from(KEYS), st.one_of(st.integers(0, 3), st.sampled_from(GOAL_VALUES)),
    st.one_of(st.none(), st.sampled_from([0.1, 0.5, 0.9])),
    st.sampled_from([0.0, 0.0, 0.4, 1.5]), st.sampled_from(TAGS))
steps = st.lists(st.tuples(
    st.lists(entries, max_size=4),                                   # set
    st.lists(st.sampled_from(KEYS), max_size=2),                     # remove
    st.lists(st.sampled_from([EventKind.FAILURE, EventKind.ALARM, EventKind.CONSTRAINT]),
             max_size=2),                                            # events
    st.sampled_from([0.1, 0.3, 1.0, 2.5])),                          # time step [s]
    min_size=1, max_size=25)


def _frame_facts(frame):
    return (frame.digest, [r.key for r in frame.evictions], [r.key for r in frame.readmitted],
            {cabin: (pack.digest, pack.missing, pack.absent, pack.readmitted,
                     [(item.key, item.last_used) for item in pack.items])
             for cabin, pack in frame.packs.items()})


@settings(max_examples=150, deadline=None)
@given(steps, st.integers(2, 8))
def test_incremental_tick_assembles_what_a_fresh_board_picture_would(steps, capacity):
    manifests = {name: Manifest.from_dict(name, fields) for name, fields in CABINS.items()}
    kept_set, fresh_set = WorkingSet(capacity), WorkingSet(capacity)
    board = BoardSnapshot(kept_set.timebase)
    log = EventLog(100, kept_set.timebase)
    kept = Assembler(manifests, kept_set)
    fresh = Assembler(manifests, fresh_set)
    now = 0.0
    for tick, (sets, removes, kinds, step) in enumerate(steps, start=1):
        now += step
        kept_set.timebase.observe(now)
        removes = [key for key in removes if key not in {e[0] for e in sets}]
        board.apply([BoardEntry(key, value, now, importance, ttl, tags)
                     for key, value, importance, ttl, tags in sets], removes)
        for kind in kinds:
            log.append(Event(now, kind, 'test', f'k{tick}'))
        # Manifests set again: a new index of the board, so this assembler starts over.
        fresh.set_manifests(manifests)
        assert _frame_facts(kept.assemble(tick, now, board, log, None)) == _frame_facts(
            fresh.assemble(tick, now, board, log, None))
