"""Required keys no source writes, on a running node's /diagnostics (engine/requirements.py)."""

from pathlib import Path

from working_memory.core.items import BoardEntry
from working_memory.engine.health import Level
from working_memory.ros.conversions import board_update_msg

SHIPPED = Path(__file__).resolve().parents[2] / 'config' / 'sources'


def test_the_node_names_at_configure_a_required_key_no_source_writes_until_a_writer_does(
        start_memory, tmp_path):
    node, probe = start_memory({'sources_file': str(SHIPPED / 'gazebo.yaml'),
                                'resync_timeout_s': 0.5}, activate=False)
    configured = probe.status('required', lambda s: s.level == bytes([Level.WARN]))
    assert configured.message == ('planner: goal:*; executor: action:current: no source '
                                  'writes it; a writer on board must')
    node.trigger_activate()
    probe.status('required', lambda s: 'no writer has' in s.message)
    now = node.get_clock().now().nanoseconds * 1e-9
    probe.wait_matched(probe.board)
    probe.board.publish(board_update_msg([BoardEntry('action:current', {'name': 'go'}, now)],
                                         now))
    left = probe.status('required', lambda s: s.message.startswith('planner: goal:*: no '))
    assert 'action:current' not in left.message
    probe.board.publish(board_update_msg([BoardEntry('goal:x', {'x': 1.0}, now)], now))
    done = probe.status('required', lambda s: s.level == bytes([Level.OK]))
    assert probe.values(done) == {'planner.unsourced': 'goal:*',
                                  'executor.unsourced': 'action:current'}
