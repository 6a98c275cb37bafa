"""A serial chain of revolute joints given by standard DH parameters: what the dynamics need.

Unlike :class:`~youbot_dynamics.arm.description.ArmDescription` (the whole youBot description with drives and
limits) this holds only geometry and gravity, so the same model code serves the youBot and the
seed's 1-link and 2-link examples. ``theta = theta_offset + direction * q`` as in :mod:`..arm.description`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription

__all__ = ["DHChain"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class DHChain:
    a: Array
    alpha: Array
    d: Array
    theta_offset: Array
    direction: Array
    gravity: Array  # gravity acceleration in the base frame [m/s^2], e.g. [0, 0, -9.81]
    name: str = "chain"

    @classmethod
    def create(cls, a: Sequence[float], alpha: Sequence[float], d: Sequence[float],
               theta_offset: Sequence[float] | None = None, direction: Sequence[float] | None = None,
               gravity: Sequence[float] = (0.0, 0.0, -9.81), name: str = "chain") -> "DHChain":
        """A chain from DH lists (offsets default 0, directions default +1)."""
        a_ = np.asarray(a, dtype=float)
        n = a_.size
        arrays = [a_, np.asarray(alpha, dtype=float), np.asarray(d, dtype=float),
                  np.zeros(n) if theta_offset is None else np.asarray(theta_offset, dtype=float),
                  np.ones(n) if direction is None else np.asarray(direction, dtype=float)]
        if any(v.shape != (n,) for v in arrays):
            raise ValueError("a, alpha, d, theta_offset and direction must all have one value per joint")
        if not np.all(np.isin(arrays[4], (-1.0, 1.0))):
            raise ValueError("direction values must be +1 or -1")
        g = np.asarray(gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError("gravity must be a finite 3-vector")
        return cls(*arrays, gravity=g, name=name)

    @classmethod
    def from_arm(cls, arm: ArmDescription) -> "DHChain":
        """The chain of an arm description, gravity ``[0, 0, -g]`` in the base frame."""
        return cls(arm.dh_a, arm.dh_alpha, arm.dh_d, arm.theta_offset, arm.direction,
                   np.array([0.0, 0.0, -arm.gravity]), name=arm.name)

    @property
    def n_joints(self) -> int:
        return int(self.a.size)

    def theta(self, q: Any) -> Array:
        return self.theta_offset + self.direction * np.asarray(q, dtype=float)
