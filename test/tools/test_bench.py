"""The benchmark script keeps running: a --quick run prints every table row and target line."""

from working_memory.bench import core as bench


def test_quick_bench_prints_every_capacity_and_operation(capsys):
    assert bench.main(['--quick']) == 0
    out = capsys.readouterr().out
    for capacity in bench.QUICK_CAPACITIES:
        for op in ('insert', 'touch', 'evict'):
            assert f'| {capacity:<8} | {op:<6} |' in out, (capacity, op)
    assert 'evict cost growth' in out
    for method in ('view', 'view + bytes', 'naive loop'):
        assert f'| {method} ' in out, method
    for capacity in bench.ASSEMBLY_CAPACITIES:
        assert f'capacity {capacity} ' in out, capacity


def test_seed_port_forgets_the_same_items_as_the_working_set():
    seed, ours = bench.SeedMinScan(3), bench.Ours(3)
    operations = [('goal:a', 1.0), ('b', 0.5), ('c', 0.2), ('d', 0.5), ('e', 0.9), ('f', 0.2)]
    for now, (key, importance) in enumerate(operations):
        assert seed.put(key, now, importance, float(now)) == bench.victim_keys(
            ours.put(key, now, importance, float(now)))
    assert sorted(seed.items) == sorted(ours.working_set.keys()) == ['d', 'e', 'goal:a']
