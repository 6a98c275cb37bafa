"""Forward kinematics and the geometric Jacobian (youbot_dynamics.arm.kinematics, youbot_dynamics.arm.poe).

Independent references: the seed 002 oracle (2.7)-(2.8); the explicit product of DH matrices;
``dh_transform`` against the elementary motions ``Rz Tz Tx Rx``; the product-of-exponentials
formulation (seed 004), which shares only the home geometry with the DH code; central finite
differences of the forward kinematics for the Jacobian.
"""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.arm.kinematics import dh_transform, forward_kinematics, geometric_jacobian, link_frames
from youbot_dynamics.arm.poe import home_pose, poe_forward_kinematics, poe_jacobian, poe_space_jacobian, screw_axes
from youbot_dynamics.arm.transforms import rot_x, rot_z, transform

SEED = 7


def random_q(arm, n, rng, margin=1.0):
    """Configurations spread beyond the joint limits (FK must not care about limits)."""
    return rng.uniform(arm.position_min - margin, arm.position_max + margin, size=(n, arm.n_joints))


def dh_product(arm, q):
    """``A_1 ... A_n T_tool`` by explicit matrix products of single DH transforms (one q)."""
    theta = arm.theta(q)
    t = np.eye(4)
    for i in range(arm.n_joints):
        t = t @ dh_transform(theta[i], arm.dh_d[i], arm.dh_a[i], arm.dh_alpha[i])
    return t @ arm.tool


def test_seed_oracle_2_7_2_8(arm):
    q = arm.q_from_theta([0.0, np.pi / 2, 0.0, np.pi / 2, 0.0])
    t = forward_kinematics(arm, q)
    np.testing.assert_allclose(t[:3, :3], np.diag([-1.0, -1.0, 1.0]), atol=1e-12)
    np.testing.assert_allclose(t[:3, 3], [0.033, 0.0, 0.655], atol=1e-12)
    np.testing.assert_array_equal(t[3], [0, 0, 0, 1])
    # the same through the other formulation
    np.testing.assert_allclose(poe_forward_kinematics(arm, q), t, atol=1e-12)


def test_seed_oracle_geometry(arm):
    """At the oracle pose the arm points straight up: p_z = d1 + a2 + a3 + d5."""
    q = arm.q_from_theta([0.0, np.pi / 2, 0.0, np.pi / 2, 0.0])
    assert forward_kinematics(arm, q)[2, 3] == pytest.approx(arm.dh_d[0] + arm.dh_a[1] + arm.dh_a[2] + arm.dh_d[4],
                                                             abs=1e-15)


def test_dh_transform_is_rz_tz_tx_rx():
    rng = np.random.default_rng(SEED)
    for theta, d, a, alpha in rng.uniform(-3, 3, size=(50, 4)):
        expected = (transform(rot_z(theta), np.zeros(3)) @ transform(np.eye(3), [0, 0, d])
                    @ transform(np.eye(3), [a, 0, 0]) @ transform(rot_x(alpha), np.zeros(3)))
        np.testing.assert_allclose(dh_transform(theta, d, a, alpha), expected, atol=1e-14)
    assert dh_transform(np.zeros((2, 3)), 0.1, 0.2, 0.3).shape == (2, 3, 4, 4)


def test_fk_equals_product_of_dh_matrices(arm):
    rng = np.random.default_rng(SEED + 1)
    q = random_q(arm, 200, rng)
    fk = forward_kinematics(arm, q)
    for k in range(len(q)):
        np.testing.assert_allclose(fk[k], dh_product(arm, q[k]), atol=1e-14)


def test_link_frames_are_partial_products(arm):
    rng = np.random.default_rng(SEED + 2)
    q = random_q(arm, 20, rng)
    frames = link_frames(arm, q)
    assert frames.shape == (20, arm.n_joints + 2, 4, 4)
    np.testing.assert_array_equal(frames[:, 0], np.broadcast_to(np.eye(4), (20, 4, 4)))
    np.testing.assert_allclose(frames[:, -1], forward_kinematics(arm, q), atol=1e-15)
    for k in range(len(q)):
        theta = arm.theta(q[k])
        t = np.eye(4)
        for i in range(arm.n_joints):
            t = t @ dh_transform(theta[i], arm.dh_d[i], arm.dh_a[i], arm.dh_alpha[i])
            np.testing.assert_allclose(frames[k, i + 1], t, atol=1e-14)
    no_tool = link_frames(arm, q, include_tool=False)
    assert no_tool.shape == (20, arm.n_joints + 1, 4, 4)
    np.testing.assert_array_equal(no_tool, frames[:, :-1])


