"""What a screenshot of the 3D view shows: the map's walls and the robot marker, by colour.

Pure numpy on an (height, width, 3) uint8 RGB array. The colours are those the demo's views
draw on Foxglove's light theme: occupied map cells nearly black (`map` colour mode), tinted
magenta where the executor's window (`raw` colour mode) lies over them, and the robot an arrow
of `views.ROBOT` (0.1, 0.3, 0.9), shaded by the scene's light.
"""

from typing import NamedTuple

import numpy as np

LINE_SHARE = 0.25  # a row or column of at least this share of wall pixels lies on a wall


class Box(NamedTuple):
    """A pixel rectangle, inclusive: left, top, right, bottom."""

    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return self.right - self.left + 1

    @property
    def height(self) -> int:
        return self.bottom - self.top + 1

    def holds(self, x: float, y: float) -> bool:
        return self.left <= x <= self.right and self.top <= y <= self.bottom


def wall_mask(rgb: np.ndarray) -> np.ndarray:
    """Return where `rgb` shows an occupied map cell: near-black grey, or magenta over it."""
    r, g, b = (rgb[..., i].astype(np.int16) for i in range(3))
    grey_dark = (np.maximum(np.maximum(r, g), b) < 90) & (np.abs(r - b) < 16) & (np.abs(r - g) < 16)
    magenta = (r > 80) & (b > 80) & (g * 3 < r) & (g * 3 < b)
    return grey_dark | magenta


def robot_mask(rgb: np.ndarray) -> np.ndarray:
    """Return where `rgb` shows the robot's blue: green a third of blue, red under a quarter.

    The 3D grid's lines are blue too, but with green over half of blue.
    """
    r, g, b = (rgb[..., i].astype(np.int16) for i in range(3))
    return (b >= 120) & (g * 20 <= b * 9) & (r * 4 <= b)


def wall_box(rgb: np.ndarray) -> Box | None:
    """Return the box of the walls' outermost long lines, None when there are none.

    A wall is a long straight run of wall pixels: a row (or column) holding at least
    LINE_SHARE of the image's width (height) in them. Text and icons are never that long.
    """
    mask = wall_mask(rgb)
    height, width = mask.shape
    rows = np.nonzero(mask.sum(axis=1) >= LINE_SHARE * width)[0]
    columns = np.nonzero(mask.sum(axis=0) >= LINE_SHARE * height)[0]
    if rows.size == 0 or columns.size == 0:
        return None
    return Box(int(columns[0]), int(rows[0]), int(columns[-1]), int(rows[-1]))


def inside(box: Box, shape: tuple[int, ...], margin: int) -> bool:
    """Return True when `box` keeps `margin` pixels from every edge of an image of `shape`."""
    height, width = shape[:2]
    return (box.left >= margin and box.top >= margin and box.right < width - margin
            and box.bottom < height - margin)


def robot_centre(rgb: np.ndarray, min_pixels: int) -> tuple[float, float] | None:
    """Return the (x, y) centre of the robot's pixels, None when fewer than `min_pixels`."""
    ys, xs = np.nonzero(robot_mask(rgb))
    if xs.size < min_pixels:
        return None
    return float(xs.mean()), float(ys.mean())
