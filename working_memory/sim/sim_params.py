"""The simulator node's parameters: one declarative table and its frozen snapshot (no rclpy).

All are read-only: the world is built once from them. Rates are on sim time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from working_memory.engine.config import INT32_MAX, ParamSpec, ParamType, check_value

SIM_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec('seed', ParamType.INTEGER, 0,
              'Seed of the world: how many door pushes fail, the sensor noise',
              range=(0, INT32_MAX), read_only=True),
    ParamSpec('real_time_factor', ParamType.DOUBLE, 1.0,
              'Sim seconds per wall-clock second (the step timer runs on the steady clock)',
              range=(0.01, 100.0), read_only=True),
    ParamSpec('sim_dt', ParamType.DOUBLE, 0.02,
              'Sim time advanced per step [s]; /clock is published every step',
              range=(0.001, 0.5), read_only=True),
    ParamSpec('odom_rate_hz', ParamType.DOUBLE, 20.0,
              'Rate of /odom on sim time [Hz]; 0 disables it', range=(0.0, 1000.0), read_only=True),
    ParamSpec('pose_rate_hz', ParamType.DOUBLE, 10.0,
              'Rate of the pose board key on sim time [Hz]; 0 disables it',
              range=(0.0, 1000.0), read_only=True),
    ParamSpec('battery_rate_hz', ParamType.DOUBLE, 1.0,
              'Rate of the battery board key on sim time [Hz]; 0 disables it',
              range=(0.0, 1000.0), read_only=True),
    ParamSpec('sensor_rate_hz', ParamType.DOUBLE, 10.0,
              'Rate of the sensor:<n> board keys on sim time [Hz]; 0 disables them',
              range=(0.0, 1000.0), read_only=True),
    ParamSpec('status_rate_hz', ParamType.DOUBLE, 5.0,
              'Rate of ~/status (JSON outcome) on sim time [Hz]; 0 disables it',
              range=(0.0, 1000.0), read_only=True),
    ParamSpec('sensor_count', ParamType.INTEGER, 30,
              'Number of noisy range sensors published as sensor:0 .. sensor:<n-1>',
              range=(0, 1000), read_only=True),
    ParamSpec('door_push_failures', ParamType.INTEGER, -1,
              'Push attempts that fail before the door opens; -1 lets the seed decide',
              range=(-1, 1000), read_only=True),
    ParamSpec('log_listeners', ParamType.INTEGER, 1,
              'Other subscribers of log to wait for before the mission starts (GOAL and '
              'CONSTRAINT are logged); 0 starts at the first step', range=(0, 100), read_only=True),
    ParamSpec('cmd_vel_timeout_s', ParamType.DOUBLE, 0.5,
              'The robot stops when /cmd_vel has been silent this long (sim time) [s]',
              range=(0.001, 1e6), read_only=True),
    ParamSpec('map_frame', ParamType.STRING, 'map',
              'Frame of /map, of /odom (the odometry is ground truth in the map frame) and of '
              'the board pose', read_only=True),
    ParamSpec('base_frame', ParamType.STRING, 'base_link',
              'child_frame_id of /odom', read_only=True),
)


@dataclass(frozen=True, slots=True)
class SimConfig:
    """A validated snapshot of the simulator's parameters (units as in the table)."""

    seed: int
    real_time_factor: float
    sim_dt: float
    odom_rate_hz: float
    pose_rate_hz: float
    battery_rate_hz: float
    sensor_rate_hz: float
    status_rate_hz: float
    sensor_count: int
    door_push_failures: int
    log_listeners: int
    cmd_vel_timeout_s: float
    map_frame: str
    base_frame: str

    @property
    def step_period_s(self) -> float:
        """Return the wall-clock period [s] of the step timer."""
        return self.sim_dt / self.real_time_factor

    @property
    def push_failures_override(self) -> int | None:
        """Return the overriding number of failing pushes, or None to let the seed decide."""
        return None if self.door_push_failures < 0 else self.door_push_failures


def sim_config_from_values(values: Mapping[str, Any]) -> SimConfig:
    """Build a SimConfig from parameter values, raising ValueError naming the first bad one."""
    config = SimConfig(**{spec.name: check_value(spec, values[spec.name]) for spec in SIM_PARAMS})
    for name in ('map_frame', 'base_frame'):
        if not getattr(config, name):
            raise ValueError(f'{name}: must not be empty')
    return config
