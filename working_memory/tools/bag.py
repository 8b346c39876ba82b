"""Write and read rosbag2 bags of working-memory topics with `rosbags` (no rclpy needed).

Writing takes CDR bytes (from `rclpy.serialization.serialize_message` or a raw
subscription), so the recorder node and an in-process demo share one writer.
Each topic is registered with its ROS type name, the full message definition and
its RIHS01 type hash, so `ros2 bag info/play` and rosbags read the bag.
Reading deserializes with a rosbags typestore built from the definitions the bag
itself carries (falling back to this package's .msg files and the Kilted types).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from rosbags.interfaces import (MessageDefinitionFormat, Qos, QosDurability,
                                QosHistory, QosLiveliness, QosReliability, QosTime)
from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer, WriterError
from rosbags.serde import SerdeError
from rosbags.typesys import (Stores, TypesysError, get_types_from_idl, get_types_from_msg,
                             get_typestore)
from rosbags.typesys.store import Typestore

from working_memory.ros.typestore import register_installed, unsigned_bytes

PACKAGE = 'working_memory'
FRAME_TYPE = 'working_memory/msg/ContextFrame'
EVICTION_BATCH_TYPE = 'working_memory/msg/EvictionBatch'
# Bags recorded before evictions were published per tick hold one Eviction per message.
EVICTION_TYPE = 'working_memory/msg/Eviction'
DIAGNOSTICS_TYPE = 'diagnostic_msgs/msg/DiagnosticArray'
STORAGES = ('mcap', 'sqlite3')


class BagError(Exception):
    """A bag cannot be created, written or read; the message names the bag and the reason."""


def msg_dir() -> Path:
    """Return the directory of this package's .msg files.

    In order: the ROS install (ament index), a plain `pip install` (setup.py puts them in
    share/working_memory/msg as data files), the source tree.
    """
    candidates = []
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:  # a plain `pip install` without ROS
        pass
    else:
        try:
            candidates.append(Path(get_package_share_directory(PACKAGE)) / 'msg')
        except PackageNotFoundError:
            pass
    beside = Path(__file__).resolve().parents[2]
    # pip's file list (a venv or --user install), `pip install --target` (beside the package).
    candidates += [_pip_share() / 'msg', beside / 'share' / PACKAGE / 'msg']
    source = beside / 'msg'
    candidates.append(source)
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob('*.msg')):
            return candidate
    raise BagError(f'cannot find the {PACKAGE} .msg files: package not in the ament index, '
                   f'not pip-installed with its data files and no source tree at {source}')


def share_dir() -> Path:
    """Return share/working_memory (config, msg) of the msg files found by `msg_dir`."""
    return msg_dir().parent


def _pip_share() -> Path:
    """Return share/working_memory of a pip install (data files), or a path that does not exist."""
    try:
        files = metadata.files(PACKAGE) or ()
    except metadata.PackageNotFoundError:
        return Path('/nonexistent')
    for file in files:
        parts = file.parts
        if 'share' in parts and parts[-2:-1] == ('msg',) and file.suffix == '.msg':
            return Path(file.locate()).resolve().parent.parent
    return Path('/nonexistent')


def package_types() -> dict:
    """Return the rosbags type definitions of this package's messages, from the .msg files."""
    types: dict = {}
    for path in sorted(msg_dir().glob('*.msg')):
        types.update(get_types_from_msg(path.read_text(), f'{PACKAGE}/msg/{path.stem}'))
    return types


def full_typestore() -> Typestore:
    """Return a typestore with the ROS 2 Kilted types plus this package's messages."""
    store = get_typestore(Stores.ROS2_KILTED)
    store.register(package_types())
    return store


def register_from_share(store: Typestore, msgtype: str) -> None:
    """Register `msgtype` and every type it uses from the .msg files of the installed packages.

    For a recorded topic whose type neither the Kilted store nor this package defines;
    BagError when a definition cannot be found (the ament index needs ROS installed).
    """
    try:
        register_installed(store, msgtype)
    except LookupError as err:
        raise BagError(str(err)) from None


