"""Synthetic recordings for tests and benchmarks: a known "true" arm moved along smooth periodic
trajectories, its torques computed by the model itself (``tau = Y chi``) plus sensor errors.

* :func:`true_parameters`: the nominal inertials perturbed consistently (mass scaled, centre of
  mass shifted, the second-moment matrix ``Sigma_C = 1/2 tr(I_C) E - I_C`` about the centre of
  mass scaled along its principal axes, so every link stays physically realisable), plus drive
  terms of the youBot's order of magnitude: reflected rotor inertia ``Ia = N^2 J_rotor``
  (0.01-0.05 kg m^2 on the 1:156 and 1:100 joints), viscous, Coulomb and offset friction.
* :func:`foreign_parameters`: a robot unlike ours (issue 31): inertials perturbed further, centres
  of mass moved by up to 3 cm, rotor inertia x1.5 and dry friction: :data:`DRY_DRIVES`, Coulomb
  ``fc sign(q')`` three times :data:`TRUE_DRIVES`' (the torques of :func:`synthetic_dataset` use
  the model's friction, whose Coulomb shape is ``sign`` unless the model says otherwise).
* :func:`fourier_trajectory`: per joint a finite Fourier series (period ``period``) scaled into the
  joint limits and the velocity limit: ``q(t) = c + sum_k a_k sin(k w t) + b_k cos(k w t)``, with
  exact ``q'`` and ``q''``.
* :func:`synthetic_dataset`: Gaussian torque noise (:func:`current_noise_torque`: the torque of a
  motor-current noise) and encoder quantisation of ``q`` (:func:`encoder_resolution`).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from youbot_dynamics.arm.description import ArmDescription, LinkInertial
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.parameters import inertial_to_standard, standard_parameters
from youbot_dynamics.identification.io.dataset import Dataset

__all__ = ["TRUE_DRIVES", "DRY_DRIVES", "true_parameters", "foreign_parameters", "fourier_trajectory",
           "synthetic_dataset", "encoder_resolution", "current_noise_torque"]

Array = NDArray[np.float64]

# Ia [kg m^2], fv [N m s/rad], fc [N m], f0 [N m] per joint
TRUE_DRIVES = {
    "rotor_inertia": (0.033, 0.033, 0.0135, 0.0045, 0.0045),
    "viscous": (0.6, 0.5, 0.3, 0.12, 0.06),
    "coulomb": (0.8, 0.7, 0.4, 0.2, 0.1),
    "offset": (0.05, -0.08, 0.04, 0.02, -0.01),
}
# a foreign robot's drives: rotor inertia x1.5, dry (sign) Coulomb friction x3, viscous friction halved
DRY_DRIVES = {
    "rotor_inertia": tuple(1.5 * v for v in TRUE_DRIVES["rotor_inertia"]),
    "viscous": tuple(0.5 * v for v in TRUE_DRIVES["viscous"]),
    "coulomb": tuple(3.0 * v for v in TRUE_DRIVES["coulomb"]),
    "offset": TRUE_DRIVES["offset"],
}


def _perturbed_link(link: LinkInertial, rng: np.random.Generator, spread: float, com_shift: float) -> LinkInertial:
    mass = link.mass * rng.uniform(1 - spread, 1 + spread)
    com = link.com + rng.normal(0.0, 0.1 * spread, 3) * max(float(np.linalg.norm(link.com)), 0.01)
    com = com + rng.uniform(-1.0, 1.0, 3) * com_shift / np.sqrt(3.0)  # at most com_shift [m]
    sigma = 0.5 * np.trace(link.inertia) * np.eye(3) - link.inertia  # second moments about the CoM
    values, axes = np.linalg.eigh(sigma)
    sigma = axes @ np.diag(values * rng.uniform(1 - spread, 1 + spread, 3)) @ axes.T
    return LinkInertial(mass, com, np.trace(sigma) * np.eye(3) - sigma)


def true_parameters(arm: ArmDescription, seed: int = 0, spread: float = 0.2, drives: dict | None = None,
                    com_shift: float = 0.0) -> Array:
    """The 14 n standard vector of a consistently perturbed arm with the ``drives`` (default
    :data:`TRUE_DRIVES`), centres of mass moved by at most ``com_shift`` [m] more."""
    rng = np.random.default_rng(seed)
    links = tuple(_perturbed_link(link, rng, spread, com_shift) for link in arm.links)
    chi = standard_parameters(arm, **{k: v[: arm.n_joints] for k, v in (drives or TRUE_DRIVES).items()})
    per_joint = chi.size // arm.n_joints
    for i, link in enumerate(links):
        chi[i * per_joint : i * per_joint + 10] = inertial_to_standard(link)
    return chi


def foreign_parameters(arm: ArmDescription, seed: int = 31) -> Array:
    """A robot unlike ours (module docstring): spread 0.3, centres of mass moved by up to 3 cm,
    :data:`DRY_DRIVES`."""
    return true_parameters(arm, seed, spread=0.3, drives=DRY_DRIVES, com_shift=0.03)


def fourier_trajectory(arm: ArmDescription, duration: float, rate: float, seed: int = 0, period: float = 10.0,
                       harmonics: int = 5, margin: float = 0.1,
                       speed: float = 0.8) -> tuple[Array, Array, Array, Array]:
    """``(t, q, q', q'')`` of a random periodic trajectory inside the limits (``margin`` rad) and
    below ``speed`` times the velocity limit, sampled at ``rate`` Hz for ``duration`` s."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(duration * rate))) / rate
    w = 2 * np.pi / period * np.arange(1, harmonics + 1)  # (H,)
    a = rng.normal(size=(arm.n_joints, harmonics)) / np.arange(1, harmonics + 1)
    b = rng.normal(size=(arm.n_joints, harmonics)) / np.arange(1, harmonics + 1)
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))  # (N, H)
    shape = s @ a.T + c @ b.T
    rate_of = (c * w) @ a.T - (s * w) @ b.T
    accel = -(s * w**2) @ a.T - (c * w**2) @ b.T
    half_range = 0.5 * (arm.position_max - arm.position_min) - margin
    centre = 0.5 * (arm.position_max + arm.position_min)
    # bound of |shape| and |shape'| over a full period (not only over the sampled window)
    tt = np.linspace(0.0, period, 4000, endpoint=False)
    st, ct = np.sin(np.outer(tt, w)), np.cos(np.outer(tt, w))
    peak = np.abs(st @ a.T + ct @ b.T).max(axis=0)
    peak_rate = np.abs((ct * w) @ a.T - (st * w) @ b.T).max(axis=0)
    scale = np.minimum(half_range / peak, speed * arm.velocity_max / peak_rate)
    return t, centre + shape * scale, rate_of * scale, accel * scale


