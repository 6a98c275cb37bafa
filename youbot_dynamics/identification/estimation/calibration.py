"""Recalibration of an identified model to a new session: payload and friction only (issue 13).

Between sessions the real youBot changes what it carries at the tool (about 0.8 kg between the
recorded sessions) and its friction (temperature, lubrication); the links and the rotor
inertias stay. :func:`calibrate` keeps an identified model and re-estimates, from a short
recording, only

* the **payload**: a change ``(dm, dh)`` of the last link's mass and first moments ``h = m c`` in
  the last DH frame (the tool frame's origin and axes up to its constant offset), and optionally
  ``dI`` of its inertia about the frame origin (6 entries). Without ``dI`` the payload is a point
  mass at ``dh / dm``: ``dI = -[dh]x[dh]x / dm`` (parallel axes; zero for a mass taken away or
  below :data:`MIN_POINT_MASS`: :func:`point_mass_inertia`) follows each pass's estimate and is
  held fixed in the next of :data:`ITERATIONS` passes. (The link's own inertia about its centre of mass
  does not change: ``-[h']x[h']x / m' + [h]x[h]x / m``, used before, moved the link's mass to the
  new centre of mass too and found 0.531 kg at 3.2 cm for 0.5 kg at 5 cm on exact torques.) The
  change of the standard parameters ``dchi`` (link n) maps to the base parameters as
  ``dbeta = K dchi``, so its regressor columns are ``Y_b K_payload``;
* the **friction**: every friction parameter of the model (``fv, fc, f0`` of each joint and the
  friction model's extra terms), with ``fv, fc`` and the Stribeck and load terms kept ``>= 0``.
  Load-dependent friction uses the gravity torque of the previous pass's model.

Each pass is a least-squares problem with those bounds and the last link (with its new payload)
kept physically consistent: a point mass added to a consistent link keeps it consistent (its
pseudo-inertia ``dm [c; 1] [c; 1]^T`` is positive semidefinite), so that case needs no
constraint; a mass taken away, or a payload with its own inertia, is held to a positive definite
pseudo-inertia of the link (a semidefinite program, as the consistent estimator of
:mod:`.estimation`): a payload can be taken away, never below what a body can be. (That
constraint on every pass, with the point mass's inertia held at the previous estimate, zero at
first, biased the estimate where the identified last link had little inertia to spare: 0.552 kg at
1.9 cm for the demo's 0.5 kg at 5 cm, 0.493 kg at 4.9 cm now.)

The rows are weighted per joint by the residual noise of the previous pass's model (as WLS; the
first pass: the old model's), at-rest rows left out (as ``identify``). The recordings' last
``holdout`` fraction is first held out: each update of :data:`UPDATES` (payload only; + friction
offsets; + every friction term) is fitted on the rest, and a wider update replaces a narrower one
only if its held-out error on moving rows is at least :data:`WIDER_GAIN` (5 %, relative) smaller
(on the real arm, friction re-estimated from one 25 s run of the same session predicted other runs
worse: 29.6 % -> 32.0 % on moving rows, payload only 30.1 %; in the simulator a near tie, 2.76 %
against 2.78 % for the payload alone, traded payload for load-dependent friction: 0.479 kg at 6.0
cm for 0.5 kg at 5 cm, 0.486 kg at 5.4 cm alone); the chosen update is then fitted on all the data.
The result must pass the consistency check (:mod:`..dynamics.consistency`), like any model the
controllers accept.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...dynamics.consistency import assess_model
from ...dynamics.friction import NON_NEGATIVE_EXTRAS
from ...dynamics.model import DynamicModel
from ...dynamics.parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, parameter_names
from ...arm.transforms import skew
from ..io.dataset import Dataset, IdentificationError, check_plausible
from .processing import Observation, ProcessingOptions, process
from .validation import TorqueErrors, torque_errors

__all__ = ["ITERATIONS", "MIN_POINT_MASS", "Calibration", "calibrate", "point_mass_inertia", "split_holdout",
           "consistency_problems", "summary_lines", "write_calibration"]

Array = NDArray[np.float64]

ITERATIONS = 3  # passes: point-mass inertia and load-dependent friction from the previous pass
MIN_HOLDOUT_SAMPLES = 200
MIN_POINT_MASS = 0.01  # [kg]: a smaller payload change is given no inertia (its centre of mass is noise)
FRICTION_KINDS = ("fv", "fc", "f0", "fa", "fs", "fl")  # every friction parameter
# the updates calibrate chooses among by the held-out error (friction="auto"), narrowest first
UPDATES = {"payload": (), "payload and friction offsets": ("f0",), "payload and friction": FRICTION_KINDS}
# a wider update is chosen only if it predicts the held-out part this much better (relative) than the
# narrower one chosen before it (module docstring)
WIDER_GAIN = 0.05
MARGIN = 1e-4  # smallest eigenvalue of the last link's scaled pseudo-inertia (the consistent estimator's)


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found: the updated model, the payload change (mass [kg], centre of
    mass of the change [m] in the last DH frame, inertia change), the friction values before and
    after (by name), and the errors of the old and new model on the held-out part (``None``
    without one) and on all the data."""

    model: DynamicModel
    payload_mass: float
    payload_com: Array
    payload_inertia: Array
    friction_before: dict[str, float]
    friction_after: dict[str, float]
    held_out: dict[str, TorqueErrors] | None
    all_data: dict[str, TorqueErrors]
    n_samples: int
    update: str = ""  # which update was made (the key of UPDATES chosen, or "as requested")
    held_out_moving: dict[str, float] = dataclasses.field(default_factory=dict)  # per candidate update

    def to_dict(self) -> dict[str, Any]:
        return {
            "payload_change": {"mass_kg": self.payload_mass, "com_m": self.payload_com.tolist(),
                               "inertia_kg_m2": self.payload_inertia.tolist()},
            "friction_before": self.friction_before, "friction_after": self.friction_after,
            "held_out": None if self.held_out is None else {k: v.to_dict() for k, v in self.held_out.items()},
            "all_data": {k: v.to_dict() for k, v in self.all_data.items()}, "n_samples": self.n_samples,
            "update": self.update, "held_out_moving_relative_error_per_update": self.held_out_moving,
        }


