"""Analytic inverse kinematics of the youBot arm: all four configurations, vectorised.

Seed 002, eq. (2.9)-(2.29), with the planar 2R sub-problem of the missing pages (digest):

* ``theta1 = atan2(py, px)`` (shoulder "front") or ``atan2(-py, -px)`` ("back");
* ``theta5 = atan2(r11 s1 - r21 c1, r12 s1 - r22 c1)``, ``theta234 = atan2(r13 c1 + r23 s1, -r33)``;
* ``xr = px c1 + py s1 - a1 - d5 s234``, ``yr = pz - d1 + d5 c234``,
  ``c3 = (xr^2 + yr^2 - a2^2 - a3^2) / (2 a2 a3)``, ``theta3 = +-atan2(sqrt(1 - c3^2), c3)``,
  ``theta2 = atan2(yr, xr) - atan2(a3 s3, a2 + a3 c3)``, ``theta4 = theta234 - theta2 - theta3``;
* ``q = (theta - offset) * direction`` (2.29), wrapped by multiples of 2 pi into the joint range.

A 5-DOF arm reaches only poses whose approach axis ``z5`` lies in the vertical plane through
joint 1, i.e. ``z1 . z5 = r13 s1 - r23 c1 = 0`` (element (3,3) of ``A1^-1 T``); the seed omits the
check, here it is a distinct error (or, on request, the orientation is projected onto the plane)
beyond :data:`ORIENTATION_TOLERANCE` (1e-3: poses rounded to 5 decimals are accepted). Near the
joint-1 axis the plane is fitted to the approach axis as well as the point (:data:`PLANE_SCALE`).

Branch names: ``front``/``back`` is theta1 I/II; ``elbow_up`` is the elbow above the line from
the shoulder (joint 2) to the wrist (joint 4) as seen in the arm's own vertical plane, which is
``theta3 <= 0`` for the front shoulder and ``theta3 >= 0`` for the back one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .description import ArmDescription
from .kinematics import forward_kinematics
from .transforms import invert_transform, rotation_angle, skew

__all__ = [
    "BRANCHES",
    "IKError",
    "OutOfReachError",
    "UnreachableOrientationError",
    "JointLimitError",
    "IKStatus",
    "IKSolution",
    "IKBatch",
    "solve_ik_batch",
    "inverse_kinematics",
    "closest_solution",
    "sort_by_distance",
    "project_orientation",
    "ORIENTATION_TOLERANCE",
    "PLANE_SCALE",
]

Array = NDArray[np.float64]

# [m] a target at least this far from the base origin is out of reach without solving (the arm reaches
# under 1 m; beyond 1e154 m the solver's squares overflow: 'inf m' and numpy warnings in the log)
FAR_TARGET = 1e3
AXIS_TOLERANCE = 1e-7  # [m] distance from the joint-1 axis below which theta1 follows the approach axis
# Sine of the largest angle between the target's approach axis and the arm plane still accepted
# (the default of every IK entry point: the CLI `ik`, the PD controller's ~/goal_pose, the
# kinematics node). 1e-3 (0.057 deg, as `line`) accepts poses rounded to 5 decimals (1e-6 refused
# 181 of 200: rounding alone tilts the approach axis by ~1e-5 out of the plane) and keeps the tool
# within 1 mrad of the requested orientation; a tilt beyond it is refused (or projected on request).
ORIENTATION_TOLERANCE = 1e-3
# [m / rad] The arm plane is the one through joint 1 that best fits both the target point and the
# approach axis, a distance of PLANE_SCALE from the plane weighing as much as an angle of 1 rad of
# the approach axis out of it. Far from the joint-1 axis this is the plane through the point (as
# in the seed): a target point at r from the axis turns it by only ~(PLANE_SCALE / r)^2 of the
# approach axis's angle. Near the axis, where an error e of the point turns the plane through it
# by e / r (5-decimal coordinates 1 mm from the axis: 0.007 rad), the approach axis fixes it.
# The point may then lie up to orientation_tolerance x PLANE_SCALE off the plane (5e-5 m at the
# default tolerance, 7x the rounding of 5-decimal coordinates), else the plane through the point is used.
PLANE_SCALE = 0.05

BRANCHES: tuple[str, ...] = ("front_elbow_up", "front_elbow_down", "back_elbow_up", "back_elbow_down")


class IKError(ValueError):
    """No usable inverse-kinematics solution; the subclass says why."""


class OutOfReachError(IKError):
    """The target position is outside the arm's workspace."""


