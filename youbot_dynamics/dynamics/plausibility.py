"""Plausibility bounds: what a youBot's dynamic model can be (issue 35, item 1).

Physically consistent (:mod:`.consistency`) is not plausible: a recording whose torques are in
mN m gives a consistent model with a 961 kg link 1, and a controller designed on it commands the
arm into its stops. Every bound here comes from the arm description (``config/youbot_arm.yaml``,
the one source of truth: drives, limits, nominal inertials; :class:`PlausibilityBounds`), with the
stated factors :data:`MASS_FACTOR` and :data:`INERTIA_FACTOR`:

* **Gravity**: ``max |G_j(q)|`` over the :data:`~.consistency.SAMPLES` configurations of
  :func:`~.consistency.sample_configurations` at most the drive's peak torque ``max_current kt N``
  (:attr:`~..arm.description.ArmDescription.drive_torque_limit`, 30, 30, 13, 9.9, 6.1 N m): the arm holds itself up
  anywhere inside its limits (nominal model: 5.0 N m on joint 2).
* **Joint inertia**: ``max M_jj(q)`` over the same configurations at most :data:`INERTIA_FACTOR` times
  the nominal model's (the reflected rotor inertia ``N^2 J`` that dominates it is assumed, not measured).
* **Friction**: the friction torque opposing the motion of each joint at ``+-velocity_max`` (every
  term of the model's friction model, load-dependent ones at the sampled configurations) at most the
  drive's peak torque: the drives move the joints at that speed.
* **Standard parameters** (when the model carries them: ``consistent`` estimates, calibrated and
  nominal models): each link's mass, and all links' together, at most ``m_max`` = :data:`MASS_FACTOR`
  times the arm description's total (5.63 kg; the arm is specified at 5.3 kg with a 0.5 kg payload,
  /work/shared/youbot_hardware.md). A per-link bound on the link's own CAD mass would refuse real
  estimates: the data do not tell the links' masses apart (the regrouped base parameters), and the
  consistent estimates of the shared real runs put 3-10 kg on link 2 (7-13.5 kg in all). Each link's first
  moment ``|m c|`` at most ``m_max R``, its centre of mass within the arm's reach
  ``R = sum |a_i| + |d_i|`` (0.688 m) of its joint frame; its inertia about the frame origin,
  ``tr(I_O) = 2 integral |r|^2 dm``, at most ``2 m_max R^2``; the rotor inertia ``Ia`` at most
  :data:`INERTIA_FACTOR` times ``N^2 J``.

The lower bounds (masses, rotor inertias and friction not negative, the mass matrix positive
definite) are :mod:`.consistency`'s. The torque bounds hold for every model, base parameters only
(``ols``, ``wls``) included, whatever the regrouping. The youBot's nominal model and the identified
models of the shared real runs lie well inside (at most 0.6 of a bound: doc/safety.md), and so do
those of the synthetic arm of the tests (every test that identifies writes and reads them).
A model outside is refused by :func:`check_plausible` (:class:`ModelPlausibilityError`, one line naming
each parameter, its value and its bound) unless the caller allows it (``--allow-implausible`` of
``identify``, ``calibrate`` and ``predict``: a warning instead); :func:`~.paramfile.load_model` runs it on
every model file it reads, so the controllers, the in-loop hosts, the observer and the
identification node refuse such a file at start-up (they have no override: a model they would drive
the arm with must be plausible). :data:`KP_MAX` and :data:`KD_MAX` bound the gains a node accepts
(its parameter schema's ``element_bounds<>``). See doc/safety.md, "Plausibility bounds".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, default_arm
from .model import DynamicModel
from .consistency import sample_configurations
from .errors import ModelFileError
from .nominal import nominal_model
from .parameters import PARAMETERS_PER_JOINT

__all__ = ["MASS_FACTOR", "INERTIA_FACTOR", "KP_MAX", "KD_MAX", "ModelPlausibilityError", "PlausibilityBounds",
           "bounds_of", "plausibility_problems", "check_plausible"]

Array = NDArray[np.float64]

#: a link's mass, and the links' total, at most this multiple of the arm description's total mass (module
#: docstring: real estimates reach 2.4 x; a torque in mN m or a motor torque for a joint torque: 100-1000 x)
MASS_FACTOR = 4.0
#: the joint inertia ``M_jj`` and the rotor inertia ``Ia`` at most this multiple of the nominal model's:
#: the motors' rotor inertia ``J`` behind ``N^2 J`` is assumed (config/youbot_arm.yaml), an order of magnitude
INERTIA_FACTOR = 10.0
MAX_SHOWN = 4  # problems named in the one-line message (the rest counted)


def _gain_bound(arm: ArmDescription, counts_per_radian: Array) -> float:
    """[N m per unit] the largest gain of any joint that turns one count of its measurement into
    no more than its drive's peak torque."""
    return float(np.max(arm.drive_torque_limit * counts_per_radian))