def split_holdout(data: Dataset, fraction: float) -> tuple[Dataset, Dataset]:
    """The first ``1 - fraction`` and the last ``fraction`` of a recording."""
    k = int(round(data.n_samples * (1.0 - fraction)))

    def part(s: slice, name: str) -> Dataset:
        return Dataset(data.t[s], data.q[s], data.tau[s], None if data.dq is None else data.dq[s],
                       None if data.ddq is None else data.ddq[s], f"{data.source} ({name})")

    return part(slice(0, k), "calibration part"), part(slice(k, None), "held-out part")


def _friction_names(model: DynamicModel) -> list[str]:
    n = model.n_joints
    return [f"{p}{j}" for j in range(1, n + 1) for p in ("fv", "fc", "f0")] + list(model.friction_model.extra_names())


def _friction_values(model: DynamicModel) -> dict[str, float]:
    chi = model.equivalent_standard.reshape(model.n_joints, PARAMETERS_PER_JOINT)
    values = {f"{p}{j + 1}": float(chi[j, len(LINK_PARAMETERS) + 1 + k])
              for j in range(model.n_joints) for k, p in enumerate(("fv", "fc", "f0"))}
    values.update(zip(model.friction_model.extra_names(), (float(v) for v in model.friction_parameters)))
    return {name: values[name] for name in _friction_names(model)}


class _Layout:
    """Columns of the calibration unknowns in ``model.parameters`` space."""

    def __init__(self, model: DynamicModel, inertia: bool, kinds: Sequence[str] = FRICTION_KINDS) -> None:
        n, b = model.n_joints, model.base.count
        names = parameter_names(n)
        last = (n - 1) * PARAMETERS_PER_JOINT
        self.payload = last + np.arange(10 if inertia else 4)  # m, mx, my, mz (, Ixx .. Iyz) of link n
        self.inertia = last + np.arange(4, 10)
        self.link = last + np.arange(len(LINK_PARAMETERS))  # the last link's 10 inertial parameters
        # which unknown (column of the calibration system) changes each of them, None: none
        self.link_unknown = [k if k < len(self.payload) else None for k in range(len(LINK_PARAMETERS))]
        friction_std = [k for k in range(n * PARAMETERS_PER_JOINT) if names[k][:2] in ("fv", "fc", "f0")]
        position = {int(k): i for i, k in enumerate(model.base.independent)}
        if any(k not in position for k in friction_std):
            raise IdentificationError("calibration needs a model with every friction term among its base parameters "
                                      "(structure full)")
        friction_std = [k for k in friction_std if names[k][:2] in kinds]
        extra = [b + i for i, name in enumerate(model.friction_model.extra_names()) if name[:2] in kinds]
        self.friction = [position[k] for k in friction_std] + extra
        self.friction_std = friction_std
        self.names = [names[k] for k in friction_std] + [model.parameter_names[k] for k in extra]
        self.b = b


