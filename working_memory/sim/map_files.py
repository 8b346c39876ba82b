"""Write the delivery world's grid as a map_server map (PGM image + YAML), for runs with Gazebo.

`python -m working_memory.sim.map_files config/maps` regenerates the packaged files;
a test checks they still match the world.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

from working_memory.sim.world import DeliveryWorld, OCCUPIED

MAP_STEM = 'delivery_world'
# map_server "trinary" pixel values: black is occupied, near-white is free.
OCCUPIED_PIXEL = 0
FREE_PIXEL = 254


def map_image(grid: np.ndarray) -> np.ndarray:
    """Return the PGM pixels of an occupancy grid (image row 0 is the grid's top row, max y)."""
    pixels = np.where(grid >= OCCUPIED, OCCUPIED_PIXEL, FREE_PIXEL).astype(np.uint8)
    return np.flipud(pixels)


def read_map_image(path: pathlib.Path) -> np.ndarray:
    """Return the pixels of a binary PGM (P5, maxval 255) as written by `write_map_files`."""
    header, _, pixels = path.read_bytes().partition(b'\n255\n')
    width, height = map(int, header.split()[1:3])
    return np.frombuffer(pixels, dtype=np.uint8).reshape(height, width)


def write_map_files(grid: np.ndarray, resolution: float, origin: tuple[float, float],
                    directory: pathlib.Path, stem: str = MAP_STEM) -> pathlib.Path:
    """Write `<stem>.pgm` and `<stem>.yaml` into `directory`; return the YAML path.

    `resolution` [m/cell], `origin` (x, y) [m] of the grid's lower-left corner.
    """
    directory.mkdir(parents=True, exist_ok=True)
    pixels = map_image(grid)
    height, width = pixels.shape
    image = directory / f'{stem}.pgm'
    image.write_bytes(f'P5\n{width} {height}\n255\n'.encode() + pixels.tobytes())
    yaml_path = directory / f'{stem}.yaml'
    yaml_path.write_text(
        f'image: {image.name}\n'
        'mode: trinary\n'
        f'resolution: {resolution}\n'
        f'origin: [{origin[0]}, {origin[1]}, 0.0]\n'
        'negate: 0\n'
        'occupied_thresh: 0.65\n'
        'free_thresh: 0.25\n')
    return yaml_path


def write_world_map(directory: pathlib.Path) -> pathlib.Path:
    """Write the default delivery world (door closed) as map files; return the YAML path."""
    world = DeliveryWorld()
    return write_map_files(world.grid, world.config.resolution, (0.0, 0.0), directory)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: python -m working_memory.sim.map_files <output directory>')
    print(write_world_map(pathlib.Path(sys.argv[1])))
