"""wm-watch's view model without ROS: records of the synthetic run in, rows and a screen out."""

import dataclasses

import pytest
from rich.console import Console

from working_memory.tools.recording import DiagnosticRecord, load_recording
from working_memory.tools.watch import WatchState, render, watch_model


def capacity_status(items, capacity, overflow=False):
    return DiagnosticRecord(0.0, 0.0, '/working_memory: capacity', 'OK', '',
                            {'items': str(items), 'capacity': str(capacity),
                             'exempt_overflow': str(overflow)})


def screen_text(model, width=120, height=None):
    console = Console(width=width, record=True, color_system=None)
    console.print(render(model, width=width, height=height))
    return console.export_text()


def test_items_are_exempt_first_then_by_importance_with_age(synthetic_bag):
    frame = load_recording(synthetic_bag).frame(2)
    panel = watch_model(frame).panels[0]
    assert [row.key for row in panel.items] == ['goal:deliver', 'battery']
    assert panel.items[0].exempt and not panel.items[1].exempt
    assert panel.items[1].age_s == pytest.approx(0.0)


def test_missing_items_keep_their_reasons_per_cabin(synthetic_bag):
    model = watch_model(load_recording(synthetic_bag).frame(6))
    planner, executor = model.panels
    assert [(m.key, m.reason) for m in planner.missing] == [('board:batt*', 'INJECTED_DROP')]
    assert executor.missing == ()


def test_a_stale_keys_missing_row_reads_its_age_at_the_frame(synthetic_bag):
    recording = load_recording(synthetic_bag)
    for tick, age in ((8, '1.5'), (9, '2.0')):
        (row,) = watch_model(recording.frame(tick)).panels[0].missing
        assert (row.key, row.reason) == ('battery', 'STALE')
        assert row.detail == f'stale: its ttl of 1.0 s ran out {age} s ago'


def test_gauge_comes_from_the_capacity_status_else_counts_served_keys(synthetic_bag):
    frame = load_recording(synthetic_bag).frame(2)
    assert watch_model(frame).gauge.capacity is None
    assert watch_model(frame).gauge.items == 2
    use = watch_model(frame, capacity=capacity_status(40, 40, overflow=True)).gauge
    assert (use.items, use.capacity, use.alarm, use.fraction) == (40, 40, True, 1.0)


def test_failure_events_and_the_capacity_alarm_are_alarms_once_each(synthetic_bag):
    frame = load_recording(synthetic_bag).frame(3)
    model = watch_model(frame, capacity=capacity_status(5, 1, overflow=True))
    assert [(a.kind, a.key) for a in model.alarms] == [
        ('CAPACITY', 'exempt items exceed capacity'), ('FAILURE', 'open_door')]


def test_one_cabin_only_and_an_unknown_cabin_names_the_valid_ones(synthetic_bag):
    frame = load_recording(synthetic_bag).frame(3)
    assert [p.cabin for p in watch_model(frame, cabin='executor').panels] == ['executor']
    with pytest.raises(KeyError, match='cabins: planner, executor'):
        watch_model(frame, cabin='pilot')


def test_state_keeps_new_frames_latest_evictions_and_measures_the_tick_rate(synthetic_bag):
    recording = load_recording(synthetic_bag)
    state = WatchState()
    assert state.model() is None
    for frame in recording.frames[:5]:
        assert state.add_frame(frame)
    assert not state.add_frame(recording.frames[4])  # the same latched frame again
    state.add_evictions(recording.evictions)
    state.add_diagnostics([capacity_status(3, 4), DiagnosticRecord(
        0.0, 0.0, '/other_node: capacity', 'OK', '', {'items': '1', 'capacity': '1'})])
    model = state.model()
    assert model.tick == 5
    assert state.tick_rate_hz() == pytest.approx(2.0)  # one tick every 0.5 s
    assert [e.key for e in model.evictions] == ['scan', 'battery']  # newest first
    assert (model.gauge.items, model.gauge.capacity) == (3, 4)


def test_screen_shows_header_panels_missing_and_evictions(synthetic_bag):
    recording = load_recording(synthetic_bag)
    frame = recording.frame(4)
    text = screen_text(watch_model(frame, recording.evictions, capacity_status(20, 40),
                                   tick_rate_hz=10.0))
    assert 'tick 4' in text and frame.digest[:12] in text and '10.0 ticks/s' in text
    assert '[##########----------] 20/40' in text
    assert 'battery EVICTED evicted at tick 4' in text
    assert 'latest evictions' in text and 'scan' in text
    assert 'FAILURE open_door' in text


def test_a_short_terminal_trims_item_lists_and_says_how_many_are_hidden(synthetic_bag):
    frame = load_recording(synthetic_bag).frame(2)
    planner = frame.packs['planner']
    many = dataclasses.replace(planner, items=planner.items + tuple(
        dataclasses.replace(planner.items[1], key=f'sensor:{n}', importance=0.05)
        for n in range(12)))
    frame = dataclasses.replace(frame, packs={'planner': many})
    short = screen_text(watch_model(frame), width=60, height=12)
    assert 'goal:deliver' in short and '… 11 more items' in short
    assert 'more items' not in screen_text(watch_model(frame), width=60)


def test_eviction_rate_is_the_nodes_own_when_its_status_says(synthetic_bag):
    recording = load_recording(synthetic_bag)
    frame = recording.frame(4)
    status = capacity_status(40, 40)
    assert watch_model(frame, recording.evictions).evictions_per_s == pytest.approx(0.2)
    status.values['evictions_per_s'] = '39.50'
    assert watch_model(frame, recording.evictions, status).evictions_per_s == 39.5
