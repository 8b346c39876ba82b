"""Grid route planning from a cabin's pack: A* around obstacles and every safety zone in the pack.

The planner reads only its pack, and plans no route while a safety constraint (a board
key starting with `safety:`) that the pack should hold is missing from it (stale,
evicted, dropped: a zone source that fell silent is one whose items went stale), nor,
with `require_safety`, while the pack holds none at all: a planner whose constraints
were dropped, evicted or never seen must not plan blindly, so it answers a
ConstraintAlarm instead. Without `require_safety` a pack without any safety item is a
robot without zones, planned as it is.
"""

from __future__ import annotations

import fnmatch
import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from working_memory.core.gridmap import MapWindow
from working_memory.core.items import Missing
from working_memory.core.pack_view import PackValueError, PackView
from working_memory.decision.doors import Door, door_from_pack

SQRT2 = math.sqrt(2.0)
# 8-connected moves: (d_row, d_col, cost in cells).
MOVES = ((-1, 0, 1.0), (1, 0, 1.0), (0, -1, 1.0), (0, 1, 1.0),
         (-1, -1, SQRT2), (-1, 1, SQRT2), (1, -1, SQRT2), (1, 1, SQRT2))


@dataclass(frozen=True)
class PlannerConfig:
    """Planner settings.

    Cells with occupancy >= `occupied_threshold` are obstacles, negative cells
    are unknown; both are blocked. Obstacles and safety zones are inflated by
    `robot_radius_m` [m]. Cells less than `clearance_m` [m] beyond that radius cost
    up to `clearance_cost` times more to cross (most at the radius, linearly
    less outwards), so routes keep off walls and zones where there is room and
    pass doorways in the middle. A closed door (board key `door_prefix`*) is an obstacle
    the executor can open: the map's occupied cells within half its width
    (`door_width_m` [m] when the value has none) of its center are planned through.
    A safety value's `polygon` (or `polygons`) is a zone when its `frame` is `map_frame`
    or absent; one in another frame (the collision monitor's, around the robot) is a
    constraint present but not rasterized (no TF lookup). `require_safety`: see
    `check_constraints`.
    """

    robot_radius_m: float = 0.25
    clearance_m: float = 0.4
    clearance_cost: float = 3.0
    occupied_threshold: int = 50
    door_width_m: float = 1.0
    goal_key: str = 'goal:deliver'
    pose_key: str = 'pose'
    require_safety: bool = True
    map_frame: str = 'map'
    safety_prefix: str = 'safety:'
    zone_prefix: str = 'safety:zone/'
    door_prefix: str = 'door:'

    def __post_init__(self):
        if not (math.isfinite(self.robot_radius_m) and self.robot_radius_m >= 0.0):
            raise ValueError(f'robot_radius_m: must be >= 0 m, got {self.robot_radius_m!r}')
        for name in ('clearance_m', 'clearance_cost'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f'{name}: must be >= 0, got {value!r}')
        if not (math.isfinite(self.door_width_m) and self.door_width_m > 0.0):
            raise ValueError(f'door_width_m: must be > 0 m, got {self.door_width_m!r}')
        if not 1 <= self.occupied_threshold <= 100:
            raise ValueError(f'occupied_threshold: must be in [1, 100], '
                             f'got {self.occupied_threshold!r}')
        for name in ('goal_key', 'pose_key', 'safety_prefix', 'zone_prefix', 'door_prefix',
                     'map_frame'):
            if not getattr(self, name):
                raise ValueError(f'{name}: must not be empty')


@dataclass(frozen=True)
class Route:
    """A collision-free route: waypoints [m] from the pose, and its length [m].

    When the goal lies outside the map window the route ends on the window's
    border where the rest of the way looks shortest, and `reaches_goal` is False.
    """

    waypoints: tuple[tuple[float, float], ...]
    length_m: float
    constraints: tuple[str, ...]    # safety keys the route respects
    reaches_goal: bool = True


@dataclass(frozen=True)
class ConstraintAlarm:
    """No route: the pack's safety constraints are absent or unusable.

    `needs` names what the decision needed (keys or globs), present or not: the
    record a fault's archaeology reads (`wm-inspect suggest`), also where no missing
    note explains the absence (a manifest that does not select it).
    """

    reason: str
    missing: tuple[Missing, ...] = field(default=())
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoRoute:
    """No route for a reason other than constraints (no pose, no goal, goal unreachable...)."""

    reason: str


