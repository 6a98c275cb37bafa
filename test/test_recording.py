"""The recording core: rosbag2 (MCAP) + CSV written incrementally, read back, valid after a crash."""
from __future__ import annotations

import errno
import io
import os
import pathlib
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import yaml

pytest.importorskip("rosbags")

from identification_benchmark import recordings  # noqa: E402
from youbot_dynamics.arm.description import default_arm  # noqa: E402
from youbot_dynamics.cli import main  # noqa: E402
from youbot_dynamics.contract.topics import JOINT_STATES  # noqa: E402
from youbot_dynamics.files.dataio import DataFileError  # noqa: E402
from youbot_dynamics.dynamics.paramfile import load_model  # noqa: E402
from youbot_dynamics.identification.experiment.recording import (  # noqa: E402
    JointStateRecorder, RecordingError, RecordingThread)
from youbot_dynamics.identification.io.bagio import (JOINT_STATE, joint_state_message, read_joint_states,  # noqa: E402
                                                     typestore)
from youbot_dynamics.identification.io.dataset import IdentificationError, read_csv_dataset  # noqa: E402

ARM = default_arm()
NAMES = list(ARM.joint_names)
T0_NS = 1_700_000_000_000_000_000
MAGIC = b"\x89MCAP0\r\n"


def record(path, data, clock=None, stamps=True, extra_joint=True, csv_name="data.csv"):
    """Write ``data`` through the recorder (message joint order reversed, plus a gripper joint)."""
    now = [0.0]
    recorder = JointStateRecorder(path / "bag", NAMES, path / csv_name, clock=clock or (lambda: now[0]))
    names = NAMES[::-1] + (["gripper_finger_joint_l"] if extra_joint else [])
    pad = [0.0] if extra_joint else []
    for k in range(data.n_samples):
        now[0] = data.t[k]
        stamp = T0_NS + int(round(data.t[k] * 1e9))
        recorder.write(stamp if stamps else 0, names, list(data.q[k, ::-1]) + pad, list(data.dq[k, ::-1]) + pad,
                       list(data.tau[k, ::-1]) + pad, receive_ns=stamp)
    return recorder


@pytest.fixture(scope="module")
def data():
    _, train, _ = recordings(ARM, duration=4.0, rate=250.0)
    return train


def mcap_records(blob):
    """(opcode, body) of every top-level MCAP record, walked independently of rosbags."""
    assert blob[:8] == MAGIC and blob[-8:] == MAGIC
    pos, out = 8, []
    while pos < len(blob) - 8:
        op, length = struct.unpack_from("<BQ", blob, pos)
        out.append((op, blob[pos + 9 : pos + 9 + length]))
        pos += 9 + length
    assert pos == len(blob) - 8, "records do not end at the closing magic"
    return out


def check_bag(folder, count):
    """metadata.yaml describes one valid MCAP file holding ``count`` JointState messages."""
    meta = yaml.safe_load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["storage_identifier"] == "mcap" and meta["version"] == 8
    assert meta["message_count"] == count
    (topic,) = meta["topics_with_message_count"]
    assert topic["topic_metadata"]["name"] == JOINT_STATES and topic["topic_metadata"]["type"] == JOINT_STATE
    assert topic["message_count"] == count
    (name,) = meta["relative_file_paths"]
    records = mcap_records((folder / name).read_bytes())
    ops = [op for op, _ in records]
    assert ops[0] == 0x01 and b"ros2" in records[0][1]  # header, ros2 profile
    assert ops[-1] == 0x02  # footer
    assert 0x0F in ops and 0x06 in ops  # data end, chunks
    footer = records[-1][1]
    summary_start = struct.unpack_from("<Q", footer, 0)[0]
    assert summary_start > 0
    return records


