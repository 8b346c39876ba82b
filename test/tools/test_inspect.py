"""wm-inspect on a synthetic bag: tick list, packs, why-timelines, reports and errors."""

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import serialize_message

from working_memory.msg import ContextFrame, ContextPack, Eviction, EvictionBatch, WorkingItem
from working_memory.tools.bag import BagWriter, EVICTION_BATCH_TYPE, EVICTION_TYPE, FRAME_TYPE
from working_memory.tools.inspect import main
from working_memory.tools.recording import load_recording
from working_memory.tools.report import write_report
from working_memory.tools.series import tick_series
from working_memory.tools.why import NOT_IN_PACK, PRESENT, why

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def run_cli(capsys, *argv):
    """Return (exit code, stdout, stderr) of wm-inspect."""
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_why_gives_present_evicted_dropped_stale_timeline(synthetic_bag, capsys):
    code, out, _ = run_cli(capsys, synthetic_bag, '--why', 'battery')
    assert code == 0
    assert out.splitlines() == [
        "why 'battery': ticks 1-9 recorded",
        '  evicted at tick 4 (CAPACITY): importance 0.20, unused for 1.00 s',
        'cabin planner:',
        '  first seen: tick 1',
        '  ticks 1-3: present (importance 0.20)',
        '  ticks 4-5: missing EVICTED (evicted at tick 4)',
        '  ticks 6-7: missing INJECTED_DROP (dropped by injection)',
        '  ticks 8-9: missing STALE (stale: its ttl of 1.0 s ran out)',
        '  stale since tick 8',
    ]


def test_why_returns_spans_and_evictions_as_data(synthetic_bag):
    answer = why(load_recording(synthetic_bag), 'battery', 'planner')
    (history,) = answer.histories
    assert [(s.first, s.last, s.state) for s in history.spans] == [
        (1, 3, PRESENT), (4, 5, 'EVICTED'), (6, 7, 'INJECTED_DROP'), (8, 9, 'STALE')]
    (eviction,) = answer.evictions
    assert (eviction.tick, eviction.importance, eviction.reason) == (4, 0.2, 'CAPACITY')
    assert eviction.age == pytest.approx(1.0)
    assert (history.first_seen, history.stale_since) == (1, 8)


def test_why_in_a_cabin_that_never_selects_the_key_says_not_in_pack(synthetic_bag):
    (history,) = why(load_recording(synthetic_bag), 'battery', 'executor').histories
    assert [(s.first, s.last, s.state) for s in history.spans] == [(1, 9, NOT_IN_PACK)]
    assert history.first_seen is None


def write_sensor_frame(writer, tick, served, cabins=('planner',)):
    """Write the frame of `tick` (one per second); the first cabin serves 'sensor:0' if `served`."""
    items = [WorkingItem(key='sensor:0', value='{"reading": 0.1}', source='board',
                         importance=0.05, last_used=Time(sec=tick))] if served else []
    packs = [ContextPack(tick=tick, cabin=cabin, items=items if n == 0 else [])
             for n, cabin in enumerate(cabins)]
    msg = ContextFrame(tick=tick, digest=f'{tick:064x}', packs=packs)
    msg.header.stamp = Time(sec=tick)
    writer.write('/working_memory/frame', FRAME_TYPE, serialize_message(msg), tick * 10**9)


def sensor_eviction(tick):
    """Return the eviction of 'sensor:0' at `tick`, last used a second before."""
    eviction = Eviction(tick=tick, key='sensor:0', importance=0.05,
                        last_used=Time(sec=tick - 1), reason=Eviction.CAPACITY)
    eviction.header.stamp = Time(sec=tick)
    return eviction


def write_unrequired_eviction_run(path):
    """Write ticks 1-6 (one per second): the planner selects but does not require 'sensor:0'.

    An older bag (one Eviction per message, evictions as a steady state): the key is
    evicted (capacity) in ticks 3 and 4, so it is absent from the planner's packs there
    with no MissingItem; the executor never selects it.
    """
    with BagWriter(path, 'mcap') as writer:
        for tick in range(1, 7):
            evicted = tick in (3, 4)
            write_sensor_frame(writer, tick, not evicted, ('planner', 'executor'))
            if evicted:
                writer.write('/working_memory/evictions', EVICTION_TYPE,
                             serialize_message(sensor_eviction(tick)), tick * 10**9)
    return path


def test_why_reads_older_bags_with_one_eviction_per_message(tmp_path, capsys):
    bag = write_unrequired_eviction_run(tmp_path / 'unrequired')
    code, out, _ = run_cli(capsys, bag, '--why', 'sensor:0')
    assert code == 0
    assert out.splitlines() == [
        "why 'sensor:0': ticks 1-6 recorded",
        '  evicted at every tick 3-4 (2 times, CAPACITY): importance 0.05-0.05, '
        'unused for up to 1.00 s',
        'cabin planner:',
        '  first seen: tick 1',
        '  ticks 1-2: present (importance 0.05)',
        '  ticks 3-4: missing EVICTED (evicted at tick 3 (CAPACITY): importance 0.05, '
        'unused for 1.00 s)',
        '  ticks 5-6: present (importance 0.05)',
    ]


