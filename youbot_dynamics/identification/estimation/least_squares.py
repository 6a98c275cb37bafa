"""Estimators of the base parameters from the stacked system ``A beta = y`` (seed 002 (3.10)).

All solves go through the singular value decomposition of the column-scaled matrix
``A_s = A D^-1`` (``D`` the column norms): ``A_s = U S V^T``, ``beta = D^-1 V S^-1 U^T y``
(computed as ``A_s = Q R``, ``R = U_R S V^T``, ``U = Q U_R``: the tall factorisation is a QR). This is
the least-squares solution of (3.10) computed stably (never through the normal equations
``A^T A``, whose condition number is the square of ``A``'s), and it gives in the same pass

* the **condition number** ``cond(A_s) = s_max / s_min`` of the scaled data (its columns that are
  not zero: a zero column is reported as unidentifiable instead);
* the **covariance** ``cov(beta) = sigma^2 D^-1 V S^-2 V^T D^-1`` with
  ``sigma^2 = ||y - A beta||^2 / (m - b)``, and the **relative standard deviation**
  ``%sigma_k = 100 sqrt(cov_kk) / |beta_k|`` of each base parameter (Gautier's criterion: above
  a few tens of percent the parameter is poorly identified by these data: above
  :data:`UNDETERMINED_RELATIVE_STD` it is reported as **undetermined**,
  :attr:`IdentificationResult.undetermined`);
* the **unidentifiable** parameters: columns that are zero in the data, and the parameters with
  a large component in the right singular vectors of ``s < tolerance s_max``.

Estimators:

* :func:`ols`: ordinary least squares.
* :func:`wls`: weighted least squares, each row of joint j divided by that joint's noise
  ``sigma_j``, estimated from the residuals ``sigma_j^2 = ||r_j||^2 / (m_j (1 - b / m))`` and
  re-estimated from the weighted solution until it settles.
* :func:`consistent`: the physically consistent estimate (Wensing, Kim, Slotine 2017; Sousa,
  Cortesao 2014): a semidefinite program over the 14 n standard parameters ``chi`` with
  ``beta = K chi``:
  ``min ||W (A K chi - y)||^2 + rho ||(chi - chi_0) / s||^2`` subject to, per link,
  the pseudo-inertia ``J = [[Sigma, h], [h^T, m]] >= margin diag(s_I, s_I, s_I, s_m)`` with the
  second moments ``Sigma = 1/2 tr(I) E - I`` (``I`` the inertia about the frame origin,
  ``h = m c``; ``J > 0`` iff a positive mass density realises the link), and ``Ia, fv, fc >= 0``.
  ``W`` holds the WLS weights; the data enter through the triangular factor of ``W A = Q R``
  (``b x b``), so the size of the program does not grow with the recording. The small
  regularisation towards the prior ``chi_0`` (the nominal model) selects one solution where the
  data do not determine the parameters, which makes the estimate usable on poor data. With the WLS
  weights the residual has unit variance, so ``rho`` is the cost of a deviation of one prior scale
  ``s`` in units of noise variance: a direction known to within ``sigma_x`` (in units of ``s``) is
  pulled towards the prior by the fraction ``rho sigma_x^2 / (1 + rho sigma_x^2)``.

The friction model's extra terms (:mod:`..dynamics.friction`: ``fa, fs, fl``) are extra columns
after the base parameters; every estimator identifies them with the rest (their names in
``extra``), the consistent one with ``fs, fl >= 0`` and prior 0.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...dynamics.base_parameters import BaseParameters
from ...dynamics.friction import NON_NEGATIVE_EXTRAS
from ...dynamics.parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, PSEUDO_INERTIA_MAP, structure_mask
from ..io.dataset import IdentificationError
from .processing import Observation, stack_rows

__all__ = ["METHODS", "UNDETERMINED_RELATIVE_STD", "IdentificationResult", "ols", "wls", "consistent", "estimate"]

Array = NDArray[np.float64]

METHODS = ("ols", "wls", "consistent")
RANK_TOLERANCE = 1e-6  # s / s_max below which a direction of the scaled data counts as missing
LENGTH_SCALE = 0.1  # [m] typical link size, scales first and second moments in the consistent estimator
DRIVE_SCALE = {"Ia": 0.01, "fv": 0.1, "fc": 0.1, "f0": 0.1}  # typical drive terms, SI units
# rho of the consistent estimator: a small pull, where the data say nothing. On the real arm, leave
# one run out, moving rows: rho 1e-3 27.9 % (max 30.6), 0.1 26.3 % (max 31.8), 1 27.3 % (max 33.5)
PRIOR_WEIGHT = 1e-3
PRIOR_WEIGHTS = (1e-3, 0.1, 1.0, 10.0)  # candidates of identify --prior-weight auto (cross-validated)
EXTRA_SCALE = 0.1  # typical extra friction term: 0.1 N m (fa, fs), 0.1 N m per N m of load (fl)
# [%] relative standard deviation above which the data leave a parameter undetermined (Gautier's
# criterion: its confidence interval, +-2 sigma, then spans more than half of its value)
UNDETERMINED_RELATIVE_STD = 25.0


@dataclass(frozen=True)
class IdentificationResult:
    """Estimated base parameters and their quality.

    ``std``: standard deviation of each base parameter; ``noise_std``: per-joint residual std of the
    (filtered) torques [N m]; ``n_samples``/``n_rows``: samples and equations used;
    ``standard``: the 14 n standard vector (consistent estimator only); ``unidentifiable``: names
    of base parameters the data do not determine (only the consistent estimator accepts them);
    ``solver_status``: how the semidefinite program ended (consistent estimator only);
    ``torque_std``: what one standard deviation of each parameter changes in the torques it enters
    (RMS over the data, the joint where it is largest) [N m]: an undetermined parameter that moves
    the torques by a negligible amount does not matter for prediction.
    """

    method: str
    names: tuple[str, ...]
    beta: Array
    std: Array
    condition_number: float
    noise_std: Array
    n_samples: int
    n_rows: int
    standard: Array | None = None
    unidentifiable: tuple[str, ...] = field(default=())
    solver_status: str = ""
    torque_std: Array | None = None  # [N m] per parameter: std times its column's largest per-joint RMS

    @property
    def relative_std_percent(self) -> Array:
        """``100 std / |beta|`` (infinite where beta is exactly 0)."""
        with np.errstate(divide="ignore"):
            return np.where(self.beta != 0, 100.0 * self.std / np.abs(self.beta), np.inf)

    @property
    def undetermined(self) -> dict[str, float]:
        """The parameters whose relative standard deviation exceeds :data:`UNDETERMINED_RELATIVE_STD`
        (and those the data do not show at all: infinite), with it [%], largest first."""
        rel = self.relative_std_percent
        bad = [k for k in np.argsort(-rel)
               if rel[k] > UNDETERMINED_RELATIVE_STD or self.names[k] in self.unidentifiable]
        return {self.names[k]: float(rel[k]) for k in bad}

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/YAML)."""
        doc: dict[str, Any] = {
            "method": self.method,
            "condition_number": float(self.condition_number),
            "n_samples": self.n_samples,
            "n_equations": self.n_rows,
            "residual_noise_std": [float(v) for v in self.noise_std],
            "parameters": [{"name": n, "value": float(v), "std": float(s), "relative_std_percent": float(r),
                            **({} if self.torque_std is None else {"torque_of_one_std_nm": float(self.torque_std[k])})}
                           for k, (n, v, s, r) in enumerate(zip(self.names, self.beta, self.std,
                                                                self.relative_std_percent))],
            "unidentifiable": list(self.unidentifiable),
            "undetermined": {"threshold_relative_std_percent": UNDETERMINED_RELATIVE_STD,
                             "parameters": self.undetermined},
        }
        if self.standard is not None:
            doc["standard_parameters"] = [float(v) for v in self.standard]
            doc["solver_status"] = self.solver_status
        return doc


