"""Streamed trajectory commands that stop the arm by themselves: short horizons, each ending in a
braking tail (no ROS).

A trajectory controller executes the last message it received to its end and then holds the last
point. Sent as one long message, an experiment goes on without its sender: a dead node leaves
the arm moving. Streamed instead, every message (:func:`horizon_waypoints`) holds only

* the reference over the next ``horizon`` seconds (waypoints with ``q, q', q''`` every ``step``),
* followed by a **braking tail** (:class:`BrakingTail`) that brings every joint from the
  reference's state at the end of the horizon to rest,

and the sender replaces it every ``period < horizon`` seconds (the executing side splices a new
message onto its current reference). While messages keep coming, only their beginnings are
executed: the arm follows the reference. When they stop, the arm follows the last one to its end
and stops there: at most ``horizon + tail duration`` after the last message.

The braking tail, its duration and the sampling of waypoints: :mod:`youbot_dynamics.motion.braking`
(the controllers' release brakes with it too).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...motion.braking import Array, BrakingTail, States, sample_waypoints

__all__ = ["horizon_waypoints"]


def horizon_waypoints(reference: Callable[[float], States], now: float, horizon: float, step: float,
                      deceleration: Any) -> tuple[tuple[Array, Array, Array, Array], BrakingTail]:
    """One streamed message: waypoints ``(times from now, q, q', q'')`` of ``reference(t)`` (node
    time ``t``) over ``(now, now + horizon]`` every ``step``, then the :class:`BrakingTail` from
    the reference's state at ``now + horizon`` sampled every ``step`` (none when that state is at
    rest: the last point is then held). Also returns the tail."""
    times, q, dq, ddq = sample_waypoints(lambda t: reference(now + t), horizon, step)
    tail = BrakingTail.from_state(q[-1], dq[-1], ddq[-1], deceleration)
    if tail.duration == 0.0:
        return (times, q, dq, ddq), tail
    tail_times, *tail_states = sample_waypoints(tail.evaluate, tail.duration, step)
    return (np.concatenate([times, times[-1] + tail_times]),
            *(np.vstack([x, y]) for x, y in zip((q, dq, ddq), tail_states))), tail  # type: ignore[return-value]