def test_round_trip_bag_and_csv(tmp_path, data):
    with record(tmp_path, data):
        pass
    check_bag(tmp_path / "bag", data.n_samples)
    for source in (tmp_path / "bag", tmp_path / "bag" / "bag.mcap"):
        back = read_joint_states(source, NAMES)
        np.testing.assert_allclose(back.t, data.t - data.t[0], rtol=0, atol=1e-9)
        for name in ("q", "dq", "tau"):
            np.testing.assert_array_equal(getattr(back, name), getattr(data, name))
    from_csv = read_csv_dataset(tmp_path / "data.csv", 5)
    np.testing.assert_allclose(from_csv.t - from_csv.t[0], data.t - data.t[0], atol=1e-6)
    for name in ("q", "dq", "tau"):
        np.testing.assert_array_equal(getattr(from_csv, name), getattr(data, name))
    assert (tmp_path / "data.csv").read_text().splitlines()[0] == ",".join(
        ["t"] + [f"{p}{i}" for p in ("q", "dq", "tau") for i in range(1, 6)])


def test_bag_is_valid_after_every_flush(tmp_path, data):
    recorder = record(tmp_path, data)  # flushed each second of (fake) clock, not closed
    flushed = int(data.t[-1]) * 250 + 1  # samples up to the last whole second
    check_bag(tmp_path / "bag", flushed)
    assert read_joint_states(tmp_path / "bag", NAMES).n_samples == flushed
    recorder.close()
    check_bag(tmp_path / "bag", data.n_samples)


def test_crash_loses_at_most_the_last_second(tmp_path):
    """A recorder killed by SIGKILL leaves a bag and a CSV complete up to the last flush."""
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        from youbot_dynamics.identification.experiment.recording import JointStateRecorder
        names = {NAMES!r}
        now = [0.0]
        rec = JointStateRecorder({str(tmp_path / "bag")!r}, names, {str(tmp_path / "d.csv")!r}, clock=lambda: now[0])
        for k in range(2600):  # 2.6 s at 1 kHz
            now[0] = k * 1e-3
            x = np.full(5, k * 1e-3)
            rec.write({T0_NS} + k * 1_000_000, names, x, x, x)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert result.returncode == -9, result.stderr.decode()
    back = read_joint_states(tmp_path / "bag", NAMES)
    assert back.n_samples == 2001  # flushed at t = 1 s and 2 s: the last 0.6 s are lost
    np.testing.assert_allclose(back.q[:, 0], np.arange(2001) * 1e-3)
    from_csv = read_csv_dataset(tmp_path / "d.csv", 5)  # whole rows only
    np.testing.assert_array_equal(from_csv.q, back.q)


class FullDisk:
    """A file system with ``free`` bytes left, shared by the files opened for writing through
    ``Path.open`` (the bag's MCAP file, its ``metadata.yaml``, the CSV) while it stands in for it: a
    write past the space left writes what fits and raises ``OSError(ENOSPC)``, as a full disk does;
    overwriting a file's own bytes needs no space, truncating gives it back."""

    def __init__(self, free: int) -> None:
        self.free = free

    def open(self, path, mode="r", buffering=-1, encoding=None, errors=None, newline=None):
        if not any(c in mode for c in "wxa+"):
            return io.open(path, mode, buffering, encoding, errors, newline)
        raw = _SpaceLimitedFile(self, path, mode.replace("b", "").replace("t", ""))
        handle = io.BufferedRandom(raw) if "+" in mode else io.BufferedWriter(raw)
        return handle if "b" in mode else io.TextIOWrapper(handle, encoding or "utf-8", errors, newline)


class _SpaceLimitedFile(io.FileIO):
    def __init__(self, disk: FullDisk, path, mode: str) -> None:
        super().__init__(path, mode)
        self.disk = disk

    def _size(self) -> int:
        return os.fstat(self.fileno()).st_size

    def write(self, data) -> int:
        data = bytes(data)
        grow = max(0, self.tell() + len(data) - self._size())
        if grow > self.disk.free:
            fits = len(data) - (grow - self.disk.free)
            if fits > 0:
                super().write(data[:fits])
            self.disk.free = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.disk.free -= grow
        return super().write(data)

    def truncate(self, size=None) -> int:
        before = self._size()
        result = super().truncate(size)
        self.disk.free += before - self._size()
        return result