@dataclass(frozen=True)
class _Solution:
    beta: Array
    cov_unit: Array  # D^-1 V S^-2 V^T D^-1: the covariance for unit noise
    condition_number: float
    missing: tuple[int, ...]  # indices of undetermined base parameters


def _solve(a: Array, y: Array) -> _Solution:
    """Least squares through the SVD of the column-scaled ``a`` (module docstring); directions with
    ``s < RANK_TOLERANCE s_max`` are dropped (minimum-norm solution) and reported."""
    norms = np.linalg.norm(a, axis=0)
    zero = norms <= 1e-12 * max(float(norms.max()), np.finfo(float).tiny)
    d = np.where(zero, 1.0, norms)
    q, r = np.linalg.qr(a / d)  # A_s = Q R, then R = U_r S V^T: the SVD of A_s with U = Q U_r
    u, s, vt = np.linalg.svd(r)
    keep = s > RANK_TOLERANCE * s[0]
    weak = vt[~keep]  # right singular vectors of the missing directions
    missing = set(np.flatnonzero(zero)) | set(np.flatnonzero((weak**2).sum(axis=0) > 0.1))
    v, s_k = vt[keep].T, s[keep]
    beta = (v @ ((u[:, keep].T @ (q.T @ y)) / s_k)) / d
    cov = (v / s_k**2) @ v.T / np.outer(d, d)
    s_data = np.linalg.svd(r[:, ~zero], compute_uv=False) if zero.any() else s  # columns the data show
    cond = float(s_data[0] / s_data[-1]) if s_data.size and s_data[-1] > 0 else float("inf")
    return _Solution(beta, cov, cond, tuple(sorted(int(k) for k in missing)))


