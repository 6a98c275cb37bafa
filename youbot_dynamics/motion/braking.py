"""The braking tail: every joint from a state ``q0, q'0, q''0`` to rest within its deceleration
(no ROS). Used by the streamed experiment commands (:mod:`~youbot_dynamics.identification.experiment.streaming`)
and the controllers' release to the drives (:mod:`.release`, via :mod:`youbot_dynamics.motion.commands`).

From ``q0, q'0, q''0`` every joint's velocity follows the cubic Hermite
polynomial to rest in the common duration ``T`` (``s = t / T``)::

    q'(t)  = q'0 h00(s) + T q''0 h10(s),      h00 = 1 - 3 s^2 + 2 s^3,  h10 = s - 2 s^2 + s^3
    q''(t) = q'0 / T h00'(s) + q''0 h10'(s),  h00' = 6 s^2 - 6 s,       h10' = 1 - 4 s + 3 s^2
    q(t)   = q0 + T (q'0 H00(s) + T q''0 H10(s)),  H00 = s - s^3 + s^4 / 2,  H10 = s^2 / 2 - 2 s^3 / 3 + s^4 / 4

so position, velocity and acceleration are continuous where the tail starts and where it ends
(``q(T) = q0 + T q'0 / 2 + T^2 q''0 / 12``, at rest). The position is a quartic: a quintic Hermite
interpolator (the simulator's and the driver's trajectory execution) reproduces it exactly from
its sampled waypoints. ``T`` is the shortest duration for which ``|q''(t)| <= deceleration``
on every joint (:func:`braking_duration`; the peak of the quadratic ``q''(s)`` is exact, the
shortest ``T`` is found by bisection on ``1 / T``, where the condition holds on an interval: it
is convex in ``1 / T``), and at least :data:`MIN_BRAKING_TIME` when anything moves. A joint whose
``|q''0|`` already exceeds its deceleration keeps that bound (it cannot be lowered at once).
With ``q''0 = 0`` the tail takes ``T = 1.5 max_j |q'0_j| / a_j``; the velocity only decreases
unless ``q''0`` pushes it up (then it rises by at most ``T |q''0| 4 / 27``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["BrakingTail", "braking_duration", "sample_waypoints", "tail_extremes", "tail_states", "MIN_BRAKING_TIME"]

Array = NDArray[np.float64]
States = tuple[Array, Array, Array]

MIN_BRAKING_TIME = 0.05  # [s] shortest tail of a moving (or accelerating) arm
_BISECTION_STEPS = 32  # 1 / T to 2e-10 of its bracket (the feasible end: T errs long)
_REST = 1e-12  # [rad/s], [rad/s^2] below this a joint is at rest


def _peak_acceleration(v0: Array, a0: Array, x: Array) -> Array:
    """``max_{s in [0, 1]} |q''(s)|`` of the tail with ``1 / T = x`` (module docstring): the
    quadratic ``c2 s^2 + c1 s + c0`` at ``s = 0``, ``s = 1`` (where it is 0) and its vertex."""
    c2, c1, c0 = 6.0 * v0 * x + 3.0 * a0, -6.0 * v0 * x - 4.0 * a0, a0
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = np.where(c2 != 0.0, -c1 / (2.0 * c2), 0.0)
    vertex = np.clip(vertex, 0.0, 1.0)
    return np.maximum(np.abs(c0), np.abs((c2 * vertex + c1) * vertex + c0))


def braking_duration(dq: Any, ddq: Any, deceleration: Any) -> Array:
    """Shortest common tail duration ``T`` [s] of each state (module docstring): ``dq``, ``ddq``
    of shape (..., n), ``deceleration`` (n,) [rad/s^2] > 0; returns shape (...). 0 for a state at
    rest, else at least :data:`MIN_BRAKING_TIME`."""
    v0, a0 = np.asarray(dq, dtype=float), np.asarray(ddq, dtype=float)
    bound = np.maximum(np.broadcast_to(np.asarray(deceleration, dtype=float), v0.shape), np.abs(a0))
    # |q''(1/2)| = |1.5 v0 x + 0.25 a0| exceeds the bound beyond x = (bound + |a0|) / (1.5 |v0|)
    with np.errstate(divide="ignore"):
        high = np.where(np.abs(v0) > _REST, (bound + np.abs(a0)) / (1.5 * np.abs(v0)), np.inf)
    high = np.minimum(high, 1.0 / MIN_BRAKING_TIME)  # per joint; feasible: x = 0 (T -> infinity)
    low = np.zeros_like(high)
    for _ in range(_BISECTION_STEPS):
        middle = 0.5 * (low + high)
        ok = _peak_acceleration(v0, a0, middle) <= bound
        low, high = np.where(ok, middle, low), np.where(ok, high, middle)
    ok = _peak_acceleration(v0, a0, high) <= bound  # the cap itself may be feasible
    x = np.where(ok, high, low).min(axis=-1)
    moving = np.any((np.abs(v0) > _REST) | (np.abs(a0) > _REST), axis=-1)
    with np.errstate(divide="ignore"):
        duration = np.where(moving, np.maximum(1.0 / x, MIN_BRAKING_TIME), 0.0)
    return duration


def tail_states(q0: Array, dq0: Array, ddq0: Array, duration: Array, s: Array) -> States:
    """``(q, q', q'')`` of tails (module docstring) from ``q0, q'0, q''0`` lasting ``duration``
    at the normalised times ``s`` in ``[0, 1]``; all arguments broadcast (e.g. states (m, 1, n),
    durations (m, 1, 1), ``s`` (k, 1)). A tail of duration 0 is at rest."""
    T = np.asarray(duration, dtype=float)
    q = q0 + T * (dq0 * (s - s**3 + 0.5 * s**4) + T * ddq0 * (0.5 * s**2 - 2.0 * s**3 / 3.0 + 0.25 * s**4))
    dq = dq0 * (1.0 - 3.0 * s**2 + 2.0 * s**3) + T * ddq0 * (s - 2.0 * s**2 + s**3)
    v_over_t = np.divide(dq0, T, out=np.zeros(np.broadcast(dq0, T).shape), where=T > 0.0)
    ddq = v_over_t * (6.0 * s**2 - 6.0 * s) + ddq0 * (1.0 - 4.0 * s + 3.0 * s**2)
    return q, dq, ddq


def tail_extremes(q0: Array, dq0: Array, ddq0: Array, duration: Array) -> tuple[Array, Array, Array]:
    """Lowest and highest position and largest speed along tails (``q0, q'0, q''0`` (m, n),
    ``duration`` (m,)), exactly: besides the ends, ``q'(s) = (1 - s)^2 (q'0 (1 + 2 s) + T q''0 s)``
    vanishes at ``s = -q'0 / (2 q'0 + T q''0)`` and ``q''(s)`` (zero at ``s = 1``) at
    ``s = T q''0 / (6 q'0 + 3 T q''0)``; each (m, n)."""
    T = np.asarray(duration, dtype=float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        turn = np.nan_to_num(-dq0 / (2.0 * dq0 + T * ddq0), nan=0.0, posinf=0.0, neginf=0.0)
        peak = np.nan_to_num(T * ddq0 / (6.0 * dq0 + 3.0 * T * ddq0), nan=0.0, posinf=0.0, neginf=0.0)
    s = np.clip(np.stack([np.zeros_like(turn), np.ones_like(turn), turn, peak]), 0.0, 1.0)  # (4, m, n)
    q, dq, _ = tail_states(q0, dq0, ddq0, T, s)
    return q.min(axis=0), q.max(axis=0), np.abs(dq).max(axis=0)


@dataclass(frozen=True)
class BrakingTail:
    """From ``q0, dq0, ddq0`` (n,) to rest in ``duration`` (module docstring); held after it."""

    q0: Array
    dq0: Array
    ddq0: Array
    duration: float

    @classmethod
    def from_state(cls, q: Any, dq: Any, ddq: Any, deceleration: Any) -> "BrakingTail":
        """The shortest tail within ``deceleration`` (n,) [rad/s^2] (:func:`braking_duration`)."""
        q, dq, ddq = (np.array(x, dtype=float) for x in (q, dq, ddq))
        return cls(q, dq, ddq, float(braking_duration(dq, ddq, deceleration)))

    @property
    def final(self) -> Array:
        """Where the tail comes to rest: ``q0 + T q'0 / 2 + T^2 q''0 / 12``."""
        T = self.duration
        return self.q0 + T * (0.5 * self.dq0 + T * self.ddq0 / 12.0)

    def evaluate(self, t: Any) -> States:
        """``(q, q', q'')`` at ``t`` [s] from the tail's start (scalar: (n,) each; array (m,): (m, n))."""
        T = self.duration
        t_arr = np.asarray(t, dtype=float)
        s = np.clip(t_arr, 0.0, T) / T if T > 0.0 else np.ones_like(t_arr)
        return tail_states(self.q0, self.dq0, self.ddq0, np.asarray(T), s[..., None])


def sample_waypoints(evaluate: Callable[[float], States], duration: float, step: float
                     ) -> tuple[Array, Array, Array, Array]:
    """``(times, q, q', q'')`` of ``evaluate(t)`` at ``step, 2 step, ..., duration`` (the last point
    exactly at ``duration``; at least one point, at ``max(duration, step)``)."""
    count = max(1, int(math.ceil(duration / step - 1e-9)))
    times = np.minimum(step * np.arange(1, count + 1), max(duration, step))
    times[-1] = max(duration, step)
    states = [evaluate(float(t)) for t in times]
    return times, *(np.array([s[k] for s in states]) for k in range(3))  # type: ignore[return-value]
