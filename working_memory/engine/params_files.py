"""Params files read as the node's section of them, to catch what the ROS parser drops unsaid.

Pure Python (PyYAML, no rclpy). rcl merges a node's params files in order, later files
winning, but some later values whose type differs from an earlier one (`tick_hz: fast`
or `capacity: []` after a number; rcl reads `~` as the string '~') are dropped without a
word: the earlier value stays. A patch written after a robot's own file would then silently not
apply. The node reads the same files (those of its command line and `cli_args`) and
refuses configure naming each value the parser dropped. The replay and the demo read
parameters from files with the same functions.
"""

from __future__ import annotations

import array
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

PARAMS_FILE_FLAG = '--params-file'


class ParamsFileError(ValueError):
    """A params file cannot be read as one (missing, not YAML, not a mapping); says which."""


def parameter_args(argv: Sequence[str]) -> tuple[list[str], set[str]]:
    """Return the `--params-file` paths of `argv`'s ROS arguments and the names `-p` sets.

    The paths come in order; rcl applies `-p NAME:=VALUE` over every file.
    """
    files, names, ros, expect = [], set(), False, None
    for arg in argv:
        if expect == PARAMS_FILE_FLAG:
            files.append(arg)
        elif expect is not None:
            names.add(arg.partition(':=')[0])
        if expect is not None:
            expect = None
        elif arg == '--ros-args':
            ros = True
        elif arg == '--':
            ros = False
        elif ros and arg in (PARAMS_FILE_FLAG, '-p', '--param'):
            expect = arg
    return files, names


def node_key_matches(key: str, node: str) -> bool:
    """Return True when a params file's node key names the node `node` (fully qualified).

    `/**` stands for any namespace (also none), `*` for one name: `/**/working_memory`
    names /working_memory and /robot1/working_memory; a relative key names a node of
    the root namespace.
    """
    key = key if key.startswith('/') else '/' + key
    pattern = re.escape(key).replace(r'/\*\*', '(?:/[^/]+)*').replace(r'\*', '[^/]+')
    return re.fullmatch(pattern, node) is not None


def flatten(mapping: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    """Return nested parameter mappings as dotted names, as ROS reads a params file."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f'{prefix}{key}.'))
        else:
            flat[f'{prefix}{key}'] = value
    return flat


def read_document(path: str | Path) -> Mapping[str, Any]:
    """Return a params file's YAML mapping; ParamsFileError naming the file when it has none."""
    try:
        with open(path, encoding='utf-8') as stream:
            document = yaml.safe_load(stream)
    except (OSError, yaml.YAMLError) as error:
        raise ParamsFileError(f'{path}: cannot read parameters: {error}') from None
    if not isinstance(document, Mapping):
        raise ParamsFileError(f'{path}: must hold a mapping of parameters')
    return document


def node_parameters(document: Mapping[str, Any], node: str) -> dict[str, Any] | None:
    """Return the dotted parameters every section naming `node` sets (later sections win).

    None when no section of the ROS layout (`<key>: ros__parameters: ...`) names it.
    """
    found = None
    for key, section in document.items():
        if (isinstance(key, str) and isinstance(section, Mapping)
                and isinstance(section.get('ros__parameters'), Mapping)
                and node_key_matches(key, node)):
            found = {**(found or {}), **flatten(section['ros__parameters'])}
    return found


def file_values(paths: Iterable[str | Path], node: str) -> dict[str, list[tuple[Any, str]]]:
    """Return what the files set for `node`: by name, each file's (value, path), in order."""
    values: dict[str, list[tuple[Any, str]]] = {}
    for path in paths:
        for name, value in (node_parameters(read_document(path), node) or {}).items():
            values.setdefault(name, []).append((value, str(path)))
    return values


def _plain(value: Any) -> Any:
    """Return a parameter value as plain Python, an empty list for no value."""
    if value is None:
        return []   # a params file's `[]`: the ROS parser cannot type an empty list
    if isinstance(value, (tuple, list, array.array)):
        return [_plain(v) for v in value]
    return value


def dropped(files: Mapping[str, list[tuple[Any, str]]], overrides: Mapping[str, Any],
            known: Iterable[str]) -> dict[str, str]:
    """Return, by name, why each of the `known` parameters did not get its last file's value.

    `overrides` are the values the ROS parser handed the node. It dropped a later
    file's value when it handed over an earlier file's instead (a changed type).
    """
    reasons = {}
    for name in known:
        if len(files.get(name, ())) < 2 or name not in overrides:
            continue
        *earlier, (value, path) = files[name]
        kept = overrides[name]
        if _plain(kept) != _plain(value) and any(_plain(kept) == _plain(v) for v, _ in earlier):
            reasons[name] = (f'{name}: {path} sets {_yaml(value)}, but the ROS parser kept '
                             f'{_yaml(kept)} from an earlier file: a later file cannot change a '
                             f"parameter's type (write {_kind(kept)}, as the earlier file does)")
    return reasons


def _yaml(value: Any) -> str:
    """Return a value as a params file writes it."""
    text = yaml.safe_dump(_plain(value) if value is not None else None,
                          default_flow_style=True, width=1000)
    return text.removesuffix('\n').removesuffix('\n...')


_KINDS = {bool: 'true or false', int: 'an integer', float: 'a double, with a decimal point',
          str: 'a string'}


def _kind(value: Any) -> str:
    """Return what a value of this parameter's type looks like in a params file."""
    return _KINDS.get(type(value), 'a list')
