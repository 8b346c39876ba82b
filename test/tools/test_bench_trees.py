"""The py_trees benchmark keeps running: a --quick run prints every row of its table."""

import py_trees

from working_memory.bench import trees as bench


def test_quick_trees_bench_prints_the_exposure_beside_the_py_trees_write(capsys):
    assert bench.main(['--quick', '--items', '10']) == 0
    out = capsys.readouterr().out
    for method in ('py_trees write, 10 values as attributes', 'by Client.set',
                   'expose a new 10-item pack', 'freeze its values',
                   'expose the pack already there'):
        assert method in out, out
    # The bench leaves the process-wide blackboard as it found it: empty.
    assert py_trees.blackboard.Blackboard.storage == {}


def test_the_bench_packs_change_every_value_each_tick():
    first, second = bench.packs(2, 10)
    assert len(first.values) == 10
    assert all(first.values[key] != second.values[key] for key in first.values)
