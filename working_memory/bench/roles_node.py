"""The processes of the ROS-level benchmark: load, probe, plain baselines, service client, robot.

Run one role per process (`python -m working_memory.bench.roles_node ROLE ...`); the
orchestrator (`bench/ros_bench.py`) starts them on loopback in a domain of its own and
reads the JSON each writes. The plain baselines are what raw rclpy costs for the same
traffic: a node that subscribes the same inputs and publishes the same serialized
ContextFrame per tick, and a service that returns a captured Assemble response.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import struct
import sys
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import OccupancyGrid
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message

from working_memory.bench import sources
from working_memory.bench.ros_bench import SOURCE_RATES
from working_memory.client import BoardWriter, EventLogger
from working_memory.core.items import BoardEntry
from working_memory.core.windows import WINDOWS_KEPT
from working_memory.msg import BoardUpdate, ContextFrame, LogEvent, MapWindow
from working_memory.ros import qos
from working_memory.ros.conversions import board_update_msg, log_event_msg, time_from_seconds
from working_memory.srv import Assemble

FRAME_TOPIC = '/working_memory/frame'
CAPTURE_SETTLE_S = 3.0  # [s]
FILL_CHUNK = 1000       # entries per update when a load fills the board first
# A CDR-serialized message starts with a 4-byte encapsulation header; ContextFrame's
# first field is its std_msgs/Header, whose stamp (int32 sec, uint32 nanosec) follows.
_STAMP = struct.Struct('<iI')


def _stamp_of(serialized: bytes) -> float:
    sec, nanosec = _STAMP.unpack_from(serialized, 4)
    return sec + nanosec * 1e-9


def _write(path: str, result: dict) -> None:
    with open(path, 'w', encoding='utf-8') as stream:
        json.dump(result, stream)


def _spin_until(node: Node, done, timeout_s: float) -> None:
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    executor.remove_node(node)


def _spin_for(node: Node, seconds: float) -> None:
    _spin_until(node, lambda: False, seconds)


def _mission_entries(now: float) -> list[BoardEntry]:
    return [
        BoardEntry('goal:deliver', {'target': 'dock', 'x': 17.0, 'y': 3.0,
                                    'tags': ['delivery', 'navigation', 'safety']},
                   now, importance=1.0, tags=('delivery',)),
        BoardEntry('safety:zone/high_voltage',
                   {'polygon': [[12.0, 3.5], [15.0, 3.5], [15.0, 5.5], [12.0, 5.5]]},
                   now, importance=1.0, tags=('safety', 'delivery')),
        BoardEntry('battery', {'level': 0.9}, now, importance=0.2, tags=('power',)),
        BoardEntry('action:current', {'name': 'drive', 'strategy': 'follow', 'attempt': 1},
                   now, importance=0.7, tags=('delivery',)),
    ]


class Load(Node):
    """Publish the map once (latched) and board updates at `rate` [Hz].

    Each update changes `per_msg` keys of `keys` (`prefix<i>`, cycling); with `fill`
    every key is published once first, in updates of FILL_CHUNK entries. With `new_keys`
    every update sets keys never seen before (`prefix<keys>`, then on; none is ever
    removed), as per-object state does; entries live `ttl` [s]. Nothing goes
    out on `board` before a subscriber matched, so every update sent can be accounted
    for (taken or counted lost) by the subscriber.
    """

    def __init__(self, rate: float, keys: int, map_side: int, resolution: float,
                 prefix: str = 'sensor:', per_msg: int = 1, fill: bool = False,
                 new_keys: bool = False, ttl: float = 1.0, per_msg_max: int = 0):
        super().__init__('bench_load')
        self._board = self.create_publisher(BoardUpdate, 'board', qos.input_qos())
        self._map = self.create_publisher(OccupancyGrid, 'map', qos.map_qos())
        self._keys, self._sent, self._rate = max(1, keys), 0, rate
        self._prefix, self._per_msg, self._index = prefix, max(1, per_msg), 0
        self._fill = fill
        self._new_keys, self._ttl = new_keys, ttl
        # With per_msg_max, each update sets per_msg to per_msg_max keys (seeded draws).
        self._per_msg_max, self._draws = per_msg_max, random.Random(7)
        if new_keys:
            self._index = self._keys if fill else 0
        self.messages = 0  # every board update sent (fill, mission and changes)
        grid = OccupancyGrid()
        grid.header.frame_id = 'map'
        grid.info.resolution = resolution
        grid.info.width = grid.info.height = map_side
        grid.info.origin.orientation.w = 1.0
        cells = np.zeros((map_side, map_side), dtype=np.int8)
        cells[:, ::max(1, map_side // 20)] = 100  # walls every 5 % of the side
        grid.data = cells.tobytes()
        self._map.publish(grid)
        # Board updates are volatile: the mission and pose are re-published every second so
        # a subscriber that matches late still has them (as a real board owner does).
        self.create_timer(1.0, self._publish_mission)
        self._started = time.monotonic()
        if rate > 0:
            self.create_timer(1.0 / rate, self._publish_changes)

    def matched(self) -> bool:
        """Say whether a board subscriber matched; the first time, fill the board if asked."""
        if self._board.get_subscription_count() == 0:
            return False
        if self._fill:
            self._fill = False
            for start in range(0, self._keys, FILL_CHUNK):
                now = time.time()
                self._send([self._entry(i, now) for i in
                            range(start, min(self._keys, start + FILL_CHUNK))], now)
            self._publish_mission()
        return True

    def _send(self, entries: list[BoardEntry], now: float) -> None:
        self._board.publish(board_update_msg(entries, now))
        self.messages += 1

    def _publish_mission(self) -> None:
        if not self.matched():
            return
        now = time.time()
        pose = BoardEntry('pose', {'x': 2.0, 'y': 6.0, 'yaw': 0.0}, now, importance=0.6,
                          tags=('navigation',))
        self._send([*_mission_entries(now), pose], now)

    def flood(self, seconds: float) -> None:
        """Publish as fast as this process can for `seconds` [s]."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._publish_one()
            if self._sent % 1000 == 0:
                self._publish_mission()

    def _entry(self, index: int, now: float) -> BoardEntry:
        return BoardEntry(f'{self._prefix}{index}', {'reading': math.sin(self._sent + index)},
                          now, importance=0.05, ttl=self._ttl, tags=('sensor',))

    def _publish_changes(self) -> None:
        if self.matched():
            self._publish_one()

    def _publish_one(self) -> None:
        now = time.time()
        entries = []
        count = self._per_msg if self._per_msg_max <= self._per_msg else self._draws.randint(
            self._per_msg, self._per_msg_max)
        for _ in range(count):
            entries.append(self._entry(
                self._index if self._new_keys else self._index % self._keys, now))
            self._index += 1
        self._send(entries, now)
        self._sent += 1

    def result(self) -> dict:
        """Return what was sent and the achieved rate."""
        elapsed = time.monotonic() - self._started
        return {'sent': self._sent, 'elapsed_s': elapsed, 'messages': self.messages,
                'keys_set': self._index}


