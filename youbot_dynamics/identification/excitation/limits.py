"""Motion limits of an excitation experiment, required margins, and the margins a trajectory achieves.

With the arm's limits ``q_min, q_max, v_max, a_max`` (``config/youbot_arm.yaml``) and the required
margins ``m`` (:class:`Margins`), a trajectory is feasible when at every sample

    q_min + m_q <= q(t) <= q_max - m_q,   |q'(t)| <= (1 - m_v) v_max,   |q''(t)| <= (1 - m_a) a_max,
    clearance(q(t)) >= m_c                 (:mod:`.clearance`).

The achieved margins (:class:`AchievedMargins`) are measured in the same units: the smallest
distance to a position limit [rad], the unused fraction of the velocity and acceleration limits
(``1 - max |q'| / v_max``) per joint, and the smallest clearance [m].
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from .clearance import YOUBOT_OBSTACLES, Obstacles, clearance
from .trajectories import Trajectory

__all__ = ["ExcitationError", "Margins", "MotionLimits", "AchievedMargins", "achieved_margins",
           "verification_times", "check_duration", "MAX_DURATION"]

Array = NDArray[np.float64]
VERIFY_SAMPLES = 2000  # fewest samples margins are verified on
VERIFY_RATE = 100.0  # [1/s] verification samples per second of a long trajectory
# [s] Longest excitation trajectory: its verification (VERIFY_RATE samples per second, the
# clearance of each) takes about 1 s and 0.2 GB at this length (3600 s: 7 s, 0.8 GB), growing in
# proportion; `excite --duration 1e6` once took 24 GB. Designs, trajectory files and the
# identification node's experiments (one period) are refused beyond it.
MAX_DURATION = 600.0


class ExcitationError(RuntimeError):
    """No trajectory respecting the limits, margins and clearance was found."""


@dataclass(frozen=True)
class Margins:
    """Required margins: position [rad] from each limit, unused fractions of the velocity and
    acceleration limits, clearance [m] of the check points from the obstacles."""

    position: float = 0.1
    velocity: float = 0.1
    acceleration: float = 0.1
    clearance: float = 0.05

    def __post_init__(self) -> None:
        for name in ("velocity", "acceleration"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} margin must be a fraction in [0, 1), got {value}")
        for name in ("position", "clearance"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"{name} margin must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class MotionLimits:
    """The arm's joint limits, the obstacles and the required margins: what a design must respect."""

    arm: ArmDescription
    margins: Margins = field(default_factory=Margins)
    obstacles: Obstacles = YOUBOT_OBSTACLES

    def __post_init__(self) -> None:
        if np.any(self.position_lower >= self.position_upper):
            raise ValueError(f"position margin {self.margins.position} rad leaves no range on some joint")

    @property
    def position_lower(self) -> Array:
        return self.arm.position_min + self.margins.position

    @property
    def position_upper(self) -> Array:
        return self.arm.position_max - self.margins.position

    @property
    def velocity_bound(self) -> Array:
        return (1.0 - self.margins.velocity) * self.arm.velocity_max

    @property
    def acceleration_bound(self) -> Array:
        return (1.0 - self.margins.acceleration) * self.arm.acceleration_max

    def configuration_ok(self, q: Any) -> Array:
        """True where configurations ``q`` (..., n) respect the position bounds and the clearance."""
        q = self.arm.check_q(q)
        inside = np.all((q >= self.position_lower) & (q <= self.position_upper), axis=-1)
        return inside & (clearance(self.arm, q, self.obstacles) >= self.margins.clearance)

    def as_dict(self) -> dict[str, Any]:
        """The limits used, for reports and trajectory files."""
        return {
            "position_min": self.arm.position_min.tolist(),
            "position_max": self.arm.position_max.tolist(),
            "velocity_max": self.arm.velocity_max.tolist(),
            "acceleration_max": self.arm.acceleration_max.tolist(),
            "margins": asdict(self.margins),
            "obstacles": self.obstacles.as_dict(),
        }


@dataclass(frozen=True)
class AchievedMargins:
    """Margins a trajectory keeps (module docstring); per joint except ``clearance``."""

    position: Array  # [rad]
    velocity: Array  # fraction of v_max unused
    acceleration: Array  # fraction of a_max unused
    clearance: float  # [m]

    def violations(self, required: Margins, tolerance: float = 1e-9) -> list[str]:
        """One line per margin below ``required`` (empty: feasible)."""
        out = []
        for name in ("position", "velocity", "acceleration"):
            values, need = getattr(self, name), getattr(required, name)
            for j in np.flatnonzero(values < need - tolerance):
                out.append(f"joint {j + 1}: {name} margin {values[j]:.4g} < required {need:.4g}")
        if self.clearance < required.clearance - tolerance:
            out.append(f"clearance {self.clearance:.4g} m < required {required.clearance:.4g} m")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"position": self.position.tolist(), "velocity": self.velocity.tolist(),
                "acceleration": self.acceleration.tolist(), "clearance": float(self.clearance)}


def check_duration(duration: float, what: str = "trajectory") -> None:
    """``ValueError`` unless ``duration`` [s] is finite, > 0 and at most :data:`MAX_DURATION`."""
    if not (math.isfinite(duration) and duration > 0):
        raise ValueError(f"{what} duration must be a positive number of seconds, got {duration}")
    if duration > MAX_DURATION:
        raise ValueError(f"{what} duration {duration:g} s is longer than the maximum {MAX_DURATION:g} s "
                         f"(bounded time and memory of its verification)")


def verification_times(duration: float) -> Array:
    """The times margins are checked at: :data:`VERIFY_RATE` per second over ``[0, duration]``,
    at least :data:`VERIFY_SAMPLES`; ``ValueError`` beyond :data:`MAX_DURATION` (:func:`check_duration`)."""
    check_duration(duration)
    return np.linspace(0.0, duration, max(VERIFY_SAMPLES, math.ceil(VERIFY_RATE * duration) + 1))


def achieved_margins(limits: MotionLimits, trajectory: Trajectory) -> AchievedMargins:
    """Margins ``trajectory`` keeps at the :func:`verification_times` of its duration."""
    arm = limits.arm
    if trajectory.n_joints != arm.n_joints:
        raise ValueError(f"trajectory has {trajectory.n_joints} joints, the arm {arm.n_joints}")
    q, dq, ddq = trajectory.evaluate(verification_times(trajectory.duration))
    return AchievedMargins(
        position=np.minimum(q.min(axis=0) - arm.position_min, arm.position_max - q.max(axis=0)),
        velocity=1.0 - np.abs(dq).max(axis=0) / arm.velocity_max,
        acceleration=1.0 - np.abs(ddq).max(axis=0) / arm.acceleration_max,
        clearance=float(clearance(arm, q, limits.obstacles).min()),
    )
