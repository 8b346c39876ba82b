"""Files the package installs under share/working_memory, found where the package runs from."""

from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def share_path(*parts: str) -> Path:
    """Return share/working_memory/<parts> of the installed package, else the source tree's file.

    A colcon install without --symlink-install has only the share copy; a source checkout that
    was never installed has only its own.
    """
    try:
        return Path(get_package_share_directory('working_memory'), *parts)
    except PackageNotFoundError:
        return SOURCE_ROOT.joinpath(*parts)
