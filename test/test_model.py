"""DynamicModel: against Pinocchio, physical identities, an independent symbolic Lagrangian of the seed's
two-link arm (002 Appendix Г), the structure of the seed 003 Example 1 mass matrix, and input checks."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel, PhysicalConsistencyError
from youbot_dynamics.dynamics.nominal import nominal_model
from youbot_dynamics.dynamics.parameters import standard_parameters
from youbot_dynamics.arm.kinematics import link_frames
from youbot_dynamics.arm.urdf import generate_urdf

ROTOR = np.array([0.13, 0.11, 0.045, 0.021, 0.012])
N_STATES = 60


def states(n: int, count: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (count, n)), rng.uniform(-2, 2, (count, n)), rng.uniform(-5, 5, (count, n))


def skew3(c):
    return np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])


def standard_from(masses, coms, inertias_c, drives=None) -> np.ndarray:
    """14 n vector by hand: first moments m c, inertia about the frame origin I_C + m(|c|^2 E - c c^T)."""
    out = []
    n = len(masses)
    drives = np.zeros((n, 4)) if drives is None else np.asarray(drives, dtype=float)
    for m, c, ic, dr in zip(masses, coms, inertias_c, drives):
        c = np.asarray(c, dtype=float)
        io = np.asarray(ic) + m * (c @ c * np.eye(3) - np.outer(c, c))
        out += [m, *(m * c), io[0, 0], io[1, 1], io[2, 2], io[0, 1], io[0, 2], io[1, 2], *dr]
    return np.array(out)


def random_inertials(n: int, seed: int):
    rng = np.random.default_rng(seed)
    masses = rng.uniform(0.5, 3.0, n)
    coms = rng.uniform(-0.15, 0.15, (n, 3))
    inertias = []
    for _ in range(n):
        a = rng.normal(size=(3, 3)) * 0.05
        inertias.append(a @ a.T + 0.01 * np.eye(3))  # PD, triangle inequality not needed for M PD
    return masses, coms, inertias


# -- Pinocchio --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nominal(arm):
    return nominal_model(arm)[0]


@pytest.fixture(scope="module")
def rotor_model(arm):
    chain = DHChain.from_arm(arm)
    return DynamicModel.from_standard(chain, standard_parameters(arm, rotor_inertia=ROTOR), "rotor")


def pin_model(arm, armature):
    pin = pytest.importorskip("pinocchio")
    m = pin.buildModelFromXML(generate_urdf(arm))
    m.gravity.linear = DHChain.from_arm(arm).gravity
    m.armature = np.asarray(armature, dtype=float).copy()
    return pin, m


@pytest.mark.parametrize("which", ["nominal", "rotor"])
def test_against_pinocchio(arm, nominal, rotor_model, which):
    model, armature = (nominal, arm.armature) if which == "nominal" else (rotor_model, ROTOR)
    pin, pm = pin_model(arm, armature)
    data = pm.createData()
    q, dq, ddq = states(5, N_STATES, seed=21)
    tau = model.inverse_dynamics(q, dq, ddq)
    mm = model.mass_matrix(q)
    g = model.gravity(q)
    cm = model.coriolis_matrix(q, dq)
    cv = model.coriolis_vector(q, dq)
    for k in range(N_STATES):
        np.testing.assert_allclose(tau[k], pin.rnea(pm, data, q[k], dq[k], ddq[k]), rtol=0, atol=1e-9)
        m_pin = pin.crba(pm, data, q[k])
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        np.testing.assert_allclose(mm[k], m_pin, rtol=0, atol=1e-9)
        np.testing.assert_allclose(g[k], pin.computeGeneralizedGravity(pm, data, q[k]), rtol=0, atol=1e-9)
        c_pin = pin.computeCoriolisMatrix(pm, data, q[k], dq[k])
        np.testing.assert_allclose(cm[k], c_pin, rtol=0, atol=1e-9)
        np.testing.assert_allclose(cv[k], c_pin @ dq[k], rtol=0, atol=1e-9)
        # the control cycle's compiled Newton-Euler terms (joint_space_terms)
        m_single, c_single, g_single = model.dynamics_terms(q[k], dq[k])
        np.testing.assert_allclose(m_single, m_pin, rtol=0, atol=1e-9)
        np.testing.assert_allclose(c_single, c_pin @ dq[k], rtol=0, atol=1e-9)
        np.testing.assert_allclose(g_single, pin.computeGeneralizedGravity(pm, data, q[k]), rtol=0, atol=1e-9)


# -- physical identities on the model from base parameters -------------------------------------


@pytest.fixture(scope="module")
def friction_model(arm):
    chain = DHChain.from_arm(arm)
    chi = standard_parameters(arm, rotor_inertia=ROTOR, viscous=[0.5, 0.4, 0.3, 0.2, 0.1],
                              coulomb=[0.8, 0.7, 0.6, 0.5, 0.4], offset=[0.05, -0.04, 0.03, -0.02, 0.01])
    return DynamicModel.from_standard(chain, chi, "full")


def test_single_state_terms_of_regrouped_base_parameters_match_the_regressor(friction_model):
    """``dynamics_terms`` runs Newton-Euler on the equivalent standard parameters (regrouped columns
    zero, link masses without their moments): the same ``M``, ``C q'``, ``G`` as the base regressor's
    stacked states, friction excluded."""
    q, dq, _ = states(5, 20, seed=4)
    for k in range(len(q)):
        m, c, g = friction_model.dynamics_terms(q[k], dq[k])
        np.testing.assert_allclose(m, friction_model.mass_matrix(q[k]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(c, friction_model.coriolis_vector(q[k], dq[k]), rtol=0, atol=1e-12)
        np.testing.assert_allclose(g, friction_model.gravity(q[k]), rtol=0, atol=1e-12)


def test_mass_matrix_symmetric_positive_definite(friction_model):
    q, _, _ = states(5, N_STATES, seed=3)
    m = friction_model.mass_matrix(q)
    np.testing.assert_allclose(m, np.swapaxes(m, -1, -2), rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(m)[:, 0].min() > 0
    friction_model.check_consistency(q)  # does not raise


def test_mdot_minus_2c_is_skew(friction_model):
    q, dq, _ = states(5, 20, seed=4)
    h = 1e-6
    mdot = (friction_model.mass_matrix(q + h * dq) - friction_model.mass_matrix(q - h * dq)) / (2 * h)
    c = friction_model.coriolis_matrix(q, dq)
    s = mdot - 2 * c
    scale = np.abs(mdot).max() + np.abs(c).max()
    np.testing.assert_allclose(s + np.swapaxes(s, -1, -2), 0.0, atol=1e-6 * scale)


def test_coriolis_matrix_times_dq_is_coriolis_vector(friction_model):
    q, dq, _ = states(5, N_STATES, seed=5)
    c = friction_model.coriolis_matrix(q, dq)
    np.testing.assert_allclose(np.einsum("kij,kj->ki", c, dq), friction_model.coriolis_vector(q, dq),
                               rtol=0, atol=1e-10)


def test_gravity_is_gradient_of_potential_energy(arm, friction_model):
    g0 = np.array([0.0, 0.0, -arm.gravity])

    def potential(q):
        frames = link_frames(arm, q, include_tool=False)
        u = 0.0
        for i, link in enumerate(arm.links, start=1):
            p = frames[i, :3, :3] @ link.com + frames[i, :3, 3]
            u -= link.mass * g0 @ p
        return u

    q, _, _ = states(5, 10, seed=6)
    h = 1e-6
    g = friction_model.gravity(q)
    for k in range(len(q)):
        grad = [(potential(q[k] + h * e) - potential(q[k] - h * e)) / (2 * h) for e in np.eye(5)]
        # G(q) is the gravity torque alone: the f0 offsets are not part of it
        np.testing.assert_allclose(g[k], grad, rtol=0, atol=1e-6)


def test_forward_dynamics_inverts_inverse_dynamics(friction_model, nominal):
    q, dq, ddq = states(5, N_STATES, seed=8)
    for model in (friction_model, nominal):
        tau = model.inverse_dynamics(q, dq, ddq)
        np.testing.assert_allclose(model.forward_dynamics(q, dq, tau), ddq, rtol=0, atol=1e-8)
        # single sample too
        np.testing.assert_allclose(model.forward_dynamics(q[0], dq[0], tau[0]), ddq[0], rtol=0, atol=1e-8)


def test_equations_of_motion_decompose(friction_model):
    q, dq, ddq = states(5, N_STATES, seed=9)
    m = friction_model
    rebuilt = (np.einsum("kij,kj->ki", m.mass_matrix(q), ddq) + m.coriolis_vector(q, dq) + m.gravity(q)
               + m.friction(dq))
    np.testing.assert_allclose(m.inverse_dynamics(q, dq, ddq), rebuilt, rtol=0, atol=1e-9)


# -- seed 002 Appendix Г: independent symbolic Lagrangian of the two-link arm -------------------------


def _dh(theta, d, a, alpha):
    ct, st, ca, sa = sp.cos(theta), sp.sin(theta), sp.cos(alpha), sp.sin(alpha)
    return sp.Matrix([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st], [0, sa, ca, d], [0, 0, 0, 1]])


def test_two_link_closed_forms():
    a, alpha, delta = [0.3, 0.2], [0.0, np.pi / 2], [0.37, -1.21]
    gvec = sp.Matrix([0, -9.81, 0])
    masses, coms, inertias = random_inertials(2, seed=31)
    ia = [0.07, 0.03]
    q = sp.symbols("q1:3")
    dq = sp.symbols("dq1:3")
    t = sp.eye(4)
    kinetic, potential = 0, 0
    for i in range(2):
        t = t * _dh(delta[i] - q[i], 0, a[i], sp.Float(alpha[i]))
        r, p = t[:3, :3], t[:3, 3]
        pc = p + r * sp.Matrix(coms[i])
        vc = sum((pc.diff(q[j]) * dq[j] for j in range(2)), sp.zeros(3, 1))
        rdot = sum((r.diff(q[j]) * dq[j] for j in range(2)), sp.zeros(3, 3))
        wsk = r.T * rdot  # [w]x in frame i
        w = sp.Matrix([wsk[2, 1], wsk[0, 2], wsk[1, 0]])
        kinetic += (sp.Rational(1, 2) * masses[i] * (vc.T * vc)[0]
                    + sp.Rational(1, 2) * (w.T * sp.Matrix(inertias[i]) * w)[0])
        potential += -masses[i] * (gvec.T * pc)[0]
    d_mat = sp.Matrix(2, 2, lambda i, j: sp.diff(kinetic, dq[i], dq[j]))
    g_vec = sp.Matrix([sp.diff(potential, qi) for qi in q])
    lag_v = [sp.diff(kinetic, v) for v in dq]
    cq = sp.Matrix([sum(sp.diff(lag_v[k], q[j]) * dq[j] for j in range(2)) - sp.diff(kinetic, q[k]) for k in range(2)])
    f_d = sp.lambdify([q], d_mat, "numpy")
    f_g = sp.lambdify([q], g_vec, "numpy")
    f_c = sp.lambdify([q, dq], cq, "numpy")

    chain = DHChain.create(a, alpha, [0.0, 0.0], delta, [-1, -1], (0.0, -9.81, 0.0))
    chi = standard_from(masses, coms, inertias, drives=[[ia[0], 0, 0, 0], [ia[1], 0, 0, 0]])
    model = DynamicModel.from_standard(chain, chi, "rotor")
    qs, dqs, ddqs = states(2, 40, seed=32)
    mm, gg, cc = model.mass_matrix(qs), model.gravity(qs), model.coriolis_vector(qs, dqs)
    tau = model.inverse_dynamics(qs, dqs, ddqs)
    for k in range(len(qs)):
        d_ref = np.array(f_d(qs[k]), dtype=float) + np.diag(ia)
        g_ref = np.array(f_g(qs[k]), dtype=float).ravel()
        c_ref = np.array(f_c(qs[k], dqs[k]), dtype=float).ravel()
        np.testing.assert_allclose(mm[k], d_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(gg[k], g_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(cc[k], c_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(tau[k], d_ref @ ddqs[k] + c_ref + g_ref, rtol=0, atol=1e-10)


# -- seed 003 Example 1: planar 3R in a vertical plane -----------------------------------------------


@pytest.fixture(scope="module")
def planar3():
    chain = DHChain.create([0.4, 0.3, 0.25], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], gravity=(0.0, -9.81, 0.0))
    masses, coms, inertias = random_inertials(3, seed=41)
    return DynamicModel.from_standard(chain, standard_from(masses, coms, inertias), "inertial")


def test_seed003_example1_structure(planar3):
    rng = np.random.default_rng(42)
    q = rng.uniform(-np.pi, np.pi, (30, 3))
    h = planar3.mass_matrix(q)
    H = lambda qq: planar3.mass_matrix(np.asarray(qq, dtype=float))  # noqa: E731
    atol = 1e-12
    # M does not depend on q1; M_ji (j >= i) does not depend on q1..qi
    shifted = q.copy()
    shifted[:, 0] = rng.uniform(-np.pi, np.pi, 30)
    np.testing.assert_allclose(H(shifted), h, rtol=0, atol=atol)
    shifted[:, 1] = rng.uniform(-np.pi, np.pi, 30)
    h2 = H(shifted)
    for j, i in ((2, 2), (3, 2), (3, 3)):
        np.testing.assert_allclose(h2[:, j - 1, i - 1], h[:, j - 1, i - 1], rtol=0, atol=atol)
    # H33 = Iq3 constant
    np.testing.assert_allclose(h[:, 2, 2], h[0, 2, 2], rtol=0, atol=atol)
    # H22 = I + 2 Ic3, H32 = H33 + Ic3  =>  H22 - 2 H32 + H33 = I - Iq3 = Id2, constant
    rel = h[:, 1, 1] - 2 * h[:, 2, 1] + h[:, 2, 2]
    np.testing.assert_allclose(rel, rel[0], rtol=0, atol=atol)
    # H11 = Id1 + H22 + 2 Ic2, H21 = H22 + Ic2  =>  H11 - H22 - 2 (H21 - H22) = Id1, constant
    rel = h[:, 0, 0] - h[:, 1, 1] - 2 * (h[:, 1, 0] - h[:, 1, 1])
    np.testing.assert_allclose(rel, rel[0], rtol=0, atol=atol)
    # Ic3 = H32 - H33 = La c3 + Lb s3: a pure sinusoid of q3 (no constant term)
    ic3 = lambda q3: (H([0, 0, q3])[2, 1] - H([0, 0, q3])[2, 2])  # noqa: E731
    la, lb = ic3(0.0), ic3(np.pi / 2)
    np.testing.assert_allclose(h[:, 2, 1] - h[:, 2, 2], la * np.cos(q[:, 2]) + lb * np.sin(q[:, 2]), rtol=0, atol=atol)
    # Is = H31 - H32 = Ls s23 depends on q2 + q3 only
    is_ = h[:, 2, 0] - h[:, 2, 1]
    d = rng.uniform(-1, 1, 30)
    moved = q.copy()
    moved[:, 1] += d
    moved[:, 2] -= d
    hm = H(moved)
    np.testing.assert_allclose(hm[:, 2, 0] - hm[:, 2, 1], is_, rtol=0, atol=atol)
    # Ic2 - Is = (H21 - H22) - (H31 - H32) = Ld s2 + Lc c2 does not depend on q3
    rel = h[:, 1, 0] - h[:, 1, 1] - is_
    moved = q.copy()
    moved[:, 2] = rng.uniform(-np.pi, np.pi, 30)
    hm = H(moved)
    np.testing.assert_allclose(hm[:, 1, 0] - hm[:, 1, 1] - (hm[:, 2, 0] - hm[:, 2, 1]), rel, rtol=0, atol=atol)


# -- errors ----------------------------------------------------------------------------------------


def test_inconsistent_parameters_raise(nominal):
    beta = nominal.beta.copy()
    beta[list(nominal.base.names).index("Ia1")] = -10.0  # the Ia1 + Izz1/Iyy1 ... group of joint 1
    bad = DynamicModel(nominal.chain, nominal.base, beta)
    q, dq, ddq = states(5, 4, seed=50)
    with pytest.raises(PhysicalConsistencyError, match="positive definite"):
        bad.forward_dynamics(q, dq, np.zeros_like(q))
    with pytest.raises(PhysicalConsistencyError, match=r"positive definite at q = \["):
        bad.check_consistency(q)
    assert issubclass(PhysicalConsistencyError, ValueError)


def test_bad_inputs_raise_value_error(nominal):
    q = np.zeros(5)
    with pytest.raises(ValueError, match="q must have 5"):
        nominal.inverse_dynamics(np.zeros(4), q, q)
    with pytest.raises(ValueError, match="dq contains NaN"):
        nominal.inverse_dynamics(q, [0, np.nan, 0, 0, 0], q)
    with pytest.raises(ValueError, match="q"):
        nominal.mass_matrix(np.zeros((3, 6)))
    with pytest.raises(ValueError, match="tau"):
        nominal.forward_dynamics(q, q, [np.inf, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="base parameters"):
        DynamicModel(nominal.chain, nominal.base, nominal.beta[:-1])
    with pytest.raises(ValueError, match="NaN"):
        DynamicModel(nominal.chain, nominal.base, np.full(nominal.base.count, np.nan))


def test_loading_a_model_file_does_not_import_sympy():
    """sympy (about 0.3 s to import) is only for regenerating code: controllers load models without it."""
    code = ("import sys; from youbot_dynamics.dynamics.paramfile import load_model; "
            "from youbot_dynamics.files.paths import config_path; import numpy as np; "
            "m = load_model(config_path('youbot_nominal_model.yaml')); m.dynamics_terms(np.ones(5), np.ones(5)); "
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


def test_large_batches_use_the_parallel_loop_with_the_same_result(nominal):
    """Above PARALLEL_SAMPLES the base regressor comes from the multi-core loop; it equals the serial one."""
    from youbot_dynamics.dynamics.model import PARALLEL_SAMPLES

    rng = np.random.default_rng(21)
    q, dq, ddq = rng.normal(0, 1, (3, PARALLEL_SAMPLES + 7, 5))
    big = nominal.regressor(q, dq, ddq)
    small = np.concatenate([nominal.regressor(q[k:k + 100], dq[k:k + 100], ddq[k:k + 100])
                            for k in range(0, len(q), 100)])
    np.testing.assert_array_equal(big, small)


def test_threads_share_a_model_each_with_its_own_workspace(nominal):
    """Issue 32: the model holds no mutable buffer (each thread gets a ModelWorkspace), so two control
    threads on one model get their own answers; the interpreter is made to switch threads every few
    microseconds so that shared buffers would be overwritten between a write and its read."""
    import threading

    model = nominal
    rng = np.random.default_rng(7)
    states = [(rng.uniform(-2, 2, 5), rng.uniform(-1, 1, 5), rng.uniform(-3, 3, 5)) for _ in range(2)]
    expected = [(model.inverse_dynamics_single(*s), model.dynamics_terms(s[0], s[1]), model.momentum_terms(s[0], s[1]))
                for s in states]
    wrong: list[str] = []

    def work(k: int) -> None:
        q, dq, ddq = states[k]
        tau, terms, momentum = expected[k]
        for _ in range(400):
            if not np.allclose(model.inverse_dynamics_single(q, dq, ddq), tau):
                wrong.append(f"thread {k}: inverse dynamics")
            other = states[1 - k]  # alternate states so that the kept terms change under the other thread
            model.dynamics_terms(other[0], other[1])
            if not all(np.allclose(a, b) for a, b in zip(model.dynamics_terms(q, dq), terms)):
                wrong.append(f"thread {k}: dynamics terms")
            if not all(np.allclose(a, b) for a, b in zip(model.momentum_terms(q, dq), momentum)):
                wrong.append(f"thread {k}: momentum terms")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong, wrong[:5]
    assert model.workspace() is model.workspace()  # one per thread, kept
