"""External torques (issue 17): the simulator's external wrench, the momentum observer, collision
detection and the float (hand-guiding) law, in closed loop with the MuJoCo arm (no ROS).

Oracles: the simulator's wrench against ``J^T F`` of our own DH kinematics (MuJoCo's ``mj_applyFT``
is the other formulation); the observer against the simulator's true external torques (on the ideal
robot through the first-order low-pass the theory predicts; on the harder robot, whose friction no
model here has, against the issue's 0.3 N m); detection and float against the issue's figures.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest
from stroke import HOME, START, stroke
from test_control import FAST_SEGMENT, FAST_STROKE

from youbot_dynamics.control import (CollisionDetector, ComputedTorqueController, FloatController, JointTrajectory,
                                     MomentumObserver, SafetyGuard, collision_thresholds)
from youbot_dynamics.control.laws import FLOAT_DAMPING
from youbot_dynamics.control.observer import STICTION_FACTOR, unfitted_rms
from youbot_dynamics.control.terms import reference_inertia
from youbot_dynamics.control.velocity import VelocityFromPositions
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.arm.kinematics import geometric_jacobian, link_frames
from youbot_dynamics.sim import ArmSimulator

FOREARM = "arm_link_3"  # its frame sits on joint 4's axis; the forearm reaches back along -x
# A push on the forearm, 0.1 m beyond joint 4's axis along the link: 2 N m on joint 2 (its lever
# is 0.39 m in the candle) and 1.2 N m on joint 3.
PUSH_FORCE = np.array([0.0, -2.0 / 0.39, 0.0])
PUSH_POINT = np.array([0.1, 0.0, 0.0])


@pytest.fixture(scope="module")
def hard_sim(arm):
    return ArmSimulator(arm, realism=True)


@pytest.fixture(scope="module")
def true_model(hard_sim):
    """The true rigid-body and seed-structure friction parameters: the harder robot's Stribeck,
    asymmetric and load-dependent friction are not in it."""
    return DynamicModel.from_standard(DHChain.from_arm(hard_sim.arm), hard_sim.true_parameters)


# The push "equivalent to 2 N m on joint 2" of the issue, in every configuration: a pure torque on
# the upper arm about its frame's z axis, parallel to joint 2's axis (nothing on the other joints).
UPPER_ARM = "arm_link_2"
JOINT_2_TORQUE = np.array([0.0, 0.0, 2.0])


def tracking_run(sim, model, arm, *, push=None, profile="step", gain=100.0, thresholds=None, joint_2=False):
    """The stroke (:func:`stroke.stroke`) on ``model``, the observer on the commanded torque.
    ``push = (t0, t1)``: the forearm push (``profile`` 'step' or 'smooth', sin^2), or with ``joint_2``
    2 N m on joint 2. Returns times, residuals, true external torques (aligned: the residual at a
    state against the torque applied up to it) and the detection events."""
    observer = MomentumObserver(model, gain)
    detector = CollisionDetector(thresholds) if thresholds is not None else None
    times, residuals, truth, events = [], [], [], []
    for t, q, dq, tau, _ in stroke(sim, model, arm, 0.5):
        truth.append(sim.external_torque)
        if push is not None and push[0] <= t < push[1]:
            scale = 1.0 if profile == "step" else np.sin(np.pi * (t - push[0]) / (push[1] - push[0])) ** 2
            if joint_2:
                sim.apply_wrench(UPPER_ARM, [0.0, 0.0, 0.0], scale * JOINT_2_TORQUE, duration=1.5 * sim.timestep)
            else:
                sim.apply_wrench(FOREARM, scale * PUSH_FORCE, point=PUSH_POINT, duration=1.5 * sim.timestep)
        r = observer.update(t, q, dq, tau)
        if detector is not None:
            up, down = observer.terms.kinetic_levels(observer.gravity)
            event = detector.update(t, r, dq, STICTION_FACTOR * np.maximum(up, down))
            if event is not None:
                events.append((t, event, detector.joints))
        times.append(t)
        residuals.append(r)
    return np.array(times), np.array(residuals), np.array(truth), events


# ---------------------------------------------------------------------------------------------
# the simulator's external wrench


def test_wrench_torques_are_the_jacobian_transpose(arm):
    sim = ArmSimulator(arm, realism=False)
    q = np.array([2.5, 1.0, -2.0, 1.5, 2.0])
    sim.reset(q, hold=True)
    frames = link_frames(arm, q)
    jacobian = geometric_jacobian(arm, q)  # the tool frame = the last link's frame (tool offset zero)
    np.testing.assert_allclose(arm.tool, np.eye(4), atol=1e-12)
    force, torque = np.array([3.0, -2.0, 5.0]), np.array([0.2, 0.1, -0.3])
    rotation = frames[-2][:3, :3]
    sim.apply_wrench(arm.link_names[-1], rotation.T @ force, rotation.T @ torque, duration=0.0105)
    sim.step()
    np.testing.assert_allclose(sim.external_torque, jacobian[:3].T @ force + jacobian[3:].T @ torque, atol=1e-9)
    sim.step(9)
    assert np.any(sim.external_torque != 0.0)
    sim.step(2)  # 10 steps of 1 ms: over
    assert np.all(sim.external_torque == 0.0)
    sim.apply_wrench(FOREARM, PUSH_FORCE)
    sim.step(50)
    assert np.any(sim.external_torque != 0.0)  # no duration: until cleared
    sim.clear_wrench()
    sim.step()
    assert np.all(sim.external_torque == 0.0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(link="arm_link_9", force=[1, 0, 0]), "unknown link"),
    (dict(link=FOREARM, force=[np.nan, 0, 0]), "force"),
    (dict(link=FOREARM, force=[1, 0]), "force"),
    (dict(link=FOREARM, force=[1, 0, 0], point=[0, np.inf, 0]), "point"),
    (dict(link=FOREARM, force=[1, 0, 0], duration=0.0), "duration"),
])
def test_bad_wrenches_are_refused(arm, kwargs, message):
    sim = ArmSimulator(arm, realism=False)
    with pytest.raises(ValueError, match=message):
        sim.apply_wrench(**kwargs)
    sim.step()
    assert np.all(sim.external_torque == 0.0)


# ---------------------------------------------------------------------------------------------
# the momentum observer


def test_observer_on_the_ideal_robot_is_the_low_passed_external_torque(arm):
    """Exact model, exact states: ``r' = K (tau_ext - r)`` (module docstring of the observer),
    during fast motion (where ``C^T q'`` matters) and a smooth push."""
    sim = ArmSimulator(arm, realism=False)
    model = DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters)
    gain = 100.0
    t, r, truth, _ = tracking_run(sim, model, arm, push=(START + 0.5, START + 1.0), profile="smooth", gain=gain)
    expected = np.zeros_like(truth)
    for k in range(1, len(t)):  # the same low-pass, exactly discretised
        expected[k] = truth[k] + (expected[k - 1] - truth[k]) * np.exp(-gain * (t[k] - t[k - 1]))
    moving = t > 0.05
    error = np.abs(r - expected)[moving].max(axis=0)
    print(f"\nideal robot: peak true external torque {np.round(np.abs(truth).max(axis=0), 3)} N m, "
          f"largest |r - low-passed truth| {np.round(error, 4)} N m")
    assert np.abs(truth).max(axis=0)[1] > 1.5  # the push reached joint 2
    assert np.all(error <= 0.02)


