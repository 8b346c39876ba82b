"""The delivery world as an SDFormat world for Gazebo Sim (Harmonic or later), from `WorldConfig`.

Walls and the closed door are static boxes on whole grid cells, so they rasterise to
the packaged map; the loading dock and the high-voltage zone are visuals only (no
collision); the robot is a diff-drive base at the world's start pose. The world's
origin is the map's origin, so OdometryPublisher's pose (the model's world pose) is the
map pose. `python -m working_memory.sim.sdf_world config/worlds` regenerates the
packaged file; a test checks it still matches the world.
"""

from __future__ import annotations

import math
import pathlib
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from working_memory.sim.world import DOCK_TARGET, WorldConfig, build_grid

WORLD_STEM = 'delivery_world'
SDF_VERSION = '1.9'                      # sdformat12 (ign sdf -k) and Gazebo Harmonic read it
ROBOT_MODEL = 'robot'                    # gazebo.launch.py's default `robot`
ODOMETRY_TOPIC = f'/model/{ROBOT_MODEL}/odometry'     # bridged to /odom
COMMAND_TOPIC = f'/model/{ROBOT_MODEL}/cmd_vel'       # bridged from /cmd_vel
# DiffDrive's wheel odometry (relative to the spawn pose) would default to ODOMETRY_TOPIC.
WHEEL_ODOMETRY_TOPIC = f'/model/{ROBOT_MODEL}/diff_drive/odometry'
MAP_FRAME = 'map'
BASE_FRAME = 'base_link'                 # sim_world_node's default child frame
ODOMETRY_RATE_HZ = 20.0

WALL_HEIGHT_M = 1.0
ZONE_HEIGHT_M = 0.5
MARKER_HEIGHT_M = 0.01
# Robot [m, kg]: every collision lies inside the robot_radius_m disc the planner inflates by.
CHASSIS_RADIUS_M = 0.11
CHASSIS_HEIGHT_M = 0.06
CHASSIS_MASS_KG = 2.0
WHEEL_RADIUS_M = 0.05
WHEEL_WIDTH_M = 0.03
WHEEL_SEPARATION_M = 0.26
WHEEL_MASS_KG = 0.2
CASTER_RADIUS_M = 0.025
CASTER_OFFSET_M = 0.08                   # fore and aft of the axle

WALL_RGBA = (0.55, 0.55, 0.55, 1.0)
DOOR_RGBA = (0.55, 0.35, 0.2, 1.0)
DOCK_RGBA = (0.1, 0.7, 0.2, 1.0)
ZONE_RGBA = (1.0, 0.85, 0.0, 1.0)           # see-through by ZONE_TRANSPARENCY
ZONE_TRANSPARENCY = 0.6
ROBOT_RGBA = (0.15, 0.3, 0.8, 1.0)
WHEEL_RGBA = (0.1, 0.1, 0.1, 1.0)


@dataclass(frozen=True, slots=True)
class CellBox:
    """An axis-aligned block of grid cells: columns [col0, col1), rows [row0, row1)."""

    name: str
    col0: int
    col1: int
    row0: int
    row1: int


def wall_boxes(config: WorldConfig) -> tuple[tuple[CellBox, ...], CellBox]:
    """Return the wall blocks (outer walls, inner wall either side of the doorway) and the door.

    Together they cover exactly the occupied cells of `build_grid(config)` (door closed).
    """
    grid, (door_rows, wall_cols) = build_grid(config)
    rows, cols = grid.shape
    thick = max(1, round(config.wall_thickness_m / config.resolution))  # as build_grid
    inner = (wall_cols.start, wall_cols.stop)
    walls = (
        CellBox('south', 0, cols, 0, thick),
        CellBox('north', 0, cols, rows - thick, rows),
        CellBox('west', 0, thick, thick, rows - thick),
        CellBox('east', cols - thick, cols, thick, rows - thick),
        CellBox('inner_south', *inner, thick, door_rows.start),
        CellBox('inner_north', *inner, door_rows.stop, rows - thick),
    )
    return walls, CellBox('door', *inner, door_rows.start, door_rows.stop)


def world_sdf(config: WorldConfig | None = None) -> str:
    """Return the SDFormat text of the delivery world (door closed, robot at the start)."""
    config = config if config is not None else WorldConfig()
    sdf = ET.Element('sdf', version=SDF_VERSION)
    world = _sub(sdf, 'world', name=WORLD_STEM)
    _add_settings(world, config)
    walls, door = wall_boxes(config)
    _add_blocks(world, 'walls', walls, config.resolution, WALL_RGBA)
    # Closed, as the packaged map and mission_node's door_state default have it.
    _add_blocks(world, 'door', (door,), config.resolution, DOOR_RGBA)
    _add_dock(world, config)
    _add_zone(world, config)
    _add_robot(world, config)
    ET.indent(sdf, space='  ')
    return '<?xml version="1.0"?>\n' + ET.tostring(sdf, encoding='unicode') + '\n'