class UnreachableOrientationError(IKError):
    """The approach axis is not in the vertical plane through joint 1 (a 5-DOF arm cannot take it)."""


class JointLimitError(IKError):
    """Real solutions exist, but none lies inside the joint limits."""


class IKStatus:
    """Per-pose status codes of :class:`IKBatch`."""

    OK = 0
    OUT_OF_REACH = 1
    ORIENTATION_UNREACHABLE = 2
    OUTSIDE_LIMITS = 3


@dataclass(frozen=True)
class IKSolution:
    q: Array  # driver joint angles [rad]
    branch: str
    within_limits: bool
    position_error: float  # |p_fk - p_target| [m]
    orientation_error: float  # angle of R_fk^T R_target [rad]
    projection_angle: float = 0.0  # orientation change made by projection [rad] (0 if none)

    @property
    def residual(self) -> float:
        """Largest of the position [m] and orientation [rad] errors of FK(q) against the target."""
        return max(self.position_error, self.orientation_error)


@dataclass(frozen=True)
class IKBatch:
    """IK of N poses, 4 branches each (order of :data:`BRANCHES`)."""

    q: Array  # (N, 4, n)
    real: NDArray[np.bool_]  # (N, 4): the branch has a real solution
    within_limits: NDArray[np.bool_]  # (N, 4): real and inside the joint limits
    position_error: Array  # (N, 4), NaN where not real
    orientation_error: Array  # (N, 4)
    status: NDArray[np.int8]  # (N,), IKStatus codes
    out_of_plane: Array  # (N,): sine of the angle between the approach axis and the arm plane
    projection_angle: Array  # (N,): orientation change made by projection (0 if none)


def _check_structure(arm: ArmDescription) -> None:
    a, alpha, d = arm.dh_a, arm.dh_alpha, arm.dh_d
    ok = (
        arm.n_joints == 5
        and np.allclose([a[3], a[4], d[1], d[2], d[3]], 0.0)
        and np.allclose(np.abs(np.sin([alpha[0], alpha[3]])), 1.0)
        and np.allclose(np.sin([alpha[1], alpha[2], alpha[4]]), 0.0)
        and np.allclose(np.cos([alpha[0], alpha[3]]), 0.0)
        and np.allclose(np.cos([alpha[1], alpha[2], alpha[4]]), 1.0)
        and np.allclose(np.sin(alpha[[0, 3]]), 1.0)
    )
    if not ok:
        raise ValueError("analytic IK needs the youBot DH structure (5 joints, alpha = [90, 0, 0, 90, 0] deg, "
                         "a4 = a5 = d2 = d3 = d4 = 0)")


def project_orientation(rotation: Array, theta1: Array) -> tuple[Array, Array]:
    """Rotate ``rotation`` (..., 3, 3) by the smallest angle that puts its z axis into the plane
    through joint 1 at ``theta1``; returns the new rotation and the angle [rad] of the change."""
    z1 = np.stack([np.sin(theta1), -np.cos(theta1), np.zeros_like(theta1)], -1)
    z5 = rotation[..., :, 2]
    e = np.sum(z1 * z5, -1)
    target = z5 - e[..., None] * z1
    norm = np.linalg.norm(target, axis=-1)
    target = target / np.where(norm > 0, norm, 1.0)[..., None]
    axis = np.cross(z5, target)
    s = np.linalg.norm(axis, axis=-1)
    c = np.sum(z5 * target, -1)
    unit = axis / np.where(s > 0, s, 1.0)[..., None]
    k = skew(unit)
    rot = np.eye(3) + s[..., None, None] * k + (1 - c)[..., None, None] * (k @ k)
    return rot @ rotation, np.arctan2(s, c)


