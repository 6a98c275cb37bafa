"""Letting go of the arm without dropping it: a braking trajectory for the drives (no ROS).

A joint-torque controller that stops commanding (disable, shutdown, a fault with zero effort)
leaves the arm to zero torque, and a youBot arm then falls wherever gravity loads it: from the
home pose onto joint 2's stop at twice its velocity limit (simulator, motors off). Instead the
controller hands the arm to the drives' own position control, the trajectory interface of the
simulator and of the driver, which executes a trajectory and then holds its last point without a
timeout (as ros2_control's joint_trajectory_controller).

:func:`release_waypoints` is that hand-over: the braking tail of the streamed experiment
(:class:`~youbot_dynamics.identification.experiment.streaming.BrakingTail`, a quartic in position, continuous
in position and velocity at its start) from the last measured state ``q, q'`` (``q'' = 0``) to
rest within ``acceleration_max``, sampled every ``step`` with ``q, q', q''`` (a quintic Hermite
executor reproduces it exactly). With ``q' = 0`` it is one point at ``q`` reached after ``step``:
the drives hold where the arm is. The executor checks the path against ``velocity_max`` itself
and refuses it from a state that is not the arm's (e.g. a second publisher's).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm import ArmDescription
from ..identification.experiment.streaming import BrakingTail, sample_waypoints

__all__ = ["RELEASE_STEP", "LIMIT_TOLERANCE", "release_waypoints"]

Array = NDArray[np.float64]

RELEASE_STEP = 0.02  # [s] between the waypoints of a release trajectory
# [rad] how far beyond a position limit a release may start or end (an arm resting on its stop is
# a few mrad beyond); further, the state cannot be the arm's
LIMIT_TOLERANCE = 0.05


def release_waypoints(arm: ArmDescription, q: Any, dq: Any, step: float = RELEASE_STEP
                      ) -> tuple[Array, Array, Array, Array]:
    """``(times [s] from now, q, q', q'')`` of the braking trajectory from ``q, q'`` (n,) to rest
    within ``arm.acceleration_max``; see the module docstring. Raises ``ValueError`` on a state
    of the wrong length or not finite, and when the trajectory would start or end more than
    :data:`LIMIT_TOLERANCE` beyond a position limit (a state that is not the arm's: a trajectory
    controller that does not check the limits would drive the arm there)."""
    q, dq = arm.check_q(q, "q"), arm.check_q(dq, "dq")
    tail = BrakingTail.from_state(q, dq, np.zeros_like(q), arm.acceleration_max)
    waypoints = sample_waypoints(tail.evaluate, tail.duration, step)
    for where, position in (("starts", q), ("ends", waypoints[1][-1])):
        beyond = (position > arm.position_max + LIMIT_TOLERANCE) | (position < arm.position_min - LIMIT_TOLERANCE)
        if beyond.any():
            j = int(np.flatnonzero(beyond)[0])
            raise ValueError(f"the braking trajectory from q = {q[j]:.4g} rad, q' = {dq[j]:.4g} rad/s {where} at "
                             f"{position[j]:.4g} rad, beyond the limits [{arm.position_min[j]:.4g}, "
                             f"{arm.position_max[j]:.4g}] of {arm.joint_names[j]}: not a state of the arm")
    return waypoints
