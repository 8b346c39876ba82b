"""Executor: pure pursuit along the pack's route; door retry policy adaptive or conservative."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from working_memory.core.items import Event, EventKind, Missing, MissingReason
from working_memory.decision import Executor, ExecutorConfig, PackView
from working_memory.decision.executor import pure_pursuit

DOOR = {'state': 'closed', 'x': 10.0, 'y': 6.0, 'width': 1.2}
ROUTE = {'waypoints': [[2.0, 6.0], [17.0, 6.0]], 'tick': 3, 'digest': 'abc'}


def executor_pack(pose=(2.0, 6.0, 0.0), route=ROUTE, door=DOOR, events=(), missing=(), tick=5):
    values = {'route': route, 'door:main': door,
              'pose': None if pose is None else dict(zip(('x', 'y', 'yaw'), pose))}
    return PackView(cabin='executor', tick=tick, stamp=float(tick), digest='e', frame_digest='f',
                    values={k: v for k, v in values.items() if v is not None},
                    events=events, missing=missing, map_window=None)


def door_failure(stamp, strategy='push'):
    return Event(stamp=stamp, kind=EventKind.FAILURE, source='world', key='open_door',
                 detail={'strategy': strategy, 'reason': 'door stuck'})


AT_DOOR = (9.3, 6.0, 0.0)
FAILURES_DROPPED = (Missing('events:FAILURE', MissingReason.INJECTED_DROP, 'manifest drop'),)


def test_drives_forward_along_a_straight_route():
    command = Executor().decide(executor_pack(), now=1.0)
    assert command.decision == 'follow_route'
    assert command.linear > 0.0 and abs(command.angular) < 1e-9
    assert command.detail['retry_policy'] == 'adaptive'
    assert command.detail['route_tick'] == 3


def test_turns_toward_a_route_on_the_left():
    command = Executor().decide(executor_pack(pose=(2.0, 5.0, 0.0)), now=1.0)
    assert command.angular > 0.0


def test_target_behind_turns_in_place():
    command = Executor(ExecutorConfig(max_turn_rate=1.2)).decide(
        executor_pack(pose=(2.0, 6.0, math.pi)), now=1.0)
    assert command.linear == 0.0 and abs(command.angular) == 1.2


def test_stops_at_the_goal():
    command = Executor().decide(executor_pack(pose=(16.9, 6.0, 0.0)), now=1.0)
    assert (command.linear, command.angular, command.decision) == (0.0, 0.0, 'arrived')


def test_waits_at_the_end_of_a_partial_route():
    partial = dict(ROUTE, reaches_goal=False)
    command = Executor().decide(executor_pack(pose=(16.9, 6.0, 0.0), route=partial), now=1.0)
    assert (command.linear, command.angular, command.decision) == (0.0, 0.0, 'wait_route')


@pytest.mark.parametrize('drop, key', [('pose', 'pose'), ('route', 'route')])
def test_holds_when_pose_or_route_is_absent(drop, key):
    kwargs = {drop: None}
    command = Executor().decide(executor_pack(**kwargs), now=1.0)
    assert (command.linear, command.angular, command.decision) == (0.0, 0.0, 'hold')
    assert command.detail['reason'].startswith(f'{key}: not in the')


@pytest.mark.parametrize('door, field', [({'state': 'ajar', 'x': 10, 'y': 6}, 'door:main.state'),
                                         ({'state': 'closed'}, 'door:main')])
def test_malformed_door_stops_with_the_key_named(door, field):
    command = Executor().decide(executor_pack(door=door), now=1.0)
    assert command.decision == 'hold' and command.detail['reason'].startswith(field)


def test_open_door_is_driven_through():
    command = Executor().decide(executor_pack(pose=AT_DOOR, door=dict(DOOR, state='open')), now=1.0)
    assert command.decision == 'follow_route' and command.linear > 0.0


def test_first_request_at_the_closed_door_pushes():
    command = Executor().decide(executor_pack(pose=AT_DOOR), now=10.0)
    assert (command.linear, command.angular) == (0.0, 0.0)
    assert command.decision == 'open_door'
    assert command.action.as_value() == {'name': 'open_door', 'strategy': 'push', 'attempt': 1}


def test_switches_to_remote_open_after_a_failure_in_the_pack():
    executor = Executor()
    executor.decide(executor_pack(pose=AT_DOOR), now=10.0)
    waiting = executor.decide(executor_pack(pose=AT_DOOR), now=10.5)
    assert waiting.decision == 'wait_door' and waiting.action.attempt == 1
    command = executor.decide(executor_pack(pose=AT_DOOR, events=(door_failure(10.2),)), now=10.6)
    assert command.decision == 'open_door'
    assert command.action.as_value() == {'name': 'open_door', 'strategy': 'remote_open',
                                         'attempt': 2}
    assert command.detail['retry_policy'] == 'adaptive'


def test_adaptive_retry_waits_for_the_outcome_of_remote_open():
    executor = Executor(ExecutorConfig(retry_backoff_s=4.0))
    failure = (door_failure(10.2),)
    executor.decide(executor_pack(pose=AT_DOOR), now=10.0)
    executor.decide(executor_pack(pose=AT_DOOR, events=failure), now=10.6)
    waiting = executor.decide(executor_pack(pose=AT_DOOR, events=failure), now=14.0)
    assert waiting.decision == 'wait_door'
    again = executor.decide(executor_pack(pose=AT_DOOR, events=failure), now=14.7)
    assert again.action.as_value() == {'name': 'open_door', 'strategy': 'remote_open', 'attempt': 3}


def test_conservative_when_failures_were_dropped_repeats_push_with_long_backoff():
    config = ExecutorConfig(retry_backoff_s=4.0, conservative_backoff_s=12.0)
    executor = Executor(config)
    decisions = [executor.decide(executor_pack(pose=AT_DOOR, missing=FAILURES_DROPPED), now=now)
                 for now in np.arange(10.0, 40.0, 0.5)]
    requests = [c for c in decisions if c.decision == 'open_door']
    assert [c.action.attempt for c in requests] == [1, 2, 3]
    assert {c.action.strategy for c in requests} == {'push'}
    assert {c.detail['retry_policy'] for c in decisions} == {'conservative'}
    assert {c.detail['backoff_s'] for c in decisions} == {12.0}


def test_conservative_policy_ignores_failures_that_do_reach_the_pack():
    # Only the drop report decides the policy; a FAILURE alone means adaptive.
    executor = Executor()
    executor.decide(executor_pack(pose=AT_DOOR, missing=FAILURES_DROPPED), now=10.0)
    command = executor.decide(executor_pack(pose=AT_DOOR, missing=FAILURES_DROPPED,
                                            events=(door_failure(10.2),)), now=10.6)
    assert command.decision == 'wait_door' and command.action.strategy == 'push'


def test_all_events_dropped_is_conservative_too():
    missing = (Missing('events:*', MissingReason.INJECTED_DROP, ''),)
    command = Executor().decide(executor_pack(pose=AT_DOOR, missing=missing), now=1.0)
    assert command.detail['retry_policy'] == 'conservative'


def test_an_evicted_failure_is_not_a_drop():
    missing = (Missing('events:FAILURE', MissingReason.EVICTED, ''),)
    assert Executor().decide(executor_pack(missing=missing), now=1.0).detail['retry_policy'] == \
        'adaptive'


def test_door_opening_resets_the_attempt_count():
    executor = Executor()
    executor.decide(executor_pack(pose=AT_DOOR), now=10.0)
    executor.decide(executor_pack(pose=AT_DOOR, door=dict(DOOR, state='open')), now=11.0)
    command = executor.decide(executor_pack(pose=AT_DOOR), now=12.0)
    assert command.action.attempt == 1


@given(st.floats(-5, 5), st.floats(-5, 5), st.floats(-math.pi, math.pi))
def test_pure_pursuit_respects_limits(x, y, yaw):
    waypoints = np.array([[0.0, 0.0], [3.0, 1.0], [3.0, 4.0]])
    v, w, _ = pure_pursuit((x, y, yaw), waypoints, 0.6, 0.5, 1.2)
    assert 0.0 <= v <= 0.5 + 1e-12
    assert abs(w) <= 1.2 + 1e-12
