"""Who may write what: owners hold keys by glob, name their writers, and are checked whole."""

import pytest

from working_memory.core.owners import OwnersError, owners_from_params

RULES = {'safety': (('safety:*',), ('/robot1/safety_monitor',)),
         'mission': (('goal:*', 'mission'), ('/**/mission_node',))}


def test_an_owned_key_is_refused_to_other_nodes_and_an_open_key_to_none():
    owners = owners_from_params(('safety', 'mission'), RULES)
    assert owners.refuses('/robot1/safety_monitor', 'safety:zone/a') is None
    assert owners.refuses('/robot1/teleop', 'safety:zone/a').name == 'safety'
    assert owners.refuses('/robot1/teleop', 'door:a') is None   # no owner: open
    assert owners.refuses('/robot1/mission_node', 'goal:deliver') is None
    assert owners.refuses('/mission_node', 'mission') is None
    assert owners.refuses('/robot1/mission_node_2', 'goal:deliver').name == 'mission'
    assert owners.refuses('/robot2/safety_monitor', 'safety:zone/a').name == 'safety'


def test_a_writer_the_graph_does_not_show_is_refused_owned_keys_only():
    owners = owners_from_params(('safety',), RULES)
    assert owners.refuses(None, 'safety:zone/a').name == 'safety'
    assert owners.refuses(None, 'door:a') is None


@pytest.mark.parametrize('names, rules, message', [
    (('safety',), {'safety': (('safety:*',), ())}, 'owners.safety.nodes: no node may write'),
    (('safety',), {'safety': ((), ('/a',))}, 'owners.safety.keys: an owner holds at least'),
    (('safety', 'mission'), {'safety': (('safety:*',), ('/a',)),
                             'mission': (('safety:zone/*',), ('/b',))},
     "owners.safety.keys and owners.mission.keys overlap: 'safety:*' and 'safety:zone/*'"),
    (('safety', 'mission'), {'safety': (('safety:*',), ('/a',)),
                             'mission': (('safety:stop',), ('/b',))}, 'overlap'),
    (('safety',), {'safety': (('safety:*',), ('safety_monitor',))},
     "owners.safety.nodes: 'safety_monitor' is no fully qualified node name"),
    (('safety', 'safety'), {'safety': (('safety:*',), ('/a',))}, 'owner_names: must be distinct'),
    (('9lives',), {'9lives': (('a',), ('/a',))}, "owner_names: '9lives' is no name"),
])
def test_a_bad_rule_is_refused_naming_the_parameter(names, rules, message):
    with pytest.raises(OwnersError) as error:
        owners_from_params(names, rules)
    assert message in str(error.value)


def test_distinct_owners_are_taken():
    owners = owners_from_params(('safety', 'mission'), RULES)
    assert [owner.name for owner in owners.owners] == ['safety', 'mission']
