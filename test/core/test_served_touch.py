"""Marking a served set used touches what touching each served key would, and forgets the same."""

from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.eviction import HalfLifeBlend, ImportanceLRU, WorkingSet

KEYS = [f'k{n}' for n in range(8)] + ['goal:g']
ops = st.lists(st.one_of(
    st.tuples(st.just('put'), st.sampled_from(KEYS), st.sampled_from([0.1, 0.5, 0.9]),
              st.booleans()),
    st.tuples(st.just('serve'), st.lists(st.sampled_from(KEYS), unique=True)),
    st.tuples(st.just('settle'), st.lists(st.sampled_from(KEYS))),
    st.tuples(st.just('remove'), st.sampled_from(KEYS))), max_size=40)


def _state(ws):
    return ([tuple(item) for item in ws.items()], [tuple(item) for item in ws.evicted_items()],
            ws.eviction_log, [ws.readmission(key) for key in KEYS])


@settings(max_examples=200, deadline=None)
@given(ops, st.integers(1, 5), st.sampled_from([ImportanceLRU(), HalfLifeBlend(2.0)]))
def test_touch_present_forgets_exactly_as_touching_each_present_unused_key(ops, capacity,
                                                                           policy):
    served, each = WorkingSet(capacity, policy=policy), WorkingSet(capacity, policy=policy)
    now = 0.0
    for op in ops:
        if op[0] != 'serve':   # a put and the serving after it may share a tick's time
            now += 0.25
        for ws in (served, each):
            ws.tick += 1
        if op[0] == 'put':
            _, key, importance, defer = op
            assert (served.put(key, now, importance=importance, now=now, defer_eviction=defer)
                    == each.put(key, now, importance=importance, now=now,
                                defer_eviction=defer))
        elif op[0] == 'serve':
            keys = sorted(op[1])
            served.touch_present(keys, now)
            each.touch_many([key for key in keys if (item := each.get(key)) is not None
                             and item.last_used < each.timebase.observe(now)], now)
            assert served.readmissions_of(keys) == [
                r for r in map(each.readmission, keys) if r is not None]
        elif op[0] == 'settle':
            assert served.settle(op[1]) == each.settle(op[1])
        else:
            assert served.remove(op[1]) == each.remove(op[1])
        assert _state(served) == _state(each)
        asked = KEYS + ['unknown']
        assert served.items_of(asked) == [served.get(key) for key in asked]
    # What goes next is the same too: fill both far over capacity.
    for n in range(3 * capacity):
        now += 0.25
        assert (served.put(f'new{n}', n, importance=0.3, now=now)
                == each.put(f'new{n}', n, importance=0.3, now=now))
