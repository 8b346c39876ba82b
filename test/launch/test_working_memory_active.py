"""launch_testing: working_memory.launch.py brings the node to active and it publishes a frame.

Skipped where launch_testing is not installed (it is not on PyPI).
"""

import pathlib
import time
import unittest

import pytest

pytest.importorskip('launch_testing')

import launch_testing.actions  # noqa: E402, I100
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from lifecycle_msgs.srv import GetState  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from working_memory.msg import ContextFrame  # noqa: E402
from working_memory.ros.qos import frame_qos  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
WAIT_S = 60.0  # bounds a hung launch, never a timing assertion


@pytest.mark.launch_test
def generate_test_description():
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(ROOT / 'launch' / 'working_memory.launch.py')),
            launch_arguments={'params_file': str(ROOT / 'config' / 'working_memory.yaml')}.items()),
        launch_testing.actions.ReadyToTest(),
    ])


class TestWorkingMemoryComesUp(unittest.TestCase):

    def setUp(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('launch_probe', context=self.context)

    def tearDown(self):
        self.node.destroy_node()
        self.context.try_shutdown()

    def test_node_reaches_active_and_publishes_a_frame(self):
        frames = []
        self.node.create_subscription(ContextFrame, '/working_memory/frame', frames.append,
                                      frame_qos())
        get_state = self.node.create_client(GetState, '/working_memory/get_state')
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(self.node)
        state, pending = None, None
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not (state == 'active' and frames):
            executor.spin_once(timeout_sec=0.1)
            if pending is not None and pending.done():
                state, pending = pending.result().current_state.label, None
            if pending is None and get_state.service_is_ready():
                pending = get_state.call_async(GetState.Request())
        executor.remove_node(self.node)
        self.assertEqual(state, 'active')
        self.assertTrue(frames, 'no ContextFrame on /working_memory/frame')
        self.assertGreater(frames[-1].tick, 0)


@launch_testing.post_shutdown_test()
class TestWorkingMemoryShutsDownCleanly(unittest.TestCase):

    def test_exit_code(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