class Robot(Node):
    """Publish a robot's six source topics at their rates (bench/sources.py), typed or not.

    `as_board`: the same board entries and events, converted here by the same mappings,
    as BoardUpdate and LogEvent instead (what a converter node would publish).
    """

    def __init__(self, sources_file: str, as_board: bool):
        super().__init__('bench_robot')
        maps = sources.source_maps(pathlib.Path(sources_file))
        self._as_board = as_board
        self._board = self.create_publisher(BoardUpdate, 'board', qos.input_qos())
        self._log = self.create_publisher(LogEvent, 'log', qos.stream_qos())
        self.sent = {name: 0 for name in maps}
        for name, source in maps.items():
            spec = source.spec
            latched = spec.qos.durability == 'transient_local'
            publisher = None if as_board else self.create_publisher(
                type(sources.robot_message(name, 0.0, 0)), spec.topic,
                qos.latched_qos() if latched else 10)
            self.create_timer(1.0 / SOURCE_RATES[name],
                              lambda n=name, m=source, p=publisher: self._publish(n, m, p))

    def _publish(self, name: str, source, publisher) -> None:
        now = time.time()
        msg = sources.robot_message(name, now, self.sent[name])
        self.sent[name] += 1
        if publisher is not None:
            publisher.publish(msg)
            return
        conversion = source.convert(msg, now)
        if conversion.entries or conversion.removed_keys:
            self._board.publish(board_update_msg(conversion.entries, now,
                                                 conversion.removed_keys))
        for event in conversion.events:
            self._log.publish(log_event_msg(event))


