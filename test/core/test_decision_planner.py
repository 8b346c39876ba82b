"""Planner: A* on the pack's map window around obstacles and zones; no plan without constraints."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.items import Missing, MissingReason
from working_memory.decision import (ConstraintAlarm, MapWindow, NoRoute, PackView, Planner,
                                     PlannerConfig, Route)
from working_memory.decision.planner import astar
from working_memory.sim.world import WorldConfig, build_grid

RES = 0.1
ZONE = [[4.0, 1.5], [6.0, 1.5], [6.0, 3.5], [4.0, 3.5]]   # straddles the line y = 2.5


def open_room(width_m=10.0, height_m=5.0):
    """Return a free room with one-cell walls, as int8 occupancy."""
    grid = np.zeros((round(height_m / RES), round(width_m / RES)), dtype=np.int8)
    grid[0, :] = grid[-1, :] = grid[:, 0] = grid[:, -1] = 100
    return grid


def planner_pack(grid, values, missing=(), tick=7):
    """Return a planner pack over `grid` (origin 0, 0) with board `values`."""
    return PackView(cabin='planner', tick=tick, stamp=1.0, digest='p', frame_digest='f',
                    values=values, events=(), missing=missing,
                    map_window=MapWindow(grid, (0.0, 0.0), RES))


def room_values(zone=ZONE, start=(1.0, 2.5), goal=(9.0, 2.5)):
    values = {'pose': {'x': start[0], 'y': start[1], 'yaw': 0.0},
              'goal:deliver': {'x': goal[0], 'y': goal[1]}}
    if zone is not None:
        values['safety:zone/high_voltage'] = {'polygon': zone}
    return values


def sample_route(waypoints, step=0.02):
    """Return points every `step` [m] along the route."""
    points = []
    for (x1, y1), (x2, y2) in zip(waypoints, waypoints[1:]):
        count = max(1, math.ceil(math.dist((x1, y1), (x2, y2)) / step))
        points += [(x1 + (x2 - x1) * i / count, y1 + (y2 - y1) * i / count)
                   for i in range(count + 1)]
    return np.array(points)


def clearance_to_box(points, box):
    """Return each point's distance [m] to an axis-aligned box [[x0, y0], .., [x1, y1], ..]."""
    (x0, y0), (x1, y1) = box[0], box[2]
    dx = np.maximum.reduce([x0 - points[:, 0], np.zeros(len(points)), points[:, 0] - x1])
    dy = np.maximum.reduce([y0 - points[:, 1], np.zeros(len(points)), points[:, 1] - y1])
    return np.hypot(dx, dy)


def test_route_detours_around_the_zone_on_the_straight_line():
    config = PlannerConfig(robot_radius_m=0.25)
    result = Planner(config).plan(planner_pack(open_room(), room_values()))
    assert isinstance(result, Route)
    clearance = clearance_to_box(sample_route(result.waypoints), ZONE)
    # Cell rasterization may cost up to one cell of the inflation margin.
    assert clearance.min() >= config.robot_radius_m - RES
    assert result.constraints == ('safety:zone/high_voltage',)


@pytest.mark.parametrize('clearance_cost, at_least, at_most', [(3.0, 0.5, 1.0), (0.0, 0.0, 0.35)])
def test_clearance_cost_keeps_the_route_off_the_zone_where_there_is_room(clearance_cost, at_least,
                                                                         at_most):
    config = PlannerConfig(robot_radius_m=0.25, clearance_m=0.4, clearance_cost=clearance_cost)
    result = Planner(config).plan(planner_pack(open_room(), room_values()))
    clearance = clearance_to_box(sample_route(result.waypoints), ZONE).min()
    assert at_least <= clearance <= at_most


def test_route_without_zone_goes_straight_through_where_the_zone_would_be():
    result = Planner().plan(planner_pack(
        open_room(), dict(room_values(zone=None), **{'safety:speed_limit': {'max': 0.5}})))
    assert isinstance(result, Route)
    assert clearance_to_box(sample_route(result.waypoints), ZONE).min() == 0.0
    assert len(result.waypoints) == 2


