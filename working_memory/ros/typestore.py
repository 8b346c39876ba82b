"""Message types by name in a rosbags typestore, read from the installed packages.

The node decodes its typed-topic sources with such a store (each message taken raw from
its subscription and deserialized by rosbags, as the replay reads it from a bag), and
the bag reader registers a recorded type it has no definition of. The definitions come
from the installed packages (share/<package>/msg/<Name>.msg, through the ament index),
so a store holds the types the node's rclpy message classes were generated from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from rosbags.interfaces import Nodetype
from rosbags.typesys import Stores, TypesysError, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore


def installed_typestore(type_names: Iterable[str]) -> Typestore:
    """Return a store of the message types 'pkg/msg/Name' and every type they use.

    LookupError names a type whose definition is not installed.
    """
    store = get_typestore(Stores.EMPTY)
    for name in type_names:
        register_installed(store, name)
    return store


def register_installed(store: Typestore, msgtype: str) -> None:
    """Register `msgtype` and every type it uses from the installed packages' .msg files.

    LookupError when a definition cannot be found (the ament index needs ROS installed).
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        raise LookupError(f'unknown message type {msgtype!r} (no ROS installed to look it up)') \
            from None
    todo = [msgtype]
    while todo:
        name = todo.pop()
        if name in store.fielddefs:
            continue
        package, kind, leaf = name.split('/') if name.count('/') == 2 else (name, '', '')
        try:
            path = Path(get_package_share_directory(package)) / kind / f'{leaf}.msg'
            store.register(get_types_from_msg(path.read_text(), name))
        except (PackageNotFoundError, OSError, ValueError, TypesysError) as err:
            raise LookupError(f'no definition of message type {name!r}: {err}') from None
        todo += [used for used in _used_types(store.fielddefs[name][1])
                 if used not in store.fielddefs]


def _used_types(fields) -> list[str]:
    """Return the message type names that a rosbags field list refers to."""
    used = []
    for _, desc in fields:
        while desc[0] in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            desc = desc[1][0]
        if desc[0] == Nodetype.NAME:
            used.append(desc[1])
    return used
