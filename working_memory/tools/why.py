"""Why-answers across time: where a key was, per cabin and tick, when it was evicted and back."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from working_memory.tools.recording import (EvictionRecord, FrameRecord, MissingRecord, PackRecord,
                                            ReadmissionRecord, Recording, SummaryRecord)

PRESENT = 'present'
PRESENT_STALE = 'present, stale'
NOT_IN_PACK = 'not in pack'
EVICTED = 'EVICTED'
STALE_STATES = (PRESENT_STALE, 'STALE')


@dataclass(frozen=True, slots=True)
class Span:
    """Consecutive recorded ticks in which a key had one state in one cabin.

    `state` is PRESENT, PRESENT_STALE, NOT_IN_PACK (neither served nor required) or a
    MissingItem reason name ('EVICTED', 'STALE', 'OUT_OF_SCOPE', 'INJECTED_DROP', ...);
    EVICTED also marks a selected but unrequired key from its eviction until it is served
    again (no MissingItem, only the Eviction record says so). `detail` is the first tick's
    detail ('readmitted' when the span starts with the key's return).
    """

    first: int
    last: int
    state: str
    detail: str


@dataclass(frozen=True, slots=True)
class CabinHistory:
    """A key's spans in one cabin; `first_seen` is the first tick it was served (None: never)."""

    cabin: str
    spans: tuple[Span, ...]
    first_seen: int | None
    stale_since: int | None


@dataclass(frozen=True, slots=True)
class WhyAnswer:
    """Everything the recording says about one key."""

    key: str
    ticks: tuple[int, int]
    evictions: tuple[EvictionRecord, ...]
    histories: tuple[CabinHistory, ...]
    readmissions: tuple[ReadmissionRecord, ...] = ()


def missing_entry(pack: PackRecord, key: str) -> MissingRecord | None:
    """Return the pack's missing entry that covers `key`: the key itself or a dropped category.

    Injected drops may name a category ('board:battery*', a glob); event categories
    ('events:FAILURE') cannot be matched to a key and are left out.
    """
    for missing in pack.missing:
        pattern = missing.key.removeprefix('board:')
        if missing.key == key or (not missing.key.startswith('events:')
                                  and fnmatchcase(key, pattern)):
            return missing
    return None


def counted_in(pack: PackRecord, key: str) -> SummaryRecord | None:
    """Return the summary of the first glob matching `key` that counts absent keys, or None.

    A pack lists the most valuable few of the absent keys a glob selects and counts the
    rest: a key it does not list is one of them when the glob matches it.
    """
    return next((summary for summary in pack.summaries if fnmatchcase(key, summary.pattern)),
                None)


def summary_detail(summary: SummaryRecord, stamp: float) -> str:
    """Return why a key under a summarised glob has no note of its own, with the summary."""
    return (f'not listed: under {summary.pattern}, whose {summary.reason} keys the pack counts '
            f'(~/explain or wm-inspect replay give this key its own note): '
            f'{summary.text(stamp)}')


def eviction_detail(eviction: EvictionRecord) -> str:
    """Return e.g. 'evicted at tick 4 (CAPACITY): importance 0.20, unused for 1.00 s'."""
    return (f'evicted at tick {eviction.tick} ({eviction.reason}): importance '
            f'{eviction.importance:.2f}, unused for {eviction.age:.2f} s')


def state_at(pack: PackRecord | None, key: str, eviction: EvictionRecord | None = None,
             readmitted: bool = False, stamp: float = 0.0) -> tuple[str, str]:
    """Return (state, detail) of `key` in one pack (None: the cabin had no pack that tick).

    `eviction` is the key's eviction that keeps it out at this tick when the cabin
    selects the key: a selected key that is not required gets no MissingItem, so only
    the eviction record tells why it is absent. `readmitted`: it came back this tick. A
    key a glob's summary counts without a note of its own has that summary's reason
    (read at the pack's `stamp` [s]).
    """
    if pack is None:
        return NOT_IN_PACK, 'cabin had no pack'
    item = pack.item(key)
    if item is not None:
        detail = f'importance {item.importance:.2f}' + (', exempt' if item.exempt else '')
        detail += ', readmitted' if readmitted else ''
        return (PRESENT_STALE if item.stale else PRESENT), detail
    event = next((e for e in pack.events if e.key == key), None)
    if event is not None:
        return PRESENT, f'{event.kind} event at {event.stamp:.2f} s'
    missing = missing_entry(pack, key)
    if missing is not None:
        return missing.reason, missing.detail
    if eviction is not None:
        return EVICTED, eviction_detail(eviction)
    summary = counted_in(pack, key)
    if summary is not None:
        return summary.reason, summary_detail(summary, stamp)
    return NOT_IN_PACK, 'not selected and not required by the manifest'


def selects(frames: tuple[FrameRecord, ...], cabin: str, key: str) -> bool:
    """Return True when `key` was an item of `cabin`'s pack in some recorded tick.

    Packs do not list what a manifest selects, only what it got; a cabin that never got
    the key cannot be shown to select it, so its absence is not blamed on an eviction.
    """
    return any(pack.item(key) is not None
               for pack in (frame.packs.get(cabin) for frame in frames) if pack is not None)


def cabin_history(frames: tuple[FrameRecord, ...], cabin: str, key: str,
                  evictions: tuple[EvictionRecord, ...] = (),
                  readmissions: tuple[ReadmissionRecord, ...] = ()) -> CabinHistory:
    """Return the spans of `key` in `cabin` over the recorded frames.

    `evictions` and `readmissions` are the key's; an eviction explains the key's absence
    from the packs of the cabin, if it selects the key, from its tick until the key is
    served again (an eviction is an event: the key stays out until it comes back).
    """
    evicted_in = ({eviction.tick: eviction for eviction in evictions}
                  if selects(frames, cabin, key) else {})
    back_in = {readmission.tick for readmission in readmissions}
    out: EvictionRecord | None = None
    spans: list[Span] = []
    for frame in frames:
        out = evicted_in.get(frame.tick, out)
        pack = frame.packs.get(cabin)
        state, detail = state_at(pack, key, out, frame.tick in back_in, frame.stamp)
        if state in (PRESENT, PRESENT_STALE):
            out = None
        if spans and spans[-1].state == state:
            last = spans[-1]
            spans[-1] = Span(last.first, frame.tick, state, last.detail)
        else:
            spans.append(Span(frame.tick, frame.tick, state, detail))
    first_seen = next((s.first for s in spans if s.state in (PRESENT, PRESENT_STALE)), None)
    stale_since = spans[-1].first if spans and spans[-1].state in STALE_STATES else None
    return CabinHistory(cabin, tuple(spans), first_seen, stale_since)


def mentions(history: CabinHistory) -> bool:
    """Return True when the key was ever served or reported missing in the cabin."""
    return any(span.state != NOT_IN_PACK for span in history.spans)


def why(recording: Recording, key: str, cabin: str | None = None) -> WhyAnswer:
    """Explain `key` over the recording in `cabin`, else in every cabin that ever mentions it."""
    if cabin is not None:
        recording.check_cabin(cabin)
    cabins = [cabin] if cabin is not None else recording.cabins
    evictions = tuple(e for e in recording.evictions if e.key == key)
    readmissions = tuple(r for r in recording.readmissions if r.key == key)
    histories = [cabin_history(recording.frames, name, key, evictions, readmissions)
                 for name in cabins]
    if cabin is None:
        histories = [history for history in histories if mentions(history)]
    ticks = recording.ticks
    return WhyAnswer(key, (ticks[0], ticks[-1]) if ticks else (0, 0), evictions,
                     tuple(histories), readmissions)
