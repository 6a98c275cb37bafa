"""Base parameters: counts against an independent rank (Pinocchio), the regrouping identity, and the
seeds' hand-written base parameter sets (002 Appendix Г/Д, 000 one link and planar 2R)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.dynamics.base_parameters import compute_base_parameters
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.parameters import parameter_names
from youbot_dynamics.dynamics.rnea import regressor
from youbot_dynamics.arm.urdf import generate_urdf

P = 14  # standard parameters per joint: [m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz, Ia, fv, fc, f0]
IDX = {name: k for k, name in enumerate(("m", "mx", "my", "mz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz",
                                         "Ia", "fv", "fc", "f0"))}
A1, A2 = 0.3, 0.2


def col(joint: int, name: str) -> int:
    """Column of parameter ``name`` of joint ``joint`` (1-based) in the 14 n vector."""
    return (joint - 1) * P + IDX[name]


def rank(w: np.ndarray, rtol: float = 1e-9) -> int:
    """SVD rank after dropping zero columns and scaling the others to unit norm."""
    norms = np.linalg.norm(w, axis=0)
    w = w[:, norms > 1e-10 * norms.max()]
    w = w / np.linalg.norm(w, axis=0)
    s = np.linalg.svd(w, compute_uv=False)
    return int(np.sum(s > rtol * s[0]))


def random_states(n: int, count: int, seed: int):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-np.pi, np.pi, (count, n)), rng.normal(0, 2, (count, n)), rng.normal(0, 5, (count, n)))


@pytest.fixture(scope="module")
def youbot_chain():
    return DHChain.from_arm(default_arm())


@pytest.fixture(scope="module")
def youbot_bases(youbot_chain):
    return {s: compute_base_parameters(youbot_chain, s) for s in ("inertial", "rotor", "full")}


def two_link_chain() -> DHChain:
    """Seed 002 Appendix Г/Д: theta_i = delta_i - q_i, alpha = (0, pi/2), g0 = [0, -g, 0]."""
    return DHChain.create([A1, A2], [0.0, np.pi / 2], [0.0, 0.0], [0.37, -1.21], [-1, -1], (0.0, -9.81, 0.0))


def seed_two_link_k() -> np.ndarray:
    """The seed's 13 base parameters of the two-link arm, written by hand as rows over the 28 columns."""
    rows = []

    def row(**coefs):
        r = np.zeros(2 * P)
        for key, value in coefs.items():
            name, joint = key[:-1], int(key[-1])
            r[col(joint, name)] += value
        rows.append(r)

    row(mx1=1, m1=A1, m2=A1)                        # m1xc1 + a1 m1 + a1 m2
    row(my1=1)                                      # m1yc1
    row(Ia1=1, Izz1=1, m1=-A1**2, m2=-A1**2)        # Ia1 + I1zz - a1^2 m1 - a1^2 m2
    row(fv1=1)
    row(fc1=1)
    row(f01=1)
    row(mx2=1, m2=A2)                               # m2xc2 + a2 m2
    row(mz2=1)                                      # m2zc2
    row(Iyy2=1, m2=-A2**2)                          # I2yy - a2^2 m2
    row(Ia2=1)
    row(fv2=1)
    row(fc2=1)
    row(f02=1)
    return np.array(rows)


# -- counts -----------------------------------------------------------------------------------


def test_youbot_counts(youbot_bases):
    assert {s: b.count for s, b in youbot_bases.items()} == {"inertial": 29, "rotor": 32, "full": 47}


def test_youbot_counts_match_pinocchio_rank(youbot_chain):
    pin = pytest.importorskip("pinocchio")
    arm = default_arm()
    model = pin.buildModelFromXML(generate_urdf(arm))
    model.gravity.linear = youbot_chain.gravity
    data = model.createData()
    n = arm.n_joints
    q, dq, ddq = random_states(n, 120, seed=123)
    w = np.vstack([pin.computeJointTorqueRegressor(model, data, a, b, c).copy() for a, b, c in zip(q, dq, ddq)])
    eye = np.eye(n)
    # drive columns of joint j act on row j only: ddq_j | dq_j, sign(dq_j), 1
    rot = np.vstack([eye * c for c in ddq])
    fric = np.hstack([np.vstack([eye * b for b in dq]), np.vstack([eye * np.sign(b) for b in dq]),
                      np.vstack([eye for _ in dq])])
    assert rank(w) == 29
    assert rank(np.hstack([w, rot])) == 32
    assert rank(np.hstack([w, rot, fric])) == 47


# -- the regrouping identity ------------------------------------------------------------------


