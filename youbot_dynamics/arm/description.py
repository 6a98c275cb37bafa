"""The arm description: the single source of truth for geometry, limits, drives and inertials.

Loaded from ``config/youbot_arm.yaml`` (see the comments in that file for every key). Kinematics
follow seed 002, eq. (2.1)-(2.6) and Table 2.1: standard Denavit-Hartenberg,
``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` with ``theta_i = theta_offset_i + direction_i q_i``
(``direction = -1`` gives the seed's ``theta = offset - q``), where ``q`` is the joint angle as the
youBot driver reports it (zero at the calibration stop).

Nominal inertials are per link, expressed in the DH frame of that link: mass, centre of mass and
inertia tensor about the centre of mass (URDF convention: ``ixy`` is the tensor entry, i.e.
``-integral(x y dm)``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..files.fileio import load_yaml, yaml_number
from ..files.paths import config_path
from .transforms import rpy_to_rotation, transform

__all__ = [
    "ArmDescriptionError",
    "LinkInertial",
    "ArmDescription",
    "load_arm",
    "default_arm",
    "inertia_matrix",
    "check_joint_values",
]

Array = NDArray[np.float64]


class ArmDescriptionError(ValueError):
    """The arm description file is missing a key or holds an invalid value (the key is named)."""


def inertia_matrix(six: Any) -> Array:
    """3x3 symmetric tensor from ``[ixx, iyy, izz, ixy, ixz, iyz]`` (tensor entries)."""
    ixx, iyy, izz, ixy, ixz, iyz = np.asarray(six, dtype=float)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@dataclass(frozen=True)
class LinkInertial:
    """Mass [kg], centre of mass [m] and inertia about the centre of mass [kg m^2], DH-frame axes."""

    mass: float
    com: Array
    inertia: Array  # 3x3 tensor about the CoM


@dataclass(frozen=True)
class ArmDescription:
    """Everything the package knows about one serial arm of revolute joints."""

    name: str
    joint_names: tuple[str, ...]
    link_names: tuple[str, ...]  # base link first: n + 1 names
    gravity: float
    dh_a: Array
    dh_alpha: Array
    dh_d: Array
    theta_offset: Array
    direction: Array
    tool: Array  # 4x4 tool frame in the last DH frame
    position_min: Array
    position_max: Array
    velocity_max: Array
    acceleration_max: Array
    effort_max: Array
    gear_ratio: Array
    motor_rotor_inertia: Array  # J at the motor shaft [kg m^2]
    encoder_ticks: Array
    inverse_direction: tuple[bool, ...]
    torque_constant: Array
    max_current: Array
    calibration_direction: tuple[str, ...]
    calibration_current: Array
    links: tuple[LinkInertial, ...]
    source: str = field(default="<memory>", compare=False)

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    def theta(self, q: Any) -> Array:
        """DH joint angles ``theta = offset + direction * q`` for driver angles ``q`` (..., n)."""
        return self.theta_offset + self.direction * np.asarray(q, dtype=float)

    def q_from_theta(self, theta: Any) -> Array:
        """Driver angles from DH angles (inverse of :meth:`theta`)."""
        return (np.asarray(theta, dtype=float) - self.theta_offset) * self.direction

    @property
    def armature(self) -> Array:
        """Reflected rotor inertia ``Ia = N^2 J`` per joint [kg m^2] (the drive term ``Ia q''`` of
        seed 002, eq. 2.58): what a joint's motor adds to ``M_jj``."""
        return self.gear_ratio ** 2 * self.motor_rotor_inertia

    @property
    def drive_torque_limit(self) -> Array:
        """Peak joint torque the drives can produce [Nm]: ``max_current * kt * gear_ratio``."""
        return self.max_current * self.torque_constant * self.gear_ratio

    @property
    def torque_limit(self) -> Array:
        """The joint torque the arm may be commanded [Nm]: ``min(effort_max, drive_torque_limit)``
        (the URDF's effort limit where the drives could give more, the drives' peak where not)."""
        return np.minimum(self.effort_max, self.drive_torque_limit)

    def within_limits(self, q: Any, tolerance: float = 1e-9) -> NDArray[np.bool_]:
        """True where every joint of ``q`` (..., n) lies inside ``[position_min, position_max]``."""
        q = np.asarray(q, dtype=float)
        ok = (q >= self.position_min - tolerance) & (q <= self.position_max + tolerance)
        return np.all(ok, axis=-1)

    def check_q(self, q: Any, name: str = "q") -> Array:
        """``q`` as a float array with last axis n_joints; raises ``ValueError`` on a wrong length or NaN."""
        return check_joint_values(q, self.n_joints, name)

    def outside_limits(self, q: Any, slack: float = 0.0) -> str:
        """'' when every joint of ``q`` (..., n) is within ``slack`` of ``[position_min, position_max]``,
        else the first one outside in words: ``outside the joint limits: arm_joint_1 = 100 rad, limits
        [0.01007, 5.84] rad`` (and how many more values are outside)."""
        q = np.asarray(q, dtype=float)
        low, high = self.position_min, self.position_max
        outside = (q < low - slack) | (q > high + slack)
        if not np.any(outside):
            return ""
        where = tuple(np.argwhere(outside)[0])
        j, more = where[-1], int(np.count_nonzero(outside)) - 1
        return (f"outside the joint limits: {self.joint_names[j]} = {q[where]:.4g} rad, limits [{low[j]:.4g}, "
                f"{high[j]:.4g}] rad" + (f" (and {more} more value{'s' if more > 1 else ''})" if more else ""))

    def joint_positions(self, q: Any, name: str = "q") -> Array:
        """:meth:`check_q`, and ``ValueError`` for a joint more than a turn (2 pi) beyond its limits:
        not a position of that joint (1e308 rad would give a pose of rounding noise)."""
        q = self.check_q(q, name)
        far = self.outside_limits(q, slack=2 * np.pi)
        if far:
            raise ValueError(f"{name}: {far}: more than a turn beyond them, not a position of the joint")
        return q


