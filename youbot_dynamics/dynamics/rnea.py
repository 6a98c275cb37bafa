"""Numeric recursive Newton–Euler regressor of a DH chain, vectorised over samples.

The joint torques are linear in the 14 n standard parameters of :mod:`.parameters`
(joint-major, per joint ``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz, Ia, fv, fc, f0]``, the
inertia about the origin of DH frame i in frame-i axes, tensor entries):
``tau = Y(q, q', q'') chi`` with ``Y`` of shape ``(n, 14 n)`` per sample.

Conventions (seed 002, standard DH): ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``,
``theta_i = offset_i + direction_i q_i``, so ``theta'_i = direction_i q'_i`` and
``theta''_i = direction_i q''_i``. Joint i turns link i (and everything after it) about the z axis
of DH frame i-1. Every vector below is expressed in the frame of the link it belongs to;
``R_i = Rz(theta_i) Rx(alpha_i)`` maps frame-i coordinates to frame i-1 and
``r_i = R_i^T p_i = (a_i, d_i sin alpha_i, d_i cos alpha_i)`` is the vector from the origin of
frame i-1 to the origin of frame i, in frame i.

**Forward recursion** (``z = (0, 0, 1)``; gravity enters as the base acceleration
``a_0 = -g``, ``w_0 = w'_0 = 0``)::

    w_i  = R_i^T (w_{i-1} + z theta'_i)
    w'_i = R_i^T (w'_{i-1} + z theta''_i + w_{i-1} x z theta'_i)
    a_i  = R_i^T a_{i-1} + w'_i x r_i + w_i x (w_i x r_i)          (acceleration of origin O_i)

**Link wrench** about ``O_i`` needed to move link i, linear in its parameters
``phi_i = [m, m c, I_O]`` (``c`` the centre of mass, ``I_O`` the inertia about ``O_i``)::

    f_i = m a_i + w'_i x mc + w_i x (w_i x mc)
    n_i = I_O w'_i + w_i x (I_O w_i) + mc x a_i

i.e. ``[f_i; n_i] = K_i phi_i`` with the 6 x 10 matrix ``K_i(w_i, w'_i, a_i)``:
``df/dm = a``, ``df/d(mc) = [w']x + [w]x[w]x``, ``dn/d(mc) = -[a]x``,
``dn/dI = L(w') + [w]x L(w)`` where ``I v = L(v) [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]``.

**Backward projection.** The wrench about ``O_k`` in frame k moves to ``O_{k-1}`` in frame k-1 as
``f^{k-1} = R_k f^k``, ``n^{k-1} = R_k (n^k + r_k x f^k)``. The generalized force of ``q_k`` is
``direction_k * z . n^{k-1}`` summed over links ``i >= k``. Carrying all link blocks at once,
``W_k`` (6 x 10 n, the wrenches of links k..n about ``O_k`` in frame k) obeys
``W_k = X_{k+1} W_{k+1} + [0 .. K_k .. 0]`` and row k of ``Y`` (link columns) is
``direction_k * (X_k W_k)[n_z]``. Link i's columns are therefore zero in rows ``j > i``
(upper block-triangular).

**Drive columns** (seed 2.58, in row j only): ``Ia_j -> q''_j``, ``fv_j -> q'_j``,
``fc_j -> sign(q'_j)``, ``f0_j -> 1``.

Everything is vectorised over the N samples with NumPy; the only Python loops run over links.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .chain import DHChain
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT

__all__ = ["regressor", "inverse_dynamics"]

Array = NDArray[np.float64]

_NL = len(LINK_PARAMETERS)  # 10 link parameters per joint


def _as_samples(chain: DHChain, name: str, x: Any) -> Array:
    arr = np.asarray(x, dtype=float)
    n = chain.n_joints
    if arr.ndim not in (1, 2) or arr.shape[-1] != n:
        raise ValueError(f"{name} must have shape (n,) or (N, n) with n = {n}, got {arr.shape}")
    return arr.reshape(-1, n)


def _cross(a: tuple, b: tuple) -> tuple:
    ax, ay, az = a
    bx, by, bz = b
    return (ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx)


def regressor(chain: DHChain, q: Any, dq: Any, ddq: Any) -> Array:
    """Joint torque regressor ``Y`` with ``tau = Y @ chi`` (see the module docstring).

    ``q, dq, ddq`` have shape ``(N, n)`` (result ``(N, n, 14 n)``) or ``(n,)`` (result
    ``(n, 14 n)``). ``tau`` is the generalized force of the driver angles ``q`` (not of theta).
    """
    single = np.ndim(q) == 1
    q_, dq_, ddq_ = (_as_samples(chain, nm, v) for nm, v in (("q", q), ("dq", dq), ("ddq", ddq)))
    if not (q_.shape == dq_.shape == ddq_.shape):
        raise ValueError(f"q, dq and ddq must have the same shape, got {q_.shape}, {dq_.shape}, {ddq_.shape}")
    n = chain.n_joints
    num = q_.shape[0]
    theta = chain.theta(q_)
    dth = chain.direction * dq_
    ddth = chain.direction * ddq_
    ct, st = np.cos(theta), np.sin(theta)
    ca, sa = np.cos(chain.alpha), np.sin(chain.alpha)
    r_vec = [(chain.a[i], chain.d[i] * sa[i], chain.d[i] * ca[i]) for i in range(n)]

    # Forward recursion: kinematics of each DH frame i, in frame i, components as (N,) arrays.
    zero = np.zeros(num)
    w = (zero, zero, zero)
    dw = (zero, zero, zero)
    acc = tuple(np.full(num, -gk) for gk in chain.gravity)
    kin = []
    for i in range(n):
        c, s = ct[:, i], st[:, i]

        def rot_t(v, c=c, s=s, i=i):  # R_i^T v = Rx(-alpha) Rz(-theta) v
            x = c * v[0] + s * v[1]
            y0 = -s * v[0] + c * v[1]
            return (x, ca[i] * y0 + sa[i] * v[2], -sa[i] * y0 + ca[i] * v[2])

        wz = w[2] + dth[:, i]
        # w_{i-1} x z theta' = (w_y theta', -w_x theta', 0)
        dw_prev = (dw[0] + w[1] * dth[:, i], dw[1] - w[0] * dth[:, i], dw[2] + ddth[:, i])
        w = rot_t((w[0], w[1], wz))
        dw = rot_t(dw_prev)
        r = r_vec[i]
        wxr = _cross(w, r)
        acc = rot_t(acc)
        t1 = _cross(dw, r)
        t2 = _cross(w, wxr)
        acc = tuple(acc[k] + t1[k] + t2[k] for k in range(3))
        kin.append((w, dw, acc))

    # Backward recursion over all link blocks at once: W[k] (k = fx fy fz nx ny nz) is (10 n, N):
    # samples last, so every column operation below runs over contiguous memory.
    yt = np.zeros((n, PARAMETERS_PER_JOINT * n, num))
    ctt, stt = np.ascontiguousarray(ct.T), np.ascontiguousarray(st.T)
    link_cols = np.concatenate([np.arange(PARAMETERS_PER_JOINT * i, PARAMETERS_PER_JOINT * i + _NL) for i in range(n)])
    wr = np.zeros((6, _NL * n, num))
    for i in range(n - 1, -1, -1):
        (wx, wy, wz), (dwx, dwy, dwz), (ax, ay, az) = kin[i][0], kin[i][1], kin[i][2]
        # Link block K_i, written into the columns of link i (frame i, about O_i).
        blk = wr[:, _NL * i : _NL * (i + 1)]
        # f = m a + ([dw]x + [w]x[w]x) mc
        blk[0, 0], blk[1, 0], blk[2, 0] = ax, ay, az
        wxx, wyy, wzz = wx * wx, wy * wy, wz * wz
        wxy, wxz, wyz = wx * wy, wx * wz, wy * wz
        blk[0, 1], blk[0, 2], blk[0, 3] = -(wyy + wzz), wxy - dwz, wxz + dwy
        blk[1, 1], blk[1, 2], blk[1, 3] = wxy + dwz, -(wxx + wzz), wyz - dwx
        blk[2, 1], blk[2, 2], blk[2, 3] = wxz - dwy, wyz + dwx, -(wxx + wyy)
        # n: mc x a = -[a]x mc
        blk[3, 2], blk[3, 3] = az, -ay
        blk[4, 1], blk[4, 3] = -az, ax
        blk[5, 1], blk[5, 2] = ay, -ax
        # n: I dw + w x (I w), columns Ixx Iyy Izz Ixy Ixz Iyz (indices 4..9).
        # L(v) = [[vx,0,0,vy,vz,0],[0,vy,0,vx,0,vz],[0,0,vz,0,vx,vy]];  w x L(w) column by column.
        # Column Ixx: L e = (wx,0,0) -> dw part (dwx,0,0); w x (wx,0,0) = (0, wz wx, -wy wx)
        blk[3, 4], blk[4, 4], blk[5, 4] = dwx, wxz, -wxy
        # Iyy: (0,wy,0) -> (0,dwy,0); w x (0,wy,0) = (-wz wy, 0, wx wy)
        blk[3, 5], blk[4, 5], blk[5, 5] = -wyz, dwy, wxy
        # Izz: (0,0,wz) -> (0,0,dwz); w x (0,0,wz) = (wy wz, -wx wz, 0)
        blk[3, 6], blk[4, 6], blk[5, 6] = wyz, -wxz, dwz
        # Ixy: (wy, wx, 0) -> (dwy, dwx, 0); w x (wy,wx,0) = (-wz wx, wz wy, wx^2 - wy^2)
        blk[3, 7], blk[4, 7], blk[5, 7] = dwy - wxz, dwx + wyz, wxx - wyy
        # Ixz: (wz, 0, wx) -> (dwz, 0, dwx); w x (wz,0,wx) = (wy wx, wz^2 - wx^2, -wy wz)
        blk[3, 8], blk[4, 8], blk[5, 8] = dwz + wxy, wzz - wxx, dwx - wyz
        # Iyz: (0, wz, wy) -> (0, dwz, dwy); w x (0,wz,wy) = (wy^2 - wz^2, -wx wy, wx wz)
        blk[3, 9], blk[4, 9], blk[5, 9] = wyy - wzz, dwz - wxy, dwy + wxz

        # Move the wrenches of links i..n-1 from O_i (frame i) to O_{i-1} (frame i-1).
        cols = slice(_NL * i, None)
        f = (wr[0, cols], wr[1, cols], wr[2, cols])
        m = wr[3:, cols]
        rx, ry, rz = r_vec[i]
        # n + r x f (r constant; zero DH lengths skip their terms)
        nx, ny, nz = m[0].copy(), m[1].copy(), m[2].copy()
        if rx != 0.0:
            ny -= rx * f[2]
            nz += rx * f[1]
        if ry != 0.0:
            nx += ry * f[2]
            nz -= ry * f[0]
        if rz != 0.0:
            nx -= rz * f[1]
            ny += rz * f[0]
        c, s = ctt[i], stt[i]

        def rot(vx, vy, vz, c=c, s=s, i=i):  # R_i v = Rz(theta) Rx(alpha) v
            if abs(sa[i]) < 1e-15:  # alpha = 0 or pi
                y1, z1 = ca[i] * vy, ca[i] * vz
            elif abs(ca[i]) < 1e-15:  # alpha = +-pi/2
                y1, z1 = -sa[i] * vz, sa[i] * vy
            else:
                y1, z1 = ca[i] * vy - sa[i] * vz, sa[i] * vy + ca[i] * vz
            return c * vx - s * y1, s * vx + c * y1, z1

        mx, my, mz = rot(nx, ny, nz)
        yt[i, link_cols[_NL * i :]] = chain.direction[i] * mz
        if i > 0:
            wr[0, cols], wr[1, cols], wr[2, cols] = rot(*f)
            wr[3, cols], wr[4, cols], wr[5, cols] = mx, my, mz

    y = yt.transpose(2, 0, 1).copy()  # (N, n, 14 n)
    # Drive columns, row j only.
    rows = np.arange(n)
    base = PARAMETERS_PER_JOINT * rows + _NL
    y[:, rows, base] = ddq_
    y[:, rows, base + 1] = dq_
    y[:, rows, base + 2] = np.sign(dq_)
    y[:, rows, base + 3] = 1.0
    return y[0] if single else y


def inverse_dynamics(chain: DHChain, chi: Any, q: Any, dq: Any, ddq: Any) -> Array:
    """Joint torques ``Y(q, q', q'') @ chi``, shape ``(N, n)`` or ``(n,)``."""
    chi = np.asarray(chi, dtype=float)
    n = chain.n_joints
    if chi.shape != (PARAMETERS_PER_JOINT * n,):
        raise ValueError(f"chi must have {PARAMETERS_PER_JOINT * n} standard parameters, got shape {chi.shape}")
    return regressor(chain, q, dq, ddq) @ chi
