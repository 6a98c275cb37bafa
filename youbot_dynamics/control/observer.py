"""External joint torques from the model: the generalized momentum observer, and collision detection.

**Momentum observer** (De Luca and Mattone, ICRA 2005; De Luca, Albu-Schaeffer, Haddadin and
Hirzinger, IROS 2006). With the external joint torque ``tau_ext`` (what a push, a contact or a
hand does to the joints, ``J^T F``) the model of seed 002 (2.58) reads
``M(q) q'' + C(q, q') q' + G(q) + t_f(q, q') = tau + tau_ext``. The generalized momentum
``p = M(q) q'`` then obeys, by ``M' = C + C^T`` (the skew symmetry of ``M' - 2C``),

    p' = tau + C(q, q')^T q' - G(q) - t_f(q, q') + tau_ext

and the residual

    r(t) = K (p(t) - p(0) - integral_0^t (tau + C^T q' - G - t_f + r) ds)

obeys ``r' = K (tau_ext - r)``: each joint's ``r_j`` is ``tau_ext,j`` through a first-order low-pass
of bandwidth ``K_j`` [1/s], decoupled, with no acceleration measured and no inverse of ``M``.
Discretised with the joint states' own stamps (``tau`` held over each step as the drives hold it,
the model's part by the trapezoid rule). A gap longer than ``max_step`` restarts the integral at the
state after it with the estimate it had (a warm start: the torque over the gap is unknown, the
external torque most likely what it was); :meth:`MomentumObserver.reset` restarts at ``r = 0``.
(Restarting at ``r = 0`` on every gap, a push held through gaps read as a series of new ones: with
the simulator in the test's process and two CPU hogs, 13-20 gaps in 1.4 s.) ``tau`` is the motor
torque the drives apply: the joint states' measured effort
(:meth:`MomentumObserver.update_measured`; what an identified model was fitted to, the drives'
gain and offset errors included, so they cancel) or a controller's own
command (:meth:`MomentumObserver.update`: no measurement noise, but the model's fit of the drives'
errors and the command's delivery delay show in ``r``: over DDS the residual while moving was
0.35 N m on joint 1 against 0.21 with the measured effort).
``t_f`` is the model's friction with the smoothed Coulomb shape of :mod:`.terms` at the measured
velocity; at rest the true friction can be anything inside the stiction band, which the residual
then shows (why thresholds are not zero).

**Collision detection** (:class:`CollisionDetector`): a collision begins when any
``|r_j| > threshold_j`` and ends when every ``|r_j| < release_ratio threshold_j`` (hysteresis).
Thresholds come from the residual the model leaves on data it did not see
(:func:`collision_thresholds`: :func:`unfitted_rms` of the model file's identification block, the
largest RMS torque error per joint over the motions it records that were not fitted, times
``COLLISION_FACTOR``, at least ``THRESHOLD_FLOOR``). The held-out motion alone was not enough:
the experiment's validation trajectory drives joint 1 to 0.69 rad/s, the excitation and the main
job's stroke to 1.3 rad/s, and on the foreign robot the stroke's residual crossed joint 1's
threshold set from the held-out error alone (0.306 N m against 0.300).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..dynamics.model import DynamicModel
from .terms import FRICTION_EPS, ModelTerms, all_finite, per_joint

__all__ = ["OBSERVER_GAIN", "COLLISION_FACTOR", "THRESHOLD_FLOOR", "STICTION_FACTOR", "STICTION_VELOCITY",
           "STICTION_HOLD_TIME", "MomentumObserver", "CollisionDetector", "collision_thresholds", "unfitted_rms"]

Array = NDArray[np.float64]

OBSERVER_GAIN = 100.0  # [1/s] default K: tau_ext seen through a 16 Hz low-pass (63 % in 10 ms)
COLLISION_FACTOR = 6.0  # thresholds = factor x held-out RMS residual of the model per joint
THRESHOLD_FLOOR = 0.3  # [N m] lowest threshold (the wrist's residual is a few 10 mN m; stiction is more)
STICTION_FACTOR = 1.5  # stiction band = factor x the model's Coulomb level (the breakaway exceeds the kinetic level)
STICTION_VELOCITY = 0.1  # [rad/s] speed below which a joint's threshold grows by its stiction band
STICTION_HOLD_TIME = 0.03  # [s] decay of that growth after the joint left the band


class MomentumObserver:
    """The residual ``r`` of the module docstring on ``model``; ``gain`` ``K`` [1/s] per joint
    (scalar or n values, > 0), ``friction_eps`` the smoothing of the Coulomb sign, ``max_step`` [s]
    the longest step integrated. Not thread-safe (its own integrator state; the model's buffers are per thread)."""

    def __init__(self, model: DynamicModel, gain: Any = OBSERVER_GAIN, friction_eps: float = FRICTION_EPS,
                 max_step: float = 0.02) -> None:
        n = model.n_joints
        if np.ndim(gain) > 1 or np.size(gain) not in (1, n):
            raise ValueError(f"observer gain must be one value or {n}, got {np.asarray(gain).tolist()}")
        self.gain = per_joint(gain, n, "observer gain")
        if not np.all(self.gain > 0.0):
            raise ValueError(f"observer gain must be positive per joint, got {self.gain.tolist()}")
        if not max_step > 0.0:
            raise ValueError(f"max_step must be positive, got {max_step}")
        self.model = model
        self.terms = ModelTerms(model, friction_eps)
        self.max_step = float(max_step)
        self.residual = np.zeros(n)
        self.gravity = np.zeros(n)  # G(q) of the last update
        self._t: float | None = None
        self._p0 = np.zeros(n)
        self._integral = np.zeros(n)
        self._tau = np.zeros(n)  # the motor torque since the previous sample
        self._model_part = np.zeros(n)  # C^T q' - G - t_f at the previous sample

    def set_model(self, model: DynamicModel) -> None:
        """Observe with ``model`` (same joints) and restart at ``r = 0`` (``p`` changes with ``M``)."""
        if model.n_joints != self.model.n_joints:
            raise ValueError(f"model has {model.n_joints} joints, the observer {self.model.n_joints}")
        self.model, self.terms = model, ModelTerms(model, self.terms.friction_eps)
        self.reset()

    def reset(self) -> None:
        """Forget the history: the next :meth:`update` starts at ``r = 0``."""
        self._t = None
        self.residual = np.zeros_like(self.residual)

    def momentum_terms(self, q: Array, dq: Array) -> tuple[Array, Array]:
        """``(p, C^T q' - G - t_f)`` at ``(q, q')``: the momentum ``M(q) q'`` and the model's part of ``p'``
        (:meth:`~..dynamics.model.DynamicModel.momentum_terms` and the compiled friction of
        :meth:`~.terms.ModelTerms.friction`); keeps ``G`` in :attr:`gravity`."""
        p, coriolis_t, g = self.model.momentum_terms(q, dq)
        self.gravity = g
        return p, coriolis_t - g - self.terms.friction(dq, gravity=g)

    def update(self, t: float, q: Any, dq: Any, tau: Any) -> Array:
        """The residual ``r`` (n,) [N m] (the external torque estimate) at the joint state ``(q, q')`` of
        stamp ``t`` [s]; ``tau`` (n,) [N m] is the motor torque from this state on (a controller's
        command of this cycle), integrated at the next update. A copy. ``ValueError`` for wrong
        lengths or non-finite values (the observer is left unchanged)."""
        return self._update(t, q, dq, tau, measured=False)

    def update_measured(self, t: float, q: Any, dq: Any, effort: Any) -> Array:
        """:meth:`update` with the torque the drives applied *up to* this state (a joint state's measured
        effort: the current of the last cycle) instead of the command from it on."""
        return self._update(t, q, dq, effort, measured=True)

    def _update(self, t: float, q: Any, dq: Any, tau: Any, measured: bool) -> Array:
        q, dq, tau = (_finite_vector(name, x, self.model.n_joints) for name, x in (("q", q), ("dq", dq), ("tau", tau)))
        if self._t is not None and t <= self._t:
            return self.residual.copy()  # a repeated or older stamp: nothing new
        p, model_part = self.momentum_terms(q, dq)
        if self._t is None or t - self._t > self.max_step:
            # (re)start the integral at this state, the estimate where it was: r = K (p - p0 - I) with
            # I = -r / K (zero at the start and after reset(): r is zero then)
            self._t, self._p0, self._integral = float(t), p, -self.residual / self.gain
        else:
            if measured:  # the torque of the step that ends here
                self._tau = tau
            dt = t - self._t
            # tau is held over the step (the drives' zero-order hold); the model's part varies with the
            # state: trapezoid
            self._integral += (self._tau + 0.5 * (self._model_part + model_part) + self.residual) * dt
            self.residual = self.gain * (p - self._p0 - self._integral)
            self._t = float(t)
        self._tau, self._model_part = tau, model_part
        return self.residual.copy()


def _finite_vector(name: str, x: Any, n: int) -> Array:
    arr = np.asarray(x, dtype=float)
    if arr.shape != (n,) or not all_finite(arr):
        raise ValueError(f"{name} must be {n} finite values, got {np.asarray(x).tolist()}")
    return arr


def unfitted_rms(identification: dict) -> Array | None:
    """Per joint [N m], the largest RMS torque error an identification block records on motions
    the model was not fitted on: ``joint_rms_errors_nm`` (the held-out data) and, from the
    identification experiment, ``same_motion.joint_rms_errors_nm`` (later periods of the excitation,
    not fitted: its speeds, which the held-out motion may not reach) and
    ``friction_selection.probe_joint_rms_nm`` (the friction sweep's halves, each predicted from the
    rest of the data: another character of motion). ``None`` without the first."""
    held = identification.get("joint_rms_errors_nm")
    if held is None:
        return None
    others = [(identification.get("same_motion") or {}).get("joint_rms_errors_nm"),
              (identification.get("friction_selection") or {}).get("probe_joint_rms_nm")]
    return np.max([np.asarray(e, dtype=float) for e in [held, *others] if e is not None], axis=0)


def collision_thresholds(residual_rms: Any, factor: float = COLLISION_FACTOR,
                         floor: Any = THRESHOLD_FLOOR) -> Array:
    """Per-joint thresholds [N m]: ``max(factor residual_rms_j, floor_j)`` (module docstring)."""
    rms = np.asarray(residual_rms, dtype=float)
    if rms.ndim != 1 or not np.all(np.isfinite(rms)) or np.any(rms < 0.0):
        raise ValueError(f"residual RMS must be finite and >= 0 per joint, got {np.asarray(residual_rms).tolist()}")
    if not (np.isfinite(factor) and factor > 0.0):
        raise ValueError(f"collision factor must be positive, got {factor}")
    return np.maximum(factor * rms, per_joint(floor, rms.size, "threshold floor"))


class CollisionDetector:
    """Thresholds with hysteresis on the residual (module docstring).

    ``thresholds`` [N m] per joint (> 0) hold while a joint slides. Near rest (a start, a reversal,
    a stop) its friction is anywhere in the stiction band and passes the Stribeck dip, which the
    model's smooth Coulomb term does not know; a joint that sticks even hides a push entirely (its
    friction takes it: ``r = tau - G + t_f,model`` whatever ``tau_ext`` is). So the threshold of
    joint ``j`` grows by ``stiction_j exp(-(q'_j / stiction_velocity)^2)``, ``stiction_j`` given each
    update (e.g. ``STICTION_FACTOR`` x the model's Coulomb level at ``q``), and that growth decays
    with the time constant ``hold_time`` [s] once the joint moves (the residual is ``tau_ext``
    low-passed: the transient outlasts the slow phase by about ``1 / K``). ``release_ratio`` in
    ``(0, 1]``: the collision ends when every ``|r_j|`` is below that fraction of its threshold."""

    def __init__(self, thresholds: Any, *, stiction_velocity: float = STICTION_VELOCITY,
                 hold_time: float = STICTION_HOLD_TIME,
                 release_ratio: float = 0.5) -> None:
        self.base = np.array(thresholds, dtype=float)
        if self.base.ndim != 1 or not np.all(np.isfinite(self.base)) or np.any(self.base <= 0.0):
            raise ValueError(f"collision thresholds must be finite and positive per joint, got "
                             f"{np.asarray(thresholds).tolist()}")
        for name, value in (("stiction_velocity", stiction_velocity), ("hold_time", hold_time)):
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be positive, got {value}")
        if not 0.0 < release_ratio <= 1.0:
            raise ValueError(f"release_ratio must be in (0, 1], got {release_ratio}")
        self.stiction_velocity = float(stiction_velocity)
        self.hold_time = float(hold_time)
        self.release_ratio = float(release_ratio)
        self.thresholds = self.base.copy()  # of the last update
        self._band = np.zeros_like(self.base)
        self._t: float | None = None
        self.in_collision = False
        self.joints: tuple[int, ...] = ()  # the joints over their thresholds when the collision began

    def update(self, t: float, residual: Array, dq: Array, stiction: Any = 0.0) -> bool | None:
        """Judge the residual at time ``t`` [s], velocity ``dq`` and stiction level ``stiction`` [N m]
        (per joint or scalar); ``True`` when a collision begins, ``False`` when it ends, else ``None``."""
        band = np.asarray(stiction, dtype=float) * np.exp(-np.square(dq / self.stiction_velocity))
        if self._t is not None and t > self._t:
            band = np.maximum(band, self._band * np.exp(-(t - self._t) / self.hold_time))
        elif self._t is not None:
            band = np.maximum(band, self._band)
        self._band, self._t = band, float(t)
        self.thresholds = self.base + band
        ratio = np.abs(residual) / self.thresholds
        if not self.in_collision:
            if np.any(ratio > 1.0):
                self.in_collision, self.joints = True, tuple(int(j) for j in np.flatnonzero(ratio > 1.0))
                return True
        elif np.all(ratio < self.release_ratio):
            self.in_collision = False
            return False
        return None

    def reset(self) -> None:
        """No collision, no stiction history."""
        self.in_collision, self.joints, self._t = False, (), None
        self._band = np.zeros_like(self.base)
        self.thresholds = self.base.copy()
