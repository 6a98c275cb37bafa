"""The excitation trajectory file (YAML): written by ``excite``, read by the identification node,
which samples :meth:`evaluate(t) <.trajectories.FourierTrajectory.evaluate>` to command the arm.

Format (``format_version: 1``; SI units, full float precision)::

    youbot_excitation_trajectory:
      format_version: 1
      kind: fourier                 # fourier | waypoints
      joint_names: [arm_joint_1, ..., arm_joint_5]
      # kind fourier (equations in youbot_dynamics/identification/trajectories.py):
      period: 10.0                  # T [s]; at rest at q(0) = q(T), repeats with period T
      offset: [...]                 # q0 [rad], one per joint
      a: [[...], ...]               # one row of K velocity amplitudes [rad/s] per joint
      b: [[...], ...]
      # kind waypoints (rest-to-rest quintic moves):
      waypoints: [[...], ...]       # m rows of joint angles [rad]
      move_durations: [...]         # m - 1 move times [s]
      dwell: 1.0                    # rest at each waypoint [s]
      design: {...}                 # informational: condition number, limits used, margins achieved;
                                    # a condition_number that is not finite (.inf) is refused

A Fourier trajectory that does not start at rest (``sum_k a_k != 0`` or ``sum_k k b_k != 0``)
is rejected, and so is a trajectory longer than :data:`.limits.MAX_DURATION` (600 s). The condition
number reported (``design.condition_number`` of the loaded file) is computed from the trajectory itself
(:func:`~..excitation.design.excitation_condition_number`, for the arm and the ``design.structure``,
default full), not read from the file, and a trajectory that leaves a base parameter unexcited
(condition number at least :data:`~..excitation.criterion.UNEXCITED_CONDITION`, e.g. all amplitudes
zero) is refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml

from ...arm.description import ArmDescription, default_arm
from ...files.fileio import atomic_write_text, load_yaml, yaml_number
from ..excitation.criterion import UNEXCITED_CONDITION
from ..excitation.design import excitation_condition_number
from ..excitation.limits import MAX_DURATION
from ..excitation.trajectories import FourierTrajectory, Trajectory, WaypointTrajectory

__all__ = ["TrajectoryFileError", "TrajectoryFile", "FORMAT_VERSION", "ROOT", "REST_TOLERANCE", "trajectory_to_dict",
           "save_trajectory", "load_trajectory"]

FORMAT_VERSION = 1
ROOT = "youbot_excitation_trajectory"
KINDS = (FourierTrajectory.kind, WaypointTrajectory.kind)
REST_TOLERANCE = 1e-9  # [rad/s] largest |q'(0)|, |q''(0)| T of a Fourier trajectory "at rest"


class TrajectoryFileError(ValueError):
    """A trajectory file is missing, malformed or inconsistent (the key is named)."""


@dataclass(frozen=True)
class TrajectoryFile:
    """What a trajectory file holds."""

    trajectory: Trajectory
    joint_names: tuple[str, ...]
    design: dict[str, Any] = field(default_factory=dict)


def trajectory_to_dict(trajectory: Trajectory, joint_names: Sequence[str],
                       design: dict[str, Any] | None = None) -> dict:
    """The YAML document of ``trajectory``."""
    if len(joint_names) != trajectory.n_joints:
        raise ValueError(f"{len(joint_names)} joint names for a trajectory of {trajectory.n_joints} joints")
    doc: dict[str, Any] = {"format_version": FORMAT_VERSION, "kind": trajectory.kind, "joint_names": list(joint_names)}
    if isinstance(trajectory, FourierTrajectory):
        doc.update(period=trajectory.period, offset=trajectory.offset.tolist(), a=trajectory.a.tolist(),
                   b=trajectory.b.tolist())
    else:
        doc.update(waypoints=trajectory.waypoints.tolist(), move_durations=trajectory.move_durations.tolist(),
                   dwell=trajectory.dwell)
    doc["design"] = design or {}
    return {ROOT: doc}


def save_trajectory(path: str | Path, trajectory: Trajectory, joint_names: Sequence[str],
                    design: dict[str, Any] | None = None) -> Path:
    """Write ``trajectory`` (and the informational ``design`` block) as YAML, atomically."""
    return atomic_write_text(path, yaml.safe_dump(trajectory_to_dict(trajectory, joint_names, design),
                                                  sort_keys=False, width=120, default_flow_style=None))


class _Reader:
    """Typed access to the keys of one document, errors naming the file and the key."""

    def __init__(self, path: Path, doc: dict) -> None:
        self.path, self.doc = path, doc

    def error(self, key: str, message: str) -> TrajectoryFileError:
        return TrajectoryFileError(f"{self.path}: {key}: {message}")

    def get(self, key: str) -> Any:
        if key not in self.doc:
            raise TrajectoryFileError(f"{self.path}: missing key '{key}'")
        return self.doc[key]

    def number(self, key: str) -> float:
        try:
            return yaml_number(self.get(key))
        except ValueError as exc:
            raise self.error(key, str(exc)) from None

    def array(self, key: str, shape: tuple[int | None, ...]) -> np.ndarray:
        """A finite float array of ``shape`` (None: any length)."""
        raw = self.get(key)
        try:
            arr = np.array(raw, dtype=float)
        except (TypeError, ValueError):
            raise self.error(key, "expected numbers in nested lists of equal length") from None
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = " x ".join("any" if s is None else str(s) for s in shape)
            raise self.error(key, f"expected shape {want}, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise self.error(key, "values must be finite")
        return arr


def _fourier(r: _Reader, n: int) -> FourierTrajectory:
    period = r.number("period")
    if period <= 0:
        raise r.error("period", f"must be > 0 s, got {period}")
    a = r.array("a", (n, None))
    if a.shape[1] < 1:
        raise r.error("a", "needs at least one harmonic")
    trajectory = FourierTrajectory(period, r.array("offset", (n,)), a, r.array("b", a.shape))
    error = trajectory.rest_error()
    if error > REST_TOLERANCE:
        raise r.error("a", f"the trajectory does not start at rest (|q'(0)|, |q''(0)| T up to {error:.3g}): the rows "
                      f"of a must sum to 0 and those of k b_k too")
    return trajectory


def _waypoints(r: _Reader, n: int) -> WaypointTrajectory:
    waypoints = r.array("waypoints", (None, n))
    if len(waypoints) < 2:
        raise r.error("waypoints", f"needs at least 2 rows, got {len(waypoints)}")
    moves = r.array("move_durations", (len(waypoints) - 1,))
    if np.any(moves <= 0):
        raise r.error("move_durations", "values must be > 0 s")
    dwell = r.number("dwell")
    if dwell < 0:
        raise r.error("dwell", f"must be >= 0 s, got {dwell}")
    return WaypointTrajectory(waypoints, moves, dwell)


def load_trajectory(path: str | Path, joint_names: Sequence[str] | None = None,
                    arm: ArmDescription | None = None) -> TrajectoryFile:
    """Read and check a trajectory file; with ``joint_names``, the file's must be the same. Its
    condition number is computed for ``arm`` (default: the package's arm description)."""
    path = Path(path)
    doc = load_yaml(path, TrajectoryFileError, "trajectory file")
    if not isinstance(doc, dict) or not isinstance(doc.get(ROOT), dict):
        raise TrajectoryFileError(f"{path}: missing top-level key '{ROOT}'")
    r = _Reader(path, doc[ROOT])
    version = r.get("format_version")
    if version != FORMAT_VERSION:
        raise r.error("format_version", f"expected {FORMAT_VERSION}, got {version!r}")
    kind = r.get("kind")
    if kind not in KINDS:
        raise r.error("kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    names = r.get("joint_names")
    if not isinstance(names, list) or not names or not all(isinstance(v, str) and v for v in names):
        raise r.error("joint_names", "expected a list of joint names")
    if joint_names is not None and list(joint_names) != names:
        raise r.error("joint_names", f"expected {list(joint_names)}, got {names}")
    trajectory = (_fourier if kind == FourierTrajectory.kind else _waypoints)(r, len(names))
    if trajectory.duration > MAX_DURATION:
        raise r.error("period" if kind == FourierTrajectory.kind else "move_durations",
                      f"the trajectory lasts {trajectory.duration:g} s, more than the maximum {MAX_DURATION:g} s "
                      f"(bounded time and memory of its verification)")
    design = r.doc.get("design") or {}
    if not isinstance(design, dict):
        raise r.error("design", "expected a mapping")
    if "condition_number" in design:
        try:
            yaml_number(design["condition_number"])
        except ValueError as exc:
            raise r.error("design.condition_number", f"{exc}: the trajectory does not excite every base parameter "
                          "(design it with more points or harmonics)") from None
    return TrajectoryFile(trajectory, tuple(names), _excitation(r, trajectory, design, arm or default_arm()))


def _excitation(r: _Reader, trajectory: Trajectory, design: dict[str, Any], arm: ArmDescription) -> dict[str, Any]:
    """``design`` with the condition number computed from ``trajectory`` (and its sample count);
    :class:`TrajectoryFileError` if the trajectory leaves a base parameter unexcited."""
    structure = design.get("structure", "full")
    if structure not in ("inertial", "rotor", "full"):
        raise r.error("design.structure", f"expected inertial, rotor or full, got {structure!r}")
    if trajectory.n_joints != arm.n_joints:
        raise r.error("joint_names", f"{trajectory.n_joints} joints, the arm description has {arm.n_joints}")
    condition, samples = excitation_condition_number(trajectory, arm, structure)
    if not condition < UNEXCITED_CONDITION:
        key = "a, b" if isinstance(trajectory, FourierTrajectory) else "waypoints"
        raise r.error(key, f"the trajectory excites too little to identify the {structure} model: condition number "
                      f"{condition:.3g} computed from it on {samples} samples (the file says "
                      f"{design.get('condition_number', 'nothing')}); design it with more points or harmonics")
    return {**design, "condition_number": condition, "samples": samples}
