"""The pixel checks of tools/browser/pixels.py on drawn images (no browser needed)."""

import numpy as np
import pytest

BACKGROUND = (244, 244, 245)  # Foxglove's light 3D background
WALL = (49, 49, 49)           # an occupied cell at alpha 0.8
WALL_UNDER_WINDOW = (131, 29, 131)  # with the executor's window over it
GRID = (36, 142, 255)         # the 3D grid's lines
ROBOT_LIT, ROBOT_SHADED = (43, 92, 255), (24, 62, 186)


def view(walls=(100, 50, 400, 230), robot=(250, 140), grid=True):
    """Return a 300 x 500 view: walls of a 300 x 180 px world, a grid, the robot's arrow."""
    rgb = np.full((300, 500, 3), BACKGROUND, dtype=np.uint8)
    if grid:
        rgb[::25, :] = GRID
        rgb[:, ::25] = GRID
    if walls is not None:
        left, top, right, bottom = walls
        for rows, columns in (((top, top + 4), (left, right + 1)),
                              ((bottom - 3, bottom + 1), (left, right + 1)),
                              ((top, bottom + 1), (left, left + 4)),
                              ((top, bottom + 1), (right - 3, right + 1))):
            rgb[slice(*rows), slice(*columns)] = WALL
        rgb[top:top + 4, left + 150:right + 1] = WALL_UNDER_WINDOW
    if robot is not None:
        x, y = robot
        rgb[y - 3:y + 1, x - 10:x + 11] = ROBOT_LIT
        rgb[y + 1:y + 4, x - 10:x + 11] = ROBOT_SHADED
    rgb[10:22, 20:60] = WALL  # a toolbar's dark text: short, not a wall
    return rgb


def test_the_walls_box_is_their_outer_lines_inside_the_view(pixels):
    rgb = view()
    box = pixels.wall_box(rgb)
    assert box == (100, 50, 400, 230) and (box.width, box.height) == (301, 181)
    assert pixels.inside(box, rgb.shape, margin=10)


def test_walls_cut_by_the_view_edge_are_not_inside(pixels):
    rgb = view(walls=(0, 50, 400, 230))
    assert not pixels.inside(pixels.wall_box(rgb), rgb.shape, margin=10)
    turned = view(walls=(160, 40, 340, 299), robot=None)  # x up: taller than wide
    box = pixels.wall_box(turned)
    assert box.height > box.width and not pixels.inside(box, turned.shape, margin=10)


def test_no_walls_no_box(pixels):
    assert pixels.wall_box(view(walls=None)) is None


def test_the_robot_is_found_by_its_blue_and_the_grid_is_not_the_robot(pixels):
    x, y = pixels.robot_centre(view(robot=(250, 140)), min_pixels=20)
    assert x == pytest.approx(250, abs=0.5) and y == pytest.approx(140, abs=1)
    assert pixels.robot_centre(view(robot=None), min_pixels=20) is None


def test_a_box_holds_what_lies_in_it(pixels):
    box = pixels.Box(10, 20, 30, 40)
    assert box.holds(10, 40) and box.holds(20.5, 30)
    assert not box.holds(9.9, 30) and not box.holds(20, 41)