#: [N m/rad] the largest position gain a controller accepts (``kp``, ``effort_kp``): above it, one
#: encoder count (``2 pi / (ticks N)``, 1.0e-5 rad on joints 1-2) is worth more than the drive's peak
#: torque on every joint, and the torque chatters between the limits on quantisation noise (3.0e6)
KP_MAX = _gain_bound(default_arm(), default_arm().encoder_ticks * default_arm().gear_ratio / (2.0 * np.pi))
#: [N m s/rad] the largest velocity gain (``kd``, ``effort_kd``): the same for one step of the drives'
#: velocity, an integer motor rpm (``2 pi / (60 N)``, 6.7e-4 rad/s on joints 1-2) (4.5e4)
KD_MAX = _gain_bound(default_arm(), 60.0 * default_arm().gear_ratio / (2.0 * np.pi))


class ModelPlausibilityError(ModelFileError):
    """A model far outside what the arm can be (see the module docstring); names each bound exceeded."""


@dataclass(frozen=True)
class PlausibilityBounds:
    """The bounds of :func:`plausibility_problems`, all derived from one arm description."""

    peak_torque: Array  # [N m] per joint: the drives' peak torque (gravity and friction bound)
    joint_inertia: Array  # [kg m^2] per joint: bound of max_q M_jj(q)
    nominal_mass: float  # [kg] the arm description's links together
    reach: float  # [m] sum of |a_i| + |d_i| of the DH table
    rotor_inertia: Array  # [kg m^2] per joint: bound of Ia

    @classmethod
    def of(cls, arm: ArmDescription) -> "PlausibilityBounds":
        """The bounds of ``arm`` (its nominal model's joint inertias at the sampled configurations)."""
        nominal, _ = nominal_model(arm)
        inertia = _joint_inertia(nominal, sample_configurations(arm))
        return cls(peak_torque=np.asarray(arm.drive_torque_limit, dtype=float),
                   joint_inertia=INERTIA_FACTOR * inertia,
                   nominal_mass=float(sum(link.mass for link in arm.links)),
                   reach=float(np.sum(np.abs(arm.dh_a)) + np.sum(np.abs(arm.dh_d))),
                   rotor_inertia=INERTIA_FACTOR * np.asarray(arm.armature, dtype=float))

    @property
    def mass(self) -> float:
        """[kg] of a link and of all links together: :data:`MASS_FACTOR` times the nominal total."""
        return MASS_FACTOR * self.nominal_mass

    @property
    def first_moment(self) -> float:
        """[kg m] ``|m c|`` of a link: ``m_max R``, its centre of mass within the arm's reach ``R``."""
        return self.mass * self.reach

    @property
    def inertia_trace(self) -> float:
        """[kg m^2] the trace of a link's inertia about its frame origin: ``2 m_max R^2`` (all its mass
        within ``R`` of the origin: ``tr(I_O) = 2 integral |r|^2 dm``)."""
        return 2.0 * self.mass * self.reach ** 2


_BOUNDS: dict[int, tuple[ArmDescription, PlausibilityBounds]] = {}  # id(arm) -> (arm, its bounds)


def bounds_of(arm: ArmDescription) -> PlausibilityBounds:
    """``PlausibilityBounds.of(arm)``, computed once per arm description object (0.1-1 s: the
    nominal model's base parameters)."""
    hit = _BOUNDS.get(id(arm))
    if hit is None or hit[0] is not arm:
        hit = _BOUNDS[id(arm)] = (arm, PlausibilityBounds.of(arm))
    return hit[1]


def _joint_inertia(model: DynamicModel, q: Array) -> Array:
    """``max_q M_jj(q)`` per joint over the configurations ``q`` (k, n)."""
    return np.einsum("kjj->kj", model.mass_matrix(q)).max(axis=0)


