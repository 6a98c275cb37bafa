"""Homogeneous transforms, rotations and quaternions, vectorised over leading axes.

Every function accepts arrays with arbitrary leading (batch) dimensions: a rotation is
``(..., 3, 3)``, a transform ``(..., 4, 4)``, a quaternion ``(..., 4)`` in ``[x, y, z, w]`` order
(the ``geometry_msgs/Quaternion`` order).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Largest ``|norm - 1|`` of a quaternion that :func:`quaternion_to_rotation` normalises (beyond: refused).
QUATERNION_TOLERANCE = 1e-3

__all__ = [
    "rot_x",
    "rot_z",
    "transform",
    "invert_transform",
    "rotation_to_quaternion",
    "quaternion_to_rotation",
    "QUATERNION_TOLERANCE",
    "rotation_angle",
    "skew",
    "rpy_to_rotation",
    "rotation_to_rpy",
]


def rot_x(angle: ArrayLike) -> NDArray[np.float64]:
    """Rotation about x by ``angle`` [rad], shape ``(..., 3, 3)``."""
    a = np.asarray(angle, dtype=float)
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    return np.stack([np.stack([o, z, z], -1), np.stack([z, c, -s], -1), np.stack([z, s, c], -1)], -2)


def rot_z(angle: ArrayLike) -> NDArray[np.float64]:
    """Rotation about z by ``angle`` [rad], shape ``(..., 3, 3)``."""
    a = np.asarray(angle, dtype=float)
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    return np.stack([np.stack([c, -s, z], -1), np.stack([s, c, z], -1), np.stack([z, z, o], -1)], -2)


def transform(rotation: ArrayLike, translation: ArrayLike) -> NDArray[np.float64]:
    """Homogeneous transform from a rotation ``(..., 3, 3)`` and a translation ``(..., 3)``."""
    r = np.asarray(rotation, dtype=float)
    p = np.asarray(translation, dtype=float)
    shape = np.broadcast_shapes(r.shape[:-2], p.shape[:-1])
    t = np.zeros(shape + (4, 4))
    t[..., :3, :3] = r
    t[..., :3, 3] = p
    t[..., 3, 3] = 1.0
    return t


def invert_transform(t: ArrayLike) -> NDArray[np.float64]:
    """Inverse of a rigid transform: ``[R^T, -R^T p]``."""
    t = np.asarray(t, dtype=float)
    rt = np.swapaxes(t[..., :3, :3], -1, -2)
    return transform(rt, -np.einsum("...ij,...j->...i", rt, t[..., :3, 3]))


def skew(v: ArrayLike) -> NDArray[np.float64]:
    """Cross-product matrix ``[v]x`` with ``[v]x w = v x w``."""
    v = np.asarray(v, dtype=float)
    z = np.zeros_like(v[..., 0])
    return np.stack(
        [
            np.stack([z, -v[..., 2], v[..., 1]], -1),
            np.stack([v[..., 2], z, -v[..., 0]], -1),
            np.stack([-v[..., 1], v[..., 0], z], -1),
        ],
        -2,
    )


def rotation_to_quaternion(r: ArrayLike) -> NDArray[np.float64]:
    """Unit quaternion ``[x, y, z, w]`` (with ``w >= 0``) of rotation matrices ``(..., 3, 3)``.

    Shepperd's method: the largest of ``w, x, y, z`` is computed from the trace first, so the
    result is accurate for every rotation, including half turns.
    """
    r = np.asarray(r, dtype=float)
    m00, m11, m22 = r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]
    cand = np.stack(
        [1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22, 1 + m00 + m11 + m22], -1
    )
    k = np.argmax(cand, axis=-1)
    big = 0.5 * np.sqrt(np.maximum(np.take_along_axis(cand, k[..., None], -1)[..., 0], 0.0))
    f = 0.25 / big
    d21, d12 = r[..., 2, 1], r[..., 1, 2]
    d02, d20 = r[..., 0, 2], r[..., 2, 0]
    d10, d01 = r[..., 1, 0], r[..., 0, 1]
    options = np.stack(
        [
            np.stack([big, (d01 + d10) * f, (d02 + d20) * f, (d21 - d12) * f], -1),
            np.stack([(d01 + d10) * f, big, (d12 + d21) * f, (d02 - d20) * f], -1),
            np.stack([(d02 + d20) * f, (d12 + d21) * f, big, (d10 - d01) * f], -1),
            np.stack([(d21 - d12) * f, (d02 - d20) * f, (d10 - d01) * f, big], -1),
        ],
        -2,
    )
    q = np.take_along_axis(options, k[..., None, None], -2)[..., 0, :]
    return np.where(q[..., 3:4] < 0, -q, q)


def quaternion_to_rotation(q: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrix of quaternions ``[x, y, z, w]``, each normalised first.

    A quaternion whose norm differs from 1 by at most :data:`QUATERNION_TOLERANCE` (1e-3) is
    normalised: a unit quaternion rounded to 5 decimals (norm within ~2e-5 of 1) is accepted. One
    further off (a zero quaternion, a typo) raises ``ValueError`` naming its norm, rather than
    being silently normalised: a malformed pose should not become a motion.
    """
    q = np.asarray(q, dtype=float)
    if q.shape[-1] != 4:
        raise ValueError(f"quaternion must have 4 components [x, y, z, w], got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("quaternion contains NaN or infinite values")
    n = np.linalg.norm(q, axis=-1)
    deviation = np.abs(n - 1.0)
    if np.any(deviation > QUATERNION_TOLERANCE):
        worst = n.flat[int(np.argmax(deviation))]
        raise ValueError(f"quaternion is not unit length (norm {worst:.6g}; |norm - 1| may be at most "
                         f"{QUATERNION_TOLERANCE:g})")
    x, y, z, w = np.moveaxis(q / n[..., None], -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def rotation_angle(r_a: ArrayLike, r_b: ArrayLike) -> NDArray[np.float64]:
    """Angle [rad] of the relative rotation ``R_a^T R_b`` (0 when equal), robust near 0 and pi."""
    r_a = np.asarray(r_a, dtype=float)
    r_b = np.asarray(r_b, dtype=float)
    rel = np.swapaxes(r_a, -1, -2) @ r_b
    # atan2(|axis * sin|, cos) is accurate at both ends, unlike acos of the trace.
    sin_part = 0.5 * np.linalg.norm(
        np.stack(
            [rel[..., 2, 1] - rel[..., 1, 2], rel[..., 0, 2] - rel[..., 2, 0], rel[..., 1, 0] - rel[..., 0, 1]],
            -1,
        ),
        axis=-1,
    )
    cos_part = 0.5 * (np.trace(rel, axis1=-2, axis2=-1) - 1.0)
    return np.arctan2(sin_part, cos_part)


def rpy_to_rotation(rpy: ArrayLike) -> NDArray[np.float64]:
    """URDF fixed-axis roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = np.moveaxis(np.asarray(rpy, dtype=float), -1, 0)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.stack(
        [
            np.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr], -1),
            np.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], -1),
            np.stack([-sp, cp * sr, cp * cr], -1),
        ],
        -2,
    )


def rotation_to_rpy(r: ArrayLike) -> NDArray[np.float64]:
    """Inverse of :func:`rpy_to_rotation` (pitch in ``[-pi/2, pi/2]``)."""
    r = np.asarray(r, dtype=float)
    cos_pitch = np.hypot(r[..., 0, 0], r[..., 1, 0])
    pitch = np.arctan2(-r[..., 2, 0], cos_pitch)
    gimbal = cos_pitch < 1e-9  # pitch = +-pi/2: only roll -/+ yaw is defined; report roll = 0
    roll = np.where(gimbal, 0.0, np.arctan2(r[..., 2, 1], r[..., 2, 2]))
    yaw = np.where(gimbal, np.arctan2(-r[..., 0, 1], r[..., 1, 1]), np.arctan2(r[..., 1, 0], r[..., 0, 0]))
    return np.stack([roll, pitch, yaw], -1)
