"""Standard dynamic parameters: the one documented ordering, names and conversions.

Seed 002, (2.48), (2.55) and Appendix Д: the joint torque model
``tau_e = M(q) q'' + C(q, q') q' + G(q) + Ia q'' + fv q' + fc sign(q') + f0`` is linear in
14 standard parameters per joint i (joint-major ordering, 14 n in all):

``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz, Ia, fv, fc, f0]``

* ``m`` mass [kg]; ``mx, my, mz`` first moments ``m * c`` [kg m], ``c`` the centre of mass in
  DH frame i;
* ``Ixx .. Iyz`` the inertia tensor about the ORIGIN of DH frame i, in frame-i axes, as tensor
  entries (``Ixy = -integral(x y dm)``, the URDF sign convention) [kg m^2];
* ``Ia`` reflected rotor inertia of drive i [kg m^2], ``fv`` viscous [N m s/rad], ``fc`` Coulomb
  [N m], ``f0`` constant offset [N m] friction of joint i (seed 2.58).

A :class:`ModelStructure` selects which columns are part of a model: inertial only (10 per
joint), + rotor inertia (11), + friction (14).
"""
from __future__ import annotations

from enum import Enum
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, LinkInertial
from ..arm.transforms import skew

__all__ = [
    "LINK_PARAMETERS",
    "DRIVE_PARAMETERS",
    "PARAMETERS_PER_JOINT",
    "ModelStructure",
    "parameter_names",
    "structure_mask",
    "inertial_to_standard",
    "standard_to_inertial",
    "standard_parameters",
    "pseudo_inertia",
    "PSEUDO_INERTIA_MAP",
]

Array = NDArray[np.float64]

LINK_PARAMETERS: tuple[str, ...] = ("m", "mx", "my", "mz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")
DRIVE_PARAMETERS: tuple[str, ...] = ("Ia", "fv", "fc", "f0")
PARAMETERS_PER_JOINT = len(LINK_PARAMETERS) + len(DRIVE_PARAMETERS)


class ModelStructure(str, Enum):
    """Which terms a model has: ``inertial`` (links only), ``rotor`` (+ Ia), ``full`` (+ fv, fc, f0)."""

    INERTIAL = "inertial"
    ROTOR = "rotor"
    FULL = "full"


def parameter_names(n_joints: int) -> list[str]:
    """Names of the 14 n standard parameters, e.g. ``m1, mx1, ..., Iyz1, Ia1, fv1, fc1, f01, m2, ...``."""
    return [f"{p}{i}" for i in range(1, n_joints + 1) for p in LINK_PARAMETERS + DRIVE_PARAMETERS]


def structure_mask(n_joints: int, structure: ModelStructure | str) -> NDArray[np.bool_]:
    """Boolean mask over the 14 n standard parameters of the columns in ``structure``."""
    structure = ModelStructure(structure)
    per_joint = np.zeros(PARAMETERS_PER_JOINT, dtype=bool)
    per_joint[: len(LINK_PARAMETERS)] = True
    if structure in (ModelStructure.ROTOR, ModelStructure.FULL):
        per_joint[len(LINK_PARAMETERS)] = True
    if structure is ModelStructure.FULL:
        per_joint[len(LINK_PARAMETERS) + 1 :] = True
    return np.tile(per_joint, n_joints)


def inertial_to_standard(link: LinkInertial) -> Array:
    """``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz]`` of a link given about its CoM.

    Parallel-axis theorem: ``I_O = I_C + m (|c|^2 E - c c^T) = I_C - m [c]x [c]x``.
    """
    m, c = link.mass, link.com
    i_o = link.inertia - m * skew(c) @ skew(c)
    return np.array([m, *(m * c), i_o[0, 0], i_o[1, 1], i_o[2, 2], i_o[0, 1], i_o[0, 2], i_o[1, 2]])


def standard_to_inertial(chi: Sequence[float]) -> LinkInertial:
    """Inverse of :func:`inertial_to_standard` (needs ``m > 0``)."""
    m, mx, my, mz, ixx, iyy, izz, ixy, ixz, iyz = np.asarray(chi, dtype=float)
    if not m > 0:
        raise ValueError(f"mass must be positive to locate the centre of mass, got {m}")
    c = np.array([mx, my, mz]) / m
    i_o = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return LinkInertial(mass=float(m), com=c, inertia=i_o + m * skew(c) @ skew(c))


def standard_parameters(arm: ArmDescription, rotor_inertia: Sequence[float] | None = None,
                        viscous: Sequence[float] | None = None, coulomb: Sequence[float] | None = None,
                        offset: Sequence[float] | None = None) -> Array:
    """The 14 n standard parameter vector of the arm's nominal inertials plus drive terms (default 0)."""
    n = arm.n_joints
    drives = [np.zeros(n) if v is None else np.asarray(v, dtype=float)
              for v in (rotor_inertia, viscous, coulomb, offset)]
    for name, v in zip(DRIVE_PARAMETERS, drives):
        if v.shape != (n,):
            raise ValueError(f"{name}: expected {n} values, got shape {v.shape}")
    chi = np.empty(n * PARAMETERS_PER_JOINT)
    for i, link in enumerate(arm.links):
        block = chi[i * PARAMETERS_PER_JOINT : (i + 1) * PARAMETERS_PER_JOINT]
        block[: len(LINK_PARAMETERS)] = inertial_to_standard(link)
        block[len(LINK_PARAMETERS) :] = [v[i] for v in drives]
    return chi


def pseudo_inertia(link: Sequence[float]) -> Array:
    """The 4x4 pseudo-inertia ``[[Sigma, h], [h^T, m]]`` of ``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz]``."""
    return np.tensordot(PSEUDO_INERTIA_MAP, np.asarray(link, dtype=float), axes=(2, 0))


def _pseudo_inertia_map() -> Array:
    """Constant (4, 4, 10) tensor with ``J = P . chi_link`` (``Sigma = 1/2 tr(I) E - I``)."""
    p = np.zeros((4, 4, len(LINK_PARAMETERS)))
    index = {name: k for k, name in enumerate(LINK_PARAMETERS)}
    p[3, 3, index["m"]] = 1.0
    for axis, name in enumerate(("mx", "my", "mz")):
        p[axis, 3, index[name]] = p[3, axis, index[name]] = 1.0
    for axis, name in enumerate(("Ixx", "Iyy", "Izz")):
        for other in range(3):
            p[other, other, index[name]] = -0.5 if other == axis else 0.5
    for (r, c), name in (((0, 1), "Ixy"), ((0, 2), "Ixz"), ((1, 2), "Iyz")):
        p[r, c, index[name]] = p[c, r, index[name]] = -1.0
    return p


PSEUDO_INERTIA_MAP = _pseudo_inertia_map()  # (4, 4, 10): J = PSEUDO_INERTIA_MAP . chi_link
