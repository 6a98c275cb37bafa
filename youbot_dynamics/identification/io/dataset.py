"""Recorded joint data for identification: the :class:`Dataset` and its CSV form.

A dataset is what seed 002 §3.2 records: time ``t`` [s], joint angles ``q`` [rad], optionally
velocities ``q'`` [rad/s] and accelerations ``q''`` [rad/s^2] (differentiated from ``q`` when
absent, see :mod:`.processing`), and the measured drive torques ``tau_e`` [N m], with the
convention ``tau_e = M q'' + C q' + G + Ia q'' + fv q' + fc sign(q') + f0``.

CSV columns: ``t, q1..qn, dq1..dqn, tau1..taun`` with ``dq`` and ``ddq1..ddqn`` optional (extra
columns are ignored). Every check names the sample and the joint at fault.

:func:`check_plausible` refuses a recording that cannot come from the arm (positions in degrees,
torques in mN m, say): more than :data:`MAX_OUTLIERS` samples of a joint farther than
:data:`POSITION_MARGIN` rad beyond its position limits, or with a recorded speed above :data:`VELOCITY_FACTOR` times its
velocity limit. The positions are the robust sign: degrees are 57x radians, so any motion of more
than a few degrees leaves the joint ranges. The speed bound is only a backstop (velocities in
deg/s or rpm, positions plausible): ``velocity_max`` of the arm description is the limit the
package *commands*, not what a recorded arm may do. The real youBot's joint 5 reaches 3.7-4.0
rad/s, 2.5x its 1.57 rad/s (``/work/shared/data/youbot_real``, driven by the vendor's position
loop), so the factor is 10: degrees of a motion at a sixth of ``velocity_max`` or faster (57x)
still exceed it. A recorded torque above :data:`TORQUE_FACTOR` (2) times the drive's peak torque
``max_current kt N`` (:attr:`~...arm.description.ArmDescription.drive_torque_limit`) is refused too: a
current-based torque cannot go far beyond it (the real runs: at most 1.2 x, joint 3's 15.7 N m), a
torque in mN m (1000 x) does.

A :class:`RawRecording` holds every row of a real log as written (:func:`read_csv_raw`), checked
for shape and finiteness only; the file format is detected by content (:func:`recording_format`):
a CSV recording may be named ``.txt`` or anything else. Loading whatever the format (CSV or bag)
is :mod:`.recordings`.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...files.dataio import DataFileError, read_csv_columns, read_csv_header, write_csv
from ...files.fileio import TEXT_ENCODING

__all__ = ["IdentificationError", "Dataset", "joint_columns", "read_csv_dataset", "write_csv_dataset",
           "check_plausible", "POSITION_MARGIN", "VELOCITY_FACTOR", "TORQUE_FACTOR", "MAX_OUTLIERS", "RawRecording",
           "recording_format", "read_csv_raw", "BAG_SUFFIXES"]

Array = NDArray[np.float64]

POSITION_MARGIN = 0.2  # [rad] beyond a position limit that a recorded angle may lie (calibration, overshoot)
VELOCITY_FACTOR = 10.0  # a recorded speed may reach this multiple of velocity_max (real arms: 2.5x, module docstring)
#: a recorded torque may reach this multiple of the drive's peak torque ``max_current kt N`` (module docstring)
TORQUE_FACTOR = 2.0
MAX_OUTLIERS = 5  # samples per joint allowed beyond either bound (glitches) before the recording is refused
BAG_SUFFIXES = (".mcap", ".db3")  # bare rosbag2 storage files (a rosbag2 folder is a bag whatever its name)
_BAG_MAGIC = ((b"\x89MCAP", ".mcap"), (b"SQLite format 3\x00", ".db3"))  # bag storage files, by content


class IdentificationError(ValueError):
    """The data cannot give an identification: too short, not exciting enough, inconsistent."""


def _check_finite(source: str, name: str, arr: Array) -> None:
    """:class:`IdentificationError` naming the first non-finite value of ``arr`` (its sample and joint)."""
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        k, j = (int(v) for v in bad[0])
        label = name if name == "t" else f"{name}{j + 1}"
        raise IdentificationError(f"{source}: {label} is {arr[k, j]} at sample {k} "
                                  f"({len(bad)} non-finite values in {name})")


def _check_arrays(obj: Any) -> None:
    """Shapes and finiteness of a :class:`Dataset` or :class:`RawRecording` (frozen: the float
    arrays are set in place); :class:`IdentificationError` names the array, sample and joint."""
    t = np.asarray(obj.t, dtype=float)
    if t.ndim != 1 or t.size < 2:
        raise IdentificationError(f"{obj.source}: t must be a 1-D array of at least 2 samples, "
                                  f"got shape {t.shape}")
    object.__setattr__(obj, "t", t)
    _check_finite(obj.source, "t", t[:, None])
    n = None
    for name in ("q", "tau", "dq", "ddq"):
        value = getattr(obj, name)
        if value is None:
            continue
        arr = np.asarray(value, dtype=float)
        if arr.ndim != 2 or arr.shape[0] != t.size or (n is not None and arr.shape[1] != n):
            expected = f"({t.size}, {n if n is not None else 'n'})"
            raise IdentificationError(f"{obj.source}: {name} must have shape {expected}, got {arr.shape}")
        n = arr.shape[1]
        _check_finite(obj.source, name, arr)
        object.__setattr__(obj, name, arr)


def joint_columns(prefix: str, n_joints: int) -> list[str]:
    """``[prefix1, ..., prefixn]``, e.g. ``q1..q5``."""
    return [f"{prefix}{i}" for i in range(1, n_joints + 1)]


@dataclass(frozen=True)
class RawRecording:
    """The rows of a recording as the recorder wrote them: ``t`` (N,), ``q``/``tau`` and optional
    ``dq``/``ddq`` (N, n), SI units.

    Unlike :class:`Dataset`, time need not increase: repeated stamps and rows going back in time
    are what :func:`.cleaning.clean_recording` is there to find, count and drop. Shapes and
    finiteness are checked as in :class:`Dataset` (:class:`IdentificationError` names the array,
    sample and joint), so every later step may assume finite numbers.
    """

    t: Array
    q: Array
    tau: Array
    dq: Array | None = None
    ddq: Array | None = None
    source: str = "<memory>"

    def __post_init__(self) -> None:
        _check_arrays(self)

    @property
    def n_rows(self) -> int:
        return int(self.t.size)

    @property
    def n_joints(self) -> int:
        return int(self.q.shape[1])


@dataclass(frozen=True)
class Dataset(RawRecording):
    """One recording: ``t`` (N,), ``q``/``tau`` and optional ``dq``/``ddq`` (N, n), SI units: a
    :class:`RawRecording` whose time strictly increases.

    Construction checks the shapes, that every value is finite and that time strictly increases;
    :class:`IdentificationError` names the array, sample and joint at fault.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        t = self.t
        steps = np.diff(t)
        bad = np.flatnonzero(steps <= 0)
        if bad.size:
            k = int(bad[0]) + 1
            what = "repeats" if steps[k - 1] == 0 else "goes backwards"
            raise IdentificationError(f"{self.source}: time {what} at sample {k}: t = {float(t[k])!r} s after "
                                      f"{float(t[k - 1])!r} s "
                                      f"({bad.size} such samples)")

    @property
    def n_samples(self) -> int:
        return self.n_rows

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0])

    @property
    def sample_time(self) -> float:
        """Median sampling period [s]."""
        return float(np.median(np.diff(self.t)))

    def check_joints(self, n_joints: int) -> None:
        """:class:`IdentificationError` unless the data hold exactly ``n_joints`` joints."""
        if self.n_joints != n_joints:
            missing = ", ".join(joint_columns("q", n_joints)[self.n_joints :]) or "-"
            raise IdentificationError(f"{self.source}: the model has {n_joints} joints, the data have {self.n_joints} "
                                      f"(missing joints {missing})")