def adapted_qos(offers: Sequence[Qos]) -> tuple[QosReliability, QosDurability]:
    """Return the (reliability, durability) a recorder requests to match every offer.

    As `ros2 bag record` adapts to the publishers: reliable only when every publisher
    is reliable, transient local only when every one is (a latched map keeps its
    history); otherwise best effort or volatile, which match any offer.
    """
    reliable = bool(offers) and all(o.reliability == QosReliability.RELIABLE for o in offers)
    latched = bool(offers) and all(o.durability == QosDurability.TRANSIENT_LOCAL for o in offers)
    return (QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
            QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE)


def offered_qos(latched: bool) -> Qos:
    """Return the rosbag2 QoS record of a reliable topic, transient local when `latched`.

    `ros2 bag play` republishes with it, so a replayed ~/frame stays latched.
    """
    unset = QosTime(0, 0)
    return Qos(history=QosHistory.KEEP_LAST, depth=1 if latched else 100,
               reliability=QosReliability.RELIABLE,
               durability=QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
               deadline=unset, lifespan=unset, liveliness=QosLiveliness.AUTOMATIC,
               liveliness_lease_duration=unset, avoid_ros_namespace_conventions=False)


class BagWriter:
    """Write CDR-serialized messages into a new rosbag2 bag; use as a context manager or close().

    A bag is only readable after close(): it writes the index and metadata.yaml.
    """

    def __init__(self, path: str | Path, storage: str = 'mcap') -> None:
        """Create the bag directory `path` (must not exist); `storage` is 'mcap' or 'sqlite3'."""
        if storage not in STORAGES:
            raise ValueError(f'storage: must be one of {", ".join(STORAGES)}, got {storage!r}')
        self.path = Path(path)
        self._typestore = full_typestore()
        try:
            self._writer: Writer | None = Writer(self.path, version=Writer.VERSION_LATEST,
                                                 storage_plugin=StoragePlugin[storage.upper()])
            self._writer.open()
        except (WriterError, OSError) as err:
            raise BagError(f'cannot create bag {self.path}: {err}') from None
        self._connections: dict[str, object] = {}
        self.counts: dict[str, int] = {}

    def add_topic(self, topic: str, msgtype: str, *, latched: bool = False,
                  offers: Sequence[Qos] | None = None) -> None:
        """Register `topic` with ROS type `msgtype` (e.g. 'working_memory/msg/ContextFrame').

        `offers` are the QoS profiles its publishers offer (the bag's metadata states
        them, and `ros2 bag play` republishes with them); without them a reliable
        profile, transient local when `latched`.
        """
        writer = self._open_writer()
        if topic in self._connections:
            raise BagError(f'{self.path}: topic {topic} is already registered')
        if msgtype not in self._typestore.fielddefs:
            try:
                register_from_share(self._typestore, msgtype)
            except BagError as err:
                raise BagError(f'{self.path}: topic {topic}: {err}') from None
        msgdef, _ = self._typestore.generate_msgdef(msgtype, ros_version=2)
        self._connections[topic] = writer.add_connection(
            topic, msgtype, msgdef=msgdef, rihs01=self._typestore.hash_rihs01(msgtype),
            offered_qos_profiles=list(offers) if offers else [offered_qos(latched)])
        self.counts[topic] = 0

    def add_offer(self, topic: str, qos: Qos) -> None:
        """Add the QoS of a publisher that appeared later to `topic`'s metadata (on close)."""
        offers = self._connections[topic].ext.offered_qos_profiles
        if qos not in offers:
            offers.append(qos)

    def write(self, topic: str, msgtype: str, data: bytes, stamp_ns: int) -> None:
        """Append one CDR message received at `stamp_ns` [ns]; registers the topic on first use."""
        writer = self._open_writer()
        if topic not in self._connections:
            self.add_topic(topic, msgtype)
        connection = self._connections[topic]
        if connection.msgtype != msgtype:
            raise BagError(f'{self.path}: topic {topic} carries {connection.msgtype}, '
                           f'not {msgtype}')
        writer.write(connection, int(stamp_ns), bytes(data))
        self.counts[topic] += 1

    def set_custom_data(self, key: str, value: str) -> None:
        """Store `key: value` in the bag's metadata.yaml (custom_data), e.g. the run's setup."""
        self._open_writer().set_custom_data(key, value)

    @property
    def closed(self) -> bool:
        """Return True once the bag is finished."""
        return self._writer is None

    def close(self) -> None:
        """Finish the bag (index and metadata.yaml); later calls do nothing."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def _open_writer(self) -> Writer:
        if self._writer is None:
            raise BagError(f'bag {self.path} is closed')
        return self._writer

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# The recorder's side channel: who published each recorded message (msg/RecordedIds.msg).
IDS_TYPE = 'working_memory/msg/RecordedIds'
IDS_TOPIC_SUFFIX = '/_message_ids'   # hidden (a leading underscore): under the recorder's name
# The bag metadata (custom_data) key of {publisher gid (hex): its node}, as the recorder's graph
# showed each publisher of a recorded topic: the writer a replay names for owned keys.
WRITERS_KEY = 'working_memory.writers'


@dataclass(frozen=True, slots=True)
class IdBatch:
    """The fields of one RecordedIds: a topic's messages from `first_index` on, in order."""

    topic: str
    first_index: int
    publishers: tuple[str, ...]    # hex gids
    publisher: tuple[int, ...]     # per message, an index into publishers
    sequence: tuple[int, ...]      # per message, its publisher's number (0: none)


