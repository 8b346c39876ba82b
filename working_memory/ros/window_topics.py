"""Each cabin's map window on a latched topic of its own: `~/<cabin>/window` (MapWindow).

With `map_windows: reference` the frame's packs name their window by digest
(ContextPack.map_window_digest) and leave nearby_map empty; this module publishes a
cabin's window when it changes, before the frame that first names it. The topic is
reliable + transient local, keep last `WINDOWS_KEPT`: a late joiner gets the current
window with the latched frame, and a reader that lags a few windows behind still
finds the one its frame names. What changed is decided by the pure `WindowBook`.
"""

from __future__ import annotations

from working_memory.core.frames import Frame
from working_memory.core.windows import WINDOWS_KEPT, WindowBook
from working_memory.msg import MapWindow
from working_memory.ros.conversions import map_window_msg
from working_memory.ros.qos import latched_qos


def window_topic(cabin: str) -> str:
    """Return the private topic name of `cabin`'s window (relative to the node)."""
    return f'~/{cabin}/window'


class WindowTopics:
    """The window publishers of one configured node; `publish(frame)` before each frame."""

    def __init__(self, node, cabins, map_frame: str) -> None:
        """Create one (lifecycle) publisher per cabin on `node`, windows in `map_frame`."""
        self._node = node
        self._map_frame = map_frame
        self._book = WindowBook()
        self._publishers = {cabin: node.create_lifecycle_publisher(
            MapWindow, window_topic(cabin), latched_qos(WINDOWS_KEPT)) for cabin in cabins}

    def publish(self, frame: Frame) -> int:
        """Publish the windows of `frame` that changed since last published; return how many."""
        changed = self._book.changed(frame)
        for cabin, digest, window in changed:   # the frame's cabins are the publishers'
            self._publishers[cabin].publish(map_window_msg(cabin, digest, window,
                                                           self._map_frame, frame.tick,
                                                           frame.stamp))
        return len(changed)

    def destroy(self) -> None:
        """Destroy the publishers."""
        for publisher in self._publishers.values():
            self._node.destroy_lifecycle_publisher(publisher)
        self._publishers = {}