class Probe(Node):
    """Take frames serialized (no decoding cost) and record latency, interval and size.

    It also records the node's `board.*` input counters from /diagnostics, and with
    `check_hz` > 0 decodes the newest frame that often and records the planner pack's
    missing keys (which of them a flood pushed out).
    """

    def __init__(self, topic: str, check_hz: float = 0.0, windows: tuple[str, ...] = ()):
        super().__init__('bench_probe')
        self.latency_ms: list[float] = []
        self.receipt: list[float] = []
        self.sizes: list[int] = []
        # (receipt time [s], bytes) of each cabin's window after its first (latched) one.
        self.window_sizes: list[tuple[float, int]] = []
        self._windows_seen: set[str] = set()
        self.board_received: list[tuple[float, int]] = []  # (time [s], node's board.received)
        self.board: list[tuple[float, dict[str, str]]] = []  # (time [s], board.* values)
        self.planner_missing: list[tuple[float, int, list[str]]] = []  # (time, tick, keys)
        self._latest: bytes | None = None
        self.create_subscription(ContextFrame, topic, self._on_frame, qos.frame_qos(), raw=True)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics,
                                 qos.diagnostics_qos())
        if check_hz > 0:
            self.create_timer(1.0 / check_hz, self._check_planner)
        for cabin in windows:
            self.create_subscription(
                MapWindow, f'{topic.rsplit("/", 1)[0]}/{cabin}/window',
                lambda data, cabin=cabin: self._on_window(cabin, data),
                qos.latched_qos(WINDOWS_KEPT), raw=True)

    def _on_window(self, cabin: str, serialized: bytes) -> None:
        if cabin in self._windows_seen:
            self.window_sizes.append((time.time(), len(serialized)))
        self._windows_seen.add(cabin)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = {value.key: value.value for value in status.values
                      if value.key.startswith('board.')}
            if 'board.received' in values:
                self.board_received.append((time.monotonic(), int(values['board.received'])))
                self.board.append((time.time(), values))

    def _on_frame(self, serialized: bytes) -> None:
        now = time.time()
        self.latency_ms.append((now - _stamp_of(serialized)) * 1e3)
        self.receipt.append(now)
        self.sizes.append(len(serialized))
        self._latest = serialized

    def _check_planner(self) -> None:
        if self._latest is None:
            return
        frame = deserialize_message(self._latest, ContextFrame)
        for pack in frame.packs:
            if pack.cabin == 'planner':
                self.planner_missing.append((time.time(), frame.tick,
                                             [missing.key for missing in pack.missing]))

    def result(self) -> dict:
        """Return the recorded samples (the first frame, a latched one, is dropped)."""
        return {'latency_ms': self.latency_ms[1:], 'receipt': self.receipt[1:],
                'sizes': self.sizes[1:], 'window_sizes': self.window_sizes,
                'board_received': self.board_received,
                'board': self.board, 'planner_missing': self.planner_missing}


