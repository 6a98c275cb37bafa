"""Validation of arm commands, shared by the simulator (:mod:`youbot_dynamics.sim`) and the
EtherCAT driver (:mod:`youbot_dynamics.driver`), so both refuse the same commands with the same
reasons: a wrong number of values, NaN or infinity, positions outside the joint limits,
velocities above ``velocity_max``, trajectory times that are not positive and increasing.

**Braking from any state** (:func:`braking_waypoints`, issue 35): the trajectory that brings the arm
to rest from a measured state the executors accept whatever that state is (the controllers' release,
:mod:`youbot_dynamics.control.release`; the simulator's hold after a rejected trajectory). Where the
state is beyond what the arm may be commanded, it is clamped, never refused: a joint beyond a
position limit brakes from the limit (the drives pull it back inside), a joint faster than
``velocity_max`` brakes from ``velocity_max`` (the drives' position loop takes the excess), a joint
at a limit moving outwards is held there; a joint whose braking would end beyond a limit stops at the
limit (braking harder than ``acceleration_max``: the drives saturate, which is all they can do).
Every waypoint is inside the position limits and within ``velocity_max``, and the executors start a
trajectory from the measured state clamped the same way (:meth:`CommandChecker.start_state`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from .braking import braking_duration, sample_waypoints, tail_states
from .interpolation import HermiteSpline
from .trajectory_start import START_TOLERANCE, drop_start_point  # noqa: F401 - the executors' start-point rule
from .validation import joint_values

__all__ = ["BRAKING_STEP", "CommandError", "CommandChecker", "START_TOLERANCE", "STAMP_TOLERANCE", "braking_waypoints",
           "drop_start_point", "from_stamp", "path_from"]

Array = NDArray[np.float64]
Trajectory = tuple[Array, Array | None, Array | None, Array | None]

STAMP_TOLERANCE = 1.0  # [s] a trajectory stamped further than this from the executor's clock is refused
BRAKING_STEP = 0.02  # [s] between the waypoints of a braking trajectory


def _brief(times: Array) -> str:
    """At most 6 of ``times`` (a trajectory may have thousands)."""
    return str(times.tolist()) if times.size <= 6 else f"[{', '.join(f'{t:g}' for t in times[:6])}, ...] ({times.size})"


class CommandError(ValueError):
    """A command was rejected (wrong length, NaN, out of range, interface not enabled)."""


class CommandChecker:
    """Checks commands against ``arm``; every method raises :class:`CommandError` with the reason."""

    def __init__(self, arm: ArmDescription) -> None:
        self.arm = arm

    def values(self, values: Any, name: str, rows: int | None = None) -> Array:
        """Finite values of shape (n,) (``rows is None``) or (rows, n)."""
        return joint_values(values, self.arm.n_joints, name, CommandError, rows)

    def limits(self, q: Array, name: str) -> None:
        """Positions inside ``[position_min, position_max]``; the refusal names the first joint outside,
        its value and its limits (:meth:`~youbot_dynamics.arm.description.ArmDescription.outside_limits`)."""
        outside = self.arm.outside_limits(q)
        if outside:
            raise CommandError(f"{name}: {outside}")

    def velocities(self, v: Array, name: str) -> None:
        """``|v| <= velocity_max``; the refusal names the first joint over it and its value."""
        over = np.abs(v) > self.arm.velocity_max
        if np.any(over):
            where = tuple(np.argwhere(over)[0])
            j, more = where[-1], int(np.count_nonzero(over)) - 1
            raise CommandError(f"{name}: |velocity| above velocity_max: {self.arm.joint_names[j]} at "
                               f"{v[where]:.4g} rad/s, velocity_max {self.arm.velocity_max[j]:.4g} rad/s"
                               + (f" (and {more} more value{'s' if more > 1 else ''})" if more else ""))

    def start_state(self, q: Array, dq: Array) -> tuple[Array, Array]:
        """A measured state as a trajectory's start: ``q`` clamped into the position limits, ``dq``
        into ``+-velocity_max`` (module docstring: braking from any state)."""
        return (np.clip(q, self.arm.position_min, self.arm.position_max),
                np.clip(dq, -self.arm.velocity_max, self.arm.velocity_max))

    def set_point(self, interface: str, values: Any) -> Array:
        """A streamed ``effort``, ``position`` (within the limits) or ``velocity`` (within
        ``velocity_max``) set-point."""
        values = self.values(values, f"{interface} command")
        if interface == "position":
            self.limits(values, "position command")
        elif interface == "velocity":
            self.velocities(values, "velocity command")
        return values

    def trajectory(self, times: Any, positions: Any, velocities: Any = None, accelerations: Any = None, *,
                   allow_empty: bool = False, start: Array | None = None) -> Trajectory:
        """``(times, positions, velocities, accelerations)`` of waypoints reached ``times`` [s] from
        now (finite, > 0, strictly increasing); positions within the limits, velocities within
        ``velocity_max``. ``allow_empty``: no waypoints at all is accepted (positions etc. then
        returned as given). ``start``: the position the executor starts from; a first waypoint at
        time 0 is then the start state, dropped by :func:`drop_start_point` (which may leave no
        waypoint: hold)."""
        try:
            times = np.asarray(times, dtype=float)
        except (TypeError, ValueError) as exc:
            raise CommandError(f"trajectory times must be numbers ({exc})") from None
        if times.ndim != 1 or (times.size == 0 and not allow_empty):
            raise CommandError(f"trajectory times must be a non-empty 1-D sequence, got shape {times.shape}")
        k = times.size
        if k == 0:
            return times, positions, velocities, accelerations
        first = 0.0 if start is not None else np.nextafter(0.0, 1.0)  # time 0: the start state
        if not np.all(np.isfinite(times)) or times[0] < first or np.any(np.diff(times) <= 0):
            raise CommandError("trajectory times must be finite, positive (a first point may be at 0, the start "
                               f"state) and strictly increasing, got {_brief(times)}")
        positions = self.values(positions, "trajectory positions", rows=k)
        self.limits(positions, "trajectory positions")
        if velocities is not None:
            velocities = self.values(velocities, "trajectory velocities", rows=k)
            self.velocities(velocities, "trajectory velocities")
        if accelerations is not None:
            accelerations = self.values(accelerations, "trajectory accelerations", rows=k)
        if start is not None:
            try:
                times, positions, velocities, accelerations = drop_start_point(
                    times, positions, velocities, accelerations, start, joint_names=self.arm.joint_names)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        return times, positions, velocities, accelerations

    def spline(self, spline: HermiteSpline) -> None:
        """The interpolated path an executor is about to follow stays within ``velocity_max``
        (:meth:`HermiteSpline.peak_velocities`, 0.1 % tolerance for sampling): the waypoints may be
        inside the limits while the path between them is not (1.5 rad in 0.05 s)."""
        peak, at = spline.peak_velocities()
        over = peak > self.arm.velocity_max * 1.001
        if np.any(over):
            j = int(np.argmax(peak / self.arm.velocity_max))
            raise CommandError(f"trajectory: {self.arm.joint_names[j]} would move at {peak[j]:.3g} rad/s at "
                               f"t = {at[j]:.3f} s, above its velocity_max {self.arm.velocity_max[j]:.4g} rad/s "
                               "(give the waypoints more time)")


def braking_waypoints(arm: ArmDescription, q: Any, dq: Any, step: float = BRAKING_STEP
                      ) -> tuple[Array, Array, Array, Array]:
    """``(times [s] from now, q, q', q'')`` bringing the arm from the measured ``q``, ``q'`` (n,) to
    rest (module docstring), sampled every ``step`` (the last point at the end; at rest: one point at
    ``q`` after ``step``). Each joint follows the braking tail of
    :class:`~youbot_dynamics.motion.braking.BrakingTail` (``q''0 = 0``: a quartic,
    which a quintic Hermite executor reproduces exactly) from the clamped start state
    (:meth:`CommandChecker.start_state`) over the common duration within ``acceleration_max``,
    shortened for a joint whose tail would pass a limit to end there. ``ValueError`` only for a state
    of the wrong length or not finite."""
    q, dq = CommandChecker(arm).start_state(arm.check_q(q, "q"), arm.check_q(dq, "dq"))
    low, high = arm.position_min, arm.position_max
    dq = np.where(((q <= low) & (dq < 0.0)) | ((q >= high) & (dq > 0.0)), 0.0, dq)  # pressing on a stop: held
    duration = float(braking_duration(dq, np.zeros_like(dq), arm.acceleration_max))
    end = q + 0.5 * duration * dq
    limit = np.clip(end, low, high)
    with np.errstate(divide="ignore", invalid="ignore"):  # a shortened joint moves: dq != 0
        durations = np.where(end != limit, 2.0 * (limit - q) / dq, duration)
    zero = np.zeros_like(q)

    def evaluate(t: float) -> tuple[Array, Array, Array]:
        s = np.clip(np.divide(t, durations, out=np.ones_like(q), where=durations > 0.0), 0.0, 1.0)
        position, velocity, acceleration = tail_states(q, dq, zero, durations, s)
        return np.clip(position, low, high), velocity, acceleration

    return sample_waypoints(evaluate, duration, step)


def path_from(start_q: Array, start_dq: Array, trajectory: Trajectory, hold_time: float,
              interpolation: str) -> HermiteSpline:
    """The path an executor (the simulator, the driver) follows: from its start state (the running
    reference, else the measured position at rest) through the checked waypoints of
    :meth:`CommandChecker.trajectory`, interpolated per ``interpolation``; no waypoint left (only
    the start point was given): hold ``start_q``, reached after ``hold_time`` [s] (one step)."""
    times, positions, velocities, accelerations = trajectory
    if times.size == 0:
        times, positions, velocities, accelerations = np.array([hold_time]), start_q[None, :], None, None
    return HermiteSpline.from_state(start_q, start_dq, times, positions, velocities, accelerations, interpolation)


def from_stamp(times: Array, positions: Array, velocities: Array | None, accelerations: Array | None,
               elapsed: float, hold_time: float) -> Trajectory:
    """A trajectory stamped ``elapsed`` [s] ago, re-timed from now (ros2_control's
    JointTrajectoryController semantics: a non-zero ``header.stamp`` is when ``time_from_start``
    counts from). Waypoints already due (``times <= elapsed``) are dropped, the others keep their
    absolute times (``times - elapsed`` from now; a stamp in the future, ``elapsed < 0``, delays
    them); when every waypoint is past, the last one is held (reached in ``hold_time``). A stamp
    more than :data:`STAMP_TOLERANCE` from the executor's clock is a :class:`CommandError` (the
    sender runs on another clock, e.g. ``use_sim_time`` on one side only). Timing streamed
    messages from their stamps keeps their splices exact whatever the delivery latency."""
    if abs(elapsed) > STAMP_TOLERANCE:
        raise CommandError(f"trajectory stamped {-elapsed:+.3f} s from this node's clock (more than "
                           f"{STAMP_TOLERANCE:g} s: use_sim_time on one side only?)")
    if times.size == 0:
        return times, positions, velocities, accelerations
    ahead = times > elapsed + 1e-4
    if not ahead.any():
        return np.array([hold_time]), positions[-1:], None, None
    return (times[ahead] - elapsed, positions[ahead], None if velocities is None else velocities[ahead],
            None if accelerations is None else accelerations[ahead])
