"""The reference cabins: pure planner, executor and monitor logic (here) and their nodes (*_node).

Each function reads one cabin's PackView, nothing else: what is not in the pack
does not exist for the decision.
"""

from working_memory.core.pack_view import MapWindow, PackValueError, PackView
from working_memory.decision.doors import Door, door_from_pack
from working_memory.decision.executor import Action, Command, Executor, ExecutorConfig
from working_memory.decision.monitor import TearingAlarm, TearingMonitor
from working_memory.decision.planner import (ConstraintAlarm, NoRoute, Planner, PlannerConfig,
                                             Route, check_constraints)

__all__ = ['Action', 'Command', 'ConstraintAlarm', 'Door', 'Executor', 'ExecutorConfig',
           'MapWindow', 'NoRoute', 'PackValueError', 'PackView', 'Planner', 'PlannerConfig',
           'Route', 'TearingAlarm', 'TearingMonitor', 'check_constraints', 'door_from_pack']
