"""The arm's limits, watched on the simulated arm: every excursion the package must never cause.

The package's safety rule (doc/safety.md) is that nothing it commands drives a joint

* faster than ``velocity_factor`` (1.1) times ``velocity_max``,
* beyond ``[position_min, position_max]`` by more than ``position_tolerance`` (1 mrad: the hard
  stops of :mod:`.mujoco_model` are stiff constraints that a joint at ``velocity_max`` penetrates
  by about 0.1 mrad, and a joint crashing at 7 rad/s by about 6 mrad), or
* with a commanded torque above the torque limit the controllers saturate to,
  ``min(effort_max, drive_torque_limit)`` (``drive_torque_limit = max_current kt N``: what the
  drives can give; ``effort_max``: the arm description's practical limit, 1 N m on joint 5 where
  the drive could give 6.1 N m). The simulated drives saturate at the drive limit, but a command
  above the practical one means the commander's own saturation failed. (The virtual driver's
  simulator is commanded by the virtual drives' own current loops, whose position and velocity
  modes may give the drives' peak torque: it watches the drive limit, ``torque_limit``.)

:class:`LimitMonitor` checks the true (not quantized) state after every physics step and every
effort command. Each *excursion* (from the step or command that crosses a bound until the joint is
back within it) is kept as a :class:`LimitExcursion` with its worst value and, when the
environment variable ``YOUBOT_DYNAMICS_LIMIT_LOG`` names a file, appended to it as one JSON line
with the process id and command line when it begins (at most :data:`MAX_LOGGED` lines per
monitor): a joint that leaves its limits again later, after a reset say, is reported again.
The test suite sets that variable for every simulator it starts, in-process or in a subprocess,
and fails any test during which a line was written (``test/conftest.py``), so the rule holds for
every test and for the demo's phases, not only for the tests written about it.

Cost: a few microseconds per step (one test of the state against a box, on preallocated arrays).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription

__all__ = ["LIMIT_LOG_VARIABLE", "MAX_LOGGED", "LimitExcursion", "LimitMonitor"]

Array = NDArray[np.float64]

LIMIT_LOG_VARIABLE = "YOUBOT_DYNAMICS_LIMIT_LOG"
MAX_LOGGED = 100  # excursions a monitor appends to the log (an oscillation must not flood it)
_UNITS = {"velocity": "rad/s", "position": "rad", "torque": "N m"}


@dataclass
class LimitExcursion:
    """A joint beyond one of its limits: ``value`` is the worst seen (signed), ``limit`` the bound
    it crossed (signed the same way), ``time`` [s, simulated] when it was first seen, ``mode``
    the drives' mode then (``None``: motors off)."""

    kind: str
    joint: str
    value: float
    limit: float
    time: float
    mode: str | None

    def describe(self) -> str:
        unit = _UNITS[self.kind]
        return (f"{self.joint} {self.kind} {self.value:+.4f} {unit} beyond its limit {self.limit:+.4f} {unit} "
                f"at t = {self.time:.3f} s (drives: {self.mode or 'motors off'})")


class LimitMonitor:
    """Watches one simulated arm against its limits; see the module docstring."""

    def __init__(self, arm: ArmDescription, *, velocity_factor: float = 1.1, position_tolerance: float = 1e-3,
                 torque_limit: Any = None) -> None:
        if not (np.isfinite(velocity_factor) and velocity_factor >= 1.0):
            raise ValueError(f"velocity_factor must be >= 1, got {velocity_factor}")
        if not (np.isfinite(position_tolerance) and position_tolerance >= 0.0):
            raise ValueError(f"position_tolerance must be >= 0, got {position_tolerance}")
        self.arm = arm
        self.velocity_bound = velocity_factor * arm.velocity_max
        self.position_low = arm.position_min - position_tolerance
        self.position_high = arm.position_max + position_tolerance
        self.torque_limit = (arm.torque_limit if torque_limit is None
                             else np.asarray(torque_limit, dtype=float))
        self.torque_bound = self.torque_limit * (1.0 + 1e-9)
        self._excursions: list[LimitExcursion] = []
        self._active: dict[tuple[str, int], LimitExcursion] = {}  # excursions not over yet
        # one test of [dq; q] against the box [-velocity_bound, velocity_bound] x [position_low, position_high]
        self._centre = np.concatenate([np.zeros(arm.n_joints), 0.5 * (self.position_low + self.position_high)])
        self._half_width = np.concatenate([self.velocity_bound, 0.5 * (self.position_high - self.position_low)])
        self._state = np.empty(2 * arm.n_joints)
        self._beyond = np.empty(2 * arm.n_joints, dtype=bool)
        self._log = os.environ.get(LIMIT_LOG_VARIABLE) or None

    @property
    def excursions(self) -> list[LimitExcursion]:
        """Every excursion so far, first seen first."""
        return list(self._excursions)

    def observe(self, time: float, q: Array, dq: Array, mode: str | None) -> None:
        """Check the true state ``q``, ``dq`` (n,) after a physics step."""
        n, state = self.arm.n_joints, self._state
        state[:n] = dq
        state[n:] = q
        np.subtract(state, self._centre, out=state)
        np.abs(state, out=state)
        if not np.greater(state, self._half_width, out=self._beyond).any():  # the usual case: 4 array operations
            if self._active:
                self._end({"velocity", "position"})
            return
        fast = np.abs(dq) > self.velocity_bound
        self._record("velocity", time, dq, self.velocity_bound * np.sign(dq), fast, mode)
        low, high = q < self.position_low, q > self.position_high
        self._record("position", time, q, np.where(low, self.arm.position_min, self.arm.position_max), low | high,
                     mode)

    def command(self, time: float, torque: Array, mode: str | None) -> None:
        """Check a commanded joint torque ``torque`` (n,) [N m] before the drives saturate it."""
        beyond = np.abs(torque) > self.torque_bound
        if beyond.any():
            self._record("torque", time, torque, self.torque_limit * np.sign(torque), beyond, mode)
        elif self._active:
            self._end({"torque"})

    def _end(self, kinds: set[str]) -> None:
        for key in [key for key in self._active if key[0] in kinds]:
            del self._active[key]

    def _record(self, kind: str, time: float, values: Array, limits: Array, beyond: Any, mode: str | None) -> None:
        for j in range(self.arm.n_joints):
            key = (kind, j)
            excursion = self._active.get(key)
            if not beyond[j]:
                if excursion is not None:
                    del self._active[key]
            elif excursion is None:
                excursion = LimitExcursion(kind, self.arm.joint_names[j], float(values[j]), float(limits[j]),
                                           float(time), mode)
                self._active[key] = excursion
                self._excursions.append(excursion)
                if len(self._excursions) <= MAX_LOGGED:
                    self._append_to_log(excursion)
            elif abs(values[j]) > abs(excursion.value):
                excursion.value = float(values[j])

    def _append_to_log(self, excursion: LimitExcursion) -> None:
        if self._log is None:
            return
        program = " ".join(sys.argv)[:300]  # which simulator: the log is shared by every process of a test session
        line = json.dumps({"pid": os.getpid(), "program": program, **asdict(excursion),
                           "message": excursion.describe()})
        with open(self._log, "a", encoding="utf-8") as f:  # one short write: lines of processes do not mix
            f.write(line + "\n")
