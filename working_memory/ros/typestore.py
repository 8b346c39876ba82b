"""Message types by name in a rosbags typestore, read from the installed packages.

The node decodes its typed-topic sources with such a store (each message taken raw from
its subscription and deserialized by rosbags, as the replay reads it from a bag), and
the bag writer registers a recorded type it has no definition of. The definitions come
from the installed packages (share/<package>/msg/<Name>.msg, through the ament index),
so a store holds the types the node's rclpy message classes were generated from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Container, Iterable

from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, TypesysError, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore


def installed_typestore(type_names: Iterable[str]) -> Typestore:
    """Return a store decoding the message types 'pkg/msg/Name' as rclpy reads them.

    Every type they use is registered too, `byte` read as `uint8` (`unsigned_bytes`);
    LookupError names a type whose definition is not installed.
    """
    store = get_typestore(Stores.EMPTY)
    for name in type_names:
        _register_decoding(store, name)
    return store


def register_decodable(store: Typestore, msgtype: str) -> bool:
    """Register `msgtype` in a store for decoding; False, and none registered, if not installed."""
    try:
        _register_decoding(store, msgtype)
    except LookupError:
        return False
    return True


def _register_decoding(store: Typestore, msgtype: str) -> None:
    store.register(unsigned_bytes(installed_definitions(msgtype, store.fielddefs)))


def register_installed(store: Typestore, msgtype: str) -> None:
    """Register `msgtype` and every type it uses, as defined (a bag's writer hashes them)."""
    store.register(installed_definitions(msgtype, store.fielddefs))


def installed_definitions(msgtype: str, known: Container[str] = ()) -> dict:
    """Return the rosbags definitions of `msgtype` and of every type it uses not in `known`.

    From the installed packages' .msg files; LookupError when one cannot be found (the
    ament index needs ROS installed).
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        raise LookupError(f'unknown message type {msgtype!r} (no ROS installed to look it up)') \
            from None
    found: dict = {}
    todo = [msgtype]
    while todo:
        name = todo.pop()
        if name in known or name in found:
            continue
        package, kind, leaf = name.split('/') if name.count('/') == 2 else (name, '', '')
        try:
            path = Path(get_package_share_directory(package)) / kind / f'{leaf}.msg'
            found.update(get_types_from_msg(path.read_text(), name))
        except (PackageNotFoundError, OSError, ValueError, TypesysError) as err:
            raise LookupError(f'no definition of message type {name!r}: {err}') from None
        todo += _used_types(found[name][1])
    return found


def unsigned_bytes(types: dict) -> dict:
    """Return rosbags type definitions with `byte` read as `uint8`, as rclpy reads it.

    rosbags decodes a `byte` as a signed int8 (0xff: -1) where rclpy gives a one-byte
    bytes (255 once plain), so a source's byte fields and a recorded run's read alike.
    """
    return {name: (consts, [(field, _unsigned(desc)) for field, desc in fields])
            for name, (consts, fields) in types.items()}


def _unsigned(desc: tuple) -> tuple:
    kind, detail = desc
    if kind == Nodetype.BASE:
        return (kind, ('uint8', detail[1])) if detail[0] == 'byte' else desc
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        return (kind, (_unsigned(detail[0]), detail[1]))
    return desc


def _used_types(fields) -> list[str]:
    """Return the message type names that a rosbags field list refers to."""
    used = []
    for _, desc in fields:
        while desc[0] in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            desc = desc[1][0]
        if desc[0] == Nodetype.NAME:
            used.append(desc[1])
    return used
