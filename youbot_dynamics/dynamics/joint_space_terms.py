"""``M(q)``, ``C(q, q') q'`` and ``G(q)`` of one state by a compiled recursive Newton-Euler pass on
standard parameters: what a control cycle needs, at a few microseconds.

The recursion is the one of :mod:`.rnea` (seed 002, standard DH, its module docstring states the
equations and conventions), evaluated on parameter values instead of building the regressor:
per link i, with ``theta_i = offset_i + direction_i q_i``,

    forward    w_i = R_i^T (w_{i-1} + z theta'_i),  w'_i = R_i^T (w'_{i-1} + z theta''_i + w_{i-1} x z theta'_i),
               a_i = R_i^T a_{i-1} + w'_i x r_i + w_i x (w_i x r_i)            (a_0 = -g, or 0)
    link       f_i = m a_i + w'_i x mc + w_i x (w_i x mc),  n_i = I w'_i + w_i x (I w_i) + mc x a_i
    backward   F_i = f_i + F_{i+1}^(i),  N_i = n_i + N_{i+1}^(i),
               (F, N)^(i-1) = R_i (F_i, N_i + r_i x F_i),  tau_i = direction_i z . N^(i-1)

(``F_{i+1}^(i)``: the wrench of links i+1.. about ``O_i`` in frame i). ``G`` is the pass at rest
with gravity, ``C q'`` the pass at ``(q, q', 0)`` without it, column j of ``M`` the pass at
``(q, 0, e_j)`` without it plus the rotor inertia ``Ia_j`` in row j: n + 2 passes of O(n). On a
model's *equivalent standard* parameters (:meth:`~.base_parameters.BaseParameters.equivalent_standard`:
``Y chi = Y_b beta``, the recursion being linear in the parameters) it gives the base model's
terms exactly; friction is not part of them. Checked against Pinocchio's CRBA / RNEA and the
regressor formulation in ``test/test_model.py``. :func:`momentum_coriolis_gravity` gives a momentum
observer's ``M q'``, ``C^T q'`` and ``G`` the same way.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

from .chain import DHChain
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT

__all__ = ["chain_geometry", "link_parameters", "mass_coriolis_gravity", "momentum_coriolis_gravity"]

Array = NDArray[np.float64]

# rows of chain_geometry
_COS_ALPHA, _SIN_ALPHA, _RX, _RY, _RZ, _OFFSET, _DIRECTION = range(7)


def chain_geometry(chain: DHChain) -> Array:
    """The (7, n) constants of the recursion: ``cos alpha``, ``sin alpha``, ``r_i = (a, d sin alpha,
    d cos alpha)``, the angle offset and direction (C-ordered: a fixed argument type)."""
    ca, sa = np.cos(chain.alpha), np.sin(chain.alpha)
    return np.ascontiguousarray(np.stack([ca, sa, chain.a, chain.d * sa, chain.d * ca, chain.theta_offset,
                                          chain.direction]), dtype=float)


def link_parameters(chi: Array) -> tuple[Array, Array]:
    """``(links, Ia)`` of a 14 n standard vector: the (n, 10) link parameters
    ``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz]`` and the (n,) rotor inertias."""
    per_joint = np.asarray(chi, dtype=float).reshape(-1, PARAMETERS_PER_JOINT)
    links = len(LINK_PARAMETERS)
    return np.ascontiguousarray(per_joint[:, :links]), np.ascontiguousarray(per_joint[:, links])


@numba.njit(cache=True, nogil=True)
def _newton_euler(ct: Array, st: Array, geometry: Array, links: Array, dth: Array, ddth: Array,
                  base_acceleration: Array, kin: Array, tau: Array) -> None:
    """One pass of the module docstring's recursion into ``tau`` (the links' torques, no drive terms);
    ``dth``, ``ddth`` are ``theta'``, ``theta''``, ``kin`` (n, 9) a buffer for each link's ``w, w', a``."""
    n = ct.shape[0]
    wx = wy = wz = 0.0
    dwx = dwy = dwz = 0.0
    ax, ay, az = base_acceleration[0], base_acceleration[1], base_acceleration[2]
    for i in range(n):
        c, s = ct[i], st[i]
        ca, sa = geometry[_COS_ALPHA, i], geometry[_SIN_ALPHA, i]
        rx, ry, rz = geometry[_RX, i], geometry[_RY, i], geometry[_RZ, i]
        # w'_{i-1} + z theta'' + w_{i-1} x z theta', then w_{i-1} + z theta'
        px, py, pz = dwx + wy * dth[i], dwy - wx * dth[i], dwz + ddth[i]
        vz = wz + dth[i]
        # R_i^T v = Rx(-alpha) Rz(-theta) v
        x, y0 = c * wx + s * wy, -s * wx + c * wy
        wx, wy, wz = x, ca * y0 + sa * vz, -sa * y0 + ca * vz
        x, y0 = c * px + s * py, -s * px + c * py
        dwx, dwy, dwz = x, ca * y0 + sa * pz, -sa * y0 + ca * pz
        x, y0 = c * ax + s * ay, -s * ax + c * ay
        ax, ay, az = x, ca * y0 + sa * az, -sa * y0 + ca * az
        # + w' x r + w x (w x r)
        ux, uy, uz = wy * rz - wz * ry, wz * rx - wx * rz, wx * ry - wy * rx
        ax += dwy * rz - dwz * ry + wy * uz - wz * uy
        ay += dwz * rx - dwx * rz + wz * ux - wx * uz
        az += dwx * ry - dwy * rx + wx * uy - wy * ux
        kin[i, 0], kin[i, 1], kin[i, 2] = wx, wy, wz
        kin[i, 3], kin[i, 4], kin[i, 5] = dwx, dwy, dwz
        kin[i, 6], kin[i, 7], kin[i, 8] = ax, ay, az
    fx = fy = fz = 0.0  # links after i, about O_i in frame i
    nx = ny = nz = 0.0
    for i in range(n - 1, -1, -1):
        wx, wy, wz, dwx, dwy, dwz, ax, ay, az = kin[i]
        m, mx, my, mz = links[i, 0], links[i, 1], links[i, 2], links[i, 3]
        ixx, iyy, izz, ixy, ixz, iyz = links[i, 4], links[i, 5], links[i, 6], links[i, 7], links[i, 8], links[i, 9]
        # f = m a + w' x mc + w x (w x mc)
        ux, uy, uz = wy * mz - wz * my, wz * mx - wx * mz, wx * my - wy * mx
        fx += m * ax + dwy * mz - dwz * my + wy * uz - wz * uy
        fy += m * ay + dwz * mx - dwx * mz + wz * ux - wx * uz
        fz += m * az + dwx * my - dwy * mx + wx * uy - wy * ux
        # n = I w' + w x (I w) + mc x a
        jx, jy, jz = ixx * wx + ixy * wy + ixz * wz, ixy * wx + iyy * wy + iyz * wz, ixz * wx + iyz * wy + izz * wz
        nx += ixx * dwx + ixy * dwy + ixz * dwz + wy * jz - wz * jy + my * az - mz * ay
        ny += ixy * dwx + iyy * dwy + iyz * dwz + wz * jx - wx * jz + mz * ax - mx * az
        nz += ixz * dwx + iyz * dwy + izz * dwz + wx * jy - wy * jx + mx * ay - my * ax
        # about O_{i-1}: n + r x f; then R_i = Rz(theta) Rx(alpha) into frame i-1
        rx, ry, rz = geometry[_RX, i], geometry[_RY, i], geometry[_RZ, i]
        ox, oy, oz = nx + ry * fz - rz * fy, ny + rz * fx - rx * fz, nz + rx * fy - ry * fx
        c, s = ct[i], st[i]
        ca, sa = geometry[_COS_ALPHA, i], geometry[_SIN_ALPHA, i]
        y1, z1 = ca * oy - sa * oz, sa * oy + ca * oz
        nx, ny, nz = c * ox - s * y1, s * ox + c * y1, z1
        tau[i] = geometry[_DIRECTION, i] * nz
        y1, z1 = ca * fy - sa * fz, sa * fy + ca * fz
        fx, fy, fz = c * fx - s * y1, s * fx + c * y1, z1


