"""Required keys that no source writes: found at configure, reported until a writer fills them.

A manifest that requires a board key its robot never writes reads NEVER_SEEN forever, and
whoever connects a robot finds it by staring at packs. The node knows at configure which
board keys its typed-topic sources can write (their mappings' keys, a `{field}`
placeholder read as any text); the writers on `board` (BoardWriter, plain publishers) are
open-ended, so a required key no source writes is named at configure as one a writer
must fill, and, once the writers have been re-read after the start, as one none did
while the pack still says NEVER_SEEN. Pure: no rclpy.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable, Mapping

from working_memory.core.items import Missing, MissingReason
from working_memory.core.manifest import Manifest
from working_memory.engine.health import Level, Status
from working_memory.engine.source_map import SourceSpec

_PLACEHOLDER = re.compile(r'\{[^{}]*\}')
# A note that says nobody wrote the key since the node started.
UNWRITTEN = (MissingReason.NEVER_SEEN, MissingReason.RESYNCING)


def source_keys(specs: Iterable[SourceSpec]) -> tuple[str, ...]:
    """Return the board keys the sources can write, `{field}` placeholders as `*` (globs)."""
    return tuple(dict.fromkeys(_PLACEHOLDER.sub('*', mapping.key.text)
                               for spec in specs for mapping in spec.board
                               if not mapping.remove))


def may_write(required: str, written: str) -> bool:
    """Return True when a source key `written` (key or glob) can be the required key or glob."""
    return (fnmatch.fnmatchcase(written, required) or fnmatch.fnmatchcase(required, written)
            # Two globs: the source's with its wildcards read as some text.
            or fnmatch.fnmatchcase(re.sub(r'[*?]', 'x', written), required))


def unsourced(manifests: Mapping[str, Manifest],
              specs: Iterable[SourceSpec]) -> dict[str, tuple[str, ...]]:
    """Return {cabin: its required board keys or globs that no source writes} (cabins with any)."""
    written = source_keys(specs)
    found = {}
    for cabin, manifest in manifests.items():
        keys = tuple(key for key in manifest.requirements.board
                     if not any(may_write(key, source) for source in written))
        if keys:
            found[cabin] = keys
    return found


def describe_unsourced(keys: Mapping[str, tuple[str, ...]]) -> str:
    """Return the configure log's text of the required keys no source writes."""
    return '; '.join(f'{cabin}: {", ".join(names)}' for cabin, names in keys.items())


def required_status(keys: Mapping[str, tuple[str, ...]],
                    missing: Mapping[str, Iterable[Missing]] | None, re_reading: bool,
                    age_s: float) -> Status:
    """Return the `required` status: the required keys no source writes, and which are unwritten.

    `missing` holds the latest frame's notes per cabin (None before the first tick);
    `re_reading`: the node still asks the writers (its resync); `age_s` [s] since the
    start. A key counts as unwritten while its cabin's note on it says NEVER_SEEN or
    RESYNCING.
    """
    values = tuple((f'{cabin}.unsourced', ', '.join(names)) for cabin, names in keys.items())
    if not keys:
        return Status('required', Level.OK, 'a source writes every required key', values)
    unwritten = []
    for cabin, names in keys.items():
        notes = {} if missing is None else {note.key: note.reason
                                            for note in missing.get(cabin, ())}
        unwritten += [f'{cabin}: {name}' for name in names
                      if missing is None or notes.get(name) in UNWRITTEN]
    if not unwritten:
        return Status('required', Level.OK,
                      f'written by writers, no source: {describe_unsourced(keys)}', values)
    if missing is None or re_reading:
        why = 'no source writes it; a writer on board must'
    else:
        why = f'no source writes it and no writer has, {age_s:.0f} s after the start'
    return Status('required', Level.WARN, f'{"; ".join(unwritten)}: {why}', values)
