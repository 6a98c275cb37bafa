"""When the simulator node publishes a joint state: every ``k`` physics steps, or at a rate with jitter.

Regular (``jitter = 0``): every ``1 / (rate timestep)`` steps, which must be an integer (the rate
divides the physics rate). Jittered (``jitter > 0``, e.g. the real youBot driver's ~300 Hz): the
``k``-th publication is due at ``k / rate + e_k`` (seconds of simulated time since the last
:meth:`PublishSchedule.restart`), ``e_k`` Gaussian with standard deviation ``jitter``, clipped to
``+-0.45 / rate`` so publications stay in order, and happens after the first physics step at or
after that instant (at least one step after the previous one). The mean rate is ``rate``; the
intervals vary by the jitter and by the physics step (300 Hz at 1 kHz: 3 or 4 ms apart even
without jitter).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["PublishSchedule"]


class PublishSchedule:
    """Physics steps until each next publication (see the module docstring)."""

    def __init__(self, rate: float, timestep: float, jitter: float = 0.0,
                 rng: np.random.Generator | None = None) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"publish_rate must be > 0 Hz, got {rate}")
        if not (math.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"publish_jitter must be >= 0 s, got {jitter}")
        physics_rate = 1.0 / timestep
        if rate > physics_rate * (1 + 1e-9):
            raise ValueError(f"publish_rate {rate:g} Hz exceeds the physics rate {physics_rate:g} Hz")
        self.rate, self.timestep, self.jitter = float(rate), float(timestep), float(jitter)
        self._rng = rng if rng is not None else np.random.default_rng()
        self.regular_steps: int | None = None
        if jitter == 0.0:
            ratio = physics_rate / rate
            steps = int(round(ratio))
            if steps < 1 or abs(ratio - steps) > 1e-6 * ratio:
                raise ValueError(f"publish_rate {rate:g} Hz must divide the physics rate {physics_rate:g} Hz "
                                 "(or give publish_jitter > 0 for an irregular schedule)")
            self.regular_steps = steps
        self.restart()

    def restart(self) -> None:
        """Count from now (simulated time 0 of the schedule, e.g. after a reset of the simulator)."""
        self._count = 0  # publications so far
        self._step = 0  # physics step of the last publication

    def next_steps(self) -> int:
        """Physics steps to run before the next publication (>= 1)."""
        if self.regular_steps is not None:
            return self.regular_steps
        self._count += 1
        period = 1.0 / self.rate
        error = float(np.clip(self._rng.normal(0.0, self.jitter), -0.45 * period, 0.45 * period))
        due = math.ceil((self._count * period + error) / self.timestep - 1e-9)
        steps = max(1, due - self._step)
        self._step += steps
        return steps