@pytest.mark.parametrize("structure", ["inertial", "rotor", "full"])
def test_regrouping_identity_on_fresh_states(youbot_chain, youbot_bases, structure):
    base = youbot_bases[structure]
    n = youbot_chain.n_joints
    q, dq, ddq = random_states(n, 60, seed=98765)  # not the seed used to compute the base parameters
    y = regressor(youbot_chain, q, dq, ddq)
    rng = np.random.default_rng(5)
    from youbot_dynamics.dynamics.parameters import structure_mask

    mask = structure_mask(n, structure)
    for _ in range(5):
        chi = rng.normal(size=n * P) * mask
        tau = y @ chi
        beta = base.K @ chi
        tau_b = base.base_regressor(y) @ beta
        scale = np.abs(tau).max()
        np.testing.assert_allclose(tau_b, tau, rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(y @ base.equivalent_standard(beta), tau, rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(base.from_standard(chi), beta, rtol=0, atol=1e-14)


def test_k_has_identity_on_kept_columns(youbot_bases):
    base = youbot_bases["full"]
    np.testing.assert_array_equal(base.K[:, base.independent], np.eye(base.count))
    assert list(base.names) == [parameter_names(5)[i] for i in base.independent]


# -- seed 002 Appendix Г/Д: the two-link arm -----------------------------------------------------


def test_seed_two_link_base_parameters():
    base = compute_base_parameters(two_link_chain(), "full")
    assert base.count == 13
    k_seed = seed_two_link_k()
    assert rank(k_seed) == 13
    assert np.linalg.matrix_rank(np.vstack([base.K, k_seed]), tol=1e-9) == 13
    # the seed's rows are in the row space of the stacked regressor: equal torques for any chi whose
    # seed base parameters agree, i.e. Y maps the null space of K_seed to zero
    q, dq, ddq = random_states(2, 40, seed=11)
    y = regressor(two_link_chain(), q, dq, ddq).reshape(-1, 2 * P)
    _, s, vt = np.linalg.svd(k_seed)
    null = vt[13:].T
    assert np.abs(y @ null).max() < 1e-10 * np.abs(y).max()


def test_seed_two_link_expressions():
    base = compute_base_parameters(two_link_chain(), "full")
    expr = dict(zip(base.names, base.expressions))
    ia1 = [e for n, e in expr.items() if "Ia1" in e]
    assert len(ia1) == 1
    for token in ("Ia1", "Izz1", "a1^2*m1", "a1^2*m2"):
        assert token in ia1[0], (token, ia1[0])


# -- seed 000: one link and planar 2R (inertial parameters, gravity in the plane of motion) -------------


def _inertial_k(chain: DHChain) -> np.ndarray:
    n = chain.n_joints
    base = compute_base_parameters(chain, "inertial")
    keep = np.concatenate([np.arange(j * P, j * P + 10) for j in range(n)])
    return base.K[:, keep]


def _row10(n: int, **coefs) -> np.ndarray:
    r = np.zeros(10 * n)
    for key, value in coefs.items():
        name, joint = key[:-1], int(key[-1])
        r[(joint - 1) * 10 + IDX[name]] += value
    return r


@pytest.mark.parametrize("gravity", [(0.0, -9.81, 0.0), (-9.81, 0.0, 0.0)])
def test_seed000_one_link(gravity):
    a1 = 0.42
    chain = DHChain.create([a1], [0.0], [0.0], gravity=gravity)
    k = _inertial_k(chain)
    # [I1xx + I1yy - a1^2 m1 (second moments = our Izz1), S1x + a1 m1, S1y]
    seed = np.array([_row10(1, Izz1=1, m1=-a1**2), _row10(1, mx1=1, m1=a1), _row10(1, my1=1)])
    assert k.shape[0] == 3
    assert np.linalg.matrix_rank(np.vstack([k, seed]), tol=1e-9) == 3


def test_seed000_planar_2r():
    a1, a2 = 0.42, 0.31
    chain = DHChain.create([a1, a2], [0.0, 0.0], [0.0, 0.0], [0.2, -0.5], gravity=(-9.81, 0.0, 0.0))
    k = _inertial_k(chain)
    seed = np.array([
        _row10(2, Izz1=1, m1=-a1**2, m2=-a1**2),
        _row10(2, mx1=1, m1=a1, m2=a1),
        _row10(2, my1=1),
        _row10(2, Izz2=1, m2=-a2**2),
        _row10(2, mx2=1, m2=a2),
        _row10(2, my2=1),
    ])
    assert k.shape[0] == 6
    assert np.linalg.matrix_rank(seed) == 6
    assert np.linalg.matrix_rank(np.vstack([k, seed]), tol=1e-9) == 6


def test_one_link_inertia_about_joint_axis_is_in_the_span():
    """Frame 1 sits at the far end of the link: inertia about the joint axis is
    Izz1 + 2 a1 mx1 + a1^2 m1 = (Izz1 - a1^2 m1) + 2 a1 (mx1 + a1 m1)."""
    a1 = 0.42
    k = _inertial_k(DHChain.create([a1], [0.0], [0.0], gravity=(0.0, -9.81, 0.0)))
    about_axis = _row10(1, Izz1=1, mx1=2 * a1, m1=a1**2)
    assert np.linalg.matrix_rank(np.vstack([k, about_axis]), tol=1e-9) == 3


# -- expressions ----------------------------------------------------------------------------------------


def test_youbot_expressions_name_only_parameters_and_lengths(youbot_chain, youbot_bases):
    allowed = set(parameter_names(5)) | {f"{s}{i}" for s in "ad" for i in range(1, 6)}
    for structure, base in youbot_bases.items():
        assert len(base.expressions) == base.count
        for name, expr in zip(base.names, base.expressions):
            assert expr.strip(), (structure, name)
            identifiers = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr))
            assert identifiers <= allowed, (structure, name, expr, identifiers - allowed)
            assert name in identifiers, (name, expr)