def _torque_problems(model: DynamicModel, bounds: PlausibilityBounds, q: Array, velocity_max: Array) -> list[str]:
    """Gravity, joint inertia and friction at the velocity limit against their bounds."""
    problems = []
    gravity = np.abs(model.gravity(q))
    inertia = _joint_inertia(model, q)
    # the friction opposing motion at +-velocity_max (a negative term is consistency's to refuse)
    friction = np.maximum(*(sign * model.friction(np.broadcast_to(sign * velocity_max, q.shape), q)
                            for sign in (1.0, -1.0))).max(axis=0)
    for j in range(model.n_joints):
        peak = bounds.peak_torque[j]
        if gravity[:, j].max() > peak:
            k = int(np.argmax(gravity[:, j]))
            problems.append(f"gravity torque of joint {j + 1} {gravity[k, j]:.4g} N m at q = "
                            f"{np.round(q[k], 3).tolist()} rad, above the drive's peak torque {peak:.3g} N m")
        if inertia[j] > bounds.joint_inertia[j]:
            problems.append(f"M{j + 1}{j + 1} up to {inertia[j]:.4g} kg m^2, above {INERTIA_FACTOR:g} x the "
                            f"nominal model's {bounds.joint_inertia[j] / INERTIA_FACTOR:.3g} kg m^2")
        if friction[j] > peak:
            problems.append(f"friction torque of joint {j + 1} at its velocity limit {velocity_max[j]:.3g} rad/s "
                            f"{friction[j]:.4g} N m, above the drive's peak torque {peak:.3g} N m")
    return problems


def _standard_problems(chi: Array, bounds: PlausibilityBounds) -> list[str]:
    """Masses, first moments, inertias and rotor inertias of the 14 n standard vector ``chi``."""
    problems = []
    links = chi.reshape(-1, PARAMETERS_PER_JOINT)
    mass_bound = f"{bounds.mass:.3g} kg ({MASS_FACTOR:g} x the arm's nominal {bounds.nominal_mass:.3g} kg)"
    for i, link in enumerate(links, start=1):
        mass, first, trace, rotor = link[0], float(np.linalg.norm(link[1:4])), link[4:7].sum(), link[10]
        if mass > bounds.mass:
            problems.append(f"m{i} = {mass:.4g} kg, above {mass_bound}")
        if first > bounds.first_moment:
            problems.append(f"|mx{i}, my{i}, mz{i}| = {first:.4g} kg m, above m_max R = {bounds.first_moment:.3g} kg m")
        if trace > bounds.inertia_trace:
            problems.append(f"Ixx{i} + Iyy{i} + Izz{i} = {trace:.4g} kg m^2, above 2 m_max R^2 = "
                            f"{bounds.inertia_trace:.3g} kg m^2")
        if rotor > bounds.rotor_inertia[i - 1]:
            problems.append(f"Ia{i} = {rotor:.4g} kg m^2, above {INERTIA_FACTOR:g} x the nominal N^2 J "
                            f"{bounds.rotor_inertia[i - 1] / INERTIA_FACTOR:.3g} kg m^2")
    if links[:, 0].sum() > bounds.mass:
        problems.append(f"total mass m1 + ... + m{len(links)} = {links[:, 0].sum():.4g} kg, above {mass_bound}")
    return problems


def plausibility_problems(model: DynamicModel, arm: ArmDescription,
                          bounds: PlausibilityBounds | None = None) -> list[str]:
    """Every bound of the module docstring that ``model`` exceeds (empty: plausible); ``bounds``
    default to :func:`bounds_of` ``arm``."""
    if model.n_joints != arm.n_joints:  # another arm's model: the consistency check refuses it, naming the chain
        return []
    bounds = bounds_of(arm) if bounds is None else bounds
    problems = []
    if model.standard is not None and np.size(model.standard) == PARAMETERS_PER_JOINT * arm.n_joints:
        problems += _standard_problems(np.asarray(model.standard, dtype=float), bounds)
    return problems + _torque_problems(model, bounds, sample_configurations(arm),
                                       np.asarray(arm.velocity_max, dtype=float))


def check_plausible(model: DynamicModel, arm: ArmDescription, *, source: str | None = None, allow: bool = False,
                    override: str = "") -> str | None:
    """:class:`ModelPlausibilityError` (one line: ``source``, default ``model file <its file>``, the
    problems, then ``override``: how to use it anyway) if ``model`` is not plausible for ``arm``; with
    ``allow`` that message is returned instead (for a warning). None if plausible."""
    problems = plausibility_problems(model, arm)
    if not problems:
        return None
    where = source if source is not None else f"model file {model.source}" if model.source else "model"
    more = len(problems) - MAX_SHOWN
    shown = "; ".join(problems[:MAX_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    message = (f"{where}: not a plausible youBot model (torques in another unit? doc/safety.md, Plausibility "
               f"bounds): {shown}{f' ({override})' if override and not allow else ''}")
    if allow:
        return message
    raise ModelPlausibilityError(message)
