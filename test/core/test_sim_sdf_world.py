"""The packaged Gazebo world is the delivery world: its walls rasterise to the packaged map grid."""

import math
import pathlib
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from working_memory.sim.map_files import MAP_STEM, OCCUPIED_PIXEL, read_map_image
from working_memory.sim.sdf_world import WORLD_STEM, world_sdf, write_world_sdf
from working_memory.sim.world import DOCK_TARGET, OCCUPIED, WorldConfig, build_grid

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config'
PACKAGED_SDF = CONFIG / 'worlds' / f'{WORLD_STEM}.sdf'
# What launch/gazebo.launch.py bridges for its default robot name.
ROBOT = 'robot'
BRIDGED_ODOMETRY = f'/model/{ROBOT}/odometry'
BRIDGED_COMMAND = f'/model/{ROBOT}/cmd_vel'


def packaged_world():
    return ET.parse(PACKAGED_SDF).getroot().find('world')


def model(world, name):
    found = world.find(f"model[@name='{name}']")
    assert found is not None, f'no model {name!r} in the world'
    return found


def numbers(element):
    return np.array([float(v) for v in element.text.split()])


def pose_of(element):
    """Return the six numbers of `element`'s <pose> (zeros when it has none)."""
    pose = element.find('pose')
    return (0.0,) * 6 if pose is None else tuple(numbers(pose))


def box_cells(world, model_names, shape, resolution):
    """Rasterise the collision boxes [m] of the given models into a boolean grid (rows = y)."""
    cells = np.zeros(shape, dtype=bool)
    for name in model_names:
        body = model(world, name)
        for link in body.findall('link'):
            for collision in link.findall('collision'):
                poses = [pose_of(body), pose_of(link), pose_of(collision)]
                assert all(p[3:] == (0.0, 0.0, 0.0) for p in poses), 'walls are not rotated'
                centre = np.sum([p[:2] for p in poses], axis=0)
                half = numbers(collision.find('geometry/box/size'))[:2] / 2.0
                lo, hi = (centre - half) / resolution, (centre + half) / resolution
                # Every edge on a cell boundary, so the box covers whole cells only.
                assert np.allclose([lo, hi], np.round([lo, hi])), collision.get('name')
                (c0, r0), (c1, r1) = np.round(lo).astype(int), np.round(hi).astype(int)
                cells[r0:r1, c0:c1] = True
    return cells


def model_link(robot, name):
    found = robot.find(f"link[@name='{name}']")
    assert found is not None, f'robot has no link {name!r}'
    return found


def plugin(robot, system):
    found = robot.find(f"plugin[@name='gz::sim::systems::{system}']")
    assert found is not None, f'robot has no {system} system'
    return {child.tag: child.text for child in found}


def test_packaged_world_is_up_to_date(tmp_path):
    assert PACKAGED_SDF.read_text() == write_world_sdf(tmp_path).read_text(), (
        'config/worlds/delivery_world.sdf is stale: '
        'run python -m working_memory.sim.sdf_world config/worlds')


def test_walls_and_closed_door_cover_exactly_the_occupied_cells_of_the_packaged_map():
    # The PGM's row 0 is the top (max y); the grid's row 0 is y = 0.
    occupied = np.flipud(read_map_image(CONFIG / 'maps' / f'{MAP_STEM}.pgm') == OCCUPIED_PIXEL)
    cells = box_cells(packaged_world(), ('walls', 'door'), occupied.shape,
                      WorldConfig().resolution)
    assert occupied.any() and (cells == occupied).all(), (
        f'{np.count_nonzero(cells != occupied)} cells differ between the SDF walls and the map')


def test_door_model_fills_exactly_the_doorway_of_the_inner_wall():
    config = WorldConfig()
    grid, door = build_grid(config)
    doorway = np.zeros(grid.shape, dtype=bool)
    doorway[door] = True
    world = packaged_world()
    assert (box_cells(world, ('door',), grid.shape, config.resolution) == doorway).all()
    walls = box_cells(world, ('walls',), grid.shape, config.resolution)
    assert (walls == ((grid >= OCCUPIED) & ~doorway)).all(), 'the doorway is a gap in the walls'


