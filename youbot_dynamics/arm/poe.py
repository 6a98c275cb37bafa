"""Forward kinematics and Jacobian in product-of-exponentials form: a second, independent formulation.

Seed 004 (Selig, screw theory; the same as Lynch & Park, *Modern Robotics*, ch. 4-5): with every
joint twist written in one fixed frame (the base frame) at the home configuration ``q = 0``,

* screw axis of revolute joint i: ``s_i = (w_i; v_i)``, ``w_i`` the unit axis direction and
  ``v_i = -w_i x o_i`` for any point ``o_i`` on the axis (zero pitch);
* exponential of a twist (Rodrigues, for ``|w| = 1``)::

      exp([s] t) = [[R, G v], [0, 1]],   R = I + sin t [w] + (1 - cos t) [w]^2,
                                          G = I t + (1 - cos t) [w] + (t - sin t) [w]^2

* tool pose ``T(q) = exp([s_1] q_1) ... exp([s_n] q_n) M`` with ``M = T(0)`` (seed 004:
  ``H_i = exp(th_1 s_1(0)) ... exp(th_i s_i(0))``);
* space Jacobian, column i: ``J_s,i = Ad_{H_{i-1}} s_i`` with
  ``Ad_T (w; v) = (R w; p x R w + R v)`` and ``H_0 = I``;
* geometric Jacobian of the tool point in the base frame, rows ``[v; w]`` like
  :func:`youbot_dynamics.arm.kinematics.geometric_jacobian`: ``w = J_s,w`` and
  ``v_tool = v_s + w x p_tool``.

For the DH arm of :mod:`youbot_dynamics.arm.description` (``theta_i = offset_i + direction_i q_i``), joint i
turns about the z axis of DH frame i-1, so at ``q = 0`` ``w_i = direction_i z_{i-1}(0)`` and
``o_i`` is the origin of DH frame i-1. Only this home geometry comes from the DH table; it is
computed here by composing the elementary motions ``Rz(theta) Tz(d) Tx(a) Rx(alpha)`` at
``theta = theta_offset``, without :mod:`youbot_dynamics.arm.kinematics`. Everything depending on q is
the exponential formula above, so this module cross-checks the DH forward kinematics and Jacobian.

All functions take ``q`` of shape ``(..., n)`` and return arrays with the same leading shape.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .description import ArmDescription
from .transforms import rot_x, rot_z, skew, transform

__all__ = ["screw_axes", "home_pose", "poe_forward_kinematics", "poe_space_jacobian", "poe_jacobian"]

Array = NDArray[np.float64]


def _home_dh_frames(arm: ArmDescription) -> list[Array]:
    """DH frames 0..n at ``q = 0`` (theta = theta_offset) in the base frame, by elementary motions."""
    frames = [np.eye(4)]
    for i in range(arm.n_joints):
        step = (transform(rot_z(arm.theta_offset[i]), np.zeros(3))
                @ transform(np.eye(3), [0.0, 0.0, arm.dh_d[i]])
                @ transform(np.eye(3), [arm.dh_a[i], 0.0, 0.0])
                @ transform(rot_x(arm.dh_alpha[i]), np.zeros(3)))
        frames.append(frames[-1] @ step)
    return frames


def screw_axes(arm: ArmDescription) -> Array:
    """Space-frame screw axes ``s_i = (w_i; v_i)`` of all joints at ``q = 0``, shape (n, 6)."""
    frames = _home_dh_frames(arm)
    out = np.empty((arm.n_joints, 6))
    for i in range(arm.n_joints):
        w = arm.direction[i] * frames[i][:3, 2]
        o = frames[i][:3, 3]
        out[i, :3] = w
        out[i, 3:] = -np.cross(w, o)
    return out


def home_pose(arm: ArmDescription) -> Array:
    """Tool pose ``M`` at ``q = 0`` (last DH frame times the tool transform), shape (4, 4)."""
    return _home_dh_frames(arm)[-1] @ arm.tool


def _exp_twists(screws: Array, q: Array) -> tuple[Array, Array]:
    """Rotations (M, n, 3, 3) and translations (M, n, 3) of ``exp([s_i] q_i)`` for q (M, n)."""
    w, v = screws[:, :3], screws[:, 3:]
    if not np.allclose(np.linalg.norm(w, axis=1), 1.0, atol=1e-12):
        raise ValueError("product of exponentials: every joint must be revolute (|w_i| = 1)")
    k = skew(w)  # (n, 3, 3)
    k2 = k @ k
    s, c = np.sin(q)[..., None, None], np.cos(q)[..., None, None]
    rot = np.eye(3) + s * k + (1 - c) * k2
    g = np.eye(3) * q[..., None, None] + (1 - c) * k + (q[..., None, None] - s) * k2
    return rot, np.einsum("mnij,nj->mni", g, v)


def _chain(arm: ArmDescription, q: Any) -> tuple[Array, Array, Array, tuple[int, ...]]:
    """Cumulative ``H_i`` (M, n+1, 3, 3) rotations, (M, n+1, 3) translations, flat q, batch shape."""
    q = arm.check_q(q)
    flat = q.reshape(-1, arm.n_joints)
    rot, trans = _exp_twists(screw_axes(arm), flat)
    m, n = flat.shape
    h_rot = np.empty((m, n + 1, 3, 3))
    h_pos = np.empty((m, n + 1, 3))
    h_rot[:, 0] = np.eye(3)
    h_pos[:, 0] = 0.0
    for i in range(n):
        h_rot[:, i + 1] = h_rot[:, i] @ rot[:, i]
        h_pos[:, i + 1] = h_pos[:, i] + np.einsum("mij,mj->mi", h_rot[:, i], trans[:, i])
    return h_rot, h_pos, flat, q.shape[:-1]


def poe_forward_kinematics(arm: ArmDescription, q: Any) -> Array:
    """Tool pose ``T(q) = exp([s_1] q_1) ... exp([s_n] q_n) M``, shape (..., 4, 4)."""
    h_rot, h_pos, _, batch = _chain(arm, q)
    m_home = home_pose(arm)
    r = h_rot[:, -1] @ m_home[:3, :3]
    p = h_pos[:, -1] + h_rot[:, -1] @ m_home[:3, 3]
    return transform(r, p).reshape(batch + (4, 4))


def poe_space_jacobian(arm: ArmDescription, q: Any) -> Array:
    """Space Jacobian, columns ``Ad_{H_{i-1}} s_i`` as ``(w; v)``, shape (..., 6, n)."""
    h_rot, h_pos, flat, batch = _chain(arm, q)
    screws = screw_axes(arm)
    w = np.einsum("mnij,nj->mni", h_rot[:, :-1], screws[:, :3])
    v = np.cross(h_pos[:, :-1], w) + np.einsum("mnij,nj->mni", h_rot[:, :-1], screws[:, 3:])
    jac = np.concatenate([w, v], axis=-1).transpose(0, 2, 1)  # (M, 6, n)
    return jac.reshape(batch + (6, arm.n_joints))


def poe_jacobian(arm: ArmDescription, q: Any) -> Array:
    """Geometric Jacobian of the tool frame in the base frame, rows ``[v; w]``, shape (..., 6, n).

    From the space Jacobian: ``w = J_s,w``, ``v = J_s,v + w x p_tool`` (the velocity of the body
    point at the tool origin, instead of the point at the base origin).
    """
    js = poe_space_jacobian(arm, q)
    p = poe_forward_kinematics(arm, q)[..., :3, 3]
    w = js[..., :3, :]
    v = js[..., 3:, :] + np.cross(w, p[..., :, None], axis=-2)
    return np.concatenate([v, w], axis=-2)
