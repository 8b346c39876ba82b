"""Observer for test_across_hosts.py, run in the working-memory node's network namespace.

Feeds the node a goal and a pose, then records the digest of every frame it sees and
the (tick, digest) every planner and executor status reports, until `ticks` ticks have
statuses from both cabins or `timeout` [s] passes. Prints one JSON object on stdout:
{"frames": {tick: digest}, "planner": {tick: digest}, "executor": {tick: digest}}.

    python across_hosts_observer.py TICKS TIMEOUT_S
"""

import json
import sys
import time

import rclpy

from working_memory.core.items import BoardEntry
from working_memory.msg import BoardUpdate, ContextFrame, DecisionStatus
from working_memory.ros import qos
from working_memory.ros.conversions import board_update_msg


def main(ticks: int, timeout_s: float) -> int:
    """Observe until `ticks` ticks are reported by both cabins; print what was seen."""
    rclpy.init()
    node = rclpy.create_node('across_hosts_observer')
    seen = {'frames': {}, 'planner': {}, 'executor': {}}

    def record(name):
        return lambda msg: seen[name].setdefault(int(msg.tick), msg.digest)
    node.create_subscription(ContextFrame, '/working_memory/frame', record('frames'),
                             qos.frame_qos())
    for cabin in ('planner', 'executor'):
        node.create_subscription(DecisionStatus, f'/{cabin}/status', record(cabin),
                                 qos.stream_qos(10))
    board = node.create_publisher(BoardUpdate, '/board', qos.stream_qos())
    goal = [BoardEntry('goal:deliver', {'x': 17.0, 'y': 3.0, 'tags': ['delivery']}, 0.0),
            BoardEntry('pose', {'x': 2.0, 'y': 6.0, 'yaw': 0.0}, 0.0)]
    deadline = time.monotonic() + timeout_s
    fed = False
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if not fed and board.get_subscription_count():
            board.publish(board_update_msg(goal, 0.0))
            fed = True
        both = set(seen['planner']) & set(seen['executor']) - {0}
        if len(both) >= ticks:
            break
    print(json.dumps(seen))
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main(int(sys.argv[1]), float(sys.argv[2])))
