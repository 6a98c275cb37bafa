"""Letting go of the arm without dropping it: a braking trajectory for the drives (no ROS).

A joint-torque controller that stops commanding (disable, shutdown, a fault with zero effort)
leaves the arm to zero torque, and a youBot arm then falls wherever gravity loads it: from the
home pose onto joint 2's stop at twice its velocity limit (simulator, motors off). Instead the
controller hands the arm to the drives' own position control, the trajectory interface of the
simulator and of the driver, which executes a trajectory and then holds its last point without a
timeout (as ros2_control's joint_trajectory_controller).

:func:`release_waypoints` is that hand-over: the braking tail of the streamed experiment
(:class:`~..motion.braking.BrakingTail`, a quartic in position, continuous
in position and velocity at its start) from the last measured state ``q, q'`` (``q'' = 0``) to
rest within ``acceleration_max``, sampled every ``step`` with ``q, q', q''`` (a quintic Hermite
executor reproduces it exactly). With ``q' = 0`` it is one point at ``q`` reached after ``step``:
the drives hold where the arm is.

**Release policy** (issue 35; doc/safety.md): the release is one the arm accepts from any state it
can be in, never all-or-nothing. A state beyond what may be commanded is clamped, not refused
(:func:`~youbot_dynamics.motion.commands.braking_waypoints`): faster than ``velocity_max`` (a push, a fall)
the braking starts from ``velocity_max`` and the drives' position loop takes the excess; at or
past a stop it starts from the limit and a joint pressing outwards is held there; a braking that
would end beyond a limit ends at the limit. Every waypoint is inside the limits and within
``velocity_max``, and the executors start from the measured state clamped the same way. An
executor that still refuses a release (one computed from another arm's state, e.g. a second
simulator in the same ROS domain) holds the arm by the drives (doc/simulation.md).
"""
from __future__ import annotations

from ..motion.commands import braking_waypoints

__all__ = ["release_waypoints"]

#: ``(times [s] from now, q, q', q'')`` of the release from the measured ``q, q'`` (module docstring);
#: ``ValueError`` only for a state of the wrong length or not finite
release_waypoints = braking_waypoints
