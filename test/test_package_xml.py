"""package.xml names the dependency of every import of the package, its launch files and tests.

`rosdep install` installs what package.xml says; an import that it does not name is a package
whose executables fail on a fresh machine. The checks here read the code (AST: imports,
`FindPackageShare('x')`, `package='x'`, `ros2 <verb>` commands, CMake `find_package`) and map
each name to its rosdep key with the small tables below.
"""

import ast
import configparser
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = 'working_memory'

# Python import name -> rosdep key (rosdistro rosdep/python.yaml), where they differ.
PYTHON_KEYS = {
    'yaml': 'python3-yaml',
    'numpy': 'python3-numpy',
    'matplotlib': 'python3-matplotlib',
    'pytest': 'python3-pytest',
    'hypothesis': 'python3-hypothesis',
    'catkin_pkg': 'python3-catkin-pkg',
    'rich': 'python3-rich',
    'sortedcontainers': 'python-sortedcontainers-pip',
}
# Imports without a rosdep key: package.xml cannot name them, so it must say so in a comment.
NO_ROSDEP_KEY = {'immutables', 'rosbags', 'cachetools', 'pyte', 'mcap', 'ray'}
# ROS packages imported under their own name (the rosdep key is the package name).
ROS_PACKAGES = {
    'ament_flake8', 'ament_index_python', 'ament_pep257', 'launch', 'launch_pytest',
    'launch_ros', 'launch_testing', 'launch_testing_ros', 'py_trees', 'rclpy', 'ros2cli',
    'ros2launch', 'rosidl_runtime_py',
}
# CMake packages that are no ROS package -> their rosdep key (rosdistro rosdep/base.yaml).
CMAKE_KEYS = {'Python3': 'python3-dev'}
INTERFACE_PACKAGE = re.compile(r'^[a-z][a-z0-9_]*_(msgs|srvs|interfaces)$')
# pytest options of setup.cfg [tool:pytest] that a plugin provides -> its rosdep key.
PYTEST_PLUGIN_OPTIONS = {'timeout': 'python3-pytest-timeout'}
# Calls whose first argument names a ROS package (launch files, ament_index lookups).
PACKAGE_LOOKUPS = {'FindPackageShare', 'get_package_share_directory', 'get_package_prefix'}
ROS2_COMMAND = re.compile(r'^ros2 ([a-z_]+)\b')
# `ros2 <verb>` comes from the package ros2<verb>, except the verbs ros2cli itself provides.
ROS2CLI_VERBS = {'daemon', 'extension_points', 'extensions'}

# Which package.xml tags make a dependency available where it is needed.
SATISFIED_BY = {
    'exec': {'depend', 'exec_depend'},
    'test': {'depend', 'exec_depend', 'test_depend'},
    'build': {'depend', 'build_depend', 'buildtool_depend'},
}
NEEDED_AS = {'exec': '<exec_depend> or <depend>', 'test': '<test_depend>',
             'build': '<build_depend> or <buildtool_depend>'}


@dataclass(frozen=True)
class Use:
    """One name the code needs: `kind` 'import' or 'ros' (a ROS package name), where and how."""

    name: str
    kind: str
    scope: str
    origin: str


@dataclass(frozen=True)
class Declared:
    """What package.xml says: dependency name -> its tags, and the text of its comments."""

    tags: dict
    comments: str


def _ros2_package(verb: str) -> str:
    return 'ros2cli' if verb in ROS2CLI_VERBS else f'ros2{verb}'


def parse_package_xml(text):
    """Return the dependencies and comments of a package.xml document."""
    tags = {}
    for element in ET.fromstring(text):
        if element.tag.endswith('depend'):
            tags.setdefault(element.text.strip(), set()).add(element.tag)
    return Declared(tags, ' '.join(re.findall(r'<!--(.*?)-->', text, re.DOTALL)))


def _called_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, 'attr', None)


