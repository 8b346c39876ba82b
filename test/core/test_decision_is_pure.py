"""The decision logic runs without ROS: importing it loads no rclpy or message module."""

import subprocess
import sys

CHECK = '''
import sys
import working_memory.decision
ros = sorted(name for name in sys.modules
             if name.split('.')[0] in ('rclpy', 'rosidl_parser', 'builtin_interfaces', 'std_msgs',
                                       'nav_msgs', 'geometry_msgs')
             or name.startswith(('working_memory.msg', 'working_memory.srv', 'working_memory.ros')))
print(','.join(ros))
'''


def test_importing_the_decision_package_loads_no_ros_module():
    result = subprocess.run([sys.executable, '-c', CHECK], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == '', f'decision imports ROS modules: {result.stdout}'