@numba.njit(cache=True, nogil=True)
def _joint_angles(geometry: Array, state: Array) -> tuple[Array, Array, Array]:
    """``(cos theta, sin theta, theta')`` of the state rows ``q``, ``q'``; ``ValueError`` naming ``q``
    or ``dq`` for a NaN or infinite value."""
    q, dq = state[0], state[1]
    n = q.shape[0]
    for i in range(n):
        if not math.isfinite(q[i]):
            raise ValueError("q contains NaN or infinite values")
        if not math.isfinite(dq[i]):
            raise ValueError("dq contains NaN or infinite values")
    ct, st, dth = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        theta = geometry[_OFFSET, i] + geometry[_DIRECTION, i] * q[i]
        ct[i], st[i] = math.cos(theta), math.sin(theta)
        dth[i] = geometry[_DIRECTION, i] * dq[i]
    return ct, st, dth


@numba.njit(cache=True, nogil=True)
def mass_coriolis_gravity(geometry: Array, links: Array, rotor: Array, gravity: Array, state: Array) -> Array:
    """``M(q)``, ``C(q, q') q'``, ``G(q)`` of one state (module docstring) packed in one (n + 4, n)
    array with the state they are of: rows ``0..n-1`` ``M``, row ``n`` ``C q'``, row ``n + 1`` ``G``,
    rows ``n + 2``, ``n + 3`` ``q``, ``q'`` (one array to return, and all a compiled control law needs
    of the state: a compiled function's result or argument costs up to a microsecond each). ``geometry`` of
    :func:`chain_geometry`, ``links`` and ``rotor`` (``Ia``) of :func:`link_parameters`, ``gravity``
    the base frame's gravity acceleration, ``state`` rows ``q``, ``q'`` (a caller's buffer: one
    argument type, so no compilation for a read-only array inside a control loop). A state with NaN
    or infinite values raises ``ValueError`` naming ``q`` or ``dq``."""
    ct, st, dth = _joint_angles(geometry, state)
    n = ct.shape[0]
    zero, unit = np.zeros(n), np.zeros(n)
    out = np.empty((n + 4, n))
    out[n + 2], out[n + 3] = state[0], state[1]
    kin = np.empty((n, 9))
    _newton_euler(ct, st, geometry, links, zero, zero, -gravity, kin, out[n + 1])
    at_rest = np.zeros(3)
    _newton_euler(ct, st, geometry, links, dth, zero, at_rest, kin, out[n])
    column = np.empty(n)
    for j in range(n):
        unit[j] = geometry[_DIRECTION, j]
        _newton_euler(ct, st, geometry, links, zero, unit, at_rest, kin, column)
        unit[j] = 0.0
        for i in range(n):
            out[i, j] = column[i]
        out[j, j] += rotor[j]
    return out


