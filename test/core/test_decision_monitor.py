"""Monitor: cabins reporting the same tick must report the same frame digest (tearing check)."""

from working_memory.decision import TearingMonitor


def test_same_digest_for_the_same_tick_is_no_alarm():
    monitor = TearingMonitor()
    assert monitor.observe('planner', 4, 'aaa') is None
    assert monitor.observe('executor', 4, 'aaa') is None
    assert monitor.reports(4) == (('planner', 'aaa'), ('executor', 'aaa'))


def test_different_digest_for_the_same_tick_alarms():
    monitor = TearingMonitor()
    monitor.observe('planner', 4, 'aaa')
    alarm = monitor.observe('executor', 4, 'bbb')
    assert alarm is not None and alarm.tick == 4
    assert alarm.digests == {'aaa': ('planner',), 'bbb': ('executor',)}


def test_different_ticks_are_not_compared():
    monitor = TearingMonitor()
    monitor.observe('planner', 4, 'aaa')
    assert monitor.observe('executor', 5, 'bbb') is None


def test_late_report_for_an_older_tick_is_still_compared():
    monitor = TearingMonitor(keep_ticks=8)
    monitor.observe('planner', 4, 'aaa')
    monitor.observe('planner', 5, 'ccc')
    assert monitor.observe('executor', 4, 'bbb') is not None


def test_only_the_newest_ticks_are_kept():
    monitor = TearingMonitor(keep_ticks=3)
    for tick in range(10):
        monitor.observe('planner', tick, f'd{tick}')
    assert monitor.reports(6) == ()
    assert monitor.reports(7) == (('planner', 'd7'),)


def test_restarted_tick_count_is_not_compared_with_the_previous_run():
    monitor = TearingMonitor(keep_ticks=5)
    for tick in range(1, 30):
        monitor.observe('planner', tick, f'old{tick}')
    assert monitor.observe('executor', 1, 'new1') is None
    assert monitor.observe('planner', 1, 'new1') is None
