"""The packaged map_server map is the delivery world's grid, read back the way map_server does."""

import pathlib

import numpy as np
import yaml

from working_memory.sim.map_files import MAP_STEM, read_map_image, write_world_map
from working_memory.sim.world import DeliveryWorld, OCCUPIED

PACKAGED = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'maps'


def test_map_read_back_like_map_server_equals_the_world_grid(tmp_path):
    meta = yaml.safe_load(write_world_map(tmp_path).read_text())
    pixels = read_map_image(tmp_path / meta['image'])
    # map_server trinary: occupancy = (255 - pixel) / 255, image row 0 is the top (max y).
    occupied = np.flipud((255 - pixels.astype(float)) / 255.0 > meta['occupied_thresh'])
    free = np.flipud((255 - pixels.astype(float)) / 255.0 < meta['free_thresh'])
    world = DeliveryWorld()
    assert (occupied == (world.grid >= OCCUPIED)).all()
    assert (free == ~occupied).all()
    assert meta['resolution'] == world.config.resolution and meta['origin'] == [0.0, 0.0, 0.0]


def test_packaged_map_files_are_up_to_date(tmp_path):
    write_world_map(tmp_path)
    for suffix in ('.pgm', '.yaml'):
        name = MAP_STEM + suffix
        assert (PACKAGED / name).read_bytes() == (tmp_path / name).read_bytes(), (
            f'config/maps/{name} is stale: run python -m working_memory.sim.map_files config/maps')
