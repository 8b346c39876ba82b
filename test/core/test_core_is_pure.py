"""The core must stay importable without ROS: no rclpy or message imports."""

import ast
import pathlib

import working_memory.core

CORE_DIR = pathlib.Path(working_memory.core.__file__).resolve().parent
FORBIDDEN = ('rclpy', 'rosidl', 'builtin_interfaces', 'std_msgs', 'nav_msgs', 'geometry_msgs',
             'diagnostic_msgs', 'lifecycle_msgs', 'working_memory.msg', 'working_memory.srv',
             'working_memory.ros')


def imported_modules(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_core_modules_import_no_ros():
    offenders = {
        f'{path.name}: {module}'
        for path in CORE_DIR.rglob('*.py')
        for module in imported_modules(path)
        if module.startswith(FORBIDDEN)
    }
    assert not offenders, f'core imports ROS modules: {sorted(offenders)}'


def test_core_directory_has_modules():
    assert any(CORE_DIR.glob('*.py')), CORE_DIR
