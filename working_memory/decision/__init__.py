"""Pure decision logic for the reference planner, executor and monitor (no rclpy, no messages).

Each function reads one cabin's PackView, nothing else: what is not in the pack
does not exist for the decision.
"""

from working_memory.decision.executor import Action, Command, Executor, ExecutorConfig
from working_memory.decision.monitor import TearingAlarm, TearingMonitor
from working_memory.core.pack_view import MapWindow, PackValueError, PackView
from working_memory.decision.planner import (ConstraintAlarm, NoRoute, Planner, PlannerConfig,
                                             Route, check_constraints)

__all__ = ['Action', 'Command', 'ConstraintAlarm', 'Executor', 'ExecutorConfig', 'MapWindow',
           'NoRoute', 'PackValueError', 'PackView', 'Planner', 'PlannerConfig', 'Route',
           'TearingAlarm', 'TearingMonitor', 'check_constraints']
