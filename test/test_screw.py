"""Screw-theory dynamics (youbot_dynamics.dynamics.screw, seed 004 with the digest's corrections).

Two independent formulations must agree: the PoE / spatial-inertia model against the numeric
DH Newton-Euler regressor (youbot_dynamics.dynamics.rnea), on random physically consistent
parameters and random states; then physics checks on the screw model alone (symmetric positive
definite M, skew-symmetric M' - 2C with Christoffel C, G = dU/dq, energy conservation).
Seed 003 Example 1 (3 links in a vertical plane) is a separate oracle and is not used here.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from youbot_dynamics.arm.description import LinkInertial, default_arm
from youbot_dynamics.dynamics import screw
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.parameters import PARAMETERS_PER_JOINT, inertial_to_standard
from youbot_dynamics.dynamics.rnea import regressor
from youbot_dynamics.arm.kinematics import link_frames

N_STATES = 200


@pytest.fixture(scope="module")
def chain():
    return DHChain.from_arm(default_arm())


def random_link(rng: np.random.Generator) -> LinkInertial:
    """A physically consistent rigid body: mass, CoM, inertia from positive second moments.

    ``I_C = tr(S) E - S`` with ``S = R diag(s) R^T``, ``s > 0``: positive definite and its
    principal moments ``s_b + s_c`` satisfy the triangle inequality strictly.
    """
    mass = rng.uniform(0.2, 3.0)
    com = rng.uniform(-0.15, 0.15, 3)
    r, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    s = r @ np.diag(mass * rng.uniform(1e-4, 5e-3, 3)) @ r.T
    return LinkInertial(mass=mass, com=com, inertia=np.trace(s) * np.eye(3) - s)


def random_chi(rng: np.random.Generator, n: int, drives: bool = True) -> np.ndarray:
    chi = np.zeros((n, PARAMETERS_PER_JOINT))
    for i in range(n):
        link = random_link(rng)
        eig = np.linalg.eigvalsh(link.inertia)
        assert eig[0] > 0 and eig[0] + eig[1] > eig[2]
        chi[i, :10] = inertial_to_standard(link)
        if drives:
            chi[i, 10:] = [rng.uniform(0.01, 0.5), rng.uniform(0.01, 1.0), rng.uniform(0.01, 1.0),
                           rng.uniform(-0.5, 0.5)]
    return chi.ravel()


def random_states(rng: np.random.Generator, count: int, n: int):
    q = rng.uniform(-np.pi, np.pi, (count, n))
    dq = rng.uniform(-2.0, 2.0, (count, n))
    ddq = rng.uniform(-5.0, 5.0, (count, n))
    return q, dq, ddq


def assert_rel(actual, expected, tol, what=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(expected))))
    err = float(np.max(np.abs(actual - expected)))
    assert err <= tol * scale, f"{what}: max error {err:.3e} (scale {scale:.3e})"


# ---------------------------------------------------------------------------------------------
# Kinematics: the PoE displacements reproduce the DH frames


def test_home_twists_are_unit_zero_pitch(chain):
    s0 = screw.home_twists(chain)
    assert np.allclose(np.linalg.norm(s0[:, :3], axis=1), 1.0)
    assert np.allclose(np.einsum("ij,ij->i", s0[:, :3], s0[:, 3:]), 0.0, atol=1e-15)  # pitch 0


def test_poe_frames_equal_dh_frames():
    arm = default_arm()
    chain = DHChain.from_arm(arm)
    q = np.random.default_rng(1).uniform(-np.pi, np.pi, (N_STATES, arm.n_joints))
    assert np.max(np.abs(screw.link_poses(chain, q) - link_frames(arm, q, include_tool=False))) < 1e-13


def test_spatial_inertia_home_is_consistent(chain):
    """K_i(0) is symmetric PSD with mass block m E and the first moment m c of the CoM in the base."""
    rng = np.random.default_rng(2)
    chi = random_chi(rng, chain.n_joints)
    k0 = screw.home_spatial_inertias(chain, chi)
    frames = screw.home_frames(chain)
    for i, k in enumerate(k0):
        blk = chi.reshape(chain.n_joints, -1)[i]
        assert np.allclose(k, k.T, atol=1e-15)
        assert np.linalg.eigvalsh(k)[0] > 0
        assert np.allclose(k[3:, 3:], blk[0] * np.eye(3))
        mc = frames[i + 1][:3, :3] @ blk[1:4] + blk[0] * frames[i + 1][:3, 3]
        assert np.allclose(k[:3, 3:], np.array([[0, -mc[2], mc[1]], [mc[2], 0, -mc[0]], [-mc[1], mc[0], 0]]))


# ---------------------------------------------------------------------------------------------
# Cross-check against the RNEA regressor


@pytest.fixture(scope="module")
def comparison(chain):
    rng = np.random.default_rng(3)
    n = chain.n_joints
    chi = random_chi(rng, n)
    q, dq, ddq = random_states(rng, N_STATES, n)
    zero = np.zeros_like(q)
    g_rnea = regressor(chain, q, zero, zero) @ chi  # includes f0 (column "1")
    eye_rows = np.repeat(np.eye(n)[None], N_STATES, axis=0).reshape(-1, n)  # state s, column j
    y_m = regressor(chain, np.repeat(q, n, axis=0), np.zeros_like(eye_rows), eye_rows) @ chi
    m_rnea = (y_m.reshape(N_STATES, n, n) - g_rnea[:, None, :]).transpose(0, 2, 1)  # [:, :, j] = column j
    friction = screw.friction_vector(chain, chi, dq)
    c_rnea = regressor(chain, q, dq, zero) @ chi - g_rnea - (friction - chi.reshape(n, -1)[:, 13])
    tau_rnea = regressor(chain, q, dq, ddq) @ chi
    return dict(chi=chi, q=q, dq=dq, ddq=ddq, g=g_rnea, m=m_rnea, c=c_rnea, tau=tau_rnea)


def test_mass_matrix_matches_rnea(chain, comparison):
    m = screw.mass_matrix(chain, comparison["chi"], comparison["q"])
    assert m.shape == (N_STATES, chain.n_joints, chain.n_joints)
    for a, b in zip(m, comparison["m"]):
        assert_rel(a, b, 1e-10, "M")


def test_coriolis_matches_rnea(chain, comparison):
    c = screw.coriolis_vector(chain, comparison["chi"], comparison["q"], comparison["dq"])
    for a, b in zip(c, comparison["c"]):
        assert_rel(a, b, 1e-10, "C q'")


def test_gravity_matches_rnea(chain, comparison):
    chi = comparison["chi"]
    f0 = chi.reshape(chain.n_joints, -1)[:, 13]
    g = screw.gravity_vector(chain, chi, comparison["q"])
    for a, b in zip(g, comparison["g"]):
        assert_rel(a + f0, b, 1e-10, "G")
    # and without drive terms, Y(q, 0, 0) chi is G alone
    chi_links = chi.reshape(chain.n_joints, -1).copy()
    chi_links[:, 10:] = 0.0
    zero = np.zeros_like(comparison["q"])
    g_links = regressor(chain, comparison["q"], zero, zero) @ chi_links.ravel()
    assert np.allclose(screw.gravity_vector(chain, chi_links.ravel(), comparison["q"]), g_links, rtol=0, atol=1e-10)


def test_inverse_dynamics_matches_rnea(chain, comparison):
    tau = screw.inverse_dynamics(chain, comparison["chi"], comparison["q"], comparison["dq"], comparison["ddq"])
    for a, b in zip(tau, comparison["tau"]):
        assert_rel(a, b, 1e-10, "tau")


def test_single_state_equals_batch_row(chain, comparison):
    chi, q, dq, ddq = (comparison[k] for k in ("chi", "q", "dq", "ddq"))
    assert np.array_equal(screw.inverse_dynamics(chain, chi, q[7], dq[7], ddq[7]),
                          screw.inverse_dynamics(chain, chi, q[7:8], dq[7:8], ddq[7:8])[0])


# ---------------------------------------------------------------------------------------------
# Physics on the screw model alone


def mass_matrix_gradient(chain, chi, q, h=1e-5):
    """dM/dq_i by central differences, shape (n, n, n) with index [i] = dM/dq_i."""
    n = chain.n_joints
    return np.array([(screw.mass_matrix(chain, chi, q + h * e) - screw.mass_matrix(chain, chi, q - h * e)) / (2 * h)
                     for e in np.eye(n)])


def christoffel_c(dm, dq):
    """C_kj = sum_i 1/2 (dM_kj/dq_i + dM_ki/dq_j - dM_ij/dq_k) q'_i (seed 002, (2.72)-(2.73))."""
    # dm[i, k, j] = dM_kj / dq_i
    c = 0.5 * (np.einsum("ikj,i->kj", dm, dq) + np.einsum("jki,i->kj", dm, dq) - np.einsum("kij,i->kj", dm, dq))
    return c