def receive_stamp(now_ns: int, wall_ns: int, received_wall_ns: int | None,
                  floor_ns: int) -> int:
    """Return when a message taken at `now_ns` (the recorder's clock) arrived, on that clock [ns].

    The middleware stamps its arrival on the wall clock (`received_wall_ns`, rclpy's
    message info; None: unknown); it waited `wall_ns - received_wall_ns` to be taken. Never
    before `floor_ns` (the topic's previous stamp: a topic's messages keep the order
    written, which its message ids follow), never after `now_ns`.
    """
    waited = 0 if not received_wall_ns else max(0, wall_ns - received_wall_ns)
    return min(now_ns, max(floor_ns, now_ns - waited))


class MessageIds:
    """Note each written message's publisher and number; hand them out in batches per topic."""

    def __init__(self) -> None:
        self._flushed: dict[str, int] = {}
        self._pending: dict[str, list[tuple[bytes, int]]] = {}

    def add(self, topic: str, publisher: bytes, sequence: int | None) -> None:
        """Note the next message written on `topic`: its publisher's gid and number (None: 0)."""
        self._pending.setdefault(topic, []).append((publisher, sequence or 0))

    def flush(self) -> list[IdBatch]:
        """Return a batch per topic of the messages noted since the last flush."""
        batches = []
        for topic, noted in self._pending.items():
            index: dict[bytes, int] = {}
            publisher = tuple(index.setdefault(gid, len(index)) for gid, _ in noted)
            first = self._flushed.get(topic, 0)
            batches.append(IdBatch(topic, first, tuple(gid.hex() for gid in index), publisher,
                                   tuple(sequence for _, sequence in noted)))
            self._flushed[topic] = first + len(noted)
        self._pending = {}
        return batches


@dataclass(frozen=True, slots=True)
class BagMessage:
    """One deserialized message: `stamp_ns` is the bag's receive time [ns]; `data` its CDR."""

    topic: str
    msgtype: str
    stamp_ns: int
    msg: object
    data: bytes = b''


