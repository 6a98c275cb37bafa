"""Base (identifiable) parameters by column elimination on a stacked regressor.

Seed 002 (3.1)-(3.8) removes zero columns, then linearly dependent ones found on N >> n random
samples stacked into one matrix ``W``, regrouping their parameters into the kept ones. Here the
same is done in one pass: columns are scanned in a fixed preference order and a column is kept
when it is not in the span of the columns kept so far (Gram-Schmidt on unit-scaled columns, the
greedy form of QR with column pivoting). With ``W_b`` the kept and ``W_d`` the dropped columns,
``W_d = W_b X`` (least squares, exact up to rounding), so

``W chi = W_b (chi_b + X chi_d) = W_b beta``,   ``beta = K chi``,   ``K = [I | X]`` (permuted).

Preference order: per joint ``Ia, Ixx, Iyy, Izz, Ixy, Ixz, Iyz, mx, my, mz, fv, fc, f0``, and
the masses last, so masses regroup into first moments and inertias as in the seed's example
(``Ia1 + Izz1 - a1^2 m1 - a1^2 m2``). Each base parameter gets a readable expression whose
coefficients are recognised as +-1, +-2 or +-1/2 times a product of at most two DH lengths.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, combinations_with_replacement, product
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .chain import DHChain
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, ModelStructure, parameter_names, structure_mask
from .rnea import regressor

__all__ = ["BaseParameters", "compute_base_parameters", "preference_order", "stacked_regressor"]

Array = NDArray[np.float64]

_PREFERRED = ("Ia", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz", "mx", "my", "mz", "fv", "fc", "f0")
_NAMES = LINK_PARAMETERS + ("Ia", "fv", "fc", "f0")


@dataclass(frozen=True)
class BaseParameters:
    """The base parameters of one chain and model structure.

    ``independent``: indices (into the 14 n standard vector) of the kept columns, in the order of
    ``beta``; ``K``: (b, 14 n) with ``beta = K chi`` and ``Y chi = Y[..., independent] beta`` for
    every state; ``expressions``: each base parameter in terms of standard parameters.
    """

    structure: ModelStructure
    n_joints: int
    independent: NDArray[np.int64]
    K: Array
    names: tuple[str, ...]
    expressions: tuple[str, ...]

    @property
    def count(self) -> int:
        return int(self.independent.size)

    def base_regressor(self, full_regressor: Array) -> Array:
        """``Y_b`` from the full (..., n, 14 n) regressor: its kept columns."""
        return full_regressor[..., self.independent]

    def from_standard(self, chi: Any) -> Array:
        """``beta = K chi`` (drive terms outside the structure are ignored)."""
        chi = np.asarray(chi, dtype=float)
        return chi @ self.K.T

    def equivalent_standard(self, beta: Any) -> Array:
        """A 14 n vector with ``beta`` in the kept columns and zeros elsewhere: ``Y chi_eq = Y_b beta``."""
        beta = np.asarray(beta, dtype=float)
        if beta.shape[-1] != self.count:
            raise ValueError(f"expected {self.count} base parameters, got {beta.shape[-1]}")
        chi = np.zeros(beta.shape[:-1] + (self.n_joints * PARAMETERS_PER_JOINT,))
        chi[..., self.independent] = beta
        return chi


def preference_order(n_joints: int) -> list[int]:
    """Column scan order (see the module docstring)."""
    index = {name: k for k, name in enumerate(_NAMES)}
    order = [j * PARAMETERS_PER_JOINT + index[p] for j in range(n_joints) for p in _PREFERRED]
    return order + [j * PARAMETERS_PER_JOINT + index["m"] for j in range(n_joints)]


def stacked_regressor(chain: DHChain, n_samples: int = 200, seed: int = 0) -> Array:
    """The regressor of ``n_samples`` random states stacked into a (n_samples n, 14 n) matrix."""
    rng = np.random.default_rng(seed)
    n = chain.n_joints
    q = rng.uniform(-np.pi, np.pi, (n_samples, n))
    dq = rng.normal(0.0, 2.0, (n_samples, n))
    ddq = rng.normal(0.0, 5.0, (n_samples, n))
    return regressor(chain, q, dq, ddq).reshape(n_samples * n, -1)


def _length_symbols(chain: DHChain) -> list[tuple[str, float]]:
    out = []
    for i in range(chain.n_joints):
        for name, value in ((f"a{i + 1}", chain.a[i]), (f"d{i + 1}", chain.d[i])):
            if abs(value) > 1e-12:
                out.append((name, float(value)))
    return out


def _coefficient_text(value: float, lengths: list[tuple[str, float]]) -> str:
    """``value`` as +-k * (product of <= 2 DH lengths), k in {1, 2, 1/2}, or as a signed sum of
    up to three such products (e.g. ``a2^2 + a3^2 - a1^2``); else the number itself."""
    monomials: list[tuple[str, float]] = [("", 1.0)] + list(lengths)
    for (n1, v1), (n2, v2) in combinations_with_replacement(lengths, 2):
        monomials.append((f"{n1}^2" if n1 == n2 else f"{n1}*{n2}", v1 * v2))
    close = lambda x: abs(value - x) <= 1e-12 * max(1.0, abs(value))  # noqa: E731
    for factor, label in ((1.0, ""), (2.0, "2*"), (0.5, "0.5*")):
        for text, v in monomials:
            for sign in (1.0, -1.0):
                if close(sign * factor * v):
                    body = (label + text).rstrip("*") if text else (label.rstrip("*") or "1")
                    return ("-" if sign < 0 else "+") + body
    terms = [(t, v) for t, v in monomials if t]
    for count in (2, 3):
        for combo in combinations(terms, count):
            for signs in product((1.0, -1.0), repeat=count):
                if close(sum(s * v for s, (_, v) in zip(signs, combo))):
                    inner = " ".join(("+ " if s > 0 else "- ") + t for s, (t, _) in zip(signs, combo))
                    inner = inner[2:] if inner.startswith("+ ") else "-" + inner[2:]
                    return f"+({inner})"
    return f"{value:+.6g}"


def _expression(k_row: Array, names: Sequence[str], lengths: list[tuple[str, float]]) -> str:
    parts = []
    for j in np.flatnonzero(np.abs(k_row) > 1e-10):
        coef = _coefficient_text(float(k_row[j]), lengths)
        sign, body = coef[0], coef[1:]
        parts.append((sign, names[j] if body == "1" else f"{body}*{names[j]}"))
    text = " ".join(f"{sign} {body}" for sign, body in parts)
    return text[2:] if text.startswith("+ ") else text


def compute_base_parameters(chain: DHChain, structure: ModelStructure | str = ModelStructure.FULL,
                            n_samples: int | None = None, seed: int = 0, tolerance: float = 1e-8) -> BaseParameters:
    """Base parameters of ``chain`` for ``structure`` (see the module docstring)."""
    structure = ModelStructure(structure)
    n = chain.n_joints
    n_samples = n_samples if n_samples is not None else max(60, 20 * n)
    w = stacked_regressor(chain, n_samples, seed)
    mask = structure_mask(n, structure)
    norms = np.linalg.norm(w, axis=0)
    scale = norms.max()
    basis: list[Array] = []
    kept: list[int] = []
    for col in preference_order(n):
        if not mask[col] or norms[col] <= 1e-10 * scale:
            continue
        v = w[:, col] / norms[col]
        for _ in range(2):  # Gram-Schmidt, re-orthogonalised
            for b in basis:
                v = v - (b @ v) * b
        r = np.linalg.norm(v)
        if r > tolerance ** 0.5:
            basis.append(v / r)
            kept.append(col)
    independent = np.array(sorted(kept), dtype=np.int64)
    dependent = np.array([c for c in range(w.shape[1]) if mask[c] and c not in kept], dtype=np.int64)
    k = np.zeros((independent.size, w.shape[1]))
    k[np.arange(independent.size), independent] = 1.0
    if dependent.size:
        x, *_ = np.linalg.lstsq(w[:, independent], w[:, dependent], rcond=None)
        x[np.abs(x) < 1e-10] = 0.0
        residual = np.abs(w[:, independent] @ x - w[:, dependent]).max()
        if residual > 1e-6 * scale:
            raise RuntimeError(f"base parameter regrouping is inexact (residual {residual:.3g})")
        k[:, dependent] = x
    names = parameter_names(n)
    lengths = _length_symbols(chain)
    expressions = tuple(_expression(row, names, lengths) for row in k)
    return BaseParameters(structure, n, independent, k, tuple(names[i] for i in independent), expressions)
