"""Piecewise Hermite polynomials through joint-space waypoints (the drives' trajectory reference).

Segment k runs from ``t_k`` to ``t_{k+1}`` (``h = t_{k+1} - t_k``) and is, in local time
``tau = t - t_k``, the polynomial ``q(tau) = sum_j c_j tau^j`` that matches

* position and velocity at both ends: **cubic Hermite** (degree 3, C1 across waypoints);
* position, velocity and acceleration at both ends: **quintic Hermite** (degree 5, C2).

The coefficients solve the linear conditions ``d^k q / d tau^k (0) = x_k(t_k)`` and
``d^k q / d tau^k (h) = x_k(t_{k+1})`` for the matched derivatives ``k``.

Waypoint velocities that are not given are chosen by :func:`waypoint_velocities`; missing
accelerations are zero. After the last waypoint the spline holds its final position.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import perm

import numpy as np
from numpy.typing import NDArray

__all__ = ["INTERPOLATIONS", "waypoint_velocities", "HermiteSpline"]

Array = NDArray[np.float64]

INTERPOLATIONS = ("cubic", "quintic")

_DEGREE = {"cubic": 3, "quintic": 5}


def waypoint_velocities(times: Array, positions: Array) -> Array:
    """Velocities at the interior waypoints from the neighbouring secant slopes, zero at the last one.

    With slopes ``s_- , s_+`` and durations ``h_-, h_+`` of the two adjacent segments,
    ``v = (h_+ s_- + h_- s_+) / (h_- + h_+)`` (the three-point derivative, exact for quadratics),
    set to zero where ``s_-`` and ``s_+`` differ in sign or one is zero, so the path does not
    overshoot a waypoint that is a local extremum. ``times`` (K,), ``positions`` (K, n); the
    velocity of point 0 is returned as zero too (callers pass the start state there).
    """
    h = np.diff(times)[:, None]
    slopes = np.diff(positions, axis=0) / h
    v = np.zeros_like(positions)
    s_minus, s_plus, h_minus, h_plus = slopes[:-1], slopes[1:], h[:-1], h[1:]
    interior = (h_plus * s_minus + h_minus * s_plus) / (h_minus + h_plus)
    v[1:-1] = np.where(s_minus * s_plus > 0, interior, 0.0)
    return v


def _boundary_matrix(h: Array, degree: int) -> Array:
    """(K, d+1, d+1): rows ``d^k/dtau^k [1, tau, .., tau^d]`` at ``tau = 0``, then at ``tau = h``, ``k < (d+1)/2``."""
    j = np.arange(degree + 1)
    rows = [np.array([perm(i, k) for i in j]) * tau ** np.maximum(j - k, 0)
            for tau in (np.zeros((h.size, 1)), h[:, None]) for k in range((degree + 1) // 2)]
    return np.stack(rows, axis=1)


@dataclass(frozen=True)
class HermiteSpline:
    """Piecewise polynomial ``q(t)``, ``t`` from 0 at the first waypoint; see the module docstring."""

    breaks: Array  # (K,) waypoint times, breaks[0] == 0
    coefficients: Array  # (K-1, d+1, n) monomial coefficients per segment, in local time
    derivative: Array  # (K-1, d, n) coefficients of dq/dtau
    final: Array  # (n,) the last waypoint, held after the end

    @classmethod
    def through(cls, times: Array, positions: Array, velocities: Array, accelerations: Array,
                interpolation: str) -> "HermiteSpline":
        """Spline through (K,) ``times`` and (K, n) waypoints; ``interpolation`` in ``INTERPOLATIONS``."""
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")
        degree = _DEGREE[interpolation]
        order = (degree + 1) // 2
        derivatives = (positions, velocities, accelerations)[:order]
        rhs = np.concatenate([np.stack([x[:-1] for x in derivatives], axis=1),
                              np.stack([x[1:] for x in derivatives], axis=1)], axis=1)  # (K-1, d+1, n)
        coefficients = np.linalg.solve(_boundary_matrix(np.diff(times), degree), rhs)
        derivative = coefficients[:, 1:] * np.arange(1, degree + 1)[None, :, None]
        return cls(np.asarray(times, dtype=float), coefficients, derivative, positions[-1].copy())

    @classmethod
    def from_state(cls, start_q: Array, start_dq: Array, times: Array, positions: Array, velocities: Array | None,
                   accelerations: Array | None, interpolation: str) -> "HermiteSpline":
        """The path an executor follows: from its current reference ``(start_q, start_dq)`` at time
        0 (acceleration 0) through waypoints reached ``times`` (> 0) later; missing velocities from
        :func:`waypoint_velocities`, missing accelerations 0."""
        all_times = np.concatenate([[0.0], times])
        all_q = np.vstack([start_q, positions])
        all_dq = waypoint_velocities(all_times, all_q) if velocities is None else np.vstack([start_dq, velocities])
        all_dq[0] = start_dq
        all_ddq = np.zeros_like(all_q)
        if accelerations is not None:
            all_ddq[1:] = accelerations
        return cls.through(all_times, all_q, all_dq, all_ddq, interpolation)

    @property
    def duration(self) -> float:
        return float(self.breaks[-1])

    def peak_velocities(self, samples: int = 64) -> tuple[Array, Array]:
        """Per joint, the largest ``|q'(t)|`` [rad/s] and the time [s] where it occurs, from
        ``samples`` + 1 evenly spaced points of every segment (both ends included). Sampling can
        only underestimate a peak inside a segment, by a relative ``O(1/samples^2)`` (0.1 % at
        most for a quintic with 64 samples): enough to refuse a command far beyond the limits."""
        h = np.diff(self.breaks)  # (K-1,)
        u = np.linspace(0.0, 1.0, samples + 1)  # (m,)
        tau = h[:, None] * u[None, :]  # (K-1, m) local times
        powers = tau[:, :, None] ** np.arange(self.derivative.shape[1])[None, None, :]  # (K-1, m, d)
        v = np.abs(np.einsum("kmd,kdn->kmn", powers, self.derivative)).reshape(-1, self.final.size)
        at = np.argmax(v, axis=0)
        times = (self.breaks[:-1, None] + tau).ravel()[at]
        return v[at, np.arange(self.final.size)], times

    def evaluate(self, t: float) -> tuple[Array, Array]:
        """Position and velocity at time ``t`` (clamped to ``[0, duration]``; zero velocity at the end)."""
        if t >= self.breaks[-1]:
            return self.final, np.zeros_like(self.final)
        k = max(int(np.searchsorted(self.breaks, t, side="right")) - 1, 0)
        powers = max(t - self.breaks[k], 0.0) ** np.arange(self.coefficients.shape[1])
        return powers @ self.coefficients[k], powers[:-1] @ self.derivative[k]
