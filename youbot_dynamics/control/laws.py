"""The joint-torque control laws of seed 002, section 4, on a dynamic model (identified or nominal).

**Regulation, PD + gravity** (4.1), :class:`PDGravityController`::

    tau = Kp (q_d - q) - Kd q' + G(q) + t_f(q')

``Kp, Kd`` diagonal positive [N m/rad, N m s/rad]; with an exact ``G`` and ``t_f`` the goal is
globally asymptotically stable (Lyapunov function ``1/2 q'^T M q' + 1/2 e^T Kp e``, (4.6)-(4.7),
using the skew symmetry of ``M' - 2C``). Friction is compensated at the *measured* velocity (the
desired one is zero).

**Tracking, computed torque** (4.8), :class:`ComputedTorqueController`::

    tau = M(q) (q''_d + Kd (q'_d - q') + Kp (q_d - q)) + C(q, q') q' + G(q) + t_f(q'_d)

``Kp, Kd`` diagonal [1/s^2, 1/s]; with an exact model the error ``e = q_d - q`` obeys
``e'' + Kd e' + Kp e = 0`` (4.11). Friction is compensated at the *desired* velocity: a noise-free
feedforward whose sign changes where the reference reverses.

**Baselines** (what the model buys, measured by ``make demo``): ``gravity_compensation=False``
drops ``G(q)`` from (4.1) (with ``friction_compensation=False`` too: PD only);
``model_feedforward=False`` replaces (4.8) by a PD on the
same error dynamics scaled by the model's constant reference inertia ``m`` (diagonal), without
``M(q)``, ``C``, ``G``, ``q''_d`` or friction (``friction_compensation`` is then ignored)::

    tau = m (Kd (q'_d - q') + Kp (q_d - q))

``t_f`` uses the smoothed sign of :mod:`.terms` (``tanh(v / eps)``); ``friction_compensation=False``
drops the whole ``t_f`` term (``fv``, ``fc`` and ``f0``).

**Default gains** (:func:`~.terms.bandwidth_gains`, damping ratio 1): computed torque
``omega = 40 rad/s`` on every joint (``Kp = 1600 / s^2``, ``Kd = 80 / s``; at 1 kHz
``omega dt = 0.04``, far from the sampling limit, and fast enough that the residual model and
friction errors give sub-milliradian tracking). PD + gravity: ``omega = 60 rad/s`` on the
reference inertia ``m`` of the model (:func:`~.terms.reference_inertia`), raised where needed so
that static friction can hold a joint at most ``static_accuracy = 0.5 mrad`` from the goal
(equilibria of (4.1) with stiction: ``|Kp e| <= fc``), i.e. ``Kp = max(m omega^2, fc / 0.5 mrad)``,
``Kd = 2 sqrt(Kp m)``. With the youBot's true (identified) model ``Kp = [2000, 2000, 1200, 500,
200] N m/rad`` (the wrist joints reach 110-150 rad/s, still ``omega dt < 0.15`` at 1 kHz); the
nominal model has no friction and no rotor inertia, hence much lower gains.

Each cycle a node calls ``torque(t, q, dq)`` with the time ``t`` [s] of its clock and the measured
joint state; the controllers keep their reference (goal or trajectory). Both are single-threaded
(the model's buffers). Cost per cycle: see ``test/test_control.py`` (median well below 60 us).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ..arm import ArmDescription
from ..dynamics.consistency import check_model
from ..dynamics.model import DynamicModel
from .terms import FRICTION_EPS, ModelTerms, bandwidth_gains, per_joint, reference_inertia
from .trajectory import JointTrajectory, check_goal

__all__ = ["PD_BANDWIDTH", "CT_BANDWIDTH", "STATIC_ACCURACY", "PDGravityController", "ComputedTorqueController"]

Array = NDArray[np.float64]

PD_BANDWIDTH = 60.0  # [rad/s] default natural frequency of PD + gravity on the reference inertia
CT_BANDWIDTH = 40.0  # [rad/s] default natural frequency of the computed-torque error dynamics
STATIC_ACCURACY = 5e-4  # [rad] default bound fc / Kp of the PD + gravity error that static friction can hold


class _Controller:
    """Model terms, gains and friction switch shared by both laws."""

    def __init__(self, model: DynamicModel, arm: ArmDescription, kp: Any, kd: Any,
                 design: Callable[[ModelTerms], tuple[Array, Array]], friction_compensation: bool,
                 friction_eps: float) -> None:
        """``design(terms)`` gives the default ``(Kp, Kd)`` for the gains not given."""
        check_model(model, arm)  # an impossible model (or another arm's) is refused: ModelConsistencyError
        self.arm = arm
        self.terms = ModelTerms(model, friction_eps)
        if kp is None or kd is None:
            kp_design, kd_design = design(self.terms)
            kp, kd = kp_design if kp is None else kp, kd_design if kd is None else kd
        self.kp = per_joint(kp, arm.n_joints, "kp")
        self.kd = per_joint(kd, arm.n_joints, "kd")
        self.friction_compensation = bool(friction_compensation)

    def gravity(self, q: Array) -> Array:
        """``G(q)`` of the controller's model (e.g. for the safety guard's hold)."""
        return self.terms.gravity(q)


class PDGravityController(_Controller):
    """Regulation to a goal position by (4.1); see the module docstring.

    ``kp``, ``kd``: per-joint gains [N m/rad, N m s/rad] (scalar or n values); by default, on the
    model's reference inertia ``m``, ``Kp = max(m bandwidth^2, fc / static_accuracy)`` and
    ``Kd = 2 damping sqrt(Kp m)`` (module docstring). Set the goal with :meth:`set_goal` before the
    first :meth:`torque`.
    """

    def __init__(self, model: DynamicModel, arm: ArmDescription, *, kp: Any = None, kd: Any = None,
                 bandwidth: Any = PD_BANDWIDTH, damping: Any = 1.0, static_accuracy: float = STATIC_ACCURACY,
                 friction_compensation: bool = True, friction_eps: float = FRICTION_EPS,
                 gravity_compensation: bool = True) -> None:
        if not static_accuracy > 0.0:
            raise ValueError(f"static_accuracy must be positive, got {static_accuracy}")

        def design(terms: ModelTerms) -> tuple[Array, Array]:
            inertia = reference_inertia(model, arm)
            stiffness = np.maximum(inertia * np.square(bandwidth), terms.coulomb / static_accuracy)
            return bandwidth_gains(np.sqrt(stiffness / inertia), damping, inertia)

        super().__init__(model, arm, kp, kd, design, friction_compensation, friction_eps)
        self.gravity_compensation = bool(gravity_compensation)
        self.goal: Array | None = None

    def set_goal(self, q_goal: Any) -> None:
        """Regulate to ``q_goal`` (n,) [rad]; a goal outside the limits or with NaN raises
        :class:`~.trajectory.TrajectoryError` (the previous goal stays)."""
        self.goal = check_goal(self.arm, q_goal)

    def torque(self, t: float, q: Array, dq: Array) -> Array:
        """``tau`` (n,) [N m] of (4.1) at the measured ``q``, ``dq`` (``t`` is not used: a fixed goal)."""
        if self.goal is None:
            raise RuntimeError("PDGravityController: no goal set")
        tau = self.kp * (self.goal - q) - self.kd * dq
        if self.gravity_compensation:
            tau = tau + self.terms.gravity(q)
        return tau + self.terms.friction(dq) if self.friction_compensation else tau


class ComputedTorqueController(_Controller):
    """Tracking of a :class:`~.trajectory.JointTrajectory` by (4.8); see the module docstring.

    ``kp``, ``kd``: per-joint gains of the error dynamics [1/s^2, 1/s]; by default
    :func:`~.terms.bandwidth_gains` of ``bandwidth`` [rad/s] and ``damping``. Give a reference with
    :meth:`follow` (or :meth:`hold`) before the first :meth:`torque`.
    """

    def __init__(self, model: DynamicModel, arm: ArmDescription, *, kp: Any = None, kd: Any = None,
                 bandwidth: Any = CT_BANDWIDTH, damping: Any = 1.0, friction_compensation: bool = True,
                 friction_eps: float = FRICTION_EPS, model_feedforward: bool = True) -> None:
        super().__init__(model, arm, kp, kd, lambda terms: bandwidth_gains(bandwidth, damping), friction_compensation,
                         friction_eps)
        self.inertia = None if model_feedforward else reference_inertia(model, arm)
        self.trajectory: JointTrajectory | None = None
        self.start_time = 0.0

    def follow(self, trajectory: JointTrajectory, start_time: float) -> None:
        """Follow ``trajectory`` from ``start_time`` [s, the clock of :meth:`torque`]: its times are
        from that start, before it the start state is held, after its end the last point. A
        trajectory beyond the position, velocity or acceleration limits raises
        :class:`~.trajectory.TrajectoryError` (the previous one stays). To replace a running
        trajectory smoothly, start the new one at :meth:`reference` of the switching time."""
        trajectory.check_limits(self.arm)
        self.trajectory, self.start_time = trajectory, float(start_time)

    def hold(self, q: Any) -> None:
        """Hold the position ``q`` (validated like a goal)."""
        self.follow(JointTrajectory.hold(check_goal(self.arm, q)), 0.0)

    def reference(self, t: float) -> tuple[Array, Array, Array]:
        """Desired ``(q_d, q'_d, q''_d)`` at time ``t``."""
        if self.trajectory is None:
            raise RuntimeError("ComputedTorqueController: no trajectory to follow")
        return self.trajectory.sample(t - self.start_time)

    def torque(self, t: float, q: Array, dq: Array) -> Array:
        """``tau`` (n,) [N m] of (4.8) at time ``t`` and the measured ``q``, ``dq``."""
        q_d, dq_d, ddq_d = self.reference(t)
        if self.inertia is not None:  # the PD baseline
            return self.inertia * (self.kd * (dq_d - dq) + self.kp * (q_d - q))
        m, c, g = self.terms.model.dynamics_terms(q, dq)
        tau = m @ (ddq_d + self.kd * (dq_d - dq) + self.kp * (q_d - q)) + c + g
        return tau + self.terms.friction(dq_d) if self.friction_compensation else tau
