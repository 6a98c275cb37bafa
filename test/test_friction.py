"""The friction model's one home (issue 13): every consumer gives the same friction torque, computed
here independently from the equation of :mod:`youbot_dynamics.dynamics.friction` and, for the rigid
body, from Pinocchio."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.control.laws import ComputedTorqueController, PDGravityController
from youbot_dynamics.control.terms import ModelTerms
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.consistency import ModelConsistencyError, assess_model, check_model
from youbot_dynamics.control.trajectory import JointTrajectory
from youbot_dynamics.dynamics.friction import FrictionError, FrictionModel, smooth_friction_torque
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.paramfile import ModelFileError, load_model, save_model
from youbot_dynamics.dynamics.parameters import standard_parameters
from youbot_dynamics.arm.urdf import generate_urdf

ARM = default_arm()
FV = np.array([0.5, 0.4, 0.3, 0.2, 0.1])
FC = np.array([0.8, 0.7, 0.6, 0.5, 0.4])
F0 = np.array([0.05, -0.04, 0.03, -0.02, 0.01])
EPS = (0.05, 0.02, 0.1, 0.05, 0.2)
VS = (0.1, 0.2, 0.1, 0.3, 0.1)
ALL = FrictionModel(5, EPS, ("load", "asymmetric", "stribeck"), VS)
# per joint (fa, fs, fl): the order of extra_names
EXTRA = np.array([[0.1, 0.2, 0.0], [-0.1, 0.3, 0.4], [0.05, 0.1, 0.3], [0.0, 0.05, 0.5], [0.02, 0.0, 0.2]])


def states(count: int, seed: int):
    rng = np.random.default_rng(seed)
    q = rng.uniform(ARM.position_min, ARM.position_max, (count, 5))
    return q, rng.uniform(-1.5, 1.5, (count, 5)), rng.uniform(-3, 3, (count, 5))


def model(friction: FrictionModel = ALL, extra=EXTRA) -> DynamicModel:
    chi = standard_parameters(ARM, rotor_inertia=ARM.armature, viscous=FV, coulomb=FC, offset=F0)
    return DynamicModel.from_standard(DHChain.from_arm(ARM), chi, "full", friction_model=friction,
                                      friction_parameters=np.asarray(extra).ravel())


def pinocchio_rigid(q, dq, ddq):
    """Rigid body + rotor inertia torques from Pinocchio (no friction)."""
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromXML(generate_urdf(ARM))
    pm.gravity.linear = DHChain.from_arm(ARM).gravity
    pm.armature = np.asarray(ARM.armature, dtype=float).copy()
    data = pm.createData()
    tau = np.array([pin.rnea(pm, data, a, b, c) for a, b, c in zip(q, dq, ddq)])
    g = np.array([pin.computeGeneralizedGravity(pm, data, a) for a in q])
    return tau, g


def expected_friction(dq, g):
    """The module docstring's equation, written out here."""
    s = np.tanh(dq / np.array(EPS))
    fa, fs, fl = EXTRA.T
    return FV * dq + FC * s + F0 + fa * np.abs(s) + fs * np.exp(-(dq / np.array(VS)) ** 2) * s + fl * np.abs(g) * s


