"""The joint controllers of the simulated drives (stand-ins for the youBot drives' own firmware loops).

The TMCM drives cascade position, velocity and current loops; here each mode is one loop that
outputs joint torque directly (the current loop is taken as ideal), evaluated every time step ``dt``
on the positions and velocities the drive measures:

* position PID with a ramp generator: ``tau = kp e + kd (r' - q') + I``, ``e = r - q``,
  ``I <- clip(I + ki e dt, -I_max, I_max)`` (clamped integral, anti-windup); the reference ``r``
  is either the ramp towards the position set-point or the trajectory interpolation;
* ramp generator (like the firmware's): ``r <- r + clip(target - r, -v_r dt, v_r dt)``,
  ``r' = (change of r) / dt``, so a set-point is approached at the ramp velocity ``v_r``;
* velocity PI: ``tau = kp (v - q') + I``, ``I <- clip(I + ki (v - q') dt, -I_max, I_max)``.

All arrays are per joint; the controllers are allocation-light for a 1 kHz loop.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .config import PositionGains, VelocityGains

__all__ = ["PositionPid", "VelocityPi", "Ramp"]

Array = NDArray[np.float64]


class _ClampedIntegral:
    """``I <- clip(I + gain e dt, -limit, limit)``."""

    def __init__(self, gain: Array, limit: Array, dt: float) -> None:
        self._gain_dt = np.asarray(gain, dtype=float) * dt
        self._limit = np.asarray(limit, dtype=float)
        self.value = np.zeros_like(self._limit)

    def reset(self) -> None:
        self.value[:] = 0.0

    def update(self, error: Array) -> Array:
        self.value += self._gain_dt * error
        return np.clip(self.value, -self._limit, self._limit, out=self.value)


class PositionPid:
    """``tau = kp (r - q) + kd (r' - q') + I`` with the clamped integral of ``ki (r - q)``."""

    def __init__(self, gains: PositionGains, dt: float) -> None:
        self._kp, self._kd = gains.kp, gains.kd
        self._integral = _ClampedIntegral(gains.ki, gains.integral_limit, dt)

    def reset(self) -> None:
        self._integral.reset()

    def torque(self, reference: Array, reference_velocity: Array, q: Array, dq: Array) -> Array:
        error = reference - q
        return self._kp * error + self._kd * (reference_velocity - dq) + self._integral.update(error)


class VelocityPi:
    """``tau = kp (v - q') + I`` with the clamped integral of ``ki (v - q')``."""

    def __init__(self, gains: VelocityGains, dt: float) -> None:
        self._kp = gains.kp
        self._integral = _ClampedIntegral(gains.ki, gains.integral_limit, dt)

    def reset(self) -> None:
        self._integral.reset()

    def torque(self, velocity: Array, dq: Array) -> Array:
        error = velocity - dq
        return self._kp * error + self._integral.update(error)


class Ramp:
    """Reference moving towards a target at bounded speed; ``position`` and ``velocity`` are its state."""

    def __init__(self, ramp_velocity: Array, dt: float) -> None:
        self._max_step = np.asarray(ramp_velocity, dtype=float) * dt
        self._dt = dt
        self.position = np.zeros_like(self._max_step)
        self.velocity = np.zeros_like(self._max_step)

    def start(self, position: Array) -> None:
        self.position[:] = position
        self.velocity[:] = 0.0

    def advance(self, target: Array) -> None:
        step = np.clip(target - self.position, -self._max_step, self._max_step)
        self.position += step
        np.divide(step, self._dt, out=self.velocity)
