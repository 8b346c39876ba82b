"""The demo's closing hints on the synthetic run: they point at what was dropped and met."""

from pathlib import Path

from working_memory.demo.cli import hints
from working_memory.tools.recording import load_recording


def test_hints_point_at_the_drop_and_the_map_tick(synthetic_bag):
    lines = hints(load_recording(synthetic_bag), Path('bag'), Path('r.html'),
                  {'planner': ('board:batt*',)})
    assert any('--tick 6 --cabin planner' in line and 'board:batt* withheld' in line
               for line in lines), lines
    assert any('--why battery --cabin planner' in line for line in lines), lines
    assert any('--tick 1 --cabin executor' in line and 'open_door FAILURE' in line
               for line in lines), lines
    assert lines[-3].startswith('tools/rosenv wm-inspect bag --report r.html --map-tick 1')
    # The other half of the method: the symptoms, and what the wrong decisions lacked.
    assert lines[-2].startswith('tools/rosenv wm-inspect doctor bag')
    assert lines[-1].startswith('tools/rosenv wm-inspect suggest bag')
    assert len(lines) == len(set(lines))


def test_a_run_with_no_drop_alarm_or_failure_gets_no_suggest_hint(synthetic_bag):
    recording = load_recording(synthetic_bag)
    lines = hints(None, Path('bag'), Path('r.html'), {})
    assert lines == ['tools/rosenv wm-inspect bag   # every tick']
    assert any('doctor' in line for line in hints(recording, Path('bag'), Path('r.html'), {}))
