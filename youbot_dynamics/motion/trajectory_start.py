"""A trajectory's first point at ``time_from_start = 0``: the start state, not a waypoint.

ROS senders (MoveIt, ``ros2_control``'s JointTrajectoryController clients) usually put the state
the motion starts from as the first point, at ``time_from_start = 0``. An executor (the
computed-torque controller, the simulator, the driver) cannot reach a waypoint in zero time; it
starts from its own current state. The rule, shared by every executor (:func:`drop_start_point`):

* a first point at exactly ``t = 0`` is accepted if every joint of it is within
  :data:`START_TOLERANCE` of the executor's current position (the controller: its reference at the
  start; the simulator and the driver: the measured position) and then dropped: the motion
  starts from the executor's own state (position, velocity, acceleration), the point's velocities
  and accelerations are ignored. If nothing remains, the trajectory is empty (a stop: hold);
* such a point further away is refused, naming the joint and the distance (the trajectory was
  planned from another state: executing it would start with a different motion than planned);
* every other waypoint needs ``t > 0`` (the caller checks that the times strictly increase).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["START_TOLERANCE", "StartPointError", "drop_start_point"]

Array = NDArray[np.float64]

#: Largest distance [rad] per joint of a first point at ``t = 0`` from the current position.
START_TOLERANCE = 0.02


class StartPointError(ValueError):
    """A first point at ``time_from_start = 0`` is not the current position."""


def drop_start_point(times: Array, positions: Array, velocities: Array | None, accelerations: Array | None,
                     q_current: Array, tolerance: float = START_TOLERANCE,
                     joint_names: Sequence[str] | None = None
                     ) -> tuple[Array, Array, Array | None, Array | None]:
    """``(times, positions, velocities, accelerations)`` without a first point at ``t = 0``
    (see the module docstring); unchanged if ``times`` is empty or ``times[0] != 0``.

    ``positions`` (k, n), ``velocities`` and ``accelerations`` (k, n) or None, ``q_current`` (n,).
    Raises :class:`StartPointError` if ``max_j |positions[0, j] - q_current[j]| > tolerance``
    (the message names the joint, ``joint_names[j]`` when given)."""
    if times.size == 0 or times[0] != 0.0:
        return times, positions, velocities, accelerations
    distance = np.abs(positions[0] - np.asarray(q_current, dtype=float))
    j = int(np.argmax(distance))
    if not distance[j] <= tolerance:
        name = joint_names[j] if joint_names is not None else f"joint {j}"
        raise StartPointError(f"the first point (time_from_start 0, the start state) is {distance[j]:.4f} rad from "
                              f"the current position on {name} (at most {tolerance:g} rad): a trajectory must start "
                              "where the arm is, or have its first point at time_from_start > 0")
    return (times[1:], positions[1:], None if velocities is None else velocities[1:],
            None if accelerations is None else accelerations[1:])