def check_joint_values(values: Any, n_joints: int, name: str) -> Array:
    """``values`` as a float array with last axis ``n_joints``; ``ValueError`` on a wrong length or NaN."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] != n_joints:
        raise ValueError(f"{name} must have {n_joints} joint values per row, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


# ---------------------------------------------------------------------------------------------
# Loading and validation


def _get(node: dict, key: str, where: str) -> Any:
    if not isinstance(node, dict) or key not in node:
        raise ArmDescriptionError(f"{where}: missing key '{key}'")
    return node[key]


def _vector(node: dict, key: str, where: str, n: int, *, positive: bool = False,
            nonnegative: bool = False) -> Array:
    path = f"{where}.{key}"
    raw = _get(node, key, where)
    if not isinstance(raw, (list, tuple)):
        raise ArmDescriptionError(f"{path}: expected a list of {n} numbers, got {type(raw).__name__}")
    if len(raw) != n:
        raise ArmDescriptionError(f"{path}: expected {n} values, got {len(raw)}")
    try:
        arr = np.array([yaml_number(v) for v in raw])
    except ValueError as exc:
        raise ArmDescriptionError(f"{path}: {exc}") from None
    if positive and np.any(arr <= 0):
        raise ArmDescriptionError(f"{path}: values must be > 0, got {raw}")
    if nonnegative and np.any(arr < 0):
        raise ArmDescriptionError(f"{path}: values must be >= 0, got {raw}")
    return arr


def _scalar(node: dict, key: str, where: str, *, positive: bool = False) -> float:
    raw = _get(node, key, where)
    try:
        value = yaml_number(raw)
    except ValueError as exc:
        raise ArmDescriptionError(f"{where}.{key}: {exc}") from None
    if positive and value <= 0:
        raise ArmDescriptionError(f"{where}.{key}: expected a positive number, got {raw!r}")
    return value


def _strings(node: dict, key: str, where: str, n: int | None = None) -> tuple[str, ...]:
    raw = _get(node, key, where)
    if not isinstance(raw, list) or not all(isinstance(v, str) and v for v in raw):
        raise ArmDescriptionError(f"{where}.{key}: expected a list of non-empty strings")
    if n is not None and len(raw) != n:
        raise ArmDescriptionError(f"{where}.{key}: expected {n} values, got {len(raw)}")
    if len(set(raw)) != len(raw):
        raise ArmDescriptionError(f"{where}.{key}: names must be unique")
    return tuple(raw)


def _tool(node: dict) -> Array:
    tool = node.get("tool", {"xyz": [0.0, 0.0, 0.0], "rpy": [0.0, 0.0, 0.0]})
    xyz = _vector(tool, "xyz", "tool", 3)
    rpy = _vector(tool, "rpy", "tool", 3)
    return transform(rpy_to_rotation(rpy), xyz)


def _link_inertial(node: Any, where: str) -> LinkInertial:
    mass = _scalar(node, "mass", where, positive=True)
    com = _vector(node, "com", where, 3)
    six = _vector(node, "inertia", where, 6)
    inertia = inertia_matrix(six)
    eig = np.linalg.eigvalsh(inertia)
    if eig[0] <= 0:
        raise ArmDescriptionError(f"{where}.inertia: not positive definite (eigenvalues {eig})")
    # Principal moments of a real body satisfy the triangle inequality I_a + I_b >= I_c.
    if eig[0] + eig[1] < eig[2] * (1 - 1e-9):
        raise ArmDescriptionError(f"{where}.inertia: violates the triangle inequality (principal moments {eig})")
    return LinkInertial(mass=mass, com=com, inertia=inertia)


def arm_from_dict(doc: Any, source: str = "<memory>") -> ArmDescription:
    """Build and validate an :class:`ArmDescription` from the parsed YAML document."""
    if not isinstance(doc, dict):
        raise ArmDescriptionError(f"{source}: top level must be a mapping")
    name = str(_get(doc, "name", "arm"))
    joint_names = _strings(doc, "joint_names", "arm")
    n = len(joint_names)
    if n == 0:
        raise ArmDescriptionError("arm.joint_names: at least one joint is required")
    link_names = _strings(doc, "link_names", "arm", n + 1)
    gravity = _scalar(doc, "gravity", "arm", positive=True)

    dh = _get(doc, "dh", "arm")
    direction = _vector(dh, "direction", "dh", n)
    if not np.all(np.isin(direction, (-1.0, 1.0))):
        raise ArmDescriptionError(f"dh.direction: each value must be +1 or -1, got {list(direction)}")

    joints = _get(doc, "joints", "arm")
    pmin = _vector(joints, "position_min", "joints", n)
    pmax = _vector(joints, "position_max", "joints", n)
    if np.any(pmin >= pmax):
        raise ArmDescriptionError("joints.position_min: must be below position_max "
                                  f"(min {list(pmin)}, max {list(pmax)})")

    drives = _get(doc, "drives", "arm")
    inverse = _get(drives, "inverse_direction", "drives")
    if not isinstance(inverse, list) or len(inverse) != n or not all(isinstance(v, bool) for v in inverse):
        raise ArmDescriptionError(f"drives.inverse_direction: expected {n} booleans")
    cal_dir = _get(drives, "calibration_direction", "drives")
    if not isinstance(cal_dir, list) or len(cal_dir) != n or not all(v in ("positive", "negative") for v in cal_dir):
        raise ArmDescriptionError(f"drives.calibration_direction: expected {n} values 'positive' or 'negative'")

    raw_links = _get(doc, "links", "arm")
    if not isinstance(raw_links, list) or len(raw_links) != n:
        raise ArmDescriptionError(f"arm.links: expected {n} link inertials (one per moving link)")
    links = tuple(_link_inertial(node, f"links[{i}]") for i, node in enumerate(raw_links))

    return ArmDescription(
        name=name,
        joint_names=joint_names,
        link_names=link_names,
        gravity=gravity,
        dh_a=_vector(dh, "a", "dh", n),
        dh_alpha=_vector(dh, "alpha", "dh", n),
        dh_d=_vector(dh, "d", "dh", n),
        theta_offset=_vector(dh, "theta_offset", "dh", n),
        direction=direction,
        tool=_tool(doc),
        position_min=pmin,
        position_max=pmax,
        velocity_max=_vector(joints, "velocity_max", "joints", n, positive=True),
        acceleration_max=_vector(joints, "acceleration_max", "joints", n, positive=True),
        effort_max=_vector(joints, "effort_max", "joints", n, positive=True),
        gear_ratio=_vector(drives, "gear_ratio", "drives", n, positive=True),
        motor_rotor_inertia=_vector(drives, "motor_rotor_inertia", "drives", n, nonnegative=True),
        encoder_ticks=_vector(drives, "encoder_ticks_per_motor_revolution", "drives", n, positive=True),
        inverse_direction=tuple(inverse),
        torque_constant=_vector(drives, "torque_constant", "drives", n, positive=True),
        max_current=_vector(drives, "max_current", "drives", n, positive=True),
        calibration_direction=tuple(cal_dir),
        calibration_current=_vector(drives, "calibration_current", "drives", n, positive=True),
        links=links,
        source=source,
    )


def load_arm(path: str | Path | None = None) -> ArmDescription:
    """Load and validate an arm description YAML (default: the package's ``config/youbot_arm.yaml``)."""
    path = Path(path) if path is not None else config_path("youbot_arm.yaml")
    doc = load_yaml(path, ArmDescriptionError, "arm description")
    if not isinstance(doc, dict) or "arm" not in doc:
        raise ArmDescriptionError(f"{path}: missing top-level key 'arm'")
    try:
        return arm_from_dict(doc["arm"], source=str(path))
    except ArmDescriptionError as exc:
        raise ArmDescriptionError(f"{path}: {exc}") from None


@lru_cache(maxsize=1)
def default_arm() -> ArmDescription:
    """The youBot arm of ``config/youbot_arm.yaml`` (loaded once)."""
    return load_arm()