def write_readmission_run(path):
    """Write ticks 1-8: 'sensor:0' is evicted once in tick 3, out until it is back in tick 6."""
    with BagWriter(path, 'mcap') as writer:
        for tick in range(1, 9):
            write_sensor_frame(writer, tick, tick not in (3, 4, 5))
            batch = {3: EvictionBatch(tick=tick, evictions=[sensor_eviction(tick)]),
                     6: EvictionBatch(tick=tick, readmitted=['sensor:0'])}.get(tick)
            if batch is not None:
                batch.header.stamp = Time(sec=tick)
                writer.write('/working_memory/evictions', EVICTION_BATCH_TYPE,
                             serialize_message(batch), tick * 10**9)
    return path


def test_why_shows_an_evicted_key_out_until_it_is_readmitted(tmp_path, capsys):
    bag = write_readmission_run(tmp_path / 'readmitted')
    code, out, _ = run_cli(capsys, bag, '--why', 'sensor:0')
    assert code == 0
    assert out.splitlines() == [
        "why 'sensor:0': ticks 1-8 recorded",
        '  evicted at tick 3 (CAPACITY): importance 0.05, unused for 1.00 s',
        '  readmitted at tick 6 (evicted at tick 3)',
        'cabin planner:',
        '  first seen: tick 1',
        '  ticks 1-2: present (importance 0.05)',
        '  ticks 3-5: missing EVICTED (evicted at tick 3 (CAPACITY): importance 0.05, '
        'unused for 1.00 s)',
        '  ticks 6-8: present (importance 0.05, readmitted)',
    ]
    recording = load_recording(bag)
    assert [(r.tick, r.key) for r in recording.readmissions] == [(6, 'sensor:0')]


def test_why_never_blames_an_eviction_in_a_cabin_that_never_had_the_key(tmp_path):
    bag = write_unrequired_eviction_run(tmp_path / 'unrequired')
    (history,) = why(load_recording(bag), 'sensor:0', 'executor').histories
    assert [(s.first, s.last, s.state) for s in history.spans] == [(1, 6, NOT_IN_PACK)]


def test_why_of_an_unknown_key_says_no_cabin_ever_had_it(synthetic_bag, capsys):
    code, out, _ = run_cli(capsys, synthetic_bag, '--why', 'charging_station')
    assert code == 0
    assert 'never served to or required by any cabin' in out
    assert 'evicted' not in out


def test_why_finds_event_keys_in_event_windows(synthetic_bag):
    (history,) = why(load_recording(synthetic_bag), 'open_door').histories
    assert history.cabin == 'executor'
    assert [(s.first, s.last, s.state) for s in history.spans] == [(1, 9, PRESENT)]
    assert 'FAILURE event' in history.spans[0].detail


def test_tick_and_cabin_show_items_flags_map_and_missing_reasons(synthetic_bag, capsys):
    code, out, _ = run_cli(capsys, synthetic_bag, '--tick', 4, '--cabin', 'planner')
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith('tick 4  stamp 2.000 s  cabin planner  digest planner0004')
    assert '  goal:deliver  importance 1.00  last_used 2.000 s  exempt  = {"v": 1}' in lines
    assert 'map window: 20x10 cells at 0.100 m/cell, origin (4.00, 0.00) m' in lines
    assert lines[-2:] == ['missing (1):', '  battery  EVICTED  evicted at tick 4']
    assert 'executor' not in out


def test_a_stale_keys_missing_line_reads_its_age_at_the_ticks_stamp(synthetic_bag, capsys):
    # The note's since is 2.5 s: 1.5 s before tick 8 (4.0 s), 2.0 s before tick 9.
    for tick, age in ((8, '1.5'), (9, '2.0')):
        code, out, _ = run_cli(capsys, synthetic_bag, '--tick', tick, '--cabin', 'planner')
        assert code == 0
        assert out.splitlines()[-1] == (f'  battery  STALE  stale: its ttl of 1.0 s ran out '
                                        f'{age} s ago')


def test_tick_without_cabin_shows_every_pack_and_their_events(synthetic_bag, capsys):
    code, out, _ = run_cli(capsys, synthetic_bag, '--tick', 2)
    assert code == 0
    assert 'cabin planner' in out and 'cabin executor' in out
    assert '  battery  importance 0.20  last_used 1.000 s  = {"v": 1}' in out
    assert '  1.000 s  FAILURE  executor  open_door  {"door": "d1"}' in out


