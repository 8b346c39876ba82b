"""The simulator's publish cadence is exact on sim time; static keys go out only on change."""

import pytest

from working_memory.core.items import BoardEntry
from working_memory.sim.cadence import Cadence, ChangedEntries

MS = 1_000_000


def due_times(cadence, step_ns, until_ns):
    return [now for now in range(0, until_ns + 1, step_ns) if cadence.due(now)]


def test_cadence_is_due_first_then_once_per_period():
    assert due_times(Cadence(10.0), 20 * MS, 500 * MS) == [0, 100 * MS, 200 * MS, 300 * MS,
                                                           400 * MS, 500 * MS]


def test_cadence_after_a_gap_is_due_once_and_keeps_its_grid():
    cadence = Cadence(10.0)
    assert cadence.due(0)
    assert cadence.due(350 * MS)
    assert not cadence.due(399 * MS)
    assert cadence.due(400 * MS)


def test_zero_rate_is_never_due():
    assert due_times(Cadence(0.0), 10 * MS, 1000 * MS) == []


def test_negative_rate_is_rejected():
    with pytest.raises(ValueError, match='rate'):
        Cadence(-1.0)


def entry(key, value):
    return BoardEntry(key, value, stamp=0.0)


def test_changed_entries_pass_only_new_values():
    changes = ChangedEntries()
    first = changes.select([entry('door:main', {'state': 'closed'}), entry('goal', None)])
    assert [e.key for e in first] == ['door:main', 'goal']
    assert changes.select([entry('door:main', {'state': 'closed'}), entry('goal', None)]) == []
    opened = changes.select([entry('door:main', {'state': 'open'}), entry('goal', None)])
    assert [e.value for e in opened] == [{'state': 'open'}]
