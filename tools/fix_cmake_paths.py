"""Rewrite build-host include paths baked into the ROS wheels' CMake exports.

The PyPI ROS 2 wheels are built under /opt/python/cp311-cp311; their CMake
export files name that interpreter's include directories. Point them at the
include directories of the interpreter running this script.
"""

import pathlib
import sys
import sysconfig

import numpy

BUILD_HOST = '/opt/python/cp311-cp311'
REPLACEMENTS = (
    (f'{BUILD_HOST}/lib/python3.11/site-packages/numpy/_core/include', numpy.get_include()),
    (f'{BUILD_HOST}/include/python3.11', sysconfig.get_paths()['include']),
)


def main() -> int:
    share = pathlib.Path(sys.prefix) / 'share'
    rewritten = 0
    for path in share.rglob('*.cmake'):
        text = path.read_text()
        if BUILD_HOST not in text:
            continue
        for old, new in REPLACEMENTS:
            text = text.replace(old, new)
        path.write_text(text)
        rewritten += 1
    print(f'fix_cmake_paths: rewrote {rewritten} CMake export files under {share}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
