"""Forward kinematics and the geometric Jacobian of a DH serial arm, vectorised over configurations.

Seed 002, eq. (2.1)-(2.6): ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` and
``T = A_1 A_2 ... A_n T_tool`` with ``theta = offset + direction * q`` (see :mod:`.description`).
All functions take ``q`` with shape ``(..., n)`` and return arrays with the same leading shape.
"""
from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from .description import ArmDescription

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


def _tool_pose_loop(theta: Array, a: Array, cos_alpha: Array, sin_alpha: Array, d: Array,
                    tool: Array, out: Array) -> None:  # pragma: no cover - compiled
    """Compiled form of :func:`chain_columns` for the tool frame only (same update equations)."""
    for k in numba.prange(theta.shape[0]):
        x0, x1, x2 = 1.0, 0.0, 0.0
        y0, y1, y2 = 0.0, 1.0, 0.0
        z0, z1, z2 = 0.0, 0.0, 1.0
        p0, p1, p2 = 0.0, 0.0, 0.0
        for i in range(theta.shape[1]):
            ct, st = math.cos(theta[k, i]), math.sin(theta[k, i])
            ca, sa = cos_alpha[i], sin_alpha[i]
            p0 += d[i] * z0
            p1 += d[i] * z1
            p2 += d[i] * z2
            nx0, nx1, nx2 = ct * x0 + st * y0, ct * x1 + st * y1, ct * x2 + st * y2
            w0, w1, w2 = ct * y0 - st * x0, ct * y1 - st * x1, ct * y2 - st * x2
            y0, y1, y2 = ca * w0 + sa * z0, ca * w1 + sa * z1, ca * w2 + sa * z2
            z0, z1, z2 = ca * z0 - sa * w0, ca * z1 - sa * w1, ca * z2 - sa * w2
            x0, x1, x2 = nx0, nx1, nx2
            p0 += a[i] * x0
            p1 += a[i] * x1
            p2 += a[i] * x2
        for j in range(3):
            out[k, 0, j] = x0 * tool[0, j] + y0 * tool[1, j] + z0 * tool[2, j]
            out[k, 1, j] = x1 * tool[0, j] + y1 * tool[1, j] + z1 * tool[2, j]
            out[k, 2, j] = x2 * tool[0, j] + y2 * tool[1, j] + z2 * tool[2, j]
        out[k, 0, 3] = p0 + x0 * tool[0, 3] + y0 * tool[1, 3] + z0 * tool[2, 3]
        out[k, 1, 3] = p1 + x1 * tool[0, 3] + y1 * tool[1, 3] + z1 * tool[2, 3]
        out[k, 2, 3] = p2 + x2 * tool[0, 3] + y2 * tool[1, 3] + z2 * tool[2, 3]
        out[k, 3, 0] = 0.0
        out[k, 3, 1] = 0.0
        out[k, 3, 2] = 0.0
        out[k, 3, 3] = 1.0


_tool_pose_serial = numba.njit(cache=True, nogil=True)(_tool_pose_loop)
_tool_pose_parallel = numba.njit(cache=True, nogil=True, parallel=True)(_tool_pose_loop)
PARALLEL_BATCH = 4096  # batches at least this large are spread over all cores


def forward_kinematics(arm: ArmDescription, q: Any) -> Array:
    """Tool pose ``T = A_1 ... A_n T_tool`` in the base frame, shape (..., 4, 4).

    Runs a compiled (numba) loop of the :func:`chain_columns` update, over all cores for large
    batches; tests check it against the explicit product of :func:`dh_transform` matrices and
    the product-of-exponentials form.
    """
    q = arm.check_q(q)
    theta = np.ascontiguousarray(arm.theta(q).reshape(-1, arm.n_joints))
    out = np.empty((theta.shape[0], 4, 4))
    kernel = _tool_pose_parallel if theta.shape[0] >= PARALLEL_BATCH else _tool_pose_serial
    kernel(theta, arm.dh_a, np.cos(arm.dh_alpha), np.sin(arm.dh_alpha), arm.dh_d,
           np.ascontiguousarray(arm.tool), out)
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