def test_route_starts_at_pose_and_ends_at_goal():
    result = Planner().plan(planner_pack(open_room(), room_values()))
    assert result.waypoints[0] == (1.0, 2.5)
    assert result.waypoints[-1] == (9.0, 2.5)
    assert result.length_m > 8.0


@pytest.mark.parametrize('reason', list(MissingReason))
def test_alarm_instead_of_route_when_safety_constraint_is_missing(reason):
    missing = (Missing('safety:*', reason, 'why'), Missing('battery', MissingReason.STALE, ''))
    result = Planner().plan(planner_pack(open_room(), room_values(zone=None), missing))
    assert isinstance(result, ConstraintAlarm)
    assert [item.key for item in result.missing] == ['safety:*']
    assert reason.value in result.reason and 'planner pack' in result.reason


def test_alarm_names_the_injected_drop_of_a_board_category():
    missing = (Missing('board:safety:*', MissingReason.INJECTED_DROP, 'drop'),)
    result = Planner().plan(planner_pack(open_room(), room_values(zone=None), missing))
    assert isinstance(result, ConstraintAlarm)
    assert result.missing == missing


def test_alarm_even_without_a_missing_report():
    result = Planner().plan(planner_pack(open_room(), room_values(zone=None)))
    assert isinstance(result, ConstraintAlarm) and result.missing == ()


def test_without_require_safety_a_pack_without_zones_is_planned_as_it_is():
    config = PlannerConfig(require_safety=False)
    result = Planner(config).plan(planner_pack(open_room(), room_values(zone=None)))
    assert isinstance(result, Route) and result.constraints == ()


@pytest.mark.parametrize('require', [True, False])
def test_a_safety_item_gone_stale_is_an_alarm_though_other_constraints_are_held(require):
    missing = (Missing('safety:zone/keepout', MissingReason.STALE, 'its ttl ran out'),)
    result = Planner(PlannerConfig(require_safety=require)).plan(
        planner_pack(open_room(), room_values(), missing))
    assert isinstance(result, ConstraintAlarm) and result.missing == missing
    assert result.reason == ('1 safety constraint(s) (safety:*) missing from the planner pack '
                             '(safety:zone/keepout: STALE)')


def test_the_keepout_masks_zones_are_planned_around_and_an_empty_mask_is_no_zone():
    config = PlannerConfig(robot_radius_m=0.25, require_safety=False)
    zoned = dict(room_values(zone=None), **{'safety:zone/keepout': {
        'polygons': [ZONE, [[8.0, 4.0], [8.5, 4.0], [8.5, 4.5]]], 'frame': 'map'}})
    result = Planner(config).plan(planner_pack(open_room(), zoned))
    assert clearance_to_box(sample_route(result.waypoints), ZONE).min() >= 0.25 - RES
    empty = dict(room_values(zone=None),
                 **{'safety:zone/keepout': {'polygons': [], 'frame': 'map'}})
    result = Planner(config).plan(planner_pack(open_room(), empty))
    assert len(result.waypoints) == 2 and result.constraints == ('safety:zone/keepout',)


def test_a_polygon_in_the_robots_frame_is_a_constraint_held_but_no_zone_of_the_map():
    values = dict(room_values(zone=None), **{'safety:collision/stop': {
        'polygon': ZONE, 'frame': 'base_link'}})
    result = Planner().plan(planner_pack(open_room(), values))
    assert isinstance(result, Route) and len(result.waypoints) == 2
    assert result.constraints == ('safety:collision/stop',)


def test_malformed_zone_polygon_is_an_alarm_naming_the_key():
    values = room_values(zone=[[1, 2], [3]])
    result = Planner().plan(planner_pack(open_room(), values))
    assert isinstance(result, ConstraintAlarm)
    assert 'safety:zone/high_voltage.polygon' in result.reason


@pytest.mark.parametrize('value', [[[4, 1.5], [6, 1.5], [6, 3.5]], {'area': 'east'}, None,
                                   {'polygons': ZONE}, {'polygons': [[[4, 1.5]]]}])