def check_constraints(pack: PackView, safety_prefix: str = 'safety:',
                      require: bool = True) -> ConstraintAlarm | None:
    """Return a ConstraintAlarm when a safety constraint is missing from `pack`, else None.

    Missing: one the pack reports missing (stale, evicted, dropped), or, when `require`,
    none at all in the pack.
    """
    related = tuple(item for item in pack.missing if _concerns_safety(item.key, safety_prefix))
    held = pack.keys_matching(safety_prefix + '*')
    if not related and (held or not require):
        return None
    reasons = ', '.join(f'{item.key}: {item.reason.value}' for item in related)
    what = (f'{len(related)} safety constraint(s) ({safety_prefix}*) missing from'
            if held else f'no safety constraint ({safety_prefix}*) in')
    return ConstraintAlarm(
        reason=f'{what} the {pack.cabin} pack' + (f' ({reasons})' if reasons else ''),
        missing=related, needs=(safety_prefix + '*',))


def _concerns_safety(missing_key: str, safety_prefix: str) -> bool:
    """Return True when a missing key (a key, glob or drop category) may cover a safety key."""
    if missing_key.startswith(safety_prefix):
        return True
    pattern = missing_key.removeprefix('board:')
    return any(ch in pattern for ch in '*?[') and fnmatch.fnmatchcase(safety_prefix + 'x', pattern)


