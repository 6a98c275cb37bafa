"""The dynamic model of an arm from a base-parameter vector (nominal or identified).

Seed 002 (2.70)-(2.74): ``M(q) q'' + C(q, q') q' + G(q) + t_f(q, q') = tau_e`` with ``M = D + I_a``
and the friction ``t_f`` of the model's :class:`~.friction.FrictionModel` (default the seed's
``fv q' + fc sign(q') + f0``; the Coulomb column of the regressor is the friction model's shape
``s(q')``, and its extra terms, ``fa, fs, fl`` with values :attr:`DynamicModel.friction_parameters`,
add ``F(q, q') f_e``, zero at rest). Everything is evaluated from the base regressor,
``tau = Y_b(q, q', q'') beta + F(q, q') f_e``, on stacked states:

* ``G(q) = Y_b(q, 0, 0) beta - f0``;
* column j of ``M(q)`` is ``Y_b(q, 0, e_j) beta - Y_b(q, 0, 0) beta``;
* ``c(q, v) = Y_b(q, v, 0) beta - G - t_f(v)`` is the Coriolis/centrifugal vector, quadratic in
  ``v``: ``c_k = sum_ij Gamma_kij v_i v_j`` with the Christoffel symbols
  ``Gamma_kij = 1/2 (dM_kj/dq_i + dM_ki/dq_j - dM_ij/dq_k)`` (2.72)-(2.73);
* the Christoffel-form matrix by polarisation: ``C(q, q') e_j = (c(q, q' + e_j) - c(q, q' - e_j)) / 4``,
  so that ``M' - 2C`` is skew-symmetric;
* forward dynamics ``q'' = M^-1 (tau - C q' - G - t_f)`` by Cholesky; a mass matrix that is not
  positive definite (physically inconsistent parameters) raises :class:`PhysicalConsistencyError`.

The single-state ``M``, ``C q'``, ``G`` of a control cycle (:meth:`DynamicModel.dynamics_terms`) and a
momentum observer's ``M q'``, ``C^T q'``, ``G`` (:meth:`DynamicModel.momentum_terms`) come instead from
compiled Newton-Euler passes on the equivalent standard parameters (:mod:`.joint_space_terms`): the same
numbers (``Y chi = Y_b beta``) at a few microseconds.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ..arm.description import check_joint_values
from .base_parameters import BaseParameters, compute_base_parameters
from .chain import DHChain
from .friction import FrictionModel, friction_torque
from .joint_space_terms import chain_geometry, link_parameters, mass_coriolis_gravity, momentum_coriolis_gravity
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, ModelStructure
from .shipped import shipped_module

_FLOAT = np.dtype(np.float64)
# batches of at least this many samples use the multi-core regressor loop
PARALLEL_SAMPLES = 2048

__all__ = ["PhysicalConsistencyError", "DynamicModel", "ModelWorkspace"]

Array = NDArray[np.float64]
RegressorFn = Callable[[Any, Any, Any], Array]


class PhysicalConsistencyError(ValueError):
    """The parameters give a mass matrix that is not positive definite at some configuration."""


def _numeric_regressor(chain: DHChain) -> RegressorFn:
    """The Newton-Euler regressor for chains without shipped generated code, any leading shape."""
    from . import rnea

    def numeric(q: Any, dq: Any, ddq: Any) -> Array:
        # rnea.regressor takes (n,) or (N, n): flatten any leading sample dimensions
        q, dq, ddq = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, dq, ddq)))
        n = chain.n_joints
        y = rnea.regressor(chain, q.reshape(-1, n), dq.reshape(-1, n), ddq.reshape(-1, n))
        return y.reshape(q.shape[:-1] + y.shape[-2:])

    return numeric


def _drive_index(n: int, name: str) -> NDArray[np.int64]:
    offset = len(LINK_PARAMETERS) + ("Ia", "fv", "fc", "f0").index(name)
    return np.arange(n) * PARAMETERS_PER_JOINT + offset


@dataclass
class ModelWorkspace:
    """The buffers of one thread's single-state calls of a :class:`DynamicModel` (Pinocchio's ``Data``
    beside its ``Model``): one regressor row block (zeroed once: the generated code always writes the
    same entries), the state ``(q, q')`` of the compiled Newton-Euler calls and the terms of the last
    call of :meth:`DynamicModel.dynamics_terms`."""

    out1: Array
    state: Array
    kept_terms: tuple[bytes, Any] = (b"", None)

    @classmethod
    def of(cls, n: int, standard: int) -> "ModelWorkspace":
        """Buffers for ``n`` joints and ``standard`` standard parameters."""
        return cls(out1=np.zeros((n, standard)), state=np.zeros((2, n)))


@dataclass
class DynamicModel:
    """``tau = Y_b beta`` and the matrices of the model; see the module docstring."""

    chain: DHChain
    base: BaseParameters
    beta: Array
    source: str = field(default="", compare=False)  # the model file it was read from ("" if built in memory)
    standard: Array | None = field(default=None, compare=False, repr=False)  # the 14 n vector beta came from, if known
    friction_model: FrictionModel | None = None  # default: the seed's (sign Coulomb, no extra terms)
    friction_parameters: Array | None = None  # values of the friction model's extra terms (default none)
    _chi: Array = field(init=False, repr=False)
    _regressor: RegressorFn = field(init=False, repr=False)
    _module: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.beta = np.asarray(self.beta, dtype=float)
        if self.beta.shape != (self.base.count,):
            raise ValueError(f"expected {self.base.count} base parameters, got shape {self.beta.shape}")
        if not np.all(np.isfinite(self.beta)):
            raise ValueError("base parameters contain NaN or infinite values")
        self._chi = self.base.equivalent_standard(self.beta)
        n = self.n_joints
        if self.friction_model is None:
            self.friction_model = FrictionModel.seed(n)
        if self.friction_model.n_joints != n:
            raise ValueError(f"friction model of {self.friction_model.n_joints} joints for a {n}-joint chain")
        if not self.friction_model.is_seed and self.base.structure is not ModelStructure.FULL:
            raise ValueError(f"a {self.base.structure.value} model has no friction terms: its friction model must be "
                             f"the seed's")
        self.friction_parameters = self.friction_model.check_parameters(
            np.zeros(0) if self.friction_parameters is None else self.friction_parameters)
        fc_full = _drive_index(n, "fc")
        self._shaped = bool(any(self.friction_model.eps)) and self.base.structure is ModelStructure.FULL
        # where each joint's Coulomb column sits in beta (the youBot: every fc_j is a base parameter alone)
        self._fc_beta = np.array([int(np.flatnonzero(self.base.independent == k)[0]) if k in self.base.independent
                                  else -1 for k in fc_full])
        if self._shaped and (self._fc_beta < 0).any():
            raise ValueError("a smooth Coulomb shape needs every fc_j among the base parameters")
        self._fc_full = fc_full
        self._module = shipped_module(self.chain)  # compiled generated code (the youBot) or None
        self._regressor = _numeric_regressor(self.chain)  # used when there is no generated module
        self._workspaces = threading.local()  # one ModelWorkspace per thread (workspace())
        self._single_shape = (n,)
        friction = np.concatenate([_drive_index(n, k) for k in ("fv", "fc", "f0")])
        self._inertial_mask = ~np.isin(self.base.independent, friction)  # beta entries of M, C and G
        self._fv, self._fc, self._f0 = (self._chi[_drive_index(n, k)] for k in ("fv", "fc", "f0"))
        self._geometry = chain_geometry(self.chain)
        self._gravity = np.ascontiguousarray(self.chain.gravity, dtype=float)
        self._links, self._rotor = link_parameters(self._chi)

    def workspace(self) -> ModelWorkspace:
        """The calling thread's buffers of the single-state algorithms (made at its first call): the
        model itself holds no mutable buffer, so any thread may use it."""
        workspace = getattr(self._workspaces, "workspace", None)
        if workspace is None:
            workspace = self._workspaces.workspace = ModelWorkspace.of(self.n_joints, self._chi.size)
        return workspace

    @classmethod
    def from_standard(cls, chain: DHChain, chi: Any, structure: ModelStructure | str = ModelStructure.FULL,
                      base: BaseParameters | None = None, friction_model: FrictionModel | None = None,
                      friction_parameters: Any = None) -> "DynamicModel":
        """The model of standard parameters ``chi`` (14 n), reduced to base parameters (``chi`` kept as
        :attr:`standard`)."""
        base = base if base is not None else compute_base_parameters(chain, structure)
        return cls(chain, base, base.from_standard(chi), standard=np.array(chi, dtype=float),
                   friction_model=friction_model, friction_parameters=friction_parameters)

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of :attr:`parameters`: the base parameters, then the friction model's extra terms."""
        return tuple(self.base.names) + self.friction_model.extra_names()

    @property
    def parameters(self) -> Array:
        """All identified values: ``beta`` then :attr:`friction_parameters` (the order of :meth:`full_regressor`)."""
        return np.concatenate([self.beta, self.friction_parameters])

    def with_parameters(self, parameters: Any, standard: Array | None = None, source: str = "") -> "DynamicModel":
        """The same structure (chain, base, friction model) with new :attr:`parameters`."""
        values = np.asarray(parameters, dtype=float)
        b = self.base.count
        return DynamicModel(self.chain, self.base, values[:b], source=source, standard=standard,
                            friction_model=self.friction_model, friction_parameters=values[b:])

    @property
    def n_joints(self) -> int:
        return self.chain.n_joints

    @property
    def equivalent_standard(self) -> Array:
        """A 14 n vector giving the same torques as ``beta`` (zeros in the regrouped columns)."""
        return self._chi.copy()

    # -- evaluation ---------------------------------------------------------------------------

    def _state(self, name: str, x: Any) -> Array:
        return check_joint_values(x, self.n_joints, name)

    def _base_regressor(self, q: Array, dq: Array, ddq: Array) -> Array:
        """``Y_b`` (k, n, b) of broadcast states (..., n), flattened to k samples; the compiled generated
        loop (on all cores for large batches) when available."""
        n = self.n_joints
        if self._module is None:
            out = self.base.base_regressor(self._regressor(q, dq, ddq)).reshape(-1, n, self.base.count)
        else:
            q, dq, ddq = (np.ascontiguousarray(x).reshape(-1, n) for x in np.broadcast_arrays(q, dq, ddq))
            out = np.empty((q.shape[0], n, self.base.count))
            parallel = q.shape[0] >= PARALLEL_SAMPLES
            many = self._module.regressor_many_parallel if parallel else self._module.regressor_many
            many(q, dq, ddq, self.base.independent, out)
        if self._shaped:  # the Coulomb columns: the friction model's shape instead of sign
            shape = self.friction_model.shape(np.broadcast_to(dq, np.broadcast_shapes(np.shape(q), np.shape(dq),
                                                                                      np.shape(ddq))).reshape(-1, n))
            out[:, np.arange(n), self._fc_beta] = shape
        return out

    def regressor(self, q: Any, dq: Any, ddq: Any) -> Array:
        """Base regressor ``Y_b`` (..., n, b) (the Coulomb columns in the friction model's shape)."""
        q, dq, ddq = self._state("q", q), self._state("dq", dq), self._state("ddq", ddq)
        shape = np.broadcast_shapes(q.shape, dq.shape, ddq.shape)
        return self._base_regressor(q, dq, ddq).reshape(shape + (self.base.count,))

    def full_regressor(self, q: Any, dq: Any, ddq: Any, gravity: Any = None) -> Array:
        """``[Y_b | F]`` (..., n, b + e): the base regressor and the friction model's extra columns,
        so that ``tau = full_regressor @ parameters``. ``gravity``: the ``G(q)`` that load-dependent
        friction scales with (default: this model's; identification passes a reference model's)."""
        y = self.regressor(q, dq, ddq)
        if not self.friction_model.terms:
            return y
        dq = np.broadcast_to(self._state("dq", dq), y.shape[:-1])
        if self.friction_model.uses_load and gravity is None:
            gravity = self.gravity(np.broadcast_to(self._state("q", q), y.shape[:-1]))
        return np.concatenate([y, self.friction_model.columns(dq, gravity)], axis=-1)

    def inverse_dynamics(self, q: Any, dq: Any, ddq: Any) -> Array:
        """Motor torques ``tau_e`` (..., n) = ``Y_b beta + F f_e``."""
        q, dq, ddq = (self._state(n, x) for n, x in (("q", q), ("dq", dq), ("ddq", ddq)))
        return self._torques(q, dq, ddq) + self._extra(q, dq)

    def _extra(self, q: Array, dq: Array) -> Array:
        """The friction model's extra terms ``F(q, q') f_e`` (0 without extra terms)."""
        fm = self.friction_model
        if not fm.terms:
            return np.zeros(np.broadcast_shapes(np.shape(q), np.shape(dq)))
        gravity = self.gravity(q) if fm.uses_load else None
        return fm.extra_torque(self.friction_parameters, dq, gravity)

    def friction(self, dq: Any, q: Any = None) -> Array:
        """``t_f(q, q')`` of the friction model (zero for structures without friction); ``q`` is
        needed only by load-dependent friction."""
        dq = self._state("dq", dq)
        if self.friction_model.uses_load and q is None:
            raise ValueError("load-dependent friction needs the configuration q")
        extra = self._extra(self._state("q", q), dq) if self.friction_model.terms else 0.0
        return friction_torque(self._fv, self._fc, self._f0, dq, self.friction_model.shape(dq), extra)

    def _torques(self, q: Array, dq: Array, ddq: Array) -> Array:
        shape = np.broadcast_shapes(np.shape(q), np.shape(dq), np.shape(ddq))
        return (self._base_regressor(q, dq, ddq) @ self.beta).reshape(shape)

    def gravity(self, q: Any) -> Array:
        """``G(q)`` (..., n)."""
        q = self._state("q", q)
        zero = np.zeros_like(q)
        return self._torques(q, zero, zero) - self._f0

    def mass_matrix(self, q: Any) -> Array:
        """``M(q) = D(q) + I_a`` (..., n, n)."""
        q = self._state("q", q)
        n = self.n_joints
        # states (..., n + 1, n): zero acceleration, then each unit acceleration
        acc = np.concatenate([np.zeros((1, n)), np.eye(n)])
        qs = np.broadcast_to(q[..., None, :], q.shape[:-1] + (n + 1, n))
        acc = np.broadcast_to(acc, qs.shape)
        tau = self._torques(qs, np.zeros(qs.shape), acc)
        return np.swapaxes(tau[..., 1:, :] - tau[..., :1, :], -1, -2)

    def coriolis_vector(self, q: Any, dq: Any) -> Array:
        """``C(q, q') q'`` (..., n)."""
        q, dq = self._state("q", q), self._state("dq", dq)
        zero = np.zeros_like(q)
        return self._torques(q, dq, zero) - self._torques(q, zero, zero) - self._velocity_friction(dq)

    def _velocity_friction(self, dq: Array) -> Array:
        """``fv q' + fc s(q')``: the friction in ``Y_b beta`` that vanishes at rest."""
        return friction_torque(self._fv, self._fc, 0.0, dq, self.friction_model.shape(dq))

    def coriolis_matrix(self, q: Any, dq: Any) -> Array:
        """Christoffel-form ``C(q, q')`` (..., n, n), by polarisation of ``c(q, v)``."""
        q, dq = self._state("q", q), self._state("dq", dq)
        n = self.n_joints
        eye = np.eye(n)
        v = np.concatenate([dq[..., None, :] + eye, dq[..., None, :] - eye], axis=-2)  # (..., 2n, n)
        qs = np.broadcast_to(q[..., None, :], v.shape)
        zero = np.zeros(v.shape)
        # the inertial part only: friction (non-quadratic) and gravity cancel in the difference
        beta = self.beta * self._inertial_mask
        c = (self._base_regressor(qs, v, zero) @ beta).reshape(v.shape)
        return np.swapaxes((c[..., :n, :] - c[..., n:, :]) / 4.0, -1, -2)

    # -- single sample (what a 1 kHz controller calls each cycle) --------------------------------

    def _vector(self, name: str, x: Any) -> Array:
        # a C-contiguous writable float array as it is, anything else copied into one: one argument type for
        # the compiled code (a read-only or strided state would compile it again, inside a control loop)
        arr = x if type(x) is np.ndarray and x.dtype == _FLOAT and x.flags.carray else np.array(x, dtype=float)
        if arr.shape != self._single_shape:
            raise ValueError(f"{name} must have shape ({self.n_joints},), got {arr.shape}")
        # x . x is finite for every joint value (cheaper than isfinite().all() each control cycle)
        if not math.isfinite(arr.dot(arr)) and not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or infinite values")
        return arr

    def inverse_dynamics_single(self, q: Any, dq: Any, ddq: Any) -> Array:
        """``tau_e`` of one state (n,), through the compiled generated regressor when available.

        The buffers are the calling thread's (:meth:`workspace`)."""
        return self.inverse_dynamics_trusted(self._vector("q", q), self._vector("dq", dq), self._vector("ddq", ddq))

    def inverse_dynamics_trusted(self, q: Array, dq: Array, ddq: Array) -> Array:
        """:meth:`inverse_dynamics_single` of arrays the caller has checked (shape ``(n,)``, finite,
        float): no validation (a control cycle's guard, ~1 us instead of ~8 us)."""
        if self._module is None:
            return self._torques(q, dq, ddq) + self._extra(q, dq)
        out = self.workspace().out1
        self._module.regressor_single(q, dq, ddq, out)
        if self._shaped:
            out[np.arange(self.n_joints), self._fc_full] = self.friction_model.shape(dq)
        tau = out @ self._chi
        if self.friction_model.terms:
            gravity = None
            if self.friction_model.uses_load:
                self._module.regressor_single(q, np.zeros_like(q), np.zeros_like(q), out)
                gravity = out @ self._chi - self._f0
            tau = tau + self.friction_model.extra_torque(self.friction_parameters, dq, gravity)
        return tau

    def dynamics_terms(self, q: Any, dq: Any) -> tuple[Array, Array, Array]:
        """``(M(q), C(q, q') q', G(q))`` of one state in one compiled Newton-Euler call on the equivalent
        standard parameters (:func:`~.joint_space_terms.mass_coriolis_gravity`); read-only views of
        :meth:`packed_dynamics_terms`, kept for the next call on the same state (a control cycle's law
        and safety guard both need them), per thread (:meth:`workspace`)."""
        packed = self.packed_dynamics_terms(q, dq)
        n = self.n_joints
        return packed[:n], packed[n], packed[n + 1]

    def packed_dynamics_terms(self, q: Any, dq: Any) -> Array:
        """:meth:`dynamics_terms` packed in one read-only (n + 4, n) array, rows ``M``, ``C q'``, ``G``,
        ``q``, ``q'`` (what a compiled control kernel takes: the terms with their state), kept for the
        next call on the same state."""
        workspace = self.workspace()
        state = workspace.state
        if type(q) is np.ndarray and type(dq) is np.ndarray and q.dtype == _FLOAT and dq.dtype == _FLOAT \
                and q.shape == dq.shape == self._single_shape:
            key = q.tobytes() + dq.tobytes()
            kept_key, kept = workspace.kept_terms
            if key == kept_key:
                return kept  # the same bytes as the state before (the safety guard after its law)
        else:  # anything else is checked and converted first
            q, dq = self._vector("q", q), self._vector("dq", dq)
            key = q.tobytes() + dq.tobytes()
        state[0], state[1] = q, dq
        packed = mass_coriolis_gravity(self._geometry, self._links, self._rotor, self._gravity, state)  # checks finite
        packed.flags.writeable = False
        workspace.kept_terms = (key, packed)
        return packed

    def momentum_terms(self, q: Any, dq: Any) -> tuple[Array, Array, Array]:
        """``(M(q) q', C(q, q')^T q', G(q))`` of one state (the momentum and what a momentum observer
        needs of ``p' = tau + C^T q' - G - t_f + tau_ext``: ``M' = C + C^T``) in one compiled
        Newton-Euler call (:func:`~.joint_space_terms.momentum_coriolis_gravity`); friction is not part
        of them. Per-thread buffers (:meth:`workspace`)."""
        state = self.workspace().state
        state[0], state[1] = self._vector("q", q), self._vector("dq", dq)
        terms = momentum_coriolis_gravity(self._geometry, self._links, self._rotor, self._gravity, state)
        return terms[0], terms[1], terms[2]

    def forward_dynamics(self, q: Any, dq: Any, tau: Any) -> Array:
        """``q'' = M^-1 (tau - C q' - G - t_f)``; raises :class:`PhysicalConsistencyError` if M is not PD."""
        q, dq, tau = self._state("q", q), self._state("dq", dq), self._state("tau", tau)
        zero = np.zeros_like(q)
        bias = self._torques(q, dq, zero) + self._extra(q, dq)  # C q' + G + t_f
        m = self.mass_matrix(q)
        try:
            chol = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            raise PhysicalConsistencyError("mass matrix not positive definite: the parameters are not "
                                           "physically consistent") from None
        rhs = (tau - bias)[..., None]
        y = np.linalg.solve(chol, rhs)
        return np.linalg.solve(np.swapaxes(chol, -1, -2), y)[..., 0]

    def check_consistency(self, q_samples: Any) -> None:
        """Raise :class:`PhysicalConsistencyError` naming a configuration where M is not positive definite."""
        q = self._state("q", q_samples).reshape(-1, self.n_joints)
        eig = np.linalg.eigvalsh(self.mass_matrix(q))[:, 0]
        bad = np.flatnonzero(eig <= 0)
        if bad.size:
            k = int(bad[0])
            raise PhysicalConsistencyError(
                f"mass matrix not positive definite at q = {np.round(q[k], 4).tolist()} (smallest eigenvalue "
                f"{eig[k]:.3g}) in {bad.size} of {len(q)} configurations: the parameters are not physically consistent")