def test_zone_without_a_readable_polygon_is_an_alarm_not_a_free_pass(value):
    values = dict(room_values(zone=None), **{'safety:zone/high_voltage': value})
    result = Planner().plan(planner_pack(open_room(), values))
    assert isinstance(result, ConstraintAlarm)
    assert result.reason.startswith('safety:zone/high_voltage')


@pytest.mark.parametrize('drop, expected', [
    ('pose', 'pose: not in the planner pack'),
    ('goal:deliver', 'goal:deliver: not in the planner pack'),
])
def test_no_route_without_pose_or_goal(drop, expected):
    values = room_values()
    del values[drop]
    result = Planner().plan(planner_pack(open_room(), values))
    assert isinstance(result, NoRoute) and expected in result.reason


def test_goal_beyond_the_window_gives_a_partial_route_to_the_border():
    grid = open_room()
    grid[1:-1, -1] = 0   # the room goes on to the east, beyond the window
    result = Planner().plan(planner_pack(grid, room_values(goal=(14.0, 2.5))))
    assert isinstance(result, Route) and not result.reaches_goal
    assert result.waypoints[-1][0] == pytest.approx(9.95)
    assert abs(result.waypoints[-1][1] - 2.5) < 0.5


def test_goal_beyond_a_closed_window_is_unreachable():
    result = Planner().plan(planner_pack(open_room(), room_values(goal=(14.0, 2.5))))
    assert isinstance(result, NoRoute) and 'inside the map window' in result.reason


def test_no_route_without_map_window():
    pack = PackView('planner', 3, 1.0, 'p', 'f', room_values(), (), (), None)
    assert isinstance(Planner().plan(pack), NoRoute)


def test_unknown_cells_block_like_walls():
    grid = open_room()
    grid[:, 50] = -1   # an unknown band across the whole room
    result = Planner().plan(planner_pack(grid, room_values(zone=[[8, 4], [8.5, 4], [8.5, 4.5]])))
    assert isinstance(result, NoRoute) and 'unreachable' in result.reason


def test_gap_narrower_than_the_robot_is_not_planned_through():
    grid = open_room()
    grid[:, 50] = 100
    grid[24:27, 50] = 0   # a 0.3 m gap
    values = room_values(zone=[[8, 4], [8.5, 4], [8.5, 4.5]])
    assert isinstance(Planner(PlannerConfig(robot_radius_m=0.25)).plan(planner_pack(grid, values)),
                      NoRoute)
    assert isinstance(Planner(PlannerConfig(robot_radius_m=0.1)).plan(planner_pack(grid, values)),
                      Route)


def test_robot_inside_the_inflation_band_can_still_leave_it():
    values = room_values(start=(0.2, 2.5), zone=[[8, 4], [8.5, 4], [8.5, 4.5]])
    assert isinstance(Planner().plan(planner_pack(open_room(), values)), Route)


def delivery_world_pack(door_state='closed'):
    world = WorldConfig()
    grid, door_cells = build_grid(world)
    if door_state == 'open':
        grid[door_cells] = 0
    values = {
        'pose': {'x': world.start[0], 'y': world.start[1], 'yaw': 0.0},
        'goal:deliver': {'x': world.dock[0], 'y': world.dock[1]},
        'safety:zone/high_voltage': {'polygon': [list(p) for p in world.zone_polygon]},
        'door:main': {'state': door_state, 'x': world.door_xy[0], 'y': world.door_xy[1],
                      'width': world.door_width_m},
    }
    return world, planner_pack(grid, values)


@pytest.mark.parametrize('door_state', ['closed', 'open'])
def test_delivery_route_goes_through_the_door_and_around_the_zone(door_state):
    world, pack = delivery_world_pack(door_state)
    result = Planner(PlannerConfig(robot_radius_m=world.robot_radius_m)).plan(pack)
    assert isinstance(result, Route)
    points = sample_route(result.waypoints)
    at_wall = points[np.abs(points[:, 0] - world.inner_wall_x) < 0.05]
    assert len(at_wall) and np.all(np.abs(at_wall[:, 1] - world.door_y) < world.door_width_m / 2)
    zone = [list(p) for p in world.zone_polygon]
    assert clearance_to_box(points, zone).min() >= world.robot_radius_m - RES