def encoder_resolution(arm: ArmDescription) -> Array:
    """Joint angle resolution [rad]: one encoder tick through the gear, ``2 pi / (ticks ratio)``."""
    return 2 * np.pi / (arm.encoder_ticks * arm.gear_ratio)


def current_noise_torque(arm: ArmDescription, current_std: float = 0.01) -> Array:
    """Joint torque noise [N m] of a motor-current noise ``current_std`` [A]: ``tau = i kt N``
    (the driver's torque estimate, ``youbot_hardware.md``); 10 mA gives 0.035-0.052 N m."""
    return current_std * arm.torque_constant * arm.gear_ratio


def synthetic_dataset(model: DynamicModel, t: Array, q: Array, dq: Array, ddq: Array,
                      torque_noise: Array | float = 0.0, position_resolution: Array | float = 0.0,
                      with_velocity: bool = True, with_acceleration: bool = False, seed: int = 0,
                      source: str = "synthetic") -> Dataset:
    """The recording of ``model`` moving along ``(q, q', q'')``: torques with Gaussian noise of std
    ``torque_noise`` [N m] per joint, ``q`` quantised to ``position_resolution`` [rad]; ``q'``/``q''``
    included as asked (exact)."""
    rng = np.random.default_rng(seed)
    tau = model.inverse_dynamics(q, dq, ddq) + rng.normal(size=q.shape) * np.asarray(torque_noise, dtype=float)
    res = np.broadcast_to(np.asarray(position_resolution, dtype=float), (q.shape[1],))
    q_meas = np.where(res > 0, np.round(q / np.where(res > 0, res, 1.0)) * res, q)
    return Dataset(t, q_meas, tau, dq if with_velocity else None, ddq if with_acceleration else None, source)