def _stack(observations: Sequence[Observation], columns: Any) -> tuple[Array, Array, Array, Array]:
    a, y, joint, used = [], [], [], []
    for obs in observations:
        m, n, _ = obs.Y.shape
        a.append(columns(obs).reshape(m * n, -1))
        y.append(obs.tau.reshape(-1))
        joint.append(np.tile(np.arange(n), m))
        used.append(obs.used.reshape(-1))
    return np.concatenate(a), np.concatenate(y), np.concatenate(joint), np.concatenate(used)


def _update(model: DynamicModel, chi: Array, parameters: Array) -> DynamicModel:
    return DynamicModel(model.chain, model.base, parameters[: model.base.count], standard=chi,
                        friction_model=model.friction_model, friction_parameters=parameters[model.base.count :])


def _fit(model: DynamicModel, datasets: Sequence[Dataset], options: ProcessingOptions, inertia: bool,
         kinds: Sequence[str]) -> DynamicModel:
    """:data:`ITERATIONS` passes of the bounded weighted least squares (module docstring)."""
    layout = _Layout(model, inertia, kinds)
    chi0 = model.standard if model.standard is not None else model.equivalent_standard
    chi0 = np.asarray(chi0, dtype=float)
    m0, h0 = chi0[layout.payload[0]], chi0[layout.payload[1:4]]
    current = model
    for _ in range(ITERATIONS):
        observations = [process(d, model, options, load_model=current) for d in datasets]
        k_payload = model.base.K[:, layout.payload]

        def columns(obs: Observation) -> Array:
            return np.concatenate([obs.Y[..., : layout.b] @ k_payload, obs.Y[..., layout.friction]], axis=-1)

        a, y, joint, used = _stack(observations, columns)
        # the fixed part: the old model with the friction columns' values removed (they are unknowns)
        fixed = model.parameters.copy()
        fixed[layout.friction] = 0.0
        chi_fixed = chi0.copy()
        if not inertia:  # the point-mass inertia of the current payload estimate (set below), held fixed
            chi_fixed[layout.inertia] = np.asarray(current.standard, dtype=float)[layout.inertia]
            fixed[: layout.b] = model.base.K @ chi_fixed
            fixed[layout.friction] = 0.0
        y_fixed = np.concatenate([(obs.Y @ fixed).reshape(-1) for obs in observations])
        rows = used
        # weights: the residual of the previous pass's model (the old model's would count the payload's
        # own torque as noise and weigh the joints that carry it least)
        residual = (y - np.concatenate([(obs.Y @ current.parameters).reshape(-1) for obs in observations]))[rows]
        count = np.bincount(joint[rows], minlength=model.n_joints)
        sigma = np.sqrt(np.bincount(joint[rows], residual**2, model.n_joints) / np.maximum(count, 1))
        weights = 1.0 / np.maximum(sigma, 1e-6)[joint[rows]]
        lower = np.full(a.shape[1], -np.inf)
        for k, name in enumerate(layout.names):
            kind = name.rstrip("0123456789")
            if kind in ("fv", "fc") or kind in NON_NEGATIVE_EXTRAS:
                lower[len(layout.payload) + k] = 0.0
        x = _solve(a[rows] * weights[:, None], (y - y_fixed)[rows] * weights, lower, chi_fixed, layout)
        chi = chi_fixed.copy()
        chi[layout.payload] += x[: len(layout.payload)]
        if not inertia:  # the point mass of this estimate, its own inertia: consistent by construction
            chi[layout.inertia] = chi0[layout.inertia] + point_mass_inertia(chi[layout.payload[0]] - m0,
                                                                            chi[layout.payload[1:4]] - h0)
        friction = x[len(layout.payload) :]
        chi[layout.friction_std] = friction[: len(layout.friction_std)]
        extra = model.friction_parameters.copy()
        extra[np.asarray(layout.friction[len(layout.friction_std) :], dtype=int) - layout.b] = \
            friction[len(layout.friction_std) :]
        parameters = np.concatenate([model.base.K @ chi, extra])
        current = _update(model, chi, parameters)
    return current


