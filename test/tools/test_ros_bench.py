"""The ROS-level benchmark's figures: percentiles, the late-frame rule, counter rates, ratios."""

import math

from working_memory.bench.ros_bench import Figure, format_figures, late_share, percentile, \
    rate_from_counts


def test_late_share_counts_intervals_beyond_period_plus_the_smaller_of_20_percent_and_5_ms():
    period = 0.01  # 100 Hz: late beyond 10 ms + min(2 ms, 5 ms) = 12 ms
    receipts = [0.0, 0.010, 0.0215, 0.0345, 0.0445]  # intervals 10, 11.5, 13, 10 ms
    assert late_share(receipts, period) == 0.25
    slow = [0.0, 0.1, 0.2049, 0.3100]  # 10 Hz: late beyond 100 + 5 ms; intervals 100, 104.9, 105.1
    assert math.isclose(late_share(slow, 0.1), 1 / 3)


def test_rate_from_counts_uses_first_and_last_sample_and_is_nan_without_two():
    assert rate_from_counts([(1.0, 100), (1.5, 400), (3.0, 2100)]) == 1000.0
    assert math.isnan(rate_from_counts([(1.0, 5)]))


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
