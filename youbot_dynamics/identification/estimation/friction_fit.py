"""Choosing the friction structure from the data, by validation on data left out (issues 13, 31).

The friction model (:mod:`..dynamics.friction`) is linear in its parameters once its structure is
fixed: the Coulomb shape ``eps_j`` of ``tanh(q'_j / eps_j)`` (``0``: ``sign(q'_j)``, dry friction)
and the extra terms of each joint (none, ``asymmetric``, ``stribeck``, ``load`` and their
combinations), and the Stribeck velocity ``vs_j`` of a Stribeck term. :func:`select_friction`
chooses them, per joint, among candidates (:data:`EPS_CANDIDATES` x :data:`TERM_CANDIDATES` by
default, a Stribeck term with each of :data:`STRIBECK_VELOCITY_CANDIDATES` when the pipeline asks):

1. **Folds on distinct data** (:func:`folds`): with *probes*, identification recordings of another
   character than the rest (the experiment's friction sweep, :mod:`..excitation.sweep`: out-and-back
   moves at graded speeds beside a periodic excitation), each probe's first and second part (the
   sweep's slow and fast levels) is predicted from all the other data: the structure must carry the
   friction from the excitation and one speed band to the other band, which is where a wrong shape
   shows (a smooth Coulomb term on a dry joint, a viscous term standing in for Coulomb friction).
   Without probes: with several identification recordings, leave one recording out; with a single
   one, its first and second halves (distinct segments of the one recording: when its motion is
   periodic they repeat the same motion, which the report says).
   The ``--validate`` recordings are never used here: the held-out figure ``identify`` reports
   stays a prediction of data that chose nothing.
2. **Every candidate, every fold**: each part is processed once with every Coulomb shape and all
   extra terms (:func:`~.processing.process_frictions`); a candidate is a subset of those columns.
   Per part the weighted rows (per-joint weights ``1 / sigma_j`` from the residual of one fit of the
   richest candidate) are reduced to their normal equations ``G_k = A_k^T W_k^2 A_k``,
   ``b_k = A_k^T W_k^2 y_k``: the weighted least-squares estimate of a fold from a column subset
   ``S`` solves ``(sum G_k)[S, S] x = (sum b_k)[S]`` over its training parts (column-scaled, the
   directions below the rank tolerance dropped). It predicts the left-out part; the errors on the
   moving rows (those the estimation uses) are summed over the folds, per joint.
3. **Per joint**: every candidate is first the same on all joints; joint j then takes the candidate
   with the smallest held-out RMS error on its own rows (friction columns act on their joint's
   equations only), the one with the fewest extra terms among those within :data:`TOLERANCE` of it.
   That per-joint combination is scored like the others.
4. **The choice**: the smallest overall held-out relative error on moving rows, preferring the
   fewest extra parameters among the candidates within :data:`TOLERANCE` of it (a term that does
   not predict data it was not fitted on is not kept). The runner-up is the best other candidate.
   A term whose column the data never show (load friction of a joint that carries no gravity, the
   youBot's joint 1) is left out of the chosen structure: it changes no prediction. So is asymmetric
   friction ``fa |s|`` where the data cannot tell it from the joint's offset ``f0``: with a sharp
   Coulomb shape ``|s|`` is 1 on every moving row (the only rows fitted), their columns are
   collinear (cosine above :data:`COLLINEAR`), and only ``f0 + fa`` is determined. Kept, the split
   was arbitrary and ``f0``, which a controller applies at rest, came out at 4.05 N m on joint 3
   against ``fa`` -3.87 (the main job: PD + gravity did not settle, computed torque tracked joints
   3-4 at 3-10 mrad RMS, hand-guiding drifted); the candidate is scored without it.

The load of load-dependent friction comes from ``load_model`` (the pipeline's first estimate), the
same for every candidate, so that the comparison is of the structures alone.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...dynamics.friction import EXTRA_TERMS, FrictionModel
from ...dynamics.model import DynamicModel
from ..io.dataset import Dataset
from .least_squares import RANK_TOLERANCE
from .processing import Observation, ProcessingOptions, process_frictions, stack_rows

__all__ = ["COLLINEAR", "EPS_CANDIDATES", "STRIBECK_VELOCITY_CANDIDATES", "TERM_CANDIDATES", "TOLERANCE", "folds",
           "select_friction"]

Array = NDArray[np.float64]

# [rad/s] 0: sign (dry friction); small widths for drives close to it; 0.02-0.2: the real youBot (issue 13)
EPS_CANDIDATES = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
# [rad/s] Stribeck velocities a joint's Stribeck term may take: a dip over 0.02-0.2 rad/s
STRIBECK_VELOCITY_CANDIDATES = (0.02, 0.05, 0.1, 0.2)
TERM_CANDIDATES: tuple[tuple[str, ...], ...] = ((), ("asymmetric",), ("stribeck",), ("load",),
                                                ("asymmetric", "stribeck"), ("asymmetric", "load"),
                                                ("stribeck", "load"), EXTRA_TERMS)
TOLERANCE = 0.01  # relative: a candidate within 1 % of the best error counts as as good
COLLINEAR = 0.99  # cosine over a joint's moving rows above which asymmetric friction is its offset again


def _half(data: Dataset, first: bool) -> Dataset:
    middle = data.n_samples // 2
    part = slice(0, middle) if first else slice(middle, None)
    which = "first" if first else "second"
    return Dataset(data.t[part], data.q[part], data.tau[part], None if data.dq is None else data.dq[part],
                   None if data.ddq is None else data.ddq[part], f"{data.source} ({which} half)")


def folds(datasets: Sequence[Dataset], probes: Sequence[Dataset] = ()
          ) -> tuple[list[Dataset], list[tuple[list[int], int]], str]:
    """``(parts, [(train indices, test index), ...], how)``: each half of each probe predicted from
    everything else; without probes leave one recording out, or with a single recording its two
    halves; ``how`` says which, for the report."""
    if probes:
        parts = list(datasets) + [_half(p, first) for p in probes for first in (True, False)]
        tests = range(len(datasets), len(parts))
        names = ", ".join(p.source for p in probes)
        how = (f"each half of the {len(probes)} recording(s) of another character ({names}: slow and fast levels) "
               f"predicted from all the other identification data")
        return parts, [([k for k in range(len(parts)) if k != test], test) for test in tests], how
    if len(datasets) > 1:
        how = f"leave one identification recording out ({len(datasets)} recordings)"
        parts = list(datasets)
    else:
        how = ("the two halves of the one identification recording, each predicted from the other (distinct "
               "segments; a periodic motion repeats itself in both: give several recordings of different motions "
               "to choose on different motion)")
        parts = [_half(datasets[0], True), _half(datasets[0], False)]
    return parts, [([k for k in range(len(parts)) if k != test], test) for test in range(len(parts))], how


@dataclasses.dataclass(frozen=True)
class _Candidate:
    """A friction structure: per joint the index of its Coulomb shape and its extra terms."""

    shape: tuple[int, ...]
    terms: tuple[tuple[str, ...], ...]

    @property
    def extra_count(self) -> int:
        return sum(len(t) for t in self.terms)


class _Columns:
    """The columns of every candidate in the wide matrix ``[rigid body | per shape: Coulomb (n),
    extra terms (n x 3, joint-major)]`` of :func:`_wide`."""

    def __init__(self, base_count: int, coulomb: Sequence[int], n: int) -> None:
        self.rigid = [k for k in range(base_count) if k not in coulomb]
        self.coulomb, self.n, self.base_count = list(coulomb), n, base_count
        self.block = n * (1 + len(EXTRA_TERMS))

    def extra(self, shape: int, joint: int, term: str) -> int:
        """The column of ``term`` of ``joint`` with Coulomb shape number ``shape``."""
        return len(self.rigid) + shape * self.block + self.n + len(EXTRA_TERMS) * joint + EXTRA_TERMS.index(term)

    def of(self, candidate: _Candidate, kept: Any = None) -> list[int]:
        """Its columns; ``kept(shape, joint, term)`` False leaves a term out."""
        start = len(self.rigid)
        cols = list(range(start))  # the rigid-body columns come first
        for j, (e, terms) in enumerate(zip(candidate.shape, candidate.terms)):
            cols.append(start + e * self.block + j)
            cols += [self.extra(e, j, t) for t in terms if kept is None or kept(e, j, t)]
        return cols


def _wide(observations: Sequence[Observation], columns: _Columns) -> Array:
    """(M, n, width) regressor of one part from its observations, one per Coulomb shape (all terms)."""
    first = observations[0].Y
    blocks = [first[..., columns.rigid]]
    for obs in observations:
        blocks += [obs.Y[..., columns.coulomb], obs.Y[..., columns.base_count :]]
    return np.concatenate(blocks, axis=-1)


def _solve(gram: Array, rhs: Array) -> Array:
    """Least squares from the normal equations ``G x = b`` (``G = A^T A``, ``b = A^T y``), column-scaled,
    through the eigen-decomposition of the scaled ``G``: directions below
    :data:`~.least_squares.RANK_TOLERANCE` of the largest singular value of ``A`` dropped (the
    minimum-norm solution, as an SVD of ``A`` would drop them)."""
    norms = np.sqrt(np.maximum(np.diag(gram), 0.0))
    d = np.where(norms > 1e-12 * max(float(norms.max()), np.finfo(float).tiny), norms, 1.0)
    values, vectors = np.linalg.eigh(gram / np.outer(d, d))
    keep = values > RANK_TOLERANCE**2 * values.max()
    x = vectors[:, keep] @ ((vectors[:, keep].T @ (rhs / d)) / values[keep])
    return x / d


def _score(parts: Sequence[tuple[Array, Array, Array, Array, Array]], plan: Sequence[tuple[list[int], int]],
           cols: list[int]) -> tuple[Array, float]:
    """Held-out RMS error per joint [N m] over all folds' moving rows, and the overall relative error."""
    n = parts[0][2].shape[1]
    squares, torque, counts = np.zeros(n), np.zeros(n), np.zeros(n)
    index = np.ix_(cols, cols)
    for train, test in plan:
        x = _solve(sum(parts[k][0][index] for k in train), sum(parts[k][1][cols] for k in train))
        y, tau, used = parts[test][2], parts[test][3], parts[test][4]
        err = np.where(used, tau - y[..., cols] @ x, 0.0)
        squares += (err**2).sum(axis=0)
        torque += (np.where(used, tau, 0.0) ** 2).sum(axis=0)
        counts += used.sum(axis=0)
    return np.sqrt(squares / np.maximum(counts, 1)), float(np.sqrt(squares.sum() / max(torque.sum(), 1e-300)))


