"""What the middleware does not say: input updates lost between a publisher and the node.

Pure Python (no rclpy). A DDS writer numbers every sample it writes, and rclpy
passes that number on in the message info (`publication_sequence_number`, with
the writer's `publisher_gid`). A jump in one publisher's numbers is updates that
never reached the node: a keep-last queue that overflowed, a sample the writer
dropped. Fast DDS reports neither as a lost message, so the node counts the gaps
itself and publishes them on /diagnostics.
"""

from __future__ import annotations

from collections import OrderedDict

# Publishers remembered per topic; the least recently heard is forgotten beyond this.
MAX_PUBLISHERS = 1024


class SequenceGaps:
    """Count updates missing from each publisher's sequence numbers on one topic.

    The first number heard from a publisher sets its start: what it wrote
    before the node matched it was never meant for the node. A number at or
    below the last one (a duplicate, a reordered sample) counts nothing.
    `first` keeps each remembered publisher's start, in the order first heard: the
    receipt that tells a replay where the node began to take each publisher.
    """

    def __init__(self, max_publishers: int = MAX_PUBLISHERS):
        self._last: OrderedDict[bytes, int] = OrderedDict()
        self.first: dict[bytes, int] = {}
        self._max_publishers = max_publishers
        self.missed = 0

    def observe(self, publisher: bytes, sequence: int | None) -> int:
        """Record an update numbered `sequence` by `publisher`; return the updates missed before it.

        `sequence` None (a middleware that does not number samples) counts nothing.
        """
        if sequence is None:
            return 0
        last = self._last.get(publisher)
        if last is None:
            self._last[publisher] = sequence
            self.first[publisher] = sequence
            if len(self._last) > self._max_publishers:
                self.first.pop(self._last.popitem(last=False)[0], None)
            return 0
        self._last.move_to_end(publisher)
        if sequence <= last:
            return 0
        self._last[publisher] = sequence
        gap = sequence - last - 1
        self.missed += gap
        return gap

    @property
    def publishers(self) -> int:
        """How many publishers are remembered."""
        return len(self._last)