def point_mass_inertia(mass: float, first_moment: Array) -> Array:
    """``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]`` about the frame origin of a point mass ``mass`` [kg] with
    first moment ``first_moment = mass c`` [kg m]: ``-[h]x[h]x / m`` (``m [c]x^T [c]x``). Zero for a
    mass below :data:`MIN_POINT_MASS`, and for a mass taken away (``mass < 0``): how the removed body's
    inertia was spread is unknown, and keeping the link's inertia keeps the unchanged payload
    feasible for the consistency constraint."""
    if mass < MIN_POINT_MASS:
        return np.zeros(6)
    h = skew(np.asarray(first_moment, dtype=float))
    return (-h @ h / mass)[[0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]]


def _solve(a: Array, y: Array, lower: Array, chi_fixed: Array, layout: _Layout) -> Array:
    """``min ||a x - y||`` with ``x >= lower`` and the last link consistent (module docstring), on the
    triangular factor of ``a`` (cvxpy, as the consistent estimator): a point mass added (no inertia
    estimated, mass change >= 0) needs no further constraint; else the last link's pseudo-inertia
    (``chi_fixed`` plus the payload part of ``x``) positive definite."""
    import cvxpy as cp

    from ...dynamics.parameters import PSEUDO_INERTIA_MAP, pseudo_inertia
    from .least_squares import LENGTH_SCALE, solve_program

    _, r = np.linalg.qr(a)
    q_t_y = np.linalg.lstsq(r.T, a.T @ y, rcond=None)[0]  # Q^T y from the normal equations' factor
    scale = np.maximum(np.linalg.norm(a, axis=0), 1e-12)
    x = cp.Variable(a.shape[1])
    constraints = []
    bounded = np.isfinite(lower)
    if bounded.any():
        constraints.append(cp.multiply(1.0 / scale[bounded], x[np.flatnonzero(bounded)]) >= lower[bounded])
    objective = cp.Minimize(cp.sum_squares((r / scale) @ x - q_t_y))
    if len(layout.payload) == 4:  # a point mass: added, it keeps the link consistent
        solve_program(cp.Problem(objective, constraints))
        if x.value is not None and x.value[0] >= 0.0:
            return np.asarray(x.value) / scale
    link = chi_fixed[layout.link] + cp.hstack([x[k] / scale[k] if k is not None else 0.0 for k in layout.link_unknown])
    j = cp.reshape(PSEUDO_INERTIA_MAP.reshape(16, -1) @ link, (4, 4), order="C")
    # J scaled to entries of order 1 (second moments ~ m L^2, L = LENGTH_SCALE) for the solver
    m = max(float(chi_fixed[layout.link][0]), 1e-3)
    t = np.diag([1.0 / (np.sqrt(m) * LENGTH_SCALE)] * 3 + [1.0 / np.sqrt(m)])
    # the margin: at most the old link's own (an identified link often lies near the boundary), so
    # that leaving the payload unchanged is always feasible
    old = t @ pseudo_inertia(chi_fixed[layout.link]) @ t
    margin = max(min(MARGIN, 0.5 * float(np.linalg.eigvalsh(old)[0])), 0.0)
    constraints.append(t @ j @ t >> margin * np.eye(4))
    status = solve_program(cp.Problem(objective, constraints))
    if x.value is None:
        raise IdentificationError(f"the calibration failed: solver status {status}")
    return np.asarray(x.value) / scale


def _errors(model: DynamicModel, new: DynamicModel, datasets: Sequence[Dataset],
            options: ProcessingOptions) -> dict[str, TorqueErrors]:
    out = {}
    for label, m in (("before", model), ("after", new)):
        observations = [process(d, m, options, load_model=m) for d in datasets]
        tau = np.concatenate([o.tau for o in observations])
        tau_hat = np.concatenate([o.Y @ m.parameters for o in observations])
        out[label] = torque_errors(tau, tau_hat, np.concatenate([o.used for o in observations]))
    return out