def test_fk_equals_product_of_exponentials(arm):
    rng = np.random.default_rng(SEED + 3)
    q = random_q(arm, 1000, rng, margin=3.0)
    np.testing.assert_allclose(poe_forward_kinematics(arm, q), forward_kinematics(arm, q), atol=1e-12, rtol=0)


def test_screw_axes_geometry(arm):
    """Zero-pitch unit screws; joints 2-4 parallel (youBot), joint 1 vertical, joint 5 normal to 4."""
    s = screw_axes(arm)
    w, v = s[:, :3], s[:, 3:]
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(np.sum(w * v, axis=1), 0.0, atol=1e-15)  # revolute: w . v = 0
    np.testing.assert_allclose(np.abs(w[0]), [0, 0, 1], atol=1e-15)
    for i in (2, 3):
        np.testing.assert_allclose(np.cross(w[1], w[i]), 0.0, atol=1e-15)
    assert abs(w[3] @ w[4]) < 1e-15
    # joint 1 axis passes through the base origin; joint 2 axis is at height d1
    np.testing.assert_allclose(v[0], 0.0, atol=1e-15)
    point_on_axis_2 = np.cross(w[1], v[1])  # the point of the axis closest to the origin
    assert point_on_axis_2[2] == pytest.approx(arm.dh_d[0], abs=1e-15)
    assert np.hypot(*point_on_axis_2[:2]) == pytest.approx(arm.dh_a[0], abs=1e-15)


def test_home_pose_is_fk_at_zero(arm):
    np.testing.assert_allclose(home_pose(arm), forward_kinematics(arm, np.zeros(arm.n_joints)), atol=1e-15)
    np.testing.assert_allclose(home_pose(arm), dh_product(arm, np.zeros(arm.n_joints)), atol=1e-15)


def rotation_log(r):
    """Rotation vector of r (3, 3), valid away from pi (used here for small increments)."""
    cos = np.clip(0.5 * (np.trace(r) - 1.0), -1.0, 1.0)
    angle = np.arccos(cos)
    vee = 0.5 * np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    return vee if angle < 1e-12 else vee * angle / np.sin(angle)


def finite_difference_jacobian(arm, q, h=1e-6):
    jac = np.empty((6, arm.n_joints))
    for i in range(arm.n_joints):
        dq = np.zeros(arm.n_joints)
        dq[i] = h
        plus, minus = forward_kinematics(arm, q + dq), forward_kinematics(arm, q - dq)
        jac[:3, i] = (plus[:3, 3] - minus[:3, 3]) / (2 * h)
        # angular velocity in the base frame: (R+ R-^T) is the rotation over 2h, in world axes
        jac[3:, i] = rotation_log(plus[:3, :3] @ minus[:3, :3].T) / (2 * h)
    return jac


def finite_difference_jacobian_dr(arm, q, h=1e-6):
    """Angular part from ``[w] = dR/dq R^T`` (vee), the other textbook route."""
    jac = np.empty((3, arm.n_joints))
    r = forward_kinematics(arm, q)[:3, :3]
    for i in range(arm.n_joints):
        dq = np.zeros(arm.n_joints)
        dq[i] = h
        dr = (forward_kinematics(arm, q + dq)[:3, :3] - forward_kinematics(arm, q - dq)[:3, :3]) / (2 * h)
        w_hat = dr @ r.T
        jac[:, i] = [w_hat[2, 1], w_hat[0, 2], w_hat[1, 0]]
    return jac


def test_jacobian_equals_finite_differences(arm):
    rng = np.random.default_rng(SEED + 4)
    q = random_q(arm, 50, rng)
    jac = geometric_jacobian(arm, q)
    for k in range(len(q)):
        np.testing.assert_allclose(jac[k], finite_difference_jacobian(arm, q[k]), atol=1e-6, rtol=0)
        np.testing.assert_allclose(jac[k, 3:], finite_difference_jacobian_dr(arm, q[k]), atol=1e-6, rtol=0)


