"""Model terms the control laws and the safety guard evaluate each cycle, and gain design.

Seed 002 (2.58), (2.70): ``tau_e = M(q) q'' + C(q, q') q' + G(q) + t_f(q, q')`` with the model's
friction (:mod:`..dynamics.friction`; the seed's ``t_f(v) = fv v + fc sign(v) + f0``). A
controller cannot use ``sign``: at rest the measured (or desired) velocity hovers around zero and
the compensation would chatter by ``+-fc``. Joints whose model has a sign Coulomb term get it
smoothed, ``fc tanh(v / eps)`` (``eps`` [rad/s], default :data:`FRICTION_EPS`, 15 velocity quanta
of joint 1's driver); a model with its own smooth shape (an identified ``eps_j > 0``) keeps it. The
extra terms (load-dependent, asymmetric, Stribeck Coulomb) use the same shape, so all of them give
full compensation above a few ``eps``, none at rest, where the controller's stiffness has to hold
against static friction.

**Gains from a bandwidth.** A joint with inertia ``m`` under ``tau = Kp e - Kd e'`` has natural
frequency ``omega = sqrt(Kp / m)`` and damping ratio ``zeta = Kd / (2 sqrt(Kp m))``, so
``Kp = m omega^2``, ``Kd = 2 zeta omega m`` (:func:`bandwidth_gains`). The reference inertia of a
joint (:func:`reference_inertia`) is the largest diagonal entry ``M_jj(q)`` over configurations
inside the joint limits: gains designed on it give at least the damping ratio ``zeta`` in every
configuration (``M_jj <= m``), i.e. no overshoot for ``zeta >= 1``.

**Breakaway allowance** (:func:`breakaway_allowance`): ``B = BREAKAWAY_FRACTION x torque_limit``
(half: 8.5, 8.5, 4, 1.35, 0.5 N m on the youBot), the static friction beyond the model's Coulomb level
that the safety guard's stall bound credits at most (:func:`~.safety.breakaway_credit`) and computed
torque's integral action may supply; a bound from the drives, not from the model's friction, which the
data may have left undetermined. Why half: the five real recordings (``../shared/data/youbot_real``,
the ITMO arm of seed 002) show sliding friction of 0.22-0.65 N m on joint 5 (the median torque moving up
less moving down, halved, at 0.05-0.3 rad/s), up to half its 1 N m limit, and 0.9-1.2 N m on joint 1
(17 N m); the drives' calibration (a joint driven at 1 rpm until its current exceeds 0.5 A on joints 4
and 5: 1.81 / 1.74 N m) bounds the sliding friction of joints 4-5 below 0.67 / 1.74 x their limits; the
other half of each limit is left for the motion.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from ..dynamics.friction import kinetic_levels, smooth_friction_torque
from ..dynamics.model import DynamicModel
from ..dynamics.parameters import DRIVE_PARAMETERS, LINK_PARAMETERS, PARAMETERS_PER_JOINT

__all__ = ["BREAKAWAY_FRACTION", "FRICTION_EPS", "ModelTerms", "breakaway_allowance", "reference_inertia",
           "bandwidth_gains", "per_joint", "all_finite"]

Array = NDArray[np.float64]

FRICTION_EPS = 0.01  # [rad/s] velocity scale of the smoothed Coulomb sign
BREAKAWAY_FRACTION = 0.5  # B / torque limit: static friction beyond the model's that the controllers may break


def breakaway_allowance(torque_limit: Any) -> Array:
    """``B = BREAKAWAY_FRACTION x torque_limit`` per joint [N m]: how much static friction beyond the
    model's Coulomb level the safety guard's stall bound credits and computed torque's integral action
    may supply (module docstring: the breakaway allowance)."""
    return BREAKAWAY_FRACTION * np.asarray(torque_limit, dtype=float)


class ModelTerms:
    """Single-sample ``G(q)`` and smoothed ``t_f(v)`` of a :class:`DynamicModel` (see the module
    docstring). The model's buffers are per thread (:meth:`~..dynamics.model.DynamicModel.workspace`)."""

    def __init__(self, model: DynamicModel, friction_eps: float = FRICTION_EPS) -> None:
        if not friction_eps > 0.0:
            raise ValueError(f"friction_eps must be positive, got {friction_eps}")
        self.model = model
        self.friction_eps = float(friction_eps)
        n = model.n_joints
        drive = model.equivalent_standard.reshape(n, PARAMETERS_PER_JOINT)[:, len(LINK_PARAMETERS):]
        self.viscous, self.coulomb, self.offset = (drive[:, DRIVE_PARAMETERS.index(k)].copy()
                                                   for k in ("fv", "fc", "f0"))
        own = model.friction_model
        # the friction model the laws use: the model's, its sign Coulomb joints smoothed with friction_eps
        self.friction_model = dataclasses.replace(own, eps=tuple(e if e > 0 else self.friction_eps for e in own.eps))
        self._parameters = model.friction_parameters
        #: the same friction for compiled kernels (:func:`~..dynamics.friction.smooth_friction_torque`)
        self.friction_rows = self.friction_model.rows(self.viscous, self.coulomb, self.offset, self._parameters)
        self._zero = np.zeros(n)
        self._gravity = np.zeros(n)
        self._velocity = np.zeros(n)

    @property
    def n_joints(self) -> int:
        return self.model.n_joints

    def gravity(self, q: Array) -> Array:
        """``G(q)``: the inverse dynamics at rest minus the friction offset ``f0``."""
        return self.model.inverse_dynamics_single(q, self._zero, self._zero) - self.offset

    def kinetic_levels(self, gravity: Array | None) -> tuple[Array, Array]:
        """``(up, down)``: the kinetic Coulomb level of ``t_f`` moving up and down, ``fc + fl |G| +- fa``
        (:func:`~..dynamics.friction.kinetic_levels`); ``gravity`` = ``G(q)``, needed only by
        load-dependent friction."""
        if gravity is None and self.friction_model.uses_load:
            raise ValueError("load-dependent friction needs G(q)")
        buffer = self._gravity  # one argument type (a read-only G would compile the kernel again)
        buffer[:] = 0.0 if gravity is None else gravity
        levels = kinetic_levels(self.friction_rows, buffer)
        return levels[0], levels[1]

    def friction(self, v: Array, q: Array | None = None, gravity: Array | None = None) -> Array:
        """``t_f(q, v)`` of one state with the smoothed Coulomb shape (module docstring), by the compiled
        kernels' own formula (:func:`~..dynamics.friction.smooth_friction_torque` on
        :attr:`friction_rows`); load-dependent friction needs ``gravity`` = ``G(q)`` or ``q`` to compute it."""
        if self.friction_model.uses_load and gravity is None:
            if q is None:
                raise ValueError("load-dependent friction needs q or G(q)")
            gravity = self.gravity(q)
        velocity, load = self._velocity, self._gravity  # one argument type for the kernel
        velocity[:] = v
        load[:] = 0.0 if gravity is None else gravity
        return smooth_friction_torque(self.friction_rows, velocity, load)


