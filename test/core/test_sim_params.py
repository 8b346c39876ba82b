"""The simulator's parameter table: defaults are valid, bad values are named."""

import pytest

from working_memory.sim.sim_params import SIM_PARAMS, sim_config_from_values

DEFAULTS = {spec.name: spec.default for spec in SIM_PARAMS}


def test_defaults_give_a_real_time_seeded_world():
    config = sim_config_from_values(DEFAULTS)
    assert config.step_period_s == pytest.approx(config.sim_dt)
    assert config.push_failures_override is None


def test_door_push_failures_overrides_the_seed_when_not_negative():
    assert sim_config_from_values({**DEFAULTS, 'door_push_failures': 0}).push_failures_override == 0


def test_real_time_factor_scales_the_wall_clock_step_period():
    config = sim_config_from_values({**DEFAULTS, 'real_time_factor': 4.0, 'sim_dt': 0.02})
    assert config.step_period_s == pytest.approx(0.005)


@pytest.mark.parametrize('name, value', [('sim_dt', 0.0), ('real_time_factor', -1.0),
                                         ('seed', 1.5), ('map_frame', ''),
                                         ('door_push_failures', -2)])
def test_bad_value_is_rejected_naming_the_parameter(name, value):
    with pytest.raises(ValueError, match=name):
        sim_config_from_values({**DEFAULTS, name: value})
