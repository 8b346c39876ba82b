"""Plain `pip install .` of the pure core and tools (metadata lives in setup.cfg).

A ROS 2 workspace builds this package with colcon through CMakeLists.txt, which
also generates the msg/srv interfaces; this file serves installs without ROS.
"""

from setuptools import setup

setup(
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/working_memory']),
        ('share/working_memory', ['package.xml']),
    ],
)