class PlainFrames(Node):
    """A plain node: the same inputs subscribed (stored only), a same-size frame per tick."""

    def __init__(self, frame_file: str, tick_hz: float):
        super().__init__('working_memory_plain')
        with open(frame_file, 'rb') as stream:
            self._frame = deserialize_message(stream.read(), ContextFrame)
        self._latest: dict[str, object] = {}
        self.board_received = 0
        self.board_times: list[float] = []  # receipt times [s] of board updates
        self.tick_times: list[float] = []   # publish times [s] of frames
        self.create_subscription(BoardUpdate, 'board', self._on_board, qos.input_qos())
        self.create_subscription(LogEvent, 'log', lambda m: self._latest.update(log=m),
                                 qos.input_qos())
        self.create_subscription(OccupancyGrid, 'map', lambda m: self._latest.update(map=m),
                                 qos.map_qos())
        self._publisher = self.create_publisher(ContextFrame, FRAME_TOPIC, qos.frame_qos())
        self.create_timer(1.0 / tick_hz, self._on_tick)

    def _on_board(self, msg: BoardUpdate) -> None:
        self._latest['board'] = msg
        self.board_received += 1
        self.board_times.append(time.time())

    def _on_tick(self) -> None:
        self.tick_times.append(time.time())
        self._frame.tick += 1
        self._frame.header.stamp = time_from_seconds(time.time())
        self._publisher.publish(self._frame)


class PlainAssemble(Node):
    """A plain Assemble service returning a captured response."""

    def __init__(self, response_file: str, service: str):
        super().__init__('bench_plain_assemble')
        with open(response_file, 'rb') as stream:
            self._response = deserialize_message(stream.read(), Assemble.Response)
        self.create_service(Assemble, service, lambda request, response: self._response)


class Writers(Node):
    """A board writer holding `keys` keys and an event logger holding `events` recent events.

    Both follow the restart contract (client.py): a node that starts later asks them, and
    they answer with all of it.
    """

    def __init__(self, keys: int, events: int, window_s: float):
        super().__init__('bench_writers')
        self.board = BoardWriter(self, qos_profile=qos.input_qos())
        self.log = EventLogger(self, source='bench')
        now = self.get_clock().now().nanoseconds * 1e-9
        for start in range(0, keys, FILL_CHUNK):
            self.board.put([BoardEntry(f'item:{index}', {'value': index}, now, 0.5)
                            for index in range(start, min(keys, start + FILL_CHUNK))], stamp=now)
        # Spread over most of the window: all still in it when the node asks.
        step = 0.8 * window_s / max(events, 1)
        for index in range(events):
            self.log.log('OBSERVATION', f'reading:{index % 50}', {'n': index},
                         stamp=now - window_s * 0.8 + index * step)


class RestartProbe(Node):
    """Record, per frame of a node that starts after it: when, its start, what its pack holds."""

    def __init__(self, topic: str, cabin: str):
        super().__init__('bench_restart_probe')
        self.frames: list[tuple[float, float, bool, int, int]] = []
        self._cabin = cabin
        self.create_subscription(ContextFrame, topic, self._on_frame, qos.frame_qos())

    def _on_frame(self, msg: ContextFrame) -> None:
        pack = next((pack for pack in msg.packs if pack.cabin == self._cabin), None)
        self.frames.append((time.time(), msg.started.sec + msg.started.nanosec * 1e-9,
                            msg.resyncing, 0 if pack is None else len(pack.items),
                            0 if pack is None else len(pack.recent_events)))


def complete(data: bytes, window: bool = True) -> bool:
    """Return True when every pack of a serialized frame holds items and one has a window.

    Without `window` no window is waited for (a cabin that asks for no map has none).
    """
    frame = deserialize_message(data, ContextFrame)
    return (bool(frame.packs) and all(pack.items for pack in frame.packs)
            and (not window or any(pack.map_window_digest or pack.nearby_map.info.width
                                   for pack in frame.packs)))


