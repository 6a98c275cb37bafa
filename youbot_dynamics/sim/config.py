"""The simulator's "true robot" configuration: ``config/sim.yaml`` (top key ``sim:``).

Every key is documented with its unit in that file. Loading validates types, lengths (one value
per joint of the arm), finiteness and signs, and rejects unknown keys; a :class:`SimConfigError`
names the offending key as a dotted path, e.g. ``sim.position_controller.kp``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, default_arm
from ..files.fileio import load_yaml, yaml_number
from ..motion.interpolation import INTERPOLATIONS
from ..files.paths import config_path

__all__ = [
    "SIM_CONFIG_FILE",
    "FOREIGN_KINDS",
    "INTERPOLATIONS",
    "SimConfigError",
    "Perturbation",
    "PositionGains",
    "VelocityGains",
    "SimConfig",
    "ROBOTS",
    "sim_config_from_dict",
    "load_sim_config",
]

Array = NDArray[np.float64]

SIM_CONFIG_FILE = "sim.yaml"
#: the kinds of foreign robot (:data:`.true_robot.FOREIGN_FAMILY`)
FOREIGN_KINDS = ("foreign", "dry_wrist", "stribeck", "heavy", "low_friction")
#: the true robots: the simulator's (``config/sim.yaml``) and the foreign ones (:func:`.true_robot.foreign_robot`)
ROBOTS = ("simulator", "foreign", *(f"foreign_{kind}" for kind in FOREIGN_KINDS[1:]))


class SimConfigError(ValueError):
    """The simulator configuration is missing a key or holds an invalid value (the key is named)."""


@dataclass(frozen=True)
class Perturbation:
    """Standard deviations of the random deviation of the true link inertials from the nominal ones."""

    mass_relative_std: float  # [-], log-normal factor on each link mass
    com_std: float  # [m], added to each centre-of-mass coordinate
    inertia_relative_std: float  # [-], log-normal factor on each principal second moment


@dataclass(frozen=True)
class PositionGains:
    """Per-joint position PID of the drives and the ramp generator feeding it."""

    kp: Array  # [N m / rad]
    ki: Array  # [N m / (rad s)]
    kd: Array  # [N m s / rad]
    integral_limit: Array  # [N m], clamp of the integral term ki * integral(e dt)
    ramp_velocity: Array  # [rad/s], speed at which a position set-point is approached


@dataclass(frozen=True)
class VelocityGains:
    """Per-joint velocity PI of the drives."""

    kp: Array  # [N m s / rad]
    ki: Array  # [N m / rad]
    integral_limit: Array  # [N m], clamp of the integral term


@dataclass(frozen=True)
class SimConfig:
    """Validated content of ``config/sim.yaml`` (arrays are read-only, one value per joint)."""

    timestep: float  # [s]
    seed: int
    perturbation: Perturbation
    motor_rotor_inertia: Array  # J [kg m^2] at the motor; armature = gear_ratio^2 J
    viscous_friction: Array  # fv [N m s / rad]
    coulomb_friction: Array  # fc [N m]
    friction_offset: Array  # f0 [N m]
    coulomb_asymmetry: Array  # fa [N m], Coulomb level fc + fa moving up, fc - fa moving down (|fa| <= fc)
    stribeck_friction: Array  # fs [N m], static excess over the Coulomb level (breakaway fc + fs)
    stribeck_velocity: Array  # vs [rad/s], the excess decays as exp(-(q'/vs)^2)
    load_friction: Array  # fl [-], Coulomb friction per N m of rigid-body torque |M q'' + C q' + G|
    torque_noise_std: Array  # [N m]
    effort_gain_error: Array  # g [-], measured effort = (1 + g) tau + o + noise
    effort_offset: Array  # o [N m]
    velocity_lag: float  # [s], time constant of the reported velocity's first-order lag (0: none)
    encoder_quantization: bool
    velocity_quantization: bool
    payload_mass: float  # [kg]
    payload_position: Array  # [m], the payload's centre of mass in the tool frame
    home: Array  # [rad]
    command_timeout: float  # [s]
    position_controller: PositionGains
    velocity_controller: VelocityGains
    trajectory_interpolation: str  # one of INTERPOLATIONS
    robot: str = "simulator"  # one of ROBOTS: "foreign*" = :func:`.true_robot.foreign_robot` (never from the file)
    robot_seed: int = 0  # the foreign robot's own seed of its parameters

    @property
    def n_joints(self) -> int:
        return int(self.home.size)


# ---------------------------------------------------------------------------------------------
# Validation helpers: each takes the mapping, the key and the dotted path of the mapping.


def _section(node: dict, key: str, where: str, allowed: tuple[str, ...]) -> dict:
    value = _get(node, key, where)
    path = f"{where}.{key}"
    if not isinstance(value, dict):
        raise SimConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
    _no_unknown_keys(value, path, allowed)
    return value


def _no_unknown_keys(node: dict, where: str, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(node) - set(allowed))
    if unknown:
        raise SimConfigError(f"{where}.{unknown[0]}: unknown key (allowed: {', '.join(allowed)})")


def _get(node: dict, key: str, where: str) -> Any:
    if key not in node:
        raise SimConfigError(f"{where}.{key}: missing key")
    return node[key]


def _check_sign(values: Array, path: str, sign: str) -> None:
    if sign == "positive" and np.any(values <= 0):
        raise SimConfigError(f"{path}: values must be > 0, got {values.tolist()}")
    if sign == "nonnegative" and np.any(values < 0):
        raise SimConfigError(f"{path}: values must be >= 0, got {values.tolist()}")


def _number(node: dict, key: str, where: str, sign: str = "any") -> float:
    raw = _get(node, key, where)
    path = f"{where}.{key}"
    try:
        value = yaml_number(raw)
    except ValueError as exc:
        raise SimConfigError(f"{path}: {exc}") from None
    _check_sign(np.array([value]), path, sign)
    return value


def _joint_vector(node: dict, key: str, where: str, n: int, sign: str = "any") -> Array:
    """A list of ``n`` finite numbers, one per joint, of the given ``sign``."""
    values = _vector(node, key, where, n, "numbers (one per joint)")
    _check_sign(values, f"{where}.{key}", sign)
    return values


def _vector(node: dict, key: str, where: str, size: int, what: str = "numbers") -> Array:
    """A read-only list of ``size`` finite numbers."""
    raw = _get(node, key, where)
    path = f"{where}.{key}"
    if not isinstance(raw, list) or len(raw) != size:
        got = f"{len(raw)} values" if isinstance(raw, list) else repr(raw)
        raise SimConfigError(f"{path}: expected a list of {size} {what}, got {got}")
    try:
        values = np.array([yaml_number(v) for v in raw])
    except ValueError as exc:
        raise SimConfigError(f"{path}: {exc}") from None
    values.setflags(write=False)
    return values


def _flag(node: dict, key: str, where: str) -> bool:
    raw = _get(node, key, where)
    if not isinstance(raw, bool):
        raise SimConfigError(f"{where}.{key}: expected true or false, got {raw!r}")
    return raw


# ---------------------------------------------------------------------------------------------

_TOP_KEYS = ("timestep", "seed", "perturbation", "motor_rotor_inertia", "viscous_friction", "coulomb_friction",
             "friction_offset", "coulomb_asymmetry", "stribeck_friction", "stribeck_velocity", "load_friction",
             "torque_noise_std", "effort_gain_error", "effort_offset", "velocity_lag", "encoder_quantization",
             "velocity_quantization", "payload_mass", "payload_position", "home", "command_timeout",
             "position_controller", "velocity_controller", "trajectory_interpolation")
_PERTURBATION_KEYS = ("mass_relative_std", "com_std", "inertia_relative_std")
_POSITION_KEYS = ("kp", "ki", "kd", "integral_limit", "ramp_velocity")
_VELOCITY_KEYS = ("kp", "ki", "integral_limit")


def sim_config_from_dict(doc: Any, arm: ArmDescription | None = None) -> SimConfig:
    """Validate the parsed ``sim:`` mapping against ``arm`` (default: the youBot) and build a :class:`SimConfig`."""
    arm = arm if arm is not None else default_arm()
    n, where = arm.n_joints, "sim"
    if not isinstance(doc, dict):
        raise SimConfigError(f"{where}: expected a mapping, got {type(doc).__name__}")
    _no_unknown_keys(doc, where, _TOP_KEYS)

    seed = _get(doc, "seed", where)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SimConfigError(f"{where}.seed: expected a non-negative integer, got {seed!r}")
    interpolation = _get(doc, "trajectory_interpolation", where)
    if interpolation not in INTERPOLATIONS:
        raise SimConfigError(f"{where}.trajectory_interpolation: expected one of {INTERPOLATIONS}, "
                             f"got {interpolation!r}")

    home = _joint_vector(doc, "home", where, n)
    if not arm.within_limits(home, tolerance=0.0):
        raise SimConfigError(f"{where}.home: {home.tolist()} is outside the joint limits "
                             f"[{arm.position_min.tolist()}, {arm.position_max.tolist()}]")

    coulomb = _joint_vector(doc, "coulomb_friction", where, n, "nonnegative")
    asymmetry = _joint_vector(doc, "coulomb_asymmetry", where, n)
    if np.any(np.abs(asymmetry) > coulomb):
        j = int(np.flatnonzero(np.abs(asymmetry) > coulomb)[0])
        raise SimConfigError(f"{where}.coulomb_asymmetry: |fa| must not exceed coulomb_friction fc (the Coulomb "
                             f"levels are fc + fa and fc - fa), got fa = {asymmetry[j]:g} > fc = {coulomb[j]:g} "
                             f"on joint {j + 1}")
    gain = _joint_vector(doc, "effort_gain_error", where, n)
    if np.any(np.abs(gain) >= 0.5):
        raise SimConfigError(f"{where}.effort_gain_error: a relative gain error g must lie in (-0.5, 0.5) "
                             f"(measured effort (1 + g) tau), got {gain.tolist()}")
    payload_position = _vector(doc, "payload_position", where, 3)

    pert = _section(doc, "perturbation", where, _PERTURBATION_KEYS)
    pos = _section(doc, "position_controller", where, _POSITION_KEYS)
    vel = _section(doc, "velocity_controller", where, _VELOCITY_KEYS)
    pos_where, vel_where = f"{where}.position_controller", f"{where}.velocity_controller"
    return SimConfig(
        timestep=_number(doc, "timestep", where, "positive"),
        seed=seed,
        perturbation=Perturbation(
            **{key: _number(pert, key, f"{where}.perturbation", "nonnegative") for key in _PERTURBATION_KEYS}),
        motor_rotor_inertia=_joint_vector(doc, "motor_rotor_inertia", where, n, "nonnegative"),
        viscous_friction=_joint_vector(doc, "viscous_friction", where, n, "nonnegative"),
        coulomb_friction=coulomb,
        friction_offset=_joint_vector(doc, "friction_offset", where, n),
        coulomb_asymmetry=asymmetry,
        stribeck_friction=_joint_vector(doc, "stribeck_friction", where, n, "nonnegative"),
        stribeck_velocity=_joint_vector(doc, "stribeck_velocity", where, n, "positive"),
        load_friction=_joint_vector(doc, "load_friction", where, n, "nonnegative"),
        torque_noise_std=_joint_vector(doc, "torque_noise_std", where, n, "nonnegative"),
        effort_gain_error=gain,
        effort_offset=_joint_vector(doc, "effort_offset", where, n),
        velocity_lag=_number(doc, "velocity_lag", where, "nonnegative"),
        encoder_quantization=_flag(doc, "encoder_quantization", where),
        velocity_quantization=_flag(doc, "velocity_quantization", where),
        payload_mass=_number(doc, "payload_mass", where, "nonnegative"),
        payload_position=payload_position,
        home=home,
        command_timeout=_number(doc, "command_timeout", where, "positive"),
        position_controller=PositionGains(
            kp=_joint_vector(pos, "kp", pos_where, n, "positive"),
            ki=_joint_vector(pos, "ki", pos_where, n, "nonnegative"),
            kd=_joint_vector(pos, "kd", pos_where, n, "nonnegative"),
            integral_limit=_joint_vector(pos, "integral_limit", pos_where, n, "nonnegative"),
            ramp_velocity=_joint_vector(pos, "ramp_velocity", pos_where, n, "positive"),
        ),
        velocity_controller=VelocityGains(
            kp=_joint_vector(vel, "kp", vel_where, n, "positive"),
            ki=_joint_vector(vel, "ki", vel_where, n, "nonnegative"),
            integral_limit=_joint_vector(vel, "integral_limit", vel_where, n, "nonnegative"),
        ),
        trajectory_interpolation=interpolation,
    )


def load_sim_config(path: str | Path | None = None, arm: ArmDescription | None = None) -> SimConfig:
    """Load and validate a simulator configuration (default: the package's ``config/sim.yaml``)."""
    path = Path(path) if path is not None else config_path(SIM_CONFIG_FILE)
    doc = load_yaml(path, SimConfigError, "simulator configuration")
    if not isinstance(doc, dict) or "sim" not in doc:
        raise SimConfigError(f"{path}: missing top-level key 'sim'")
    return sim_config_from_dict(doc["sim"], arm)