def _simplest(errors: Array, candidates: Sequence[_Candidate], extra: Any) -> int:
    """Index of the candidate with the fewest ``extra(candidate)`` among those within
    :data:`TOLERANCE` of the smallest error (ties: the smaller error)."""
    close = np.flatnonzero(errors <= (1.0 + TOLERANCE) * errors.min())
    return int(min(close, key=lambda k: (extra(candidates[k]), errors[k])))


def select_friction(datasets: Sequence[Dataset], load_model: DynamicModel, options: ProcessingOptions,
                    shapes: Sequence[Sequence[float]], term_candidates: Sequence[Sequence[str]],
                    stribeck_velocity: Any = (), probes: Sequence[Dataset] = (),
                    stribeck_velocities: Sequence[float] = ()) -> tuple[FrictionModel, dict[str, Any]]:
    """The friction model chosen by validation on left-out data (module docstring) among the
    Coulomb ``shapes`` (each: ``eps`` per joint) and the extra ``term_candidates``, and the record
    for the report: how the data were split, the chosen structure and its held-out relative error
    on moving rows, the runner-up's, and every candidate's. ``probes``: recordings of another
    character (:func:`folds`). ``stribeck_velocities``: the Stribeck velocities a joint's Stribeck
    term is chosen among (each Coulomb shape is tried with each; default: ``stribeck_velocity``)."""
    n = load_model.n_joints
    parts, plan, how = folds(datasets, probes)
    options = dataclasses.replace(options, period=None)
    velocities = [(float(v),) * n for v in stribeck_velocities] or [stribeck_velocity]
    # a "shape" is a Coulomb shape with a Stribeck velocity; a candidate without the Stribeck term takes the first
    pairs = [(eps, vs) for eps in shapes for vs in velocities]
    richest = [FrictionModel(n, eps, EXTRA_TERMS, vs) for eps, vs in pairs]
    columns = _Columns(load_model.base.count, [load_model.base.names.index(f"fc{j}") for j in range(1, n + 1)], n)
    wide = []
    for data in parts:
        observations = process_frictions(data, load_model, richest, options, load_model=load_model)
        wide.append(dataclasses.replace(observations[0], Y=_wide(observations, columns)))
    terms = [tuple(t for t in EXTRA_TERMS if t in c) for c in term_candidates]
    uniform = [_Candidate((e,) * n, (t,) * n) for e in range(len(pairs)) for t in terms
               if "stribeck" in t or e % len(velocities) == 0]
    a, y, joint = stack_rows(wide)
    # a term the data never show (load on a joint without gravity), or asymmetric friction the data
    # cannot tell from the offset (module docstring): left out
    shown = np.any(a != 0.0, axis=0)
    offsets = [columns.rigid.index(load_model.base.names.index(f"f0{j}")) for j in range(1, n + 1)]

    def separable(e: int, j: int) -> bool:
        rows = joint == j
        u, v = a[rows, columns.extra(e, j, "asymmetric")], a[rows, offsets[j]]
        norm = float(np.linalg.norm(u) * np.linalg.norm(v))
        return norm > 0.0 and abs(float(u @ v)) / norm < COLLINEAR

    separable_at = {(e, j): separable(e, j) for e in range(len(pairs)) for j in range(n)}

    def kept(e: int, j: int, term: str) -> bool:
        return bool(shown[columns.extra(e, j, term)]) and (term != "asymmetric" or separable_at[e, j])

    richest = columns.of(max(uniform, key=lambda c: c.extra_count), kept)
    x = _solve(a[:, richest].T @ a[:, richest], a[:, richest].T @ y)  # one fit for the per-joint weights
    sigma = np.sqrt(np.bincount(joint, (y - a[:, richest] @ x) ** 2) / np.maximum(np.bincount(joint), 1))
    weights = 1.0 / np.maximum(sigma, 1e-12 * max(float(sigma.max()), 1e-300))[joint]
    reduced, offset = [], 0
    for obs in wide:  # per part: the normal equations of its weighted rows, and the raw rows to predict
        rows = int(obs.used.sum())
        aw = a[offset : offset + rows] * weights[offset : offset + rows, None]
        reduced.append((aw.T @ aw, aw.T @ (y[offset : offset + rows] * weights[offset : offset + rows]), obs.Y,
                        obs.tau, obs.used))
        offset += rows
    scored = [_score(reduced, plan, columns.of(c, kept)) for c in uniform]
    joint_rms = np.array([s[0] for s in scored])  # (candidates, n)
    picks = [uniform[_simplest(joint_rms[:, j], uniform, lambda c: len(c.terms[0]))] for j in range(n)]
    per_joint = _Candidate(tuple(p.shape[j] for j, p in enumerate(picks)),
                           tuple(p.terms[j] for j, p in enumerate(picks)))
    candidates = uniform + ([per_joint] if per_joint not in uniform else [])
    scored += [_score(reduced, plan, columns.of(per_joint, kept))] if per_joint not in uniform else []
    errors = np.array([s[1] for s in scored])
    best = _simplest(errors, candidates, lambda c: c.extra_count)
    runner_up = min((k for k in range(len(candidates)) if k != best), key=lambda k: errors[k], default=None)

    def model(c: _Candidate) -> FrictionModel:
        terms = tuple(tuple(t for t in ts if kept(e, j, t)) for j, (e, ts) in enumerate(zip(c.shape, c.terms)))
        return FrictionModel(n, [pairs[e][0][j] for j, e in enumerate(c.shape)], (),
                             [pairs[e][1][j] for j, e in enumerate(c.shape)], terms)

    chosen = model(candidates[best])
    record = {
        "on": how, "folds": [p.source for p in parts], "tolerance": TOLERANCE,
        "chosen": chosen.describe(), "chosen_moving_relative_error": float(errors[best]),
        # the chosen structure's error per joint on motion of another character it was not fitted on
        **({"probe_joint_rms_nm": [float(v) for v in scored[best][0]]} if probes else {}),
        "runner_up": None if runner_up is None else model(candidates[runner_up]).describe(),
        "runner_up_moving_relative_error": None if runner_up is None else float(errors[runner_up]),
        "candidates": [{"structure": model(c).describe(), "moving_relative_error": float(e),
                        "joint_rms_nm": [float(v) for v in s[0]]} for c, e, s in zip(candidates, errors, scored)],
    }
    return chosen, record