class BagReader:
    """Read a rosbag2 bag (its directory or a file in it) with rosbags; a context manager."""

    def __init__(self, path: str | Path) -> None:
        """Open the bag at `path`; BagError when there is none or it is unreadable."""
        path = Path(path)
        if path.is_file() and (path.parent / 'metadata.yaml').is_file():
            path = path.parent
        if not path.exists():
            raise BagError(f'no bag at {path}')
        if not (path / 'metadata.yaml').is_file():
            raise BagError(f'{path} is not a rosbag2 bag (no metadata.yaml; '
                           'was the recorder stopped cleanly?)')
        self.path = path
        self._reader = Reader(path)
        try:
            self._reader.open()
        except ReaderError as err:
            raise BagError(f'cannot read bag {path}: {err}') from None
        self._typestore = get_typestore(Stores.EMPTY)
        self._registered: set[str] = set()
        self.undecodable: dict[str, int] = {}

    @property
    def topics(self) -> dict[str, str]:
        """Return {topic: message type} of every topic in the bag."""
        return {c.topic: c.msgtype for c in self._reader.connections}

    @property
    def custom_data(self) -> dict[str, str]:
        """Return the custom_data of the bag's metadata.yaml ({} when there is none)."""
        # rosbags keeps it on the storage reader's metadata (bag format version 6 and later).
        metadata = getattr(self._reader.storage, 'metadata', None)
        return dict(getattr(metadata, 'custom', None) or {})

    def messages(self, topics: Iterable[str], skip_undecodable: bool = False
                 ) -> Iterator[BagMessage]:
        """Yield the messages of `topics` in receive-time order, deserialized.

        A message rosbags cannot decode raises BagError, or with `skip_undecodable` is
        counted in `undecodable` ({topic: count}) and skipped.
        """
        connections = self.register(topics)
        for connection, stamp_ns, data in self._reader.messages(connections=connections):
            try:
                msg = self._typestore.deserialize_cdr(data, connection.msgtype)
            except SerdeError as err:
                if not skip_undecodable:
                    raise BagError(f'{self.path}: {connection.topic}: message at '
                                   f'{stamp_ns} ns: {err}') from None
                self.undecodable[connection.topic] = self.undecodable.get(
                    connection.topic, 0) + 1
                continue
            yield BagMessage(connection.topic, connection.msgtype, stamp_ns, msg, data)

    def decoder(self, msgtype: str) -> Callable[[bytes], object]:
        """Return a function that deserializes a registered `msgtype`'s CDR bytes.

        It keeps the bag's type definitions, not the bag: it works after `close()`.
        """
        return functools.partial(self._typestore.deserialize_cdr, typename=msgtype)

    def register(self, topics: Iterable[str]) -> list:
        """Register the message types of `topics` for decoding; return their connections."""
        wanted = set(topics)
        connections = [c for c in self._reader.connections if c.topic in wanted]
        for connection in connections:
            if connection.msgtype not in self._registered:
                self._register(connection)
        return connections

    def fields(self, msgtype: str) -> dict[str, tuple]:
        """Return {field name: rosbags field type} of a registered `msgtype`; {} when unknown.

        A field type is (Nodetype, detail): BASE (type, bound), NAME the message type,
        ARRAY and SEQUENCE ((element Nodetype, element detail), length).
        """
        _, fields = self._typestore.fielddefs.get(msgtype, ((), ()))
        return dict(fields)

    def constant_names(self, msgtype: str) -> dict[int, str]:
        """Return {value: name} of the constants of a registered `msgtype`; {} when unknown."""
        consts, _ = self._typestore.fielddefs.get(msgtype, ((), ()))
        return {value: name for name, _, value in consts}

    def _register(self, connection) -> None:
        try:
            if connection.msgdef.format == MessageDefinitionFormat.IDL:
                types = get_types_from_idl(connection.msgdef.data)
            elif connection.msgdef.data:
                types = get_types_from_msg(connection.msgdef.data, connection.msgtype)
            else:  # bags of older ROS distributions carry no definitions
                types = dict(full_typestore().fielddefs)
            self._typestore.register(unsigned_bytes(types))
        except (TypesysError, BagError) as err:
            raise BagError(f'{self.path}: cannot decode topic {connection.topic} '
                           f'({connection.msgtype}): {err}') from None
        self._registered.add(connection.msgtype)

    def close(self) -> None:
        """Close the bag files."""
        self._reader.close()

    def __enter__(self) -> BagReader:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
