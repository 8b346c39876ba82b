"""Plain `pip install .` of the pure core and tools (metadata lives in setup.cfg).

A ROS 2 workspace builds this package with colcon through CMakeLists.txt, which
also generates the msg/srv interfaces; this file serves installs without ROS.
The .msg files (rosbags decodes bags with them) and the packaged config (the replay's
default parameters) go to share/working_memory as in a ROS install, where
`tools/bag.py` finds them through the installed distribution's file list.
The working set's put/evict hot path is a C extension (CMakeLists.txt builds the same
file under colcon); core/eviction.py runs its pure-Python reference without it. The board
intake's reader of BoardUpdate bytes is one too (ros/_board_cdr.c; ros/wire_in.py reads them
in Python without it).
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[Extension('working_memory.core._evict', ['working_memory/core/_evict.c']),
                 Extension('working_memory.ros._board_cdr', ['working_memory/ros/_board_cdr.c'])],
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/working_memory']),
        ('share/working_memory', ['package.xml']),
        ('share/working_memory/msg', sorted(glob('msg/*.msg'))),
        ('share/working_memory/config', ['config/working_memory.yaml']),
    ],
)
