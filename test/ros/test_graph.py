"""A publisher's node as the graph names it, and not before."""

from types import SimpleNamespace

from working_memory.ros.graph import UNKNOWN_NAMESPACE, UNKNOWN_NODE, publisher_node


def test_a_publisher_is_named_by_its_fully_qualified_node():
    assert publisher_node(SimpleNamespace(node_name='load', node_namespace='/')) == '/load'
    assert publisher_node(SimpleNamespace(node_name='load', node_namespace='/robot1')) == (
        '/robot1/load')


def test_a_publisher_whose_node_rmw_has_not_learnt_yet_is_not_named():
    # Fast DDS shows a participant's endpoints before the node owning them: an owner check
    # that took this name for the writer's would refuse the owner's writes for good.
    assert publisher_node(SimpleNamespace(node_name=UNKNOWN_NODE,
                                          node_namespace=UNKNOWN_NAMESPACE)) is None
    assert publisher_node(SimpleNamespace(node_name=UNKNOWN_NODE, node_namespace='/')) is None
