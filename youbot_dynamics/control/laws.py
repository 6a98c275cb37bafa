"""The joint-torque control laws of seed 002, section 4, on a dynamic model (identified or nominal).

**Regulation, PD + gravity** (4.1), :class:`PDGravityController`::

    tau = Kp (q_d(t) - q) + Kd (q'_d(t) - q') + G(q) + t_f(q')

``Kp, Kd`` diagonal positive [N m/rad, N m s/rad]; with an exact ``G`` and ``t_f`` a fixed goal is
globally asymptotically stable (Lyapunov function ``1/2 q'^T M q' + 1/2 e^T Kp e``, (4.6)-(4.7),
using the skew symmetry of ``M' - 2C``). Friction is compensated at the *measured* velocity.

**Shaped goals.** A step to a far goal under (4.1) would accelerate at saturated torque far beyond
the velocity limit (a 2.3 rad step: 9.6 rad/s against 1.57). So a new goal (:meth:`PDGravityController.set_goal`)
is not applied as a step: the reference ``q_d(t)`` moves from its current value (position,
velocity, acceleration: continuous, also when a goal replaces a moving one) to the goal along one
quintic segment (:class:`GoalProfile`), synchronized (all joints arrive together),
whose duration ``T`` is the shortest for which every joint stays within
``GOAL_VELOCITY_FRACTION = 0.7`` of ``velocity_max`` and within ``acceleration_max`` (from rest:
``T = max_j max(1.875 |D_j| / (0.7 v_max_j), sqrt(5.774 |D_j| / a_max_j))``, the peak velocity and
acceleration of ``s(u) = 10 u^3 - 15 u^4 + 6 u^5``). The 30 % margin leaves room for the tracking
error of the PD below the safety guard's velocity guard (which starts at 90 %). At the end the
reference rests at the goal and (4.1) regulates to it as before.

**Tracking, computed torque** (4.8), :class:`ComputedTorqueController`::

    tau = M(q) (q''_d + Kd (q'_d - q') + Kp (q_d - q)) + C(q, q') q' + G(q) + t_f(q'_d)

``Kp, Kd`` diagonal [1/s^2, 1/s]; with an exact model the error ``e = q_d - q`` obeys
``e'' + Kd e' + Kp e = 0`` (4.11). Friction is compensated at the *desired* velocity: a noise-free
feedforward whose sign changes where the reference reverses.

**Integral action** (beyond the seed): a model is never exact, and what it misses acts on the error
dynamics as a slowly varying disturbance (on the harder simulated robot, whose Stribeck, asymmetric
and load-dependent friction no fitted structure holds, the wrist's error was a bias of 1-2 mrad
while moving and 2.3 mrad held by static friction at the end, around 0.16 mrad of faster
variation). So ``q''_d + Kd e' + Kp e`` gets ``Ki integral(e)`` with ``Ki = integral_rate Kp``
(default :data:`CT_INTEGRAL_RATE`, 10/s: a third pole near ``-integral_rate``, the double pole at
the bandwidth nearly unchanged: ``s^3 + Kd s^2 + Kp s + Ki`` with 80, 1600, 16000 is stable with a
wide margin, ``Kd Kp > Ki``). Anti-windup: the integral's torque ``M_jj Ki_j integral(e_j)`` is at
most ``max(fc_j, B_j)`` (:attr:`~ComputedTorqueController.integral_limit`), the model's Coulomb level
or the breakaway allowance ``B_j`` (half the torque limit, :func:`~.terms.breakaway_allowance`) if
larger: what it is for is friction the model misses, and a model whose data left ``fc_j`` at zero
(the nominal model has none) misses all of it (before, capped at ``fc_j``, such a joint got no integral
action; with the safety guard's stall bound it was held in static friction, issue 46); it restarts at
zero on :meth:`~ComputedTorqueController.hold` (every enable) and with a new model. Offline on the demo's
stroke and identified model: 0.37 / 0.42 / 0.52 / 1.27 / 0.64 mrad RMS without it, 0.23 / 0.25 /
0.37 / 0.65 / 0.29 with it. ``integral_rate=0`` is (4.8).

**Hand-guiding, float** (:class:`FloatController`): gravity and friction compensation with light
damping, no position reference::

    tau = G(q) + t_f(q, q') - D q'

so a person can move the arm by hand: the arm weighs nothing, its friction is taken away above a
few ``eps`` of speed, and ``D`` (diagonal, default ``FLOAT_DAMPING`` [1/s] times the reference
inertia ``m``: a pushed joint coasts down with time constant about ``1 / FLOAT_DAMPING``) brings it to
rest. At rest only static friction would hold it against the model's error in ``G + f0``, and a
joint whose friction creeps (the simulator's soft dry friction does below about 0.01 rad/s; a worn
gearbox too) would drift. So the law adds a virtual stiction: a joint slower than
``rest_velocity`` is held at its anchor ``a_j`` (its position when it came to rest) by
``-clip(S_j (q_j - a_j) / FLOAT_REST_DEFLECTION, -S_j, S_j)``, ``S_j = FLOAT_REST_FRACTION x fc_j`` of
the model (at least ``FLOAT_REST_MIN``, at most the bound below); while it moves faster the anchor
follows it. A hand breaks it away with ``S_j`` more than the joint's own friction, so ``S_j`` is at
most ``FLOAT_REST_MAX_FRACTION`` (a quarter) of the joint's rated torque ``min(effort_max,
drive_torque_limit)`` (4.25, 4.25, 2, 0.675, 0.25 N m on the youBot); a larger ``rest_torque``
(100 N m: a spring no hand moves, saturating the drives) is refused.

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
nominal model (the description's assumed rotor inertia, no friction) gives ``Kp = [1806, 1734, 597, 82, 64]``
from the bandwidth alone: goals within 1 mrad in the simulator (``test_control.py``).

Each cycle a node calls ``torque(t, q, dq)`` with the time ``t`` [s] of its clock and the measured
joint state; the controllers keep their reference (goal or trajectory). Both are single-threaded
(the model's buffers). Computed torque's cycle is one compiled call after the model's terms
(:func:`computed_torque_kernel`); its cost inside the safety guard: ``make bench`` (doc/performance.md).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numba
import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from ..dynamics.consistency import check_model
from ..dynamics.friction import smooth_friction_torque
from ..dynamics.model import DynamicModel
from .law_config import parameter, schema_entries
from .terms import FRICTION_EPS, ModelTerms, bandwidth_gains, breakaway_allowance, per_joint, reference_inertia
from .trajectory import JointTrajectory, TrajectoryError, check_goal, segment_state

__all__ = ["PDFeedforward", "PD_BANDWIDTH", "ModelLaw", "PDGravityConfig", "ComputedTorqueConfig", "FloatConfig",
           "GainsConfig", "FrictionConfig", "CT_BANDWIDTH", "CT_INTEGRAL_RATE", "FLOAT_DAMPING", "FloatController",
           "FLOAT_REST_MAX_FRACTION",
           "STATIC_ACCURACY", "GOAL_VELOCITY_FRACTION", "PDGravityController", "ComputedTorqueController",
           "GoalProfile", "computed_torque_kernel", "goal_profile", "speed_limited"]

Array = NDArray[np.float64]

PD_BANDWIDTH = 60.0  # [rad/s] default natural frequency of PD + gravity on the reference inertia
CT_BANDWIDTH = 40.0  # [rad/s] default natural frequency of the computed-torque error dynamics
CT_INTEGRAL_RATE = 10.0  # [1/s] default Ki / Kp of computed torque's integral action (0: none)
STATIC_ACCURACY = 5e-4  # [rad] default bound fc / Kp of the PD + gravity error that static friction can hold
FLOAT_DAMPING = 5.0  # [1/s] default damping of the float law per unit of reference inertia
FLOAT_REST_VELOCITY = 0.02  # [rad/s] a joint slower than this is held at its anchor by the float law
FLOAT_REST_FRACTION = 0.5  # the float law's virtual stiction S_j, fraction of the model's Coulomb level fc_j
FLOAT_REST_MIN = 0.05  # [N m] smallest S_j
FLOAT_REST_DEFLECTION = 0.002  # [rad] deflection from the anchor at which S_j is reached
FLOAT_REST_MAX_FRACTION = 0.25  # largest S_j, fraction of the joint's rated torque min(effort_max, drive limit)
GOAL_VELOCITY_FRACTION = 0.7  # peak speed of a shaped PD + gravity goal, fraction of velocity_max
_QUINTIC_PEAK_VELOCITY = 1.875  # max s'(u) of s(u) = 10 u^3 - 15 u^4 + 6 u^5
_QUINTIC_PEAK_ACCELERATION = 10.0 / np.sqrt(3.0)  # max |s''(u)|
_PROFILE_GROWTH = 1.25  # duration factor per attempt when the profile starts in motion
_PROFILE_ATTEMPTS = 40  # 1.25^40 ~ 7500: far beyond any start state inside the limits
_PROFILE_GRID = np.linspace(0.0, 1.0, 129)  # scaled times at which a moving start's profile is checked
_POWERS = np.arange(6)


class GoalProfile:
    """One quintic segment per joint, ``q(tau) = sum_k c_k tau^k`` for ``tau`` in ``[0, T]``, from
    the state ``(q0, v0, a0)`` to the goal ``q1`` at rest (the closed-form coefficients), holding
    ``q1`` after ``T``. Cheap to build and sample (no validation: the caller checks the goal)."""

    def __init__(self, start: tuple[Array, Array, Array], goal: Array, duration: float) -> None:
        q0, v0, a0 = start
        h, T = goal - q0, float(duration)
        self.goal, self.duration = goal, T
        c = np.zeros((6, goal.size))
        c[0], c[1], c[2] = q0, v0, 0.5 * a0
        if T > 0.0:
            c[3] = (20.0 * h - 12.0 * v0 * T - 3.0 * a0 * T**2) / (2.0 * T**3)
            c[4] = (-30.0 * h + 16.0 * v0 * T + 3.0 * a0 * T**2) / (2.0 * T**4)
            c[5] = (12.0 * h - 6.0 * v0 * T - a0 * T**2) / (2.0 * T**5)
        self.coefficients = c
        self.velocity = c[1:] * _POWERS[1:, None]  # (5, n)
        self.acceleration = self.velocity[1:] * _POWERS[1:5, None]  # (4, n)
        self._zero = np.zeros(goal.size)

    def sample(self, tau: float) -> tuple[Array, Array, Array]:
        """``(q, q', q'')`` at ``tau`` [s] from the start (the start state before 0, the goal after the end)."""
        if tau >= self.duration:
            return self.goal, self._zero, self._zero
        powers = max(tau, 0.0) ** _POWERS
        return powers @ self.coefficients, powers[:5] @ self.velocity, powers[:4] @ self.acceleration

    def peaks(self) -> tuple[Array, Array]:
        """Largest ``|q'|`` and ``|q''|`` per joint on a grid of 129 points over the segment."""
        powers = (self.duration * _PROFILE_GRID)[:, None] ** _POWERS
        return (np.abs(powers[:, :5] @ self.velocity).max(axis=0),
                np.abs(powers[:, :4] @ self.acceleration).max(axis=0))


def goal_profile(limits: ArmDescription, start: tuple[Array, Array, Array], goal: Array) -> GoalProfile:
    """The shaped reference of a PD + gravity goal (module docstring): one synchronized quintic
    segment from the state ``start = (q, q', q'')`` to ``goal`` at rest, as short as
    ``limits.velocity_max`` and ``limits.acceleration_max`` allow (pass the arm with its velocity
    limits scaled, :func:`speed_limited`). From rest the duration is the closed form; from a moving
    start it grows by 25 % until the peaks on a fine grid (:meth:`GoalProfile.peaks`) are within
    the limits (a few tries, ~20 us each)."""
    q0, v0, a0 = start
    distance = np.abs(goal - q0)
    duration = float(np.max(np.maximum(_QUINTIC_PEAK_VELOCITY * distance / limits.velocity_max,
                                       np.sqrt(_QUINTIC_PEAK_ACCELERATION * distance / limits.acceleration_max))))
    if not (np.any(v0) or np.any(a0)):
        return GoalProfile(start, goal, duration)
    duration = max(duration, 1e-3)
    for _ in range(_PROFILE_ATTEMPTS):
        profile = GoalProfile(start, goal, duration)
        velocity, acceleration = profile.peaks()
        # the start itself may be at the limit: allow what it has
        if np.all(velocity <= np.maximum(limits.velocity_max, np.abs(v0)) + 1e-9) and \
                np.all(acceleration <= np.maximum(limits.acceleration_max, np.abs(a0)) + 1e-9):
            return profile
        duration *= _PROFILE_GROWTH
    raise TrajectoryError(f"no goal profile within the limits from the moving reference (velocity "
                          f"{np.round(v0, 3).tolist()} rad/s)")


def speed_limited(arm: ArmDescription, fraction: float = GOAL_VELOCITY_FRACTION) -> ArmDescription:
    """``arm`` with ``velocity_max`` scaled by ``fraction`` in ``(0, 1]`` (the limits of shaped goals)."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"goal velocity fraction must be in (0, 1], got {fraction}")
    return dataclasses.replace(arm, velocity_max=fraction * arm.velocity_max)


_PER_JOINT = (0, 1)  # per_joint<>: an array of one value per joint may also be unset (0) or one for all (1)
_KP_BOUNDS = (0.0, {"from": "youbot_dynamics.dynamics.plausibility:KP_MAX"})
_KD_BOUNDS = (0.0, {"from": "youbot_dynamics.dynamics.plausibility:KD_MAX"})


@dataclasses.dataclass(frozen=True)
class GainsConfig:
    """The gains of a law with designed defaults (fields of its :attr:`ModelLaw.Config`)."""

    kp: tuple[float, ...] | None = parameter(
        None, "Proportional gains, one per joint or one for all; unset = designed from bandwidth and damping.",
        "double_array", per_joint=_PER_JOINT, element_bounds=_KP_BOUNDS)
    kd: tuple[float, ...] | None = parameter(
        None, "Derivative gains, one per joint or one for all; unset = designed from bandwidth and damping.",
        "double_array", per_joint=_PER_JOINT, element_bounds=_KD_BOUNDS)
    damping: float = parameter(1.0, "Damping ratio of the designed gains.", "double", bounds=(0.0, 10.0))


@dataclasses.dataclass(frozen=True)
class FrictionConfig:
    """The friction switch of a law (its velocity scale ``friction_eps`` is the node's: the observer uses it too)."""

    friction_compensation: bool = parameter(
        True, "Add the model's friction (viscous, smoothed Coulomb, offset) to the torque.", "bool")


class ModelLaw:
    """Base of the laws on a dynamic model: its terms (``G(q)``, ``M(q)``, friction), the gains
    ``kp``, ``kd`` (zero for a law without gains), :meth:`set_model` for payloads. A law declares
    its parameters as :attr:`Config` (:mod:`.law_config`), is built from one by :meth:`from_config`,
    and names itself in :attr:`LABEL` (logs, diagnostics)."""

    #: the law's parameters (a frozen dataclass of :func:`.law_config.parameter` fields)
    Config: type = FrictionConfig
    #: human-readable name (log lines, diagnostics)
    LABEL = "model-based law"

    def __init__(self, model: DynamicModel, arm: ArmDescription, kp: Any = 0.0, kd: Any = 0.0,
                 design: Callable[[ModelTerms], tuple[Array, Array]] | None = None,
                 friction_compensation: bool = True, friction_eps: float = FRICTION_EPS) -> None:
        """``design(terms)`` gives the default ``(Kp, Kd)`` for the gains given as None."""
        check_model(model, arm)  # an impossible model (or another arm's) is refused: ModelConsistencyError
        self.arm = arm
        self.terms = ModelTerms(model, friction_eps)
        if kp is None or kd is None:
            kp_design, kd_design = design(self.terms)
            kp, kd = kp_design if kp is None else kp, kd_design if kd is None else kd
        self.kp = per_joint(kp, arm.n_joints, "kp")
        self.kd = per_joint(kd, arm.n_joints, "kd")
        self.friction_compensation = bool(friction_compensation)

    @classmethod
    def from_config(cls, model: DynamicModel, arm: ArmDescription, config: Any, friction_eps: float) -> "ModelLaw":
        """The law with the parameters ``config`` (an instance of :attr:`Config`) and the node's ``friction_eps``."""
        if not isinstance(config, cls.Config):
            raise TypeError(f"{cls.__name__} takes a {cls.Config.__name__}, got {type(config).__name__}")
        return cls(model, arm, friction_eps=friction_eps, **dataclasses.asdict(config))

    @classmethod
    def parameter_entries(cls) -> dict[str, dict[str, Any]]:
        """The parameter-schema entries of :attr:`Config` (:func:`.law_config.schema_entries`)."""
        return schema_entries(cls.Config)

    def gravity(self, q: Array) -> Array:
        """``G(q)`` of the controller's model (e.g. for the safety guard's hold)."""
        return self.terms.gravity(q)

    def desired_position(self, t: float) -> Array | None:
        """The reference position at ``t`` (a node's ``~/state``), None without a reference."""
        return None

    def set_model(self, model: DynamicModel, *, checked: bool = False) -> None:
        """Use ``model`` from the next torque on (e.g. the same arm holding a payload,
        :func:`~..dynamics.payload.with_payload`); gains and reference are kept. Checked as at
        construction (:class:`~..dynamics.consistency.ModelConsistencyError`: the law keeps its model)
        unless ``checked`` (the caller ran :func:`~..dynamics.consistency.check_model`, ~3 ms, e.g. off
        the control thread)."""
        if not checked:
            check_model(model, self.arm)
        self.terms = ModelTerms(model, self.terms.friction_eps)


@dataclasses.dataclass(frozen=True)
class PDGravityConfig(FrictionConfig, GainsConfig):
    """Parameters of :class:`PDGravityController`."""

    bandwidth: float = parameter(PD_BANDWIDTH, "Natural frequency [rad/s] of the designed gains on each joint's "
                                 "reference inertia.", "double", bounds=(0.1, 1000.0))
    static_accuracy: float = parameter(
        STATIC_ACCURACY, "Designed gains: Kp at least fc / static_accuracy [rad], so that static friction can hold a "
        "joint at most this far from the goal.", "double", bounds=(1.0e-06, 1.0))
    gravity_compensation: bool = parameter(
        True, "Add the model's gravity G(q) (4.1); false = PD only (a baseline: the arm sags).", "bool")
    goal_velocity_fraction: float = parameter(
        GOAL_VELOCITY_FRACTION, "Peak speed of the shaped profile to a new goal, as a fraction of velocity_max (the "
        "safety guard damps joints beyond 0.9 x velocity_max).", "double", bounds=(0.05, 0.9))


class PDGravityController(ModelLaw):
    """Regulation to a goal position by (4.1) on a shaped reference; see the module docstring.

    ``kp``, ``kd``: per-joint gains [N m/rad, N m s/rad] (scalar or n values); by default, on the
    model's reference inertia ``m``, ``Kp = max(m bandwidth^2, fc / static_accuracy)`` and
    ``Kd = 2 damping sqrt(Kp m)`` (module docstring). ``goal_velocity_fraction``: peak speed of a
    shaped goal as a fraction of ``velocity_max``. Give a reference with :meth:`hold` (a position,
    e.g. the measured one on enable) before :meth:`set_goal` and the first :meth:`torque`.
    :attr:`goal` is the final goal, :meth:`reference` the moving set-point.
    """

    Config = PDGravityConfig
    LABEL = "PD + gravity"

    def __init__(self, model: DynamicModel, arm: ArmDescription, *, kp: Any = None, kd: Any = None,
                 bandwidth: Any = PD_BANDWIDTH, damping: Any = 1.0, static_accuracy: float = STATIC_ACCURACY,
                 friction_compensation: bool = True, friction_eps: float = FRICTION_EPS,
                 gravity_compensation: bool = True, goal_velocity_fraction: float = GOAL_VELOCITY_FRACTION) -> None:
        if not static_accuracy > 0.0:
            raise ValueError(f"static_accuracy must be positive, got {static_accuracy}")

        def design(terms: ModelTerms) -> tuple[Array, Array]:
            inertia = reference_inertia(model, arm)
            stiffness = np.maximum(inertia * np.square(bandwidth), terms.coulomb / static_accuracy)
            return bandwidth_gains(np.sqrt(stiffness / inertia), damping, inertia)

        super().__init__(model, arm, kp, kd, design, friction_compensation, friction_eps)
        self.gravity_compensation = bool(gravity_compensation)
        self.profile_limits = speed_limited(arm, goal_velocity_fraction)
        self.goal: Array | None = None
        self.profile: GoalProfile | None = None
        self.start_time = 0.0

    def hold(self, q: Any) -> None:
        """Regulate to ``q`` (n,) [rad] at once (no profile: for the measured position, e.g. on
        enable); validated like a goal."""
        self.goal = check_goal(self.arm, q)
        zero = np.zeros_like(self.goal)
        self.profile, self.start_time = GoalProfile((self.goal, zero, zero), self.goal, 0.0), 0.0

    def set_goal(self, q_goal: Any, t: float) -> float:
        """Move to ``q_goal`` (n,) [rad] from time ``t`` [s, the clock of :meth:`torque`] along the
        shaped profile from the reference at ``t`` (module docstring); returns its duration [s].
        A goal outside the limits or with NaN raises :class:`~.trajectory.TrajectoryError` (the
        previous goal stays); without a reference (:meth:`hold`) a ``RuntimeError``."""
        goal = check_goal(self.arm, q_goal)
        profile = goal_profile(self.profile_limits, self.reference(t), goal)
        self.goal, self.profile, self.start_time = goal, profile, float(t)
        return profile.duration

    def desired_position(self, t: float) -> Array | None:
        return None if self.profile is None else self.reference(t)[0]

    def reference(self, t: float) -> tuple[Array, Array, Array]:
        """Desired ``(q_d, q'_d, q''_d)`` at time ``t`` (the goal at rest once the profile ended)."""
        if self.profile is None:
            raise RuntimeError("PDGravityController: no goal set")
        return self.profile.sample(t - self.start_time)

    def torque(self, t: float, q: Array, dq: Array) -> Array:
        """``tau`` (n,) [N m] of (4.1) at time ``t`` and the measured ``q``, ``dq``."""
        q_d, dq_d, _ = self.reference(t)
        tau = self.kp * (q_d - q) + self.kd * (dq_d - dq)
        load = self.friction_compensation and self.terms.friction_model.uses_load
        gravity = self.terms.gravity(q) if self.gravity_compensation or load else None
        if self.gravity_compensation:
            tau = tau + gravity
        return tau + self.terms.friction(dq, gravity=gravity) if self.friction_compensation else tau


# rows of ComputedTorqueController's per-joint constants (computed_torque_kernel's ``gains``)
_KP, _KD, _KI, _INTEGRAL_LIMIT = range(4)


@numba.njit(cache=True, nogil=True)
def computed_torque_kernel(terms: Array, block: Array, local: float, gains: Array, friction: Array, integral: Array,
                           step: float, compensate: bool) -> Array:
    """(4.8) with the integral action (module docstring), compiled: ``terms`` the model's ``M``, ``C q'``,
    ``G`` with their state ``q``, ``q'`` (:meth:`~..dynamics.model.DynamicModel.packed_dynamics_terms`),
    the reference of the trajectory's segment ``block`` at ``local`` (:func:`~.trajectory.segment_state`),
    ``gains`` rows ``Kp``, ``Kd``, ``Ki``, the integral's torque limit ``L`` (``max(fc, B)``,
    :attr:`ComputedTorqueController.integral_limit`), ``friction`` the laws' friction rows
    (:attr:`~.terms.ModelTerms.friction_rows`, at ``q'_d`` if ``compensate``). The integral ``integral``
    (rad s, in place) advances by ``e step`` and is bounded by ``|M_jj Ki_j integral_j| <= L_j`` (a
    joint without ``Ki`` has none)."""
    n = terms.shape[1]
    q, dq = terms[n + 2], terms[n + 3]
    reference = segment_state(block, local)
    v = np.empty(n)
    for j in range(n):
        error = reference[0, j] - q[j]
        v[j] = reference[2, j] + gains[_KD, j] * (reference[1, j] - dq[j]) + gains[_KP, j] * error
        ki = gains[_KI, j]
        if ki > 0.0:
            integral[j] += error * step
            bound = gains[_INTEGRAL_LIMIT, j] / (terms[j, j] * ki)  # M_jj > 0
            integral[j] = min(max(integral[j], -bound), bound)
            v[j] += ki * integral[j]
    tau = np.empty(n)
    for i in range(n):
        total = terms[n, i] + terms[n + 1, i]
        for j in range(n):
            total += terms[i, j] * v[j]
        tau[i] = total
    if compensate:
        tau += smooth_friction_torque(friction, reference[1], terms[n + 1])
    return tau


@dataclasses.dataclass(frozen=True)
class ComputedTorqueConfig(FrictionConfig, GainsConfig):
    """Parameters of :class:`ComputedTorqueController`."""

    bandwidth: float = parameter(CT_BANDWIDTH, "Natural frequency [rad/s] of the error dynamics e'' + Kd e' + Kp e "
                                 "= 0 (designed gains).", "double", bounds=(0.1, 1000.0))
    integral_rate: float = parameter(
        CT_INTEGRAL_RATE, "Integral action Ki = integral_rate x Kp [1/s] on the tracking error (a third pole near "
        "-integral_rate); its torque per joint at most the model's Coulomb level or the breakaway allowance (half the "
        "torque limit) if larger, restarted on enable and with a new payload; 0 = the seed's (4.8) without it.",
        "double", bounds=(0.0, 100.0))
    model_feedforward: bool = parameter(
        True, "Computed torque (4.8); false = a PD on the same error gains scaled by the model's reference inertia, "
        "without M(q), C, G, q''_d or friction (a baseline).", "bool")


class ComputedTorqueController(ModelLaw):
    """Tracking of a :class:`~.trajectory.JointTrajectory` by (4.8); see the module docstring.

    ``kp``, ``kd``: per-joint gains of the error dynamics [1/s^2, 1/s]; by default
    :func:`~.terms.bandwidth_gains` of ``bandwidth`` [rad/s] and ``damping``. Give a reference with
    :meth:`follow` (or :meth:`hold`) before the first :meth:`torque`.
    """

    Config = ComputedTorqueConfig
    LABEL = "computed torque"

    def __init__(self, model: DynamicModel, arm: ArmDescription, *, kp: Any = None, kd: Any = None,
                 bandwidth: Any = CT_BANDWIDTH, damping: Any = 1.0, friction_compensation: bool = True,
                 friction_eps: float = FRICTION_EPS, model_feedforward: bool = True,
                 integral_rate: float = CT_INTEGRAL_RATE) -> None:
        super().__init__(model, arm, kp, kd, lambda terms: bandwidth_gains(bandwidth, damping), friction_compensation,
                         friction_eps)
        if not (np.isfinite(integral_rate) and integral_rate >= 0.0):
            raise ValueError(f"integral_rate must be finite and >= 0 [1/s], got {integral_rate}")
        self.inertia = None if model_feedforward else reference_inertia(model, arm)
        self.ki = float(integral_rate) * self.kp  # [1/s^3] (module docstring: integral action)
        self.trajectory: JointTrajectory | None = None
        self.start_time = 0.0
        self._integral = np.zeros(arm.n_joints)  # integral of e [rad s]
        self.reset_integral()

    def set_model(self, model: DynamicModel, *, checked: bool = False) -> None:
        super().set_model(model, checked=checked)
        self.reset_integral()

    def reset_integral(self) -> None:
        """Restart the integral action at zero."""
        self._integral[:] = 0.0
        self._integral_time: float | None = None
        self._integrating = bool(self.ki.any())
        self._gains = np.ascontiguousarray(np.stack([self.kp, self.kd, self.ki, self.integral_limit]))

    @property
    def integral_limit(self) -> Array:
        """The largest torque of the integral action per joint [N m]: ``max(fc_j, B_j)``, the model's
        Coulomb level or the breakaway allowance ``B_j`` (:func:`~.terms.breakaway_allowance` of the torque
        limit) if larger: friction the model misses, also where its data left ``fc`` undetermined (0)."""
        return np.maximum(self.terms.coulomb, breakaway_allowance(self.arm.torque_limit))

    def follow(self, trajectory: JointTrajectory, start_time: float) -> None:
        """Follow ``trajectory`` from ``start_time`` [s, the clock of :meth:`torque`]: its times are
        from that start, before it the start state is held, after its end the last point. A
        trajectory beyond the position, velocity or acceleration limits raises
        :class:`~.trajectory.TrajectoryError` (the previous one stays). To replace a running
        trajectory smoothly, start the new one at :meth:`reference` of the switching time."""
        trajectory.check_limits(self.arm)
        self.trajectory, self.start_time = trajectory, float(start_time)

    def hold(self, q: Any) -> None:
        """Hold the position ``q`` (validated like a goal); the integral action restarts."""
        self.follow(JointTrajectory.hold(check_goal(self.arm, q)), 0.0)
        self.reset_integral()

    def desired_position(self, t: float) -> Array | None:
        return None if self.trajectory is None else self.reference(t)[0]

    def reference(self, t: float) -> tuple[Array, Array, Array]:
        """Desired ``(q_d, q'_d, q''_d)`` at time ``t``."""
        if self.trajectory is None:
            raise RuntimeError("ComputedTorqueController: no trajectory to follow")
        return self.trajectory.sample(t - self.start_time)

    def torque(self, t: float, q: Array, dq: Array) -> Array:
        """``tau`` (n,) [N m] of (4.8) at time ``t`` and the measured ``q``, ``dq``
        (:func:`computed_torque_kernel`; the integral advanced to ``t``, a repeated ``t``: not again)."""
        if self.trajectory is None:
            raise RuntimeError("ComputedTorqueController: no trajectory to follow")
        if self.inertia is not None:  # the PD baseline
            q_d, dq_d, _ = self.reference(t)
            return self.inertia * (self.kd * (dq_d - dq) + self.kp * (q_d - q))
        terms = self.terms.model.packed_dynamics_terms(q, dq)
        step = 0.0
        if self._integrating:
            if self._integral_time is not None and t > self._integral_time:
                step = t - self._integral_time
            self._integral_time = t
        block, local = self.trajectory.segment(t - self.start_time)
        return computed_torque_kernel(terms, block, local, self._gains, self.terms.friction_rows, self._integral, step,
                                      self.friction_compensation)


@dataclasses.dataclass(frozen=True)
class FloatConfig(FrictionConfig):
    """Parameters of :class:`FloatController` (``kd`` is its damping ``D``)."""

    kd: tuple[float, ...] | None = parameter(
        None, "Damping D [N m s/rad], one per joint or one for all; unset = FLOAT_DAMPING "
        "(youbot_dynamics.control.laws, per second) x each joint's reference inertia (a pushed joint coasts to rest "
        "in about 0.2 s).", "double_array", per_joint=_PER_JOINT, element_bounds=_KD_BOUNDS)
    rest_torque: tuple[float, ...] | None = parameter(
        None, "Virtual stiction [N m] that holds a joint at rest where it was left, one per joint or one for all; "
        "unset = half the model's Coulomb level (at least 0.05 N m); 0 = none; at most a quarter of the joint's rated "
        "torque min(effort_max, drive_torque_limit) (youBot 4.25, 4.25, 2, 0.675, 0.25 N m), more is refused at "
        "start.", "double_array", per_joint=_PER_JOINT)
    rest_velocity: float = parameter(FLOAT_REST_VELOCITY, "Speed [rad/s] below which a joint is held at its rest "
                                     "anchor.", "double", bounds=(0.0001, 1.0))


class FloatController(ModelLaw):
    """Hand-guiding (float): ``tau = G(q) + t_f(q, q') - D q'`` (module docstring).

    ``damping`` [N m s/rad] per joint (scalar or n values), by default ``FLOAT_DAMPING`` times the
    model's reference inertia; ``rest_torque`` ``S`` [N m] per joint, by default (module docstring)
    from the model's Coulomb level (0: no virtual stiction); ``friction_compensation=False`` drops
    ``t_f``. :meth:`hold` sets the anchors (the controller node calls it on enable); the law keeps
    them (single-threaded, like the others).
    """

    Config = FloatConfig
    LABEL = "float (hand-guiding)"

    def __init__(self, model: DynamicModel, arm: ArmDescription, *, damping: Any = None, rest_torque: Any = None,
                 rest_velocity: float = FLOAT_REST_VELOCITY, friction_compensation: bool = True,
                 friction_eps: float = FRICTION_EPS) -> None:
        super().__init__(model, arm, 0.0, 0.0, lambda terms: (np.zeros(arm.n_joints), np.zeros(arm.n_joints)),
                         friction_compensation, friction_eps)
        if damping is None:
            damping = FLOAT_DAMPING * reference_inertia(model, arm)
        self.kd = per_joint(damping, arm.n_joints, "damping")
        largest = FLOAT_REST_MAX_FRACTION * arm.torque_limit
        if rest_torque is None:
            rest_torque = np.minimum(np.maximum(FLOAT_REST_FRACTION * self.terms.coulomb, FLOAT_REST_MIN), largest)
        self.rest_torque = per_joint(rest_torque, arm.n_joints, "rest_torque")
        if np.any(self.rest_torque > largest):
            j = int(np.argmax(self.rest_torque / largest))
            raise ValueError(f"rest_torque {self.rest_torque[j]:g} N m on {arm.joint_names[j]} is more than a hand "
                             f"breaks away: at most {largest[j]:.4g} N m per joint ({FLOAT_REST_MAX_FRACTION:g} x "
                             f"its rated torque; {np.round(largest, 4).tolist()})")
        if not rest_velocity > 0.0:
            raise ValueError(f"rest_velocity must be positive, got {rest_velocity}")
        self.rest_velocity = float(rest_velocity)
        self._rest_stiffness = self.rest_torque / FLOAT_REST_DEFLECTION
        self.anchor: Array | None = None

    @classmethod
    def from_config(cls, model: DynamicModel, arm: ArmDescription, config: Any, friction_eps: float) -> "ModelLaw":
        if not isinstance(config, FloatConfig):
            raise TypeError(f"FloatController takes a FloatConfig, got {type(config).__name__}")
        return cls(model, arm, damping=config.kd, rest_torque=config.rest_torque, rest_velocity=config.rest_velocity,
                   friction_compensation=config.friction_compensation, friction_eps=friction_eps)

    @property
    def damping(self) -> Array:
        """``D`` [N m s/rad] per joint."""
        return self.kd

    def desired_position(self, t: float) -> Array | None:
        return None if self.anchor is None else self.anchor.copy()

    def hold(self, q: Any) -> None:
        """Anchor every joint at ``q`` (validated like a goal)."""
        self.anchor = check_goal(self.arm, q).copy()

    def torque(self, t: float, q: Array, dq: Array) -> Array:
        """``tau`` (n,) [N m] at the measured ``q``, ``dq`` (``t`` unused: no reference); moves the
        anchors of the joints faster than ``rest_velocity`` to ``q``."""
        if self.anchor is None:
            raise RuntimeError("FloatController: hold(q) sets the anchors before the first torque")
        moving = np.abs(dq) >= self.rest_velocity
        self.anchor[moving] = q[moving]
        g = self.terms.gravity(q)
        rest = np.clip(self._rest_stiffness * (self.anchor - q), -self.rest_torque, self.rest_torque)
        tau = g - self.kd * dq + rest
        return tau + self.terms.friction(dq, gravity=g) if self.friction_compensation else tau


class PDFeedforward:
    """The node's joint controller on the effort interface: model feedforward plus PD,

        tau = tau_model(q_ref, q'_ref, q''_ref) + Kp (q_ref - q) + Kd (q'_ref - q'),

    saturated to ``torque_limit`` (default ``min(effort_max, drive_torque_limit)``). Single-threaded
    (the model's buffers)."""

    def __init__(self, arm: ArmDescription, model: DynamicModel, kp: Any, kd: Any, torque_limit: Any = None) -> None:
        n = arm.n_joints
        self.model = model
        self.kp, self.kd = (np.broadcast_to(np.asarray(g, dtype=float), (n,)).copy() for g in (kp, kd))
        if np.any(self.kp < 0) or np.any(self.kd < 0):
            raise ValueError("effort gains must be >= 0")
        limit = arm.torque_limit if torque_limit is None else torque_limit
        self.limit = np.broadcast_to(np.asarray(limit, dtype=float), (n,)).copy()

    def torque(self, reference: tuple[Array, Array, Array], q: Array, dq: Array) -> Array:
        q_ref, dq_ref, ddq_ref = reference
        tau = self.model.inverse_dynamics_single(q_ref, dq_ref, ddq_ref)
        tau = tau + self.kp * (q_ref - q) + self.kd * (dq_ref - dq)
        return np.clip(tau, -self.limit, self.limit)
