"""The seed's excitation: random reachable configurations visited point to point.

Seed 002, 3.2, collects identification data by commanding N configurations covering the workspace
through the drives' own (PID) position control. Here: draw configurations uniformly inside
the position limits (minus the margin), keep those with enough clearance (:mod:`.clearance`) whose
straight joint-space path from the previous waypoint is clear too (checked every
:data:`PATH_STEP` rad of the largest joint motion), and join them with rest-to-rest quintic moves
(:class:`~.trajectories.WaypointTrajectory`) timed by :func:`~.trajectories.quintic_duration`
to stay within the reduced velocity and acceleration limits. The schedule starts and ends at
``q_start``; the dwell at each waypoint gives static (gravity) samples.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from .clearance import YOUBOT_OBSTACLES, Obstacles
from .limits import ExcitationError, Margins, MotionLimits
from .trajectories import WaypointTrajectory, quintic_duration

__all__ = ["PATH_STEP", "path_ok", "start_configuration", "random_configurations"]

Array = NDArray[np.float64]
PATH_STEP = 0.02  # [rad] largest joint step between clearance checks along a move


def path_ok(limits: MotionLimits, q_a: Array, q_b: Array) -> bool:
    """True when the joint-space segment ``q_a -> q_b`` keeps the position bounds and the clearance."""
    steps = max(1, math.ceil(np.abs(q_b - q_a).max() / PATH_STEP))
    s = np.linspace(0.0, 1.0, steps + 1)[:, None]
    return bool(np.all(limits.configuration_ok(q_a + s * (q_b - q_a))))


def start_configuration(limits: MotionLimits, q_start: Any = None) -> Array:
    """``q_start`` checked against the bounds and the clearance; default the middle of the joint
    ranges (close to the upright "candle" pose on the youBot)."""
    arm = limits.arm
    q = 0.5 * (arm.position_min + arm.position_max) if q_start is None else arm.check_q(q_start, "q_start")
    if q.shape != (arm.n_joints,):
        raise ValueError(f"q_start must be one configuration of {arm.n_joints} joint angles, got shape {q.shape}")
    if not limits.configuration_ok(q):
        raise ValueError(f"q_start {np.round(q, 4).tolist()} is not inside the position limits with margin "
                         f"{limits.margins.position} rad or not clear of the obstacles by {limits.margins.clearance} m")
    return q


def random_configurations(arm: ArmDescription, n_points: int, seed: int = 0, *, q_start: Any = None,
                          margins: Margins = Margins(), obstacles: Obstacles = YOUBOT_OBSTACLES,
                          dwell: float = 1.0, max_attempts: int = 10000) -> WaypointTrajectory:
    """``n_points`` random clear configurations between two rests at ``q_start`` (module docstring)."""
    if n_points < 1:
        raise ValueError(f"need at least one random configuration, got {n_points}")
    limits = MotionLimits(arm, margins, obstacles)
    start = start_configuration(limits, q_start)
    rng = np.random.default_rng(seed)
    waypoints = [start]
    for _ in range(max_attempts):
        if len(waypoints) == n_points + 1:
            if path_ok(limits, waypoints[-1], start):
                break
            waypoints.pop()  # no clear way home from the last one: draw it again
            continue
        q = rng.uniform(limits.position_lower, limits.position_upper)
        if limits.configuration_ok(q) and path_ok(limits, waypoints[-1], q):
            waypoints.append(q)
    else:
        raise ExcitationError(f"found no {n_points} clear configurations with clear paths in {max_attempts} draws")
    waypoints.append(start)
    wp = np.array(waypoints)
    moves = [quintic_duration(b - a, limits.velocity_bound, limits.acceleration_bound) for a, b in zip(wp[:-1], wp[1:])]
    return WaypointTrajectory(wp, np.array(moves), dwell)
