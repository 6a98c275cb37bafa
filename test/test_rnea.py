"""The numeric RNEA regressor and the parameter conversions, checked against Pinocchio and by hand."""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.conversions import (
    PINOCCHIO_PARAMETERS,
    link_parameters,
    pinocchio_to_standard,
    pinocchio_to_standard_matrix,
    standard_to_pinocchio,
    standard_to_pinocchio_matrix,
    transform_link_parameters,
)
from youbot_dynamics.dynamics.parameters import (
    LINK_PARAMETERS,
    PARAMETERS_PER_JOINT,
    inertial_to_standard,
    standard_parameters,
    standard_to_inertial,
    structure_mask,
)
from youbot_dynamics.dynamics.rnea import inverse_dynamics, regressor
from youbot_dynamics.arm.kinematics import link_frames
from youbot_dynamics.arm.transforms import rot_x, rot_z
from youbot_dynamics.arm.urdf import generate_urdf

pin = pytest.importorskip("pinocchio")

TOL = 1e-9
N_STATES = 300
ROTOR_INERTIA = np.array([0.13, 0.11, 0.045, 0.021, 0.012])  # [kg m^2], positive test values
NL = len(LINK_PARAMETERS)
P = PARAMETERS_PER_JOINT


@pytest.fixture(scope="module")
def chain(arm):
    return DHChain.from_arm(arm)


@pytest.fixture(scope="module")
def chi(arm):
    """Nominal standard parameters: the link part equals the URDF inertials; no friction."""
    return standard_parameters(arm, rotor_inertia=ROTOR_INERTIA)


@pytest.fixture(scope="module")
def model(arm, chain):
    m = pin.buildModelFromXML(generate_urdf(arm))
    assert m.nq == m.nv == arm.n_joints
    assert [m.names[i] for i in range(1, m.njoints)] == list(arm.joint_names)
    m.gravity.linear = chain.gravity
    m.armature = ROTOR_INERTIA.copy()
    return m


@pytest.fixture(scope="module")
def states(arm):
    rng = np.random.default_rng(7)
    n = arm.n_joints
    q = rng.uniform(-np.pi, np.pi, size=(N_STATES, n))
    dq = rng.uniform(-2.0, 2.0, size=(N_STATES, n))
    ddq = rng.uniform(-5.0, 5.0, size=(N_STATES, n))
    return q, dq, ddq


def numerical_rank(w: np.ndarray, rtol: float = 1e-9) -> int:
    """Rank of a stacked regressor: columns below ``rtol`` of the largest are zero, the others are
    scaled to unit norm (parameters of very different magnitudes), then SVD with relative ``rtol``."""
    norms = np.linalg.norm(w, axis=0)
    keep = norms > rtol * norms.max()
    s = np.linalg.svd(w[:, keep] / norms[keep], compute_uv=False)
    return int(np.sum(s > rtol * s[0]))


# ---------------------------------------------------------------------------------------------
# Shapes and the single-sample form


def test_shapes_and_single_sample(chain, chi, states):
    q, dq, ddq = states
    n = chain.n_joints
    y = regressor(chain, q, dq, ddq)
    assert y.shape == (N_STATES, n, P * n)
    y0 = regressor(chain, q[3], dq[3], ddq[3])
    assert y0.shape == (n, P * n)
    np.testing.assert_allclose(y0, y[3], atol=1e-14)
    np.testing.assert_allclose(inverse_dynamics(chain, chi, q, dq, ddq), y @ chi, atol=1e-14)
    assert inverse_dynamics(chain, chi, q[0], dq[0], ddq[0]).shape == (n,)
    with pytest.raises(ValueError):
        regressor(chain, q[:, :4], dq[:, :4], ddq[:, :4])
    with pytest.raises(ValueError):
        regressor(chain, q, dq[:10], ddq)
    with pytest.raises(ValueError):
        inverse_dynamics(chain, chi[:-1], q, dq, ddq)


# ---------------------------------------------------------------------------------------------
# Pinocchio: inverse dynamics, mass matrix, gravity


