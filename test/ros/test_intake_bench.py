"""The intake benchmark keeps running: the node takes every prepared update, none rejected."""

from working_memory.bench import intake_node


def test_the_intake_bench_runs_the_node_over_every_update_and_rejects_none(capsys):
    assert intake_node.main(['--messages', '200', '--repeats', '1']) == 0
    out = capsys.readouterr().out
    # Warm-up and one measured run, 200 updates each, over the bench's 30 sensor keys.
    assert 'received 400, rejected 0, board 30 keys' in out, out
