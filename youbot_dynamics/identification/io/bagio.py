"""rosbag2 input/output of ``sensor_msgs/msg/JointState`` with the pure-Python ``rosbags`` library.

Writing (:class:`IncrementalBagWriter`): a rosbag2 folder (``metadata.yaml`` + one MCAP file,
rosbag2 metadata version 8, CDR) that is a complete, valid bag from its opening on and after every
:meth:`flush`, so a crash loses only what came after the last flush. ``rosbags`` writes MCAP chunks
and the summary (index, statistics, footer) only when the bag is closed; here each flush

1. writes the pending chunk at the end of the data section (overwriting the previous summary),
2. writes a fresh summary and footer behind it, truncates the file there and ``fsync``s it,
3. then replaces ``metadata.yaml`` (written aside, renamed),

by running ``rosbags``' own closing code on a file handle it is not allowed to close. A crash in
the middle of a flush (milliseconds per second) can leave an unreadable summary; the chunks
before it are intact. A flush that fails (a full disk: ``OSError``) puts the previous summary back
in place (its bytes, kept from the flush before: rewritten over blocks the file already had) and
closes the bag: it stays readable with what the previous flush had, and the failure is a
:class:`BagWriteError` naming the file (issue 35: "File end magic is invalid" after a full disk).
This relies on ``rosbags`` internals (``Writer.storage`` / ``metapath``,
``McapWriter.close_chunk`` / ``bio`` / ``chunk``), checked when the bag is opened; tested with
rosbags 0.11.

Reading (:func:`read_joint_states`): a rosbag2 folder (MCAP or sqlite3 storage), or a bare
``.mcap`` / ``.db3`` file, into a :class:`~.dataset.Dataset`; a corrupted file is a
:class:`~...files.dataio.DataFileError` naming it. The time of a sample is the
message's ``header.stamp`` (the bag's receive time when the stamps are zero); joints are picked by
name, so messages may hold other joints (gripper) in any order.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...contract.topics import JOINT_STATES
from ...files.dataio import DataFileError
from .dataset import Dataset, IdentificationError

__all__ = ["JOINT_STATE", "typestore", "joint_state_message", "JointSelector", "BagWriteError",
           "IncrementalBagWriter", "read_joint_states"]

Array = NDArray[np.float64]

JOINT_STATE = "sensor_msgs/msg/JointState"
BAG_VERSION = 8  # rosbag2 metadata version written (as rosbag2 of ROS 2 Iron/Jazzy writes; string QoS profiles)
# what rosbags' MCAP / CDR decoding raises on corrupted bytes (lengths past the end, bad UTF-8, absurd sizes)
CORRUPT_DATA = (ValueError, OverflowError, IndexError, KeyError, EOFError, struct.error, MemoryError)
MAX_PENDING_CHUNK = 2**19  # flush before rosbags closes a chunk by itself (at 1 MiB) where we cannot control it


def typestore() -> Any:
    """The ``rosbags`` type store of ROS 2 Humble (``JointState`` is the same in later releases)."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)


def joint_state_message(store: Any, stamp_ns: int, names: Sequence[str], position: Sequence[float],
                        velocity: Sequence[float] = (), effort: Sequence[float] = (), frame_id: str = "") -> Any:
    """A ``sensor_msgs/msg/JointState`` of the ``rosbags`` type store."""
    types = store.types
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    header = types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec),
                                          frame_id=frame_id)
    values = (np.asarray(v, dtype=np.float64) for v in (position, velocity, effort))
    return types[JOINT_STATE](header, list(names), *values)


class JointSelector:
    """Indices of the ``wanted`` joints in a message's name list, cached per name list;
    :class:`IdentificationError` names the joints a message lacks."""

    def __init__(self, wanted: Sequence[str]) -> None:
        self.wanted = tuple(wanted)
        self._cache: dict[tuple[str, ...], list[int]] = {}

    def __call__(self, names: Sequence[str], where: str) -> list[int]:
        key = tuple(names)
        order = self._cache.get(key)
        if order is None:
            missing = [name for name in self.wanted if name not in key]
            if missing:
                raise IdentificationError(f"{where} has no joint(s) {', '.join(missing)} "
                                          f"(joints: {', '.join(key) or 'none'})")
            order = self._cache[key] = [key.index(name) for name in self.wanted]
        return order


