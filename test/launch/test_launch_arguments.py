"""The launch files' arguments, as `ros2 launch ... --show-args` shows them to a user."""

import re
import shutil
import subprocess

import pytest

if shutil.which('ros2') is None:
    pytest.skip('the ros2 CLI comes from ../shared/wheels (make installs it there)',
                allow_module_level=True)

COMMAND_TIMEOUT_S = 30.0   # bounds a hung command, never a timing assertion


@pytest.mark.parametrize('file_name', ['working_memory.launch.py', 'bringup.launch.py'])
def test_launch_arguments_are_shown_with_a_description_each(file_name):
    shown = subprocess.run(['ros2', 'launch', 'working_memory', file_name, '--show-args'],
                           capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=True)
    arguments = dict(re.findall(r"^    '(\w+)':\n        (\S.*)$", shown.stdout, re.M))
    bringup = {'cabins'} if file_name == 'bringup.launch.py' else set()
    assert set(arguments) == {'namespace', 'profile', 'params_file', 'extra_params',
                              'sources_file', 'use_sim_time', 'respawn',
                              'respawn_delay'} | bringup, shown.stdout
    assert 'wm-inspect suggest --out' in arguments['extra_params']
    assert 'config/sources/nav2.yaml' in arguments['sources_file']
    assert 'any namespace' in arguments['params_file']
    assert "'' is the profile's" in arguments['params_file']
    assert "Valid choices are: ['delivery', 'nav2']" in arguments['profile']
    assert 'config/profiles/nav2.yaml' in arguments['profile']
    assert "Valid choices are: ['true', 'false']" in arguments['use_sim_time']
    assert "Valid choices are: ['true', 'false']" in arguments['respawn']
    if bringup:
        assert "Valid choices are: ['plain', 'trees']" in arguments['cabins']