class Planner:
    """A* route planner on the pack's map window (8-connected, no corner cutting)."""

    def __init__(self, config: PlannerConfig = PlannerConfig()):
        self.config = config

    def plan(self, pack: PackView) -> Route | ConstraintAlarm | NoRoute:
        """Plan from the pack's pose to its goal; never plans without a safety constraint."""
        config = self.config
        alarm = check_constraints(pack, config.safety_prefix, config.require_safety)
        if alarm is not None:
            return alarm
        safety_keys = pack.keys_matching(config.safety_prefix + '*')
        try:
            zones = [zone for key in safety_keys
                     for zone in _zone_polygons(key, pack.value(key), config.zone_prefix,
                                                config.map_frame)]
        except PackValueError as err:
            # A constraint the planner cannot read is as good as absent.
            return ConstraintAlarm(reason=str(err))
        grid = pack.map_window
        if grid is None or grid.data.size == 0:
            return NoRoute(f'no map window in the {pack.cabin} pack of tick {pack.tick}')
        try:
            start, goal = pack.point(self.config.pose_key), pack.point(self.config.goal_key)
            doors = [door_from_pack(pack, key)
                     for key in pack.keys_matching(self.config.door_prefix + '*')]
        except PackValueError as err:
            return NoRoute(str(err))
        passable, closeness = self._passable(
            grid, zones, [door for door in doors if not door.is_open], start, goal)
        start_cell, goal_cell = cell_of(grid, *start), cell_of(grid, *goal)
        reaches_goal = contains(grid, goal_cell)
        if not contains(grid, start_cell):
            return NoRoute(f'pose ({start[0]:.2f}, {start[1]:.2f}) m is outside the map window')
        for name, cell, point in (('pose', start_cell, start), ('goal', goal_cell, goal)):
            if contains(grid, cell) and not passable[cell]:
                return NoRoute(f'{name} ({point[0]:.2f}, {point[1]:.2f}) m is on a blocked cell')
        step_cost = 1.0 + self.config.clearance_cost * closeness
        cells = astar(passable, start_cell, goal_cell, step_cost)
        if cells is None:
            return NoRoute(f'goal ({goal[0]:.2f}, {goal[1]:.2f}) m is unreachable from '
                           f'({start[0]:.2f}, {start[1]:.2f}) m'
                           + ('' if reaches_goal else ' inside the map window'))
        corners = shortcut(passable, cells, closeness)
        end = goal if reaches_goal else _rounded(center_of(grid, corners[-1]))
        waypoints = ((start,) + tuple(_rounded(center_of(grid, cell)) for cell in corners[1:-1])
                     + (end,))
        length = sum(math.dist(a, b) for a, b in zip(waypoints, waypoints[1:]))
        return Route(waypoints=waypoints, length_m=length, constraints=tuple(safety_keys),
                     reaches_goal=reaches_goal)

    def _passable(self, grid: MapWindow, zones: list[np.ndarray], closed_doors: list[Door],
                  start: tuple[float, float],
                  goal: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
        """Return the cells the robot's center may occupy, and each cell's closeness in [0, 1].

        Closeness is 1 within the robot radius of an obstacle or zone, falls in
        rings to 0 at `clearance_m` beyond it, and is 0 farther out.
        """
        lethal_obstacles = grid.data >= self.config.occupied_threshold
        for door in closed_doors:
            width = door.width_m if door.width_m is not None else self.config.door_width_m
            lethal_obstacles &= ~disk_around(grid, (door.x, door.y), width / 2.0)
        # Zones go in after the doors: a door never opens a way through a safety zone.
        for polygon in zones:
            lethal_obstacles |= rasterize_polygon(grid, polygon)
        radius_cells = self.config.robot_radius_m / grid.resolution
        inflated = inflate(lethal_obstacles, radius_cells)
        passable = ~inflated & (grid.data >= 0)
        # The robot may have drifted into the inflation band, and a goal may sit close to
        # a wall: band cells near the start and goal stay passable so both can be left or
        # reached. Lethal cells (obstacles, zones, unknown) never are.
        escape = ~lethal_obstacles & (grid.data >= 0)
        for point in (start, goal):
            passable |= escape & disk_around(grid, point, 2.0 * self.config.robot_radius_m)
        rings = math.ceil(self.config.clearance_m / grid.resolution)
        closeness = inflated.astype(float)
        for ring in range(rings, 0, -1):   # outermost first: nearer rings overwrite
            closeness[inflate(lethal_obstacles, radius_cells + ring)
                      & ~inflated] = 1.0 - ring / (rings + 1)
        return passable, closeness


def _zone_polygons(key: str, value, zone_prefix: str, map_frame: str) -> list[np.ndarray]:
    """Return a safety value's zones in `map_frame` as (n, 2) arrays [m]; [] when it has none.

    A value holds one `polygon` or a list of `polygons`, in its `frame` (absent or '':
    `map_frame`); one in another frame is no zone of the map (no TF lookup). Raises
    PackValueError naming the key when a polygon is malformed, or when a zone key
    (`zone_prefix`*) has none: a zone the planner cannot read is no zone.
    """
    if not isinstance(value, dict) or not {'polygon', 'polygons'} & value.keys():
        if key.startswith(zone_prefix):
            raise PackValueError(f'{key}: a zone needs {{"polygon": [[x, y], ...]}} or '
                                 f'{{"polygons": [...]}}, got {value!r}')
        return []
    if value.get('frame') not in (None, '', map_frame):
        return []
    if 'polygon' in value:
        return [_polygon(f'{key}.polygon', value['polygon'])]
    if not isinstance(value['polygons'], list):
        raise PackValueError(f'{key}.polygons: expected a list of polygons, got '
                             f'{value["polygons"]!r}')
    return [_polygon(f'{key}.polygons[{index}]', polygon)
            for index, polygon in enumerate(value['polygons'])]


def _polygon(where: str, points) -> np.ndarray:
    """Return [[x, y], ...] as an (n, 2) array [m]; PackValueError naming `where` if it is none."""
    try:
        polygon = np.asarray(points, dtype=float)
    except (TypeError, ValueError) as err:
        raise PackValueError(f'{where}: expected [[x, y], ...] in m, got {points!r}') from err
    if polygon.ndim != 2 or polygon.shape[1] != 2 or len(polygon) < 3 \
            or not np.isfinite(polygon).all():
        raise PackValueError(f'{where}: expected at least 3 finite [x, y] points, got '
                             f'{points!r}')
    return polygon


def cell_of(grid: MapWindow, x: float, y: float) -> tuple[int, int]:
    """Return the (row, column) of the cell holding world point (x, y) [m]; may lie outside."""
    return (math.floor((y - grid.origin[1]) / grid.resolution),
            math.floor((x - grid.origin[0]) / grid.resolution))


def center_of(grid: MapWindow, cell: tuple[int, int]) -> tuple[float, float]:
    """Return the world position [m] of a cell's center."""
    return (grid.origin[0] + (cell[1] + 0.5) * grid.resolution,
            grid.origin[1] + (cell[0] + 0.5) * grid.resolution)


def contains(grid: MapWindow, cell: tuple[int, int]) -> bool:
    """Return True when `cell` (row, column) is a cell of the window."""
    return 0 <= cell[0] < grid.data.shape[0] and 0 <= cell[1] < grid.data.shape[1]


def _rounded(point: tuple[float, float]) -> tuple[float, float]:
    """Round a world point to millimetres (compact route JSON)."""
    return round(point[0], 3), round(point[1], 3)


def rasterize_polygon(grid: MapWindow, polygon: np.ndarray) -> np.ndarray:
    """Return the boolean mask of cells whose center lies inside `polygon` or that hold a vertex.

    Even-odd rule, vectorised over the cells of the polygon's bounding box.
    Vertex cells are added so a polygon thinner than a cell is never lost.
    """
    rows, cols = grid.data.shape
    mask = np.zeros((rows, cols), dtype=bool)
    res, (ox, oy) = grid.resolution, grid.origin
    col_lo = max(0, math.floor((polygon[:, 0].min() - ox) / res))
    col_hi = min(cols, math.floor((polygon[:, 0].max() - ox) / res) + 1)
    row_lo = max(0, math.floor((polygon[:, 1].min() - oy) / res))
    row_hi = min(rows, math.floor((polygon[:, 1].max() - oy) / res) + 1)
    if col_lo >= col_hi or row_lo >= row_hi:
        return mask
    xs = ox + (np.arange(col_lo, col_hi) + 0.5) * res
    ys = oy + (np.arange(row_lo, row_hi) + 0.5) * res
    px, py = np.meshgrid(xs, ys)
    inside = np.zeros(px.shape, dtype=bool)
    for (x1, y1), (x2, y2) in zip(polygon, np.roll(polygon, -1, axis=0)):
        if y1 == y2:
            continue  # a horizontal edge never crosses a horizontal ray
        crosses = (y1 > py) != (y2 > py)
        x_cross = x1 + (py - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (px < x_cross)
    mask[row_lo:row_hi, col_lo:col_hi] = inside
    for x, y in polygon:
        cell = cell_of(grid, x, y)
        if contains(grid, cell):
            mask[cell] = True
    return mask


def inflate(mask: np.ndarray, radius_cells: float) -> np.ndarray:
    """Return `mask` dilated by a disk of `radius_cells` (one shifted OR per disk offset)."""
    reach = math.floor(radius_cells)
    if reach <= 0:
        return mask.copy()
    rows, cols = mask.shape
    padded = np.pad(mask, reach)
    out = np.zeros_like(mask)
    for d_row in range(-reach, reach + 1):
        for d_col in range(-reach, reach + 1):
            if d_row * d_row + d_col * d_col <= radius_cells * radius_cells:
                row0, col0 = reach + d_row, reach + d_col
                out |= padded[row0:row0 + rows, col0:col0 + cols]
    return out


def disk_around(grid: MapWindow, point: tuple[float, float], radius_m: float) -> np.ndarray:
    """Return the mask of cells whose center lies within `radius_m` [m] of `point`."""
    rows, cols = grid.data.shape
    xs = grid.origin[0] + (np.arange(cols) + 0.5) * grid.resolution
    ys = grid.origin[1] + (np.arange(rows) + 0.5) * grid.resolution
    return ((xs[np.newaxis, :] - point[0]) ** 2 + (ys[:, np.newaxis] - point[1]) ** 2
            <= radius_m * radius_m)


def astar(passable: np.ndarray, start: tuple[int, int], goal: tuple[int, int],
          step_cost: np.ndarray | None = None) -> list[tuple[int, int]] | None:
    """Return the cheapest 8-connected cell path from `start` to `goal`, or None.

    A move costs its length [cells] times `step_cost` (>= 1) of the cell it
    enters (1 everywhere when None). Diagonal moves need both orthogonal
    neighbours passable (no corner cutting).
    A `goal` outside the grid is reached through the grid's border: leaving from
    a border cell costs the octile distance from it to the goal, and the path
    ends at the border cell where that total is least. Octile distance is the
    (consistent) heuristic.
    """
    rows, cols = passable.shape
    free = passable.ravel().tolist()   # plain lists: fast scalar reads in the loop
    factor = ([1.0] * len(free) if step_cost is None
              else np.maximum(step_cost, 1.0).ravel().tolist())
    goal_row, goal_col = goal
    goal_inside = 0 <= goal_row < rows and 0 <= goal_col < cols
    exit_index = -2                    # the virtual node beyond the border
    goal_i = goal_row * cols + goal_col if goal_inside else exit_index

    def heuristic(row, col):
        d_row, d_col = abs(row - goal_row), abs(col - goal_col)
        return max(d_row, d_col) + (SQRT2 - 1.0) * min(d_row, d_col)

    start_i = start[0] * cols + start[1]
    cost = {start_i: 0.0, exit_index: math.inf}
    parent = {start_i: -1}
    closed = set()
    open_heap = [(heuristic(*start), 0.0, start_i)]
    while open_heap:
        _, g, index = heapq.heappop(open_heap)
        if index in closed:
            continue
        if index == goal_i:
            index = parent[index] if index == exit_index else index
            path = []
            while index != -1:
                path.append(divmod(index, cols))
                index = parent[index]
            return path[::-1]
        closed.add(index)
        row, col = divmod(index, cols)
        if not goal_inside and (row in (0, rows - 1) or col in (0, cols - 1)):
            exit_cost = g + heuristic(row, col)
            if exit_cost < cost[exit_index]:
                cost[exit_index], parent[exit_index] = exit_cost, index
                heapq.heappush(open_heap, (exit_cost, exit_cost, exit_index))
        for d_row, d_col, step in MOVES:
            n_row, n_col = row + d_row, col + d_col
            if not (0 <= n_row < rows and 0 <= n_col < cols):
                continue
            n_index = n_row * cols + n_col
            if not free[n_index] or n_index in closed:
                continue
            if d_row and d_col and not (free[row * cols + n_col] and free[n_row * cols + col]):
                continue
            n_cost = g + step * factor[n_index]
            if n_cost < cost.get(n_index, math.inf):
                cost[n_index] = n_cost
                parent[n_index] = index
                heapq.heappush(open_heap, (n_cost + heuristic(n_row, n_col), n_cost, n_index))
    return None


def line_cells(a: tuple[int, int], b: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Return (rows, cols) of the cells the segment between cell centers `a` and `b` touches.

    Samples the segment every quarter cell, and takes both cells at each sample's
    row and column rounding so a diagonal never slips between two cells.
    """
    steps = 4 * max(abs(b[0] - a[0]), abs(b[1] - a[1])) + 1
    t = np.linspace(0.0, 1.0, steps)
    rows = a[0] + 0.5 + t * (b[0] - a[0])
    cols = a[1] + 0.5 + t * (b[1] - a[1])
    eps = 1e-6
    cells_r = np.concatenate([np.floor(rows - eps), np.floor(rows + eps)] * 2).astype(int)
    cells_c = np.concatenate([np.floor(cols - eps)] * 2 + [np.floor(cols + eps)] * 2).astype(int)
    return cells_r, cells_c


def shortcut(passable: np.ndarray, cells: list[tuple[int, int]],
             closeness: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Return the corners of `cells` left after greedy line-of-sight pruning (ends kept).

    A shortcut must cross passable cells only, and never come closer to an
    obstacle (higher `closeness`) than the stretch of path it replaces did.
    """
    near = np.zeros(passable.shape) if closeness is None else closeness
    path_near = [near[cell] for cell in cells]

    def allowed(first, last):
        rows, cols = line_cells(cells[first], cells[last])
        return bool(passable[rows, cols].all()) and \
            near[rows, cols].max() <= max(path_near[first:last + 1])
    corners = [cells[0]]
    anchor = 0
    while anchor < len(cells) - 1:
        reach = anchor + 1
        while reach + 1 < len(cells) and allowed(anchor, reach + 1):
            reach += 1
        corners.append(cells[reach])
        anchor = reach
    return corners
