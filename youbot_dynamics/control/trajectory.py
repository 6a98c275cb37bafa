"""Joint-space references of the controllers: goals, quintic joint trajectories, Cartesian lines.

**Joint trajectory.** Waypoints ``q_k`` reached ``t_k`` seconds from the start (``time_from_start``
of a ROS ``JointTrajectory``; strictly increasing, ``t_1 > 0``), starting at ``t_0 = 0`` from the
start state (the controller's current reference or the measured state). Between waypoints each
joint follows the quintic Hermite polynomial matching position, velocity and acceleration at both
ends (:class:`~youbot_dynamics.motion.interpolation.HermiteSpline`, reused from the simulator), so
``q, q', q''`` are continuous (C2) and exact at the waypoints. Missing velocities come from
:func:`~youbot_dynamics.motion.interpolation.waypoint_velocities` (three-point slopes, zero at the
last point and at local extrema); missing accelerations are zero. After the last waypoint the
trajectory holds it (``q' = q'' = 0``).

**Validation** (:meth:`JointTrajectory.check_limits`, :func:`check_goal`): every joint stays inside
``[position_min, position_max]``, ``|q'| <= velocity_max`` and ``|q''| <= acceleration_max``
everywhere, not only at the waypoints: per segment the extrema of ``q, q', q''`` are at the segment
ends or at the real roots of the next derivative inside the segment. A violation raises
:class:`TrajectoryError` naming the joint, the value, the limit and the time.

**Size.** A trajectory has at most :data:`MAX_TRAJECTORY_POINTS` waypoints and a line at most as many
IK samples (``duration x rate``): planning time and memory stay bounded (measured ~0.1 ms per point,
0.5 s for the maximum); more is refused with :class:`TrajectoryError` before any work.

**Cartesian line** (:func:`cartesian_line`): the tool moves on the straight line from its pose at
``q_start`` to ``T_goal`` with the rest-to-rest quintic time scaling
``s(t) = 10 u^3 - 15 u^4 + 6 u^5`` (``u = t / T``): ``p(s) = p_0 + s (p_1 - p_0)``, orientation
``slerp(R_0, R_1, s)``. The poses are sampled at ``rate`` per second and solved by the analytic IK
(:mod:`youbot_dynamics.arm.ik`) keeping the IK branch of ``q_start`` (each joint unwrapped to the
nearest angle of the previous sample); a branch without a real solution, a step above
``max_joint_step`` between samples (a flip near a singularity) or a sample outside the joint
limits refuses the line. A 5-DOF arm cannot take every slerped orientation: each one is projected
onto the reachable set and the line is refused if that changes it by more than
``orientation_tolerance``. The samples become the waypoints of a joint trajectory (velocities and
accelerations by central differences), which is then checked against the limits.

**Arrival at a goal** (:class:`GoalArrival`, issue 35): a regulation goal is *reached* when the
measured position is within :data:`GOAL_TOLERANCE` of it on every joint and every joint is slower
than :data:`GOAL_REST_SPEED`, not when its planned profile ends. It is judged from the planned
arrival on; if it is not reached :data:`GOAL_SETTLE_TIME` after it, the verdict names the joint
furthest away and why it may have stopped: the bound of the safety guard that limited that joint's
torque in the last cycle, with the torque it let through (the stall bound or the torque limit,
:meth:`~.safety.SafetyGuard.limit_reason`; before, a joint held by the stall bound at 0.39 N m was
reported "saturated at 2.7 N m"), else a PD torque ``Kp e`` below the torque limit there is held
by static friction (more ``Kp``, or a model with the arm's friction, closes the gap), a saturated one
means a blocked joint, a joint still moving creeps or oscillates.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Callable

import numba
import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from ..arm.ik import BRANCHES, solve_ik_batch
from ..arm.kinematics import forward_kinematics
from ..motion.interpolation import HermiteSpline, waypoint_velocities
from ..arm.transforms import quaternion_to_rotation, rotation_to_quaternion
from ..motion.validation import joint_values

__all__ = ["TrajectoryError", "check_goal", "JointTrajectory", "cartesian_line", "slerp", "MAX_TRAJECTORY_POINTS",
           "LINE_IK_RATE", "MAX_LINE_DURATION", "GoalArrival", "GOAL_TOLERANCE", "GOAL_REST_SPEED",
           "GOAL_SETTLE_TIME"]

Array = NDArray[np.float64]

LIMIT_TOLERANCE = 1e-9  # absolute slack of every limit check [rad, rad/s, rad/s^2]
#: Most waypoints of a :class:`JointTrajectory` (and IK samples of a :func:`cartesian_line`): planning
#: and checking cost ~0.1 ms per point, so a reference is planned in about 0.5 s and ~10 MB at most.
MAX_TRAJECTORY_POINTS = 5_000
LINE_IK_RATE = 100.0  # [1/s] default IK samples per second of a Cartesian line
MAX_LINE_DURATION = MAX_TRAJECTORY_POINTS / LINE_IK_RATE  # [s] longest line at LINE_IK_RATE samples per second
# rows of a JointTrajectory's segment block: the monomial coefficients of q, q', q'' in local time
_POSITION, _VELOCITY, _ACCELERATION = slice(0, 6), slice(6, 11), slice(11, 15)
GOAL_TOLERANCE = 0.01  # [rad] a goal is reached with every joint this close to it ...
GOAL_REST_SPEED = 0.05  # [rad/s] ... and slower than this
GOAL_SETTLE_TIME = 1.0  # [s] after the planned arrival, a goal not reached is reported as such


class TrajectoryError(ValueError):
    """A goal or trajectory was refused; the message gives the reason."""


@numba.njit(cache=True, nogil=True)
def segment_state(block: Array, local: float) -> Array:
    """``(q, q', q'')`` (3, n) of one quintic segment at ``local`` seconds from its start: ``block``
    (15, n) holds the monomial coefficients of ``q`` (6 rows), ``q'`` (5) and ``q''`` (4)
    (:meth:`JointTrajectory.segment`)."""
    n = block.shape[1]
    out = np.zeros((3, n))
    power = 1.0
    for k in range(6):
        for j in range(n):
            out[0, j] += block[k, j] * power
            if k < 5:
                out[1, j] += block[6 + k, j] * power
            if k < 4:
                out[2, j] += block[11 + k, j] * power
        power *= local
    return out


@dataclass(frozen=True)
class GoalArrival:
    """Whether the arm got to ``goal`` (n,) [rad], planned to arrive ``duration`` [s] after ``start``
    [s] (module docstring: arrival at a goal). ``kp`` [N m/rad] and ``torque_limit`` [N m] per joint
    (n,) explain a goal not reached; ``names`` are the joints'."""

    goal: Array
    start: float
    duration: float
    kp: Array
    torque_limit: Array
    names: tuple[str, ...]

    def verdict(self, t: float, q: Array, dq: Array,
                limit_reason: Callable[[int], str | None] | None = None) -> tuple[bool, str] | None:
        """At time ``t`` [s] with the measured ``q``, ``dq``: ``(True, message)`` once reached,
        ``(False, message)`` if not reached :data:`GOAL_SETTLE_TIME` after the planned arrival, else
        None (not judged yet). ``limit_reason(j)``: what limited joint ``j``'s published torque in the
        last cycle, with the numbers, or None (:meth:`~.safety.SafetyGuard.limit_reason`); the verdict
        names it rather than guessing from ``Kp e``."""
        due = self.start + self.duration
        if t < due:
            return None
        error = self.goal - q
        j = int(np.argmax(np.abs(error)))
        took = f"{t - self.start:.2f} s after it was accepted (planned {self.duration:.2f} s)"
        if np.all(np.abs(error) <= GOAL_TOLERANCE) and np.all(np.abs(dq) <= GOAL_REST_SPEED):
            return True, f"goal reached {took}: largest error {1e3 * abs(error[j]):.1f} mrad ({self.names[j]})"
        if t < due + GOAL_SETTLE_TIME:
            return None
        pd = self.kp[j] * abs(error[j])
        fastest = int(np.argmax(np.abs(dq)))
        bound = None if limit_reason is None else limit_reason(j)
        if abs(dq[fastest]) > GOAL_REST_SPEED:
            why = f"{self.names[fastest]} still moves at {abs(dq[fastest]):.3g} rad/s: creeping or oscillating?"
        elif bound is not None:
            why = f"the PD torque Kp e = {pd:.3g} N m there is limited by {bound}: the joint is blocked?"
        elif pd < self.torque_limit[j]:
            why = (f"the PD torque Kp e = {pd:.3g} N m there is held by static friction? more Kp, or a model with "
                   "the arm's friction (static_accuracy), closes the gap")
        else:
            why = f"the PD torque is saturated at {self.torque_limit[j]:.3g} N m there: the joint is blocked?"
        return False, f"goal not reached: {self.names[j]} is {abs(error[j]):.3g} rad from its goal {took} ({why})"


def _rows(values: Any, n: int, name: str, rows: int | None = None) -> Array:
    """Finite joint values of shape (n,) (``rows is None``) or (rows, n), else :class:`TrajectoryError`."""
    return joint_values(values, n, name, TrajectoryError, rows)


def _check_range(arm: ArmDescription, low: Array, high: Array, what: str, t_low: Any = None,
                 t_high: Any = None) -> None:
    """Refuse when ``low < position_min`` or ``high > position_max`` for some joint (the message
    names the times ``t_low``, ``t_high`` [s] of the values when given)."""
    for j in range(arm.n_joints):
        for value, limit, key, times, side in ((low[j], arm.position_min[j], "position_min", t_low, "below"),
                                               (high[j], arm.position_max[j], "position_max", t_high, "above")):
            outside = value < limit - LIMIT_TOLERANCE if side == "below" else value > limit + LIMIT_TOLERANCE
            if outside:
                at = "" if times is None else f" at t = {np.broadcast_to(times, low.shape)[j]:.3f} s"
                raise TrajectoryError(f"{what} of {arm.joint_names[j]} reaches {value:.4f} rad{at}, {side} its "
                                      f"limit {key} = {limit:.4f} rad")


def check_goal(arm: ArmDescription, q_goal: Any) -> Array:
    """``q_goal`` as an array if it is a finite position inside the joint limits, else :class:`TrajectoryError`."""
    q = _rows(q_goal, arm.n_joints, "goal")
    _check_range(arm, q, q, "goal position")
    return q


def _extrema(coefficients: Array, h: Array) -> tuple[Array, Array, Array, Array]:
    """Minimum, its local time, maximum, its local time (each (K, n)) of the polynomials
    ``coefficients`` (K, m + 1, n) (ascending, local time) over their segments ``[0, h_k]``.

    The candidates are the segment ends and the real roots of the derivative inside, found as the
    eigenvalues of its companion matrix, all polynomials of one degree at once, in the scaled time
    ``u = tau / h`` (so that coefficients of negligible size can be told from the degree).
    """
    k, m1, n = coefficients.shape
    exponents = np.arange(m1)
    b = np.moveaxis(coefficients, 1, 2).reshape(k * n, m1) * np.repeat(h, n)[:, None] ** exponents
    d = b[:, 1:] * exponents[1:]  # derivative in u, degree <= m1 - 2
    significant = np.abs(d) > 1e-12 * np.abs(d).max(axis=1, keepdims=True)
    degree = np.where(significant.any(axis=1), m1 - 2 - np.argmax(significant[:, ::-1], axis=1), 0)
    u = np.full((k * n, m1), np.nan)  # the ends and up to m1 - 2 roots
    u[:, 0], u[:, 1] = 0.0, 1.0
    for deg in range(1, m1 - 1):
        rows = np.flatnonzero(degree == deg)
        companion = np.zeros((rows.size, deg, deg))
        companion[:, np.arange(1, deg), np.arange(deg - 1)] = 1.0
        companion[:, :, -1] = -d[rows, :deg] / d[rows, deg : deg + 1]
        roots = np.linalg.eigvals(companion)
        # near-real roots too: any point inside the segment is a valid candidate
        inside = (np.abs(roots.imag) <= 1e-6) & (roots.real > 0.0) & (roots.real < 1.0)
        u[rows, 2 : 2 + deg] = np.where(inside, roots.real, np.nan)
    values = np.zeros_like(u)
    for i in reversed(exponents):  # Horner
        values = values * u + b[:, i : i + 1]
    lo, hi = np.nanargmin(values, axis=1), np.nanargmax(values, axis=1)
    rows = np.arange(k * n)
    tau = u * np.repeat(h, n)[:, None]
    return (values[rows, lo].reshape(k, n), tau[rows, lo].reshape(k, n), values[rows, hi].reshape(k, n),
            tau[rows, hi].reshape(k, n))


@dataclass(frozen=True)
class JointTrajectory:
    """Quintic joint trajectory from ``t = 0`` (its start) to :attr:`duration`, then holding the last
    point; see the module docstring. Build with :meth:`through` or :meth:`hold`."""

    spline: HermiteSpline
    acceleration: Array  # (K-1, 4, n) coefficients of q''(tau) per segment, in local time
    breaks: tuple[float, ...]  # the waypoint times as floats (fast segment search)
    blocks: Array  # (K, 15, n) each segment's coefficients of q, q', q'' (segment_state), then the rest at the end

    @classmethod
    def _of(cls, spline: HermiteSpline) -> "JointTrajectory":
        degree = spline.derivative.shape[1]
        acceleration = spline.derivative[:, 1:] * np.arange(1, degree)[None, :, None]
        segments = spline.coefficients.shape[0]
        blocks = np.zeros((segments + 1, 15, spline.final.size))
        blocks[:segments, _POSITION], blocks[:segments, _VELOCITY] = spline.coefficients, spline.derivative
        blocks[:segments, _ACCELERATION] = acceleration
        blocks[segments, 0] = spline.final
        return cls(spline, acceleration, tuple(spline.breaks.tolist()), blocks)

    @classmethod
    def through(cls, start_position: Any, times: Any, positions: Any, velocities: Any = None,
                accelerations: Any = None, *, start_velocity: Any = None,
                start_acceleration: Any = None) -> "JointTrajectory":
        """Trajectory from the start state at ``t = 0`` through the waypoints ``positions`` (K, n)
        reached ``times`` (K,) seconds from the start; optional ``velocities`` and ``accelerations``
        (K, n); the start velocity and acceleration default to zero. Malformed input (shapes, NaN,
        times not positive and strictly increasing) or more than :data:`MAX_TRAJECTORY_POINTS`
        waypoints raises :class:`TrajectoryError`."""
        n = np.size(start_position)
        try:
            t = np.asarray(times, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TrajectoryError(f"times must be numbers ({exc})") from None
        if t.ndim != 1 or t.size == 0:
            raise TrajectoryError(f"times must be a non-empty 1-D sequence, got shape {t.shape}")
        if t.size > MAX_TRAJECTORY_POINTS:
            raise TrajectoryError(f"{t.size} waypoints: at most {MAX_TRAJECTORY_POINTS} are accepted (send a long "
                                  "motion in parts)")
        bad = ~np.isfinite(t) | (np.diff(t, prepend=0.0) <= 0.0)  # each time after the previous one (and 0)
        if bad.any():
            k = int(np.argmax(bad))
            raise TrajectoryError(f"times from start must be finite, positive and strictly increasing: waypoint {k} "
                                  f"at {t[k]:.9g} s" + (f" after {t[k - 1]:.9g} s" if k else ""))
        k = t.size
        all_t = np.concatenate([[0.0], t])
        q = np.vstack([_rows(start_position, n, "start position"), _rows(positions, n, "positions", k)])
        dq0 = np.zeros(n) if start_velocity is None else _rows(start_velocity, n, "start velocity")
        ddq0 = np.zeros(n) if start_acceleration is None else _rows(start_acceleration, n, "start acceleration")
        if velocities is None:
            dq = waypoint_velocities(all_t, q)
            dq[0] = dq0
        else:
            dq = np.vstack([dq0, _rows(velocities, n, "velocities", k)])
        ddq = np.vstack([ddq0, np.zeros((k, n)) if accelerations is None
                         else _rows(accelerations, n, "accelerations", k)])
        return cls._of(HermiteSpline.through(all_t, q, dq, ddq, "quintic"))

    @classmethod
    def hold(cls, position: Any) -> "JointTrajectory":
        """The constant trajectory at ``position`` (n,)."""
        q = _rows(position, np.size(position), "hold position")[None]
        return cls._of(HermiteSpline.through(np.zeros(1), q, np.zeros_like(q), np.zeros_like(q), "quintic"))

    @property
    def duration(self) -> float:
        return self.spline.duration

    @property
    def final(self) -> Array:
        return self.spline.final

    @property
    def n_joints(self) -> int:
        return self.spline.final.size

    def segment(self, t: float) -> tuple[Array, float]:
        """``(block, local)``: the coefficients (15, n) of the segment that holds ``t`` seconds from the
        start and the time into it (:func:`segment_state`); before 0 the first segment at its start,
        after :attr:`duration` the last point at rest."""
        breaks = self.breaks
        if t >= breaks[-1]:
            return self.blocks[-1], 0.0
        k = max(bisect_right(breaks, t) - 1, 0)
        return self.blocks[k], max(t - breaks[k], 0.0)

    def sample(self, t: float) -> tuple[Array, Array, Array]:
        """``(q, q', q'')`` at ``t`` seconds from the start: the start state before 0, the last point
        at rest after :attr:`duration` (views of one new array)."""
        state = segment_state(*self.segment(t))
        return state[0], state[1], state[2]

    def check_limits(self, arm: ArmDescription) -> None:
        """Raise :class:`TrajectoryError` if a joint leaves its position range or exceeds
        ``velocity_max`` or ``acceleration_max`` anywhere (exact extrema per segment)."""
        if self.n_joints != arm.n_joints:
            raise TrajectoryError(f"trajectory has {self.n_joints} joints, the arm {arm.n_joints}")
        s = self.spline
        _check_range(arm, s.final, s.final, "final position")
        h, start = np.diff(s.breaks), s.breaks[:-1, None]
        for what, coefficients, limit in (("position", s.coefficients, None),
                                          ("velocity", s.derivative, arm.velocity_max),
                                          ("acceleration", self.acceleration, arm.acceleration_max)):
            lo, t_lo, hi, t_hi = _extrema(coefficients, h)
            t_lo, t_hi = t_lo + start, t_hi + start
            if limit is None:
                bad = (lo < arm.position_min - LIMIT_TOLERANCE) | (hi > arm.position_max + LIMIT_TOLERANCE)
            else:
                bad = np.maximum(-lo, hi) > limit + LIMIT_TOLERANCE
            if not bad.any():
                continue
            k = int(np.argmax(bad.any(axis=1)))  # the first segment with a violation
            if limit is None:  # raises: ``bad`` holds its conditions
                _check_range(arm, lo[k], hi[k], what, t_lo[k], t_hi[k])
            j = int(np.argmax(bad[k]))
            value, at = (lo[k, j], t_lo[k, j]) if -lo[k, j] > hi[k, j] else (hi[k, j], t_hi[k, j])
            unit = "rad/s" if what == "velocity" else "rad/s^2"
            raise TrajectoryError(f"{what} of {arm.joint_names[j]} reaches {value:.4f} {unit} at t = {at:.3f} s, "
                                  f"beyond its limit {what}_max = {limit[j]:.4f} {unit} (slow the trajectory down)")


# ---------------------------------------------------------------------------------------------
# Cartesian straight line


def slerp(r0: Array, r1: Array, s: Array) -> Array:
    """Rotations (len(s), 3, 3) on the shortest great arc from ``r0`` (s = 0) to ``r1`` (s = 1)."""
    q0, q1 = rotation_to_quaternion(r0), rotation_to_quaternion(r1)
    if q0 @ q1 < 0.0:
        q1 = -q1
    angle = np.arccos(np.clip(q0 @ q1, -1.0, 1.0))
    s = np.asarray(s, dtype=float)[:, None]
    if angle < 1e-9:
        q = (1.0 - s) * q0 + s * q1
    else:
        q = (np.sin((1.0 - s) * angle) * q0 + np.sin(s * angle) * q1) / np.sin(angle)
    return quaternion_to_rotation(q / np.linalg.norm(q, axis=1, keepdims=True))


def _start_branch(arm: ArmDescription, q_start: Array, pose: Array) -> int:
    """Index in :data:`~youbot_dynamics.arm.ik.BRANCHES` of the IK solution equal to ``q_start``."""
    batch = solve_ik_batch(arm, pose[None], q_reference=q_start, residuals=False)
    distance = np.where(batch.real[0], np.max(np.abs(_unwrap(batch.q[0], q_start) - q_start), axis=1), np.inf)
    k = int(np.argmin(distance))
    if not distance[k] < 1e-6:
        raise TrajectoryError("the start configuration is not an IK solution of its own pose (singular start?)")
    return k


def _unwrap(q: Array, reference: Array) -> Array:
    """``q`` shifted by multiples of 2 pi to the nearest angles of ``reference``."""
    return reference + np.mod(q - reference + np.pi, 2.0 * np.pi) - np.pi


def cartesian_line(arm: ArmDescription, q_start: Any, goal: Any, duration: float, *, rate: float = LINE_IK_RATE,
                   max_joint_step: float = 0.1, orientation_tolerance: float = 1e-3) -> JointTrajectory:
    """Joint trajectory moving the tool on a straight line from ``FK(q_start)`` to ``goal`` (4, 4)
    in ``duration`` seconds, rest to rest; see the module docstring. ``rate``: IK samples per second;
    ``max_joint_step`` [rad]: largest joint change between samples; ``orientation_tolerance`` [rad]:
    largest change of a slerped orientation by the projection onto the 5-DOF reachable set.
    ``ceil(duration x rate)`` samples, at most :data:`MAX_TRAJECTORY_POINTS` (at 100 per second a
    50 s line; ~0.12 ms and a few kB each): more is refused before any work."""
    q0 = _rows(q_start, arm.n_joints, "start position")
    goal = np.asarray(goal, dtype=float)
    if goal.shape != (4, 4) or not np.all(np.isfinite(goal)):
        raise TrajectoryError(f"goal must be a finite 4x4 transform, got shape {goal.shape}")
    if not (np.isfinite(duration) and duration > 0.0):
        raise TrajectoryError(f"duration must be positive, got {duration}")
    if not (np.isfinite(rate) and rate > 0.0):
        raise TrajectoryError(f"IK rate must be positive, got {rate}")
    if duration * rate > MAX_TRAJECTORY_POINTS:
        raise TrajectoryError(f"a line of {duration:g} s at {rate:g} IK samples/s needs {np.ceil(duration * rate):.0f} "
                              f"samples, at most {MAX_TRAJECTORY_POINTS} are allowed (at most "
                              f"{MAX_TRAJECTORY_POINTS / rate:g} s at this rate)")
    _check_range(arm, q0, q0, "start position")
    start = forward_kinematics(arm, q0)
    branch = _start_branch(arm, q0, start)

    count = max(int(np.ceil(duration * rate)), 2)
    t = np.linspace(0.0, duration, count + 1)
    u = t / duration
    s = u**3 * (10.0 - 15.0 * u + 6.0 * u**2)
    poses = np.tile(np.eye(4), (count + 1, 1, 1))
    poses[:, :3, 3] = start[:3, 3] + s[:, None] * (goal[:3, 3] - start[:3, 3])
    poses[:, :3, :3] = slerp(start[:3, :3], goal[:3, :3], s)
    batch = solve_ik_batch(arm, poses, q_reference=q0, project=True, residuals=False)

    name = BRANCHES[branch]
    worst = int(np.argmax(batch.projection_angle))
    if batch.projection_angle[worst] > orientation_tolerance:
        raise TrajectoryError(f"the orientation along the line is not reachable by the 5-DOF arm: it would change "
                              f"by {np.degrees(batch.projection_angle[worst]):.3g} deg at t = {t[worst]:.3f} s "
                              f"(tolerance {np.degrees(orientation_tolerance):.3g} deg)")
    if not np.all(batch.real[:, branch]):
        k = int(np.argmin(batch.real[:, branch]))
        raise TrajectoryError(f"the line leaves the reach of the {name} IK branch at t = {t[k]:.3f} s "
                              f"(position {np.round(poses[k, :3, 3], 4).tolist()} m)")
    q = np.empty((count + 1, arm.n_joints))
    q[0] = q0
    for k in range(1, count + 1):
        q[k] = _unwrap(batch.q[k, branch], q[k - 1])
        step = np.abs(q[k] - q[k - 1])
        if np.max(step) > max_joint_step:
            j = int(np.argmax(step))
            raise TrajectoryError(f"{arm.joint_names[j]} would jump by {step[j]:.3f} rad at t = {t[k]:.3f} s "
                                  f"(limit {max_joint_step} rad per sample): singularity or branch flip on the line")
        _check_range(arm, q[k], q[k], f"the {name} IK solution", t[k], t[k])
    velocities = np.gradient(q, t, axis=0)
    velocities[[0, -1]] = 0.0
    accelerations = np.gradient(velocities, t, axis=0)
    accelerations[[0, -1]] = 0.0
    trajectory = JointTrajectory.through(q0, t[1:], q[1:], velocities[1:], accelerations[1:])
    trajectory.check_limits(arm)
    return trajectory
