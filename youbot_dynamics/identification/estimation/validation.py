"""Validation of a model on a recording it was not identified from (seed 002 §3.2, step д).

The held-out recording is processed exactly as the identification data (same filter, no Coulomb
exclusion), so measured and predicted torques are compared on the same band:
``tau_hat = (F Y_b) beta``. Metrics, per joint j over the M samples:

* RMS error ``e_j = sqrt(mean((tau_j - tau_hat_j)^2))`` [N m];
* relative RMS error ``e_j / sqrt(mean(tau_j^2))``;
* overall relative error ``||tau - tau_hat|| / ||tau||`` over all joints and samples, and the
  same over the **moving** rows only (joint j at samples where ``|q'_j|`` is at least the
  processing's ``coulomb_threshold``: the rows the estimation uses) and over the **rest** rows
  (the others: at rest the torque lies anywhere in a stiction band, which no friction model of
  the velocity predicts);
* per **speed band** (:data:`SPEED_BANDS`: ``|q'_j| < 0.05``, ``0.05-0.3``, ``> 0.3`` rad/s), the
  relative error of each joint on its rows in that band, ``||e_j|| / ||tau_j||`` over those rows:
  where a wrong friction shape shows (a smooth Coulomb term on a dry joint errs below ~0.3 rad/s, a
  viscous term standing in for Coulomb friction at both ends).

The same metrics of a baseline model (the nominal URDF model) show what identification gained.
Noise left in the filtered held-out torques is a floor of these errors that no model can beat.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .processing import Observation

__all__ = ["SPEED_BANDS", "TorqueErrors", "speed_band_errors", "torque_errors", "validate"]

Array = NDArray[np.float64]

SPEED_BANDS = (0.05, 0.3)  # [rad/s] edges of the speed bands of |q'_j|: below, between, above


def _band_labels() -> list[str]:
    edges = [f"{e:g}" for e in SPEED_BANDS]
    return [f"<{edges[0]}"] + [f"{a}-{b}" for a, b in zip(edges, edges[1:])] + [f">{edges[-1]}"]


@dataclass(frozen=True)
class TorqueErrors:
    """Prediction errors of one model on one set of observations (module docstring)."""

    rms: Array
    relative_rms: Array
    overall: float
    n_samples: int
    moving: float = float("nan")  # overall relative error on the moving rows (nan: none given)
    rest: float = float("nan")  # overall relative error on the rows at rest
    # per speed band (label of SPEED_BANDS): per joint relative error on its rows in the band (nan: none)
    bands: dict[str, Array] | None = None

    def to_dict(self) -> dict[str, Any]:
        bands = {} if self.bands is None else {"speed_bands_relative": {
            label: [_plain(v) for v in values] for label, values in self.bands.items()}}
        return {"rms_nm": [float(v) for v in self.rms], "relative_rms": [float(v) for v in self.relative_rms],
                "overall_relative": float(self.overall), "moving_relative": _plain(self.moving),
                "rest_relative": _plain(self.rest), "n_samples": self.n_samples, **bands}


def _plain(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _relative(err: Array, tau: Array) -> float:
    norm = float(np.linalg.norm(tau))
    return float(np.linalg.norm(err) / norm) if norm > 0 else float("nan")


def speed_band_errors(tau: Array, tau_hat: Array, dq: Array) -> dict[str, Array]:
    """Per speed band of ``|dq|`` (:data:`SPEED_BANDS`), per joint ``||e_j|| / ||tau_j||`` over the
    joint's rows in the band (nan where it has none), all (M, n)."""
    speed = np.abs(np.asarray(dq, dtype=float))
    edges = [0.0, *SPEED_BANDS, np.inf]
    err, out = tau - tau_hat, {}
    for label, low, high in zip(_band_labels(), edges, edges[1:]):
        inside = (speed >= low) & (speed < high)
        norm = np.sqrt(np.sum(np.where(inside, tau, 0.0) ** 2, axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[label] = np.where(norm > 0, np.sqrt(np.sum(np.where(inside, err, 0.0) ** 2, axis=0)) / norm, np.nan)
    return out


def torque_errors(tau: Array, tau_hat: Array, moving: Any = None, dq: Any = None) -> TorqueErrors:
    """Metrics of predicted ``tau_hat`` against measured ``tau``, both (M, n); ``moving`` (M, n)
    marks the moving rows, ``dq`` (M, n) gives the speed bands (module docstring)."""
    err = tau - tau_hat
    rms = np.sqrt(np.mean(err**2, axis=0))
    scale = np.sqrt(np.mean(tau**2, axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(scale > 0, rms / scale, np.inf)
    split = {}
    if moving is not None:
        moving = np.asarray(moving, dtype=bool)
        split = {"moving": _relative(err[moving], tau[moving]), "rest": _relative(err[~moving], tau[~moving])}
    bands = None if dq is None else speed_band_errors(tau, tau_hat, dq)
    return TorqueErrors(rms, relative, float(np.linalg.norm(err) / np.linalg.norm(tau)), int(tau.shape[0]),
                        **split, bands=bands)


def validate(observations: Sequence[Observation], beta: Array,
             baseline: Array | None = None) -> dict[str, TorqueErrors]:
    """``{"identified": ..., "baseline": ...}`` errors of parameters ``beta`` (and ``baseline``)
    on processed held-out ``observations`` (all samples; moving and rest rows as marked ``used``)."""
    tau = np.concatenate([o.tau for o in observations])
    y = np.concatenate([o.Y for o in observations])
    moving = np.concatenate([o.used for o in observations])
    dq = np.concatenate([o.dq for o in observations])
    out = {"identified": torque_errors(tau, y @ beta, moving, dq)}
    if baseline is not None:
        out["baseline"] = torque_errors(tau, y @ baseline, moving, dq)
    return out
