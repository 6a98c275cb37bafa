"""Path and goal tolerances of a followed trajectory, judged cycle by cycle (no ROS).

The semantics of ``control_msgs/action/FollowJointTrajectory`` (as ros2_controllers'
joint_trajectory_controller applies them), for the joints of one arm:

* a tolerance per joint and quantity (position [rad], velocity [rad/s]): ``> 0`` the bound,
  ``0`` the server's default, ``-1`` not checked (:func:`resolve_tolerances`; any other negative
  value or a non-finite one is refused). Acceleration tolerances are accepted and never checked: the
  arm's acceleration is not measured (doc/control.md);
* **path**: until the trajectory's end, every joint within its path tolerance of the reference,
  ``|q - q_d| <= position``, ``|q' - q'_d| <= velocity``; the first violation ends the goal
  (``PATH_TOLERANCE_VIOLATED``);
* **goal**: from the trajectory's end, every joint within its goal tolerance of the last point (at
  rest: ``|q - q_end| <= position``, ``|q'| <= velocity``) ends it successfully; still outside
  ``goal_time`` seconds after the end, it ends with ``GOAL_TOLERANCE_VIOLATED``.

The defaults are those of a goal the controllers report as reached (:data:`~.trajectory.GOAL_TOLERANCE`,
:data:`~.trajectory.GOAL_REST_SPEED` within :data:`~.trajectory.GOAL_SETTLE_TIME`); no path tolerance
by default, as joint_trajectory_controller.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from .trajectory import GOAL_REST_SPEED, GOAL_SETTLE_TIME, GOAL_TOLERANCE

__all__ = ["ToleranceError", "JointTolerances", "Outcome", "TrajectoryTolerances", "resolve_tolerances",
           "resolve_goal_time", "UNCHECKED", "DEFAULT_PATH", "DEFAULT_GOAL", "FEEDBACK_PERIOD"]

Array = NDArray[np.float64]

UNCHECKED = -1.0  # a tolerance of -1: the quantity is not checked
FEEDBACK_PERIOD = 0.05  # [s] between two feedback messages of a followed trajectory (20 Hz; the action asks >= 10)


class ToleranceError(ValueError):
    """A tolerance that cannot be honoured (unknown joint, negative other than -1, not finite)."""


@dataclass(frozen=True)
class JointTolerances:
    """Per joint (n,) bounds on ``|q - q_d|`` [rad] and ``|q' - q'_d|`` [rad/s]; ``inf``: not checked."""

    position: Array
    velocity: Array

    @classmethod
    def uniform(cls, n: int, position: float = math.inf, velocity: float = math.inf) -> "JointTolerances":
        return cls(np.full(n, float(position)), np.full(n, float(velocity)))


DEFAULT_PATH = (math.inf, math.inf)  # (position, velocity): not checked
DEFAULT_GOAL = (GOAL_TOLERANCE, GOAL_REST_SPEED)


def resolve_tolerances(names: Sequence[str], given: Sequence[tuple[str, float, float]],
                       default: tuple[float, float], what: str) -> JointTolerances:
    """The tolerances of the joints ``names`` from ``given`` ``(joint, position, velocity)`` entries
    (module docstring: ``0`` the ``default`` (position, velocity), ``-1`` unchecked); a joint not
    given keeps the default. :class:`ToleranceError` for an unknown or repeated joint or a bad value."""
    index = {name: j for j, name in enumerate(names)}
    bounds = np.array([default] * len(names), dtype=float)
    seen: set[str] = set()
    for joint, *values in given:
        if joint not in index:
            raise ToleranceError(f"{what} tolerance of unknown joint '{joint}' (joints: {', '.join(names)})")
        if joint in seen:
            raise ToleranceError(f"{what} tolerance of joint '{joint}' given twice")
        seen.add(joint)
        for k, (quantity, value) in enumerate(zip(("position", "velocity"), values)):
            if not math.isfinite(value) or (value < 0.0 and value != UNCHECKED):
                raise ToleranceError(f"{what} {quantity} tolerance of joint '{joint}': expected > 0, 0 (the "
                                     f"default) or -1 (not checked), got {value!r}")
            if value == UNCHECKED:
                bounds[index[joint], k] = math.inf
            elif value > 0.0:
                bounds[index[joint], k] = value
    return JointTolerances(bounds[:, 0].copy(), bounds[:, 1].copy())


def resolve_goal_time(seconds: float) -> float:
    """``goal_time_tolerance`` [s]: ``<= 0`` :data:`~.trajectory.GOAL_SETTLE_TIME`; :class:`ToleranceError`
    if not finite."""
    if not math.isfinite(seconds):
        raise ToleranceError(f"goal_time_tolerance: expected a finite number of seconds, got {seconds!r}")
    return seconds if seconds > 0.0 else GOAL_SETTLE_TIME


class Outcome(Enum):
    """How a followed trajectory ended (the action's error codes)."""

    SUCCEEDED = "succeeded"
    PATH_TOLERANCE_VIOLATED = "path tolerance violated"
    GOAL_TOLERANCE_VIOLATED = "goal tolerance violated"


@dataclass(frozen=True)
class TrajectoryTolerances:
    """The tolerances of one followed trajectory (module docstring), from ``start`` to ``end`` [s] (the
    clock of the reference) at ``final`` (n,) [rad]; ``names`` of the joints for the messages."""

    path: JointTolerances
    goal: JointTolerances
    goal_time: float  # [s] after ``end``
    start: float
    end: float
    final: Array
    names: tuple[str, ...]

    @classmethod
    def of(cls, names: Sequence[str], start: float, end: float, final: Array, path: JointTolerances | None = None,
           goal: JointTolerances | None = None, goal_time: float = 0.0) -> "TrajectoryTolerances":
        """``goal_time`` as :func:`resolve_goal_time` takes it; tolerances not given: the defaults."""
        n = len(names)
        return cls(path if path is not None else JointTolerances.uniform(n, *DEFAULT_PATH),
                   goal if goal is not None else JointTolerances.uniform(n, *DEFAULT_GOAL),
                   resolve_goal_time(goal_time), float(start), float(end), np.array(final, dtype=float), tuple(names))

    def check(self, t: float, q: Array, dq: Array, q_d: Array, dq_d: Array) -> tuple[Outcome, str] | None:
        """At ``t`` [s] with the measured ``q, q'`` and the reference ``q_d, q'_d``: the outcome and a
        one-line reason once the trajectory ends, else None (it goes on)."""
        if t < self.end:
            violation = _violation(q - q_d, dq - dq_d, self.path)
            if violation is None:
                return None
            return Outcome.PATH_TOLERANCE_VIOLATED, (f"path tolerance violated {t - self.start:.3f} s into the "
                                                     f"trajectory: {self._describe(violation, 'reference')}")
        violation = _violation(q - self.final, dq, self.goal)
        late = t - self.end
        if violation is None:
            return Outcome.SUCCEEDED, f"goal reached {late:.3f} s after the trajectory's end"
        if late <= self.goal_time:
            return None
        return Outcome.GOAL_TOLERANCE_VIOLATED, (f"goal tolerance violated {late:.3f} s after the trajectory's end "
                                                 f"(goal_time_tolerance {self.goal_time:g} s): "
                                                 f"{self._describe(violation, 'goal')}")

    def _describe(self, violation: tuple[int, str, float, float], against: str) -> str:
        j, quantity, error, bound = violation
        unit = "rad" if quantity == "position" else "rad/s"
        return f"{self.names[j]} {quantity} {error:+.4g} {unit} from the {against} (tolerance {bound:g} {unit})"


def _violation(position_error: Array, velocity_error: Array,
               bounds: JointTolerances) -> tuple[int, str, float, float] | None:
    """The joint, quantity, error and bound of the largest violation relative to its bound, or None."""
    worst: tuple[int, str, float, float] | None = None
    ratio = 1.0
    for quantity, error, bound in (("position", position_error, bounds.position),
                                   ("velocity", velocity_error, bounds.velocity)):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(np.isfinite(bound), np.abs(error) / bound, 0.0)
        j = int(np.argmax(ratios))
        if ratios[j] > ratio:
            worst, ratio = (j, quantity, float(error[j]), float(bound[j])), float(ratios[j])
    return worst