def write_world_sdf(directory: pathlib.Path, config: WorldConfig | None = None) -> pathlib.Path:
    """Write `<WORLD_STEM>.sdf` into `directory`; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f'{WORLD_STEM}.sdf'
    path.write_text(world_sdf(config))
    return path


def _fmt(*values: float) -> str:
    """Return numbers as SDF text: space-separated, at most 9 significant digits, no -0."""
    return ' '.join(f'{round(value, 9) + 0.0:.9g}' for value in values)


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrib: str) -> ET.Element:
    """Append and return the child `tag` of `parent`, with `text` and attributes."""
    child = ET.SubElement(parent, tag, attrib)
    if text is not None:
        child.text = text
    return child


def _add_settings(world: ET.Element, config: WorldConfig) -> None:
    """Add physics, the systems a Harmonic world needs, scene, sun and ground plane."""
    physics = _sub(world, 'physics', name='1ms', type='ignored')
    _sub(physics, 'max_step_size', '0.001')
    _sub(physics, 'real_time_factor', '1.0')
    # No sensors in this world, so no Sensors system (it would start a renderer).
    for library, system in (('physics', 'Physics'), ('user-commands', 'UserCommands'),
                            ('scene-broadcaster', 'SceneBroadcaster')):
        _sub(world, 'plugin', filename=f'gz-sim-{library}-system',
             name=f'gz::sim::systems::{system}')
    scene = _sub(world, 'scene')
    _sub(scene, 'ambient', _fmt(0.4, 0.4, 0.4, 1.0))
    _sub(scene, 'background', _fmt(0.7, 0.7, 0.7, 1.0))
    _sub(scene, 'shadows', 'true')
    centre = (config.width_m / 2.0, config.height_m / 2.0)
    sun = _sub(world, 'light', type='directional', name='sun')
    _sub(sun, 'cast_shadows', 'true')
    _sub(sun, 'pose', _fmt(*centre, 10.0, 0.0, 0.0, 0.0))
    _sub(sun, 'diffuse', _fmt(0.8, 0.8, 0.8, 1.0))
    _sub(sun, 'specular', _fmt(0.2, 0.2, 0.2, 1.0))
    _sub(sun, 'direction', _fmt(-0.5, 0.1, -0.9))
    ground = _sub(world, 'model', name='ground_plane')
    _sub(ground, 'static', 'true')
    _sub(ground, 'pose', _fmt(*centre, 0.0, 0.0, 0.0, 0.0))
    link = _sub(ground, 'link', name='ground')
    size = _fmt(config.width_m + 2.0, config.height_m + 2.0)
    for kind in ('collision', 'visual'):
        plane = _sub(_sub(_sub(link, kind, name=f'ground_{kind}'), 'geometry'), 'plane')
        _sub(plane, 'normal', _fmt(0.0, 0.0, 1.0))
        _sub(plane, 'size', size)
    _material(link.find('visual'), (0.85, 0.85, 0.8, 1.0))


def _material(visual: ET.Element, rgba: tuple[float, ...]) -> None:
    """Give `visual` a plain colour (RGBA, 0..1)."""
    material = _sub(visual, 'material')
    for tag in ('ambient', 'diffuse'):
        _sub(material, tag, _fmt(*rgba))


def _box(parent: ET.Element, kind: str, name: str, pose: tuple[float, ...],
         size: tuple[float, float, float]) -> ET.Element:
    """Append a `collision` or `visual` box of `size` [m] at `pose` (x y z roll pitch yaw)."""
    element = _sub(parent, kind, name=name)
    _sub(element, 'pose', _fmt(*pose))
    _sub(_sub(_sub(element, 'geometry'), 'box'), 'size', _fmt(*size))
    return element


def _add_blocks(world: ET.Element, model_name: str, blocks: tuple[CellBox, ...],
                resolution: float, rgba: tuple[float, ...]) -> None:
    """Add a static model with one collision + visual box [m] per cell block."""
    model = _sub(world, 'model', name=model_name)
    _sub(model, 'static', 'true')
    link = _sub(model, 'link', name=model_name)
    for block in blocks:
        # Cell corners in cell units first, so every box edge lies on a cell boundary.
        pose = ((block.col0 + block.col1) / 2.0 * resolution,
                (block.row0 + block.row1) / 2.0 * resolution, WALL_HEIGHT_M / 2.0, 0.0, 0.0, 0.0)
        size = ((block.col1 - block.col0) * resolution, (block.row1 - block.row0) * resolution,
                WALL_HEIGHT_M)
        _box(link, 'collision', f'{block.name}_collision', pose, size)
        _material(_box(link, 'visual', f'{block.name}_visual', pose, size), rgba)


def _marker_model(world: ET.Element, name: str, pose: tuple[float, ...]) -> ET.Element:
    """Add a static model at `pose` and return its only link (visuals only, no collision)."""
    model = _sub(world, 'model', name=name)
    _sub(model, 'static', 'true')
    _sub(model, 'pose', _fmt(*pose))
    return _sub(model, 'link', name=name)


def _add_dock(world: ET.Element, config: WorldConfig) -> None:
    """Add the loading dock as a flat disc of `dock_radius_m` (the delivery radius)."""
    link = _marker_model(world, DOCK_TARGET, (*config.dock, 0.0, 0.0, 0.0, 0.0))
    visual = _sub(link, 'visual', name=f'{DOCK_TARGET}_visual')
    _sub(visual, 'pose', _fmt(0.0, 0.0, MARKER_HEIGHT_M / 2.0, 0.0, 0.0, 0.0))
    cylinder = _sub(_sub(visual, 'geometry'), 'cylinder')
    _sub(cylinder, 'radius', _fmt(config.dock_radius_m))
    _sub(cylinder, 'length', _fmt(MARKER_HEIGHT_M))
    _material(visual, DOCK_RGBA)


def _add_zone(world: ET.Element, config: WorldConfig) -> None:
    """Add the high-voltage zone as a translucent box; raise ValueError unless it is a rectangle."""
    xs = sorted({x for x, _ in config.zone_polygon})
    ys = sorted({y for _, y in config.zone_polygon})
    corners = {(x, y) for x in (xs[0], xs[-1]) for y in (ys[0], ys[-1])}
    if len(config.zone_polygon) != 4 or set(config.zone_polygon) != corners:
        raise ValueError('world config zone_polygon: the SDF world draws an axis-aligned '
                         f'rectangle, got {config.zone_polygon!r}')
    centre = ((xs[0] + xs[-1]) / 2.0, (ys[0] + ys[-1]) / 2.0)
    link = _marker_model(world, 'high_voltage_zone', (*centre, 0.0, 0.0, 0.0, 0.0))
    visual = _box(link, 'visual', 'high_voltage_zone_visual',
                  (0.0, 0.0, ZONE_HEIGHT_M / 2.0, 0.0, 0.0, 0.0),
                  (xs[-1] - xs[0], ys[-1] - ys[0], ZONE_HEIGHT_M))
    _sub(visual, 'cast_shadows', 'false')
    _sub(visual, 'transparency', _fmt(ZONE_TRANSPARENCY))
    _material(visual, ZONE_RGBA)


def _inertial(link: ET.Element, mass: float, ixx: float, iyy: float, izz: float) -> None:
    """Give `link` a mass [kg] and a diagonal inertia [kg m^2] about its own axes."""
    inertial = _sub(link, 'inertial')
    _sub(inertial, 'mass', _fmt(mass))
    inertia = _sub(inertial, 'inertia')
    for tag, value in (('ixx', ixx), ('iyy', iyy), ('izz', izz),
                       ('ixy', 0.0), ('ixz', 0.0), ('iyz', 0.0)):
        _sub(inertia, tag, _fmt(value))


def _cylinder(parent: ET.Element, kind: str, name: str, radius: float,
              length: float) -> ET.Element:
    """Append a `collision` or `visual` cylinder (axis = the link's z) of `radius`, `length` [m]."""
    element = _sub(parent, kind, name=name)
    cylinder = _sub(_sub(element, 'geometry'), 'cylinder')
    _sub(cylinder, 'radius', _fmt(radius))
    _sub(cylinder, 'length', _fmt(length))
    return element


def _cylinder_inertia(mass: float, radius: float, length: float) -> tuple[float, float, float]:
    """Return (ixx, iyy, izz) [kg m^2] of a solid cylinder about its centre, axis z."""
    across = mass * (3.0 * radius ** 2 + length ** 2) / 12.0
    return across, across, mass * radius ** 2 / 2.0


def _add_robot(world: ET.Element, config: WorldConfig) -> None:
    """Add the diff-drive robot at the start pose with its DiffDrive and OdometryPublisher."""
    # The wheels reach farthest from the centre; the casters sit under the chassis.
    footprint = WHEEL_SEPARATION_M / 2.0 + math.hypot(WHEEL_RADIUS_M, WHEEL_WIDTH_M / 2.0)
    if footprint > config.robot_radius_m:
        raise ValueError(f'world config robot_radius_m: the SDF robot needs {footprint:.3f} m, '
                         f'got {config.robot_radius_m!r}')
    x, y, yaw = config.start
    model = _sub(world, 'model', name=ROBOT_MODEL)
    _sub(model, 'pose', _fmt(x, y, 0.0, 0.0, 0.0, yaw))
    chassis = _sub(model, 'link', name='chassis')
    _sub(chassis, 'pose', _fmt(0.0, 0.0, WHEEL_RADIUS_M, 0.0, 0.0, 0.0))
    _inertial(chassis, CHASSIS_MASS_KG,
              *_cylinder_inertia(CHASSIS_MASS_KG, CHASSIS_RADIUS_M, CHASSIS_HEIGHT_M))
    _cylinder(chassis, 'collision', 'chassis_collision', CHASSIS_RADIUS_M, CHASSIS_HEIGHT_M)
    _material(_cylinder(chassis, 'visual', 'chassis_visual', CHASSIS_RADIUS_M,
                        CHASSIS_HEIGHT_M), ROBOT_RGBA)
    for name, offset in (('front_caster', CASTER_OFFSET_M), ('rear_caster', -CASTER_OFFSET_M)):
        # Frictionless spheres touching the ground under the chassis keep it level.
        caster = _sub(chassis, 'collision', name=name)
        _sub(caster, 'pose', _fmt(offset, 0.0, CASTER_RADIUS_M - WHEEL_RADIUS_M, 0.0, 0.0, 0.0))
        _sub(_sub(_sub(caster, 'geometry'), 'sphere'), 'radius', _fmt(CASTER_RADIUS_M))
        ode = _sub(_sub(_sub(caster, 'surface'), 'friction'), 'ode')
        _sub(ode, 'mu', '0')
        _sub(ode, 'mu2', '0')
    wheel_inertia = _cylinder_inertia(WHEEL_MASS_KG, WHEEL_RADIUS_M, WHEEL_WIDTH_M)
    for side, sign in (('left', 1.0), ('right', -1.0)):
        wheel = _sub(model, 'link', name=f'{side}_wheel')
        # Rolled so the cylinder's axis is the model's y axis.
        _sub(wheel, 'pose', _fmt(0.0, sign * WHEEL_SEPARATION_M / 2.0, WHEEL_RADIUS_M,
                                 -math.pi / 2.0, 0.0, 0.0))
        _inertial(wheel, WHEEL_MASS_KG, *wheel_inertia)
        _cylinder(wheel, 'collision', f'{side}_wheel_collision', WHEEL_RADIUS_M, WHEEL_WIDTH_M)
        _material(_cylinder(wheel, 'visual', f'{side}_wheel_visual', WHEEL_RADIUS_M,
                            WHEEL_WIDTH_M), WHEEL_RGBA)
        joint = _sub(model, 'joint', name=f'{side}_wheel_joint', type='revolute')
        _sub(joint, 'parent', 'chassis')
        _sub(joint, 'child', f'{side}_wheel')
        axis = _sub(joint, 'axis')
        # +y (left): a positive wheel speed drives the robot forward (+x).
        _sub(axis, 'xyz', _fmt(0.0, 1.0, 0.0), expressed_in='__model__')
    drive = _sub(model, 'plugin', filename='gz-sim-diff-drive-system',
                 name='gz::sim::systems::DiffDrive')
    for tag, text in (('left_joint', 'left_wheel_joint'), ('right_joint', 'right_wheel_joint'),
                      ('wheel_separation', _fmt(WHEEL_SEPARATION_M)),
                      ('wheel_radius', _fmt(WHEEL_RADIUS_M)),
                      ('topic', COMMAND_TOPIC), ('odom_topic', WHEEL_ODOMETRY_TOPIC),
                      # Clamped like sim_world_node clamps its commands.
                      ('min_linear_velocity', _fmt(-config.max_linear_mps)),
                      ('max_linear_velocity', _fmt(config.max_linear_mps)),
                      ('min_angular_velocity', _fmt(-config.max_angular_rps)),
                      ('max_angular_velocity', _fmt(config.max_angular_rps))):
        _sub(drive, tag, text)
    odometry = _sub(model, 'plugin', filename='gz-sim-odometry-publisher-system',
                    name='gz::sim::systems::OdometryPublisher')
    for tag, text in (('odom_frame', MAP_FRAME), ('robot_base_frame', BASE_FRAME),
                      ('odom_topic', ODOMETRY_TOPIC), ('dimensions', '2'),
                      ('odom_publish_frequency', _fmt(ODOMETRY_RATE_HZ))):
        _sub(odometry, tag, text)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: python -m working_memory.sim.sdf_world <output directory>')
    print(write_world_sdf(pathlib.Path(sys.argv[1])))
