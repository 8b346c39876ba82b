"""Name the node behind a publisher the ROS graph shows (`get_publishers_info_by_topic`)."""

from __future__ import annotations

# What rmw gives as an endpoint's node and namespace until that node's own discovery
# information arrived: Fast DDS discovers a participant's endpoints before it learns which
# node owns them, so a writer's first messages can come from a publisher named this way.
UNKNOWN_NODE = '_NODE_NAME_UNKNOWN_'
UNKNOWN_NAMESPACE = '_NODE_NAMESPACE_UNKNOWN_'


def publisher_node(info) -> str | None:
    """Return the fully qualified node name of a TopicEndpointInfo, None while rmw lacks it."""
    if info.node_name == UNKNOWN_NODE or info.node_namespace == UNKNOWN_NAMESPACE:
        return None
    return f'{info.node_namespace.rstrip("/")}/{info.node_name}'
