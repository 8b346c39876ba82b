"""What the middleware does not say: input updates lost between a publisher and the node.

Pure Python (no rclpy). A DDS writer numbers every sample it writes, and rclpy
passes that number on in the message info (`publication_sequence_number`, with
the writer's `publisher_gid`). A jump in one publisher's numbers is updates that
never reached the node: a keep-last queue that overflowed, a sample the writer
dropped. Fast DDS reports neither as a lost message, so the node counts the gaps
itself and publishes them on /diagnostics. The same numbers make the frame's receipts:
where the node began to take each publisher (`SequenceGaps.first`) and the order it took
them in (`TakeOrder`).
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


# Runs of one publisher's messages remembered between two frames; beyond, the order is lost.
MAX_RUNS = 4096


class TakeOrder:
    """The order in which the node took its inputs since the last frame, publisher by publisher.

    Each publisher keeps its own order (DDS), so the order across them is all a replay
    lacks: runs of consecutive messages from one publisher (its gid, the count). A
    publisher's gid names one writer of one topic, so the runs tell the topics apart too.
    """

    def __init__(self, max_runs: int = MAX_RUNS):
        self._runs: list[list] = []   # [publisher, count]
        self._last: list | None = None
        self._max_runs = max_runs
        self._complete = True

    def took(self, publisher: bytes) -> None:
        """Note a message taken from `publisher` (its gid)."""
        last = self._last
        if last is not None and last[0] == publisher:
            last[1] += 1
        elif len(self._runs) < self._max_runs:
            self._last = [publisher, 1]
            self._runs.append(self._last)
        else:
            self._complete = False

    def take(self) -> tuple[tuple[bytes, int], ...] | None:
        """Return the runs (publisher, count) since the last call and start anew.

        None when more than `max_runs` runs came: the order is not known.
        """
        runs = tuple((publisher, count) for publisher, count in self._runs)
        complete = self._complete
        self._runs, self._last, self._complete = [], None, True
        return runs if complete else None