def _string(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def uses_in_source(source, origin, scope):
    """Return the Uses of one Python source: imports and the ROS packages and verbs it names."""
    uses = []
    for node in ast.walk(ast.parse(source, origin)):
        where = f'{origin}:{getattr(node, "lineno", 0)}'
        if isinstance(node, ast.Import):
            uses += [Use(alias.name.split('.')[0], 'import', scope, where) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            uses.append(Use(node.module.split('.')[0], 'import', scope, where))
        elif isinstance(node, ast.Call):
            first = _string(node.args[0]) if node.args else None
            if first and _called_name(node) == 'importorskip':
                uses.append(Use(first.split('.')[0], 'import', scope, where))
            if first and _called_name(node) in PACKAGE_LOOKUPS:
                uses.append(Use(first, 'ros', scope, where))
            uses += [Use(_string(k.value), 'ros', scope, where) for k in node.keywords
                     if k.arg == 'package' and _string(k.value)]
        elif isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) > 1:
            if _string(node.elts[0]) == 'ros2' and _string(node.elts[1]):
                uses.append(Use(_ros2_package(_string(node.elts[1])), 'ros', scope, where))
        elif _string(node) and ROS2_COMMAND.match(_string(node)):
            uses.append(Use(_ros2_package(ROS2_COMMAND.match(_string(node))[1]), 'ros', scope,
                            where))
    return uses


def uses_in_cmake(text, origin='CMakeLists.txt'):
    """Return the packages CMakeLists.txt finds: for the build, or for tests in BUILD_TESTING."""
    testing = re.search(r'^if\(BUILD_TESTING\)$.*?^endif\(\)$', text, re.MULTILINE | re.DOTALL)
    uses = []
    for match in re.finditer(r'find_package\((\w+)', text):
        in_tests = testing is not None and testing.start() <= match.start() < testing.end()
        uses.append(Use(CMAKE_KEYS.get(match[1], match[1]), 'ros',
                        'test' if in_tests else 'build', origin))
    return uses


def uses_in_pytest_config(text, origin='setup.cfg'):
    """Return the pytest plugins setup.cfg's [tool:pytest] options need."""
    config = configparser.ConfigParser(interpolation=None)
    config.read_string(text)
    options = config['tool:pytest'] if config.has_section('tool:pytest') else {}
    return [Use(key, 'key', 'test', f'{origin} [tool:pytest] {option}')
            for option, key in PYTEST_PLUGIN_OPTIONS.items() if option in options]


def rosdep_key(use):
    """Return the rosdep key of a Use, '' for nothing to declare, or None when none is known."""
    if use.kind in ('ros', 'key'):
        return '' if use.name == PACKAGE else use.name
    if use.name in sys.stdlib_module_names or use.name == PACKAGE:
        return ''
    if use.name in PYTHON_KEYS:
        return PYTHON_KEYS[use.name]
    if use.name in ROS_PACKAGES or INTERFACE_PACKAGE.match(use.name):
        return use.name
    return None


def problem(use, declared):
    """Return what is wrong with one Use in package.xml, or '' when nothing is."""
    key = rosdep_key(use)
    if key == '':
        return ''
    if use.name in NO_ROSDEP_KEY:
        return '' if use.name in declared.comments else (
            f'{use.name}: has no rosdep key; package.xml must say so in a comment naming it')
    if key is None:
        return (f'{use.name}: no rosdep key known for this import; add it to PYTHON_KEYS, '
                f'ROS_PACKAGES or NO_ROSDEP_KEY in {Path(__file__).name}')
    if not declared.tags.get(key, set()) & SATISFIED_BY[use.scope]:
        return f'{key}: missing; declare it as {NEEDED_AS[use.scope]}'
    return ''


def problems(uses, declared):
    """Return one line per missing or unknown dependency and where the code needs it."""
    origins = {}
    for use in uses:
        if line := problem(use, declared):
            origins.setdefault(line, []).append(use.origin)
    return [f'{line} (used at {", ".join(where[:3])}{", ..." if len(where) > 3 else ""})'
            for line, where in sorted(origins.items())]


def package_uses(root=ROOT):
    """Return every Use of the package: modules, launch files, tests, CMake and pytest config."""
    uses = []
    for folder, scope in (('working_memory', 'exec'), ('launch', 'exec'), ('test', 'test')):
        for path in sorted((root / folder).rglob('*.py')):
            uses += uses_in_source(path.read_text(), str(path.relative_to(root)), scope)
    uses += uses_in_cmake((root / 'CMakeLists.txt').read_text())
    uses += uses_in_pytest_config((root / 'setup.cfg').read_text())
    # What no import shows: `ros2 launch` for the launch files, the generated interfaces' runtime.
    if any((root / 'launch').glob('*.launch.py')):
        uses.append(Use('ros2launch', 'ros', 'exec', 'launch/*.launch.py'))
    if any((root / 'msg').glob('*.msg')):
        uses.append(Use('rosidl_default_runtime', 'ros', 'exec', 'msg/*.msg'))
    return uses


def test_package_xml_declares_every_dependency_the_code_uses():
    declared = parse_package_xml((ROOT / 'package.xml').read_text())
    found = problems(package_uses(), declared)
    assert not found, 'package.xml:\n' + '\n'.join(found)


def test_package_xml_declares_nothing_the_code_does_not_use():
    declared = parse_package_xml((ROOT / 'package.xml').read_text())
    used = {rosdep_key(use) for use in package_uses()}
    assert sorted(set(declared.tags) - used) == []


def test_package_xml_is_a_valid_format_3_manifest():
    package = pytest.importorskip('catkin_pkg.package', reason='catkin_pkg not installed')
    manifest = package.parse_package(ROOT / 'package.xml')  # raises InvalidPackage, naming why
    manifest.validate()
    assert manifest.package_format == 3 and manifest.licenses == ['Apache-2.0']


# The comparison itself, on synthetic input: it fails, naming what is missing.
SYNTHETIC_XML = """<package format="3"><name>working_memory</name>
  <depend>nav_msgs</depend>
  <exec_depend>python3-yaml</exec_depend>
  <test_depend>python3-pytest</test_depend>
  <!-- rosbags: no rosdep key; pip install rosbags -->
</package>"""


def check(source, scope='exec', xml=SYNTHETIC_XML):
    return problems(uses_in_source(source, 'x.py', scope), parse_package_xml(xml))


def test_declared_and_stdlib_imports_pass():
    assert check('import os, json\nimport yaml\nfrom nav_msgs.msg import OccupancyGrid\n'
                 'import rosbags.rosbag2\nfrom .sibling import x\nimport working_memory.core\n'
                 'from __future__ import annotations\n') == []


def test_an_undeclared_import_fails_naming_its_rosdep_key():
    assert check('import numpy as np\nfrom geometry_msgs.msg import Pose\nimport numpy\n') == [
        'geometry_msgs: missing; declare it as <exec_depend> or <depend> (used at x.py:2)',
        'python3-numpy: missing; declare it as <exec_depend> or <depend> (used at x.py:1, x.py:3)']


def test_a_test_dependency_does_not_satisfy_the_package():
    assert check('import pytest\n', scope='test') == []
    assert check('import pytest\n', scope='exec') == [
        'python3-pytest: missing; declare it as <exec_depend> or <depend> (used at x.py:1)']


def test_an_import_without_a_known_key_fails_naming_it():
    (line,) = check('import shiny_new_lib\n')
    assert line.startswith('shiny_new_lib: no rosdep key known') and line.endswith('x.py:1)')


def test_an_import_without_a_rosdep_key_needs_a_comment_naming_it():
    assert check('import rosbags\n') == []
    (line,) = check('import cachetools\n')
    assert line.startswith('cachetools: has no rosdep key')


def test_launch_package_names_and_ros2_verbs_are_dependencies():
    source = ("FindPackageShare('ros_gz_sim')\nNode(package='nav2_map_server')\n"
              "Node(package='working_memory')\nrun(['ros2', 'lifecycle', 'set'])\n"
              "pytest.importorskip('launch_testing')\ncmd = 'ros2 topic echo /frame --once'\n")
    assert [line.split(':')[0] for line in check(source, scope='test')] == [
        'launch_testing', 'nav2_map_server', 'ros2lifecycle', 'ros2topic', 'ros_gz_sim']


def test_cmake_packages_of_the_tests_are_test_dependencies_and_python3_is_its_headers():
    uses = uses_in_cmake('find_package(ament_cmake REQUIRED)\nif(BUILD_TESTING)\n'
                         '  find_package(ament_cmake_pytest REQUIRED)\nendif()\n'
                         'find_package(Python3 REQUIRED COMPONENTS Development.Module)\n')
    assert [(use.name, use.scope) for use in uses] == [('ament_cmake', 'build'),
                                                       ('ament_cmake_pytest', 'test'),
                                                       ('python3-dev', 'build')]


def test_the_pytest_timeout_option_needs_the_plugin():
    (use,) = uses_in_pytest_config('[tool:pytest]\ntimeout = 180\n')
    assert rosdep_key(use) == 'python3-pytest-timeout' and use.scope == 'test'
