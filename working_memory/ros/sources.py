"""Typed-topic sources' ROS face: message types by name, their subscriptions and QoS.

The conversion is `engine/source_map.py` (pure, shared with the offline replay); this
module resolves the types with rosidl_runtime_py and subscribes the node's intake
(ros/intake.py `Intake`, as `board` and `log`) to each source's topic, whose messages
rosbags deserializes (ros/typestore.py), as the replay does.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Callable, Iterable

from rclpy.exceptions import InvalidTopicNameException
from rclpy.lifecycle import LifecycleNode
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from working_memory.core.checks import did_you_mean
from working_memory.engine.source_map import FieldType, SourceSpec, TypeInfo
from working_memory.ros.intake import Intake

_SEQUENCE = re.compile(r'sequence<(.+?)(?:, ?\d+)?>')
_ARRAY = re.compile(r'(.+)\[\d*\]')
_BOUNDED = re.compile(r'<=\d+$')


def message_type(type_name: str) -> type:
    """Return the message class of 'pkg/msg/Name'; LookupError names the closest one."""
    try:
        # Imported here: a node without sources runs where rosidl_runtime_py is missing.
        from rosidl_runtime_py.utilities import get_message
    except ImportError:
        raise LookupError('typed-topic sources need rosidl_runtime_py (ROS 2; in this '
                          "repository's venv from ../shared/wheels)") from None
    try:
        return get_message(type_name)
    except ValueError:
        raise LookupError(f'{type_name!r} is not a message type name pkg/msg/Name') from None
    except ModuleNotFoundError:
        package = type_name.split('/')[0]
        raise LookupError(f'unknown message type {type_name!r}: no message package '
                          f'{package!r} is installed') from None
    except AttributeError:
        package, _, name = type_name.rpartition('/')
        module = importlib.import_module(package.replace('/', '.'))
        known = [n for n in dir(module) if hasattr(getattr(module, n), '_TYPE_SUPPORT')]
        raise LookupError(f'unknown message type {type_name!r}'
                          + did_you_mean(name, known)) from None


def describe(type_name: str) -> TypeInfo:
    """Return the fields and constants of a message type (source_map's `Describe`)."""
    cls = message_type(type_name)
    meta = type(cls)
    constants = getattr(meta, f'_{meta.__name__}__constants', {})
    return TypeInfo({name: field_type(text)
                     for name, text in cls.get_fields_and_field_types().items()},
                    dict(constants))


def field_type(text: str) -> FieldType:
    """Return rclpy's field type text ('sequence<geometry_msgs/PoseStamped>') as a FieldType."""
    sequence = False
    for pattern in (_SEQUENCE, _ARRAY):
        match = pattern.fullmatch(text)
        if match:
            text, sequence = match.group(1), True
    text = _BOUNDED.sub('', text)
    if '/' in text:
        package, name = text.split('/')[0], text.split('/')[-1]
        text = f'{package}/msg/{name}'
    return FieldType(text, sequence)


def source_qos(node: LifecycleNode, spec: SourceSpec) -> QoSProfile:
    """Return the source's QoS: as given, the rest adapted to the publishers in the graph.

    Reliable (transient local) only when every publisher offers it; with none yet,
    best effort and volatile, which match any publisher.
    """
    offers = [info.qos_profile for info in node.get_publishers_info_by_topic(
        node.resolve_topic_name(spec.topic))]
    reliability = spec.qos.reliability or (
        'reliable' if offers and all(offer.reliability == ReliabilityPolicy.RELIABLE
                                     for offer in offers) else 'best_effort')
    durability = spec.qos.durability or (
        'transient_local' if offers and all(
            offer.durability == DurabilityPolicy.TRANSIENT_LOCAL for offer in offers)
        else 'volatile')
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=spec.qos.depth,
                      reliability=ReliabilityPolicy[reliability.upper()],
                      durability=DurabilityPolicy[durability.upper()])


def subscribe_sources(intake: Intake, node: LifecycleNode, specs: Iterable[SourceSpec],
                      on_message: Callable[[str, Any, dict], None],
                      on_undecodable: Callable[[str, str, dict], None],
                      event_callbacks: Callable[[str], Any]) -> None:
    """Subscribe to each source's topic on `intake`, handing `on_message(topic, msg, info)`.

    As `board` and `log`: taken in batches before each tick and between ticks, so a
    50 Hz odometry does not wake the node 50 times a second; `info` counts lost messages.
    Each message is taken raw and deserialized by rosbags (`msg` a rosbags message, as
    the replay reads it from a bag): about four times faster than rclpy's message
    objects (a 500-pose Path: 1.6 against 6.1 ms). A type whose definition is not
    installed is taken as an rclpy message; bytes rosbags cannot decode go to
    `on_undecodable(topic, error, info)`. `event_callbacks(topic)` gives a topic's QoS
    event callbacks.
    """
    try:
        # Imported here: a node without sources runs where rosbags is missing.
        from working_memory.ros.typestore import installed_typestore, register_decodable
        store = installed_typestore(())
    except ImportError:
        store = None   # every source taken as an rclpy message
    decodable: dict[str, bool] = {}
    for spec in specs:
        if store is not None and spec.type not in decodable:
            decodable[spec.type] = register_decodable(store, spec.type)
        raw = decodable.get(spec.type, False)
        try:
            intake.subscribe(message_type(spec.type), spec.topic,
                             _decoding(store, spec, on_message, on_undecodable) if raw else
                             lambda msg, info, topic=spec.topic: on_message(topic, msg, info),
                             source_qos(node, spec), event_callbacks(spec.topic), raw=raw)
        except (InvalidTopicNameException, RuntimeError) as error:
            # rcl's RCLError (a RuntimeError): a name it cannot expand.
            raise ValueError(f'sources.{spec.name}.topic: {error}') from None


def _decoding(store: Any, spec: SourceSpec, on_message: Callable[[str, Any, dict], None],
              on_undecodable: Callable[[str, str, dict], None]) -> Callable[[bytes, dict], None]:
    """Return the raw subscription callback of `spec`: its bytes decoded by `store`."""
    from rosbags.serde import SerdeError
    topic, type_name = spec.topic, spec.type

    def callback(data: bytes, info: dict) -> None:
        try:
            msg = store.deserialize_cdr(data, type_name)
        except (SerdeError, UnicodeDecodeError) as error:
            on_undecodable(topic, f'a {type_name} message rosbags cannot decode '
                                  f'({len(data)} bytes): {error}', info)
            return
        on_message(topic, msg, info)
    return callback
