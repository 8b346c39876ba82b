"""Required keys no source writes (engine/requirements.py): found at configure, named until written.

The pure rule on the shipped sources files (test/ros/test_node_requirements.py: through a
running node's /diagnostics).
"""

from pathlib import Path

from working_memory.core.items import Missing, MissingReason
from working_memory.core.manifest import Manifest
from working_memory.engine.health import Level
from working_memory.engine.requirements import may_write, required_status, source_keys, unsourced
from working_memory.engine.source_map import load_sources
from working_memory.ros.sources import describe

SHIPPED = Path(__file__).resolve().parents[2] / 'config' / 'sources'


def manifest(name, *required):
    return Manifest.from_dict(name, {'required': list(required), 'map': {'radius_m': 1.0},
                                     'events': {'window_s': 10.0}})


def test_a_sources_keys_are_its_setting_mappings_with_placeholders_as_globs():
    keys = source_keys(load_sources(str(SHIPPED / 'nav2.yaml'), describe))
    assert {'pose', 'velocity', 'route', 'goal:current', 'battery', 'action:current',
            'safety:collision/stop', 'safety:zone/keepout'} <= set(keys)
    assert not any(key.startswith('diagnostic:') for key in keys)   # events only


def test_a_required_key_or_glob_is_sourced_by_a_key_or_template_that_can_be_it():
    assert may_write('goal:*', 'goal:current') and may_write('obj:7', 'obj:*')
    assert may_write('diagnostic:*', 'diagnostic:*') and may_write('obj:*', 'obj:*/pose')
    assert not may_write('action:current', 'goal:current') and not may_write('door:*', 'pose')


def test_with_nav2_sources_the_delivery_executor_needs_a_writer_for_nothing_but_its_doors():
    specs = load_sources(str(SHIPPED / 'nav2.yaml'), describe)
    manifests = {'planner': manifest('planner', 'goal:*', 'pose', 'map', 'events:*'),
                 'executor': manifest('executor', 'action:current', 'pose', 'door:*')}
    assert unsourced(manifests, specs) == {'executor': ('door:*',)}
    gazebo = load_sources(str(SHIPPED / 'gazebo.yaml'), describe)
    assert unsourced(manifests, gazebo) == {'planner': ('goal:*',),
                                            'executor': ('action:current', 'door:*')}


def test_the_status_names_each_unwritten_key_first_as_a_writers_then_as_none_has():
    keys = {'executor': ('action:current',)}
    never = {'executor': [Missing('action:current', MissingReason.NEVER_SEEN, '')]}
    before = required_status(keys, None, True, 0.0)
    assert before.level is Level.WARN and before.message == (
        'executor: action:current: no source writes it; a writer on board must')
    after = required_status(keys, never, False, 12.0)
    assert after.message == ('executor: action:current: no source writes it and no writer '
                             'has, 12 s after the start')
    written = required_status(keys, {'executor': []}, False, 13.0)
    assert written.level is Level.OK and 'action:current' in written.message
    assert required_status({}, None, True, 0.0).level is Level.OK
