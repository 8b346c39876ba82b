"""flake8 as ament_flake8 runs it in `colcon test`, with the house style of setup.cfg [flake8]."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.flake8
@pytest.mark.linter
def test_every_python_file_of_the_package_passes_flake8():
    # Skipped here, not at module level: launch_testing's plugin imports every sibling module
    # while collecting, and a module-level skip would take the whole folder with it.
    pytest.importorskip('ament_flake8.main', reason='ament_flake8 not installed')
    # In a process of its own, as CMakeLists.txt runs it: flake8 forks its workers, and a fork
    # of this test process (rclpy and DDS threads from the tests before) can crash in them.
    # From the package root: every .py file below, dot folders (.build, .git) left out.
    result = subprocess.run([sys.executable, '-m', 'ament_flake8.main', '--config', 'setup.cfg'],
                            cwd=ROOT, capture_output=True, text=True, timeout=150)
    assert result.returncode == 0, f'flake8 errors:\n{result.stdout}{result.stderr}'