def capture(frame_file: str, response_prefix: str, service: str, cabins: list[str],
            timeout_s: float, window: bool = True) -> dict:
    """Save one frame and each cabin's Assemble response, serialized; return their sizes."""
    node = rclpy.create_node('bench_capture')
    frames: list[bytes] = []
    node.create_subscription(ContextFrame, FRAME_TOPIC, frames.append, qos.frame_qos(), raw=True)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + timeout_s
    while not frames and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    # The load re-publishes the mission every second: after a few seconds every cabin's
    # pack holds what the benchmark's manifests select; wait on until a frame's packs
    # all hold items and one names its map window (the pose and map have arrived), so
    # every run captures the same content and the baselines compare like with like.
    settled = time.monotonic() + CAPTURE_SETTLE_S
    while time.monotonic() < deadline and (time.monotonic() < settled
                                           or not frames or not complete(frames[-1], window)):
        executor.spin_once(timeout_sec=0.1)
    if not frames or not complete(frames[-1], window):
        raise RuntimeError(f'no complete frame on {FRAME_TOPIC} within {timeout_s} s')
    with open(frame_file, 'wb') as stream:
        stream.write(frames[-1])
    client = node.create_client(Assemble, service)
    if not client.wait_for_service(timeout_sec=timeout_s):
        raise RuntimeError(f'{service} not available')
    sizes = {'frame': len(frames[-1])}
    for cabin in cabins:
        future = client.call_async(Assemble.Request(cabin=cabin, tick=0))
        executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        response = future.result()
        if response is None or not response.success:
            raise RuntimeError(f'{service} {cabin}: {response and response.message}')
        data = serialize_message(response)
        with open(f'{response_prefix}{cabin}.cdr', 'wb') as stream:
            stream.write(data)
        sizes[cabin] = len(data)
    node.destroy_node()
    return sizes


