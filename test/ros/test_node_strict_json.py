"""Strict JSON in and out: NaN and Infinity are rejected and counted; all output parses strictly."""

import json
import math

from working_memory.core.items import BoardEntry
from working_memory.msg import BoardEntry as BoardEntryMsg
from working_memory.msg import BoardUpdate, LogEvent
from working_memory.ros.conversions import board_update_msg

# Message fields that carry JSON text; every other float must be finite, but for the
# LogEvent importance, where NaN is the message's "use the manifest weight".
JSON_FIELDS = {('WorkingItem', 'value'), ('LogEvent', 'detail'), ('DecisionStatus', 'detail')}
NAN_ALLOWED = {('LogEvent', 'importance')}


def strict_loads(text):
    """json.loads that refuses what RFC 8259 does not allow (Python accepts it by default)."""
    def refuse(name):
        raise ValueError(f'{name} is not JSON')
    return json.loads(text, parse_constant=refuse)


def check_strict(msg, where='msg'):
    """Walk a message: JSON text fields parse strictly, float fields are finite; return count."""
    checked = 0
    kind = type(msg).__name__
    for name in msg.get_fields_and_field_types():
        value = getattr(msg, name)
        here = f'{where}.{name}'
        if (kind, name) in JSON_FIELDS:
            if value:
                strict_loads(value)
                checked += 1
        elif isinstance(value, float):
            assert math.isfinite(value) or (kind, name) in NAN_ALLOWED, here
        elif hasattr(value, 'get_fields_and_field_types'):
            checked += check_strict(value, here)
        elif isinstance(value, list) and value and hasattr(value[0],
                                                           'get_fields_and_field_types'):
            checked += sum(check_strict(item, f'{here}[{i}]') for i, item in enumerate(value))
    return checked


def test_non_finite_json_is_rejected_counted_and_named_and_the_rest_applies(start_memory):
    node, probe = start_memory()
    probe.wait_matched(probe.board, probe.log)
    # The last one is valid JSON nested 5000 deep: refused too (it used to end the node).
    bad = {'reading:nan': '{"x": NaN}', 'reading:inf': '{"v": Infinity}',
           'reading:minus': '[1, -Infinity]', 'reading:huge': '1e999',
           'reading:deep': '[' * 5000 + ']' * 5000}
    update = BoardUpdate(entries=[BoardEntryMsg(key=key, value=text, importance=math.nan)
                                  for key, text in bad.items()]
                         + [BoardEntryMsg(key='reading:ok', value='{"x": 1.5}',
                                          importance=math.nan)])
    probe.board.publish(update)
    probe.log.publish(LogEvent(kind=LogEvent.FAILURE, key='slip', detail='{"v": NaN}',
                               importance=math.nan))
    frame = probe.wait_frame(lambda f: any(i.key == 'reading:ok' for i in f.packs[0].items))
    assert not any(item.key in bad for pack in frame.packs for item in pack.items)
    status = probe.status('inputs', lambda s: probe.values(s)['board.rejected'] == '5'
                          and probe.values(s)['log.rejected'] == '1')
    values = probe.values(status)
    assert "'reading:deep': value: nested deeper than 64 levels" in values['board.last_rejection']
    assert "'slip': detail: not valid JSON (NaN is not a JSON number" in (
        values['log.last_rejection'])
    assert status.level == b'\x01' and 'board: 5 rejected' in status.message


def test_everything_published_parses_with_a_strict_parser(start_memory):
    node, probe = start_memory({'capacity': 5})
    probe.wait_matched(probe.board, probe.log)
    probe.board.publish(board_update_msg(
        [BoardEntry('goal:deliver', {'to': 'dock', 'at': [1e300, -0.0]}, 0.0),
         BoardEntry('pose', {'x': 1.0, 'y': 1.0, 'yaw': 0.0}, 0.0)]
        + [BoardEntry(f'reading:{n}', {'v': n / 3}, 0.0) for n in range(4)], 0.0))
    # The quick start's NaN importance is the float field's "use the manifest weight", not JSON.
    probe.board.publish(BoardUpdate(entries=[BoardEntryMsg(
        key='battery', value='{"level": 0.5}', importance=math.nan)]))
    probe.log.publish(LogEvent(kind=LogEvent.CONSTRAINT, key='zone', detail='{"r": 2.5}',
                               importance=math.nan))
    frame = probe.wait_frame(lambda f: f.packs[0].recent_events and probe.evictions
                             and any(i.key == 'battery' for i in f.packs[0].items))
    assert check_strict(frame) >= 4
    for cabin in ('planner', 'executor'):
        response = probe.assemble(cabin, frame.tick)
        assert response.success
        check_strict(response)
        explained = probe.explain(cabin, 'reading:0', frame.tick)
        assert explained.success
        check_strict(explained)
    probe.status('missing')
    for message in probe.batches + probe.diagnostics + probe.frames:
        check_strict(message)
    assert probe.batches and probe.diagnostics