def reference_inertia(model: DynamicModel, arm: ArmDescription, samples: int = 256, seed: int = 0) -> Array:
    """Largest ``M_jj(q)`` per joint over ``samples`` configurations drawn uniformly inside the joint
    limits (reproducible for a given ``seed``) [kg m^2]."""
    q = np.random.default_rng(seed).uniform(arm.position_min, arm.position_max, (samples, arm.n_joints))
    return np.max(np.diagonal(model.mass_matrix(q), axis1=-2, axis2=-1), axis=0)


def bandwidth_gains(omega: Any, zeta: Any, inertia: Any = 1.0) -> tuple[Array, Array]:
    """``(Kp, Kd) = (m omega^2, 2 zeta omega m)`` per joint (``m = 1``: acceleration-level gains)."""
    omega, zeta, inertia = (np.asarray(x, dtype=float) for x in (omega, zeta, inertia))
    return inertia * omega**2, 2.0 * zeta * omega * inertia


def all_finite(x: Array) -> bool:
    """Every entry of the float array ``x`` finite: ``x . x`` is NaN or infinite otherwise (and for
    entries beyond 1e154, which no joint value is); the cost of one call on a control cycle's vectors."""
    return math.isfinite(x.dot(x))  # ndarray.dot: half the cost of @, a fifth of isfinite().all() on a few entries


def per_joint(values: Any, n: int, name: str) -> Array:
    """Per-joint gains or limits (a scalar is broadcast) as a read-only (n,) array; ``ValueError``
    unless finite and >= 0."""
    arr = np.array(np.broadcast_to(np.asarray(values, dtype=float), (n,)))
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
        raise ValueError(f"{name} must be finite and non-negative per joint, got {arr.tolist()}")
    arr.setflags(write=False)
    return arr
