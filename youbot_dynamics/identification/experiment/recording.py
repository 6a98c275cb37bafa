"""The recording core of the identification node (no ROS dependency): joint states to a rosbag2
(MCAP storage, readable by ``ros2 bag``) and to a CSV with the columns
``t, q1..qn, dq1..dqn, tau1..taun`` that ``identify`` reads.

Both files are flushed to disk at least every ``flush_period`` seconds (wall clock, checked at each
sample; the node should also call :meth:`JointStateRecorder.flush` from a 1 s timer so that a
pause in the data does not hold samples back), so a crash or Ctrl-C loses at most the last
``flush_period`` of data: the bag on disk is complete up to the last flush (see
:class:`~.bagio.IncrementalBagWriter`), the CSV holds whole rows up to it. ``t`` in the CSV is the
message stamp in seconds.

:class:`RecordingThread` runs a recorder on a thread of its own, so that its disk work (the flushes
end in ``fsync``: 60-130 ms each second, 0.4 s for a new bag's first, measured under a real launch on
this VM) never holds the thread that commands the arm (the identification node's executor: those
stalls aborted experiments, "commands late: the last trajectory message was sent 0.717 s ago").

A flush that fails (a full disk, issue 35) stops the recording: both files are closed as the last
good flush left them (the bag with its summary put back, the CSV cut back to its last whole row),
readable, and a :class:`RecordingError` names them and what they hold; from then on
:meth:`JointStateRecorder.write`, ``flush`` and ``close`` do nothing (``failed`` holds the error).
"""
from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ...contract.topics import JOINT_STATES
from ..io.bagio import BagWriteError, IncrementalBagWriter, JointSelector, joint_state_message
from ..io.dataset import IdentificationError, joint_columns

__all__ = ["JointStateRecorder", "RecordingError", "RecordingThread"]


class RecordingError(OSError):
    """The recording could not be written and was stopped (module docstring)."""


