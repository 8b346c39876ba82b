"""Behaviour trees on the working memory: a py_trees tree reads one frozen pack per tree tick.

Put `WorkingMemoryToBlackboard` first in the tree; it exposes its cabin's pack read-only on the
py_trees blackboard under `/wm/<cabin>/` (docs/TREES.md). The conditions explain a FAILURE
with the pack's missing note; `TreeDecisions` reports what the tree decided with the (tick,
digest) of the pack it read.
"""

from working_memory.trees.blackboard import (PackExposure, ROOT, WorkingMemoryToBlackboard,
                                             pack_entries)
from working_memory.trees.conditions import KeyFresh, KeyPresent, NotMissingFor, why_missing
from working_memory.trees.decisions import Decide, TreeDecision, TreeDecisions

__all__ = ['Decide', 'KeyFresh', 'KeyPresent', 'NotMissingFor', 'PackExposure', 'ROOT',
           'TreeDecision', 'TreeDecisions', 'WorkingMemoryToBlackboard', 'pack_entries',
           'why_missing']
