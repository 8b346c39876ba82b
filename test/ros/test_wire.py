"""A frame's wire bytes are rclpy's serialization of the frame's message, cached or not."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message

from working_memory.core.frames import freeze_window, make_frame, make_pack
from working_memory.core.frozen import deep_freeze
from working_memory.core.gridmap import MapWindow
from working_memory.core.items import (Event, EventKind, Item, Missing, MissingReason,
                                       MissingSummary, Source)
from working_memory.ros import conversions as conv
from working_memory.ros import wire as wire_module
from working_memory.ros.wire import FrameEncoder

# ROS strings are C strings of UTF-8: neither a NUL nor a lone surrogate travels in one.
TEXT = st.text(st.characters(exclude_categories=('Cs',), exclude_characters='\x00'),
               max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                    | st.floats(allow_nan=False, allow_infinity=False, width=32) | TEXT,
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)
# An event's key and tags are names (core.items.usable_name): printable, no space at an end.
NAME = st.text(st.characters(exclude_categories=('Cc', 'Cf', 'Cs', 'Co', 'Cn', 'Zl', 'Zp', 'Zs')),
               min_size=1, max_size=12)
STAMPS = st.floats(0.0, 2e9, allow_nan=False)
UNIT = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def items(draw):
    keys = draw(st.lists(TEXT.filter(bool), unique=True, max_size=6))
    # Frozen values as the board keeps them (their text is kept) and plain ones.
    return [Item(key, draw(JSON | JSON.map(deep_freeze)), draw(st.sampled_from(Source)),
                 draw(UNIT), draw(STAMPS), draw(STAMPS), draw(st.booleans()),
                 draw(st.booleans())) for key in keys]


@st.composite
def events(draw):
    return [Event(draw(STAMPS), draw(st.sampled_from(EventKind)), draw(TEXT),
                  draw(st.just('') | NAME), draw(st.none() | JSON), draw(st.none() | UNIT),
                  tuple(draw(st.lists(NAME, max_size=3))), seq=seq)
            for seq in range(draw(st.integers(0, 4)))]


@st.composite
def windows(draw):
    if draw(st.booleans()):
        return None
    shape = (draw(st.integers(1, 9)), draw(st.integers(1, 9)))
    data = np.asarray(draw(st.lists(st.integers(-128, 127), min_size=shape[0] * shape[1],
                                    max_size=shape[0] * shape[1])), dtype=np.int8)
    origin = (draw(st.floats(-1e4, 1e4)), draw(st.floats(-1e4, 1e4)))
    return MapWindow(data.reshape(shape), origin, draw(st.floats(0.01, 1.0)))


@st.composite
def packs(draw, tick, stamp):
    missing = [Missing(draw(TEXT), draw(st.sampled_from(MissingReason)), draw(TEXT))
               for _ in range(draw(st.integers(0, 3)))]
    summaries = [MissingSummary(draw(TEXT), draw(st.sampled_from(MissingReason)),
                                draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1)),
                                draw(STAMPS), draw(STAMPS))
                 for _ in range(draw(st.integers(0, 2)))]
    return make_pack(draw(TEXT), tick, stamp, draw(items()), draw(events()), draw(windows()),
                     missing, effective=stamp + draw(st.floats(0.0, 100.0)),
                     summaries=summaries)


@st.composite
def frames(draw):
    tick, stamp = draw(st.integers(0, 2**63)), draw(STAMPS)
    return make_frame(tick, stamp, draw(st.lists(packs(tick, stamp), max_size=3)))


def assert_same_wire(ours: bytes, frame, map_frame, inputs=None, inline_windows=True,
                     started=0.0, resyncing=False, start_id='', input_starts=(),
                     taken_order=None, restart=False):
    """Assert `ours` is rclpy's serialization of the frame's message, byte for byte.

    Fast CDR leaves alignment padding uninitialised, so a padding byte may differ (ours
    are zero); every other byte must be equal, and both must decode to the same message.
    """
    expected = serialize_message(conv.context_frame_msg(frame, map_frame, inputs,
                                                        inline_windows, started, resyncing,
                                                        start_id, input_starts, taken_order,
                                                        restart=restart))
    assert len(ours) == len(expected)
    assert all(mine == 0 for mine, theirs in zip(ours, expected) if mine != theirs)
    assert (repr(deserialize_message(ours, conv.ContextFrame))
            == repr(deserialize_message(expected, conv.ContextFrame)))


def encoder():
    return FrameEncoder({kind: getattr(conv.LogEvent, kind.value) for kind in EventKind},
                        {reason: getattr(conv.MissingItem, reason.value)
                         for reason in MissingReason})


# Input starts: (topic, publisher gid, first sequence number) per publisher.
STARTS = st.lists(st.tuples(TEXT, st.binary(max_size=24), st.integers(0, 2**64 - 1)),
                  max_size=4).map(tuple)


# The order taken: (index into the starts, count) per run; None: not known.
ORDER = st.none() | st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 2**32 - 1)),
                             max_size=5).map(tuple)


@settings(max_examples=150, deadline=None)
@given(frames(), TEXT, st.dictionaries(TEXT, st.integers(0, 2**64 - 1), max_size=3),
       st.booleans(), STAMPS, st.booleans(), TEXT, STARTS, ORDER, st.booleans())
def test_frame_bytes_equal_rclpy_serialization_of_the_frame_message(frame, map_frame, inputs,
                                                                    inline, started,
                                                                    resyncing, start_id,
                                                                    starts, order, restart):
    assert_same_wire(encoder().frame(frame, map_frame, inputs, inline, started, resyncing,
                                     start_id, starts, order, restart=restart),
                     frame, map_frame, inputs, inline, started, resyncing, start_id, starts,
                     order, restart)


@settings(max_examples=60, deadline=None)
@given(st.lists(frames(), min_size=2, max_size=4), st.data())
def test_cached_pieces_serialize_later_frames_exactly(frames_, data):
    # Consecutive frames share items, events and windows at other offsets: the cache must
    # never hand back bytes of another object or of another alignment.
    wire = encoder()
    shared = frames_[0]
    for frame in frames_:
        inline = data.draw(st.booleans())
        packs = list(frame.packs.values()) + list(shared.packs.values())
        mixed = make_frame(frame.tick, frame.stamp,
                           [make_pack(f'{index}{pack.cabin}', pack.tick, pack.stamp,
                                      data.draw(st.permutations(pack.items)), pack.events,
                                      pack.map_window, pack.missing, effective=pack.effective)
                            for index, pack in enumerate(packs)])
        # The input starts kept while the same, at another offset when the packs differ.
        starts = data.draw(st.sampled_from([(), (('/board', b'\x01' * 16, 7),)]))
        assert_same_wire(wire.frame(mixed, 'map', inline_windows=inline, start_id=frame.digest,
                                    input_starts=starts),
                         mixed, 'map', inline_windows=inline, start_id=frame.digest,
                         input_starts=starts)


def test_an_empty_frame_is_a_header_tick_digest_and_two_empty_sequences():
    frame = make_frame(7, 1.5, [])
    assert_same_wire(encoder().frame(frame, 'map'), frame, 'map')


def test_many_items_used_at_the_tick_and_before_serialize_exactly():
    # Past a few dozen items of one last_used the times are patched in one numpy write.
    stamp = 50.0
    items = [Item(f'k{n:03d}', {'n': n}, Source.BOARD, 0.5, 1.0, stamp if n % 7 else 20.0)
             for n in range(120)]
    missing = [Missing(f'm{n}', MissingReason.STALE, f'stale: its ttl of {n / 10:.1f} s ran out',
                       None if n % 3 == 0 else 40.0 + n / 10) for n in range(40)]
    wire = encoder()
    # The notes' since times are ROS times of the pack's epoch: the same notes after a clock
    # reset (effective 100 s ahead of ROS time) are written anew.
    for effective in (stamp, stamp, stamp + 100.0, stamp + 100.0):
        frame = make_frame(3, stamp, [make_pack(
            'bulk', 3, stamp, items, [], None,
            [m if m.since is None or effective == stamp else
             Missing(m.key, m.reason, m.detail, m.since + 100.0) for m in missing],
            effective=effective)])
        assert_same_wire(wire.frame(frame, 'map'), frame, 'map')


def test_a_note_from_before_a_resets_ros_zero_still_says_it_ages():
    # A clock reset 100 s back: effective time runs 100 s ahead of ROS time. A note whose
    # since lies before the new epoch's ROS zero goes out as since 0 (as last_used does),
    # but still with ages true; a note without an age has ages false.
    stamp, effective = 2.0, 102.0
    stale = Missing('battery', MissingReason.STALE, 'stale: its ttl of 1.0 s ran out', 95.0)
    plain = Missing('goal', MissingReason.NEVER_SEEN, 'not on the board')
    pack = make_pack('planner', 9, stamp, [], [], None, [stale, plain], effective=effective)
    frame = make_frame(9, stamp, [pack], effective=effective)
    assert_same_wire(encoder().frame(frame, 'map'), frame, 'map')
    msg = conv.context_frame_msg(frame, 'map').packs[0]
    assert [(m.ages, m.since.sec, m.since.nanosec) for m in msg.missing] == [
        (True, 0, 0), (False, 0, 0)]
    view = conv.pack_view_from_msg(msg, None)
    assert [m.since for m in view.missing] == [0.0, None]
    assert view.missing[0].text(view.stamp) == 'stale: its ttl of 1.0 s ran out 2.0 s ago'
    assert view.missing[1].text(view.stamp) == 'not on the board'


def test_a_summary_goes_out_on_the_packs_clock_and_a_pack_view_reads_it_as_the_node_does():
    # Effective time 100 s ahead of ROS time (a reset): the summary's times go out as ROS
    # time of the pack's epoch, and the client's PackView reads the same text as the core's.
    stamp, effective = 20.0, 120.0
    summary = MissingSummary('obj:*', MissingReason.STALE, 36_250, 3, 105.5, 119.0)
    pack = make_pack('planner', 9, stamp, [], [], None, [], effective=effective,
                     summaries=[summary])
    frame = make_frame(9, stamp, [pack], effective=effective)
    assert_same_wire(encoder().frame(frame, 'map'), frame, 'map')
    msg = conv.context_frame_msg(frame, 'map').packs[0]
    (out,) = msg.missing_summaries
    assert (out.pattern, out.count, out.listed, out.oldest.sec, out.newest.sec) == (
        'obj:*', 36_250, 3, 5, 19)
    (view,) = conv.pack_view_from_msg(msg, None).missing_summaries
    assert view.text(stamp) == summary.text(effective) == (
        '36250 key(s) under obj:* STALE: their ttl ran out 14.5 s to 1.0 s ago; '
        'the 3 most valuable listed')


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5), JSON.map(deep_freeze),
                                   st.booleans()), max_size=4), min_size=2, max_size=8),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_kept_item_sections_over_ticks_serialize_as_a_fresh_encoder_does(ticks, served):
    # Three cabins, a few of six keys changing per tick (value, stale); the first cabins'
    # lengths move where the later ones start. Every Item is made anew each tick, all used
    # at the tick but some ticks, when one item keeps an older last_used.
    wire, held = encoder(), {}
    for number, changes in enumerate(ticks):
        stamp = 10.0 + number
        for cabin, slot, value, stale in changes:
            held[(cabin, slot)] = Item(f'k{slot}', value, Source.BOARD, 0.5, 1.0, stamp, stale)
        packs = []
        for cabin in range(3):
            items = [held[(c, s)]._replace(last_used=stamp - (number % 3 == 2 and s == 0))
                     for (c, s) in sorted(held) if c == cabin and served[(s + number) % 6]]
            packs.append(make_pack(f'c{cabin}', number, stamp, items, [], None, [],
                                   effective=stamp))
        frame = make_frame(number, stamp, packs)
        assert wire.frame(frame, 'map') == encoder().frame(frame, 'map')
    assert_same_wire(wire.frame(frame, 'map'), frame, 'map')


# Frozen, as the assembler's windows are: packs of many ticks share one.
WINDOWS = [freeze_window(MapWindow(np.arange(n * 3, dtype=np.int8).reshape(n, 3),
                                   (0.5 * n, -1.0), 0.05)) for n in (1, 2)]
EVENTS = [Event(1.0 + seq, EventKind.ACTION, 'src', f'e{seq}', {'n': seq}, 0.5, ('t',), seq=seq)
          for seq in range(4)]


TICKS = st.lists(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(
    ['item', 'window', 'events', 'missing', 'cabin'])), max_size=3), min_size=2, max_size=10)


def ticked_frames(ticks):
    """Yield a frame per tick: every pack made anew, most parts repeated, `ticks` changed."""
    state = {cabin: {'item': 0, 'window': 0, 'events': 0, 'missing': 0, 'cabin': 0}
             for cabin in range(3)}
    notes = {}   # the same note objects while a cabin's notes do not change, as the node's
    for number, changes in enumerate(ticks):
        stamp = 10.0 + number * 0.01
        for cabin, part in changes:
            state[cabin][part] += 1
        packs = []
        for cabin, held in state.items():
            items = [Item(f'k{slot}', held['item'] if slot == 0 else 'same', Source.BOARD, 0.5,
                          1.0, stamp) for slot in range(cabin + 1)]
            window = (None, *WINDOWS)[held['window'] % 3]
            events = EVENTS[:held['events'] % 5]
            missing = notes.setdefault((cabin, held['missing']), [
                Missing(f'm{n}', MissingReason.STALE, f'{held["missing"] % 2}')
                for n in range(held['missing'] % 3)])
            packs.append(make_pack(f'c{cabin}' + 'x' * (held['cabin'] % 2), number, stamp, items,
                                   events, window, missing, effective=stamp))
        yield make_frame(number, stamp, packs)


@settings(max_examples=60, deadline=None)
@given(TICKS, st.lists(st.booleans(), min_size=10, max_size=10),
       st.lists(st.sampled_from(['map', 'odom']), min_size=10, max_size=10))
def test_packs_repeated_over_ticks_serialize_as_a_fresh_encoder_does(ticks, inline, map_frames):
    # Each tick makes every pack anew at a new tick and stamp; most parts repeat (the very
    # window and event objects, equal missing entries, items of the same content), a few
    # change: a repeated pack comes from kept segments, a changed one must not.
    wire = encoder()
    for number, frame in enumerate(ticked_frames(ticks)):
        ours = wire.frame(frame, map_frames[number], None, inline[number])
        assert ours == encoder().frame(frame, map_frames[number], None, inline[number])
    assert_same_wire(ours, frame, map_frames[number], None, inline[number])


def test_a_repeated_pack_is_written_from_kept_segments(monkeypatch):
    def pack(tick, detail):
        goal = Item('goal', 'dock', Source.BOARD, 1.0, 1.0, 5.0 + tick, exempt=True)
        return make_pack('planner', tick, 5.0 + tick, [goal], EVENTS[:2], WINDOWS[1],
                         [Missing('m', MissingReason.STALE, detail)], effective=5.0 + tick)
    wire = encoder()
    wire.frame(make_frame(1, 6.0, [pack(1, 'old')]), 'map')

    def refuse(*_):
        raise AssertionError('a repeated pack was encoded again')
    for name in ('_map', '_event_bytes', '_missing_bytes'):
        monkeypatch.setattr(wire, name, refuse)
    monkeypatch.setattr(wire_module, 'item_pieces', refuse)
    frame = make_frame(2, 7.0, [pack(2, 'old')])
    assert_same_wire(wire.frame(frame, 'map'), frame, 'map')
    with pytest.raises(AssertionError, match='encoded again'):
        wire.frame(make_frame(3, 8.0, [pack(3, 'new')]), 'map')


def test_pieces_of_keys_gone_from_the_frames_are_not_kept_for_ever():
    # Short-lived keys (a new one every tick) must not grow the encoder's caches.
    wire = encoder()
    for tick in range(600):
        items = [Item(f'short{tick}', tick, Source.BOARD, 0.5, 1.0, float(tick)),
                 Item('kept', 'v', Source.BOARD, 0.5, 1.0, float(tick))]
        frame = make_frame(tick, float(tick), [make_pack('c', tick, float(tick), items, [],
                                                         None, [], effective=float(tick))])
        wire.frame(frame, 'map')
    assert len(wire._items) <= 2 * 2 + 256 + 1
    assert_same_wire(wire.frame(frame, 'map'), frame, 'map')


def test_item_pieces_take_a_frozen_values_kept_text_as_its_text():
    value = deep_freeze({'reading': 0.25})
    value.json_text = '{"kept":1}'   # what value_text returns for it: not encoded again
    item = Item('k', value, Source.BOARD, 0.5, 1.0, 2.0)
    ((_, split),) = wire_module.item_pieces((item,), (0,), 0, {}, {}, wire_module.value_text)
    assert split == wire_module.item_split(item, '{"kept":1}', 0)


def test_item_pieces_call_any_other_text_function_they_are_given():
    value = deep_freeze({'reading': 0.25})
    value.json_text = '{"kept":1}'   # value_text's: not what another text_of says
    item = Item('k', value, Source.BOARD, 0.5, 1.0, 2.0)
    ((_, split),) = wire_module.item_pieces((item,), (0,), 0, {}, {}, lambda v: '{"other":2}')
    assert split == wire_module.item_split(item, '{"other":2}', 0)