def test_tick_list_counts_items_per_cabin_and_missing(synthetic_bag, capsys):
    code, out, _ = run_cli(capsys, synthetic_bag)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ['tick', 'stamp', '[s]', 'digest', 'planner', 'items', 'executor',
                                'items', 'missing']
    assert lines[3].split() == ['3', '1.500', '03ababababab', '2', '1', '0']
    assert lines[4].split() == ['4', '2.000', '04ababababab', '1', '1', '1']
    assert lines[-1] == '9 frames, ticks 1-9; 2 evictions'


def test_capacity_alarm_comes_from_diagnostics_until_cleared(synthetic_bag):
    series = tick_series(load_recording(synthetic_bag))
    assert [int(t) for t in series.ticks[series.alarms]] == [5, 6]
    assert 'diagnostics' in series.alarm_source
    assert list(series.evictions) == [0, 0, 0, 2, 0, 0, 0, 0, 0]
    assert list(series.missing_by_reason['EVICTED']) == [0, 0, 0, 1, 1, 0, 0, 0, 0]
    assert list(series.working_set) == [2, 2, 2, 1, 1, 1, 1, 1, 1]


def test_capacity_alarm_without_diagnostics_needs_the_capacity(synthetic_bag):
    recording = dataclasses.replace(load_recording(synthetic_bag), diagnostics=())
    assert tick_series(recording).alarms is None
    assert tick_series(recording, capacity=0).alarms.all()  # one exempt goal > 0
    assert not tick_series(recording, capacity=1).alarms.any()


def test_report_png_is_a_real_plot(synthetic_bag, tmp_path, capsys):
    png = tmp_path / 'report.png'
    code, out, _ = run_cli(capsys, synthetic_bag, '--report', png, '--map-tick', 3,
                           '--cabin', 'planner')
    assert code == 0 and str(png) in out
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 20_000


def test_report_html_is_self_contained_with_images_and_tables(synthetic_bag, tmp_path, capsys):
    page = tmp_path / 'report.html'
    code, _, _ = run_cli(capsys, synthetic_bag, '--report', page)
    assert code == 0
    text = page.read_text()
    assert text.count('src="data:image/png;base64,iVBORw0KGgo') == 2  # timeline and map
    assert '<td>battery</td><td>1</td><td>0.20</td>' in text
    assert '<td>planner</td><td>EVICTED</td><td>battery</td><td>4-5</td>' in text
    assert '<td>planner</td><td>INJECTED_DROP</td><td>board:batt*</td><td>6-7</td>' in text
    # No /log in this bag: the failure comes from the packs' event windows.
    assert '<td>FAILURE</td><td>executor</td><td>open_door</td>' in text
    # No outcome in the bag: the report says it cannot tell, and what it lacked.
    assert 'class="unknown"' in text and '/sim_world/status not in the bag' in text
    assert '<th>seed</th><td>not recorded</td>' in text
    assert 'robot path: 0 poses (pose in the frames)' in text
    assert 'cabin windows: planner 20x10 cells' in text


def test_report_setup_and_capacity_alarm_source_are_shown(synthetic_bag, tmp_path):
    recording = load_recording(synthetic_bag)
    page = write_report(recording, tmp_path / 'r.html', setup={'seed': '3', 'drops': 'x: y'})
    text = page.read_text()
    assert '<th>seed</th><td>3</td>' in text and '<th>drops</th><td>x: y</td>' in text
    assert 'capacity alarm: /diagnostics (exempt_overflow)' in text


@pytest.mark.parametrize('argv, message', [
    (['--tick', 99], 'tick 99 not recorded'),
    (['--tick', 3, '--cabin', 'pilot'], "unknown cabin 'pilot'"),
    (['--why', 'battery', '--cabin', 'pilot'], "unknown cabin 'pilot'"),
    (['--report', 'x.png', '--map-tick', 42], 'tick 42 not recorded'),
])
def test_bad_questions_exit_1_naming_the_problem(synthetic_bag, capsys, argv, message):
    code, out, err = run_cli(capsys, synthetic_bag, *argv)
    assert code == 1 and out == ''
    assert err.startswith('wm-inspect: error: ') and message in err
    assert 'planner, executor' in err or '1-9' in err


def test_missing_bag_exits_1_naming_the_path(tmp_path, capsys):
    code, _, err = run_cli(capsys, tmp_path / 'nowhere')
    assert code == 1
    assert f'no bag at {tmp_path / "nowhere"}' in err


def test_report_needs_a_png_or_html_file(synthetic_bag, capsys):
    code, _, err = run_cli(capsys, synthetic_bag, '--report', 'report.pdf')
    assert code == 2
    assert 'must end in .html or .png' in err


def test_inspect_reads_bags_without_rclpy(synthetic_bag, tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.modules['rclpy'] = None  # any import of rclpy now fails
        from working_memory.tools.inspect import main
        sys.exit(main([{str(synthetic_bag)!r}, '--why', 'battery', '--cabin', 'planner']))
    """)
    result = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                            cwd=tmp_path, env=dict(os.environ), timeout=60)
    assert result.returncode == 0, result.stderr
    assert '  ticks 4-5: missing EVICTED (evicted at tick 4)' in result.stdout