def _joint_noise(residual: Array, joint: NDArray[np.int64], n_joints: int, b: int) -> Array:
    """``sigma_j = sqrt(||r_j||^2 / (m_j (1 - b / m)))`` per joint."""
    m = residual.size
    ss = np.bincount(joint, weights=residual**2, minlength=n_joints)
    count = np.bincount(joint, minlength=n_joints)
    return np.sqrt(ss / np.maximum(count * (1.0 - b / m), 1.0))


def _system(observations: Sequence[Observation], base: BaseParameters,
            extra: Sequence[str]) -> tuple[Array, Array, NDArray[np.int64]]:
    a, y, joint = stack_rows(observations)
    count = base.count + len(extra)
    if a.shape[1] != count:
        raise IdentificationError(f"the observations have {a.shape[1]} regressor columns, the model {count} "
                                  f"parameters")
    if y.size < 3 * count:
        raise IdentificationError(f"too few equations: {y.size} for {count} parameters (need {3 * count})")
    return a, y, joint


def _result(method: str, base: BaseParameters, extra: Sequence[str], observations: Sequence[Observation], a: Array,
            y: Array, joint: NDArray[np.int64], weights: Array, strict: bool, beta: Array | None = None,
            standard: Array | None = None, solver_status: str = "") -> IdentificationResult:
    """The result of ``beta`` (default: the weighted least-squares solution) with its statistics."""
    sol = _solve(a * weights[:, None], y * weights)
    names = tuple(base.names) + tuple(extra)
    missing = tuple(names[k] for k in sol.missing)
    # an extra friction term the data cannot show (load friction of a joint that carries no gravity,
    # the youBot's joint 1) is set to 0 and reported; a missing base parameter is an error
    if any(k < base.count for k in sol.missing) and strict:
        raise IdentificationError(
            f"the data are not exciting enough: they do not determine the base parameters {', '.join(missing)} "
            f"(condition number {sol.condition_number:.3g}); move every joint through a wider range of positions, "
            f"velocities and accelerations, or use --method consistent")
    beta = sol.beta if beta is None else beta
    residual = y - a @ beta
    m, b = y.size, len(names)
    sigma2 = float(np.sum((residual * weights) ** 2)) / (m - b)
    n = observations[0].Y.shape[1]
    std = np.sqrt(np.maximum(np.diag(sol.cov_unit) * sigma2, 0.0))
    squares = np.zeros((n, a.shape[1]))
    np.add.at(squares, joint, a**2)
    column_rms = np.sqrt(squares / np.maximum(np.bincount(joint, minlength=n), 1)[:, None]).max(axis=0)
    return IdentificationResult(
        method=method, names=names, beta=beta, std=std, torque_std=std * column_rms,
        condition_number=sol.condition_number, noise_std=_joint_noise(residual, joint, n, b),
        n_samples=sum(o.n_samples for o in observations), n_rows=m, standard=standard, unidentifiable=missing,
        solver_status=solver_status)