def round_trips(services: list[str], cabin: str, calls: int, timeout_s: float) -> dict:
    """Call each of `services` `calls` times, in turns; return each one's round trips [ms].

    With two services (ours and a plain one answering the same response) the calls
    alternate and which goes first swaps every round, so both sides see the same machine
    at the same moments: a machine whose speed drifts between runs favours neither.
    """
    node = rclpy.create_node('bench_rtt')
    clients = {service: node.create_client(Assemble, service) for service in services}
    for service, client in clients.items():
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise RuntimeError(f'{service} not available')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    rtt: dict[str, list[float]] = {service: [] for service in services}
    for call in range(calls):
        order = services if call % 2 == 0 else services[::-1]
        for service in order:
            started = time.perf_counter()
            future = clients[service].call_async(Assemble.Request(cabin=cabin, tick=0))
            executor.spin_until_future_complete(future, timeout_sec=timeout_s)
            if future.result() is None:
                raise RuntimeError(f'{service}: no answer within {timeout_s} s')
            rtt[service].append((time.perf_counter() - started) * 1e3)
    node.destroy_node()
    warm_up = min(10, calls // 10)  # drop the warm-up calls
    return {'rtt_ms': {service: times[warm_up:] for service, times in rtt.items()}}


def main(argv: list[str] | None = None) -> int:
    """Run one role; write its result as JSON to --out."""
    parser = argparse.ArgumentParser(prog='python -m working_memory.bench.roles_node')
    parser.add_argument('role', choices=['load', 'flood', 'probe', 'plain', 'plain_assemble',
                                         'capture', 'rtt', 'writers', 'restart_probe', 'robot',
                                         'convert'])
    parser.add_argument('--out', required=True)
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--rate', type=float, default=1000.0)
    parser.add_argument('--keys', type=int, default=30)
    parser.add_argument('--prefix', default='sensor:', help='board key prefix of the load')
    parser.add_argument('--per-msg', type=int, default=1, help='changed keys per update')
    parser.add_argument('--per-msg-max', type=int, default=0,
                        help='load: each update sets --per-msg to this many keys (drawn)')
    parser.add_argument('--fill', action='store_true', help='publish every key once first')
    parser.add_argument('--new-keys', action='store_true',
                        help='load: every update sets keys never seen before (none removed)')
    parser.add_argument('--ttl', type=float, default=1.0, help='load: entries ttl [s]')
    parser.add_argument('--map-side', type=int, default=4000)
    parser.add_argument('--resolution', type=float, default=0.05)
    parser.add_argument('--tick-hz', type=float, default=100.0)
    parser.add_argument('--check-hz', type=float, default=0.0,
                        help="probe: decode the newest frame this often, record planner's missing")
    parser.add_argument('--frame-file', default='')
    parser.add_argument('--response-prefix', default='')
    parser.add_argument('--service', default='/working_memory/assemble')
    parser.add_argument('--baseline-service', default='',
                        help='rtt: also call this service, alternating with --service')
    parser.add_argument('--cabin', default='planner')
    parser.add_argument('--cabins', nargs='+', default=['planner', 'executor', 'monitor'])
    parser.add_argument('--no-window', action='store_true',
                        help='capture: take a frame without a map window (no cabin asks for one)')
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--events', type=int, default=0, help='writers: events kept')
    parser.add_argument('--window', type=float, default=60.0,
                        help='writers: the event window they fill [s]')
    parser.add_argument('--windows', nargs='*', default=[],
                        help="probe: also count these cabins' window topics (bytes)")
    parser.add_argument('--sources-file', default='',
                        help="robot, convert: the bench's sources file")
    parser.add_argument('--as-board', action='store_true',
                        help='robot: publish the converted entries and events instead')
    args = parser.parse_args(argv)
    rclpy.init()
    try:
        if args.role in ('load', 'flood'):
            node = Load(args.rate if args.role == 'load' else 0.0, args.keys, args.map_side,
                        args.resolution, args.prefix, args.per_msg, args.fill,
                        args.new_keys, args.ttl, args.per_msg_max)
            if args.role == 'flood':
                _spin_until(node, node.matched, 20.0)
                _spin_for(node, 0.5)
                started = time.time()
                node.flood(args.duration)
                result = {**node.result(), 'started': started, 'ended': time.time()}
            else:
                _spin_for(node, args.duration)
                result = node.result()
        elif args.role == 'probe':
            node = Probe(FRAME_TOPIC, args.check_hz, tuple(args.windows))
            _spin_until(node, lambda: bool(node.receipt), 20.0)
            _spin_for(node, args.duration)
            result = node.result()
        elif args.role == 'plain':
            node = PlainFrames(args.frame_file, args.tick_hz)
            _spin_for(node, args.duration)
            result = {'board_received': node.board_received, 'board_times': node.board_times,
                      'tick_times': node.tick_times}
        elif args.role == 'plain_assemble':
            node = PlainAssemble(args.response_prefix + args.cabin + '.cdr', args.service)
            _spin_for(node, args.duration)
            result = {}
        elif args.role == 'writers':
            node = Writers(args.keys, args.events, args.window)
            _spin_for(node, args.duration)
            result = {}
        elif args.role == 'restart_probe':
            node = RestartProbe(FRAME_TOPIC, args.cabin)
            _spin_for(node, args.duration)
            result = {'frames': node.frames}
        elif args.role == 'robot':
            node = Robot(args.sources_file, args.as_board)
            _spin_for(node, args.duration)
            result = {'sent': node.sent}
        elif args.role == 'convert':
            result = sources.conversion_costs(pathlib.Path(args.sources_file), args.calls)
        elif args.role == 'capture':
            result = capture(args.frame_file, args.response_prefix, args.service,
                             args.cabins, args.duration, not args.no_window)
        else:
            services = [args.service] + ([args.baseline_service] if args.baseline_service else [])
            result = round_trips(services, args.cabin, args.calls, args.duration)
        _write(args.out, result)
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