@pytest.fixture(scope="module")
def physics_cases(chain):
    rng = np.random.default_rng(4)
    cases = []
    for _ in range(20):
        chi = random_chi(rng, chain.n_joints)
        q, dq, _ = random_states(rng, 1, chain.n_joints)
        cases.append((chi, q[0], dq[0], rng.normal(size=chain.n_joints)))
    return cases


def test_mass_matrix_symmetric_positive_definite(chain, comparison):
    m = screw.mass_matrix(chain, comparison["chi"], comparison["q"])
    assert np.max(np.abs(m - m.transpose(0, 2, 1))) < 1e-14
    assert np.min(np.linalg.eigvalsh(m)) > 0


def test_christoffel_skew_symmetry_and_coriolis(chain, physics_cases):
    for chi, q, dq, x in physics_cases:
        dm = mass_matrix_gradient(chain, chi, q)
        m_dot = np.einsum("ikj,i->kj", dm, dq)
        c = christoffel_c(dm, dq)
        assert abs(x @ (m_dot - 2 * c) @ x) < 1e-6
        assert np.max(np.abs((m_dot - 2 * c) + (m_dot - 2 * c).T)) < 1e-6
        assert np.max(np.abs(c @ dq - screw.coriolis_vector(chain, chi, q, dq))) < 1e-6