def ols(observations: Sequence[Observation], base: BaseParameters, extra: Sequence[str] = ()) -> IdentificationResult:
    """Ordinary least squares; :class:`IdentificationError` names unidentifiable parameters."""
    a, y, joint = _system(observations, base, extra)
    return _result("ols", base, extra, observations, a, y, joint, np.ones(y.size), strict=True)


def _wls_weights(a: Array, y: Array, joint: NDArray[np.int64], b: int, iterations: int) -> Array:
    """Row weights ``1 / sigma_j`` from residuals, re-estimated until the sigmas change < 1 %."""
    n = int(joint.max()) + 1
    weights = np.ones(y.size)
    sigma = np.ones(n)
    for _ in range(iterations):
        sol = _solve(a * weights[:, None], y * weights)
        new = _joint_noise(y - a @ sol.beta, joint, n, b)
        new = np.where(new > 0, new, max(float(new.max()), 1e-12))  # an exactly fitted joint: weight as the worst
        done = np.allclose(new / new.max(), sigma / sigma.max(), rtol=1e-2, atol=0)
        sigma, weights = new, 1.0 / new[joint]
        if done:
            break
    return weights


def wls(observations: Sequence[Observation], base: BaseParameters, extra: Sequence[str] = (),
        iterations: int = 5) -> IdentificationResult:
    """Weighted least squares with per-joint noise (module docstring)."""
    a, y, joint = _system(observations, base, extra)
    weights = _wls_weights(a, y, joint, a.shape[1], iterations)
    return _result("wls", base, extra, observations, a, y, joint, weights, strict=True)


def _prior_scale(prior: Array, n_joints: int) -> Array:
    """Typical magnitude of each standard parameter: the prior mass ``m0`` of the link, ``m0 L``,
    ``m0 L^2`` (``L`` = :data:`LENGTH_SCALE`) and :data:`DRIVE_SCALE`."""
    scale = np.empty(n_joints * PARAMETERS_PER_JOINT)
    for i in range(n_joints):
        block = scale[i * PARAMETERS_PER_JOINT : (i + 1) * PARAMETERS_PER_JOINT]
        m0 = max(float(prior[i * PARAMETERS_PER_JOINT]), 1e-3)
        block[:] = [m0] + [m0 * LENGTH_SCALE] * 3 + [m0 * LENGTH_SCALE**2] * 6 + list(DRIVE_SCALE.values())
    return scale