def test_observer_on_the_harder_robot_within_0_3_nm(arm, hard_sim, true_model):
    """The issue's goal (RMS error <= 0.3 N m per joint while a push is applied during tracking), on
    the harder robot whose friction the model does not hold: a smooth forearm push in mid-motion."""
    push = (START + 0.5, START + 1.0)
    t, r, truth, _ = tracking_run(hard_sim, true_model, arm, push=push, profile="smooth")
    during = (t >= push[0]) & (t < push[1])
    rms = np.sqrt(np.mean((r - truth)[during] ** 2, axis=0))
    print(f"\nharder robot: peak push {np.round(np.abs(truth).max(axis=0), 2)} N m, RMS error during the push "
          f"{np.round(rms, 3)} N m")
    assert np.all(rms <= 0.3)


def test_a_gap_in_the_states_keeps_the_estimate(arm):
    """States lost for longer than ``max_step`` while a push is held: the integral restarts after the
    gap from the estimate it had (a restart at ``r = 0`` would read the held push as a new one, which
    it did with the simulator loaded by two CPU hogs); :meth:`reset` still starts at zero."""
    sim = ArmSimulator(arm, realism=False)
    model = DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters)
    observer = MomentumObserver(model, 100.0, max_step=0.005)
    push, gap = (START + 0.3, START + 0.8), (START + 0.5, START + 0.52)
    before = after = None
    errors = []
    for t, q, dq, tau, _ in stroke(sim, model, arm, 0.5):
        if push[0] <= t < push[1]:
            sim.apply_wrench(UPPER_ARM, [0.0, 0.0, 0.0], JOINT_2_TORQUE, duration=1.5 * sim.timestep)
        if gap[0] <= t < gap[1]:
            continue
        truth = sim.external_torque
        r = observer.update(t, q, dq, tau)
        if t < gap[0]:
            before = r
        elif after is None:
            after = r
        if gap[1] <= t < gap[1] + 0.05:
            errors.append(np.abs(r - truth).max())
    print(f"\nestimate before the gap {np.round(before, 3)}, after it {np.round(after, 3)} N m; largest error in the "
          f"50 ms after it {max(errors):.4f} N m")
    assert abs(before[1]) == pytest.approx(JOINT_2_TORQUE[2], abs=0.05)  # settled on the push before the gap
    np.testing.assert_array_equal(after, before)
    assert max(errors) < 0.05
    observer.reset()
    np.testing.assert_array_equal(observer.update(10.0, HOME, np.zeros(5), np.zeros(5)), np.zeros(5))


