"""A friction sweep: out-and-back moves of every joint at several speeds, both directions, with holds.

A Fourier excitation (:mod:`.design`) spends little time at low speeds and always accelerates
there, so it leaves the friction's shape below ~0.5 rad/s to extrapolation: on a robot with a
friction-dominated wrist the default experiment's model had no Coulomb friction on joint 5 and a
viscous term twice too large in its place (issue 46). The sweep measures the friction curve
directly. For each peak speed ``v_k`` of ``speeds`` (slowest first) every joint moves together

    q_start -> q_start + P_k d_k -> q_start -> q_start - P_k d_k -> q_start

with ``P_k = diag(p_k)`` the signs of row ``k`` of a Sylvester-Hadamard matrix (first ``n``
columns, :func:`direction_patterns`): from level to level the joints move in other combinations
(joint 2 up with joint 3 down, ...), so the sweep's slow rows see gravity in more configurations
than a line through ``q_start``. The moves are rest-to-rest quintics of duration ``T_k``
(:class:`~.trajectories.WaypointTrajectory`, ``s' <= 15/8``), holding ``dwell`` at each rest (a
reversal through rest in each direction). Joint ``j`` moves ``d_jk = min(8/15 v_k T_k, D_j)``:
it reaches ``v_k`` unless its room ``D_j`` (the smaller distance from ``q_start`` to its position
bounds, at most ``max_excursion``, shrunk by 0.8 until the level's moves keep the clearance) is too
small or the acceleration bound lengthens the move (the default speeds are reached from the default
excitation's start pose);
``T_k = min(max_move, 15/8 max_j min(D_j, 8/15 v_k max_move) / v_k)``, lengthened where the
acceleration bound needs it (:func:`~.trajectories.quintic_duration`). Each move passes every
speed from 0 to its peak; its acceleration is ``<= 10 / sqrt(3) d / T^2``, small on the slow
levels, so their torque is friction and gravity. Every sample's configuration is checked against
the position bounds and the clearance (:class:`~.limits.MotionLimits`), and the peak speeds
against the reduced velocity limit.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .limits import ExcitationError, MotionLimits, verification_times
from .trajectories import QUINTIC_PEAK_VELOCITY, WaypointTrajectory, quintic_duration
from .waypoints import path_ok, start_configuration

__all__ = ["SWEEP_SPEEDS", "SWEEP_MAX_MOVE", "SWEEP_MAX_EXCURSION", "SWEEP_DWELL", "direction_patterns", "speed_sweep"]

Array = NDArray[np.float64]

#: [rad/s] peak speeds of the levels: above the Coulomb threshold of the fit (0.05) to most of velocity_max
SWEEP_SPEEDS = (0.08, 0.15, 0.3, 0.6, 0.9, 1.2)
SWEEP_MAX_MOVE = 1.5  # [s] longest move (the slow levels' duration)
SWEEP_MAX_EXCURSION = 0.7  # [rad] largest move of a joint from the start pose
SWEEP_DWELL = 0.25  # [s] hold at each rest


def direction_patterns(levels: int, n: int) -> Array:
    """(levels, n) signs: rows of the Sylvester-Hadamard matrix of the smallest power-of-two order
    with at least ``levels`` rows and ``n`` columns, first ``n`` columns (rows cycled beyond its order)."""
    order = 1
    while order < max(levels, n):
        order *= 2
    h = np.ones((1, 1))
    while h.shape[0] < order:
        h = np.block([[h, h], [h, -h]])
    return h[np.arange(levels) % order, :n]


def _room(limits: MotionLimits, q_start: Array, max_excursion: float) -> Array:
    """``D_j``: the smaller distance from ``q_start`` to joint j's position bounds, at most ``max_excursion``."""
    room = np.minimum(q_start - limits.position_lower, limits.position_upper - q_start)
    return np.minimum(room, max_excursion)


def _level(limits: MotionLimits, room: Array, speed: float, max_move: float) -> tuple[Array, float]:
    """``(d_k, T_k)`` of the level of peak speed ``speed`` (module docstring)."""
    excursion = np.minimum(room, speed * max_move / QUINTIC_PEAK_VELOCITY)
    duration = min(max_move, QUINTIC_PEAK_VELOCITY * float(excursion.max()) / speed)
    return excursion, max(duration, quintic_duration(excursion, limits.velocity_bound, limits.acceleration_bound))


SHRINK = 0.8  # a level whose moves would leave the clearance moves this much less, until they keep it
SHRINK_STEPS = 10


def _clear_level(limits: MotionLimits, start: Array, room: Array, speed: float, signs: Array,
                 max_move: float) -> tuple[Array, float]:
    """The level's signed excursion ``P_k d_k`` and duration ``T_k``, its room shrunk by :data:`SHRINK`
    until both of its moves (straight in joint space) keep the position bounds and the clearance."""
    for step in range(SHRINK_STEPS):
        excursion, duration = _level(limits, room * SHRINK**step, speed, max_move)
        if all(path_ok(limits, start, start + sign * signs * excursion) for sign in (1.0, -1.0)):
            return signs * excursion, duration
    raise ExcitationError(f"no excursion of the sweep's {speed:g} rad/s level from {np.round(start, 4).tolist()} keeps "
                          f"the clearance: start from another pose")


def speed_sweep(limits: MotionLimits, q_start: Any, speeds: Sequence[float] = SWEEP_SPEEDS, *,
                max_move: float = SWEEP_MAX_MOVE, max_excursion: float = SWEEP_MAX_EXCURSION,
                dwell: float = SWEEP_DWELL) -> WaypointTrajectory:
    """The friction sweep from ``q_start`` (module docstring). :class:`ValueError` for a speed that is
    not positive or above the reduced velocity limit of every joint, or a non-positive ``max_move`` or
    ``max_excursion``; :class:`~.limits.ExcitationError` when a configuration on the way leaves the
    position bounds or the clearance."""
    start = start_configuration(limits, q_start)
    speeds = [float(v) for v in speeds]
    if not speeds or not all(math.isfinite(v) and v > 0 for v in speeds):
        raise ValueError(f"sweep speeds must be positive [rad/s], got {speeds}")
    if max(speeds) > float(limits.velocity_bound.max()):
        raise ValueError(f"sweep speed {max(speeds):g} rad/s is above every joint's reduced velocity limit "
                         f"({float(limits.velocity_bound.max()):.3g} rad/s)")
    if not (max_move > 0 and max_excursion > 0):
        raise ValueError(f"max_move and max_excursion must be positive, got {max_move}, {max_excursion}")
    room = _room(limits, start, max_excursion)
    waypoints, moves = [start], []
    for speed, signs in zip(sorted(speeds), direction_patterns(len(speeds), start.size)):
        excursion, duration = _clear_level(limits, start, room, speed, signs, max_move)
        for target in (start + excursion, start, start - excursion, start):
            waypoints.append(target)
            moves.append(duration)
    sweep = WaypointTrajectory(np.array(waypoints), np.array(moves), dwell)
    q = sweep.evaluate(verification_times(sweep.duration))[0]
    bad = np.flatnonzero(~limits.configuration_ok(q))
    if bad.size:
        raise ExcitationError(f"the sweep from {np.round(start, 4).tolist()} leaves the position bounds or the "
                              f"clearance at {np.round(q[bad[0]], 4).tolist()}: use a smaller max_excursion")
    return sweep