def consistent(observations: Sequence[Observation], base: BaseParameters, prior: Array, extra: Sequence[str] = (),
               margin: float = 1e-4, regularization: float = PRIOR_WEIGHT, iterations: int = 5) -> IdentificationResult:
    """Physically consistent estimate (module docstring); ``prior``: the 14 n standard vector of the
    nominal model; ``margin`` the relative positive-definiteness margin; needs ``cvxpy``."""
    import cvxpy as cp

    a, y, joint = _system(observations, base, extra)
    n, e = base.n_joints, len(extra)
    weights = _wls_weights(a, y, joint, a.shape[1], iterations)
    aw, yw = a * weights[:, None], y * weights
    q, r = np.linalg.qr(aw)
    z = q.T @ yw
    dof = y.size - a.shape[1]  # the weighted residual has unit variance: the fit term is about dof
    prior = np.concatenate([np.asarray(prior, dtype=float), np.zeros(e)])  # extra terms: prior 0
    scale = np.concatenate([_prior_scale(prior, n), np.full(e, EXTRA_SCALE)])
    mask = np.concatenate([structure_mask(n, base.structure), np.ones(e, dtype=bool)])
    x = cp.Variable(prior.size)
    chi = prior + cp.multiply(scale, x)
    constraints = [x[~mask] == 0] if not mask.all() else []
    for i in range(n):
        offset = i * PARAMETERS_PER_JOINT
        link = chi[offset : offset + len(LINK_PARAMETERS)]
        j = cp.reshape(PSEUDO_INERTIA_MAP.reshape(16, -1) @ link, (4, 4), order="C")
        s = scale[offset]
        constraints.append(j >> margin * np.diag([s * LENGTH_SCALE**2] * 3 + [s]))
        for name in ("Ia", "fv", "fc"):
            k = offset + len(LINK_PARAMETERS) + list(DRIVE_SCALE).index(name)
            if mask[k]:
                constraints.append(chi[k] >= 0)
    standard_count = n * PARAMETERS_PER_JOINT
    for k, name in enumerate(extra):
        if name.rstrip("0123456789") in NON_NEGATIVE_EXTRAS:
            constraints.append(chi[standard_count + k] >= 0)
    k_full = np.zeros((base.count + e, standard_count + e))  # [beta; f_e] = [[K, 0], [0, I]] [chi; f_e]
    k_full[: base.count, :standard_count] = base.K
    k_full[base.count :, standard_count:] = np.eye(e)
    fit = r @ k_full  # ||W (A K chi - y)||^2 = ||R K chi - z||^2 + const, in the variables x:
    objective = (cp.sum_squares((fit * scale) @ x - (z - fit @ prior)) + regularization * cp.sum_squares(x)) / dof
    problem = cp.Problem(cp.Minimize(objective), constraints)
    status = solve_program(problem)
    if x.value is None:
        raise IdentificationError(f"the consistent estimation failed: solver status {status}")
    chi_hat = prior + scale * x.value
    return _result("consistent", base, extra, observations, a, y, joint, weights, strict=False,
                   beta=k_full @ chi_hat, standard=chi_hat[:standard_count], solver_status=status)


def solve_program(problem: Any) -> str:
    """Solve with Clarabel, falling back to SCS; the final status."""
    import cvxpy as cp

    status = "not solved"
    for solver in (cp.CLARABEL, cp.SCS):
        if solver not in cp.installed_solvers():
            continue
        try:
            with warnings.catch_warnings():  # "solution may be inaccurate": reported in the status instead
                warnings.simplefilter("ignore", UserWarning)
                problem.solve(solver=solver)
        except cp.error.SolverError as exc:
            status = f"{solver}: {exc}"
            continue
        status = f"{solver}: {problem.status}"
        if problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            break
    return status


def estimate(method: str, observations: Sequence[Observation], base: BaseParameters,
             prior: Array | None = None, extra: Sequence[str] = (),
             prior_weight: float = PRIOR_WEIGHT) -> IdentificationResult:
    """Dispatch on ``method`` (one of :data:`METHODS`); ``prior`` is needed by ``consistent``;
    ``extra``: names of the friction model's extra parameters (columns after the base parameters);
    ``prior_weight``: the consistent estimator's ``rho``."""
    if method == "ols":
        return ols(observations, base, extra)
    if method == "wls":
        return wls(observations, base, extra)
    if method == "consistent":
        if prior is None:
            raise ValueError("the consistent estimator needs the prior standard parameters")
        return consistent(observations, base, prior, extra, regularization=prior_weight)
    raise ValueError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
