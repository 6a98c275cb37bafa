"""The one check of a dynamic model against the arm it is to drive (``predict``, both controllers,
``identify``): a model that would drive the arm into its stops is refused with the reason.

:func:`assess_model` collects every problem into a :class:`ModelReport`; :func:`check_model`
raises :class:`ModelConsistencyError` (a :class:`~.paramfile.ModelFileError`, so a ``ValueError``)
with all of them on one line, naming the model file, the quantity, the joint and the value. Rules:

* **Chain**: joint count, DH ``a``, ``alpha``, ``d``, ``theta_offset`` and ``direction`` equal to the
  arm description's (within :data:`CHAIN_TOLERANCE`): the parameters belong to that geometry.
  (A model file holds no joint names; the joints are matched by order.)
* **Gravity**: the chain's gravity vector equal to the arm description's ``[0, 0, -g]`` (a flipped
  or rotated gravity is refused).
* **Mass matrix**: ``M(q) = D(q) + I_a`` positive definite (smallest eigenvalue > 0) at
  :data:`SAMPLES` deterministic configurations inside the joint limits (:func:`sample_configurations`:
  the corners of the limit box, its centre, and seeded uniform samples); the report gives the
  smallest eigenvalue and where.
* **Drive terms**: rotor inertia ``Ia``, viscous ``fv`` and Coulomb ``fc`` friction not negative,
  for each base parameter that is one of them alone (e.g. ``fc4``; ``Ia1`` of the youBot regroups
  link inertias and is covered by the mass matrix), and for every one in the standard parameters.
  A negligible negative value (an estimate of a term that is zero, e.g. ``-1e-7``) is accepted: its
  torque at the joint's acceleration or velocity limit (``Ia a_max``, ``fv v_max``, ``fc``) must be
  below :data:`NEGLIGIBLE_TORQUE` (0.1 %) of the joint's torque limit ``min(effort_max,
  drive_torque_limit)`` (the youBot: ``fc >= -0.017 .. -0.001 N m``).
* **Extra friction terms** (:mod:`.friction`): Stribeck ``fs`` and load-dependent ``fl`` not negative.
* **Standard parameters** (when the model carries the 14 n vector it came from, e.g. the
  ``standard_parameters`` of a model file): they must give the model's base parameters
  (``beta = K chi``), every mass ``m >= 0`` and every link's pseudo-inertia
  ``J = [[1/2 tr(I) E - I, h], [h^T, m]]`` positive semidefinite (Wensing et al. 2017: a positive
  mass density realises the link; this implies the triangle inequalities of the inertia).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from .chain import DHChain
from .friction import NON_NEGATIVE_EXTRAS
from .model import DynamicModel
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, parameter_names, pseudo_inertia, structure_mask
from .errors import ModelFileError

__all__ = ["SAMPLES", "CHAIN_TOLERANCE", "ModelConsistencyError", "ModelReport", "sample_configurations",
           "assess_model", "check_model", "plausibility"]

Array = NDArray[np.float64]

SAMPLES = 200  # configurations at which M(q) is checked
CHAIN_TOLERANCE = 1e-9  # [m, rad, m/s^2] largest difference of a chain constant from the arm description's
NEGLIGIBLE_TORQUE = 1e-3  # fraction of a joint's torque limit below which a negative drive term is accepted
PSEUDO_INERTIA_TOLERANCE = 1e-9  # relative to the largest entry of J: rounding, not physics
BASE_TOLERANCE = 1e-6  # relative difference of K chi from beta tolerated (rounding; absolute below 1e-6)
# drive terms that are never negative, with what they are and their unit
NON_NEGATIVE = {"Ia": ("rotor inertia", "kg m^2"), "fv": ("viscous friction", "N m s/rad"),
                "fc": ("Coulomb friction", "N m")}


class ModelConsistencyError(ModelFileError):
    """A model that cannot be the arm's (physically impossible, or of another chain or gravity)."""

    def __init__(self, report: "ModelReport") -> None:
        super().__init__(report.message)
        self.report = report


@dataclass(frozen=True)
class ModelReport:
    """What :func:`assess_model` found: ``problems`` (empty: consistent), the smallest eigenvalue of
    ``M(q)`` over the ``samples`` checked configurations and where (``None`` if not evaluated)."""

    source: str
    problems: tuple[str, ...]
    samples: int
    min_eigenvalue: float | None
    min_eigenvalue_q: tuple[float, ...] | None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def message(self) -> str:
        """One line: ``model file X: problem; problem`` (or that it is consistent)."""
        where = f"model file {self.source}" if self.source else "model"
        return f"{where}: {'; '.join(self.problems) if self.problems else 'consistent with the arm description'}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for reports."""
        return {"consistent": self.ok, "problems": list(self.problems), "samples": self.samples,
                "min_mass_matrix_eigenvalue": self.min_eigenvalue,
                "min_mass_matrix_eigenvalue_q": None if self.min_eigenvalue_q is None else list(self.min_eigenvalue_q)}


def _fmt(values: Any) -> str:
    return "[" + ", ".join(f"{v + 0.0:.4g}" for v in np.asarray(values, dtype=float)) + "]"  # no "-0"


