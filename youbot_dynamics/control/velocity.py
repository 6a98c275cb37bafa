"""Joint velocity from the joint positions, for laws whose reported velocity lags.

The youBot's drives report velocity as integer motor rpm through their own filter: it lags the
derivative of the position by about 10 ms (``../shared/data/youbot_real/README.md``). A
derivative term acting on it damps the state of 10 ms ago; on the simulated youBot with that lag,
computed torque tracked at 1.4-2.3 mrad RMS instead of 0.13-0.18 mrad. The encoders resolve
``2 pi / (4000 N)`` rad (1e-5 rad on joint 1), so differentiated positions are usable at 1 kHz
after a short low-pass:

``v_k = v_{k-1} + a (r_k - v_{k-1})``, ``r_k = (q_k - q_{k-1}) / (t_k - t_{k-1})``,
``a = dt / (T + dt)`` (first-order low-pass of time constant ``T``, discretised per step).

The step is the joint states' own stamps (jittered publishers are differentiated correctly). A
repeated or older stamp leaves the estimate unchanged; a gap longer than ``max_step`` (a lost
state, a restarted publisher) restarts it from the reported velocity. Measured in the simulator
with the 10 ms lag, computed torque on an identified model, 80 % of the velocity limits: RMS
tracking error 1.35-2.25 mrad with the reported velocity, 0.34-1.26 mrad with ``T = 1 ms``
(0.45-1.36 with 2 ms, 0.65-1.56 with 4 ms).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["VELOCITY_SOURCES", "VelocityFromPositions"]

Array = NDArray[np.float64]

VELOCITY_SOURCES = ("positions", "reported")


class VelocityFromPositions:
    """The estimate of the module docstring for ``n`` joints; ``time_constant`` ``T`` [s] > 0,
    ``max_step`` [s] the longest step differentiated."""

    def __init__(self, n: int, time_constant: float = 0.001, max_step: float = 0.02) -> None:
        if not time_constant > 0.0 or not max_step > 0.0:
            raise ValueError(f"time_constant and max_step must be positive, got {time_constant}, {max_step}")
        self.time_constant = float(time_constant)
        self.max_step = float(max_step)
        self._t: float | None = None
        self._q = np.zeros(n)
        self._v = np.zeros(n)

    def reset(self) -> None:
        """Forget the history: the next update starts from its reported velocity."""
        self._t = None

    def update(self, t: float, q: Array, reported: Array) -> Array:
        """The estimate at stamp ``t`` [s] of positions ``q`` (``reported``: the joint state's velocity)."""
        if self._t is not None:
            dt = t - self._t
            if dt <= 0.0:
                return self._v.copy()
            if dt <= self.max_step:
                self._v += (dt / (self.time_constant + dt)) * ((q - self._q) / dt - self._v)
            else:
                self._v[:] = reported
        else:
            self._v[:] = reported
        self._t = t
        self._q[:] = q
        return self._v.copy()