def ideal_arm(arm):
    """The ideal rigid-body arm (no friction, noise, lag or quantization) and its exact model."""
    sim = ArmSimulator(arm, realism=False)
    return sim, DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters)


def held_by_computed_torque(sim, model, arm, trajectory=None):
    """From a reset, computed torque on ``model`` holding HOME (and following ``trajectory`` from
    ``START``), the drives' exact state: yields ``(t, q, dq, tau)`` before each step."""
    sim.reset()
    law = ComputedTorqueController(model, arm)
    law.hold(HOME)
    if trajectory is not None:
        law.follow(trajectory, START)
    guard = SafetyGuard(arm, model)
    m = sim.measure()
    guard.enable(m.time, law.gravity(m.position))
    while True:
        m = sim.measure()
        tau = guard.command(m.time, m.time, m.position, m.velocity, law.torque)
        assert tau is not None, guard.fault_reason
        yield m.time, m.position, m.velocity, tau
        sim.command("effort", tau)
        sim.step()


def test_observer_holds_zero_through_a_fast_stroke_without_external_torque(arm):
    """No external torque, the ideal arm (no friction to hide anything), the fast stroke of
    ``test_control`` (1.41 rad/s, joints 2-4 against each other): the residual stays within 0.01 N m
    (measured 0.005). ``C^T q'`` reaches 0.13 / 0.04 / 0.04 N m on joints 2-4 here: an observer
    without it reads that as an external torque, 13 times the tolerance on joint 2."""
    sim, model = ideal_arm(arm)
    trajectory = JointTrajectory.through(HOME, [FAST_SEGMENT, 2 * FAST_SEGMENT], [HOME + FAST_STROKE, HOME])
    observer = MomentumObserver(model)
    largest = np.zeros(5)
    for t, q, dq, tau in held_by_computed_torque(sim, model, arm, trajectory):
        largest = np.maximum(largest, np.abs(observer.update(t, q, dq, tau)))
        if t > START + 2 * FAST_SEGMENT + 0.1:
            break
    print(f"\nfast stroke, no external torque: largest |r| {np.round(largest, 4)} N m")
    assert np.all(largest <= 0.01), f"largest |r| {np.round(largest, 4)} N m without an external torque"