def sample_configurations(arm: ArmDescription, count: int = SAMPLES, seed: int = 0) -> Array:
    """``count`` configurations (count, n) inside the joint limits: the box's corners (when there
    are at most ``count / 2`` of them), its centre, then uniform samples of a fixed ``seed``."""
    lo, hi = arm.position_min, arm.position_max
    fixed = [0.5 * (lo + hi)]
    if 2 ** arm.n_joints <= count // 2:
        fixed += [np.where(np.array(corner), hi, lo) for corner in product((False, True), repeat=arm.n_joints)]
    rest = np.random.default_rng(seed).uniform(lo, hi, (max(count - len(fixed), 0), arm.n_joints))
    return np.concatenate([np.array(fixed), rest])[:count]


def _chain_problems(chain: DHChain, arm: ArmDescription) -> list[str]:
    expected = DHChain.from_arm(arm)
    if chain.n_joints != expected.n_joints:
        return [f"chain has {chain.n_joints} joints, the arm description {expected.n_joints}"]
    problems = []
    for key, unit in (("a", "m"), ("alpha", "rad"), ("d", "m"), ("theta_offset", "rad"), ("direction", "")):
        got, want = getattr(chain, key), getattr(expected, key)
        bad = np.flatnonzero(np.abs(got - want) > CHAIN_TOLERANCE)
        if bad.size:
            j = int(bad[0])
            problems.append(f"chain.{key} of joint {j + 1} is {got[j]:.6g}{' ' + unit if unit else ''}, the arm "
                            f"description's {want[j]:.6g}")
    if np.abs(chain.gravity - expected.gravity).max() > CHAIN_TOLERANCE:
        problems.append(f"chain.gravity {_fmt(chain.gravity)} m/s^2 differs from the arm description's "
                        f"{_fmt(expected.gravity)}")
    return problems


def _drive_problem(name: str, value: float, arm: ArmDescription) -> str | None:
    """The problem of a drive term ``name`` (e.g. ``fc4``) more negative than negligible (module
    docstring), else None."""
    match = re.fullmatch(r"(Ia|fv|fc)(\d+)", name)
    if match is None or int(match[2]) > arm.n_joints:
        return None
    kind, joint = match[1], int(match[2]) - 1
    torque = NEGLIGIBLE_TORQUE * arm.torque_limit[joint]
    per = {"Ia": arm.acceleration_max[joint], "fv": arm.velocity_max[joint], "fc": 1.0}[kind]
    if value * per >= -torque:
        return None
    what, unit = NON_NEGATIVE[kind]
    return f"{name} = {value:.4g} {unit}: {what} must not be negative"


def _base_problems(model: DynamicModel, arm: ArmDescription) -> list[str]:
    """Negative drive terms among the base parameters that are one standard parameter alone."""
    out = []
    for row, name, value in zip(model.base.K, model.base.names, model.beta):
        alone = np.count_nonzero(row) == 1 and row[np.flatnonzero(row)[0]] > 0.0
        problem = _drive_problem(name, float(value), arm) if alone else None
        if problem:
            out.append(problem)
    return out


def _extra_problems(model: DynamicModel, arm: ArmDescription, samples: int) -> list[str]:
    """Negative Stribeck ``fs`` or load ``fl`` friction, unless negligible like the drive terms: its
    largest torque (``fs``, ``fl max |G_j(q)|`` over the sampled configurations) below
    :data:`NEGLIGIBLE_TORQUE` of the joint's torque limit."""
    fm = model.friction_model
    if not fm.terms:
        return []
    load = np.abs(model.gravity(sample_configurations(arm, samples))).max(axis=0) if fm.uses_load else None
    problems = []
    for name, value in zip(fm.extra_names(), model.friction_parameters):
        kind, joint = name.rstrip("0123456789"), int(name.lstrip("fasl")) - 1
        if kind not in NON_NEGATIVE_EXTRAS or value >= 0.0:
            continue
        torque = -value * (load[joint] if kind == "fl" else 1.0)
        if torque > NEGLIGIBLE_TORQUE * arm.torque_limit[joint]:
            what = "Stribeck" if kind == "fs" else "load-dependent"
            problems.append(f"{name} = {value:.4g}: the {what} friction must not be negative")
    return problems


