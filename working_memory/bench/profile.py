"""Summaries of a sampling profile (py-spy's raw collapsed stacks) of the running node.

A raw profile has one line per distinct stack: frames from the outermost to the
innermost, separated by `;`, then a space and the number of samples, e.g.
`<module> (node.py:700);spin_once (executors.py:12);_tick (node.py:400) 17`.
`self` counts a sample for the innermost frame only, `total` for every distinct
function on the stack (once per sample, however deep the recursion).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from itertools import zip_longest

# A frame as py-spy writes it: `function (path:line)`; the line is left out of the key.
ENTRY_SHARE = 0.95
_MARKER = re.compile(r'^(thread \(0x[0-9A-Fa-f]+\)|process \d+:)')
_FRAME = re.compile(r'^(?P<function>.*?) \((?P<path>[^()]*?)(?::\d+)?\)$')


@dataclass(frozen=True)
class Profile:
    """Sample counts per function (`function (file)`): innermost only, and anywhere on the stack."""

    samples: int
    self_counts: Counter
    total_counts: Counter

    def share(self, count: int) -> float:
        """Return `count` as a share of all samples (0 when there are none)."""
        return count / self.samples if self.samples else 0.0

    def top(self, n: int = 15, *, inclusive: bool = False,
            below: float = 1.0) -> list[tuple[str, float]]:
        """Return the `n` functions with the most samples, as (function, share < `below`)."""
        counts = self.total_counts if inclusive else self.self_counts
        ranked = ((name, self.share(count)) for name, count in counts.most_common())
        return [entry for entry in ranked if entry[1] < below][:n]


def function_name(frame: str) -> str:
    """Return `function (file name)` for a py-spy frame, the line number left out."""
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip()
    path = match['path'].replace('\\', '/').rsplit('/', 1)[-1]
    return f"{match['function']} ({path})"


def parse_raw(text: str) -> Profile:
    """Return the Profile of py-spy raw output (`--format raw`); a line without a count raises."""
    self_counts, total_counts, samples = Counter(), Counter(), 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(' ')
        if not count.isdigit():
            raise ValueError(f'line {number}: expected "<frames> <count>", got {line!r}')
        weight = int(count)
        # With --threads / --subprocesses py-spy puts the thread or process first: not a
        # function. A stack it could not read comes out empty: counted, as (unknown).
        parts = [f for f in stack.split(';') if f.strip()]
        if parts and _MARKER.match(parts[0]):
            parts = parts[1:]
        frames = [function_name(f) for f in parts] or ['(unknown)']
        samples += weight
        self_counts[frames[-1]] += weight
        for name in dict.fromkeys(frames):   # once per sample, in stack order
            total_counts[name] += weight
    return Profile(samples, self_counts, total_counts)


def format_profile(profile: Profile, title: str, n: int = 12) -> str:
    """Return a markdown table of the top functions by self and by total share.

    The total column leaves out functions on at least ENTRY_SHARE of the stacks.
    """
    rows = [f'{title}: {profile.samples} samples',
            '| self % | function (innermost) | total % | function (anywhere on the stack) |',
            '|---|---|---|---|']
    # The entry chain (main, spin loop) is on nearly every stack and says nothing.
    anywhere_top = profile.top(n, inclusive=True, below=ENTRY_SHARE)
    for inner, anywhere in zip_longest(profile.top(n), anywhere_top):
        rows.append('| ' + ' | '.join(_cells(inner) + _cells(anywhere)) + ' |')
    return '\n'.join(rows)


def _cells(entry: tuple[str, float] | None) -> list[str]:
    return ['', ''] if entry is None else [f'{100 * entry[1]:.1f}', f'`{entry[0]}`']
