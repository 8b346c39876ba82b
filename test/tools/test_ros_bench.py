"""The ROS-level benchmark's figures: percentiles, the late-frame rule, counter rates, ratios."""

import math

import numpy as np
import pytest
import yaml

from working_memory.bench.ros_bench import Figure, Settings, bulk_config, format_figures, \
    frame_rate, late_share, node_command, paired, percentile, rate_before, rate_from_counts, \
    recovery_time, restart_config, restart_times, rss_slope, wire_bytes_per_tick
from working_memory.core.manifest import manifests_from_params


def test_late_share_counts_intervals_beyond_period_plus_the_smaller_of_20_percent_and_5_ms():
    period = 0.01  # 100 Hz: late beyond 10 ms + min(2 ms, 5 ms) = 12 ms
    receipts = [0.0, 0.010, 0.0215, 0.0345, 0.0445]  # intervals 10, 11.5, 13, 10 ms
    assert late_share(receipts, period) == 0.25
    slow = [0.0, 0.1, 0.2049, 0.3100]  # 10 Hz: late beyond 100 + 5 ms; intervals 100, 104.9, 105.1
    assert math.isclose(late_share(slow, 0.1), 1 / 3)


def test_rate_from_counts_uses_first_and_last_sample_and_is_nan_without_two():
    assert rate_from_counts([(1.0, 100), (1.5, 400), (3.0, 2100)]) == 1000.0
    assert math.isnan(rate_from_counts([(1.0, 5)]))


def test_wire_bytes_per_tick_adds_the_windows_received_since_the_first_frame():
    probe = {'sizes': [300, 300, 300], 'receipt': [1.0, 1.01, 1.02],
             'window_sizes': [(0.5, 9000), (1.015, 12000)]}   # the first: before measuring
    assert wire_bytes_per_tick(probe) == (900 + 12000) / 3
    assert math.isnan(wire_bytes_per_tick({'sizes': [], 'receipt': [], 'window_sizes': []}))


def test_percentile_of_no_samples_is_nan():
    assert math.isnan(percentile([], 50))
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0


def test_table_prints_min_median_and_ratio_of_medians():
    figure = Figure('latency', 'ms', (3.0, 2.0, 4.0), (1.0, 2.0, 1.0), 'plain node')
    assert figure.ratio() == 3.0
    table = format_figures([figure, Figure('size', 'kB', (127.0,))])
    assert '| latency | 2 / 3 ms' in table
    assert '1 / 1 ms (plain node)' in table
    assert '3.00x' in table


def test_the_rate_before_a_burst_counts_from_the_probes_first_frame():
    # The probe's first frame came 1.2 s into the 2 s before the burst: 100 Hz from there.
    receipts = list(np.arange(1.2, 2.0, 0.01)) + list(np.arange(2.0, 3.0, 0.002))
    assert rate_before(receipts, 2.0, 2.0) == pytest.approx(100.0, rel=0.02)
    assert math.isnan(rate_before([1.5], 2.0, 2.0))


def test_recovery_time_is_the_start_of_the_first_window_at_90_percent_of_the_rate():
    # 100 Hz until t=1, nothing for 0.3 s after the burst ends at t=1, then 100 Hz again.
    receipts = list(np.arange(0.0, 1.0, 0.01)) + list(np.arange(1.3, 3.0, 0.01))
    assert 0.2 < recovery_time(receipts, 1.0, 100.0) <= 0.3
    assert recovery_time(list(np.arange(0.0, 3.0, 0.01)), 1.0, 100.0) == 0.0
    assert math.isnan(recovery_time(list(np.arange(0.0, 3.0, 0.05)), 1.0, 100.0))  # 20 Hz


def test_frame_rate_counts_intervals_and_rss_slope_is_per_minute():
    assert frame_rate([0.0, 0.1, 0.2, 0.3]) == 10.0
    assert math.isnan(frame_rate([1.0]))
    assert math.isclose(rss_slope([(0.0, 100.0), (60.0, 102.0), (120.0, 104.0)]), 2.0)


def test_bulk_config_is_one_cabin_selecting_every_item_key(tmp_path):
    path = bulk_config(tmp_path / 'bulk.yaml', 1000)
    params = yaml.safe_load(path.read_text())['/**']['ros__parameters']
    manifests = manifests_from_params(params)
    assert list(manifests) == ['bulk']
    assert manifests['bulk'].selects.match('item:999')
    assert 'capacity: 1064' in path.read_text()


def test_the_runs_parameters_follow_the_group_ones_on_the_nodes_command_line():
    settings = Settings(node=('other_node', '--executor', 'single'), params=('capacity:=64',))
    command = settings.command(100.0, overrides=('map_windows:=inline',))
    assert command[:4] == ['other_node', '--executor', 'single', '--autostart']
    overrides = [command[i + 1] for i, arg in enumerate(command) if arg == '-p']
    assert overrides == ['tick_hz:=100.0', 'diagnostics_period_s:=0.5', 'capacity:=64',
                         'map_windows:=inline']
    assert command == node_command(100.0, settings.node,
                                   overrides=('capacity:=64', 'map_windows:=inline'))


def test_paired_repeats_take_turns_going_first_and_keep_each_result_with_its_side():
    calls = []

    def measure(side):
        def once():
            calls.append(side)
            return f'{side}{calls.count(side)}'
        return once

    ours, baseline = paired(Settings(repeats=3), measure('o'), measure('b'))
    assert calls == ['o', 'b', 'b', 'o', 'o', 'b']
    assert ours == ['o1', 'o2', 'o3'] and baseline == ['b1', 'b2', 'b3']


def test_restart_times_run_from_the_process_start_and_from_the_nodes_own_start():
    # (receipt, started, resyncing, items, events) per frame
    frames = [(10.5, 10.2, True, 0, 0), (10.6, 10.2, True, 400, 0), (10.9, 10.2, False, 1000, 50),
              (11.0, 10.2, False, 1000, 50)]
    times = restart_times(frames, since=10.0, keys=1000, events=50)
    assert times == pytest.approx({'first': 0.5, 'whole': 0.9, 'whole_from_start': 0.7,
                                   'resyncing_s': 0.1})
    never = restart_times(frames[:2], since=10.0, keys=1000, events=50)
    assert never['whole'] != never['whole'] and never['first'] == pytest.approx(0.5)
    assert restart_times([], 10.0, 1, 1)['first'] != restart_times([], 10.0, 1, 1)['first']


def test_restart_config_reads_every_item_and_every_event_of_the_window(tmp_path):
    text = restart_config(tmp_path / 'restart.yaml', 1000, 5000).read_text()
    assert 'capacity: 6064' in text and 'board_keys: ["item:*"]' in text
    assert 'window_s: 60.0' in text and 'event_log_limit: 10000' in text
