"""The identification node's joint controller for ``command_interface: effort`` (no ROS).

The experiment runs on a robot whose model is what it is about to identify: the feedforward of the
nominal model is wrong by the robot's own centres of mass, rotor inertias and friction (issue 31:
on a foreign robot, PD + nominal feedforward tracked joint 4 to 0.10 rad and aborted). Integral
action removes what the feedforward gets wrong slowly (gravity of moved centres of mass, friction
offsets)::

    tau = tau_PD+FF + clip(Ki z, -z_max, z_max),    z = integral of (q_ref - q) dt,

``tau_PD+FF`` the node's PD with model feedforward
(:class:`~youbot_dynamics.control.laws.PDFeedforward`), the sum saturated to its torque limit. The
integral is clamped (anti-windup): ``Ki z`` stays within ``z_max`` per joint, and it does not grow
while the output saturates in the error's direction. Time steps come from the node's clock ``now``
[s]; a step longer than :data:`MAX_STEP` (a stall) counts as :data:`MAX_STEP`, a step backwards as 0.

Integral action cannot follow what changes with the motion (friction reversing with the velocity,
inertias unlike the model's): on the foreign robot the experiment completed, but at 53 mrad of
tracking error against the abort at 100. Hence the **pilot pass** (``effort_pilot_slowdown`` s > 0): the
node first drives the excitation ``s`` times slower (:func:`slowed`: ``q(t / s)``, velocities / s,
accelerations / s^2: the nominal feedforward's errors shrink), identifies a model from that
recording (:func:`pilot_model`, the node's method: consistent by default, 10-40 s while the arm
holds still), and drives the experiment with that model as the feedforward (measured: 9 mrad). A
pilot model that fails the controllers' consistency check is not used (the nominal feedforward
stays, and the log says why).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...control.laws import PDFeedforward
from ...dynamics.model import DynamicModel
from ..estimation.pipeline import identify, periodic_cut
from ..estimation.processing import ProcessingOptions
from ..excitation.trajectories import FourierTrajectory, Trajectory
from ..io.dataset import Dataset

__all__ = ["EffortLoop", "MAX_STEP", "slowed", "pilot_model"]

Array = NDArray[np.float64]
MAX_STEP = 0.05  # [s] longest time step the integral takes (a stalled node must not wind it up)


class EffortLoop:
    """PD + model feedforward + clamped integral action (module docstring). Single-threaded."""

    def __init__(self, base: PDFeedforward, ki: Any, integral_limit: Any) -> None:
        n = base.kp.size
        self.base = base
        self.ki, self.integral_limit = (np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()
                                        for v in (ki, integral_limit))
        if np.any(self.ki < 0) or np.any(self.integral_limit < 0):
            raise ValueError("effort_ki and effort_integral_limit must be >= 0")
        self.integral = np.zeros(n)  # Ki z [N m]
        self._last: float | None = None

    def use_model(self, model: DynamicModel) -> None:
        """Feed forward ``model`` from now on (the pilot pass's)."""
        self.base.model = model

    def reset(self) -> None:
        """Forget the integral (a new experiment)."""
        self.integral[:] = 0.0
        self._last = None

    def torque(self, reference: tuple[Array, Array, Array], q: Array, dq: Array, now: float) -> Array:
        """The torque [N m] at node time ``now`` [s] for the reference ``(q, q', q'')`` and the state ``q, q'``."""
        dt = 0.0 if self._last is None else min(max(now - self._last, 0.0), MAX_STEP)
        self._last = now
        tau = self.base.torque(reference, q, dq)
        error = reference[0] - q
        # anti-windup: no growth into a saturated output
        free = ~((np.abs(tau) >= self.base.limit) & (np.sign(tau) == np.sign(error)))
        self.integral += np.where(free, self.ki * error * dt, 0.0)
        np.clip(self.integral, -self.integral_limit, self.integral_limit, out=self.integral)
        return np.clip(tau + self.integral, -self.base.limit, self.base.limit)


def slowed(excitation: Trajectory, factor: float) -> FourierTrajectory:
    """The Fourier ``excitation`` ``factor`` (> 1) times slower: ``q_s(t) = q(t / factor)`` (period x
    factor, coefficients ``a, b`` / factor); ``ValueError`` for another kind of trajectory."""
    if not isinstance(excitation, FourierTrajectory):
        raise ValueError(f"the pilot pass slows a Fourier excitation, not a {excitation.kind} trajectory "
                         f"(effort_pilot_slowdown: 0.0 turns it off)")
    if not factor >= 1.0:
        raise ValueError(f"effort_pilot_slowdown must be >= 1 (or 0: no pilot pass), got {factor:g}")
    return FourierTrajectory(excitation.period * factor, excitation.offset, excitation.a / factor,
                             excitation.b / factor)


def pilot_model(data: Dataset, segments: dict[str, Any], arm: ArmDescription, structure: str = "full",
                method: str = "consistent", options: ProcessingOptions = ProcessingOptions()
                ) -> tuple[DynamicModel | None, str]:
    """The feedforward model of the pilot pass (module docstring) from its recording (``segments``
    of its session: one period), or ``None`` when it fails the consistency check; and a line for the log."""
    cut = periodic_cut(data, segments["start"], segments["period"], 1, "pilot pass")
    run = identify([cut], [], arm, method=method, structure=structure, options=options)
    report = run.consistency  # the pipeline's check of run.model for this arm
    fit = f"fits its own data to {100 * run.identified.overall:.3g}%"
    if not report.ok:
        return None, (f"pilot model not used ({fit}, but physically inconsistent: {'; '.join(report.problems)}): "
                      f"the nominal feedforward stays")
    return run.model, f"pilot model {fit}: it is the feedforward from now on"