class _KeepOpen:
    """A file handle whose ``close`` does nothing and that keeps a copy of what is written through it
    in ``written`` (everything else is delegated)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.written = bytearray()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def write(self, data: bytes) -> int:
        self.written += data
        return self._handle.write(data)

    def close(self) -> None:
        pass


class BagWriteError(OSError):
    """A bag could not be written (a full disk): it was closed as its last flush left it (module
    docstring); ``reason`` the failure, ``kept`` what the bag holds, in words."""

    reason = kept = ""


class IncrementalBagWriter:
    """A rosbag2 MCAP bag of one topic that is valid after every :meth:`flush` (module docstring)."""

    def __init__(self, path: str | Path, topic: str = JOINT_STATES, msgtype: str = JOINT_STATE,
                 custom_data: dict[str, str] | None = None) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer

        self.path = Path(path)
        self.store = typestore()
        self.msgtype = msgtype
        self._writer = Writer(self.path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        for key, value in (custom_data or {"writer": "youbot_dynamics"}).items():
            self._writer.set_custom_data(key, value)
        self._writer.open()
        storage = self._writer.storage
        if not all(hasattr(storage, a) for a in ("close_chunk", "bio", "chunk", "path")) \
                or not hasattr(self._writer, "metapath"):
            self._writer.abort()
            raise RuntimeError("this rosbags version's MCAP writer cannot be flushed incrementally (tested with 0.11)")
        self.file = Path(storage.path)  # the MCAP file
        self._metadata = self._writer.metapath
        self._connection = self._writer.add_connection(topic, msgtype, typestore=self.store)
        self._data_end = storage.bio.tell()
        self._summary = b""  # the summary and footer of the last flush, behind _data_end
        self._pending = 0
        self.message_count = 0
        self.flushed_count = 0  # messages in the bag as its last flush left it
        self._write_summary()  # valid (and empty) from here on

    def write(self, timestamp_ns: int, message: Any) -> None:
        """Append ``message`` (a type-store object) received at ``timestamp_ns``."""
        if self._writer.storage is None:
            raise BagWriteError(f"the bag {self.file} is closed")
        self._writer.write(self._connection, int(timestamp_ns), self.store.serialize_cdr(message, self.msgtype))
        self._pending += 1
        self.message_count += 1
        if self._writer.storage.chunk.bio.tell() > MAX_PENDING_CHUNK:
            self.flush()

    def flush(self) -> None:
        """Make the bag on disk complete up to the last message (module docstring)."""
        if self._pending:
            self._write_summary()

    def _write_summary(self) -> None:
        """Flush steps 1-3 (module docstring); on an ``OSError`` :meth:`_give_up`."""
        writer, storage = self._writer, self._writer.storage
        handle = storage.bio
        pending_metadata = self._metadata.with_name(f".pending.{self._metadata.name}")
        try:
            handle.seek(self._data_end)
            storage.close_chunk()
            data_end = handle.tell()
            summary = _KeepOpen(handle)
            storage.bio, writer.metapath = summary, pending_metadata
            try:
                writer.close()  # summary, footer and metadata.yaml (aside), from the writer's state
            finally:
                storage.bio, writer.storage, writer.metapath = handle, storage, self._metadata
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
            os.replace(pending_metadata, self._metadata)
        except OSError as exc:
            raise self._give_up(exc, pending_metadata) from exc
        self._data_end, self._summary = data_end, bytes(summary.written)
        handle.seek(data_end)
        self._pending = 0
        self.flushed_count = self.message_count

    def _give_up(self, exc: OSError, pending_metadata: Path) -> BagWriteError:
        """Close the bag as the last flush left it (its summary put back; ``metadata.yaml`` is still
        that flush's) after ``exc``; the error to raise, naming the file."""
        handle, self._writer.storage = self._writer.storage.bio, None
        self.message_count = self.flushed_count
        try:
            handle.close()  # the buffered bytes the disk refused are dropped
        except OSError:
            pass
        for leftover in (pending_metadata, pending_metadata.with_suffix(".yaml.tmp")):
            leftover.unlink(missing_ok=True)
        kept = f"closed, readable with the {self.flushed_count} messages of its last flush"
        try:
            fd = os.open(self.file, os.O_WRONLY)
            try:
                os.pwrite(fd, self._summary, self._data_end)  # blocks the file had: no space needed
                os.ftruncate(fd, self._data_end + len(self._summary))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as again:
            kept = f"unreadable: its last summary could not be put back ({again.strerror or again})"
        error = BagWriteError(f"cannot write the bag {self.file} ({exc.strerror or exc}): {kept}")
        error.errno, error.reason, error.kept = exc.errno, exc.strerror or str(exc), kept
        return error

    def close(self) -> None:
        """Flush and close; the bag stays valid (an empty bag too). Nothing to do after a :class:`BagWriteError`."""
        if self._writer.storage is None:
            return
        if self._pending:
            self._write_summary()
        handle = self._writer.storage.bio
        self._writer.storage = None
        handle.close()

    def __enter__(self) -> "IncrementalBagWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_joint_states(path: str | Path, joint_names: Sequence[str] | None = None, topic: str = JOINT_STATES,
                      n_joints: int | None = None) -> Dataset:
    """The ``JointState`` messages of ``topic`` in a bag as a :class:`Dataset` (module docstring).

    ``joint_names``: the joints to take, in model order (default: the first ``n_joints`` names of
    the first message). Velocities are used when every message has them for every joint.
    """
    t, q, tau, dq = read_joint_state_arrays(path, joint_names, topic, n_joints)
    return Dataset(t, q, tau, dq, source=str(path))