class JointStateRecorder:
    """Writes joint states of ``joint_names`` to the bag folder ``bag_path`` and to ``csv_path``."""

    def __init__(self, bag_path: str | Path, joint_names: Sequence[str], csv_path: str | Path | None = None,
                 topic: str = JOINT_STATES, flush_period: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.joint_names = tuple(joint_names)
        self.bag = IncrementalBagWriter(bag_path, topic, custom_data={"writer": "youbot_dynamics recorder",
                                                                      "joints": ",".join(self.joint_names)})
        self.csv_path = Path(csv_path) if csv_path is not None else None
        self._csv_file = self.csv_path.open("x") if self.csv_path is not None else None
        self._csv_lines: list[str] = []  # rows since the last flush: the file only ever gets whole rows
        self._csv_rows = 0  # rows recorded
        self._csv_flushed = (0, 0)  # (bytes, rows) of the CSV at its last flush
        self.failed: RecordingError | None = None
        self._with_velocity: bool | None = None  # decided by the first sample (CSV header)
        self.flush_period = flush_period
        self._clock = clock
        self._last_flush = clock()
        self._select = JointSelector(self.joint_names)

    def write(self, stamp_ns: int, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
              effort: Sequence[float], receive_ns: int | None = None) -> None:
        """Record one joint state (all joints of the message go to the bag; the recorded joints to
        the CSV). ``receive_ns`` is the bag time (default ``stamp_ns``)."""
        if self.failed is not None:
            return
        order = self.check(names, position, velocity, effort)
        try:
            self.bag.write(stamp_ns if receive_ns is None else receive_ns,
                           joint_state_message(self.bag.store, stamp_ns, names, position, velocity, effort))
        except OSError as exc:  # a flush of a full chunk failed
            raise self._stop(exc) from exc
        if self._csv_file is not None:  # unstamped messages: the CSV time is the receive time
            self._add_csv_row(stamp_ns or receive_ns or 0, order, position, velocity, effort)
        if self._clock() - self._last_flush >= self.flush_period:
            self.flush()

    def check(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
              effort: Sequence[float]) -> list[int]:
        """:class:`IdentificationError` unless a joint state of these sizes and names can be recorded
        (it names the recorded joints; it has velocities if the first one had); the recorded joints'
        indices in it."""
        n = len(names)
        if len(position) != n or len(effort) != n or len(velocity) not in (0, n):
            raise IdentificationError(f"joint state with {n} names but {len(position)} positions, {len(velocity)} "
                                      f"velocities and {len(effort)} efforts")
        if self._with_velocity is not None and self._with_velocity != (len(velocity) > 0):
            raise IdentificationError("joint states switch between having and not having velocities")
        return self._select(names, "joint state")

    def _add_csv_row(self, stamp_ns: int, order: list[int], position: Sequence[float], velocity: Sequence[float],
                     effort: Sequence[float]) -> None:
        if self._with_velocity is None:
            self._with_velocity = len(velocity) > 0
            m = len(self.joint_names)
            header = ["t", *joint_columns("q", m), *(joint_columns("dq", m) if self._with_velocity else []),
                      *joint_columns("tau", m)]
            self._csv_lines.append(",".join(header) + "\n")
        parts = [position, velocity, effort] if self._with_velocity else [position, effort]
        row = [stamp_ns * 1e-9] + [float(np.asarray(p, dtype=float)[k]) for p in parts for k in order]
        self._csv_lines.append(",".join(map(repr, row)) + "\n")
        self._csv_rows += 1

    def flush(self) -> None:
        """Put everything recorded so far on disk (bag complete and valid, CSV rows whole);
        :class:`RecordingError` if that fails (module docstring)."""
        if self.failed is not None:
            return
        try:
            self.bag.flush()
            if self._csv_file is not None and not self._csv_file.closed:
                self._csv_file.write("".join(self._csv_lines))
                self._csv_file.flush()
                os.fsync(self._csv_file.fileno())
                self._csv_flushed = (self._csv_file.tell(), self._csv_rows)
                self._csv_lines.clear()
        except OSError as exc:
            raise self._stop(exc) from exc
        self._last_flush = self._clock()

    def _stop(self, exc: OSError) -> RecordingError:
        """Close both files as the last good flush left them after ``exc``; the error naming them."""
        if isinstance(exc, BagWriteError):  # the bag closed itself as its last flush left it
            reason, kept = exc.reason, [f"the bag {self.bag.file} {exc.kept}"]
        else:
            self.bag.close()  # nothing pending: the CSV failed after the bag's flush
            reason = exc.strerror or str(exc)
            kept = [f"the bag {self.bag.file} closed, readable with the {self.bag.flushed_count} messages of its "
                    "last flush"]
        if self._csv_file is not None:
            try:
                self._csv_file.close()
            except OSError:
                pass  # the buffered rows the disk refused are dropped
            size, rows = self._csv_flushed
            try:
                os.truncate(self.csv_path, size)  # a row cut by the failure: back to the last whole one
                kept.append(f"the CSV {self.csv_path} with {rows} rows")
            except OSError as again:
                kept.append(f"the CSV {self.csv_path} possibly with a cut last row ({again.strerror or again})")
        self.failed = RecordingError(f"cannot write the recording ({reason}), stopped: {'; '.join(kept)}")
        self.failed.errno = exc.errno
        return self.failed

    def close(self) -> None:
        """Flush and close both files (nothing to do after a :class:`RecordingError`)."""
        if self.failed is not None:
            return
        self.flush()
        self.bag.close()
        if self._csv_file is not None:
            self._csv_file.close()

    def __enter__(self) -> "JointStateRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingThread:
    """A :class:`JointStateRecorder` driven from another thread: :meth:`write` and :meth:`flush`
    queue their work for the recorder's own thread and return at once; :meth:`close` waits for
    everything queued. An ``OSError`` there (a :class:`RecordingError`: the files are closed
    readable) is kept in :attr:`failed` and raised by the next :meth:`write`, ``flush`` or
    ``close``. A joint state the recorder cannot take raises :class:`IdentificationError` from
    :meth:`write` at once (:meth:`JointStateRecorder.check`), as the recorder's own ``write``."""

    def __init__(self, recorder: JointStateRecorder, name: str = "recorder",
                 initializer: Callable[[], None] | None = None) -> None:
        self.recorder = recorder
        self.failed: OSError | None = None
        self._reported = False  # the failure was raised to the caller
        self._initializer = initializer  # run first on the thread (a real-time node: its helper priority)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def write(self, stamp_ns: int, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
              effort: Sequence[float], receive_ns: int | None = None) -> None:
        """:meth:`JointStateRecorder.write` on the recorder's thread (the sizes checked here)."""
        self._raise_failure()
        self.recorder.check(names, position, velocity, effort)
        self._jobs.put((self.recorder.write, (stamp_ns, names, position, velocity, effort, receive_ns)))

    def flush(self) -> None:
        """:meth:`JointStateRecorder.flush` on the recorder's thread."""
        self._raise_failure()
        self._jobs.put((self.recorder.flush, ()))

    def close(self) -> None:
        """Write what is queued, close the files, end the thread; the failure, unless a call already
        raised it (as the recorder's own ``close`` after a :class:`RecordingError`: nothing more)."""
        self._jobs.put(None)
        self._thread.join()
        if not self._reported:
            self._raise_failure()

    def _raise_failure(self) -> None:
        if self.failed is not None:
            self._reported = True
            raise self.failed

    def _run(self) -> None:
        if self._initializer is not None:
            self._initializer()
        while True:
            job: Any = self._jobs.get()
            try:
                if job is None:
                    self.recorder.close()
                    return
                function, args = job
                function(*args)
            except OSError as exc:  # the recorder closed its files readable: later jobs do nothing
                self.failed = self.failed or exc
                if job is None:
                    return
            except Exception as exc:  # noqa: BLE001 - a bug: said by the next call, the files still closed at the end
                self.failed = self.failed or RecordingError(f"recording failed: {exc!r}")
