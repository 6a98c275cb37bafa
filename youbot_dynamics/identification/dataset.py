"""Recorded joint data for identification: the :class:`Dataset` and its CSV form.

A dataset is what seed 002 §3.2 records: time ``t`` [s], joint angles ``q`` [rad], optionally
velocities ``q'`` [rad/s] and accelerations ``q''`` [rad/s^2] (differentiated from ``q`` when
absent, see :mod:`.processing`), and the measured drive torques ``tau_e`` [N m], with the
convention ``tau_e = M q'' + C q' + G + Ia q'' + fv q' + fc sign(q') + f0``.

CSV columns: ``t, q1..qn, dq1..dqn, tau1..taun`` with ``dq`` and ``ddq1..ddqn`` optional (extra
columns are ignored). Every check names the sample and the joint at fault.

:func:`check_plausible` refuses a recording that cannot come from the arm (positions in degrees,
say): more than :data:`MAX_OUTLIERS` samples of a joint farther than :data:`POSITION_MARGIN` rad
beyond its position limits, or with a recorded speed above :data:`VELOCITY_FACTOR` times its
velocity limit. The positions are the robust sign: degrees are 57x radians, so any motion of more
than a few degrees leaves the joint ranges. The speed bound is only a backstop (velocities in
deg/s or rpm, positions plausible): ``velocity_max`` of the arm description is the limit the
package *commands*, not what a recorded arm may do. The real youBot's joint 5 reaches 3.7-4.0
rad/s, 2.5x its 1.57 rad/s (``/work/shared/data/youbot_real``, driven by the vendor's position
loop), so the factor is 10: degrees of a motion at a sixth of ``velocity_max`` or faster (57x)
still exceed it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from ..arm import ArmDescription
from ..dataio import DataFileError, read_csv_columns, read_csv_header, write_csv

__all__ = ["IdentificationError", "Dataset", "joint_columns", "read_csv_dataset", "write_csv_dataset",
           "load_dataset", "check_plausible", "POSITION_MARGIN", "VELOCITY_FACTOR", "MAX_OUTLIERS"]

Array = NDArray[np.float64]

POSITION_MARGIN = 0.2  # [rad] beyond a position limit that a recorded angle may lie (calibration, overshoot)
VELOCITY_FACTOR = 10.0  # a recorded speed may reach this multiple of velocity_max (real arms: 2.5x, module docstring)
MAX_OUTLIERS = 5  # samples per joint allowed beyond either bound (glitches) before the recording is refused


class IdentificationError(ValueError):
    """The data cannot give an identification: too short, not exciting enough, inconsistent."""


def joint_columns(prefix: str, n_joints: int) -> list[str]:
    """``[prefix1, ..., prefixn]``, e.g. ``q1..q5``."""
    return [f"{prefix}{i}" for i in range(1, n_joints + 1)]


@dataclass(frozen=True)
class Dataset:
    """One recording: ``t`` (N,), ``q``/``tau`` and optional ``dq``/``ddq`` (N, n), SI units.

    Construction checks the shapes, that every value is finite and that time strictly increases;
    :class:`IdentificationError` names the array, sample and joint at fault.
    """

    t: Array
    q: Array
    tau: Array
    dq: Array | None = None
    ddq: Array | None = None
    source: str = "<memory>"

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=float)
        if t.ndim != 1 or t.size < 2:
            raise IdentificationError(f"{self.source}: t must be a 1-D array of at least 2 samples, "
                                      f"got shape {t.shape}")
        object.__setattr__(self, "t", t)
        self._check_finite("t", t[:, None])
        n = None
        for name in ("q", "tau", "dq", "ddq"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.asarray(value, dtype=float)
            if arr.ndim != 2 or arr.shape[0] != t.size or (n is not None and arr.shape[1] != n):
                expected = f"({t.size}, {n if n is not None else 'n'})"
                raise IdentificationError(f"{self.source}: {name} must have shape {expected}, got {arr.shape}")
            n = arr.shape[1]
            self._check_finite(name, arr)
            object.__setattr__(self, name, arr)
        steps = np.diff(t)
        bad = np.flatnonzero(steps <= 0)
        if bad.size:
            k = int(bad[0]) + 1
            what = "repeats" if steps[k - 1] == 0 else "goes backwards"
            raise IdentificationError(f"{self.source}: time {what} at sample {k}: t = {float(t[k])!r} s after "
                                      f"{float(t[k - 1])!r} s "
                                      f"({bad.size} such samples)")

    def _check_finite(self, name: str, arr: Array) -> None:
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            k, j = (int(v) for v in bad[0])
            label = name if name == "t" else f"{name}{j + 1}"
            raise IdentificationError(f"{self.source}: {label} is {arr[k, j]} at sample {k} "
                                      f"({len(bad)} non-finite values in {name})")

    @property
    def n_samples(self) -> int:
        return int(self.t.size)

    @property
    def n_joints(self) -> int:
        return int(self.q.shape[1])

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


def read_csv_dataset(path: str | Path, n_joints: int) -> Dataset:
    """A :class:`Dataset` from a CSV file (columns in the module docstring)."""
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
    try:
        return Dataset(data[:, 0], source=str(path), **parts)
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


def load_dataset(path: str | Path, n_joints: int, joint_names: Sequence[str] | None = None,
                 topic: str = "/joint_states") -> Dataset:
    """A CSV file, or a rosbag2 folder / ``.mcap`` / ``.db3`` file with ``sensor_msgs/JointState``."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return read_csv_dataset(path, n_joints)
    from .bagio import read_joint_states

    return read_joint_states(path, joint_names, topic, n_joints)


def check_plausible(data: Dataset, arm: ArmDescription) -> None:
    """:class:`IdentificationError` unless ``data`` could be a recording of ``arm`` in SI units
    (module docstring): names the file, the column, the first bad value and its sample."""
    checks = [("q", data.q, arm.position_min - POSITION_MARGIN, arm.position_max + POSITION_MARGIN,
               f"{POSITION_MARGIN:g} rad beyond the joint limits")]
    if data.dq is not None:
        bound = VELOCITY_FACTOR * arm.velocity_max
        checks.append(("dq", data.dq, -bound, bound, f"above {VELOCITY_FACTOR:g} x the velocity limits"))
    for prefix, values, low, high, what in checks:
        outside = (values < low) | (values > high)
        for j in np.flatnonzero(outside.sum(axis=0) > MAX_OUTLIERS):
            k = int(np.flatnonzero(outside[:, j])[0])
            unit = "rad" if prefix == "q" else "rad/s"
            raise IdentificationError(
                f"{data.source}: column {prefix}{j + 1}: {values[k, j]:.6g} {unit} at sample {k} "
                f"(t = {data.t[k]:.6g} s) "
                f"and {int(outside[:, j].sum())} samples {what} [{low[j]:.3g}, {high[j]:.3g}] {unit}: the data "
                f"are not from this arm or not in SI units (degrees instead of radians?)")