def _pose_errors(arm: ArmDescription, q: Array, goal: Array) -> tuple[Array, Array]:
    """Position [m] and orientation [rad] error of FK(q) (N, B, n) against goal poses (N, 4, 4)."""
    n_pose, n_branch = q.shape[:2]
    fk = forward_kinematics(arm, q)  # (N, B, 4, 4)
    pos = np.linalg.norm(fk[..., :3, 3] - goal[:, None, :3, 3], axis=-1)
    rot = rotation_angle(fk[..., :3, :3], goal[:, None, :3, :3])
    return pos.reshape(n_pose, n_branch), rot.reshape(n_pose, n_branch)


def _wrap_into_limits(arm: ArmDescription, q: Array) -> Array:
    """Shift each angle by a multiple of 2 pi into [min, max] if possible, else next to the range."""
    lo, hi = arm.position_min, arm.position_max
    q0 = lo + np.mod(q - lo, 2 * np.pi)  # in [lo, lo + 2 pi)
    below = q0 - 2 * np.pi
    use_below = (q0 > hi) & ((q0 - hi) > (lo - below))
    return np.where(use_below, below, q0)


def solve_ik_batch(arm: ArmDescription, target: Any, *, q_reference: Any = None,
                   project: bool = False, orientation_tolerance: float = ORIENTATION_TOLERANCE,
                   reach_tolerance: float = 1e-9, residuals: bool = True) -> IKBatch:
    """All four IK branches of N target tool poses ``target`` (N, 4, 4) at once.

    ``q_reference`` (n,) or (N, n): joint angles used where joint 1 is undetermined (wrist point on
    the joint-1 axis with a vertical approach axis); default the middle of the joint-1 range.
    ``project``: replace an unreachable orientation by the closest reachable one (the angle of the
    change is in ``projection_angle``) instead of reporting ``ORIENTATION_UNREACHABLE``.
    ``orientation_tolerance``: largest sine of the angle between the approach axis and the arm
    plane accepted (:data:`ORIENTATION_TOLERANCE`); the plane is the one through the target point,
    or near the joint-1 axis the best fit of point and approach axis (:data:`PLANE_SCALE`).
    ``residuals=False`` skips the FK verification of every solution (errors are then NaN).
    """
    _check_structure(arm)
    t = np.asarray(target, dtype=float)
    if t.ndim != 3 or t.shape[1:] != (4, 4):
        raise ValueError(f"target must have shape (N, 4, 4), got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("target pose contains NaN or infinite values")
    n_pose = t.shape[0]
    t5 = t @ invert_transform(arm.tool)  # pose of DH frame 5
    r, p = t5[:, :3, :3], t5[:, :3, 3]
    a1, a2, a3 = arm.dh_a[:3]
    d1, d5 = arm.dh_d[0], arm.dh_d[4]

    # theta1 (front): from the target point; on the axis from the approach axis; else reference.
    if q_reference is None:
        ref_theta1 = arm.theta(0.5 * (arm.position_min + arm.position_max))[0]
        ref_theta1 = np.full(n_pose, ref_theta1)
    else:
        ref_theta1 = np.broadcast_to(arm.theta(arm.check_q(q_reference, "q_reference"))[..., 0], (n_pose,))
    p_xy = np.hypot(p[:, 0], p[:, 1])
    z_xy = np.hypot(r[:, 0, 2], r[:, 1, 2])
    # Within AXIS_TOLERANCE of the joint-1 axis the plane through the target point is ill
    # defined; the approach axis fixes it instead (position error <= p_xy, in the residual).
    on_axis = p_xy < AXIS_TOLERANCE
    th1 = np.where(~on_axis, np.arctan2(p[:, 1], p[:, 0]),
                   np.where(z_xy > 1e-9, np.arctan2(r[:, 1, 2], r[:, 0, 2]), ref_theta1))

    out_of_plane = r[:, 0, 2] * np.sin(th1) - r[:, 1, 2] * np.cos(th1)
    # The plane fitting point and approach axis (PLANE_SCALE): turned by the weight w of the
    # approach axis towards its azimuth (turn, within pi / 2), kept if both lie within the tolerances.
    turn = np.mod(np.arctan2(r[:, 1, 2], r[:, 0, 2]) - th1 + np.pi / 2, np.pi) - np.pi / 2
    weight = z_xy**2 / np.maximum(z_xy**2 + (p_xy / PLANE_SCALE) ** 2, 1e-300)
    fitted = th1 + weight * turn
    fitted_out = r[:, 0, 2] * np.sin(fitted) - r[:, 1, 2] * np.cos(fitted)
    use_fit = (~on_axis & (np.abs(fitted_out) <= orientation_tolerance)
               & (p_xy * np.abs(np.sin(weight * turn)) <= orientation_tolerance * PLANE_SCALE))
    th1 = np.where(use_fit, fitted, th1)
    out_of_plane = np.where(use_fit, fitted_out, out_of_plane)
    projection_angle = np.zeros(n_pose)
    if project:
        r, projection_angle = project_orientation(r, th1)
        orientation_ok = np.linalg.norm(r[:, :, 2], axis=-1) > 0  # always
    else:
        orientation_ok = np.abs(out_of_plane) <= orientation_tolerance

    th1_b = np.stack([th1, th1 + np.pi], 1)  # (N, 2): front, back
    c1, s1 = np.cos(th1_b), np.sin(th1_b)
    r11, r12, r13 = (r[:, 0, j, None] for j in range(3))
    r21, r22, r23 = (r[:, 1, j, None] for j in range(3))
    r33 = r[:, 2, 2, None]
    th5 = np.arctan2(r11 * s1 - r21 * c1, r12 * s1 - r22 * c1)
    th234 = np.arctan2(r13 * c1 + r23 * s1, -r33)
    s234, c234 = np.sin(th234), np.cos(th234)
    xr = p[:, 0, None] * c1 + p[:, 1, None] * s1 - a1 - d5 * s234
    yr = p[:, 2, None] - d1 + d5 * c234
    c3 = (xr**2 + yr**2 - a2**2 - a3**2) / (2 * a2 * a3)
    real_b = np.abs(c3) <= 1 + reach_tolerance
    c3 = np.clip(c3, -1.0, 1.0)
    s3_abs = np.sqrt(1 - c3**2)
    # elbow up: theta3 <= 0 (front), >= 0 (back); order (N, 2 shoulder, 2 elbow)
    sign_up = np.array([-1.0, 1.0])[None, :]
    th3 = np.stack([sign_up * np.arctan2(s3_abs, c3), -sign_up * np.arctan2(s3_abs, c3)], -1)
    th2 = np.arctan2(yr, xr)[..., None] - np.arctan2(a3 * np.sin(th3), a2 + a3 * np.cos(th3))
    th4 = th234[..., None] - th2 - th3
    shape = (n_pose, 2, 2)
    theta = np.stack([np.broadcast_to(th1_b[..., None], shape), th2, th3, th4,
                      np.broadcast_to(th5[..., None], shape)], -1).reshape(n_pose, 4, 5)
    q = _wrap_into_limits(arm, arm.q_from_theta(theta))
    real = np.repeat(real_b, 2, axis=1) & orientation_ok[:, None]

    t_goal = t.copy()
    if project:
        t_goal[:, :3, :3] = r @ arm.tool[:3, :3]
    if residuals:
        pos_err, rot_err = _pose_errors(arm, q, t_goal)
    else:
        pos_err = rot_err = np.full(real.shape, np.nan)
    pos_err = np.where(real, pos_err, np.nan)
    rot_err = np.where(real, rot_err, np.nan)
    within = real & arm.within_limits(q)

    status = np.full(n_pose, IKStatus.OK, dtype=np.int8)
    status[~within.any(1)] = IKStatus.OUTSIDE_LIMITS
    status[~real.any(1)] = IKStatus.OUT_OF_REACH
    status[~orientation_ok] = IKStatus.ORIENTATION_UNREACHABLE
    return IKBatch(q, real, within, pos_err, rot_err, status, out_of_plane, projection_angle)


def inverse_kinematics(arm: ArmDescription, target: Any, *, q_current: Any = None,
                       project: bool = False, include_outside_limits: bool = True,
                       orientation_tolerance: float = ORIENTATION_TOLERANCE) -> list[IKSolution]:
    """Every real IK solution of one tool pose ``target`` (4, 4), duplicates removed.

    Raises :class:`UnreachableOrientationError`, :class:`OutOfReachError` or, when none of the real
    solutions lies inside the joint limits, :class:`JointLimitError`. With
    ``include_outside_limits=False`` only the solutions inside the limits are returned.
    """
    t = np.asarray(target, dtype=float)
    if t.shape != (4, 4):
        raise ValueError(f"target must be a 4x4 transform, got shape {t.shape}")
    position = [round(float(v), 4) for v in t[:3, 3]]  # Python's round: no overflow at 1e308
    distance = math.hypot(*t[:3, 3])  # [m] without overflowing squares
    where = f"target at {position} ({distance:.3f} m from the base origin)" if distance < FAR_TARGET else \
        f"target at {position} ({distance:.4g} m from the base origin, beyond {FAR_TARGET:g} m: not solved)"
    if not distance < FAR_TARGET:
        raise OutOfReachError(f"position out of reach: no real solution for {where}")
    batch = solve_ik_batch(arm, t[None], q_reference=q_current, project=project,
                           orientation_tolerance=orientation_tolerance)
    status = int(batch.status[0])
    if status == IKStatus.ORIENTATION_UNREACHABLE:
        angle = np.degrees(np.arcsin(min(1.0, abs(batch.out_of_plane[0]))))
        raise UnreachableOrientationError(
            f"orientation unreachable: the approach axis is {angle:.3g} deg out of the vertical plane "
            "through joint 1 (a 5-DOF arm cannot take it; use the projection option)")
    if status == IKStatus.OUT_OF_REACH:
        raise OutOfReachError(f"position out of reach: no real solution for {where}")
    if status == IKStatus.OUTSIDE_LIMITS:
        raise JointLimitError("no solution inside the joint limits (real solutions exist for branches "
                              + ", ".join(b for b, ok in zip(BRANCHES, batch.real[0]) if ok) + ")")
    solutions: list[IKSolution] = []
    for k, branch in enumerate(BRANCHES):
        if not batch.real[0, k] or (not include_outside_limits and not batch.within_limits[0, k]):
            continue
        qk = batch.q[0, k]
        # Same configuration: at the stretched / folded elbow (c3 = +-1) the two elbow branches
        # differ only by rounding amplified by the square root in s3 (~1e-8 to 1e-7 rad).
        if any(np.max(np.abs(s.q - qk)) < 1e-6 for s in solutions):
            continue
        solutions.append(IKSolution(qk.copy(), branch, bool(batch.within_limits[0, k]),
                                    float(batch.position_error[0, k]), float(batch.orientation_error[0, k]),
                                    float(batch.projection_angle[0])))
    return solutions


def sort_by_distance(solutions: Sequence[IKSolution], q_current: Any) -> list[IKSolution]:
    """The solutions ordered by joint distance (max-norm over joints) to ``q_current``, closest first."""
    q_current = np.asarray(q_current, dtype=float)
    return sorted(solutions, key=lambda s: float(np.max(np.abs(s.q - q_current))))


def closest_solution(solutions: Sequence[IKSolution], q_current: Any) -> IKSolution:
    """The solution inside the joint limits nearest (max-norm over joints) to ``q_current``."""
    feasible = [s for s in solutions if s.within_limits]
    if not feasible:
        raise JointLimitError("no solution inside the joint limits")
    return sort_by_distance(feasible, q_current)[0]
