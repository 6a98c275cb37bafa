"""Joint friction: the one home of its structure, used by the model, the regressors' consumers, the
control laws and the simulator.

Seed 002 (2.58) models the friction of joint j as ``t_f = fv q' + fc sign(q') + f0``. Real youBot
drives (``../shared/data/youbot_real``, issue 13) need more: a Coulomb term that is smooth near
zero velocity, and one that grows with the gearbox load. A :class:`FrictionModel` is

``t_f,j = fv_j q'_j + fc_j s_j + f0_j + fa_j |s_j| + fs_j exp(-(q'_j / vs_j)^2) s_j + fl_j |G_j(q)| s_j``

with the Coulomb shape ``s_j = tanh(q'_j / eps_j)`` (``eps_j = 0``: ``sign(q'_j)``, the seed's
term). ``fv, fc, f0`` are the drive terms of the 14 n standard parameters (:mod:`.parameters`);
the optional **extra terms**, per joint and in the order ``fa, fs, fl``, are:

* ``asymmetric`` ``fa`` [N m]: the Coulomb level differs with the direction, ``fc + fa`` moving
  up, ``fc - fa`` moving down;
* ``stribeck`` ``fs`` [N m] (>= 0): the static level above Coulomb, decaying with the Stribeck
  velocity ``vs_j`` [rad/s];
* ``load`` ``fl`` [-] (>= 0): load-dependent Coulomb friction, proportional to the gravity torque
  ``|G_j(q)|`` the gearbox carries (on the real arm, the largest single gain: held-out error on
  moving samples 41 % -> 29 %).

A joint may carry only some of the terms (``joint_terms``: e.g. load-dependent friction on the
joints that carry gravity, none on the others); ``identify`` chooses them per joint from the data
(:mod:`..identification.estimation.friction_fit`).

Every term is linear in its parameter once the shape constants ``eps`` and ``vs`` are fixed, so
the extra terms are extra columns of the regressor (:meth:`FrictionModel.columns`), identified with
the rest. All extra terms vanish at rest (``s = 0``), so ``G(q)`` and ``M(q)`` do not depend on them.

The formula itself is written once, in the functions :func:`coulomb_shape`, :func:`term_feature`
and :func:`friction_torque`: the model, the control terms (:mod:`..control.terms`) and the
simulator's true robot (:mod:`..sim.true_robot`, whose asymmetric term has a shape of its own)
evaluate their friction through them. :mod:`.screw` keeps its own ``fv q' + fc sign(q') + f0``: it is
the independent second formulation the tests check the model against.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["EXTRA_TERMS", "EXTRA_SYMBOLS", "NON_NEGATIVE_EXTRAS", "DEFAULT_EPS", "DEFAULT_STRIBECK_VELOCITY",
           "FRICTION_ROWS", "FrictionError", "FrictionModel", "coulomb_shape", "friction_torque", "kinetic_levels",
           "smooth_friction_torque", "term_feature"]

Array = NDArray[np.float64]

EXTRA_TERMS: tuple[str, ...] = ("asymmetric", "stribeck", "load")
EXTRA_SYMBOLS = {"asymmetric": "fa", "stribeck": "fs", "load": "fl"}
NON_NEGATIVE_EXTRAS = ("fs", "fl")
DEFAULT_EPS = 0.05  # [rad/s] smooth Coulomb velocity scale (real youBot: 0.02-0.2 all within 0.2 points)
DEFAULT_STRIBECK_VELOCITY = 0.1  # [rad/s]
#: rows of :meth:`FrictionModel.rows`: what a compiled kernel needs of a smooth friction model, per joint
FRICTION_ROWS = ("fv", "fc", "f0", "fa", "fs", "fl", "eps", "vs")
_FV, _FC, _F0, _FA, _FS, _FL, _EPS, _VS = (FRICTION_ROWS.index(k) for k in FRICTION_ROWS)


def coulomb_shape(dq: Any, eps: Any) -> Array:
    """The Coulomb shape ``s = tanh(q' / eps)``, ``sign(q')`` where ``eps = 0`` (broadcast)."""
    dq = np.asarray(dq, dtype=float)
    eps = np.asarray(eps, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        smooth = np.tanh(dq / np.where(eps > 0, eps, 1.0))
    return np.where(eps > 0, smooth, np.sign(dq))


def term_feature(term: str, dq: Array, shape: Array, stribeck_velocity: Any = None, load: Array | None = None) -> Array:
    """What the extra ``term``'s parameter multiplies (module docstring): ``|s|`` (asymmetric),
    ``exp(-(q'/vs)^2) s`` (stribeck), ``|L| s`` (load, ``L`` the load torque, e.g. ``G(q)``)."""
    if term == "asymmetric":
        return np.abs(shape)
    if term == "stribeck":
        return np.exp(-(dq / np.asarray(stribeck_velocity)) ** 2) * shape
    if term == "load":
        if load is None:
            raise FrictionError("load-dependent friction needs the gravity torque G(q)")
        return np.abs(load) * shape
    raise FrictionError(f"unknown friction term '{term}'; known: {', '.join(EXTRA_TERMS)}")


def friction_torque(viscous: Any, coulomb: Any, offset: Any, dq: Array, shape: Array, extra: Any = 0.0) -> Array:
    """``t_f = fv q' + fc s + f0`` plus the extra terms' torque ``extra``."""
    return viscous * dq + coulomb * shape + offset + extra


# the same formula for compiled kernels (numba functions call numba functions); compiled at their first call
friction_torque_compiled = numba.njit(cache=True, nogil=True)(friction_torque)


@numba.njit(cache=True, nogil=True)
def smooth_friction_torque(rows: Array, dq: Array, gravity: Array) -> Array:
    """The whole ``t_f`` (module docstring) of one state (n,), compiled, for a model whose Coulomb
    shape is smooth on every joint (a controller's): ``rows`` of :meth:`FrictionModel.rows`, ``gravity``
    ``G(q)`` (read by the load term only). The terms are those of :func:`term_feature` (a test holds
    the two equal)."""
    n = dq.shape[0]
    out = np.empty(n)
    for j in range(n):
        s = math.tanh(dq[j] / rows[_EPS, j])
        extra = rows[_FA, j] * abs(s) + rows[_FS, j] * math.exp(-(dq[j] / rows[_VS, j]) ** 2) * s \
            + rows[_FL, j] * abs(gravity[j]) * s
        out[j] = friction_torque_compiled(rows[_FV, j], rows[_FC, j], rows[_F0, j], dq[j], s, extra)
    return out


@numba.njit(cache=True, nogil=True)
def kinetic_levels(rows: Array, gravity: Array) -> Array:
    """(2, n): the kinetic Coulomb level of ``t_f`` moving up and down, ``fc + fl |G| +- fa`` (at
    least 0; without the Stribeck excess, which decays, and the viscous term, which grows with the
    speed), of ``rows`` (:meth:`FrictionModel.rows`) and ``gravity`` ``G(q)`` (read by the load term)."""
    n = gravity.shape[0]
    out = np.empty((2, n))
    for j in range(n):
        level = rows[_FC, j] + rows[_FL, j] * abs(gravity[j])
        out[0, j] = max(level + rows[_FA, j], 0.0)
        out[1, j] = max(level - rows[_FA, j], 0.0)
    return out


class FrictionError(ValueError):
    """A friction model that cannot be built (unknown term, bad shape constant)."""


def _per_joint(values: Any, n: int, name: str, positive: bool) -> tuple[float, ...]:
    arr = np.broadcast_to(np.asarray(values, dtype=float), (n,)) if np.ndim(values) == 0 else np.asarray(values, float)
    if arr.shape != (n,):
        raise FrictionError(f"friction {name}: expected {n} values, got {arr.size}")
    bad = ~np.isfinite(arr) | ((arr <= 0) if positive else (arr < 0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        kind = "positive" if positive else "non-negative"
        raise FrictionError(f"friction {name} of joint {j + 1}: expected a finite {kind} velocity [rad/s], "
                            f"got {arr[j]!r}")
    return tuple(float(v) for v in arr)


def _known_terms(terms: Any, name: str) -> tuple[str, ...]:
    """``terms`` in :data:`EXTRA_TERMS` order; :class:`FrictionError` naming an unknown one."""
    if isinstance(terms, str) or not all(isinstance(t, str) for t in terms):
        raise FrictionError(f"friction {name}: expected a list of names among {', '.join(EXTRA_TERMS)}")
    unknown = [t for t in terms if t not in EXTRA_TERMS]
    if unknown:
        raise FrictionError(f"friction {name}: unknown {', '.join(map(repr, unknown))} (known: "
                            f"{', '.join(EXTRA_TERMS)})")
    return tuple(t for t in EXTRA_TERMS if t in terms)


@dataclass(frozen=True)
class FrictionModel:
    """The friction structure of ``n_joints`` joints (module docstring): ``eps`` per joint (0: sign),
    the extra ``terms`` (a subset of :data:`EXTRA_TERMS`, kept in that order), the Stribeck
    velocities ``stribeck_velocity`` per joint, and ``joint_terms``: the terms of each joint (default:
    ``terms`` on every joint; when given, ``terms`` becomes their union)."""

    n_joints: int
    eps: tuple[float, ...] = ()
    terms: tuple[str, ...] = ()
    stribeck_velocity: tuple[float, ...] = field(default=())
    joint_terms: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        n = self.n_joints
        object.__setattr__(self, "eps", _per_joint(self.eps if self.eps != () else 0.0, n, "eps", positive=False))
        object.__setattr__(self, "stribeck_velocity", _per_joint(
            self.stribeck_velocity if self.stribeck_velocity != () else DEFAULT_STRIBECK_VELOCITY, n,
            "stribeck_velocity", positive=True))
        if self.joint_terms != ():
            if len(self.joint_terms) != n:
                raise FrictionError(f"friction joint_terms: expected {n} lists of terms, got {len(self.joint_terms)}")
            joint_terms = tuple(_known_terms(terms, f"joint_terms of joint {j + 1}")
                                for j, terms in enumerate(self.joint_terms))
            object.__setattr__(self, "terms", tuple(t for t in EXTRA_TERMS if any(t in jt for jt in joint_terms)))
        else:
            object.__setattr__(self, "terms", _known_terms(self.terms, "terms"))
            joint_terms = (self.terms,) * n
        object.__setattr__(self, "joint_terms", joint_terms)
        # per joint, the indices into ``terms`` of its own terms; and the (joint, term) cell of each extra
        # parameter in :meth:`extra_names` order (derived once: :meth:`extra_torque` runs every control cycle)
        active = tuple(tuple(self.terms.index(t) for t in terms) for terms in joint_terms)
        object.__setattr__(self, "_active", active)
        object.__setattr__(self, "_smooth", np.array(self.eps) if all(e > 0 for e in self.eps) else None)
        object.__setattr__(self, "_cells", (np.array([j for j, a in enumerate(active) for _ in a], dtype=int),
                                            np.array([k for a in active for k in a], dtype=int)))

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def seed(cls, n_joints: int) -> "FrictionModel":
        """Seed 002's ``fv q' + fc sign(q') + f0`` (what model files without a friction block hold)."""
        return cls(n_joints)

    @classmethod
    def real_arm(cls, n_joints: int, eps: Any = DEFAULT_EPS) -> "FrictionModel":
        """Smooth Coulomb plus load-dependent Coulomb friction (the shared real runs' structure, issue 13):
        where ``identify`` starts before it chooses the structure from the data (issue 31)."""
        return cls(n_joints, eps, ("load",))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any] | None, n_joints: int) -> "FrictionModel":
        """Inverse of :meth:`to_dict`; ``None`` (no friction block): :meth:`seed`."""
        if doc is None:
            return cls.seed(n_joints)
        if not isinstance(doc, Mapping):
            raise FrictionError("friction: expected a mapping with eps, terms and stribeck_velocity")
        terms = doc.get("terms", [])
        joint_terms = doc.get("joint_terms", [])
        if not isinstance(joint_terms, list):
            raise FrictionError("friction joint_terms: expected one list of terms per joint")
        for value, name in ((terms, "terms"), *((jt, "joint_terms") for jt in joint_terms)):
            if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                raise FrictionError(f"friction {name}: expected a list of names among {', '.join(EXTRA_TERMS)}")
        try:
            return cls(n_joints, doc.get("eps", 0.0), tuple(terms),
                       doc.get("stribeck_velocity", DEFAULT_STRIBECK_VELOCITY), tuple(map(tuple, joint_terms)))
        except (TypeError, ValueError) as exc:
            raise FrictionError(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the ``friction`` block of a model file, without the parameter values)."""
        doc = {"eps": list(self.eps), "terms": list(self.terms), "stribeck_velocity": list(self.stribeck_velocity)}
        if not self.uniform:
            doc["joint_terms"] = [list(terms) for terms in self.joint_terms]
        return doc

    # -- structure ------------------------------------------------------------------------------

    @property
    def is_seed(self) -> bool:
        """The seed's structure: sign Coulomb, no extra terms."""
        return not self.terms and not any(self.eps)

    @property
    def uniform(self) -> bool:
        """Every joint carries the same extra terms."""
        return all(terms == self.terms for terms in self.joint_terms)

    @property
    def uses_load(self) -> bool:
        return "load" in self.terms

    @property
    def extra_count(self) -> int:
        return sum(len(terms) for terms in self.joint_terms)

    def extra_names(self) -> tuple[str, ...]:
        """Names of the extra parameters, joint-major: ``fa1, fs1, fl1, fa2, ...`` (present terms only)."""
        return tuple(f"{EXTRA_SYMBOLS[t]}{j}" for j, terms in enumerate(self.joint_terms, start=1) for t in terms)

    def describe(self) -> str:
        """One line for reports: e.g. ``tanh Coulomb (eps 0.05 rad/s) + load``, or with per joint
        terms ``sign Coulomb ... + per joint: 1 none, 2 load, ...``."""
        eps = set(self.eps)
        shape = "sign Coulomb" if eps == {0.0} else (
            f"tanh Coulomb (eps {next(iter(eps)):g} rad/s)" if len(eps) == 1 else
            f"Coulomb shape eps {', '.join(f'{e:g}' for e in self.eps)} rad/s (0: sign, else tanh)")
        stribeck = [f"{j} {v:g}" for j, (v, terms) in enumerate(zip(self.stribeck_velocity, self.joint_terms), start=1)
                    if "stribeck" in terms]
        velocities = f" (Stribeck velocity [rad/s] of joint {', '.join(stribeck)})" if stribeck else ""
        if self.uniform:
            return " + ".join([f"viscous + {shape} + offset", *self.terms]) + velocities
        per_joint = ", ".join(f"{j} {'+'.join(terms) or 'none'}" for j, terms in enumerate(self.joint_terms, start=1))
        return f"viscous + {shape} + offset + per joint: {per_joint}{velocities}"

    # -- evaluation ------------------------------------------------------------------------------

    def shape(self, dq: Any) -> Array:
        """The Coulomb shape ``s = tanh(q' / eps)`` per joint (``sign`` where ``eps = 0``), (..., n)."""
        if self._smooth is not None:  # every joint smooth (a controller's friction): one ufunc, each control cycle
            return np.tanh(np.asarray(dq, dtype=float) / self._smooth)
        return coulomb_shape(dq, self.eps)

    def _features(self, dq: Array, load: Array | None) -> Array:
        """(..., n, k) per joint values of the k extra terms' columns."""
        s = self.shape(dq)
        cols = [term_feature(term, dq, s, self.stribeck_velocity, load) for term in self.terms]
        return np.stack(cols, axis=-1) if cols else np.zeros(dq.shape + (0,))

    def joint_values(self, parameters: Array) -> Array:
        """(n, len(terms)): each joint's value of each extra term, 0 for a term the joint does not carry,
        from ``parameters`` (:meth:`extra_names` order)."""
        values = np.zeros((self.n_joints, len(self.terms)))
        values[self._cells] = np.asarray(parameters, dtype=float)
        return values

    def columns(self, dq: Any, gravity: Any = None) -> Array:
        """Regressor columns of the extra parameters, (..., n, e) in :meth:`extra_names` order: row j
        holds joint j's own terms in its block of columns (block diagonal). ``gravity``: ``G(q)``
        (..., n), needed by ``load``."""
        dq = np.asarray(dq, dtype=float)
        features = self._features(dq, None if gravity is None else np.asarray(gravity, dtype=float))
        out = np.zeros(dq.shape + (self.extra_count,))
        start = 0
        for j, active in enumerate(self._active):
            out[..., j, start : start + len(active)] = features[..., j, active]
            start += len(active)
        return out

    def extra_torque(self, parameters: Array, dq: Any, gravity: Any = None) -> Array:
        """The extra terms' torque (..., n) with ``parameters`` (n k, :meth:`extra_names` order)."""
        dq = np.asarray(dq, dtype=float)
        if not self.terms:
            return np.zeros(dq.shape)
        features = self._features(dq, None if gravity is None else np.asarray(gravity, dtype=float))
        return np.einsum("...jk,jk->...j", features, self.joint_values(parameters))

    def torque(self, viscous: Array, coulomb: Array, offset: Array, parameters: Array, dq: Any,
               gravity: Any = None) -> Array:
        """The whole ``t_f`` (module docstring), (..., n)."""
        dq = np.asarray(dq, dtype=float)
        return friction_torque(viscous, coulomb, offset, dq, self.shape(dq), self.extra_torque(parameters, dq, gravity))

    def rows(self, viscous: Array, coulomb: Array, offset: Array, parameters: Array) -> Array:
        """The (8, n) values of :data:`FRICTION_ROWS` (an extra term a joint does not carry: 0) for
        :func:`smooth_friction_torque`; :class:`FrictionError` unless every joint's shape is smooth."""
        if self._smooth is None:
            raise FrictionError("compiled friction needs a smooth Coulomb shape (eps > 0) on every joint")
        values = self.joint_values(parameters)
        extra = [values[:, self.terms.index(t)] if t in self.terms else np.zeros(self.n_joints) for t in EXTRA_TERMS]
        return np.ascontiguousarray(np.stack([viscous, coulomb, offset, *extra, self._smooth,
                                              np.array(self.stribeck_velocity)]), dtype=float)

    def check_parameters(self, parameters: Sequence[float]) -> Array:
        """``parameters`` as an (n k,) finite array; :class:`FrictionError` otherwise."""
        arr = np.asarray(parameters, dtype=float).reshape(-1)
        if arr.shape != (self.extra_count,):
            raise FrictionError(f"friction parameters: expected {self.extra_count} values "
                                f"({', '.join(self.extra_names()) or 'none'}), got {arr.size}")
        if not np.isfinite(arr).all():
            raise FrictionError("friction parameters contain NaN or infinite values")
        return arr