def _bytes_written(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("fraction", [0.3, 0.45, 0.6, 0.75])
def test_a_full_disk_leaves_both_files_readable_and_named(tmp_path, data, monkeypatch, fraction):
    """Issue 35 case 7: the disk fills up (``fraction`` of what the whole recording needs is free):
    the recording stops with an error naming both files, each readable with the samples of its last
    flush that went through (a whole second here; the CSV, flushed after the bag, may hold one flush
    less); before, the bag's file ended in the middle of a chunk or summary ("File end magic is
    invalid") and the message named no file."""
    with record(tmp_path / "whole", data):
        pass
    disk = FullDisk(int(fraction * _bytes_written(tmp_path / "whole")))
    monkeypatch.setattr(pathlib.Path, "open", lambda path, *args, **kwargs: disk.open(path, *args, **kwargs))
    with pytest.raises(RecordingError) as failed:
        record(tmp_path, data)  # flushed every second of its clock
    monkeypatch.undo()
    message = str(failed.value)
    assert os.strerror(errno.ENOSPC) in message and failed.value.errno == errno.ENOSPC
    assert str(tmp_path / "bag" / "bag.mcap") in message and str(tmp_path / "data.csv") in message, message
    flushes = (251, 501, 751)  # samples on disk after the flushes at 1, 2 and 3 s
    in_bag = read_joint_states(tmp_path / "bag", NAMES)
    in_csv = read_csv_dataset(tmp_path / "data.csv", 5)
    assert in_bag.n_samples in flushes and in_csv.n_samples in (in_bag.n_samples, in_bag.n_samples - 250)
    check_bag(tmp_path / "bag", in_bag.n_samples)
    np.testing.assert_array_equal(in_bag.q, data.q[:in_bag.n_samples])
    np.testing.assert_array_equal(in_csv.q, data.q[:in_csv.n_samples])
    assert f"{in_bag.n_samples} messages" in message and f"{in_csv.n_samples} rows" in message, message
    assert sorted(p.name for p in (tmp_path / "bag").iterdir()) == ["bag.mcap", "metadata.yaml"]


def test_unstamped_messages_use_the_receive_time(tmp_path, data):
    with record(tmp_path, data, stamps=False, extra_joint=False):
        pass
    back = read_joint_states(tmp_path / "bag", NAMES)
    np.testing.assert_allclose(back.t, data.t - data.t[0], atol=1e-9)
    from_csv = read_csv_dataset(tmp_path / "data.csv", 5)
    np.testing.assert_allclose(from_csv.t - from_csv.t[0], data.t - data.t[0], atol=1e-6)


def test_sqlite3_bags_are_read(tmp_path, data):
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = typestore()
    with Writer(tmp_path / "db", version=8, storage_plugin=StoragePlugin.SQLITE3) as writer:
        conn = writer.add_connection(JOINT_STATES, JOINT_STATE, typestore=store)
        for k in range(data.n_samples):
            stamp = T0_NS + int(round(data.t[k] * 1e9))
            msg = joint_state_message(store, stamp, NAMES, data.q[k], [], data.tau[k])
            writer.write(conn, stamp, store.serialize_cdr(msg, JOINT_STATE))
    back = read_joint_states(tmp_path / "db", NAMES)
    np.testing.assert_array_equal(back.q, data.q)
    assert back.dq is None  # no velocities recorded: identify differentiates q


def test_bad_bags_are_named(tmp_path, data):
    with record(tmp_path, data):
        pass
    with pytest.raises(IdentificationError, match=r"message 0 has no joint\(s\) arm_joint_6"):
        read_joint_states(tmp_path / "bag", NAMES + ["arm_joint_6"])
    with pytest.raises(DataFileError, match=r"no topic /arm/joint_states \(topics: /joint_states\)"):
        read_joint_states(tmp_path / "bag", NAMES, topic="/arm/joint_states")
    with pytest.raises(DataFileError, match="cannot read .*nothing: no such file or folder"):
        read_joint_states(tmp_path / "nothing", NAMES)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFileError, match="metadata"):
        read_joint_states(tmp_path / "empty", NAMES)
    with pytest.raises(IdentificationError, match=r"joint state has no joint\(s\) arm_joint_5"):
        JointStateRecorder(tmp_path / "bag2", NAMES).write(T0_NS, NAMES[:4], [0.0] * 4, [], [0.0] * 4)