def test_gravity_is_potential_gradient(chain, physics_cases):
    h = 1e-5
    for chi, q, _, _ in physics_cases:
        grad = np.array([(screw.potential_energy(chain, chi, q + h * e) - screw.potential_energy(chain, chi, q - h * e))
                         / (2 * h) for e in np.eye(chain.n_joints)])
        assert np.max(np.abs(grad - screw.gravity_vector(chain, chi, q))) < 1e-6


def test_kinetic_energy_includes_rotor_inertia(chain, physics_cases):
    chi, q, dq, _ = physics_cases[0]
    ia = chi.reshape(chain.n_joints, -1)[:, 10]
    no_rotor = chi.reshape(chain.n_joints, -1).copy()
    no_rotor[:, 10] = 0.0
    diff = screw.kinetic_energy(chain, chi, q, dq) - screw.kinetic_energy(chain, no_rotor.ravel(), q, dq)
    assert np.isclose(diff, 0.5 * ia @ dq**2, rtol=1e-12)


def test_energy_conserved_without_friction(chain):
    rng = np.random.default_rng(5)
    n = chain.n_joints
    chi = random_chi(rng, n, drives=False)
    blocks = chi.reshape(n, -1)
    blocks[:, 10] = rng.uniform(0.01, 0.5, n)  # rotor inertia: conservative; no friction
    q0, dq0, _ = random_states(rng, 1, n)

    def rhs(_t, y):
        q, dq = y[:n], y[n:]
        m = screw.mass_matrix(chain, chi, q)
        f = -screw.coriolis_vector(chain, chi, q, dq) - screw.gravity_vector(chain, chi, q)
        return np.concatenate([dq, np.linalg.solve(m, f)])

    def energy(y):
        return float(screw.kinetic_energy(chain, chi, y[:n], y[n:]) + screw.potential_energy(chain, chi, y[:n]))

    sol = solve_ivp(rhs, (0.0, 1.0), np.concatenate([q0[0], dq0[0]]), method="DOP853", rtol=1e-10, atol=1e-12)
    assert sol.success
    e = np.array([energy(y) for y in sol.y.T])
    scale = max(abs(e[0]), float(screw.kinetic_energy(chain, chi, q0[0], dq0[0])))
    assert np.max(np.abs(e - e[0])) / scale < 1e-7
    assert np.ptp(sol.y[:n, -1] - q0[0]) > 0  # it actually moved