def test_pinocchio_rnea_includes_armature(arm, model, states):
    """Pinocchio >= 3 adds ``model.armature * ddq`` in rnea and on the diagonal of crba: we rely on it."""
    q, dq, ddq = (s[0] for s in states)
    bare = pin.buildModelFromXML(generate_urdf(arm))
    bare.gravity.linear = model.gravity.linear
    tau_bare = pin.rnea(bare, bare.createData(), q, dq, ddq)
    tau_arm = pin.rnea(model, model.createData(), q, dq, ddq)
    np.testing.assert_allclose(tau_arm - tau_bare, ROTOR_INERTIA * ddq, atol=1e-12)
    m_bare = pin.crba(bare, bare.createData(), q)
    m_arm = pin.crba(model, model.createData(), q)
    np.testing.assert_allclose(np.triu(m_arm - m_bare), np.diag(ROTOR_INERTIA), atol=1e-12)


def test_inverse_dynamics_matches_pinocchio(chain, chi, model, states):
    data = model.createData()
    tau = inverse_dynamics(chain, chi, *states)
    for k, (q, dq, ddq) in enumerate(zip(*states)):
        np.testing.assert_allclose(tau[k], pin.rnea(model, data, q, dq, ddq), rtol=0, atol=TOL)


def test_mass_matrix_and_gravity_match_pinocchio(chain, chi, model, states):
    n = chain.n_joints
    q = states[0][:200]
    zeros = np.zeros_like(q)
    g_ours = regressor(chain, q, zeros, zeros) @ chi
    # Column j of M: tau(q, 0, e_j) - G(q).
    m_ours = np.stack([regressor(chain, q, zeros, np.tile(e, (len(q), 1))) @ chi - g_ours for e in np.eye(n)], axis=-1)
    data = model.createData()
    for k in range(len(q)):
        m_pin = np.triu(pin.crba(model, data, q[k]))
        m_pin = m_pin + np.triu(m_pin, 1).T  # crba fills the upper triangle; armature already on the diagonal
        np.testing.assert_allclose(m_ours[k], m_pin, rtol=0, atol=TOL)
        np.testing.assert_allclose(g_ours[k], pin.computeGeneralizedGravity(model, data, q[k]), rtol=0, atol=TOL)
    # M is symmetric positive definite.
    np.testing.assert_allclose(m_ours, np.swapaxes(m_ours, 1, 2), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(m_ours) > 0)


# ---------------------------------------------------------------------------------------------
# Conversions


def test_standard_to_pinocchio_matches_urdf_inertias(chain, chi, model):
    """Pinocchio's body inertias (joint frames arm_link_i_axis) are the URDF inertials converted."""
    pi = np.concatenate([model.inertias[i].toDynamicParameters() for i in range(1, model.njoints)])
    np.testing.assert_allclose(standard_to_pinocchio(chain, chi), pi, rtol=0, atol=1e-14)
    np.testing.assert_allclose(pinocchio_to_standard(chain, pi), link_parameters(chain, chi), rtol=0, atol=1e-14)
    assert len(PINOCCHIO_PARAMETERS) == NL


def test_conversions_are_exact_inverse_linear_maps(chain):
    rng = np.random.default_rng(3)
    n = chain.n_joints
    lmat = standard_to_pinocchio_matrix(chain)
    linv = pinocchio_to_standard_matrix(chain)
    np.testing.assert_allclose(lmat @ linv, np.eye(NL * n), atol=1e-13)
    x = rng.normal(size=NL * n)  # any vector, physical or not: the maps are linear
    np.testing.assert_allclose(standard_to_pinocchio(chain, x), lmat @ x, atol=1e-14)
    np.testing.assert_allclose(pinocchio_to_standard(chain, standard_to_pinocchio(chain, x)), x, atol=1e-13)
    # The 14 n vector is accepted; its drive part is ignored.
    full = rng.normal(size=P * n)
    np.testing.assert_allclose(standard_to_pinocchio(chain, full), lmat @ link_parameters(chain, full), atol=1e-14)
    np.testing.assert_array_equal(link_parameters(chain, full).reshape(n, NL), full.reshape(n, P)[:, :NL])
    with pytest.raises(ValueError):
        standard_to_pinocchio(chain, full[:-1])
    with pytest.raises(ValueError):
        pinocchio_to_standard(chain, full)


