"""The information criterion of an excitation: condition number of the column-scaled base regressor.

Gautier & Khalil 1992; Swevers et al. 1997; seed 002 (3.1)-(3.10): the base parameters are found
by least squares (3.10) on the stacked regressor, so its conditioning bounds the estimate's.
On samples ``t_1..t_N`` the base regressor is stacked,

    W = [Y_b(q(t_1), q'(t_1), q''(t_1)); ...; Y_b(t_N)]        (N n x b),

its columns scaled to unit norm, ``W_s = W D^-1``, ``D = diag(|w_c|)`` (parameters of different
units weigh alike), and with ``G = W_s^T W_s`` (eigenvalues ``lambda``, eigenvectors ``v``)

    cond(W_s) = sigma_max / sigma_min = sqrt(lambda_max / lambda_min).

The b x b Gram form costs far less than an SVD of the tall ``W_s`` and is accurate while
``cond`` is well below ``1e7``. Optimisation criteria ``f(G)``: ``"condition"``,
``f = log cond = (log lambda_max - log lambda_min) / 2``; ``"logdet"``, ``f = -log det(G) / b``
(D-optimality on scaled columns).

**Gradient.** With ``H = df/dG`` (``(v_max v_max^T / lambda_max - v_min v_min^T / lambda_min) / 2``,
resp. ``-G^-1 / b``), ``df/dW_s = 2 W_s H`` and, through the scaling,
``df/dw_c = (I - w^_c w^_c^T) (2 W_s H)_c / d_c = 2 (W_s H - W_s diag(G H))_c / d_c``.
The derivatives of ``Y_b`` with respect to each sample's ``q_i``, ``q'_i``, ``q''_i`` are central
differences: exact for ``q'`` and ``q''`` (``Y_b`` is quadratic in ``q'`` and affine in ``q''``;
the Coulomb columns ``sign(q')`` get zero, their derivative almost everywhere) and with a
``1e-5`` rad step (error ~1e-10) for ``q``.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...dynamics.model import DynamicModel
from ...dynamics.nominal import nominal_model
from ...dynamics.parameters import DRIVE_PARAMETERS, LINK_PARAMETERS, PARAMETERS_PER_JOINT
from .trajectories import Trajectory

__all__ = ["CRITERIA", "UNEXCITED_CONDITION", "check_criterion", "sample_times", "scaled_gram_eigenvalues",
           "condition_number", "regressor_model", "trajectory_condition_number", "criterion_value",
           "criterion_regressor_gradient", "criterion_state_gradient"]

Array = NDArray[np.float64]
CRITERIA = ("condition", "logdet")
LAMBDA_FLOOR = 1e-12  # smallest eigenvalue of G used by the criteria, relative to the largest
#: a condition number at or above this (the criteria's floor, 1e6): a base parameter is not excited
UNEXCITED_CONDITION = LAMBDA_FLOOR ** -0.5
STATE_STEPS = (1e-5, 1.0, 1.0)  # central-difference steps for q [rad], q' [rad/s], q'' [rad/s^2]
_COULOMB = len(LINK_PARAMETERS) + DRIVE_PARAMETERS.index("fc")


def sample_times(duration: float, samples: int) -> Array:
    """``t_s = (s + 1/2) duration / samples``, s = 0..samples-1: mid-interval samples, none at the
    rests where ``sign(q')`` jumps."""
    return (np.arange(samples) + 0.5) * (duration / samples)


def _scaled(regressor: Array) -> tuple[Array, Array]:
    """``W_s`` and the column norms; a zero column (parameter not excited) stays zero."""
    w = regressor.reshape(-1, regressor.shape[-1])
    norms = np.linalg.norm(w, axis=0)
    norms[norms == 0.0] = 1.0
    return w / norms, norms


def scaled_gram_eigenvalues(regressor: Array) -> Array:
    """Ascending eigenvalues of ``W_s^T W_s`` for the stacked regressor (..., b)."""
    ws, _ = _scaled(regressor)
    return np.linalg.eigvalsh(ws.T @ ws)


def condition_number(regressor: Array) -> float:
    """``cond(W_s)`` of the stacked regressor (..., b) with unit-norm columns (inf when a column is zero)."""
    eig = scaled_gram_eigenvalues(regressor)
    return math.sqrt(eig[-1] / eig[0]) if eig[0] > 0 else math.inf


def regressor_model(arm: ArmDescription, structure: str = "full") -> DynamicModel:
    """A model whose :meth:`~DynamicModel.regressor` gives the base regressor ``Y_b`` of ``structure``
    (the nominal model; ``Y_b`` does not depend on the parameter values)."""
    return nominal_model(arm, structure)[0]


def trajectory_condition_number(model: DynamicModel, trajectory: Trajectory, samples: int) -> float:
    """``cond(W_s)`` of ``trajectory`` on ``samples`` :func:`sample_times` of its duration."""
    q, dq, ddq = trajectory.evaluate(sample_times(trajectory.duration, samples))
    return condition_number(model.regressor(q, dq, ddq))


def check_criterion(criterion: str) -> None:
    """``ValueError`` unless ``criterion`` is one of :data:`CRITERIA`."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")


def _floored(lam: Array) -> Array:
    """Eigenvalues floored at ``LAMBDA_FLOOR * lambda_max``: finite criteria (cond <= 1e6) when a
    parameter is not excited at all."""
    return np.maximum(lam, LAMBDA_FLOOR * lam[-1])


def _criterion_of_eigenvalues(lam: Array, criterion: str) -> float:
    lam = _floored(lam)
    return 0.5 * math.log(lam[-1] / lam[0]) if criterion == "condition" else -float(np.mean(np.log(lam)))


def criterion_value(regressor: Array, criterion: str = "condition") -> float:
    """``f`` of the stacked regressor (..., b) for ``criterion`` (module docstring)."""
    check_criterion(criterion)
    return _criterion_of_eigenvalues(scaled_gram_eigenvalues(regressor), criterion)


def criterion_regressor_gradient(regressor: Array, criterion: str = "condition") -> Array:
    """``df/dW``, same shape as ``regressor`` (module docstring)."""
    check_criterion(criterion)
    ws, norms = _scaled(regressor)
    gram = ws.T @ ws
    lam, vec = np.linalg.eigh(gram)
    lam = _floored(lam)
    if criterion == "condition":
        h = 0.5 * (np.outer(vec[:, -1], vec[:, -1]) / lam[-1] - np.outer(vec[:, 0], vec[:, 0]) / lam[0])
    else:
        h = -(vec / lam) @ vec.T / lam.size
    grad = 2.0 * (ws @ h - ws * np.diag(gram @ h)) / norms
    return grad.reshape(regressor.shape)


def criterion_state_gradient(model: DynamicModel, q: Array, dq: Array, ddq: Array,
                             criterion: str = "condition") -> Array:
    """Gradient of ``f`` with respect to the samples (N, n) of ``q``, ``q'``, ``q''``: (3, N, n)
    (module docstring)."""
    n = q.shape[1]
    dw = criterion_regressor_gradient(model.regressor(q, dq, ddq), criterion)
    coulomb = model.base.independent % PARAMETERS_PER_JOINT == _COULOMB
    bump = np.array([1.0, -1.0])[:, None, None, None] * np.eye(n)  # (+/-, 1, perturbed joint, joint)
    states = [x[None, :, None, :] for x in (q, dq, ddq)]  # (1, N, 1, n)
    grad = []
    for k, step in enumerate(STATE_STEPS):
        perturbed = [x + step * bump if j == k else x for j, x in enumerate(states)]
        y = model.regressor(*perturbed)  # (2, N, n, n, b)
        dy = (y[0] - y[1]) / (2.0 * step)
        if k == 1:
            dy[..., coulomb] = 0.0
        grad.append(np.einsum("srb,sjrb->sj", dw, dy))
    return np.stack(grad)
