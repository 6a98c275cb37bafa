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

**The foreign robot** (:func:`foreign_robot`, ``sim_node`` ``robot: foreign``): a youBot unlike the
nominal model, the simulator's robot and every structure identification fits, for tests that must
not be tuned to our own simulator. Its parameters come from its own ``robot_seed`` (which no
identification input holds): the link inertials as above from ``rng_stream(robot_seed,
PARAMETER_STREAM)``, then the centres of mass of links 3-5 moved by ``d u`` (``u`` a uniform random
direction, ``d`` uniform in :data:`FOREIGN_COM_SHIFT`, 1.5-3 cm; ``rng_stream(robot_seed,
FOREIGN_STREAM)``); rotor inertias x :data:`FOREIGN_ROTOR_FACTOR` (1.5); the sim file's friction
``fv``, ``fc`` and ``f0`` x :data:`FOREIGN_FRICTION_FACTOR` (2), and only those: dry friction as MuJoCo's
own ``frictionloss`` (sticks, then ``fc sign(q')``) and viscous friction as its ``damping``, both
integrated implicitly (no chatter at a 1 ms step); none of the simulator's smooth extra terms
(asymmetric, Stribeck, load-dependent).

**The family of foreign robots** (:data:`FOREIGN_FAMILY`, ``sim_node`` ``robot: foreign_<kind>``): the
foreign robot's inertials and rotor inertias with other friction (each factor multiplies the sim
file's ``fv``, ``fc``, ``f0`` per joint) or heavier links, so that identification and control are
judged on several robots that differ from every fitted structure, not on one:

* ``foreign``: the foreign robot above (friction x2, dry);
* ``dry_wrist``: a friction-dominated wrist, Coulomb friction x3 (joint 4) and x4 (joint 5), viscous
  friction x0.3 there: a joint that sticks, breaks away and slides at a nearly constant torque;
* ``stribeck``: friction x1.5 with a Stribeck dip, static excess ``fs = 0.6 fc`` (breakaway 1.6 x
  Coulomb) decaying with a Stribeck velocity drawn per joint from ``rng_stream(robot_seed,
  FRICTION_STREAM)``, uniform in :data:`FOREIGN_STRIBECK_VELOCITY` (no identification input holds it);
* ``heavy``: every link's mass and inertia x :data:`FOREIGN_HEAVY_FACTOR` (1.5; gravity torques
  x1.5), friction x2 as ``foreign``;
* ``low_friction``: friction x0.3.

**Payload** of mass ``m_p`` with its centre of mass at ``p_t`` in the tool frame (``sim.payload_mass``,
``sim.payload_position``; at run time :meth:`.ArmSimulator.set_payload`, optionally with an inertia
``I_p`` about its centre of mass in tool-frame axes): lumped into the last link by adding standard
parameters, ``[m_p, m_p p, I_p' - m_p [p]x [p]x]`` with ``p = R_t p_t + o_t`` and ``I_p' = R_t I_p R_t^T``
in the last DH frame (tool frame ``(R_t, o_t)``).

**Drive terms** (seed 002, 2.58): reflected rotor inertia ``Ia = N^2 J`` (gear ratio ``N``, rotor
inertia ``J`` at the motor), viscous ``fv``, Coulomb ``fc`` and offset ``f0`` friction; these are in
the 14 n standard parameters. The **friction beyond the seed's** (:class:`TrueFriction`:
asymmetric Coulomb ``fa``, Stribeck ``fs, vs``, load-dependent ``fl``) is not: no standard
parameter holds it, and no structure identification fits holds it exactly.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, LinkInertial
from ..dynamics.friction import coulomb_shape, friction_torque, term_feature
from ..dynamics.parameters import inertial_to_standard, standard_parameters, standard_to_inertial
from ..dynamics.payload import Payload, payload_parameters
from .config import FOREIGN_KINDS, Perturbation, SimConfig

__all__ = ["PARAMETER_STREAM", "NOISE_STREAM", "PUBLISH_STREAM", "FOREIGN_STREAM", "ASYMMETRY_VELOCITY",
           "FOREIGN_COM_LINKS", "FOREIGN_COM_SHIFT", "FOREIGN_ROTOR_FACTOR", "FOREIGN_FRICTION_FACTOR",
           "FOREIGN_STRIBECK_VELOCITY", "FOREIGN_HEAVY_FACTOR", "FRICTION_STREAM", "ForeignKind", "FOREIGN_FAMILY",
           "Payload", "TrueFriction", "rng_stream", "perturb_link", "foreign_robot", "foreign_kind",
           "configured_payload", "true_arm", "true_standard_parameters", "armature"]

Array = NDArray[np.float64]

PARAMETER_STREAM = 0  # random stream of the true inertial parameters
NOISE_STREAM = 1  # random stream of the torque measurement noise
PUBLISH_STREAM = 2  # random stream of the publication jitter of the simulator node
FOREIGN_STREAM = 3  # random stream of the foreign robot's centre-of-mass shifts
FRICTION_STREAM = 4  # random stream of the foreign robots' Stribeck velocities
FOREIGN_COM_LINKS = (2, 3, 4)  # links 3-5 (0-based): their centres of mass move
FOREIGN_COM_SHIFT = (0.015, 0.03)  # [m] range of the length of that move
FOREIGN_ROTOR_FACTOR = 1.5  # rotor inertias of the foreign robot / the simulator's
FOREIGN_FRICTION_FACTOR = 2.0  # friction fv, fc, f0 of the foreign robot / the sim file's
ASYMMETRY_VELOCITY = 0.005  # [rad/s]: the asymmetric Coulomb term is fa |tanh(q' / this)|
FOREIGN_STRIBECK_VELOCITY = (0.015, 0.09)  # [rad/s] range of the stribeck member's Stribeck velocities
FOREIGN_HEAVY_FACTOR = 1.5  # link masses and inertias of the heavy member / the foreign robot's


@dataclass(frozen=True)
class ForeignKind:
    """A member of the family of foreign robots (module docstring): factors of the sim file's
    friction per joint (viscous, Coulomb and offset), the Stribeck excess as a fraction of the
    Coulomb level (0: none) and the factor of every link's mass and inertia."""

    viscous: tuple[float, ...]
    coulomb: tuple[float, ...]
    offset: tuple[float, ...]
    stribeck_ratio: float = 0.0
    mass_factor: float = 1.0


_TWICE = (FOREIGN_FRICTION_FACTOR,) * 5
#: the family of foreign robots, by kind (module docstring); ``foreign`` is the foreign robot
FOREIGN_FAMILY: dict[str, ForeignKind] = {
    "foreign": ForeignKind(_TWICE, _TWICE, _TWICE),
    "dry_wrist": ForeignKind((2.0, 2.0, 2.0, 0.3, 0.3), (2.0, 2.0, 2.0, 3.0, 4.0), _TWICE),
    "stribeck": ForeignKind((1.5,) * 5, (1.5,) * 5, (1.5,) * 5, stribeck_ratio=0.6),
    "heavy": ForeignKind(_TWICE, _TWICE, _TWICE, mass_factor=FOREIGN_HEAVY_FACTOR),
    "low_friction": ForeignKind((0.3,) * 5, (0.3,) * 5, (0.3,) * 5),
}
assert tuple(FOREIGN_FAMILY) == FOREIGN_KINDS, "the family's kinds are named in .config (ROBOTS)"


@dataclass(frozen=True)
class TrueFriction:
    """The simulated joint friction per joint (``config/sim.yaml``, all [N m] except where noted):
    viscous ``fv`` [N m s/rad], Coulomb ``fc``, offset ``f0``, asymmetric ``fa``, Stribeck ``fs``
    with Stribeck velocity ``vs`` [rad/s], load-dependent ``fl`` [-]. While a joint slides:
    ``tau_f = fv q' + (fc + fl |L|) sign(q') + fa |tanh(q' / ASYMMETRY_VELOCITY)| +
    fs exp(-(q'/vs)^2) sign(q') + f0`` (``L`` the link-side rigid-body torque); at rest it sticks
    inside ``f0 +- (fc + fs + fl |L|)``."""

    viscous: Array
    coulomb: Array
    offset: Array
    asymmetry: Array
    stribeck: Array
    stribeck_velocity: Array
    load: Array

    @classmethod
    def of(cls, config: SimConfig, seed_terms: bool = True, extra_terms: bool = True) -> "TrueFriction":
        """The friction of ``config``; the seed's terms ``fv, fc, f0`` and the extra terms ``fa, fs, fl``
        zero unless ``seed_terms`` and ``extra_terms`` (the simulator's realism) respectively."""
        zero = np.zeros(config.n_joints)
        seed = (config.viscous_friction, config.coulomb_friction, config.friction_offset) if seed_terms else (zero,) * 3
        extra = ((config.coulomb_asymmetry, config.stribeck_friction, config.load_friction) if extra_terms
                 else (zero,) * 3)
        return cls(*seed, extra[0], extra[1], config.stribeck_velocity, extra[2])

    @property
    def has_extra(self) -> bool:
        return bool(np.any(self.asymmetry) or np.any(self.stribeck) or np.any(self.load))

    def sliding(self, dq: Array, load: Array) -> Array:
        """``tau_f`` while sliding at ``dq`` (no zero entries) under rigid-body torque ``load``."""
        dq = np.asarray(dq, dtype=float)
        sign = coulomb_shape(dq, 0.0)
        extra = (self.asymmetry * term_feature("asymmetric", dq, self.asymmetric_shape(dq))
                 + self.stribeck * term_feature("stribeck", dq, sign, self.stribeck_velocity)
                 + self.load * term_feature("load", dq, sign, load=load))
        return friction_torque(self.viscous, self.coulomb, self.offset, dq, sign, extra)

    @staticmethod
    def asymmetric_shape(dq: Array) -> Array:
        """The asymmetric term's own Coulomb shape, ``tanh(q' / ASYMMETRY_VELOCITY)``: continuous through
        rest, where the simulator applies it as a torque (the other terms' shape is ``sign``)."""
        return coulomb_shape(dq, ASYMMETRY_VELOCITY)


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


def foreign_robot(config: SimConfig, robot_seed: int, kind: str = "foreign") -> SimConfig:
    """``config`` as the foreign robot ``kind`` of :data:`FOREIGN_FAMILY` with ``robot_seed``
    (module docstring): rotor inertias and friction changed here, the link inertials by
    :func:`true_arm` (``config.robot``)."""
    if isinstance(robot_seed, bool) or not isinstance(robot_seed, int) or robot_seed < 0:
        raise ValueError(f"robot_seed: expected a non-negative integer, got {robot_seed!r}")
    if kind not in FOREIGN_FAMILY:
        raise ValueError(f"unknown foreign robot '{kind}'; known: {', '.join(FOREIGN_FAMILY)}")
    member, n = FOREIGN_FAMILY[kind], config.n_joints
    coulomb = np.asarray(member.coulomb[:n]) * config.coulomb_friction
    draws = rng_stream(robot_seed, FRICTION_STREAM).uniform(size=n)
    low, high = FOREIGN_STRIBECK_VELOCITY
    zero = np.zeros(n)
    return dataclasses.replace(
        config, robot="foreign" if kind == "foreign" else f"foreign_{kind}", robot_seed=robot_seed,
        motor_rotor_inertia=FOREIGN_ROTOR_FACTOR * config.motor_rotor_inertia,
        viscous_friction=np.asarray(member.viscous[:n]) * config.viscous_friction, coulomb_friction=coulomb,
        friction_offset=np.asarray(member.offset[:n]) * config.friction_offset, coulomb_asymmetry=zero,
        stribeck_friction=member.stribeck_ratio * coulomb, stribeck_velocity=low + (high - low) * draws,
        load_friction=zero)


def foreign_kind(robot: str) -> str | None:
    """The :data:`FOREIGN_FAMILY` kind of a config's ``robot`` (``foreign``, ``foreign_<kind>``), or None."""
    kind = "foreign" if robot == "foreign" else robot.removeprefix("foreign_")
    return kind if kind in FOREIGN_FAMILY and robot.startswith("foreign") else None


def _com_shifts(rng: np.random.Generator) -> Array:
    """The foreign robot's centre-of-mass moves [m] of :data:`FOREIGN_COM_LINKS` (rows), from ``rng``."""
    direction = rng.standard_normal((len(FOREIGN_COM_LINKS), 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return direction * rng.uniform(*FOREIGN_COM_SHIFT, size=(len(FOREIGN_COM_LINKS), 1))


def _with_payload(link: LinkInertial, payload: Payload, tool: Array) -> LinkInertial:
    return standard_to_inertial(inertial_to_standard(link) + payload_parameters(payload, tool))


def _moved_com(link: LinkInertial, shift: Array) -> LinkInertial:
    """``link`` with its centre of mass moved by ``shift``, its inertia about the centre of mass kept."""
    return LinkInertial(mass=link.mass, com=link.com + shift, inertia=link.inertia)


def configured_payload(config: SimConfig) -> Payload:
    """The payload of ``config`` (``payload_mass`` at ``payload_position``, a point mass)."""
    return Payload.of(config.payload_mass, config.payload_position)


def true_arm(arm: ArmDescription, config: SimConfig, payload: Payload | None = None) -> ArmDescription:
    """``arm`` with the perturbed link inertials and the payload (default: the configured one) lumped
    into the last link."""
    kind = foreign_kind(config.robot)
    rng = rng_stream(config.robot_seed if kind else config.seed, PARAMETER_STREAM)
    links = [perturb_link(link, config.perturbation, rng) for link in arm.links]
    if kind:
        for k, shift in zip(FOREIGN_COM_LINKS, _com_shifts(rng_stream(config.robot_seed, FOREIGN_STREAM))):
            links[k] = _moved_com(links[k], shift)
        factor = FOREIGN_FAMILY[kind].mass_factor
        links = [LinkInertial(factor * link.mass, link.com, factor * link.inertia) for link in links]
    payload = configured_payload(config) if payload is None else payload
    if payload.mass > 0:
        links[-1] = _with_payload(links[-1], payload, arm.tool)
    return dataclasses.replace(arm, links=tuple(links))


def armature(arm: ArmDescription, config: SimConfig) -> Array:
    """Reflected rotor inertia ``Ia = N^2 J`` per joint [kg m^2]."""
    return arm.gear_ratio ** 2 * config.motor_rotor_inertia


def true_standard_parameters(arm: ArmDescription, config: SimConfig, payload: Payload | None = None) -> Array:
    """The 14 n standard parameters of the true robot (ordering of :mod:`..dynamics.parameters`) with
    ``payload`` (default: the configured one)."""
    return standard_parameters(true_arm(arm, config, payload), rotor_inertia=armature(arm, config),
                               viscous=config.viscous_friction, coulomb=config.coulomb_friction,
                               offset=config.friction_offset)
