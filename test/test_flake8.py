"""flake8 as ament_flake8 runs it in `colcon test`, with the house style of setup.cfg [flake8]."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.flake8
@pytest.mark.linter
def test_every_python_file_of_the_package_passes_flake8(monkeypatch):
    # Skipped here, not at module level: launch_testing's plugin imports every sibling module
    # while collecting, and a module-level skip would take the whole folder with it.
    ament_flake8 = pytest.importorskip('ament_flake8.main', reason='ament_flake8 not installed')
    # From the package root, as CMakeLists.txt runs it: every .py file below, dot folders
    # (.build, .git) left out.
    monkeypatch.chdir(ROOT)
    rc, errors = ament_flake8.main_with_errors(argv=['--config', 'setup.cfg'])
    assert rc == 0, f'{len(errors)} flake8 error(s):\n' + '\n'.join(errors)