def test_inverse_dynamics_is_pinocchio_plus_the_friction_equation():
    q, dq, ddq = states(20, 1)
    rigid, g = pinocchio_rigid(q, dq, ddq)
    m = model()
    want = rigid + expected_friction(dq, g)
    np.testing.assert_allclose(m.inverse_dynamics(q, dq, ddq), want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.full_regressor(q, dq, ddq) @ m.parameters, want, rtol=0, atol=1e-9)
    for k in range(3):  # the single-sample path of the control cycle
        np.testing.assert_allclose(m.inverse_dynamics_single(q[k], dq[k], ddq[k]), want[k], rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.friction(dq, q), expected_friction(dq, g), rtol=0, atol=1e-9)
    # at rest every extra term vanishes: G and M are the rigid body's
    np.testing.assert_allclose(m.gravity(q), g, rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.forward_dynamics(q, dq, want), ddq, rtol=0, atol=1e-8)
    mm, c, gg = m.dynamics_terms(q[0], dq[0])
    np.testing.assert_allclose(mm @ ddq[0] + c + gg + m.friction(dq[0], q[0]), want[0], rtol=0, atol=1e-9)
    # kept for the next call on the same state (the law's and the guard's), read-only; another state
    # (the same arrays changed in place too) is evaluated anew
    packed = m.packed_dynamics_terms(q[0], dq[0])
    assert m.packed_dynamics_terms(q[0].copy(), dq[0].copy()) is packed and np.shares_memory(packed, mm)
    assert not mm.flags.writeable
    with pytest.raises(ValueError):
        c[0] = 0.0
    state = dq[0].copy()
    m.dynamics_terms(q[0], state)
    state[:] = dq[1]
    _, c1, _ = m.dynamics_terms(q[0], state)
    np.testing.assert_allclose(mm @ ddq[0] + c1 + gg + m.friction(dq[1], q[0]),
                               m.inverse_dynamics_single(q[0], dq[1], ddq[0]), rtol=0, atol=1e-9)


def test_each_term_alone_against_its_equation():
    q, dq, _ = states(50, 2)
    _, g = pinocchio_rigid(q, dq, np.zeros_like(dq))
    s = np.tanh(dq / np.array(EPS))
    cases = {"asymmetric": np.abs(s), "stribeck": np.exp(-(dq / np.array(VS)) ** 2) * s, "load": np.abs(g) * s}
    for term, column in cases.items():
        fm = FrictionModel(5, EPS, (term,), VS)
        assert fm.extra_names() == tuple(f"{ {'asymmetric': 'fa', 'stribeck': 'fs', 'load': 'fl'}[term]}{j}"
                                         for j in range(1, 6))
        cols = fm.columns(dq, g)
        assert cols.shape == (50, 5, 5)
        np.testing.assert_allclose(np.einsum("kjj->kj", cols), column, rtol=0, atol=1e-12)
        off_diagonal = cols * (1 - np.eye(5))
        assert not off_diagonal.any()
    # sign Coulomb where eps = 0 (the seed's term)
    np.testing.assert_array_equal(FrictionModel(5).shape(dq), np.sign(dq))


def test_asymmetric_levels_by_direction():
    fm = FrictionModel(5, 0.01, ("asymmetric",))
    fa = np.array([0.2, 0.0, -0.1, 0.0, 0.0])
    up = fm.torque(np.zeros(5), FC, np.zeros(5), fa, np.full(5, 1.0))
    down = fm.torque(np.zeros(5), FC, np.zeros(5), fa, np.full(5, -1.0))
    np.testing.assert_allclose(up, FC + fa, atol=1e-12)
    np.testing.assert_allclose(down, -(FC - fa), atol=1e-12)


def test_model_file_round_trip_and_old_files(tmp_path):
    m = model()
    path = tmp_path / "m.yaml"
    save_model(path, m, "test")
    loaded = load_model(path)
    assert loaded.friction_model == ALL
    np.testing.assert_array_equal(loaded.parameters, m.parameters)
    q, dq, ddq = states(5, 3)
    np.testing.assert_allclose(loaded.inverse_dynamics(q, dq, ddq), m.inverse_dynamics(q, dq, ddq), atol=1e-12)
    # a file without a friction block (every file before issue 13): the seed's sign Coulomb
    doc = yaml.safe_load(path.read_text())
    del doc["youbot_dynamics_model"]["friction"]
    path.write_text(yaml.safe_dump(doc))
    assert load_model(path).friction_model.is_seed
    np.testing.assert_array_equal(load_model(path).friction(dq), FV * dq + FC * np.sign(dq) + F0)