# A pure torque on the forearm about its frame's -z axis, parallel to joints 2 and 3 (and 4, which does
# not carry the forearm): 2 N m on joints 2 and 3 in every configuration (q counts against the DH angle).
FOREARM_TORQUE = np.array([0.0, 0.0, -2.0])


@pytest.mark.parametrize("gain", [25.0, [100.0, 25.0, 10.0, 100.0, 100.0]], ids=["25", "per-joint"])
def test_observer_at_another_gain_is_the_first_order_step_response(arm, gain):
    """Not the default gain: a step of 2 N m on joints 2 and 3 while computed torque holds the ideal
    arm; each ``r_j`` follows ``tau_ext (1 - exp(-K_j t))`` (``r' = K (tau_ext - r)``), the closed form,
    within 0.02 N m from the state at which the push began (the observer's explicit 1 ms step departs
    from it by at most ``tau_ext K dt / (2 e)``, 0.009 N m at K = 25)."""
    sim, model = ideal_arm(arm)
    observer = MomentumObserver(model, gain)
    k = np.broadcast_to(np.asarray(gain, dtype=float), (5,))
    began, worst = None, 0.0
    for t, q, dq, tau in held_by_computed_torque(sim, model, arm):
        r = observer.update(t, q, dq, tau)
        if began is not None:
            np.testing.assert_allclose(sim.external_torque, [0.0, 2.0, 2.0, 0.0, 0.0], atol=1e-9)
            expected = sim.external_torque * (1.0 - np.exp(-k * (t - began)))
            worst = max(worst, np.abs(r - expected).max())
        elif t >= 0.7:  # held still after the enable ramp: the push begins with the coming step
            began = t
        if began is not None:
            sim.apply_wrench(FOREARM, [0.0, 0.0, 0.0], FOREARM_TORQUE, duration=1.5 * sim.timestep)
            if t > began + 8.0 / k.min():
                break
    print(f"\nobserver at gain {gain}: largest |r - 2 (1 - exp(-K t))| {worst:.4f} N m; r at the end {np.round(r, 3)}")
    np.testing.assert_allclose(r, [0.0, 2.0, 2.0, 0.0, 0.0], atol=0.01)
    assert worst <= 0.02, f"r departs from tau_ext (1 - exp(-K t)) by {worst:.3f} N m"


def test_observer_refuses_bad_input(true_model):
    with pytest.raises(ValueError, match="gain"):
        MomentumObserver(true_model, gain=0.0)
    with pytest.raises(ValueError, match="gain"):
        MomentumObserver(true_model, gain=[100.0] * 4)
    observer = MomentumObserver(true_model)
    q, zero = HOME.copy(), np.zeros(5)
    observer.update(0.0, q, zero, zero)
    for bad in ((q, zero, [np.nan] * 5), (q[:4], zero, zero), (q, [np.inf] * 5, zero)):
        with pytest.raises(ValueError, match="finite values"):
            observer.update(0.001, *bad)
    np.testing.assert_array_equal(observer.update(0.001, q, zero, zero), observer.residual)


# ---------------------------------------------------------------------------------------------
# collision detection


@pytest.fixture(scope="module")
def thresholds(arm, hard_sim, true_model):
    """From the model's residual on data it did not fit, as the identification report gives it: here the
    RMS of the inverse dynamics error of the true-parameter model on the harder robot at rest and moving
    (the report's ``validation.identified.rms_nm`` on an identified model: 0.10, 0.17, 0.10, 0.025,
    0.010 N m in the demo)."""
    return collision_thresholds([0.1, 0.17, 0.1, 0.025, 0.01])


