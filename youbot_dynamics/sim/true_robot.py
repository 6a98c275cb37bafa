"""The "true robot" the simulator runs: nominal parameters perturbed reproducibly, plus drive terms.

**Link inertials** (per link i, in the order of the links; random draws from the parameter stream
of :func:`rng_stream` in this order: 1 for the mass, 3 for the centre of mass, 3 for the inertia):

* mass ``m' = m exp(s_m e_m)`` (log-normal: always positive, median ``m``);
* centre of mass ``c' = c + s_c e_c`` [m];
* inertia about the centre of mass ``I_C = R diag(l) R^T`` (principal axes ``R``, moments ``l``) is
  perturbed through its principal *second moments* ``s = tr(l)/2 - l`` (``s_x = integral(x^2 dm)``
  along principal axis x, all ``>= 0`` for a real body): ``s' = (m'/m) s exp(s_I e_I)`` elementwise,
  ``l' = sum(s') - s'``, ``I'_C = R diag(l') R^T``. Any ``s' >= 0`` is the second-moment set of
  some mass distribution, so every perturbed link stays physically consistent (positive definite,
  triangle inequality ``l_a + l_b >= l_c``); the factor ``m'/m`` keeps the radius of gyration.

``e`` are independent standard normal draws, ``s_m, s_c, s_I`` the standard deviations of
``sim.perturbation``.

**Payload** of mass ``m_p`` at the tool frame origin ``p`` (in the last DH frame): a point mass
lumped into the last link by adding standard parameters, ``[m_p, m_p p, -m_p [p]x [p]x]``.

**Drive terms** (seed 002, 2.58): reflected rotor inertia ``Ia = N^2 J`` (gear ratio ``N``, rotor
inertia ``J`` at the motor), viscous ``fv``, Coulomb ``fc`` and offset ``f0`` friction.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from ..arm import ArmDescription, LinkInertial
from ..dynamics.parameters import inertial_to_standard, standard_parameters, standard_to_inertial
from .config import Perturbation, SimConfig

__all__ = ["PARAMETER_STREAM", "NOISE_STREAM", "rng_stream", "perturb_link", "true_arm", "true_standard_parameters",
           "armature"]

Array = NDArray[np.float64]

PARAMETER_STREAM = 0  # random stream of the true inertial parameters
NOISE_STREAM = 1  # random stream of the torque measurement noise


def rng_stream(seed: int, stream: int) -> np.random.Generator:
    """Independent generator ``stream`` of ``seed`` (NumPy ``SeedSequence`` spawn key)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))


def perturb_link(link: LinkInertial, perturbation: Perturbation, rng: np.random.Generator) -> LinkInertial:
    """One link's perturbed inertial (see the module docstring); draws 7 normals from ``rng``."""
    mass_ratio = float(np.exp(perturbation.mass_relative_std * rng.standard_normal()))
    com = link.com + perturbation.com_std * rng.standard_normal(3)
    moments, axes = np.linalg.eigh(link.inertia)
    second = moments.sum() / 2.0 - moments
    second = mass_ratio * second * np.exp(perturbation.inertia_relative_std * rng.standard_normal(3))
    moments = second.sum() - second
    inertia = axes @ np.diag(moments) @ axes.T
    return LinkInertial(mass=link.mass * mass_ratio, com=com, inertia=0.5 * (inertia + inertia.T))


def _with_payload(link: LinkInertial, mass: float, position: Array) -> LinkInertial:
    point = LinkInertial(mass=mass, com=np.asarray(position, dtype=float), inertia=np.zeros((3, 3)))
    return standard_to_inertial(inertial_to_standard(link) + inertial_to_standard(point))


def true_arm(arm: ArmDescription, config: SimConfig) -> ArmDescription:
    """``arm`` with the perturbed link inertials and the payload lumped into the last link."""
    rng = rng_stream(config.seed, PARAMETER_STREAM)
    links = [perturb_link(link, config.perturbation, rng) for link in arm.links]
    if config.payload_mass > 0:
        links[-1] = _with_payload(links[-1], config.payload_mass, arm.tool[:3, 3])
    return dataclasses.replace(arm, links=tuple(links))


def armature(arm: ArmDescription, config: SimConfig) -> Array:
    """Reflected rotor inertia ``Ia = N^2 J`` per joint [kg m^2]."""
    return arm.gear_ratio ** 2 * config.motor_rotor_inertia


def true_standard_parameters(arm: ArmDescription, config: SimConfig) -> Array:
    """The 14 n standard parameters of the true robot (ordering of :mod:`..dynamics.parameters`)."""
    return standard_parameters(true_arm(arm, config), rotor_inertia=armature(arm, config),
                               viscous=config.viscous_friction, coulomb=config.coulomb_friction,
                               offset=config.friction_offset)