def _standard_problems(model: DynamicModel, chi: Array, arm: ArmDescription) -> list[str]:
    """The standard parameters: shape, ``K chi = beta``, masses, pseudo-inertias, drive terms."""
    n = model.n_joints
    if chi.shape != (n * PARAMETERS_PER_JOINT,):
        return [f"standard_parameters: expected {n * PARAMETERS_PER_JOINT} values, got shape {chi.shape}"]
    problems = []
    implied = model.base.from_standard(chi)
    excess = np.abs(implied - model.beta) / (BASE_TOLERANCE * np.maximum(np.abs(model.beta), 1e-6))
    k = int(np.argmax(excess))
    if excess[k] > 1.0:
        problems.append(f"standard_parameters do not give the base parameters ({model.base.names[k]} is "
                        f"{model.beta[k]:.6g}, the standard parameters give {implied[k]:.6g})")
    names = parameter_names(n)
    mask = structure_mask(n, model.base.structure)
    for i in range(n):
        block = chi[i * PARAMETERS_PER_JOINT : (i + 1) * PARAMETERS_PER_JOINT]
        mass = block[0]
        if mass < 0.0:
            problems.append(f"m{i + 1} = {mass:.4g} kg: a mass must not be negative")
        else:
            j = pseudo_inertia(block[: len(LINK_PARAMETERS)])
            smallest = float(np.linalg.eigvalsh(j)[0])
            if smallest < -PSEUDO_INERTIA_TOLERANCE * max(np.abs(j).max(), 1e-12):
                problems.append(f"link {i + 1} inertials (m{i + 1}, mx{i + 1}..Iyz{i + 1}) fit no body: pseudo-inertia "
                                f"not positive semidefinite (smallest eigenvalue {smallest:.3g} kg m^2)")
        for k in range(len(LINK_PARAMETERS), PARAMETERS_PER_JOINT):
            index = i * PARAMETERS_PER_JOINT + k
            problem = _drive_problem(names[index], float(chi[index]), arm) if mask[index] else None
            if problem:
                problems.append(problem)
    return problems


def assess_model(model: DynamicModel, arm: ArmDescription, *, source: str | None = None,
                 samples: int = SAMPLES) -> ModelReport:
    """Every problem of ``model`` as the model of ``arm`` (module docstring); ``source`` names it in
    messages (default: the file it was read from, ``model.source``). Never raises for a problem."""
    problems = _chain_problems(model.chain, arm)
    problems += _base_problems(model, arm)
    if model.standard is not None:
        problems += _standard_problems(model, np.asarray(model.standard, dtype=float), arm)
    problems += _extra_problems(model, arm, samples)
    worst: float | None = None
    worst_q: tuple[float, ...] | None = None
    if model.n_joints == arm.n_joints:
        q = sample_configurations(arm, samples)
        eig = np.linalg.eigvalsh(model.mass_matrix(q))[:, 0]
        k = int(np.argmin(eig))
        worst, worst_q = float(eig[k]), tuple(float(v) for v in q[k])
        bad = int(np.count_nonzero(eig <= 0.0))
        if bad:
            problems.append(f"mass matrix not positive definite at q = {_fmt(q[k])} rad (smallest eigenvalue "
                            f"{worst:.3g} kg m^2; {bad} of {len(q)} configurations inside the joint limits)")
    source = model.source if source is None else source
    return ModelReport(source, tuple(dict.fromkeys(problems)), samples if worst is not None else 0, worst, worst_q)


MASS_RATIO_PLAUSIBLE = (0.5, 2.0)  # identified link mass / CAD mass
COM_DISTANCE_PLAUSIBLE = 0.1  # [m] identified centre of mass from the CAD one


def plausibility(chi: Any, prior: Any) -> list[dict[str, Any]]:
    """Per link, the identified mass and centre of mass (in its DH frame) against the CAD ones of
    ``prior`` (both 14 n standard vectors): ``plausible`` when the mass lies within
    :data:`MASS_RATIO_PLAUSIBLE` times the CAD mass and the centre of mass within
    :data:`COM_DISTANCE_PLAUSIBLE` of the CAD one. Physical consistency does not imply this: a
    consistent estimate may move mass between links where the data cannot tell them apart (the
    youBot's ``m1`` and ``m5`` are regrouped into other base parameters); the report says so."""
    chi = np.asarray(chi, dtype=float).reshape(-1, PARAMETERS_PER_JOINT)
    prior = np.asarray(prior, dtype=float).reshape(-1, PARAMETERS_PER_JOINT)
    out = []
    for i, (link, cad) in enumerate(zip(chi, prior), start=1):
        mass, cad_mass = float(link[0]), float(cad[0])
        com = link[1:4] / mass if mass > 0 else np.full(3, np.nan)
        cad_com = cad[1:4] / cad_mass if cad_mass > 0 else np.full(3, np.nan)
        ratio = mass / cad_mass if cad_mass > 0 else float("nan")
        distance = float(np.linalg.norm(com - cad_com))
        plausible = bool(MASS_RATIO_PLAUSIBLE[0] <= ratio <= MASS_RATIO_PLAUSIBLE[1]
                         and distance <= COM_DISTANCE_PLAUSIBLE)
        out.append({"link": i, "mass_kg": mass, "cad_mass_kg": cad_mass, "mass_ratio": ratio,
                    "com_m": com.tolist(), "cad_com_m": cad_com.tolist(), "com_distance_m": distance,
                    "plausible": plausible})
    return out


def check_model(model: DynamicModel, arm: ArmDescription, *, source: str | None = None,
                samples: int = SAMPLES) -> ModelReport:
    """:func:`assess_model`; raises :class:`ModelConsistencyError` (all problems, one line) unless consistent."""
    report = assess_model(model, arm, source=source, samples=samples)
    if not report.ok:
        raise ModelConsistencyError(report)
    return report