def test_tracking_at_full_speed_raises_no_false_collision(arm, hard_sim, true_model, thresholds):
    _, r, _, events = tracking_run(hard_sim, true_model, arm, thresholds=thresholds)
    print(f"\nno push: largest |r| {np.round(np.abs(r).max(axis=0), 2)} N m, thresholds {np.round(thresholds, 2)}")
    assert events == []


@pytest.mark.parametrize("at", [0.9, 1.3, 2.0])  # accelerating, mid-segment, the second segment
def test_a_2_nm_push_on_joint_2_is_detected_within_20_ms(arm, hard_sim, true_model, thresholds, at):
    t, _, truth, events = tracking_run(hard_sim, true_model, arm, push=(at, at + 0.3), thresholds=thresholds,
                                       joint_2=True)
    pushed = np.abs(truth).max(axis=1) > 0.0
    began = t[np.flatnonzero(pushed)[0]]
    np.testing.assert_allclose(np.abs(truth[pushed]), [[0.0, 2.0, 0.0, 0.0, 0.0]] * int(pushed.sum()), atol=1e-9)
    assert events and events[0][1] is True, events
    delay = events[0][0] - began
    print(f"\npush at {at} s: detected after {1e3 * delay:.0f} ms on joints {events[0][2]}")
    assert 0.0 <= delay <= 0.02
    assert any(e is False for _, e, _ in events)  # and it ends once the push is gone


def test_detector_hysteresis_and_stiction_band():
    detector = CollisionDetector([1.0, 2.0], stiction_velocity=0.1, hold_time=0.03)
    fast = np.array([1.0, 1.0])
    assert detector.update(0.0, np.array([0.9, 1.9]), fast) is None
    assert detector.update(0.001, np.array([1.1, 0.0]), fast) is True and detector.joints == (0,)
    assert detector.update(0.002, np.array([0.6, 0.0]), fast) is None  # above half the threshold: still on
    assert detector.update(0.003, np.array([0.4, 0.9]), fast) is False
    detector.reset()
    # at rest a joint's threshold grows by its stiction band, which decays once it moves
    assert detector.update(0.0, np.array([2.5, 0.0]), np.zeros(2), stiction=[2.0, 0.0]) is None
    np.testing.assert_allclose(detector.thresholds, [3.0, 2.0])
    detector.update(0.03, np.zeros(2), fast, stiction=[2.0, 0.0])
    np.testing.assert_allclose(detector.thresholds, [1.0 + 2.0 * np.exp(-1.0), 2.0])
    for bad in ([0.0, 1.0], [np.nan, 1.0], [[1.0]]):
        with pytest.raises(ValueError, match="thresholds"):
            CollisionDetector(bad)
    with pytest.raises(ValueError, match="release_ratio"):
        CollisionDetector([1.0], release_ratio=0.0)


def test_collision_thresholds():
    np.testing.assert_allclose(collision_thresholds([0.1, 0.01], factor=6.0, floor=0.3), [0.6, 0.3])
    for bad in ([-0.1], [np.nan]):
        with pytest.raises(ValueError, match="residual RMS"):
            collision_thresholds(bad)
    with pytest.raises(ValueError, match="factor"):
        collision_thresholds([0.1], factor=0.0)


def test_thresholds_scale_on_every_motion_the_model_was_not_fitted_on():
    """The held-out RMS error per joint, or the same-motion one where larger (the excitation's speeds,
    which the validation trajectory may not reach); nothing without a held-out figure."""
    held, same = [0.05, 0.13, 0.05, 0.013, 0.006], [0.07, 0.1, 0.04, 0.02, 0.006]
    both = {"joint_rms_errors_nm": held, "same_motion": {"joint_rms_errors_nm": same}}
    np.testing.assert_allclose(unfitted_rms(both), [0.07, 0.13, 0.05, 0.02, 0.006])
    np.testing.assert_allclose(unfitted_rms({"joint_rms_errors_nm": held}), held)
    assert unfitted_rms({"same_motion": {"joint_rms_errors_nm": same}}) is None
    # and the friction sweep's halves, each predicted from the rest of the data (another character of motion)
    probe = [0.06, 0.02, 0.09, 0.01, 0.001]
    three = {**both, "friction_selection": {"probe_joint_rms_nm": probe}}
    np.testing.assert_allclose(unfitted_rms(three), [0.07, 0.13, 0.09, 0.02, 0.006])


