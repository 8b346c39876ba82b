"""Python's cyclic collector in the node's process: what survives a full collection is frozen.

Each full collection walks every live object, and with a board that only grows the walks
grow with it (1.8 million keys: seconds with the ticks stopped; BENCHMARKS.md, the
growing soak). After each full collection the survivors are frozen (`gc.freeze`), so the
next one walks only what came since. This holds because the node makes no cyclic garbage
while it runs: its board entries, notes and frames are freed by reference counting
(counted with `gc.callbacks` over a whole `make bench-ros --only frames100 growing`: about
300 objects collected in all, every one from start-up; test/ros/test_node_garbage.py
holds the node's own objects to it). A frozen object that later died in a cycle would
stay until a cleanup, which unfreezes: what the configured node held is then collected
like anything else.
"""

from __future__ import annotations

import gc


def freeze_after_full_collections() -> None:
    """From now on, freeze what survives each full collection (idempotent)."""
    if _freeze not in gc.callbacks:
        gc.callbacks.append(_freeze)


def unfreeze() -> None:
    """Let the collector walk every object again (a cleanup drops what the node held).

    Only in a process that freezes after full collections: a process that embeds the
    node and froze its own heap keeps it frozen.
    """
    if _freeze in gc.callbacks:
        gc.unfreeze()


def _freeze(phase: str, info: dict) -> None:
    if phase == 'stop' and info['generation'] == 2:
        gc.freeze()
