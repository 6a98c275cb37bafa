"""Forward kinematics and the geometric Jacobian of a DH serial arm, vectorised over configurations.

Seed 002, eq. (2.1)-(2.6): ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` and
``T = A_1 A_2 ... A_n T_tool`` with ``theta = offset + direction * q`` (see :mod:`.arm`).
All functions take ``q`` with shape ``(..., n)`` and return arrays with the same leading shape.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .arm import ArmDescription

__all__ = ["dh_transform", "chain_columns", "columns_to_transforms", "link_frames", "forward_kinematics",
           "geometric_jacobian"]

Array = NDArray[np.float64]


def dh_transform(theta: Any, d: Any, a: Any, alpha: Any) -> Array:
    """Standard DH transform ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``, eq. (2.1)-(2.5), shape (..., 4, 4)."""
    theta, d, a, alpha = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (theta, d, a, alpha)))
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    t = np.zeros(theta.shape + (4, 4))
    t[..., 0, 0] = ct
    t[..., 0, 1] = -st * ca
    t[..., 0, 2] = st * sa
    t[..., 0, 3] = a * ct
    t[..., 1, 0] = st
    t[..., 1, 1] = ct * ca
    t[..., 1, 2] = -ct * sa
    t[..., 1, 3] = a * st
    t[..., 2, 1] = sa
    t[..., 2, 2] = ca
    t[..., 2, 3] = d
    t[..., 3, 3] = 1.0
    return t


Columns = tuple[Array, Array, Array, Array]  # x, y, z axes and origin, each (3, M)


def chain_columns(arm: ArmDescription, q: Any, *, include_tool: bool = True) -> list[Columns]:
    """Frames 0..n (and the tool) as axis columns ``(x, y, z, p)``, each of shape (3, M).

    The "batch last" layout turns each DH step into a few vector operations over all M
    configurations; ``q`` is (M, n). Composing with ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``:
    ``x' = c x + s y``, ``y0 = c y - s x``, ``y' = ca y0 + sa z``, ``z' = ca z - sa y0``,
    ``p' = p + d z + a x'``.
    """
    theta = arm.theta(q).T  # (n, M)
    ct, st = np.cos(theta), np.sin(theta)
    m = theta.shape[1]
    eye = np.eye(3)
    x, y, z = (np.repeat(eye[:, k : k + 1], m, axis=1) for k in range(3))
    p = np.zeros((3, m))
    frames: list[Columns] = [(x, y, z, p)]
    for i in range(arm.n_joints):
        ca, sa = np.cos(arm.dh_alpha[i]), np.sin(arm.dh_alpha[i])
        xn = ct[i] * x + st[i] * y
        y0 = ct[i] * y - st[i] * x
        if abs(sa) < 1e-15:  # alpha = 0 or pi: skip the vanishing terms (common in DH tables)
            yn, zn = ca * y0, ca * z
        elif abs(ca) < 1e-15:  # alpha = +-pi/2
            yn, zn = sa * z, -sa * y0
        else:
            yn, zn = ca * y0 + sa * z, ca * z - sa * y0
        if arm.dh_d[i] != 0.0:
            p = p + arm.dh_d[i] * z
        if arm.dh_a[i] != 0.0:
            p = p + arm.dh_a[i] * xn
        x, y, z = xn, yn, zn
        frames.append((x, y, z, p))
    if include_tool:
        r, t = arm.tool[:3, :3], arm.tool[:3, 3]
        cols = [x * r[0, k] + y * r[1, k] + z * r[2, k] for k in range(3)]
        frames.append((cols[0], cols[1], cols[2], p + x * t[0] + y * t[1] + z * t[2]))
    return frames


def columns_to_transforms(frames: list[Columns]) -> Array:
    """Stack axis columns into homogeneous transforms, shape (M, len(frames), 4, 4)."""
    m = frames[0][0].shape[1]
    out = np.zeros((m, len(frames), 4, 4))
    for k, cols in enumerate(frames):
        for j, col in enumerate(cols):
            out[:, k, :3, j] = col.T
    out[:, :, 3, 3] = 1.0
    return out


def link_frames(arm: ArmDescription, q: Any, *, include_tool: bool = True) -> Array:
    """Poses of the DH frames 0..n (and the tool frame) in the base frame, shape (..., n+2, 4, 4).

    Index 0 is the base frame (identity), index i the DH frame of link i, the last index the tool
    frame when ``include_tool`` is true.
    """
    q = arm.check_q(q)
    flat = q.reshape(-1, arm.n_joints)
    out = columns_to_transforms(chain_columns(arm, flat, include_tool=include_tool))
    return out.reshape(q.shape[:-1] + out.shape[1:])


def forward_kinematics(arm: ArmDescription, q: Any) -> Array:
    """Tool pose ``T = A_1 ... A_n T_tool`` in the base frame, shape (..., 4, 4)."""
    q = arm.check_q(q)
    flat = q.reshape(-1, arm.n_joints)
    out = columns_to_transforms(chain_columns(arm, flat)[-1:])[:, 0]
    return out.reshape(q.shape[:-1] + (4, 4))


def geometric_jacobian(arm: ArmDescription, q: Any) -> Array:
    """Geometric Jacobian of the tool frame, shape (..., 6, n): rows ``[v; w]`` in the base frame.

    Column i is ``direction_i * [z_{i-1} x (p - o_{i-1}); z_{i-1}]``: joint i rotates about the z
    axis of DH frame i-1, and ``dtheta_i / dq_i = direction_i``.
    """
    q = arm.check_q(q)
    frames = chain_columns(arm, q.reshape(-1, arm.n_joints))
    p = frames[-1][3]
    jac = np.empty((p.shape[1], 6, arm.n_joints))
    for i in range(arm.n_joints):
        z, o = frames[i][2], frames[i][3]
        jac[:, :3, i] = (np.cross(z, p - o, axis=0) * arm.direction[i]).T
        jac[:, 3:, i] = (z * arm.direction[i]).T
    return jac.reshape(q.shape[:-1] + (6, arm.n_joints))