# ---------------------------------------------------------------------------------------------
# float: hand-guiding


def test_float_moves_by_hand_and_stays_where_it_is_left(arm, hard_sim, true_model):
    """The issue's goal: after a push the arm stays put, drift <= 1 mrad/s on every joint."""
    sim = hard_sim
    q0 = HOME + np.array([0.3, -0.4, 0.5, -0.4, 0.3])
    sim.reset(q0, hold=True)
    sim.step(300)
    law = FloatController(true_model, arm)
    law.hold(sim.measure().position)
    guard, velocity = SafetyGuard(arm, true_model), VelocityFromPositions(arm.n_joints)
    m = sim.measure()
    guard.enable(m.time, law.gravity(m.position))
    start = m.time
    times, qs = [], []
    while sim.time < start + 4.0:
        m = sim.measure()
        if start + 1.0 <= m.time < start + 1.3:  # a hand pushes the forearm for 0.3 s
            sim.apply_wrench(FOREARM, [0.0, -15.0, 0.0], point=[-0.05, 0.0, 0.0], duration=1.5 * sim.timestep)
        dq = velocity.update(m.time, m.position, m.velocity)
        tau = guard.command(m.time, m.time, m.position, dq, law.torque)
        assert tau is not None, guard.fault_reason
        sim.command("effort", tau)
        sim.step()
        times.append(m.time - start)
        qs.append(m.position)
    t, q = np.array(times), np.array(qs)
    before = q[t < 1.0][-1]
    moved = np.abs(q[-1] - before)
    end = t >= 3.0  # the last second
    drift = np.abs(q[end][-1] - q[end][0]) / (t[end][-1] - t[end][0])
    still = np.abs(q[(t >= 0.5) & (t < 1.0)][-1] - q[(t >= 0.5) & (t < 1.0)][0]) / 0.5
    print(f"\nfloat: moved by the push {np.round(moved, 3)} rad; drift over the last second "
          f"{np.round(1e3 * drift, 3)} mrad/s, before the push {np.round(1e3 * still, 3)} mrad/s")
    assert moved[1] > 0.05 and moved[2] > 0.05  # it gave way to the hand
    assert np.all(drift <= 1e-3)
    assert np.all(still <= 1e-3)


def test_float_law_refuses_bad_input(arm, true_model):
    law = FloatController(true_model, arm)
    with pytest.raises(RuntimeError, match="hold"):
        law.torque(0.0, HOME, np.zeros(5))
    with pytest.raises(ValueError):
        law.hold(HOME + 10.0)  # beyond the limits
    with pytest.raises(ValueError, match="damping"):
        FloatController(true_model, arm, damping=-1.0)
    with pytest.raises(ValueError, match="rest_velocity"):
        FloatController(true_model, arm, rest_velocity=0.0)


