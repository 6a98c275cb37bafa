"""Payload at run time (issue 17 item 4): a model holding a payload, and what it does for tracking.

Oracles: the simulator's true robot with the payload (its link inertials combined as bodies,
:func:`~youbot_dynamics.sim.true_robot.true_arm`) against :func:`with_payload`'s linear map of the
base parameters; the issue's tracking figure in closed loop with the MuJoCo arm.
"""
from __future__ import annotations

import numpy as np
import pytest
from stroke import HOME, START, stroke

from youbot_dynamics.control import ComputedTorqueController, SafetyGuard
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.payload import Payload, with_payload
from youbot_dynamics.sim import ArmSimulator, Realism

PAYLOAD = Payload.of(0.5, [0.01, -0.02, 0.05], np.diag([1e-3, 2e-3, 2.5e-3]))
# what the tracking goal is judged on: 0.5 kg held 5 cm out on the tool axis (a gripped part)
GRIPPED = Payload.of(0.5, [0.0, 0.0, 0.05], np.diag([2e-4, 2e-4, 1e-4]))


def model_of(sim: ArmSimulator) -> DynamicModel:
    return DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters)


def test_with_payload_is_the_true_robot_holding_it(arm):
    sim = ArmSimulator(arm, realism=False)
    without = model_of(sim)
    sim.set_payload(PAYLOAD.mass, PAYLOAD.position, PAYLOAD.inertia)
    holding = model_of(sim)
    model = with_payload(without, PAYLOAD, arm.tool)
    rng = np.random.default_rng(1)
    q, dq, ddq = (rng.uniform(-2.0, 2.0, (100, arm.n_joints)) for _ in range(3))
    np.testing.assert_allclose(model.inverse_dynamics(q, dq, ddq), holding.inverse_dynamics(q, dq, ddq), atol=1e-12)
    np.testing.assert_allclose(model.standard, holding.standard, atol=1e-12)
    assert np.abs(model.gravity(q) - without.gravity(q)).max() > 0.5  # 0.5 kg is felt
    # no payload: the same model
    same = with_payload(without, Payload.of(0.0), arm.tool)
    np.testing.assert_array_equal(same.beta, without.beta)


@pytest.mark.parametrize("mass, position, inertia, message", [
    (-0.1, None, None, "mass"), (np.nan, None, None, "mass"), (0.5, [0.0, np.nan, 0.0], None, "position"),
    (0.5, None, np.diag([1.0, 1.0, 3.0]), "physical"), (0.0, None, np.eye(3), "needs a mass"),
])
def test_bad_payloads_are_refused(mass, position, inertia, message):
    with pytest.raises(ValueError, match=message):
        Payload.of(mass, position, inertia)


def tracking_rms(sim: ArmSimulator, model: DynamicModel, arm) -> np.ndarray:
    """RMS error per joint of computed torque on ``model`` over the out and back and 0.3 s of holding."""
    errors = [q_d - q for t, q, _, _, q_d in stroke(sim, model, arm, 0.3) if t >= START]
    return np.sqrt(np.mean(np.square(errors), axis=0))


def test_tracking_with_the_payload_applied_within_2x_of_without(arm):
    """The issue's goal, 0.5 kg at the tool, on the simulated robot with the seed's friction
    structure (noise, quantization, effort calibration and velocity lag on): the true-parameter model
    has no load-dependent friction, and on the harder robot its computed torque locks joint 4 at the
    turnaround with the payload's extra load (23.9 mrad RMS; an identified model, which has the load
    term, tracks at 0.35-1.34 mrad there: README). The law's model is switched as the controller
    nodes do on ~/payload."""
    sim = ArmSimulator(arm, realism=Realism(extra_friction=False))
    without = model_of(sim)
    baseline = tracking_rms(sim, without, arm)
    sim.set_payload(GRIPPED.mass, GRIPPED.position, GRIPPED.inertia)
    applied = tracking_rms(sim, with_payload(without, GRIPPED, arm.tool), arm)
    sim.set_payload(0.0)
    print(f"\ncomputed torque, RMS error [mrad]: no payload {np.round(1e3 * baseline, 3)}; 0.5 kg with it applied "
          f"{np.round(1e3 * applied, 3)}")
    assert np.all(applied <= 2.0 * baseline)
    # Without it the law is far off (measured: 0.8-1014 mrad RMS, joint 4 falling to 1.1 x velocity_max
    # against its guard: the limit check of this suite fails that run, so it is not run here).


def test_set_model_keeps_the_reference_and_checks_the_model(arm):
    sim = ArmSimulator(arm, realism=False)
    model = model_of(sim)
    law = ComputedTorqueController(model, arm)
    law.hold(HOME)
    before = law.gravity(HOME + 0.3)
    law.set_model(with_payload(model, PAYLOAD, arm.tool))
    np.testing.assert_array_equal(law.reference(1.0)[0], HOME)
    assert np.abs(law.gravity(HOME + 0.3) - before).max() > 0.5
    heavy = model.with_parameters(model.parameters - 10.0 * (with_payload(model, Payload.of(1.0), arm.tool).parameters
                                                             - model.parameters))  # a last link of -10 kg
    with pytest.raises(ValueError):
        law.set_model(heavy)
    np.testing.assert_allclose(law.gravity(HOME + 0.3), law.terms.gravity(HOME + 0.3))


def test_the_guard_takes_the_payload_s_inertia(arm):
    """After ``set_model`` the guard acts as one built on the model with the payload: its stall bound
    uses the heavier arm's inertia (with the first model's, it clipped computed torque on the wrist:
    30 mrad RMS on joint 4 instead of 1.9 in the demo's run)."""
    sim = ArmSimulator(arm, realism=False)
    without = model_of(sim)
    holding = with_payload(without, GRIPPED, arm.tool)
    switched, built, old = SafetyGuard(arm, without), SafetyGuard(arm, holding), SafetyGuard(arm, without)
    switched.set_model(holding)
    for guard in (switched, built, old):
        guard.enable(0.0)
    rng = np.random.default_rng(3)
    limit = np.minimum(arm.effort_max, arm.drive_torque_limit)
    differs = 0
    for _ in range(50):
        q = rng.uniform(arm.position_min + 0.2, arm.position_max - 0.2)
        dq = rng.uniform(-0.8, 0.8, arm.n_joints) * arm.velocity_max
        tau = rng.uniform(-1.0, 1.0, arm.n_joints) * limit
        a, b, c = (g.command(1.0, 1.0, q, dq, lambda *_: tau) for g in (switched, built, old))
        np.testing.assert_allclose(a, b, atol=1e-12)
        differs += not np.allclose(a, c)
    assert differs > 0  # the payload changes what the guard lets through: the test can fail
