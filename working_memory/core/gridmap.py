"""A numpy view of an occupancy grid and its two spatial scopes: pose window, route corridor."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

UNKNOWN = -1


@dataclass(frozen=True, eq=False)
class MapWindow:
    """A rectangular part of a grid: `data[row, col]`; cell (0, 0) has its corner at `origin`."""

    data: np.ndarray
    origin: tuple[float, float]  # [m]
    resolution: float  # [m/cell]


def _check_finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value):
        raise ValueError(f'{name}: must be a finite number, got {value!r}')
    return float(value)


def as_point(value: Any, what: str) -> tuple[float, float]:
    """Return (x, y) [m] from `{"x": .., "y": .., ...}` or `(x, y[, yaw])`.

    Raises ValueError naming `what` and the bad coordinate.
    """
    if isinstance(value, dict):
        value = (value.get('x'), value.get('y'))
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) not in (2, 3):
        raise ValueError(f'{what}: must be [x, y] or {{"x": .., "y": ..}}, got {value!r}')
    return _check_finite(value[0], f'{what}.x'), _check_finite(value[1], f'{what}.y')


def as_route(points: Any) -> np.ndarray:
    """Return a route as an (n, 2) float array of (x, y) [m] from pairs or {x, y} objects.

    `points` is the list itself or an object holding it under "waypoints" (the
    planner's board value). Raises ValueError naming the first bad point.
    """
    if isinstance(points, Mapping) and 'waypoints' in points:
        points = points['waypoints']
    if not isinstance(points, (list, tuple, np.ndarray)) or len(points) == 0:
        raise ValueError(f'route: must be a non-empty list of points, got {points!r}')
    return np.array([as_point(point, f'route[{index}]') for index, point in enumerate(points)])


class GridMap:
    """An int8 occupancy grid (row = y, column = x) with origin [m] and resolution [m/cell].

    The grid keeps a read-only view of `data`: build a new GridMap for a new
    map rather than writing into the array.
    """

    def __init__(self, data: np.ndarray, origin: tuple[float, float], resolution: float):
        if not isinstance(data, np.ndarray):
            raise ValueError(f'data: must be a numpy array, got {type(data).__name__}')
        if data.dtype != np.int8:
            raise ValueError(f'data: dtype must be int8, got {data.dtype}')
        if data.ndim != 2 or data.shape[0] < 1 or data.shape[1] < 1:
            raise ValueError(f'data: must be a non-empty (height, width) array, got shape '
                             f'{data.shape}')
        if not isinstance(origin, (tuple, list, np.ndarray)) or len(origin) != 2:
            raise ValueError(f'origin: must be (x, y) [m], got {origin!r}')
        self._origin = (_check_finite(origin[0], 'origin.x'), _check_finite(origin[1], 'origin.y'))
        self._resolution = _check_finite(resolution, 'resolution')
        if self._resolution <= 0.0:
            raise ValueError(f'resolution: must be > 0 m/cell, got {resolution!r}')
        self._data = data.view()
        self._data.flags.writeable = False

    @property
    def data(self) -> np.ndarray:
        """The read-only (height, width) int8 cells."""
        return self._data

    @property
    def origin(self) -> tuple[float, float]:
        """Corner (x, y) [m] of cell (0, 0)."""
        return self._origin

    @property
    def resolution(self) -> float:
        """Cell side [m]."""
        return self._resolution

    @property
    def shape(self) -> tuple[int, int]:
        """(height, width) [cells]."""
        return self._data.shape

    def contains(self, x: float, y: float) -> bool:
        """Return True when the point (x, y) [m] lies on the grid."""
        height, width = self.shape
        col = (x - self._origin[0]) / self._resolution
        row = (y - self._origin[1]) / self._resolution
        return 0.0 <= col < width and 0.0 <= row < height

    def window(self, x: float, y: float, radius_m: float) -> MapWindow | None:
        """Return the cells meeting the square of half side `radius_m` [m] around (x, y).

        The result is a view into the grid, clipped at its borders, or None
        when the square misses the grid.
        """
        x, y = _check_finite(x, 'x'), _check_finite(y, 'y')
        radius_m = _check_finite(radius_m, 'radius_m')
        if radius_m < 0.0:
            raise ValueError(f'radius_m: must be >= 0 m, got {radius_m!r}')
        return self._box(x - radius_m, y - radius_m, x + radius_m, y + radius_m)

    def corridor(self, route: Any, half_width_m: float) -> MapWindow | None:
        """Return the cells around a route polyline, farther cells set to unknown (-1).

        `route` is anything `as_route` accepts. The window is the route's
        bounding box grown by `half_width_m` [m], clipped to the grid (None
        when it misses the grid); a cell is kept when its centre lies within
        `half_width_m` of the polyline. The result is a new array.
        """
        points = as_route(route)
        half_width_m = _check_finite(half_width_m, 'half_width_m')
        if half_width_m <= 0.0:
            raise ValueError(f'half_width_m: must be > 0 m, got {half_width_m!r}')
        low = points.min(axis=0) - half_width_m
        high = points.max(axis=0) + half_width_m
        box = self._box(low[0], low[1], high[0], high[1])
        if box is None:
            return None
        near = np.zeros(box.data.shape, dtype=bool)
        ends = points[1:] if len(points) > 1 else points
        for start, end in zip(points, ends):
            self._mark_near_segment(near, box.origin, start, end, half_width_m)
        data = box.data.copy()
        data[~near] = UNKNOWN
        return MapWindow(data, box.origin, self._resolution)

    def _box(self, x0: float, y0: float, x1: float, y1: float) -> MapWindow | None:
        """Return the view of the cells meeting the rectangle [x0, x1] x [y0, y1] [m]."""
        cols = self._cell_range(x0, x1, self._origin[0], self.shape[1])
        rows = self._cell_range(y0, y1, self._origin[1], self.shape[0])
        if cols is None or rows is None:
            return None
        origin = (self._origin[0] + cols[0] * self._resolution,
                  self._origin[1] + rows[0] * self._resolution)
        return MapWindow(self._data[rows[0]:rows[1], cols[0]:cols[1]], origin, self._resolution)

    def _cell_range(self, low: float, high: float, origin: float,
                    size: int) -> tuple[int, int] | None:
        """Return [first, stop) of the cells whose extent meets [low, high] [m], or None."""
        first = max(math.floor((low - origin) / self._resolution), 0)
        last = min(math.floor((high - origin) / self._resolution), size - 1)
        return (first, last + 1) if first <= last else None

    def _mark_near_segment(self, near: np.ndarray, origin: tuple[float, float],
                           start: np.ndarray, end: np.ndarray, half_width_m: float) -> None:
        """Set `near` for cells whose centre is within `half_width_m` [m] of segment start-end."""
        resolution = self._resolution
        # Only the segment's own bounding box (grown by the half-width) can be near it.
        low = np.minimum(start, end) - half_width_m
        high = np.maximum(start, end) + half_width_m
        col0 = max(math.floor((low[0] - origin[0]) / resolution), 0)
        col1 = min(math.floor((high[0] - origin[0]) / resolution) + 1, near.shape[1])
        row0 = max(math.floor((low[1] - origin[1]) / resolution), 0)
        row1 = min(math.floor((high[1] - origin[1]) / resolution) + 1, near.shape[0])
        if col0 >= col1 or row0 >= row1:
            return
        xs = origin[0] + (np.arange(col0, col1) + 0.5) * resolution
        ys = origin[1] + (np.arange(row0, row1) + 0.5) * resolution
        dx, dy = end - start
        length2 = dx * dx + dy * dy
        rel_x = xs[np.newaxis, :] - start[0]
        rel_y = ys[:, np.newaxis] - start[1]
        if length2 > 0.0:
            t = np.clip((rel_x * dx + rel_y * dy) / length2, 0.0, 1.0)
            rel_x = rel_x - t * dx
            rel_y = rel_y - t * dy
        near[row0:row1, col0:col1] |= rel_x * rel_x + rel_y * rel_y <= half_width_m * half_width_m