def _read_csv_arrays(path: str | Path, n_joints: int) -> tuple[Array, dict[str, Array]]:
    """``t`` and the joint arrays (``q``, ``tau``, and ``dq``/``ddq`` when the header has them) of a
    CSV recording; :class:`DataFileError` names a missing column, or the row and column of a bad value."""
    header = set(read_csv_header(path))
    columns = ["t", *joint_columns("q", n_joints), *joint_columns("tau", n_joints)]
    optional = [p for p in ("dq", "ddq") if any(c in header for c in joint_columns(p, n_joints))]
    for prefix in optional:  # a partial set of dq or ddq columns is an error naming the missing ones
        columns += joint_columns(prefix, n_joints)
    data = read_csv_columns(path, columns)
    n = n_joints
    parts = {"q": data[:, 1 : n + 1], "tau": data[:, n + 1 : 2 * n + 1]}
    for k, prefix in enumerate(optional):
        parts[prefix] = data[:, (2 + k) * n + 1 : (3 + k) * n + 1]
    return data[:, 0], parts


def read_csv_dataset(path: str | Path, n_joints: int) -> Dataset:
    """A :class:`Dataset` from a CSV file (columns in the module docstring)."""
    t, parts = _read_csv_arrays(path, n_joints)
    try:
        return Dataset(t, source=str(path), **parts)
    except IdentificationError as exc:
        raise DataFileError(str(exc)) from None


def write_csv_dataset(path: str | Path, data: Dataset) -> None:
    """Write ``data`` as CSV: ``t, q, dq (if any), ddq (if any), tau``."""
    n = data.n_joints
    header, blocks = ["t"], [data.t[:, None]]
    for prefix, arr in (("q", data.q), ("dq", data.dq), ("ddq", data.ddq), ("tau", data.tau)):
        if arr is not None:
            header += joint_columns(prefix, n)
            blocks.append(arr)
    write_csv(path, header, np.hstack(blocks))


