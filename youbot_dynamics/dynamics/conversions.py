"""Exact linear conversions between standard link parameters and Pinocchio's dynamic parameters.

Standard link parameters (:mod:`.parameters`), per link i: ``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy,
Ixz, Iyz]`` in DH frame i, the inertia about the origin of frame i (tensor entries).

Pinocchio's dynamic parameters (``pinocchio.Inertia.toDynamicParameters``), per body:
``[m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` in the JOINT frame of the body, the
inertia ``I = I_C + m S(c)^T S(c)`` about that frame's origin (tensor entries). For the URDF of
:mod:`youbot_dynamics.arm.urdf` the joint frame of body i is ``arm_link_i_axis`` = DH frame i-1 turned
by ``theta_i`` about its z axis (the fixed child ``arm_link_i`` is merged into it), and DH frame i
sits in it at ``X_i = Tz(d_i) Tx(a_i) Rx(alpha_i)``: rotation ``Rx(alpha_i)``, origin
``(a_i, 0, d_i)``.

Changing frames is linear in the parameters. If frame B has pose ``(R, p)`` in frame A, the
parameters ``(m, h_B, I_B)`` (``h = m c``, ``I`` about B's origin) become in A::

    m_A = m,   h_A = R h_B + m p,
    I_A = R I_B R^T - S(p) S(R h_B) - S(R h_B) S(p) - m S(p) S(p)

(from ``I_O = I_C - m S(c) S(c)`` with ``c_A = p + R c_B``; ``S`` = cross-product matrix).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.transforms import rot_x, skew
from .chain import DHChain
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT

__all__ = [
    "PINOCCHIO_PARAMETERS",
    "transform_link_parameters",
    "link_parameters",
    "dh_in_joint_frame",
    "standard_to_pinocchio",
    "pinocchio_to_standard",
    "standard_to_pinocchio_matrix",
    "pinocchio_to_standard_matrix",
]

Array = NDArray[np.float64]

PINOCCHIO_PARAMETERS: tuple[str, ...] = ("m", "mc_x", "mc_y", "mc_z", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
_NL = len(LINK_PARAMETERS)
# Position of each Pinocchio parameter in the standard link ordering.
_PIN_FROM_STD = np.array([LINK_PARAMETERS.index(p) for p in
                          ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")])


def _unpack(phi: Array) -> tuple[float, Array, Array]:
    m, hx, hy, hz, ixx, iyy, izz, ixy, ixz, iyz = phi
    return m, np.array([hx, hy, hz]), np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _pack(m: float, h: Array, i: Array) -> Array:
    return np.array([m, *h, i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]])


def transform_link_parameters(phi: Any, rotation: Any, translation: Any) -> Array:
    """Standard link parameters (10) of a body given in frame B, re-expressed in frame A.

    ``rotation``, ``translation`` are the pose of B in A (``x_A = R x_B + p``). Linear in ``phi``
    (see the module docstring); the inverse is the call with the inverse pose ``(R^T, -R^T p)``.
    """
    phi = np.asarray(phi, dtype=float)
    if phi.shape != (_NL,):
        raise ValueError(f"expected {_NL} link parameters, got shape {phi.shape}")
    r = np.asarray(rotation, dtype=float)
    p = np.asarray(translation, dtype=float)
    m, h_b, i_b = _unpack(phi)
    h = r @ h_b
    sp, sh = skew(p), skew(h)
    i_a = r @ i_b @ r.T - sp @ sh - sh @ sp - m * sp @ sp
    return _pack(m, h + m * p, i_a)


def link_parameters(chain: DHChain, chi: Any) -> Array:
    """The 10 n link parameters of ``chi`` (accepts the 14 n standard vector or its 10 n link part)."""
    chi = np.asarray(chi, dtype=float)
    n = chain.n_joints
    if chi.shape == (PARAMETERS_PER_JOINT * n,):
        return chi.reshape(n, PARAMETERS_PER_JOINT)[:, :_NL].reshape(-1)
    if chi.shape == (_NL * n,):
        return chi.copy()
    raise ValueError(f"expected {PARAMETERS_PER_JOINT * n} or {_NL * n} parameters, got shape {chi.shape}")


def dh_in_joint_frame(chain: DHChain, i: int) -> tuple[Array, Array]:
    """Pose ``(R, p)`` of DH frame i+1 (0-based link index ``i``) in the joint frame of joint i+1."""
    return rot_x(chain.alpha[i]), np.array([chain.a[i], 0.0, chain.d[i]])


def standard_to_pinocchio(chain: DHChain, chi: Any) -> Array:
    """Pinocchio dynamic parameters (10 n, joint frames) of the standard parameters ``chi`` (14 n or 10 n)."""
    links = link_parameters(chain, chi).reshape(chain.n_joints, _NL)
    out = []
    for i, phi in enumerate(links):
        r, p = dh_in_joint_frame(chain, i)
        out.append(transform_link_parameters(phi, r, p)[_PIN_FROM_STD])
    return np.concatenate(out)


def pinocchio_to_standard(chain: DHChain, pi: Any) -> Array:
    """Standard link parameters (10 n, DH frames) of Pinocchio dynamic parameters ``pi`` (10 n)."""
    pi = np.asarray(pi, dtype=float)
    n = chain.n_joints
    if pi.shape != (_NL * n,):
        raise ValueError(f"expected {_NL * n} Pinocchio parameters, got shape {pi.shape}")
    out = []
    for i, block in enumerate(pi.reshape(n, _NL)):
        phi = np.empty(_NL)
        phi[_PIN_FROM_STD] = block
        r, p = dh_in_joint_frame(chain, i)
        out.append(transform_link_parameters(phi, r.T, -r.T @ p))
    return np.concatenate(out)


def _matrix(fun, chain: DHChain) -> Array:
    size = _NL * chain.n_joints
    return np.column_stack([fun(chain, e) for e in np.eye(size)])


def standard_to_pinocchio_matrix(chain: DHChain) -> Array:
    """The (10 n x 10 n) matrix L of :func:`standard_to_pinocchio`: ``pi = L @ link_parameters(chi)``.

    Hence the link columns of our regressor equal Pinocchio's joint torque regressor times L.
    """
    return _matrix(standard_to_pinocchio, chain)


def pinocchio_to_standard_matrix(chain: DHChain) -> Array:
    """The inverse matrix of :func:`standard_to_pinocchio_matrix`."""
    return _matrix(pinocchio_to_standard, chain)