def calibrate(model: DynamicModel, datasets: Sequence[Dataset], arm: ArmDescription, *,
              options: ProcessingOptions = ProcessingOptions(), inertia: bool = False,
              holdout: float = 0.3, friction: Sequence[str] | str = "auto") -> Calibration:
    """The recalibrated model of ``datasets`` (module docstring); ``holdout`` in ``[0, 0.9]`` (0: no
    held-out figure). ``friction``: the friction parameters to re-estimate (kinds of
    :data:`FRICTION_KINDS`), or ``auto``: the one of :data:`UPDATES` that predicts the held-out part
    best (without a held-out part: all). The result's consistency is for the caller to check."""
    if not datasets:
        raise IdentificationError("no recording to calibrate on")
    if not 0.0 <= holdout <= 0.9:
        raise IdentificationError(f"holdout must lie in [0, 0.9], got {holdout!r}")
    for data in datasets:
        check_plausible(data, arm)
    options = dataclasses.replace(options, period=None)
    if model.standard is None:
        raise IdentificationError(f"model {model.source or ''}: no standard parameters (identify it with the "
                                  f"consistent method): the payload is a change of the last link's standard parameters")
    held_out, choice = None, {}
    candidates = dict(UPDATES) if friction == "auto" else {"as requested": tuple(friction)}
    if holdout > 0:
        parts = [split_holdout(d, holdout) for d in datasets]
        if min(p[1].n_samples for p in parts) >= MIN_HOLDOUT_SAMPLES:
            for label, kinds in candidates.items():  # narrowest first
                trial = _fit(model, [p[0] for p in parts], options, inertia, kinds)
                errors = _errors(model, trial, [p[1] for p in parts], options)
                choice[label] = errors["after"].moving
                if held_out is None or errors["after"].moving < (1.0 - WIDER_GAIN) * held_out["after"].moving:
                    held_out, selected = errors, label
    if not choice:  # no held-out part: the widest update
        selected = list(candidates)[-1]
    new = _fit(model, datasets, options, inertia, candidates[selected])
    layout = _Layout(model, inertia)
    chi_old, chi_new = np.asarray(model.standard, dtype=float), np.asarray(new.standard, dtype=float)
    d = chi_new[layout.payload[:4]] - chi_old[layout.payload[:4]]
    d_inertia = chi_new[layout.inertia] - chi_old[layout.inertia]
    com = d[1:4] / d[0] if abs(d[0]) > 1e-9 else np.zeros(3)
    return Calibration(new, float(d[0]), com, d_inertia, _friction_values(model), _friction_values(new), held_out,
                       _errors(model, new, datasets, options), int(sum(x.n_samples for x in datasets)), selected,
                       choice)


def consistency_problems(calibration: Calibration, arm: ArmDescription) -> tuple[str, ...]:
    """The consistency check's problems of the calibrated model (empty: the controllers accept it)."""
    return assess_model(calibration.model, arm).problems


def _change(title: str, errors: dict[str, TorqueErrors]) -> str:
    before, after = errors["before"], errors["after"]
    return (f"{title}: moving rows {100 * before.moving:.3g}% -> {100 * after.moving:.3g}%, all rows "
            f"{100 * before.overall:.3g}% -> {100 * after.overall:.3g}% (old -> new model)")


def summary_lines(calibration: Calibration, n_joints: int, holdout: float) -> list[str]:
    """What ``calibrate`` and the identification node's recalibration tell the user: the payload
    change, the friction before and after, the held-out error of each candidate update, the chosen
    one, and the errors of the old and the new model (held-out last ``holdout``, all data)."""
    c = calibration
    lines = [f"payload change at link {n_joints}: {c.payload_mass:+.4g} kg, centre of mass "
             f"[{', '.join(f'{v:.4g}' for v in c.payload_com)}] m (DH frame {n_joints})",
             "friction  before  after"]
    lines += [f"{name:8s}  {before:9.4g}  {c.friction_after[name]:9.4g}" for name, before in c.friction_before.items()]
    lines += [f"update '{label}': held-out moving rows {100 * moving:.3g}%"
              for label, moving in c.held_out_moving.items()]
    lines.append(f"chosen: {c.update}")
    if c.held_out is not None:
        lines.append(_change(f"held-out last {100 * holdout:g}% of the recordings", c.held_out))
    lines.append(_change("all the data (fitted on it)", c.all_data))
    return lines


def write_calibration(calibration: Calibration, out: Any, description: str, block: dict[str, Any],
                      from_model: str, data: Sequence[str], *, report: Any = None,
                      report_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the calibrated model file ``out`` (its ``identification`` block: the old model's
    ``block`` plus a ``calibration`` entry: the source model, the recordings and
    :meth:`Calibration.to_dict`) and, with ``report`` (a folder), ``report.json`` (that entry plus
    ``report_extra``), all or nothing. Returns the ``calibration`` entry."""
    from ...dynamics.paramfile import save_model
    from ...files.fileio import output_group
    from ..io.report import write_json

    entry = {"from_model": str(from_model), "data": [str(p) for p in data], **calibration.to_dict()}
    with output_group():
        save_model(out, calibration.model, description, standard=calibration.model.standard,
                   identification={**block, "calibration": entry})
        if report is not None:
            Path(report).mkdir(parents=True, exist_ok=True)
            write_json(Path(report) / "report.json", {**entry, **(report_extra or {})})
    return entry
