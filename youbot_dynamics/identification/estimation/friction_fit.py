"""Choosing the friction model's shape constants by cross-validation (issue 13).

The friction model (:mod:`..dynamics.friction`) is linear in its parameters once the Coulomb
shape ``eps_j`` of ``tanh(q'_j / eps_j)`` is fixed. ``eps`` is chosen per joint: for every
candidate the recordings are processed with that ``eps`` on all joints, and each fold (leave one
recording out when there are several, else the two halves of the one recording) is estimated by
weighted least squares and predicted on the rows it left out. Joint j gets the candidate with the
smallest held-out RMS error on its own moving rows (its friction columns act on its own equations
only, so the per-joint choice is separable up to the shared rigid-body parameters). The load of
load-dependent friction comes from ``load_model`` (the pipeline's first estimate), the same for
every candidate, so that the comparison is of the shape alone.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...dynamics.friction import FrictionModel
from ...dynamics.model import DynamicModel
from ..io.dataset import Dataset
from .least_squares import wls
from .processing import Observation, ProcessingOptions, process

__all__ = ["EPS_CANDIDATES", "folds", "select_eps"]

Array = NDArray[np.float64]

EPS_CANDIDATES = (0.02, 0.05, 0.1, 0.2)  # [rad/s] (real youBot: issue 13 measured 0.02-0.2)


def _half(data: Dataset, first: bool) -> Dataset:
    middle = data.n_samples // 2
    part = slice(0, middle) if first else slice(middle, None)
    which = "first" if first else "second"
    return Dataset(data.t[part], data.q[part], data.tau[part], None if data.dq is None else data.dq[part],
                   None if data.ddq is None else data.ddq[part], f"{data.source} ({which} half)")


def folds(datasets: Sequence[Dataset]) -> tuple[list[Dataset], list[tuple[list[int], int]]]:
    """``(parts, [(train indices, test index), ...])``: leave one recording out, or with a single
    recording its two halves."""
    parts = list(datasets) if len(datasets) > 1 else [_half(datasets[0], True), _half(datasets[0], False)]
    return parts, [([k for k in range(len(parts)) if k != test], test) for test in range(len(parts))]


def _joint_errors(observations: Sequence[Observation], plan: Sequence[tuple[list[int], int]], base: Any,
                  extra: Sequence[str]) -> Array:
    """Held-out RMS error per joint over all folds' moving rows, (n,)."""
    n = observations[0].Y.shape[1]
    squares, counts = np.zeros(n), np.zeros(n)
    for train, test in plan:
        beta = wls([observations[k] for k in train], base, extra).beta
        held = observations[test]
        err = np.where(held.used, held.tau - held.Y @ beta, 0.0)
        squares += (err**2).sum(axis=0)
        counts += held.used.sum(axis=0)
    return np.sqrt(squares / np.maximum(counts, 1))


def select_eps(datasets: Sequence[Dataset], friction: FrictionModel, load_model: DynamicModel,
               options: ProcessingOptions, candidates: Sequence[float] = EPS_CANDIDATES
               ) -> tuple[FrictionModel, dict[str, Any]]:
    """``friction`` with ``eps`` chosen per joint (module docstring), and the table for the report:
    ``{"candidates": [...], "joint_rms_nm": [[per joint] per candidate], "eps": [...]}``."""
    parts, plan = folds(datasets)
    options = dataclasses.replace(options, period=None)
    table = []
    for eps in candidates:
        shaped = dataclasses.replace(friction, eps=(float(eps),) * friction.n_joints)
        model = DynamicModel(load_model.chain, load_model.base, load_model.beta, friction_model=shaped,
                             friction_parameters=np.zeros(shaped.extra_count))
        observations = [process(data, model, options, load_model=load_model) for data in parts]
        table.append(_joint_errors(observations, plan, model.base, shaped.extra_names()))
    errors = np.array(table)  # (candidates, n)
    best = np.asarray(candidates, dtype=float)[np.argmin(errors, axis=0)]
    chosen = dataclasses.replace(friction, eps=tuple(float(v) for v in best))
    return chosen, {"candidates": [float(c) for c in candidates], "joint_rms_nm": errors.tolist(),
                    "eps": chosen.eps, "folds": [p.source for p in parts]}
