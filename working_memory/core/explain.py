"""Why-not answers: why a key is, or is not, in a cabin's pack of a frozen frame."""

from __future__ import annotations

from typing import Mapping, NamedTuple

from working_memory.core.assembly import event_item_key, event_item_kind, event_item_parts
from working_memory.core.eventlog import EventLog
from working_memory.core.frames import Frame, Pack
from working_memory.core.items import MissingReason
from working_memory.core.manifest import ALL_KINDS, EVENTS_PREFIX, MAP, Manifest
from working_memory.core.refusals import Refusals, event_refusal_key

PRESENT = 'PRESENT'
NOT_IN_MANIFEST = 'NOT_IN_MANIFEST'
NEVER_SEEN = MissingReason.NEVER_SEEN.value
OUT_OF_SCOPE = MissingReason.OUT_OF_SCOPE.value
INJECTED_DROP = MissingReason.INJECTED_DROP.value


class Explanation(NamedTuple):
    """`reason` is PRESENT, NOT_IN_MANIFEST or a MissingReason value."""

    present: bool
    reason: str
    detail: str


def explain(frame: Frame, manifests: Mapping[str, Manifest], cabin: str, key: str,
            log: EventLog | None = None, refusals: Refusals | None = None) -> Explanation:
    """Explain `key` (board key, event item key, "events:<KIND>" or "map") in `cabin`'s pack.

    `manifests` are the ones the frame was assembled with; `log` (the node's) tells an
    event item key that names no logged event (NEVER_SEEN) from one outside the
    window; `refusals` (the node's) adds, to the answer for a key whose values are
    being refused for their size, the latest refusal by the frame's time. Raises
    ValueError for a cabin the frame or the manifests do not know.
    """
    answer = _explain(frame, manifests, cabin, key, log)
    refusal = None if refusals is None else refusals.get(_refusal_key(key))
    if refusal is None or refusal.effective > frame.effective:
        return answer
    if answer.present:
        return answer._replace(detail=f'{answer.detail}; a later value {refusal.text()}, '
                                      'this one kept')
    return answer._replace(detail=f'{answer.detail}; {refusal.text()}')


def _refusal_key(key: str) -> str:
    """Return the key a refusal of `key` is recorded under (an event item's: no number)."""
    parts = event_item_parts(key)
    return key if parts is None else event_refusal_key(*parts[:2])


def _explain(frame: Frame, manifests: Mapping[str, Manifest], cabin: str, key: str,
             log: EventLog | None) -> Explanation:
    pack = frame.pack(cabin)
    manifest = manifests.get(cabin)
    if manifest is None:
        raise ValueError(f'cabin {cabin!r}: no manifest (known: {", ".join(manifests)})')
    served = _served(pack, key)
    if served:
        readmission = pack.readmission(key)
        if readmission is not None:
            served += (f'; back since tick {readmission.tick} '
                       f'(evicted at tick {readmission.evicted_tick})')
        return Explanation(True, PRESENT, served)
    missing = next((note for note in pack.missing if note.key == key), None) or (
        pack.absent.get(key))
    if missing is not None:
        return Explanation(False, missing.reason.value, missing.text(pack.effective))
    return _unrecorded(pack, manifest, key, log)


def _served(pack: Pack, key: str) -> str:
    """Describe how `key` is served in `pack`, or return '' when it is not."""
    item = pack.item(key)
    if item is not None:
        exempt = ', exempt' if item.exempt else ''
        return (f'{item.source.value} item, importance {item.importance:.2f}{exempt}, '
                f'stamp t={item.stamp:.1f} s')
    for event in pack.events:
        if event_item_key(event) == key:
            return f'{event.kind.value} event from {event.source!r} at t={event.stamp:.1f} s'
    if key == MAP and pack.map_window is not None:
        height, width = pack.map_window.data.shape
        x, y = pack.map_window.origin
        return f'map window {width} x {height} cells at ({x:.2f}, {y:.2f}) m'
    if key.startswith(EVENTS_PREFIX):
        kind = key[len(EVENTS_PREFIX):]
        count = sum(kind in (ALL_KINDS, event.kind.value) for event in pack.events)
        if count:
            return f'{count} {kind} event(s) in the window'
    return ''


def _unrecorded(pack: Pack, manifest: Manifest, key: str,
                log: EventLog | None) -> Explanation:
    """Answer for a key the pack has no record of, from what the manifest asks for.

    The map and every board key the manifest selected are always recorded, so
    what is left are events outside the window or never logged, and keys the
    board lacks.
    """
    kind = key[len(EVENTS_PREFIX):] if key.startswith(EVENTS_PREFIX) else event_item_kind(key)
    if kind is not None:
        kinds = manifest.events.kinds_named(kind)
        if kinds and all(k in manifest.drops.event_kinds for k in kinds):
            return Explanation(False, INJECTED_DROP, f'{kind} events withheld by an injected drop')
        parts = event_item_parts(key)
        if kinds and parts is not None and log is not None and log.logged(*parts) is False:
            return Explanation(False, NEVER_SEEN, f'no {kind} event {parts[1]!r} numbered '
                                                  f'{parts[2]} was ever logged')
        if kinds:
            return Explanation(False, OUT_OF_SCOPE,
                               f'not in the event window of tick {pack.tick} '
                               f'(last {manifest.events.window_s:.1f} s)')
    elif key != MAP and manifest.selects.match(key):
        return Explanation(False, NEVER_SEEN, f'not on the board at tick {pack.tick}')
    return Explanation(False, NOT_IN_MANIFEST, _manifest_summary(manifest, key))


def _manifest_summary(manifest: Manifest, key: str) -> str:
    patterns = ', '.join(manifest.selects.patterns) or 'none'
    scope = manifest.events
    if not scope.enabled:
        events = 'none'
    else:
        events = ', '.join(kind.value for kind in scope.kinds) or 'all kinds'
    return (f'{manifest.name} manifest does not select {key!r} '
            f'(board keys: {patterns}; events: {events})')
