"""Rotations, quaternions, roll-pitch-yaw and rigid transforms (youbot_dynamics.arm.transforms).

Expected values come from independent constructions in this file: Rodrigues' formula for an
axis-angle rotation, the textbook quaternion of an axis-angle rotation
``[sin(a/2) u, cos(a/2)]``, elementary rotations written out by hand, and ``numpy.linalg.inv``.
"""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.arm.transforms import (
    invert_transform,
    quaternion_to_rotation,
    rot_x,
    rot_z,
    rotation_angle,
    rotation_to_quaternion,
    rotation_to_rpy,
    rpy_to_rotation,
    skew,
    transform,
)

RNG_SEED = 20240611


def axis_angle(axis, angle):
    """Rodrigues' formula, written independently of the module under test."""
    u = np.asarray(axis, dtype=float)
    u = u / np.linalg.norm(u)
    k = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def axis_angle_quaternion(axis, angle):
    u = np.asarray(axis, dtype=float)
    u = u / np.linalg.norm(u)
    return np.concatenate([np.sin(angle / 2) * u, [np.cos(angle / 2)]])


def same_quaternion(a, b, tol):
    """q and -q are the same rotation."""
    return min(np.max(np.abs(a - b)), np.max(np.abs(a + b))) < tol


def random_axes(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_elementary_rotations_match_hand_written_matrices():
    a = 0.7
    c, s = np.cos(a), np.sin(a)
    np.testing.assert_allclose(rot_z(a), [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-15)
    np.testing.assert_allclose(rot_x(a), [[1, 0, 0], [0, c, -s], [0, s, c]], atol=1e-15)
    np.testing.assert_allclose(rot_z(a), axis_angle([0, 0, 1], a), atol=1e-15)
    assert rot_z(np.zeros((2, 3))).shape == (2, 3, 3, 3)


def test_skew_is_the_cross_product():
    rng = np.random.default_rng(RNG_SEED)
    v, w = rng.normal(size=(2, 50, 3))
    np.testing.assert_allclose(np.einsum("nij,nj->ni", skew(v), w), np.cross(v, w), atol=1e-14)


def test_quaternion_of_known_axis_angle_rotations():
    rng = np.random.default_rng(RNG_SEED)
    axes = random_axes(rng, 200)
    angles = rng.uniform(0, np.pi, 200)
    angles[:4] = [0.0, 1e-12, np.pi - 1e-12, np.pi]
    for u, a in zip(axes, angles):
        r = axis_angle(u, a)
        expected = axis_angle_quaternion(u, a)
        q = rotation_to_quaternion(r)
        assert same_quaternion(q, expected, 1e-12), (u, a, q, expected)
        assert q[3] >= 0.0
        np.testing.assert_allclose(quaternion_to_rotation(expected), r, atol=1e-14)


def test_identity_quaternion():
    np.testing.assert_array_equal(rotation_to_quaternion(np.eye(3)), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(quaternion_to_rotation([0.0, 0.0, 0.0, 1.0]), np.eye(3), atol=0)


@pytest.mark.parametrize("axis", [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, -2, 3], [0, 1, -1]])
def test_half_turns(axis):
    """At pi the trace-based formula breaks down; Shepperd's method must not."""
    for angle in (np.pi, np.pi - 1e-9, np.pi - 1e-6, np.pi - 1e-3):
        r = axis_angle(axis, angle)
        q = rotation_to_quaternion(r)
        assert same_quaternion(q, axis_angle_quaternion(axis, angle), 1e-12)
        np.testing.assert_allclose(quaternion_to_rotation(q), r, atol=1e-14)


def test_round_trip_random_rotations_batched():
    rng = np.random.default_rng(RNG_SEED + 1)
    q = rng.normal(size=(4, 250, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    r = quaternion_to_rotation(q)
    assert r.shape == (4, 250, 3, 3)
    # orthonormal, right-handed
    np.testing.assert_allclose(r @ np.swapaxes(r, -1, -2), np.broadcast_to(np.eye(3), r.shape), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-14)
    back = rotation_to_quaternion(r)
    assert np.all(back[..., 3] >= 0)
    sign = np.where(q[..., 3:4] < 0, -1.0, 1.0)
    np.testing.assert_allclose(back, sign * q, atol=1e-14)
    np.testing.assert_allclose(quaternion_to_rotation(back), r, atol=1e-14)


@pytest.mark.parametrize(
    "bad",
    [[0.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [0.1, 0.0, 0.0, 1.0], [np.nan, 0.0, 0.0, 1.0],
     [0.0, np.inf, 0.0, 1.0], [0.0, 0.0, 1.0]],
)
def test_bad_quaternions_are_rejected(bad):
    with pytest.raises(ValueError):
        quaternion_to_rotation(bad)


def test_bad_quaternion_in_a_batch_is_rejected():
    batch = np.tile([0.0, 0.0, 0.0, 1.0], (5, 1))
    batch[3, 0] = np.nan
    with pytest.raises(ValueError):
        quaternion_to_rotation(batch)


def elementary_rpy(roll, pitch, yaw):
    """URDF fixed axes: roll about x, then pitch about y, then yaw about z (all fixed)."""
    return axis_angle([0, 0, 1], yaw) @ axis_angle([0, 1, 0], pitch) @ axis_angle([1, 0, 0], roll)


def test_rpy_matches_elementary_rotations_and_round_trips():
    rng = np.random.default_rng(RNG_SEED + 2)
    rpy = np.column_stack([rng.uniform(-np.pi, np.pi, 300), rng.uniform(-np.pi / 2 + 1e-6, np.pi / 2 - 1e-6, 300),
                           rng.uniform(-np.pi, np.pi, 300)])
    r = rpy_to_rotation(rpy)
    for k in range(0, 300, 7):
        np.testing.assert_allclose(r[k], elementary_rpy(*rpy[k]), atol=1e-14)
    np.testing.assert_allclose(rotation_to_rpy(r), rpy, atol=1e-9)


@pytest.mark.parametrize("pitch", [np.pi / 2, -np.pi / 2])
def test_rpy_gimbal_lock(pitch):
    """At pitch = +-pi/2 only roll -/+ yaw is defined: the rotation, not the angles, must round trip."""
    rng = np.random.default_rng(RNG_SEED + 3)
    for roll, yaw in rng.uniform(-np.pi, np.pi, size=(50, 2)):
        r = elementary_rpy(roll, pitch, yaw)
        back = rotation_to_rpy(r)
        assert np.all(np.isfinite(back))
        assert back[1] == pytest.approx(pitch, abs=1e-7)
        assert back[0] == 0.0  # documented convention: roll reported as 0
        np.testing.assert_allclose(rpy_to_rotation(back), r, atol=1e-12)


def test_rotation_angle_of_known_rotations():
    rng = np.random.default_rng(RNG_SEED + 4)
    angles = np.concatenate([[0.0, 1e-10, 1e-6, 0.5, np.pi / 2, np.pi - 1e-6, np.pi - 1e-10, np.pi],
                             rng.uniform(0, np.pi, 100)])
    axes = random_axes(rng, len(angles))
    bases = quaternion_to_rotation(
        (lambda v: v / np.linalg.norm(v, axis=1, keepdims=True))(rng.normal(size=(len(angles), 4))))
    for base, u, angle in zip(bases, axes, angles):
        other = base @ axis_angle(u, angle)
        assert rotation_angle(base, other) == pytest.approx(angle, abs=1e-12, rel=1e-9)
        assert rotation_angle(other, base) == pytest.approx(angle, abs=1e-12, rel=1e-9)
        # the relative rotation can also be applied in the world frame
        assert rotation_angle(base, axis_angle(u, angle) @ base) == pytest.approx(angle, abs=1e-12, rel=1e-9)
    assert rotation_angle(np.eye(3), np.eye(3)) == 0.0


def test_rotation_angle_batched():
    a = rot_z(np.zeros(10))
    b = rot_z(np.linspace(-3, 3, 10))
    np.testing.assert_allclose(rotation_angle(a, b), np.abs(np.linspace(-3, 3, 10)), atol=1e-14)


def test_invert_transform():
    rng = np.random.default_rng(RNG_SEED + 5)
    q = rng.normal(size=(3, 7, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    t = transform(quaternion_to_rotation(q), rng.normal(size=(3, 7, 3)))
    inv = invert_transform(t)
    assert inv.shape == t.shape
    np.testing.assert_allclose(inv, np.linalg.inv(t), atol=1e-13)
    np.testing.assert_allclose(inv @ t, np.broadcast_to(np.eye(4), t.shape), atol=1e-14)
    np.testing.assert_allclose(invert_transform(inv), t, atol=1e-14)
    np.testing.assert_array_equal(inv[..., 3, :], np.broadcast_to([0.0, 0.0, 0.0, 1.0], t.shape[:-2] + (4,)))


def test_transform_layout():
    r = axis_angle([1, 2, 3], 0.4)
    t = transform(r, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t[:3, :3], r)
    np.testing.assert_array_equal(t[:3, 3], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t[3], [0.0, 0.0, 0.0, 1.0])
    point = np.array([0.5, -0.2, 0.1])
    np.testing.assert_allclose((t @ np.append(point, 1.0))[:3], r @ point + [1.0, 2.0, 3.0], atol=1e-15)