def test_window_around_the_start_leaves_through_the_door():
    # The planner's map window (radius 8 m around the start) ends at the inner wall.
    world, pack = delivery_world_pack('closed')
    window = MapWindow(pack.map_window.data[:, :101], (0.0, 0.0), RES)
    result = Planner(PlannerConfig(robot_radius_m=world.robot_radius_m)).plan(
        planner_pack(window.data, dict(pack.values)))
    assert isinstance(result, Route) and not result.reaches_goal
    end_x, end_y = result.waypoints[-1]
    assert end_x == pytest.approx(10.05) and abs(end_y - world.door_y) < world.door_width_m / 2


@pytest.mark.parametrize('clearance_cost', [3.0, 0.0])
def test_route_passes_the_doorway_in_the_middle_only_with_clearance_cost(clearance_cost):
    world, pack = delivery_world_pack('open')
    config = PlannerConfig(robot_radius_m=world.robot_radius_m, clearance_cost=clearance_cost)
    points = sample_route(Planner(config).plan(pack).waypoints)
    at_wall = points[np.abs(points[:, 0] - world.inner_wall_x) < 0.05]
    offset = np.abs(at_wall[:, 1] - world.door_y).max()
    assert (offset < 0.15) == (clearance_cost > 0.0)


def test_closed_door_without_door_item_blocks_the_way():
    world, pack = delivery_world_pack('closed')
    values = dict(pack.values)
    del values['door:main']
    assert isinstance(Planner().plan(planner_pack(pack.map_window.data, values)), NoRoute)


def flood_reachable(passable, start):
    """Return the set of cells 4/8-reachable from `start` without corner cutting (reference)."""
    rows, cols = passable.shape
    seen, frontier = {start}, [start]
    while frontier:
        row, col = frontier.pop()
        for d_row in (-1, 0, 1):
            for d_col in (-1, 0, 1):
                n = (row + d_row, col + d_col)
                if n in seen or not (0 <= n[0] < rows and 0 <= n[1] < cols) or not passable[n]:
                    continue
                if d_row and d_col and not (passable[row, n[1]] and passable[n[0], col]):
                    continue
                seen.add(n)
                frontier.append(n)
    return seen


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=144, max_size=144), st.integers(0, 143),
       st.integers(0, 143))
def test_astar_finds_a_valid_path_exactly_when_goal_is_reachable(cells, start_i, goal_i):
    passable = np.array(cells).reshape(12, 12)
    start, goal = divmod(start_i, 12), divmod(goal_i, 12)
    passable[start] = passable[goal] = True
    path = astar(passable, start, goal)
    assert (path is not None) == (goal in flood_reachable(passable, start))
    if path is not None:
        assert path[0] == start and path[-1] == goal
        assert all(passable[cell] for cell in path)
        assert all(max(abs(a[0] - b[0]), abs(a[1] - b[1])) == 1 for a, b in zip(path, path[1:]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=144, max_size=144), st.integers(0, 143),
       st.integers(-30, 40), st.integers(-30, 40))
def test_astar_to_a_goal_beyond_the_grid_ends_on_a_reachable_border_cell(cells, start_i, goal_row,
                                                                         goal_col):
    passable = np.array(cells).reshape(12, 12)
    start = divmod(start_i, 12)
    passable[start] = True
    goal = (goal_row, goal_col)
    if 0 <= goal_row < 12 and 0 <= goal_col < 12:
        goal = (goal_row + 12, goal_col)
    path = astar(passable, start, goal)
    border = {cell for cell in flood_reachable(passable, start)
              if cell[0] in (0, 11) or cell[1] in (0, 11)}
    assert (path is not None) == bool(border)
    if path is not None:
        assert path[0] == start and path[-1] in border
