"""Test-wide settings: DDS stays on loopback, in a domain of this run's own."""

import os

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
# The Makefile picks the domain; a bare `pytest` run gets one derived from its pid.
os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))
