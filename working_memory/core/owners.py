"""Who may write what: board keys owned by named writers, and the writes of others refused.

An owner (`safety`, `mission`) holds keys by glob (`safety:*`) and names the nodes that
may write them, by fully qualified name (`/robot1/safety_monitor`) or `/**/name` (that
name in any namespace). A board entry or removal of an owned key from any other node
is refused; keys no owner holds stay open to every writer. This protects against a
wrong or stray writer (a test tool, a misconfigured node), not against a node that
takes another's name: that is what SROS2's access control is for.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Mapping

from working_memory.core.manifest import Patterns, is_cabin_name, is_glob

ANY_NAMESPACE = '/**/'


class OwnersError(ValueError):
    """An owners configuration that cannot be used; the message names the parameter."""


@dataclass(frozen=True)
class Owner:
    """One owner: the keys it holds and the nodes that may write them."""

    name: str
    keys: tuple[str, ...]
    nodes: tuple[str, ...]

    def __post_init__(self):
        object.__setattr__(self, '_keys', Patterns(self.keys))
        object.__setattr__(self, '_nodes', re.compile('|'.join(
            _node_regex(node) for node in self.nodes)))

    def holds(self, key: str) -> bool:
        """Return True when this owner holds `key`."""
        return self._keys.match(key)

    def admits(self, node: str) -> bool:
        """Return True when `node` (a fully qualified name) may write this owner's keys."""
        return self._nodes.fullmatch(node) is not None


class Owners:
    """The owners of a node's board, in order; a key belongs to the first that holds it."""

    def __init__(self, owners: tuple[Owner, ...] = ()):
        self.owners = owners

    def __bool__(self) -> bool:
        return bool(self.owners)

    def owner(self, key: str) -> Owner | None:
        """Return the owner of `key`, or None when it is open to every writer."""
        for owner in self.owners:
            if owner.holds(key):
                return owner
        return None

    def refuses(self, node: str | None, key: str) -> Owner | None:
        """Return the owner that refuses `node` writing `key` (None: the write is taken).

        `node` None is a writer the graph does not show (yet): refused for owned keys.
        """
        owner = self.owner(key)
        if owner is None or (node is not None and owner.admits(node)):
            return None
        return owner


def owners_from_params(names: tuple[str, ...],
                       values: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> Owners:
    """Return the Owners of `owner_names` and {name: (keys, nodes)}; OwnersError names the fault."""
    if len(set(names)) != len(names):
        raise OwnersError(f'owner_names: must be distinct, got {list(names)}')
    owners = []
    for name in names:
        if not is_cabin_name(name):
            raise OwnersError(f'owner_names: {name!r} is no name (a letter, then letters, '
                              f'digits or _)')
        keys, nodes = values[name]
        where = f'owners.{name}'
        if not keys:
            raise OwnersError(f'{where}.keys: an owner holds at least one key or glob')
        if not nodes:
            raise OwnersError(f'{where}.nodes: no node may write {", ".join(keys)}; name the '
                              f'writers (fully qualified, or /**/name in any namespace)')
        for key in keys:
            if not key or key != key.strip():
                raise OwnersError(f'{where}.keys: a key or glob must be non-empty without '
                                  f'surrounding spaces, got {key!r}')
        for node in nodes:
            _check_node(node, f'{where}.nodes')
        owners.append(Owner(name, tuple(keys), tuple(nodes)))
    _check_overlaps(owners)
    return Owners(tuple(owners))


def _check_overlaps(owners: list[Owner]) -> None:
    """Raise OwnersError when two owners hold a key in common (as far as patterns tell)."""
    for index, owner in enumerate(owners):
        for other in owners[index + 1:]:
            for key in owner.keys:
                for theirs in other.keys:
                    if _overlap(key, theirs):
                        raise OwnersError(
                            f'owners.{owner.name}.keys and owners.{other.name}.keys overlap: '
                            f'{key!r} and {theirs!r}; a key has one owner')


def _overlap(one: str, other: str) -> bool:
    """Return True when patterns `one` and `other` match a key in common (globs: a prefix test)."""
    if not is_glob(one) and not is_glob(other):
        return one == other
    if not is_glob(one) or not is_glob(other):
        key, pattern = (one, other) if not is_glob(one) else (other, one)
        return fnmatch.fnmatchcase(key, pattern)
    # Two globs: they overlap when their literal prefixes do (safety:* and safety:zone/*).
    prefix = _literal_prefix(one)
    theirs = _literal_prefix(other)
    return prefix.startswith(theirs) or theirs.startswith(prefix)


def _literal_prefix(pattern: str) -> str:
    return re.split(r'[*?\[]', pattern, maxsplit=1)[0]


def _check_node(node: str, where: str) -> None:
    name = node.removeprefix(ANY_NAMESPACE) if node.startswith(ANY_NAMESPACE) else node
    if not node.startswith('/') or not name or any(
            not part or not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', part)
            for part in name.strip('/').split('/')):
        raise OwnersError(f'{where}: {node!r} is no fully qualified node name '
                          f'(/ns/name, or /**/name for that name in any namespace)')


def _node_regex(node: str) -> str:
    if node.startswith(ANY_NAMESPACE):
        return r'(?:/[^/]+)*/' + re.escape(node[len(ANY_NAMESPACE):])
    return re.escape(node)