def test_transform_link_parameters_is_the_rigid_body_change_of_frame(arm):
    """Against the CoM form: c_A = p + R c_B, I_C,A = R I_C,B R^T (parameters.py conversions)."""
    rng = np.random.default_rng(11)
    for link in arm.links:
        r = rot_z(rng.uniform(-3, 3)) @ rot_x(rng.uniform(-3, 3))
        p = rng.normal(size=3) * 0.2
        phi_b = inertial_to_standard(link)
        phi_a = transform_link_parameters(phi_b, r, p)
        back = standard_to_inertial(phi_a)
        np.testing.assert_allclose(back.mass, link.mass)
        np.testing.assert_allclose(back.com, p + r @ link.com, atol=1e-14)
        np.testing.assert_allclose(back.inertia, r @ link.inertia @ r.T, atol=1e-14)
        np.testing.assert_allclose(transform_link_parameters(phi_a, r.T, -r.T @ p), phi_b, atol=1e-14)


def test_regressor_equals_pinocchio_regressor_times_conversion(chain, model, states):
    lmat = standard_to_pinocchio_matrix(chain)
    link_mask = structure_mask(chain.n_joints, "inertial")
    y = regressor(chain, *states)[:, :, link_mask]
    data = model.createData()
    for k, (q, dq, ddq) in enumerate(zip(*states)):
        y_pin = pin.computeJointTorqueRegressor(model, data, q, dq, ddq)
        np.testing.assert_allclose(y[k], y_pin @ lmat, rtol=0, atol=TOL)


# ---------------------------------------------------------------------------------------------
# Base parameter counts


def test_base_parameter_counts(chain, model, states):
    """Ranks from Pinocchio's regressor (independent of ours), and ours, for the three structures."""
    q, dq, ddq = states
    n = chain.n_joints
    data = model.createData()
    w_pin = np.vstack([pin.computeJointTorqueRegressor(model, data, a, b, c).copy() for a, b, c in zip(q, dq, ddq)])
    drives = [np.zeros((N_STATES, n, n)) for _ in range(4)]  # ddq, dq, sign(dq), 1 in row j only
    idx = np.arange(n)
    for cols, values in zip(drives, (ddq, dq, np.sign(dq), np.ones_like(dq))):
        cols[:, idx, idx] = values
    drives = [d.reshape(N_STATES * n, n) for d in drives]
    assert numerical_rank(w_pin) == 29
    assert numerical_rank(np.hstack([w_pin, drives[0]])) == 32
    assert numerical_rank(np.hstack([w_pin, *drives])) == 47

    y = regressor(chain, q, dq, ddq).reshape(N_STATES * n, P * n)
    expected = {"inertial": 29, "rotor": 32, "full": 47}
    for structure, rank in expected.items():
        assert numerical_rank(y[:, structure_mask(n, structure)]) == rank, structure


def test_seed_two_link_oracle_has_13_base_parameters():
    """Seed 002, Appendix Г/Д: the two-link arm's 28-column regressor has 13 base parameters."""
    two = DHChain.create(a=[0.3, 0.2], alpha=[0.0, np.pi / 2], d=[0.0, 0.0], theta_offset=[0.4, -0.7],
                         direction=[-1, -1], gravity=[0.0, -9.82, 0.0])
    rng = np.random.default_rng(5)
    q, dq, ddq = (rng.uniform(-3, 3, size=(400, 2)) for _ in range(3))
    y = regressor(two, q, dq, ddq).reshape(-1, 2 * P)
    assert numerical_rank(y) == 13


# ---------------------------------------------------------------------------------------------
# Structure


