"""wm-watch against a running working-memory node: read in a pseudo-terminal, as a person would.

The node runs in this process; wm-watch runs as its own process on a pseudo-terminal,
whose output goes through a terminal emulator (pyte) so the test reads the screen a
person would see: items with flags, missing items with reasons, the capacity gauge,
the digest, the latest evictions. Ctrl-C ends it.
"""

import fcntl
import itertools
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from working_memory.core.items import BoardEntry
from working_memory.ros.conversions import board_update_msg

pyte = pytest.importorskip('pyte', reason='pyte reads the pseudo-terminal screen')

COLUMNS, LINES = 150, 50
SPIN_LIMIT_S = 30.0  # bounds a hung test; never a timing assertion


def watch_command(*args):
    """Return the wm-watch command line: the installed console script, else the module."""
    script = shutil.which('wm-watch')
    return [script, *args] if script else [sys.executable, '-P', '-m',
                                           'working_memory.tools.watch_node', *args]


def controlling_terminal():
    """In the child: a session of its own whose controlling terminal is the pty (Ctrl-C works)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A program on a pseudo-terminal of COLUMNS x LINES, its screen read through pyte."""

    def __init__(self, argv):
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.ByteStream(self.screen)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', LINES, COLUMNS, 0, 0))
        env = dict(os.environ, TERM='xterm-256color', COLUMNS=str(COLUMNS), LINES=str(LINES))
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                        preexec_fn=controlling_terminal)
        os.close(slave)
        self.master = master

    def read(self):
        """Feed whatever the program wrote so far to the emulator."""
        while select.select([self.master], [], [], 0)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the program closed the terminal
                return
            if not data:
                return
            self.stream.feed(data)

    def text(self):
        """Return the screen as one string, a line per row."""
        return '\n'.join(self.screen.display)

    def type(self, keys: bytes):
        r"""Type `keys` (b'\x03' is Ctrl-C)."""
        os.write(self.master, keys)

    def close(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self.master)


def spin_while(executor, predicate, on_spin=lambda: None, timeout=SPIN_LIMIT_S):
    """Spin the node until `predicate()` holds; return whether it did."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        on_spin()
        executor.spin_once(timeout_sec=0.02)
    return True


FEEDS = itertools.count()


def feed_board(node, probe):
    """Goal, pose, battery and low-value readings: over a capacity of 4 the readings go.

    Each feed adds a new reading: eviction is an event, so only new information that
    competes for room (a fresher reading of the same importance) evicts again.
    """
    feed = next(FEEDS)
    now = node.get_clock().now().nanoseconds * 1e-9
    entries = [BoardEntry('goal:deliver', {'x': 17, 'y': 3}, 0.0, 1.0),
               BoardEntry('pose', {'x': 2, 'y': 6, 'yaw': 0}, 0.0, None),
               BoardEntry('battery', {'level': 0.8}, 0.0, 0.3)]
    entries += [BoardEntry(f'reading:{n}', {'r': n}, 0.0, 0.1) for n in range(feed, feed + 6)]
    probe.board.publish(board_update_msg(entries, now))


@pytest.fixture
def watched(start_memory, executor, namespace):
    """Start a node with a goal, a pose, a battery and evicted readings; return its watch args."""
    # No resync: the screen shows NEVER_SEEN at once (test_restart.py shows RESYNCING).
    node, probe = start_memory({'capacity': 4, 'diagnostics_period_s': 0.2,
                                'resync_timeout_s': 0.0})
    probe.wait_matched(probe.board)
    feed_board(node, probe)
    frame = probe.wait_frame(lambda f: any(i.key == 'battery' for p in f.packs for i in p.items))
    assert frame is not None
    return node, probe, ['--namespace', f'{namespace}/working_memory']


def test_watch_shows_items_missing_capacity_digest_and_evictions_live(watched, executor):
    node, probe, args = watched
    terminal = Terminal(watch_command(*args))
    try:
        def shows(*texts):
            def check():
                terminal.read()
                return all(text in terminal.text() for text in texts)
            return check
        # Keep the readings coming so evictions keep happening while the screen is up.
        assert spin_while(executor, shows('planner', 'executor', 'capacity [', '/4', 'CAPACITY'),
                          on_spin=lambda: feed_board(node, probe)), terminal.text()
        screen = terminal.text()
        # The latest evictions, newest first: low-value readings, forgotten for capacity.
        evictions = screen[screen.index('latest evictions'):]
        assert 'reading:' in evictions and '0.10' in evictions
        # Items with importance and the exempt flag; the executor's missing item with its reason.
        assert 'goal:deliver' in screen and 'exempt' in screen and '1.00' in screen
        assert 'action:current NEVER_SEEN' in screen
        assert 'map NEVER_SEEN' in screen
        # The digests shown are the node's own for the tick shown: the planner pack's, as the
        # Assemble service gives it, and the frame's in the header.
        tick = int(re.search(r'tick (\d+) ', screen).group(1))
        assert probe.assemble('planner', tick).pack.digest[:12] in screen, screen
        assert re.search(r'digest [0-9a-f]{12} ', screen), screen
        assert 'ticks/s' in screen
        terminal.type(b'\x03')
        assert spin_while(executor, lambda: terminal.process.poll() is not None), terminal.text()
        assert terminal.process.returncode == 0
    finally:
        terminal.close()


def test_watch_one_cabin_shows_only_that_cabin(watched, executor):
    _, _, args = watched
    terminal = Terminal(watch_command(*args, '--cabin', 'executor'))
    try:
        def shows():
            terminal.read()
            return 'executor' in terminal.text() and 'action:current' in terminal.text()
        assert spin_while(executor, shows), terminal.text()
        assert 'planner' not in terminal.text()
    finally:
        terminal.close()


def run_to_end(executor, argv):
    """Run a command while the node spins; return (exit code, stdout, stderr)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, COLUMNS='160'))
    assert spin_while(executor, lambda: process.poll() is not None)
    out, err = process.communicate()
    return process.returncode, out, err


def test_watch_once_prints_one_pack_and_exits(watched, executor):
    _, _, args = watched
    code, out, err = run_to_end(executor, watch_command(*args, '--once', '--cabin', 'planner'))
    assert code == 0, err
    assert 'planner' in out and 'goal:deliver' in out and 'battery' in out
    assert 'map NEVER_SEEN' in out
    assert 'executor' not in out
    assert '\x1b[' not in out  # no escape codes when stdout is not a terminal


def test_watch_once_with_an_unknown_cabin_names_the_valid_ones(watched, executor):
    _, _, args = watched
    code, out, err = run_to_end(executor, watch_command(*args, '--once', '--cabin', 'pilot'))
    assert code == 1 and out == ''
    assert "cabin 'pilot'" in err and 'planner, executor' in err


def test_watch_once_without_a_node_says_what_it_waited_for(executor, namespace):
    code, _, err = run_to_end(executor, watch_command('--namespace', f'{namespace}/nobody',
                                                      '--once', '--timeout', '1'))
    assert code == 1
    assert f'no frame on {namespace}/nobody/frame within 1 s' in err
