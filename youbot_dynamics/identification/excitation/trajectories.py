"""Joint trajectories for identification experiments: analytic ``q(t), q'(t), q''(t)``.

**Finite Fourier series** (Swevers, Ganseman, Tukel, De Schutter, Van Brussel, "Optimal robot
excitation and identification", IEEE Trans. Robot. Automat. 13(5), 1997). With base pulsation
``w = 2 pi / T`` and ``K`` harmonics, joint i moves as

    q_i(t)   = q0_i + sum_k [ a_ik / (w k) sin(w k t) - b_ik / (w k) cos(w k t) ]
    q'_i(t)  = sum_k [ a_ik cos(w k t) + b_ik sin(w k t) ]
    q''_i(t) = sum_k w k [ -a_ik sin(w k t) + b_ik cos(w k t) ]

(``a_ik``, ``b_ik`` are velocity amplitudes [rad/s]). The motion is T-periodic, so data can be
averaged over periods. Starting at rest at ``q_start`` (and therefore ending there at ``t = T``):

    q'_i(0) = sum_k a_ik = 0           ->  a_i1 = -sum_{k>=2} a_ik
    q''_i(0) = w sum_k k b_ik = 0      ->  b_i1 = -sum_{k>=2} k b_ik
    q_i(0) = q0_i - sum_k b_ik / (w k) = q_start_i  ->  q0_i = q_start_i + sum_k b_ik / (w k)

so the free parameters are ``a_i2..a_iK, b_i2..b_iK`` (:meth:`FourierTrajectory.at_rest`), and
``q - q_start``, ``q'``, ``q''`` are linear in them.

**Point to point** (seed 002, 3.2: configurations covering the workspace visited through the
drives' position control): rest-to-rest quintic segments ``q = q_a + (q_b - q_a) s(tau)``,
``s = 10 tau^3 - 15 tau^4 + 6 tau^5``, ``tau = (t - t_0) / T_seg``, with a dwell at every
waypoint. ``max s' = 15/8`` (tau = 1/2) and ``max |s''| = 10 / sqrt(3)`` (tau = 1/2 -+ sqrt(3)/6),
which :func:`quintic_duration` uses to respect velocity and acceleration limits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Union

import numpy as np
from numpy.typing import NDArray

__all__ = ["FourierTrajectory", "WaypointTrajectory", "Trajectory", "quintic_duration", "QUINTIC_PEAK_VELOCITY",
           "QUINTIC_PEAK_ACCELERATION"]

Array = NDArray[np.float64]
States = tuple[Array, Array, Array]

QUINTIC_PEAK_VELOCITY = 15.0 / 8.0  # max ds/dtau
QUINTIC_PEAK_ACCELERATION = 10.0 / math.sqrt(3.0)  # max |d2s/dtau2|


def _times(t: Any) -> tuple[Array, bool]:
    arr = np.asarray(t, dtype=float)
    if arr.ndim > 1:
        raise ValueError(f"t must be a scalar or a 1-D array of times, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("t contains NaN or infinite values")
    return np.atleast_1d(arr), arr.ndim == 0


def _shaped(states: States, scalar: bool) -> States:
    return tuple(x[0] for x in states) if scalar else states  # type: ignore[return-value]


@dataclass(frozen=True)
class FourierTrajectory:
    """T-periodic finite Fourier series per joint (module docstring). ``a``, ``b``: (n, K) [rad/s]."""

    period: float  # T [s]
    offset: Array  # q0 (n,) [rad]
    a: Array
    b: Array
    kind: ClassVar[str] = "fourier"

    def __post_init__(self) -> None:
        a, b = np.asarray(self.a, dtype=float), np.asarray(self.b, dtype=float)
        offset = np.asarray(self.offset, dtype=float)
        if not (math.isfinite(self.period) and self.period > 0):
            raise ValueError(f"period must be a positive number of seconds, got {self.period}")
        if a.ndim != 2 or a.shape != b.shape or a.shape[1] < 1 or offset.shape != (a.shape[0],):
            raise ValueError(f"a and b must be (n, K) and offset (n,), got {a.shape}, {b.shape}, {offset.shape}")
        if not all(np.all(np.isfinite(x)) for x in (a, b, offset)):
            raise ValueError("Fourier coefficients must be finite")
        object.__setattr__(self, "period", float(self.period))
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @classmethod
    def at_rest(cls, period: float, q_start: Any, free: Any) -> "FourierTrajectory":
        """The series at rest at ``q_start`` for ``t = 0`` (and ``T``), from the free coefficients.

        ``free`` is (2 (K - 1), n): rows ``a_2..a_K`` then ``b_2..b_K`` [rad/s]; ``a_1``, ``b_1``
        and ``q0`` follow from the rest conditions of the module docstring.
        """
        q_start = np.asarray(q_start, dtype=float)
        free = np.asarray(free, dtype=float)
        if free.ndim != 2 or free.shape[0] % 2 or free.shape[1] != q_start.size:
            raise ValueError(f"free must be (2 (K - 1), {q_start.size}), got {free.shape}")
        m = free.shape[0] // 2
        k = np.arange(2, m + 2, dtype=float)
        a_rest, b_rest = free[:m].T, free[m:].T  # (n, K - 1)
        a = np.hstack([-a_rest.sum(axis=1, keepdims=True), a_rest])
        b = np.hstack([-(b_rest * k).sum(axis=1, keepdims=True), b_rest])
        w = 2.0 * math.pi / period
        offset = q_start + (b / (w * np.arange(1, m + 2))).sum(axis=1)
        return cls(period, offset, a, b)

    def free_coefficients(self) -> Array:
        """``a_2..a_K`` then ``b_2..b_K`` as rows, (2 (K - 1), n): the ``free`` of :meth:`at_rest`."""
        return np.vstack([self.a[:, 1:].T, self.b[:, 1:].T])

    @property
    def n_joints(self) -> int:
        return int(self.a.shape[0])

    @property
    def harmonics(self) -> int:
        return int(self.a.shape[1])

    @property
    def base_frequency(self) -> float:
        """``1 / T`` [Hz]; the highest harmonic is ``K / T``."""
        return 1.0 / self.period

    @property
    def duration(self) -> float:
        """One period [s]: the trajectory is back at rest at its start configuration."""
        return self.period

    def evaluate(self, t: Any) -> States:
        """``(q, q', q'')`` at times ``t`` (scalar -> (n,) each, 1-D array -> (N, n) each)."""
        t, scalar = _times(t)
        w = 2.0 * math.pi / self.period
        wk = w * np.arange(1, self.harmonics + 1)
        s, c = np.sin(np.outer(t, wk)), np.cos(np.outer(t, wk))  # (N, K)
        q = self.offset + (s / wk) @ self.a.T - (c / wk) @ self.b.T
        dq = c @ self.a.T + s @ self.b.T
        ddq = (c * wk) @ self.b.T - (s * wk) @ self.a.T
        return _shaped((q, dq, ddq), scalar)

    def rest_error(self) -> float:
        """``max(|q'(0)|, |q''(0)| T)``: zero (to rounding) for a trajectory that starts at rest."""
        _, dq, ddq = self.evaluate(0.0)
        return float(max(np.abs(dq).max(), np.abs(ddq).max() * self.period))


def quintic_duration(delta: Any, velocity_max: Any, acceleration_max: Any) -> float:
    """Shortest rest-to-rest quintic time [s] moving every joint by ``delta`` within the limits:
    ``max_j max(15/8 |d_j| / v_j, sqrt(10/sqrt(3) |d_j| / a_j))``."""
    d = np.abs(np.asarray(delta, dtype=float))
    return float(np.max(np.maximum(QUINTIC_PEAK_VELOCITY * d / velocity_max,
                                   np.sqrt(QUINTIC_PEAK_ACCELERATION * d / acceleration_max))))


@dataclass(frozen=True)
class WaypointTrajectory:
    """Rest-to-rest quintic moves through ``waypoints`` (m, n), dwelling ``dwell`` [s] at each.

    Timeline: dwell at waypoint 0, move 0 -> 1 in ``move_durations[0]``, dwell at waypoint 1, ...,
    move to waypoint m - 1, dwell. Before 0 and after the end the arm rests at the end waypoints.
    """

    waypoints: Array
    move_durations: Array  # (m - 1,) [s]
    dwell: float
    kind: ClassVar[str] = "waypoints"

    def __post_init__(self) -> None:
        wp = np.asarray(self.waypoints, dtype=float)
        moves = np.asarray(self.move_durations, dtype=float)
        if wp.ndim != 2 or wp.shape[0] < 2:
            raise ValueError(f"waypoints must be (m, n) with m >= 2, got shape {wp.shape}")
        if moves.shape != (wp.shape[0] - 1,):
            raise ValueError(f"move_durations must have {wp.shape[0] - 1} values, got shape {moves.shape}")
        if not (np.all(np.isfinite(wp)) and np.all(np.isfinite(moves)) and np.all(moves > 0)):
            raise ValueError("waypoints must be finite and move durations positive")
        if not (math.isfinite(self.dwell) and self.dwell >= 0):
            raise ValueError(f"dwell must be >= 0 s, got {self.dwell}")
        object.__setattr__(self, "waypoints", wp)
        object.__setattr__(self, "move_durations", moves)
        object.__setattr__(self, "dwell", float(self.dwell))

    @property
    def n_joints(self) -> int:
        return int(self.waypoints.shape[1])

    @property
    def duration(self) -> float:
        return float(self.dwell * len(self.waypoints) + self.move_durations.sum())

    def move_starts(self) -> Array:
        """Start time of each move [s]."""
        ends_before = np.concatenate([[0.0], np.cumsum(self.move_durations)[:-1]])
        return self.dwell * np.arange(1, len(self.waypoints)) + ends_before

    def evaluate(self, t: Any) -> States:
        """``(q, q', q'')`` at times ``t`` (scalar -> (n,) each, 1-D array -> (N, n) each)."""
        t, scalar = _times(t)
        starts = self.move_starts()
        # index of the last move started at t (-1: before the first move)
        j = np.searchsorted(starts, t, side="right") - 1
        jc = np.clip(j, 0, len(starts) - 1)
        length = self.move_durations[jc]
        tau = np.clip((t - starts[jc]) / length, 0.0, 1.0)
        tau = np.where(j < 0, 0.0, tau)[:, None]
        s = tau**3 * (10.0 - 15.0 * tau + 6.0 * tau**2)
        ds = 30.0 * tau**2 * (1.0 - tau) ** 2
        dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau)
        q_a, delta = self.waypoints[jc], self.waypoints[jc + 1] - self.waypoints[jc]
        length = length[:, None]
        return _shaped((q_a + delta * s, delta * ds / length, delta * dds / length**2), scalar)


Trajectory = Union[FourierTrajectory, WaypointTrajectory]