def test_jacobian_equals_poe_jacobian(arm):
    rng = np.random.default_rng(SEED + 5)
    q = random_q(arm, 1000, rng, margin=3.0)
    np.testing.assert_allclose(poe_jacobian(arm, q), geometric_jacobian(arm, q), atol=1e-12, rtol=0)


def test_space_jacobian_is_velocity_of_the_base_origin_point(arm):
    """J_s,v = v_tool - w x p_tool: the body point at the base origin."""
    rng = np.random.default_rng(SEED + 6)
    q = random_q(arm, 100, rng)
    js = poe_space_jacobian(arm, q)
    jg = geometric_jacobian(arm, q)
    p = forward_kinematics(arm, q)[:, :3, 3]
    np.testing.assert_allclose(js[:, :3], jg[:, 3:], atol=1e-14)
    np.testing.assert_allclose(js[:, 3:], jg[:, :3] - np.cross(jg[:, 3:], p[:, :, None], axis=1), atol=1e-14)


def test_poe_jacobian_equals_finite_differences_of_poe(arm):
    """Self-consistency of the second formulation on its own (does not use kinematics.py)."""
    rng = np.random.default_rng(SEED + 7)
    h = 1e-6
    for q in random_q(arm, 20, rng):
        jac = poe_jacobian(arm, q)
        for i in range(arm.n_joints):
            dq = np.zeros(arm.n_joints)
            dq[i] = h
            plus, minus = poe_forward_kinematics(arm, q + dq), poe_forward_kinematics(arm, q - dq)
            np.testing.assert_allclose(jac[:3, i], (plus[:3, 3] - minus[:3, 3]) / (2 * h), atol=1e-6)
            np.testing.assert_allclose(jac[3:, i], rotation_log(plus[:3, :3] @ minus[:3, :3].T) / (2 * h), atol=1e-6)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 1, 3)])
def test_batch_shapes(arm, shape):
    rng = np.random.default_rng(SEED + 8)
    q = rng.uniform(-3, 3, size=shape + (arm.n_joints,))
    fk = forward_kinematics(arm, q)
    jac = geometric_jacobian(arm, q)
    frames = link_frames(arm, q)
    assert fk.shape == shape + (4, 4)
    assert jac.shape == shape + (6, arm.n_joints)
    assert frames.shape == shape + (arm.n_joints + 2, 4, 4)
    assert poe_forward_kinematics(arm, q).shape == shape + (4, 4)
    assert poe_jacobian(arm, q).shape == shape + (6, arm.n_joints)
    flat = q.reshape(-1, arm.n_joints)
    np.testing.assert_allclose(fk.reshape(-1, 4, 4), forward_kinematics(arm, flat), atol=0)
    np.testing.assert_allclose(jac.reshape(-1, 6, arm.n_joints), geometric_jacobian(arm, flat), atol=0)
    np.testing.assert_allclose(frames[..., -1, :, :], fk, atol=0)


def test_fk_is_a_rigid_transform(arm):
    rng = np.random.default_rng(SEED + 9)
    t = forward_kinematics(arm, random_q(arm, 100, rng))
    r = t[:, :3, :3]
    np.testing.assert_allclose(r @ np.swapaxes(r, -1, -2), np.broadcast_to(np.eye(3), r.shape), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-14)
    np.testing.assert_array_equal(t[:, 3], np.broadcast_to([0, 0, 0, 1], (100, 4)))


def test_joint_1_rotates_the_whole_arm_about_z(arm):
    """Geometric fact: a change dq1 rotates the whole arm by direction_1 * dq1 about the base z axis."""
    rng = np.random.default_rng(SEED + 10)
    q = random_q(arm, 10, rng)
    for dq1 in (0.3, -1.2):
        moved = q.copy()
        moved[:, 0] += dq1
        rotation = transform(rot_z(arm.direction[0] * dq1), np.zeros(3))
        np.testing.assert_allclose(forward_kinematics(arm, moved), rotation @ forward_kinematics(arm, q), atol=1e-14)


@pytest.mark.parametrize("fn", [forward_kinematics, geometric_jacobian, link_frames, poe_forward_kinematics,
                                poe_jacobian])
def test_check_q_errors_surface(arm, fn):
    with pytest.raises(ValueError, match="5 joint values"):
        fn(arm, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="5 joint values"):
        fn(arm, np.zeros((4, 6)))
    with pytest.raises(ValueError, match="NaN"):
        fn(arm, [0.1, np.nan, 0.3, 0.4, 0.5])
