"""The frame's receipts: what the node took on each input, from where and in which order.

Every frame names, per input topic, how many messages the node had taken, where it began
to take each publisher (its gid and first number) and the order it took them in since
the last frame: what an offline replay needs to apply exactly what the tick saw
(`Receipts`). Pure Python (no rclpy). A DDS writer numbers every sample it writes, and rclpy
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
from typing import Iterable, NamedTuple

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


class Receipt(NamedTuple):
    """What one frame says of its inputs (ContextFrame.inputs, input_starts, taken_*)."""

    counts: dict[str, int]                          # {resolved topic: messages taken so far}
    starts: tuple[tuple[str, bytes, int], ...]      # (resolved topic, publisher, first number)
    order: tuple[tuple[int, int], ...] | None       # runs (index into starts, count); None: lost


class Receipts:
    """Count what each input topic took, per publisher, and the order across publishers."""

    def __init__(self, topics: Iterable[str]):
        """Count `topics` (as the node names its inputs); `names` resolves them for the frame."""
        self.received = {topic: 0 for topic in topics}
        self.gaps = {topic: SequenceGaps() for topic in self.received}
        self.order = TakeOrder()
        # {topic: resolved name}: set by the node once its subscriptions resolve the names.
        self.names = {topic: topic for topic in self.received}

    def took(self, topic: str, publisher: bytes = b'', sequence: int | None = None) -> None:
        """Count a message on `topic`; numbered by `publisher`, it joins the starts and order."""
        self.received[topic] += 1
        self.gaps[topic].observe(publisher, sequence)
        if publisher:
            self.order.took(publisher)

    def receipt(self) -> Receipt:
        """Return this frame's receipt and start the order of the next one."""
        names = self.names
        starts = tuple((names[topic], publisher, first)
                       for topic, gaps in self.gaps.items()
                       for publisher, first in gaps.first.items())
        return Receipt({names[topic]: count for topic, count in self.received.items()},
                       starts, self._order(starts))

    def _order(self, starts: tuple[tuple[str, bytes, int], ...]
               ) -> tuple[tuple[int, int], ...] | None:
        """Return the runs taken since the last frame as (index into `starts`, count).

        None when the order is not known (too many runs, or a publisher that numbers
        nothing and so has no start).
        """
        runs = self.order.take()
        if runs is None:
            return None
        index = {publisher: position for position, (_, publisher, _) in enumerate(starts)}
        try:
            return tuple((index[publisher], count) for publisher, count in runs)
        except KeyError:
            return None
