"""The command line of the package's node executables: `-h/--help` before `--ros-args`.

Pure Python (no rclpy): each executable's main removes its ROS arguments with
`ros.spin.own_arguments` (rclpy's remove_ros_args), as working_memory_node's does, and hands
the rest here before it creates any ROS entity, so `--help` prints the usage and exits 0 and an
unknown option exits 2 with argparse's message, both without starting the node.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Iterable, Sequence

ROS_ARGUMENTS = (
    'ROS arguments follow --ros-args: -r FROM:=TO remaps a topic or service (-r __ns:=/NS '
    'and -r __node:=NAME move and rename the node), -p NAME:=VALUE sets a parameter, '
    '--params-file FILE loads parameters from a YAML file. README.md shows the nodes at work.')


class _Paragraphs(argparse.HelpFormatter):
    """Wrap the description and the epilog paragraph by paragraph (blank lines part them).

    Options and names stay whole: argparse's own wrapping would break `--params-file` at a hyphen.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return '\n\n'.join(
            textwrap.fill(' '.join(paragraph.split()), width, initial_indent=indent,
                          subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False)
            for paragraph in text.split('\n\n'))


def node_parser(prog: str, description: str, node_name: str,
                parameters: Iterable[str]) -> argparse.ArgumentParser:
    """Return the parser of a node executable's own options (those before --ros-args).

    Args:
        prog: the executable's name, as `ros2 run` knows it.
        description: one paragraph on what the node does and the topics it uses.
        node_name: the node's default name, for `ros2 param list` and `describe`.
        parameters: the names of the parameters the node declares.
    """
    parameter_help = (f'Parameters: {", ".join(parameters)}. On the running node, `ros2 param '
                      f'list /{node_name}` lists them and `ros2 param describe /{node_name} NAME` '
                      'explains one.')
    return argparse.ArgumentParser(
        prog=prog, usage='%(prog)s [-h] [--ros-args ROS_ARGUMENTS ...]', description=description,
        epilog=f'{parameter_help}\n\n{ROS_ARGUMENTS}', formatter_class=_Paragraphs)


def parse_node_options(prog: str, description: str, node_name: str, parameters: Iterable[str],
                       argv: Sequence[str]) -> argparse.Namespace:
    """Parse a node executable's command line `argv` (its name first, ROS arguments removed).

    `-h/--help` prints the usage (see `node_parser`) and exits 0; any other
    argument exits 2 with argparse's message.
    """
    return node_parser(prog, description, node_name, parameters).parse_args(argv[1:])
