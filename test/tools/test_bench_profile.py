"""The profile summary of `make bench-ros ARGS=--profile`: counts from py-spy's raw stacks."""

import pytest

from working_memory.bench.profile import format_profile, function_name, parse_raw

STACK = 'thread (0x7f01);<module> (bin/working_memory_node:4);spin (rclpy/executors.py:{line})'
RAW = '\n'.join([
    STACK.format(line=90) + ';wait (rclpy/executors.py:700) 6',
    STACK.format(line=90) + ';tick (working_memory/ros/node.py:400)'
    ';assemble (working_memory/core/assembly.py:200) 3',
    STACK.format(line=91) + ';tick (working_memory/ros/node.py:401) 1',
    '',
    ' 2'])


def test_self_counts_the_innermost_frame_and_total_every_function_once_per_sample():
    profile = parse_raw(RAW)
    assert profile.samples == 12
    assert profile.self_counts['wait (executors.py)'] == 6
    assert profile.self_counts['assemble (assembly.py)'] == 3
    assert profile.self_counts['tick (node.py)'] == 1
    # Lines 90 and 91 of spin are one function; the thread is not a frame.
    assert profile.total_counts['spin (executors.py)'] == 10
    assert profile.total_counts['tick (node.py)'] == 4
    assert not any(name.startswith('thread') for name in profile.total_counts)
    # A stack py-spy could not read still counts, as unknown.
    assert profile.self_counts['(unknown)'] == 2


def test_top_ranks_by_share_and_can_leave_out_the_entry_chain():
    profile = parse_raw(RAW)
    assert profile.top(2) == [('wait (executors.py)', 0.5), ('assemble (assembly.py)', 0.25)]
    # Ties keep stack order (outermost first).
    assert [name for name, _ in profile.top(3, inclusive=True, below=0.95)] == [
        '<module> (working_memory_node)', 'spin (executors.py)', 'wait (executors.py)']
    assert profile.top(1, inclusive=True, below=0.8) == [('wait (executors.py)', 0.5)]
    table = format_profile(profile, 'node')
    assert table.splitlines()[0] == 'node: 12 samples'
    assert '| 50.0 | `wait (executors.py)` |' in table


def test_a_frame_name_drops_the_directory_and_line():
    frame = 'Intake.take (/x/working_memory/ros/spin.py:86)'
    assert function_name(frame) == 'Intake.take (spin.py)'
    assert function_name('<lambda> (<string>)') == '<lambda> (<string>)'


def test_a_line_without_a_sample_count_is_an_error():
    with pytest.raises(ValueError, match='line 1'):
        parse_raw('a (x.py:1);b (y.py:2)\n')


def test_only_a_leading_thread_or_process_marker_is_left_out():
    profile = parse_raw('process 12:"python node";main (a.py:1);process (b.py:2) 3\n'
                        'thread (0x7F01);main (a.py:1) 1\n')
    assert profile.self_counts['process (b.py)'] == 3
    assert profile.total_counts['main (a.py)'] == 4
    assert not any(name.startswith(('thread', 'process 12')) for name in profile.total_counts)