def read_joint_state_arrays(path: str | Path, joint_names: Sequence[str] | None = None,
                            topic: str = JOINT_STATES, n_joints: int | None = None
                            ) -> tuple[Array, Array, Array, Array | None]:
    """``(t, q, tau, dq or None)`` of every message, in the bag's order, time not checked (what
    :func:`read_joint_states` and the real-log reader :func:`.dataset.read_bag_raw` build on)."""
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag2 import ReaderError

    path = Path(path)
    if not path.exists():
        raise DataFileError(f"cannot read {path}: no such file or folder")
    try:
        with AnyReader([path], default_typestore=typestore()) as reader:
            connections = [c for c in reader.connections if c.topic == topic]
            if not connections:
                topics = sorted({c.topic for c in reader.connections})
                raise DataFileError(f"{path}: no topic {topic} (topics: {', '.join(topics) or 'none'})")
            if any(c.msgtype != JOINT_STATE for c in connections):
                raise DataFileError(f"{path}: {topic} is not {JOINT_STATE}")
            rows = [(stamp, reader.deserialize(raw, c.msgtype)) for c, stamp, raw in reader.messages(connections)]
    except (AnyReaderError, ReaderError, OSError, *CORRUPT_DATA) as exc:
        raise DataFileError(f"cannot read the bag {path}: {type(exc).__name__}: {exc} (corrupted file?)") from None
    if not rows:
        raise DataFileError(f"{path}: no messages on {topic}")
    return _arrays(path, rows, joint_names, n_joints)


def _arrays(path: Path, rows: list[tuple[int, Any]], joint_names: Sequence[str] | None,
            n_joints: int | None) -> tuple[Array, Array, Array, Array | None]:
    select = JointSelector(joint_names if joint_names is not None else list(rows[0][1].name)[:n_joints])
    count, n = len(rows), len(select.wanted)
    q, tau, dq = np.empty((count, n)), np.empty((count, n)), np.empty((count, n))
    has_velocity = True
    for k, (_, msg) in enumerate(rows):
        order = select(msg.name, f"{path}: message {k}")
        if len(msg.position) != len(msg.name) or len(msg.effort) != len(msg.name):
            raise IdentificationError(f"{path}: message {k} lacks positions or efforts for its {len(msg.name)} joints")
        q[k], tau[k] = msg.position[order], msg.effort[order]
        has_velocity = has_velocity and len(msg.velocity) == len(msg.name)
        if has_velocity:
            dq[k] = msg.velocity[order]
    stamps = np.array([int(m.header.stamp.sec) * 1_000_000_000 + int(m.header.stamp.nanosec) for _, m in rows])
    if not stamps.any():  # unstamped messages: the time the recorder received them
        stamps = np.array([receive for receive, _ in rows])
    return (stamps - stamps[0]) * 1e-9, q, tau, dq if has_velocity else None