@numba.njit(cache=True, nogil=True)
def momentum_coriolis_gravity(geometry: Array, links: Array, rotor: Array, gravity: Array, state: Array) -> Array:
    """What a momentum observer needs of one state, in one (3, n) array: rows ``p = M(q) q'``,
    ``C(q, q')^T q'`` and ``G(q)`` (arguments as :func:`mass_coriolis_gravity`'s). ``p`` is the pass
    at ``(q, 0, q')`` without gravity plus ``Ia q'``; column j of ``C`` is ``c(q', e_j)`` of the
    symmetric bilinear form ``c(v, v) = C(q, v) v`` (the pass at ``(q, v, 0)`` without gravity: the
    Christoffel form of ``C``, for which ``M' = C + C^T``), by polarisation
    ``c(q', e_j) = (c(q' + e_j, q' + e_j) - c(q' - e_j, q' - e_j)) / 4``, and ``(C^T q')_j`` its dot
    product with ``q'``: 2 n + 2 passes."""
    ct, st, dth = _joint_angles(geometry, state)
    dq = state[1]
    n = ct.shape[0]
    zero = np.zeros(n)
    out = np.empty((3, n))
    kin = np.empty((n, 9))
    _newton_euler(ct, st, geometry, links, zero, zero, -gravity, kin, out[2])
    at_rest = np.zeros(3)
    _newton_euler(ct, st, geometry, links, zero, dth, at_rest, kin, out[0])
    for i in range(n):
        out[0, i] += rotor[i] * dq[i]
    velocity, plus, minus = np.empty(n), np.empty(n), np.empty(n)
    for j in range(n):
        velocity[:] = dth
        velocity[j] += geometry[_DIRECTION, j]
        _newton_euler(ct, st, geometry, links, velocity, zero, at_rest, kin, plus)
        velocity[j] -= 2.0 * geometry[_DIRECTION, j]
        _newton_euler(ct, st, geometry, links, velocity, zero, at_rest, kin, minus)
        total = 0.0
        for i in range(n):
            total += (plus[i] - minus[i]) * dq[i]
        out[1, j] = 0.25 * total
    return out