def test_float_law_damping_opposes_every_joint_velocity(arm, true_model):
    """The law's damping term alone (friction compensation off; a joint faster than ``rest_velocity``
    carries its anchor, so no virtual stiction): ``tau - G(q) = -D q'`` with ``D`` the documented
    default ``FLOAT_DAMPING`` x the reference inertia, positive: each joint's torque beyond gravity
    opposes its own velocity (negative power), whatever the state."""
    law = FloatController(true_model, arm, friction_compensation=False)
    expected_damping = FLOAT_DAMPING * reference_inertia(true_model, arm)
    np.testing.assert_allclose(law.damping, expected_damping, rtol=1e-12)
    assert np.all(expected_damping > 0.0)
    rng = np.random.default_rng(5)
    for _ in range(10):
        q = rng.uniform(arm.position_min + 0.1, arm.position_max - 0.1)
        dq = rng.choice([-1.0, 1.0], 5) * rng.uniform(0.05, 1.5, 5)
        law.hold(q)
        beyond_gravity = law.torque(0.0, q, dq) - true_model.gravity(q)
        np.testing.assert_allclose(beyond_gravity, -expected_damping * dq, rtol=1e-9, atol=1e-12)
        assert np.all(beyond_gravity * dq < 0.0), (dq, beyond_gravity)


def test_float_takes_energy_out_of_the_frictionless_arm(arm):
    """On the ideal arm (MuJoCo, no friction: only the law can take energy out) with its exact model,
    after a push on the hand the joints coast down and the arm's mechanical energy (MuJoCo's kinetic +
    potential) goes: ``dE/dt = (tau - G) . q' = -q'^T D q'`` (measured: 0.018 J out; it rises only by
    what the virtual stiction's springs, 0.05 N m at 2 mrad each, give back near rest: 2e-4 J). With
    the damping's sign wrong the arm speeds up (1.2 rad/s within 0.1 s of the push)."""
    sim = ArmSimulator(arm, realism=False)
    model = DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters)
    sim.model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    q0 = HOME + np.array([0.3, -0.4, 0.5, -0.4, 0.3])
    sim.reset(q0)
    law = FloatController(model, arm)
    law.hold(q0)
    energy, speed = [], []
    while sim.time < 1.5:
        m = sim.measure()
        if m.time < 0.1:  # the push
            sim.apply_wrench(arm.link_names[-1], [1.0, -1.0, 0.5], [0.02, 0.02, -0.02], duration=1.5 * sim.timestep)
        sim.command("effort", law.torque(m.time, m.position, m.velocity))
        sim.step()
        if m.time >= 0.1:
            energy.append(sim.data.energy.sum())
            speed.append(np.abs(m.velocity).max())
        if speed and speed[-1] > 1.2:
            break  # running away (before the arm leaves its limits)
    energy = np.array(energy)
    rise = np.max(energy - np.minimum.accumulate(energy))
    print(f"\nfloat on the frictionless arm: {speed[0]:.3f} rad/s after the push, {speed[-1]:.4f} rad/s "
          f"{len(speed)} ms later; energy {energy[0] - energy[-1]:.4f} J taken out, largest rise {rise:.1e} J")
    assert speed[0] > 0.3  # the push moved the arm
    assert rise <= 1e-3, f"the arm's energy rose by {rise:.4f} J"
    assert energy[0] - energy[-1] > 0.01
    assert len(speed) >= 1300 and speed[-1] < 0.05 * speed[0]


def test_momentum_terms_against_finite_differences(true_model):
    """``DynamicModel.momentum_terms``: ``p = M q'`` and ``G`` as the model's own (the generated
    regressor's), and ``C^T q'`` from the skew symmetry ``M' = C + C^T`` with ``M'`` by central finite
    differences along ``q'`` (physics, independent of the polarisation the method uses):
    ``C^T q' = M' q' - C q'``."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, dq = rng.uniform(-2.0, 2.0, 5), rng.uniform(-1.5, 1.5, 5)
        p, coriolis_t, g = true_model.momentum_terms(q, dq)
        np.testing.assert_allclose(p, true_model.mass_matrix(q) @ dq, atol=1e-12)
        np.testing.assert_allclose(g, true_model.gravity(q), atol=1e-12)
        h = 1e-6
        m_dot = (true_model.mass_matrix(q + h * dq) - true_model.mass_matrix(q - h * dq)) / (2 * h)
        np.testing.assert_allclose(coriolis_t, m_dot @ dq - true_model.coriolis_vector(q, dq), atol=1e-7)