def test_structure_block_triangular_and_drive_columns(chain, states):
    n = chain.n_joints
    y = regressor(chain, *states)
    for i in range(n):  # link i (0-based) columns
        link = y[:, :, P * i : P * i + NL]
        assert np.all(link[:, i + 1 :, :] == 0.0), f"link {i + 1} enters joints after it"
        assert np.any(np.abs(link[:, i, :]) > 1e-6)
        drive = y[:, :, P * i + NL : P * (i + 1)]
        others = np.delete(drive, i, axis=1)
        assert np.all(others == 0.0), f"drive {i + 1} columns outside row {i + 1}"
        q, dq, ddq = states
        np.testing.assert_array_equal(drive[:, i, 0], ddq[:, i])
        np.testing.assert_array_equal(drive[:, i, 1], dq[:, i])
        np.testing.assert_array_equal(drive[:, i, 2], np.sign(dq[:, i]))
        np.testing.assert_array_equal(drive[:, i, 3], 1.0)


# ---------------------------------------------------------------------------------------------
# Physics


def test_gravity_is_gradient_of_potential_energy(arm, chain, chi, states):
    n = arm.n_joints
    links = [inertial_to_standard(link) for link in arm.links]
    g = chain.gravity

    def potential(q):
        frames = link_frames(arm, q, include_tool=False)  # (..., n+1, 4, 4), index i = DH frame i
        u = np.zeros(q.shape[:-1])
        for i, phi in enumerate(links):
            t = frames[..., i + 1, :, :]
            # m p_c = m o_i + R_i (m c)
            mpc = phi[0] * t[..., :3, 3] + t[..., :3, :3] @ phi[1:4]
            u = u - mpc @ g
        return u

    q = states[0][:100]
    zeros = np.zeros_like(q)
    g_ours = regressor(chain, q, zeros, zeros) @ chi
    h = 1e-6
    grad = np.stack([(potential(q + h * e) - potential(q - h * e)) / (2 * h) for e in np.eye(n)], axis=-1)
    np.testing.assert_allclose(g_ours, grad, rtol=0, atol=1e-7)


@pytest.mark.parametrize("offset,direction", [(0.0, 1.0), (0.6, -1.0)])
def test_one_link_closed_form(offset, direction):
    """One link (a1, alpha 0, d 0) turning in the vertical x-y plane, gravity [0, -g, 0].

    With theta = offset + direction q, the CoM in the base is ``R(theta) (c + (a, 0, 0))``, so
    ``U = g (m a sin th + mx sin th + my cos th)`` and ``dU/dth = g ((m a + mx) cos th - my sin th)``.
    The inertia about the joint axis (z0 through the base origin, offset (-a, 0, 0) from O_1) is
    ``Izz + 2 a mx + m a^2`` (parallel axis from O_1), no Coriolis term for one link. In q:
    ``tau = (Izz + 2 a mx + m a^2 + Ia) q'' + direction dU/dth + fv q' + fc sign(q') + f0``.
    """
    a, g = 0.37, 9.82
    one = DHChain.create(a=[a], alpha=[0.0], d=[0.0], theta_offset=[offset], direction=[direction],
                         gravity=[0.0, -g, 0.0])
    m, mx, my, mz = 1.7, 0.21, -0.13, 0.05
    ixx, iyy, izz, ixy, ixz, iyz = 0.03, 0.04, 0.05, -0.002, 0.001, 0.003
    ia, fv, fc, f0 = 0.02, 0.3, 0.4, -0.05
    chi = np.array([m, mx, my, mz, ixx, iyy, izz, ixy, ixz, iyz, ia, fv, fc, f0])
    rng = np.random.default_rng(1)
    q, dq, ddq = (rng.uniform(-3, 3, size=(50, 1)) for _ in range(3))
    th = offset + direction * q[:, 0]
    expected = ((izz + 2 * a * mx + m * a**2 + ia) * ddq[:, 0]
                + direction * g * ((m * a + mx) * np.cos(th) - my * np.sin(th))
                + fv * dq[:, 0] + fc * np.sign(dq[:, 0]) + f0)
    tau = inverse_dynamics(one, chi, q, dq, ddq)[:, 0]
    np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-12)
    # Seed 000/001 oracle: 3 base parameters of the link (Izz - a^2 m, mx + a m, my), + 4 drive terms
    # (Ia merges with Izz: both multiply q'').
    y = regressor(one, q, dq, ddq).reshape(-1, P)
    assert numerical_rank(y[:, :NL]) == 3
    assert numerical_rank(y) == 6