def test_per_joint_terms_against_the_equation_and_through_a_model_file(tmp_path):
    """``joint_terms`` (what ``identify`` chooses per joint, issue 31): each joint carries only its own
    terms (the others' parameters are absent, i.e. 0 in the equation), by name, in the regressor and
    in a model file; malformed per-joint blocks are named."""
    joint_terms = (("load",), (), ("asymmetric", "stribeck", "load"), ("stribeck",), ("asymmetric",))
    fm = FrictionModel(5, (0.0, 0.002, 0.05, 0.1, 0.0), (), VS, joint_terms)
    assert fm.terms == ("asymmetric", "stribeck", "load") and not fm.uniform
    assert fm.extra_names() == ("fl1", "fa3", "fs3", "fl3", "fs4", "fa5")
    order = ("asymmetric", "stribeck", "load")
    kept = np.zeros_like(EXTRA)  # (fa, fs, fl) per joint: zero where the joint lacks the term
    for j, terms in enumerate(joint_terms):
        for t in terms:
            kept[j, order.index(t)] = EXTRA[j, order.index(t)]
    values = [kept[j, order.index(t)] for j, ts in enumerate(joint_terms) for t in ts]
    m = model(fm, values)
    q, dq, ddq = states(20, 4)
    rigid, g = pinocchio_rigid(q, dq, ddq)
    eps = np.array(fm.eps)
    s = np.where(eps > 0, np.tanh(dq / np.where(eps > 0, eps, 1.0)), np.sign(dq))
    fa, fs, fl = kept.T
    stribeck = np.exp(-(dq / np.array(VS)) ** 2)
    want = rigid + FV * dq + FC * s + F0 + fa * np.abs(s) + fs * stribeck * s + fl * np.abs(g) * s
    np.testing.assert_allclose(m.inverse_dynamics(q, dq, ddq), want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.full_regressor(q, dq, ddq) @ m.parameters, want, rtol=0, atol=1e-9)
    # what the guard and the observer read: fc + fl |G| +- fa per joint, with only the joint's own terms
    up, down = ModelTerms(m).kinetic_levels(g[0])
    np.testing.assert_allclose(up, np.maximum(FC + fl * np.abs(g[0]) + fa, 0.0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(down, np.maximum(FC + fl * np.abs(g[0]) - fa, 0.0), rtol=0, atol=1e-12)
    cols = fm.columns(dq, g)
    for k, name in enumerate(fm.extra_names()):  # each column acts on its own joint's equation only
        joint = int(name[2:]) - 1
        assert not np.delete(cols[:, :, k], joint, axis=1).any()
    path = tmp_path / "m.yaml"
    save_model(path, m, "test")
    loaded = load_model(path)
    assert loaded.friction_model == fm
    np.testing.assert_allclose(loaded.inverse_dynamics(q, dq, ddq), want, rtol=0, atol=1e-9)
    with pytest.raises(FrictionError, match="joint_terms: expected 5"):
        FrictionModel(5, 0.0, (), (), joint_terms[:4])
    with pytest.raises(FrictionError, match="joint_terms of joint 2: unknown 'dry'"):
        FrictionModel(5, 0.0, (), (), ((), ("dry",), (), (), ()))


@pytest.mark.parametrize("change, message", [
    (lambda f: f.update(terms=["viscosity"]), "unknown 'viscosity'"),
    (lambda f: f.update(eps=[0.1, 0.1]), "eps: expected 5 values"),
    (lambda f: f.update(eps=[0.1, -1, 0.1, 0.1, 0.1]), "eps of joint 2"),
    (lambda f: f["parameters"].pop(), "friction.parameters: expected the names"),
    (lambda f: f["parameters"][0].update(value="x"), r"friction.parameters\[0\] \(fa1\).value"),
    (lambda f: f.update(joint_terms="load"), "joint_terms: expected one list of terms per joint"),
    (lambda f: f.update(joint_terms=[["load"]] * 4), "joint_terms: expected 5"),
])
def test_malformed_friction_blocks_are_named(tmp_path, change, message):
    path = tmp_path / "m.yaml"
    save_model(path, model(), "test")
    doc = yaml.safe_load(path.read_text())
    change(doc["youbot_dynamics_model"]["friction"])
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelFileError, match=message):
        load_model(path)


def test_bad_friction_models_are_refused():
    with pytest.raises(FrictionError, match="expected 10 values"):
        model(FrictionModel(5, 0.05, ("load", "asymmetric")), np.zeros(5))
    with pytest.raises(FrictionError, match="NaN"):
        model(FrictionModel(5, 0.05, ("load",)), [np.nan] * 5)
    with pytest.raises(ValueError, match="needs the configuration q"):
        model().friction(np.zeros(5))


def test_negative_load_or_stribeck_friction_is_inconsistent():
    extra = EXTRA.copy()
    extra[2, 2] = -0.3  # fl3
    extra[1, 1] = -0.2  # fs2
    report = assess_model(model(extra=extra), ARM)
    assert any(p.startswith("fl3 = -0.3") for p in report.problems), report.problems
    assert any(p.startswith("fs2 = -0.2") for p in report.problems), report.problems
    with pytest.raises(ModelConsistencyError, match="fl3"):
        PDGravityController(model(extra=extra), ARM)
    assert check_model(model(), ARM).ok


def test_control_laws_compensate_the_models_friction():
    """ModelTerms: the model's smooth shape kept, a sign Coulomb smoothed with the laws' eps, against
    the equation; computed torque is the model's inverse dynamics, against Pinocchio."""
    q, dq, ddq = states(5, 4)
    rigid, g = pinocchio_rigid(q, dq, np.zeros_like(dq))
    terms = ModelTerms(model(), friction_eps=0.01)
    for k in range(5):
        np.testing.assert_allclose(terms.friction(dq[k], q[k]), expected_friction(dq[k], g[k]), atol=1e-9)
        # the safety guard's C q' + G (dynamics_terms): rigid-body only, no friction of any structure
        _, coriolis, gravity = model().dynamics_terms(q[k], dq[k])
        np.testing.assert_allclose(coriolis + gravity, rigid[k], atol=1e-9)
    seed = model(FrictionModel(5), np.zeros(0))
    terms = ModelTerms(seed, friction_eps=0.01)
    for k in range(5):
        smooth = FV * dq[k] + FC * np.tanh(dq[k] / 0.01) + F0
        np.testing.assert_allclose(terms.friction(dq[k]), smooth, atol=1e-12)
    # computed torque at zero tracking error: the model's inverse dynamics along the reference
    law = ComputedTorqueController(model(), ARM)
    law.trajectory = JointTrajectory.through(q[0], [1.0], q[:1], start_velocity=dq[0], start_acceleration=ddq[0])
    law.start_time = 0.5  # the reference at 0.5 s: the trajectory's start state (not checked against the limits)
    want = pinocchio_rigid(q[:1], dq[:1], ddq[:1])[0][0] + expected_friction(dq[0], g[0])
    np.testing.assert_allclose(law.torque(0.5, q[0], dq[0]), want, atol=1e-8)


@pytest.mark.parametrize("terms", [(), ("asymmetric",), ("stribeck",), ("load",), ("load", "asymmetric", "stribeck")])
def test_the_compiled_friction_of_the_control_kernels_is_the_equation(terms):
    """``smooth_friction_torque`` on ``FrictionModel.rows`` (the friction of the compiled control cycle):
    the module docstring's equation written out here, per term and all together; a term a joint does
    not carry counts zero."""
    q, dq, _ = states(30, 5)
    _, g = pinocchio_rigid(q, dq, np.zeros_like(dq))
    fm = FrictionModel(5, EPS, terms, VS)
    values = dict(zip(("asymmetric", "stribeck", "load"), EXTRA.T))
    parameters = np.stack([values[t] for t in fm.terms], axis=1).ravel() if fm.terms else np.zeros(0)
    rows = fm.rows(FV, FC, F0, parameters)
    s = np.tanh(dq / np.array(EPS))
    features = {"asymmetric": np.abs(s), "stribeck": np.exp(-(dq / np.array(VS)) ** 2) * s, "load": np.abs(g) * s}
    want = FV * dq + FC * s + F0 + sum(values[t] * features[t] for t in terms)
    for k in range(len(q)):
        np.testing.assert_allclose(smooth_friction_torque(rows, dq[k], g[k]), want[k], rtol=0, atol=1e-12)
    with pytest.raises(FrictionError, match="smooth Coulomb shape"):
        FrictionModel(5).rows(FV, FC, F0, np.zeros(0))