def test_cli_identify_from_a_bag(tmp_path):
    _, train, held = recordings(ARM, duration=20.0, rate=500.0)
    with record(tmp_path, train):
        pass
    out = tmp_path / "p.yaml"
    code = main(["identify", str(tmp_path / "bag"), "--method", "consistent", "--out", str(out)])
    assert code == 0
    assert load_model(out).base.count == 47
    doc = yaml.safe_load(out.read_text())["youbot_dynamics_model"]
    assert doc["identification"]["relative_error"] < 0.02
    assert os.path.basename(doc["identification"]["data"][0]) == "bag"


def _record_on_thread(path, data, free: FullDisk | None = None):
    """``data`` through a :class:`RecordingThread`, flushed every second of the data as the node's
    timer does (the recorder's own clock never asks); the error the writes or the close raised, if any."""
    thread = RecordingThread(JointStateRecorder(path / "bag", NAMES, path / "data.csv", clock=lambda: 0.0))
    try:
        for k in range(data.n_samples):
            if k and data.t[k] >= data.t[0] + 1.0 and data.t[k - 1] < data.t[0] + np.floor(data.t[k] - data.t[0]):
                thread.flush()
            stamp = T0_NS + int(round(data.t[k] * 1e9))
            thread.write(stamp, NAMES, list(data.q[k]), list(data.dq[k]), list(data.tau[k]), receive_ns=stamp)
        thread.close()
    except OSError as exc:
        return exc
    return None


def test_a_recording_thread_writes_the_same_files_and_never_waits_for_the_disk(tmp_path, data, monkeypatch):
    """The identification node records on a thread of its own: its executor only queues the joint
    states; a flush that takes the disk 0.5 s (fsync on a busy VM) holds no write."""
    assert _record_on_thread(tmp_path, data) is None
    np.testing.assert_array_equal(read_joint_states(tmp_path / "bag", NAMES).q, data.q)
    np.testing.assert_array_equal(read_csv_dataset(tmp_path / "data.csv", 5).tau, data.tau)
    release, flushed = threading.Event(), threading.Event()
    slow = RecordingThread(JointStateRecorder(tmp_path / "slow", NAMES, tmp_path / "slow.csv"))

    def stuck_flush() -> None:  # the "disk" answers when released (or after 5 s: then the writes waited for it)
        release.wait(5.0)
        flushed.set()

    monkeypatch.setattr(slow.recorder, "flush", stuck_flush)
    slow.flush()
    for k in range(200):
        slow.write(T0_NS + k * 1_000_000, NAMES, list(data.q[k]), list(data.dq[k]), list(data.tau[k]))
    assert not flushed.is_set()  # every write returned while the flush was still on the disk
    release.set()
    monkeypatch.undo()
    slow.close()
    assert read_csv_dataset(tmp_path / "slow.csv", 5).n_samples == 200
    with pytest.raises(ValueError, match="joint state with 5 names but 4 positions"):
        RecordingThread(JointStateRecorder(tmp_path / "bad", NAMES)).write(T0_NS, NAMES, [0.0] * 4, [], [0.0] * 5)


def test_a_recording_thread_reports_a_full_disk_on_the_next_call(tmp_path, data, monkeypatch):
    with record(tmp_path / "whole", data):
        pass
    disk = FullDisk(int(0.45 * _bytes_written(tmp_path / "whole")))
    monkeypatch.setattr(pathlib.Path, "open", lambda path, *args, **kwargs: disk.open(path, *args, **kwargs))
    failed = _record_on_thread(tmp_path, data)
    monkeypatch.undo()
    assert isinstance(failed, RecordingError) and failed.errno == errno.ENOSPC
    assert str(tmp_path / "bag" / "bag.mcap") in str(failed) and str(tmp_path / "data.csv") in str(failed)
    check_bag(tmp_path / "bag", read_joint_states(tmp_path / "bag", NAMES).n_samples)
