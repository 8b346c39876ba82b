"""GridMap: pose windows are clipped views, corridors blank far cells, bad maps are refused."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from working_memory.core.gridmap import GridMap, UNKNOWN, as_route


def numbered_grid(height, width, origin=(0.0, 0.0), resolution=1.0):
    """Return a grid whose cells hold distinct values (mod 100), so any wrong slice shows."""
    data = (np.arange(height * width) % 100).astype(np.int8).reshape(height, width)
    return GridMap(data, origin, resolution)


def test_window_is_a_read_only_view_of_the_grid():
    grid = numbered_grid(20, 30, resolution=0.5)
    window = grid.window(5.0, 4.0, 1.0)
    assert np.shares_memory(window.data, grid.data)
    assert not window.data.flags.writeable
    assert window.data.shape == (5, 5)  # cells 6..10 meet [3, 5] m on both axes
    assert window.origin == (4.0, 3.0)
    np.testing.assert_array_equal(window.data, grid.data[6:11, 8:13])


def test_window_is_clipped_at_the_border():
    grid = numbered_grid(10, 10, origin=(-5.0, -5.0))
    window = grid.window(-4.5, 4.5, 2.0)  # near the top-left corner (x min, y max)
    assert window.origin == (-5.0, 2.0)
    np.testing.assert_array_equal(window.data, grid.data[7:10, 0:3])


def test_window_missing_the_grid_is_none():
    grid = numbered_grid(10, 10)
    assert grid.window(30.0, 5.0, 2.0) is None
    assert grid.window(-1.0, 5.0, 0.5) is None


def test_contains_is_half_open_on_the_far_edge():
    grid = numbered_grid(4, 6, origin=(1.0, 2.0), resolution=0.5)
    assert grid.contains(1.0, 2.0)
    assert grid.contains(3.99, 3.99)
    assert not grid.contains(4.0, 3.0)
    assert not grid.contains(0.99, 2.5)


def brute_force_box(grid, x0, y0, x1, y1):
    """Slice and origin of every cell whose extent meets [x0, x1] x [y0, y1], cell by cell."""
    height, width = grid.shape
    res, (ox, oy) = grid.resolution, grid.origin
    rows = [r for r in range(height) if oy + r * res <= y1 and oy + (r + 1) * res > y0]
    cols = [c for c in range(width) if ox + c * res <= x1 and ox + (c + 1) * res > x0]
    if not rows or not cols:
        return None
    return (grid.data[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1],
            (ox + cols[0] * res, oy + rows[0] * res))


# Dyadic numbers (multiples of 1/16 m, resolutions 1/4..1 m) are exact in binary floating
# point, so the brute force and the window agree on cells exactly at the square's edge.
coordinate = st.integers(-200, 400).map(lambda n: n / 16)
resolution = st.sampled_from([0.25, 0.5, 1.0])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 25), st.integers(1, 25), coordinate, coordinate, resolution,
       coordinate, coordinate, st.integers(0, 120).map(lambda n: n / 16))
def test_window_equals_a_brute_force_slice(height, width, ox, oy, res, x, y, radius):
    grid = numbered_grid(height, width, (ox, oy), res)
    expected = brute_force_box(grid, x - radius, y - radius, x + radius, y + radius)
    window = grid.window(x, y, radius)
    if expected is None:
        assert window is None
        return
    np.testing.assert_array_equal(window.data, expected[0])
    assert window.origin == expected[1]
    assert np.shares_memory(window.data, grid.data)


def distance_to_polyline(px, py, route):
    segments = list(zip(route, route[1:])) or [(route[0], route[0])]
    best = math.inf
    for (ax, ay), (bx, by) in segments:
        dx, dy = bx - ax, by - ay
        length2 = dx * dx + dy * dy
        t = 0.0 if length2 == 0 else ((px - ax) * dx + (py - ay) * dy) / length2
        t = min(1.0, max(0.0, t))
        best = min(best, math.hypot(px - ax - t * dx, py - ay - t * dy))
    return best


def test_corridor_blanks_cells_far_from_the_route_and_keeps_near_ones():
    grid = GridMap(np.full((20, 20), 7, dtype=np.int8), (0.0, 0.0), 1.0)
    corridor = grid.corridor([[2.5, 2.5], [15.5, 2.5], [15.5, 12.5]], 1.0)
    assert corridor.origin == (1.0, 1.0)
    assert corridor.data.shape == (13, 16)
    assert corridor.data[1, 5] == 7       # cell centre (6.5, 2.5) lies on the first leg
    assert corridor.data[10, 1] == UNKNOWN  # cell centre (2.5, 11.5) is far from both legs
    assert grid.data[11, 2] == 7          # the grid itself is untouched
    assert not np.shares_memory(corridor.data, grid.data)


def test_single_point_route_gives_a_disc():
    grid = GridMap(np.zeros((11, 11), dtype=np.int8), (0.0, 0.0), 1.0)
    disc = grid.corridor([{'x': 5.5, 'y': 5.5}], 2.0)
    kept = np.argwhere(disc.data == 0) + [int(disc.origin[1]), int(disc.origin[0])]
    assert {tuple(cell) for cell in kept} == {
        (r, c) for r in range(11) for c in range(11) if math.hypot(r - 5, c - 5) <= 2.0}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=5),
       st.integers(2, 40).map(lambda n: n / 8), resolution)
def test_corridor_equals_a_brute_force_distance_check(route, half_width, res):
    grid = numbered_grid(24, 24, (-2.0, -1.0), res)
    corridor = grid.corridor(route, half_width)
    (x0, y0), (x1, y1) = np.min(route, axis=0), np.max(route, axis=0)
    box = brute_force_box(grid, x0 - half_width, y0 - half_width, x1 + half_width, y1 + half_width)
    if box is None:
        assert corridor is None
        return
    assert corridor.origin == box[1]
    assert corridor.data.shape == box[0].shape
    ox, oy = corridor.origin
    for row in range(corridor.data.shape[0]):
        for col in range(corridor.data.shape[1]):
            cx, cy = ox + (col + 0.5) * res, oy + (row + 0.5) * res
            distance = distance_to_polyline(cx, cy, route)
            if abs(distance - half_width) < 1e-9:
                continue  # on the rim: rounding may go either way
            expected = box[0][row, col] if distance < half_width else UNKNOWN
            assert corridor.data[row, col] == expected, (row, col, distance)


def test_corridor_missing_the_grid_is_none():
    grid = numbered_grid(5, 5)
    assert grid.corridor([[20.0, 20.0], [30.0, 20.0]], 1.0) is None


def test_route_accepts_pairs_and_objects_and_names_a_bad_point():
    np.testing.assert_array_equal(as_route([[0, 1], {'x': 2.0, 'y': 3.0}]), [[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=r'route\[1\]\.y: must be a finite number'):
        as_route([[0, 1], {'x': 2.0}])
    with pytest.raises(ValueError, match=r'route\[0\]: must be \[x, y\]'):
        as_route([[0]])
    with pytest.raises(ValueError, match='route: must be a non-empty list'):
        as_route([])


def test_route_reads_the_planners_waypoints_object():
    route = {'waypoints': [[1, 2], [3, 4]], 'tick': 7, 'digest': 'ab'}
    np.testing.assert_array_equal(as_route(route), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match='route: must be a non-empty list'):
        as_route({'waypoints': []})


@pytest.mark.parametrize('data, origin, res, message', [
    ([[0, 1]], (0.0, 0.0), 1.0, 'data: must be a numpy array'),
    (np.zeros((2, 2), dtype=np.int16), (0.0, 0.0), 1.0, 'data: dtype must be int8'),
    (np.zeros(4, dtype=np.int8), (0.0, 0.0), 1.0, r'data: must be a non-empty \(height, width\)'),
    (np.zeros((0, 3), dtype=np.int8), (0.0, 0.0), 1.0, 'data: must be a non-empty'),
    (np.zeros((2, 2), dtype=np.int8), (0.0,), 1.0, r'origin: must be \(x, y\)'),
    (np.zeros((2, 2), dtype=np.int8), (0.0, math.nan), 1.0, 'origin.y: must be a finite number'),
    (np.zeros((2, 2), dtype=np.int8), (0.0, 0.0), 0.0, 'resolution: must be > 0'),
    (np.zeros((2, 2), dtype=np.int8), (0.0, 0.0), math.inf, 'resolution: must be a finite'),
])
def test_bad_grid_is_rejected_naming_the_field(data, origin, res, message):
    with pytest.raises(ValueError, match=message):
        GridMap(data, origin, res)


def test_bad_scope_arguments_are_rejected():
    grid = numbered_grid(5, 5)
    with pytest.raises(ValueError, match='radius_m: must be >= 0'):
        grid.window(1.0, 1.0, -1.0)
    with pytest.raises(ValueError, match='x: must be a finite number'):
        grid.window(math.nan, 1.0, 1.0)
    with pytest.raises(ValueError, match='half_width_m: must be > 0'):
        grid.corridor([[1.0, 1.0]], 0.0)


def test_grid_data_cannot_be_written_through_the_map():
    grid = numbered_grid(3, 3)
    with pytest.raises(ValueError):
        grid.data[0, 0] = 5
