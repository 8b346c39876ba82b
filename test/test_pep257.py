"""Docstrings as ament_pep257 checks them in `colcon test`, with setup.cfg's [ament_pep257] args."""

import configparser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pep257_args():
    """Return the arguments CMakeLists.txt passes to ament_pep257 (setup.cfg [ament_pep257])."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / 'setup.cfg')
    return config['ament_pep257']['args'].split()


@pytest.mark.pep257
@pytest.mark.linter
def test_every_python_file_of_the_package_passes_pep257(monkeypatch):
    # Skipped here, not at module level (see test_flake8.py).
    ament_pep257 = pytest.importorskip('ament_pep257.main', reason='ament_pep257 not installed')
    monkeypatch.chdir(ROOT)  # as CMakeLists.txt runs it: the package, dot folders left out
    assert ament_pep257.main(argv=pep257_args()) == 0, 'pep257 errors: see stderr above'