def _recording_columns_text(n_joints: int) -> str:
    return f"t, q1..q{n_joints}, tau1..tau{n_joints}"


def recording_format(path: str | Path, n_joints: int) -> str:
    """``"csv"`` or ``"bag"``: how to read ``path``, decided by what it is, not by its name alone.

    A folder or a ``.mcap`` / ``.db3`` file is a bag (a bag storage file under another name is
    refused, telling the suffix to give it: the bag reader goes by the suffix). A ``.csv`` file is
    CSV (a bad one is then refused by the CSV reader, naming the missing column); so is any other
    text file whose first line is a header with the column ``t`` (a recording named ``.txt``;
    missing ``q``/``tau`` columns are then named by the reader).
    Anything else is a :class:`DataFileError` naming the file and what was expected, e.g. the
    ``waypoints_NN.txt`` files next to the real recordings (one configuration per line, no header).
    """
    path = Path(path)
    if path.is_dir() or path.suffix.lower() in BAG_SUFFIXES:
        return "bag"
    if path.suffix.lower() == ".csv":
        return "csv"
    columns = _recording_columns_text(n_joints)
    expected = (f"expected a CSV recording (first line a header with {columns}, "
                f"optionally dq1..dq{n_joints}; any file name), a rosbag2 folder or a .mcap/.db3 bag")
    try:
        with path.open("rb") as handle:
            start = handle.read(16)
    except OSError as exc:
        reason = "no such file or folder" if not path.exists() else exc.strerror
        raise DataFileError(f"cannot read {path}: {reason}") from None
    for magic, suffix in _BAG_MAGIC:
        if start.startswith(magic):  # the bag reader (rosbags) recognises the storage by the suffix only
            raise DataFileError(f"{path}: a rosbag2 {suffix} storage file under another name: rename it to "
                                f"{path.with_suffix(suffix).name} to read it")
    try:
        with path.open(newline="", encoding=TEXT_ENCODING) as handle:
            first = handle.readline(4096)
    except UnicodeDecodeError:
        raise DataFileError(f"{path}: not a recording: a binary file that is no rosbag2 bag ({expected})") from None
    header = [cell.strip() for cell in next(csv.reader([first]), [])]
    if "t" in header:
        return "csv"
    shown = first.strip()
    shown = repr(shown[:60] + ("..." if len(shown) > 60 else "")) if shown else "empty"
    raise DataFileError(f"{path}: not a recording: no header with {_recording_columns_text(n_joints)} "
                        f"(first line: {shown}); {expected}")


def read_csv_raw(path: str | Path, n_joints: int) -> RawRecording:
    """Every row of a CSV recording (columns in the module docstring) as written, time unchecked
    (:class:`RawRecording`). A missing column, a non-number or a non-finite value is a
    :class:`DataFileError` naming the file, line and column (:func:`~...files.dataio.read_csv_columns`)."""
    t, parts = _read_csv_arrays(path, n_joints)
    return RawRecording(t, source=str(path), **parts)


def check_plausible(data: Dataset, arm: ArmDescription) -> None:
    """:class:`IdentificationError` unless ``data`` could be a recording of ``arm`` in SI units
    (module docstring): names the file, the column, the first bad value and its sample."""
    checks = [("q", data.q, arm.position_min - POSITION_MARGIN, arm.position_max + POSITION_MARGIN,
               f"{POSITION_MARGIN:g} rad beyond the joint limits", "rad", "degrees instead of radians?")]
    if data.dq is not None:
        bound = VELOCITY_FACTOR * arm.velocity_max
        checks.append(("dq", data.dq, -bound, bound, f"above {VELOCITY_FACTOR:g} x the velocity limits", "rad/s",
                       "degrees instead of radians?"))
    torque = TORQUE_FACTOR * arm.drive_torque_limit
    checks.append(("tau", data.tau, -torque, torque, f"above {TORQUE_FACTOR:g} x the drives' peak torques", "N m",
                   "mN m instead of N m?"))
    for prefix, values, low, high, what, unit, hint in checks:
        outside = (values < low) | (values > high)
        for j in np.flatnonzero(outside.sum(axis=0) > MAX_OUTLIERS):
            k = int(np.flatnonzero(outside[:, j])[0])
            raise IdentificationError(
                f"{data.source}: column {prefix}{j + 1}: {values[k, j]:.6g} {unit} at sample {k} "
                f"(t = {data.t[k]:.6g} s) "
                f"and {int(outside[:, j].sum())} samples {what} [{low[j]:.3g}, {high[j]:.3g}] {unit}: the data "
                f"are not from this arm or not in SI units ({hint})")