@settings(max_examples=20, deadline=None)
@given(st.floats(3.0, 17.0), st.floats(3.0, 9.0), st.floats(0.5, 2.0), st.floats(0.1, 0.5))
def test_generated_walls_follow_the_world_config(inner_wall_x, door_y, door_width, thickness):
    config = WorldConfig(inner_wall_x=inner_wall_x, door_y=door_y, door_width_m=door_width,
                         wall_thickness_m=thickness)
    grid, _ = build_grid(config)
    world = ET.fromstring(world_sdf(config)).find('world')
    cells = box_cells(world, ('walls', 'door'), grid.shape, config.resolution)
    assert (cells == (grid >= OCCUPIED)).all()


def test_robot_drives_on_the_bridged_topics_and_reports_odometry_in_the_map_frame():
    robot = model(packaged_world(), ROBOT)
    drive = plugin(robot, 'DiffDrive')
    odometry = plugin(robot, 'OdometryPublisher')
    assert drive['topic'] == BRIDGED_COMMAND
    assert odometry['odom_topic'] == BRIDGED_ODOMETRY and odometry['odom_frame'] == 'map'
    # DiffDrive's wheel odometry (relative to the spawn pose) must not share the bridged topic.
    assert drive.get('odom_topic') not in (None, BRIDGED_ODOMETRY)
    joints = {joint.get('name'): joint for joint in robot.findall('joint')}
    wheels = {side: model_link(robot, joints[drive[f'{side}_joint']].find('child').text)
              for side in ('left', 'right')}
    assert all(joints[drive[f'{side}_joint']].get('type') == 'revolute' for side in wheels)
    assert math.isclose(pose_of(wheels['left'])[1] - pose_of(wheels['right'])[1],
                        float(drive['wheel_separation']))
    for wheel in wheels.values():
        radius = float(wheel.find('collision/geometry/cylinder/radius').text)
        assert math.isclose(radius, float(drive['wheel_radius']))


def test_robot_starts_at_the_world_start_pose_so_its_world_pose_is_the_map_pose():
    x, y, yaw = WorldConfig().start
    assert pose_of(model(packaged_world(), ROBOT)) == (x, y, 0.0, 0.0, 0.0, yaw)
    # OdometryPublisher reports the world pose; the map's origin is the world's origin.
    assert yaml.safe_load((CONFIG / 'maps' / f'{MAP_STEM}.yaml').read_text())['origin'] == [0, 0, 0]


def test_robot_collisions_fit_in_the_robot_radius_the_planner_inflates_by():
    robot = model(packaged_world(), ROBOT)
    for link in robot.findall('link'):
        for collision in link.findall('collision'):
            x, y = np.add(pose_of(link)[:2], pose_of(collision)[:2])
            geometry = collision.find('geometry')[0]
            half_extent = math.hypot(float(geometry.findtext('radius')),
                                     float(geometry.findtext('length', '0')) / 2.0)
            assert math.hypot(x, y) + half_extent <= WorldConfig().robot_radius_m, (
                collision.get('name'))


def test_dock_and_high_voltage_zone_are_visuals_without_collision():
    config = WorldConfig()
    world = packaged_world()
    zone, dock = model(world, 'high_voltage_zone'), model(world, DOCK_TARGET)
    assert zone.find('.//collision') is None and dock.find('.//collision') is None
    assert pose_of(dock)[:2] == config.dock
    visual = zone.find('link/visual')
    assert float(visual.findtext('transparency')) > 0.0
    half = numbers(visual.find('geometry/box/size'))[:2] / 2.0
    lo, hi = np.array(pose_of(zone)[:2]) - half, np.array(pose_of(zone)[:2]) + half
    corners = {(float(x), float(y)) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])}
    assert corners == set(config.zone_polygon)


def test_non_rectangular_zone_and_too_small_robot_radius_are_rejected():
    with pytest.raises(ValueError, match='zone_polygon'):
        world_sdf(WorldConfig(zone_polygon=((12.0, 3.5), (15.0, 3.5), (13.0, 5.5))))
    with pytest.raises(ValueError, match='robot_radius_m'):
        world_sdf(WorldConfig(robot_radius_m=0.1))


def test_packaged_world_validates_with_ign_sdf():
    if shutil.which('ign') is None:
        pytest.skip('ign sdf not installed (Debian ignition-tools + libsdformat-dev)')
    result = subprocess.run(['ign', 'sdf', '-k', str(PACKAGED_SDF)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and 'Valid.' in result.stdout, result.stdout + result.stderr
