"""share_path: the installed share/working_memory file, else the source tree's."""

from ament_index_python.packages import PackageNotFoundError

from working_memory.ros import share


def test_share_path_names_the_file_the_package_installs():
    path = share.share_path('config', 'working_memory.yaml')
    assert path.is_file() and path.parts[-3:] == ('working_memory', 'config', 'working_memory.yaml')


def test_share_path_falls_back_to_the_source_tree_when_the_package_is_not_installed(monkeypatch):
    def not_installed(package):
        raise PackageNotFoundError(package)
    monkeypatch.setattr(share, 'get_package_share_directory', not_installed)
    assert share.share_path('config', 'x.yaml') == share.SOURCE_ROOT / 'config' / 'x.yaml'
