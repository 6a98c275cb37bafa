"""Issue 19, items 2, 4 and 8 and the velocity rule: nothing the controllers command drives a joint
beyond its velocity limit, an implausible joint state is a fault, a torque limit beyond the drives
is refused.

Core (pure, no ROS): the shaped PD + gravity goal and the velocity guard in closed loop with the
simulator at 1 kHz (realism on), the torque-limit refusal, the joint-state monitor. ROS: the PD
controller node against ``sim_node`` over DDS (in-process, domain 160, localhost only; the harness
of test_controller_nodes.py): a 2.3 rad goal and a second publisher of joint states.
"""
from __future__ import annotations

import dataclasses
import re
from contextlib import contextmanager

import numpy as np
import pytest
import yaml

from youbot_dynamics.contract.topics import JOINT_STATES, TRAJECTORY
from youbot_dynamics.arm.description import ArmDescription
from youbot_dynamics.control import JointStateMonitor
from youbot_dynamics.control.laws import GOAL_VELOCITY_FRACTION, ComputedTorqueController, PDGravityController
from youbot_dynamics.control.safety import STALL_VELOCITY, GuardState, SafetyConfig, SafetyGuard
from youbot_dynamics.control.terms import ModelTerms
from youbot_dynamics.control.trajectory import GoalArrival, JointTrajectory
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.nominal import nominal_model
from youbot_dynamics.sim import ArmSimulator, Realism
from youbot_dynamics.sim.config import load_sim_config
from conftest import ros_domain_id

HOME = np.array([2.9496, 1.1345, -2.5482, 1.7890, 2.9234])  # sim.home: the candle
# 2.3 rad on joints 1, 3 and 5 (the step), less where the limits are closer
FAR_STEP = np.array([2.3, 1.0, -2.3, 1.5, 2.3])


@pytest.fixture(scope="module")
def sim(arm):
    return ArmSimulator(arm, realism=True)


@pytest.fixture(scope="module")
def seed_sim(arm):
    """The simulated robot with seed 002's friction (no Stribeck, asymmetric or load-dependent
    friction) and the velocity not lagged, for the guard tests below that need it (each says why)."""
    return ArmSimulator(arm, realism=Realism(extra_friction=False, velocity_lag=False))


@pytest.fixture(scope="module")
def true_model(sim):
    return DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters)


def run(sim: ArmSimulator, guard: SafetyGuard, law, seconds: float, initial=None) -> tuple[np.ndarray, np.ndarray]:
    """Effort-mode loop at 1 kHz from the simulator's state: guard(law), command, step. Returns the
    true joint velocities and positions (k, n) after each step."""
    m = sim.measure()
    guard.enable(m.time, initial)
    velocities, positions = [], []
    for _ in range(int(round(seconds / sim.timestep))):
        m = sim.measure()
        tau = guard.command(m.time, m.time, m.position, m.velocity, law)
        assert tau is not None, guard.fault_reason
        sim.command("effort", tau)
        sim.step()
        velocities.append(sim.data.qvel.copy())
        positions.append(sim.data.qpos.copy())
    return np.array(velocities), np.array(positions)


# ---------------------------------------------------------------------------------------------
# Item 2: PD + gravity goals are shaped


def test_far_pd_goal_stays_below_the_velocity_limit_and_settles(arm, sim, true_model):
    """The issue's 2.3 rad step reached 9.6 rad/s (limit 1.57): now the reference moves at 70 %."""
    sim.reset(HOME)
    pd = PDGravityController(true_model, arm)
    pd.hold(HOME)
    goal = HOME + FAR_STEP
    duration = pd.set_goal(goal, 0.6)  # after the enable ramp
    v_ref = np.array([pd.reference(t)[1] for t in np.linspace(0.6, 0.6 + duration, 500)])
    velocities, positions = run(sim, SafetyGuard(arm, true_model), pd.torque, 0.6 + duration + 1.0,
                                pd.gravity(HOME))
    q_end = positions[-1]
    peak = np.abs(velocities).max(axis=0) / arm.velocity_max
    print(f"\nshaped PD goal {FAR_STEP.tolist()} rad: {duration:.2f} s, peak |q'| / velocity_max = "
          f"{np.round(peak, 3).tolist()}, final error {np.round(1e3 * (q_end - goal), 3).tolist()} mrad")
    assert np.all(np.abs(v_ref).max(axis=0) <= GOAL_VELOCITY_FRACTION * arm.velocity_max + 1e-9)
    assert np.all(peak <= 1.0)
    assert np.all(np.abs(q_end - goal) <= 1e-3)


def test_a_goal_replacing_a_moving_one_keeps_the_reference_continuous(arm, true_model):
    pd = PDGravityController(true_model, arm)
    pd.hold(HOME)
    pd.set_goal(HOME + FAR_STEP, 0.0)
    before = pd.reference(1.0)
    second = HOME - np.array([0.3, 0.5, -0.3, 0.2, 0.4])  # back against the motion
    duration = pd.set_goal(second, 1.0)
    after = pd.reference(1.0)
    for x, y in zip(before, after):
        np.testing.assert_allclose(x, y, atol=1e-12)
    samples = np.array([pd.reference(t)[1:] for t in np.linspace(1.0, 1.0 + duration, 2000)])
    assert np.all(np.abs(samples[:, 0]).max(axis=0) <= GOAL_VELOCITY_FRACTION * arm.velocity_max + 1e-3)
    assert np.all(np.abs(samples[:, 1]).max(axis=0) <= arm.acceleration_max + 1e-2)
    np.testing.assert_allclose(pd.reference(1.0 + duration)[0], second, atol=1e-9)
    np.testing.assert_array_equal(pd.goal, second)


# ---------------------------------------------------------------------------------------------
# The velocity guard: whatever the law commands


def test_velocity_guard_bounds_a_runaway_law(arm, seed_sim, true_model):
    """A law commanding 1000 N m on every joint (a wrong model, gains or goal) from mid-range, 3 s
    into the stops: the guard removes the torque that accelerates a joint beyond 0.9 x velocity_max
    and brakes it in time before each limit (without the braking speed the stop of joint 2 was hit
    at full speed, coupling joints 3 and 4 to 1.18 and 1.11 x velocity_max).

    On ``seed_sim``: on the full true robot, measured, joint 2's load-dependent friction (0.3 N m per
    N m carried) keeps it below 0.9 x velocity_max (0.72 x), and the guard, acting on the 10 ms
    lagged velocity, lets joints 1 and 3 reach 1.11 and 1.05 x velocity_max (beyond the 1.1 x the
    limit monitor allows)."""
    sim = seed_sim
    mid = 0.5 * (arm.position_min + arm.position_max)
    for sign in (1.0, -1.0):
        sim.reset(mid)
        guard = SafetyGuard(arm, true_model, SafetyConfig(ramp_time=0.0))
        velocities, positions = run(sim, guard, lambda t, q, dq: np.full(5, sign * 1e3), 3.0)
        peak = np.abs(velocities).max(axis=0) / arm.velocity_max
        beyond = np.maximum(positions - arm.position_max, arm.position_min - positions).max(axis=0)
        print(f"\nrunaway law ({sign:+.0f} 1000 N m): peak |q'| / velocity_max = {np.round(peak, 3).tolist()}, "
              f"largest position beyond a limit {np.round(1e3 * beyond, 2).tolist()} mrad")
        assert np.all(peak >= 0.9), "every joint reached the guard"
        assert np.all(peak <= 1.0)  # full reverse at velocity_max; the 10 % to the promised 1.1 x is for stalls
        assert np.all(beyond <= 1e-3)
        limit = arm.position_max if sign > 0 else arm.position_min
        assert np.all(np.abs(positions[-1] - limit) < 0.01)  # pushed to the limits, held there


def test_velocity_guard_equation_also_on_the_fault_hold(arm, true_model):
    # the velocity guard alone (the stall bound, tested below, would bound these torques further)
    guard = SafetyGuard(arm, true_model, SafetyConfig(ramp_time=0.0, fault_behaviour="hold", stall_time=0.0))
    q = HOME.copy()
    g = guard._terms.gravity(q)
    limit, d, v_max = guard.torque_limit, guard.limit_damping, arm.velocity_max
    guard.enable(0.0)
    # the zone is 0.9 ... 1.0 x v_max (b = 0.05 v_max): at 0.95 x at most gravity minus the damping of the excess
    edge = 0.95 * v_max
    tau = guard.command(0.0, 0.0, q, edge, lambda t, q, dq: np.full(5, 1e3))
    np.testing.assert_allclose(tau, g - d * 0.05 * v_max, atol=1e-9)
    # a torque that slows the joint is untouched (within saturation); below 0.9 x v_max nothing changes
    np.testing.assert_allclose(guard.command(0.0, 0.0, q, edge, lambda t, q, dq: -0.5 * limit), -0.5 * limit)
    slow = 0.89 * v_max
    np.testing.assert_allclose(guard.command(0.0, 0.0, q, slow, lambda t, q, dq: 0.5 * limit), 0.5 * limit)
    # halfway into the zone: half the saturation, half gravity, half the damping
    mid = 0.925 * v_max
    expected = np.minimum(0.5 * limit + 0.5 * g - 0.5 * d * 0.025 * v_max, limit)
    np.testing.assert_allclose(guard.command(0.0, 0.0, q, mid, lambda t, q, dq: np.full(5, 1e3)), expected)
    # at v_max: full reverse torque on top (saturated), whatever the law; halfway there half of it
    np.testing.assert_allclose(guard.command(0.0, 0.0, q, v_max, lambda t, q, dq: np.full(5, 1e3)),
                               np.maximum(g - d * 0.1 * v_max - limit, -limit), atol=1e-9)
    np.testing.assert_allclose(guard.command(0.0, 0.0, q, 0.975 * v_max, lambda t, q, dq: np.full(5, 1e3)),
                               np.maximum(g - d * 0.075 * v_max - 0.5 * limit, -limit), atol=1e-9)
    # near a limit the guard speed is the braking speed sqrt(2 (2 a_max) s): 0.566 rad/s at 20 mrad
    # from the upper limit of joint 2 (a_max 4 rad/s^2): 1.0 rad/s towards it is full reverse torque
    near = q.copy()
    near[1] = arm.position_max[1] - 0.02
    toward = np.r_[0.0, 1.0, 0.0, 0.0, 0.0]
    tau = guard.command(0.0, 0.0, near, toward, lambda t, q, dq: np.zeros(5))
    assert tau[1] == -limit[1] and np.all(tau[[0, 2, 3, 4]] == 0.0)
    away = -toward  # away from it: untouched
    assert np.all(guard.command(0.0, 0.0, near, away, lambda t, q, dq: np.zeros(5)) == 0.0)
    # the fault hold is bounded the same way
    guard.command(0.0, 0.0, q, np.zeros(5), lambda t, q, dq: np.full(5, np.nan))
    assert guard.state is GuardState.FAULT
    far = q - 1.0  # the hold pulls towards +: at 0.95 x v_max only gravity and damping are left
    tau = guard.command(0.0, 0.0, far, edge, lambda t, q, dq: np.zeros(5))
    np.testing.assert_allclose(tau, guard._terms.gravity(far) - d * 0.05 * v_max, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# The stall bound: a controller that stalls (a busy machine) leaves the drives its last torque


def test_stall_bound_equation(arm, true_model):
    """The torque beyond the friction band around the model's unaccelerated torque ``C q' + G + fv q'
    + f0 +- fc`` accelerates the arm by ``a = M^-1 e``; after the guard every ``a_j`` lies within
    ``(-+0.95 velocity_max_j - q'_j) / stall_time`` (a runaway law's 1000 N m on every joint), and a torque
    whose accelerations already do is untouched, however much of it couples the joints (what the
    per-joint bound before clipped: the torque keeping the wrist on its path while the upper arm
    accelerates)."""
    config = SafetyConfig(ramp_time=0.0, stall_time=0.1)
    guard = SafetyGuard(arm, true_model, config)
    terms = guard._terms
    assert np.all(terms.coulomb > 0)
    rng = np.random.default_rng(5)
    q_samples = rng.uniform(arm.position_min + 0.3, arm.position_max - 0.3, (50, 5))
    guard.enable(0.0)
    checked = untouched = 0

    def acceleration(q, dq, tau):
        unaccelerated = true_model.coriolis_vector(q, dq) + true_model.gravity(q) + terms.viscous * dq + terms.offset
        excess = tau - np.clip(tau, unaccelerated - terms.coulomb, unaccelerated + terms.coulomb)
        return np.linalg.solve(true_model.mass_matrix(q), excess), unaccelerated

    for q in q_samples:
        for fraction in (0.0, 0.4, -0.7):
            dq = fraction * arm.velocity_max * rng.uniform(0.5, 1.0, 5)
            low = (-STALL_VELOCITY * arm.velocity_max - dq) / config.stall_time
            high = (STALL_VELOCITY * arm.velocity_max - dq) / config.stall_time
            for push in (1e3, -1e3):
                tau = guard.command(0.0, 0.0, q, dq, lambda t, q_, dq_: np.full(5, push))
                assert np.all(np.abs(tau) <= guard.torque_limit + 1e-12)
                if np.any(np.abs(tau) >= guard.torque_limit - 1e-9):
                    continue  # saturation decides
                a, _ = acceleration(q, dq, tau)
                tolerance = 1e-6 * (high - low)
                assert np.all(a >= low - tolerance) and np.all(a <= high + tolerance), (a, low, high)
                assert np.any(np.isclose(a, high if push > 0 else low, rtol=1e-6, atol=1e-9))  # it binds
                checked += 1
            # inside the bound: accelerations within 90 % of it, each joint beyond its friction band
            wanted = rng.uniform(0.9 * low, 0.9 * high)
            _, unaccelerated = acceleration(q, dq, np.zeros(5))
            coupled = true_model.mass_matrix(q) @ wanted
            tau = unaccelerated + coupled + np.sign(coupled) * terms.coulomb
            if np.all(np.abs(tau) < guard.torque_limit):
                np.testing.assert_allclose(guard.command(0.0, 0.0, q, dq, lambda t, q_, dq_: tau), tau,
                                           rtol=1e-9, atol=1e-9)
                untouched += 1
    print(f"\nstall bound: {checked} runaway torques bounded, {untouched} torques inside it untouched")
    assert checked > 50 and untouched > 20
    # a small torque is untouched
    q, dq = HOME, 0.2 * arm.velocity_max
    terms = guard._terms  # inside the friction band around the torque that keeps the state unaccelerated
    small = true_model.coriolis_vector(q, dq) + true_model.gravity(q) + terms.viscous * dq + terms.offset + 0.01
    np.testing.assert_allclose(guard.command(0.0, 0.0, q, dq, lambda t, q_, dq_: small), small)


def stalled_peak(sim: ArmSimulator, tau: np.ndarray, duration: float) -> np.ndarray:
    """The largest |q'| per joint while ``sim`` runs ``duration`` s on the one torque ``tau`` (a
    controller that stalls: the drives keep its last command)."""
    peak = np.zeros(sim.n_joints)
    for _ in range(int(round(duration / sim.timestep))):
        sim.command("effort", tau)
        sim.step()
        peak = np.maximum(peak, np.abs(sim.data.qvel))
    return peak


@pytest.mark.parametrize("fraction", [0.0, 0.6, 0.85, -0.85])
def test_a_stalled_controller_torque_keeps_the_arm_within_velocity_max(arm, seed_sim, true_model, fraction):
    """A runaway law (1000 N m on every joint, in the direction of motion) at one state, then the
    controller stalls: the drives keep that torque for ``stall_time`` (0.1 s) in the simulator. No
    joint passes velocity_max (without the stall bound: 1.6-4.9 x velocity_max). On ``seed_sim``:
    the state is set by writing the velocity, which a lagged velocity estimate would not report."""
    sim = seed_sim
    guard = SafetyGuard(arm, true_model, SafetyConfig(ramp_time=0.0, stall_time=0.1))
    mid = 0.5 * (arm.position_min + arm.position_max)
    sim.reset(mid)
    v0 = fraction * arm.velocity_max
    sim.data.qvel[:] = v0
    m = sim.measure()
    guard.enable(m.time)
    push = np.sign(fraction) if fraction else 1.0
    tau = guard.command(m.time, m.time, m.position, m.velocity, lambda t, q, dq: np.full(5, push * 1e3))
    ratio = stalled_peak(sim, tau, 0.1) / arm.velocity_max  # 0.1 s at 1 kHz on the same torque
    print(f"\nstalled 0.1 s on the torque of a runaway law from {fraction:+.2f} x velocity_max: "
          f"peak {np.round(ratio, 3).tolist()} x velocity_max")
    # measured at most 1.021 x (the model changes over the stall: the bound aims at 0.95 x)
    assert np.all(ratio <= 1.05)


def test_computed_torque_on_late_joint_states_keeps_within_the_limits(arm, seed_sim, true_model):
    """What failed the main job in a loaded CI run (three joints at 1.106-1.109 x velocity_max,
    tracking errors of 0.2 rad, p99 latency 41 ms): computed torque at 40 rad/s acting on joint
    states 30 ms old, tracking the demo's stroke at 0.8 x velocity_max. The delay makes the loop
    unstable; the guard, on the same late states, must keep every joint within 1.1 x velocity_max
    (without the stall bound: 1.6-3.0 x). On ``seed_sim``: the states are exactly 30 ms late (the
    10 ms velocity lag of the full true robot would add to it)."""
    from youbot_dynamics.control.laws import ComputedTorqueController
    from youbot_dynamics.control.trajectory import JointTrajectory

    sim = seed_sim
    stroke, segment, delay = np.array([0.7, -0.7, 0.7, -0.7, 0.7]), 1.05, 30  # [rad], [s], [cycles]
    sim.reset(HOME)
    ct = ComputedTorqueController(true_model, arm)
    ct.follow(JointTrajectory.through(HOME, [segment, 2 * segment], [HOME + stroke, HOME]), 0.1)
    guard = SafetyGuard(arm, true_model, SafetyConfig(ramp_time=0.0))
    guard.enable(sim.time, ct.gravity(HOME))
    history, peak = [], np.zeros(5)
    for _ in range(2600):
        m = sim.measure()
        history.append(m)
        late = history[max(0, len(history) - 1 - delay)]
        tau = guard.command(m.time, late.time + 1e-3 * delay, late.position, late.velocity,
                            lambda t, q, dq: ct.torque(late.time, q, dq))
        assert tau is not None, guard.fault_reason
        sim.command("effort", tau)
        sim.step()
        peak = np.maximum(peak, np.abs(sim.data.qvel))
    ratio = peak / arm.velocity_max
    print(f"\ncomputed torque on 30 ms old states: peak {np.round(ratio, 3).tolist()} x velocity_max")
    assert np.all(ratio <= 1.1)


# The breakaway credit: static friction the model does not know (its data left fc ~ 0)

WRIST_FRICTION = np.array([1.0, 1.0, 0.6, 0.45, 0.4])  # fc [N m]: joints 4-5 beyond the stall bound's own reach
STRIBECK_DIP = np.array([0.4, 0.4, 0.25, 0.2, 0.15])  # fs [N m] of a wrist whose friction drops to 56-57 %


def dry_wrist(arm: ArmDescription, realism, coulomb: np.ndarray = WRIST_FRICTION, stribeck: np.ndarray | None = None
              ) -> tuple[ArmSimulator, DynamicModel]:
    """A simulated robot with the Coulomb levels ``coulomb`` (and Stribeck excess ``stribeck``, default
    the simulator's) and its true model with ``fc4 = fc5 = 0`` (what identification data that barely
    move the wrist leave). The stall bound's own reach at rest, ``M_eff 0.95 velocity_max /
    stall_time``, is 0.32 / 0.29 N m on joints 4 / 5 at the candle."""
    config = load_sim_config(arm=arm)
    config = dataclasses.replace(config, coulomb_friction=coulomb,
                                 stribeck_friction=config.stribeck_friction if stribeck is None else stribeck)
    sim = ArmSimulator(arm, config, realism=realism)
    chi = np.array(sim.true_parameters, dtype=float)
    chi[[3 * 14 + 12, 4 * 14 + 12]] = 0.0  # joints 4, 5: Ia, fv, fc, f0 are columns 10-13 of 14
    return sim, DynamicModel.from_standard(DHChain.from_arm(sim.arm), chi)


@pytest.mark.parametrize("realism, coulomb", [("dry", WRIST_FRICTION), ("full", np.array([1.0, 1.0, 0.6, 0.35, 0.35]))])
def test_computed_torque_breaks_the_wrist_away_when_the_model_misses_its_friction(arm, realism, coulomb):
    """Issue 46 item 5: with the model's wrist Coulomb levels at zero, the stall bound allowed joints
    4-5 only ``M_eff reach`` beyond the model's torque at rest and the integral action none: they barely
    moved (on the issue's 0.7 rad stroke on the full true robot, fc4 = fc5 = 0 in the model: 409 / 44
    mrad RMS, now 6.9 / 1.2).
    The guard now credits the resistance each joint shows and the integral takes up to the breakaway
    allowance: out and back by 0.5 rad (joints 4, 5 opposite) in 1.05 s segments. Measured (dry: fc
    0.45 / 0.4 N m only; full: fc 0.35 / 0.35 N m with the simulator's Stribeck and load-dependent
    friction and 10 ms velocity lag): 28.4 / 9.8 and 11.2 / 7.4 mrad RMS (without the credit and with
    the integral capped at the model's fc, as before: 292 / 277 on both), within 0.71 x velocity_max."""
    sim, model = dry_wrist(arm, Realism(extra_friction=False, velocity_lag=False) if realism == "dry" else True,
                           coulomb)
    sim.reset(HOME)
    ct = ComputedTorqueController(model, arm)
    ct.hold(HOME)
    stroke, segment, start = np.array([0.0, 0.0, 0.0, 0.5, -0.5]), 1.05, 0.6
    ct.follow(JointTrajectory.through(HOME, [segment, 2 * segment], [HOME + stroke, HOME]), start)
    guard = SafetyGuard(arm, model)
    guard.enable(sim.time, ct.gravity(HOME))
    errors, peak = [], np.zeros(5)
    for _ in range(int(round((start + 2 * segment + 0.3) / sim.timestep))):
        m = sim.measure()
        tau = guard.command(m.time, m.time, m.position, m.velocity, ct.torque)
        assert tau is not None, guard.fault_reason
        sim.command("effort", tau)
        sim.step()
        peak = np.maximum(peak, np.abs(sim.data.qvel))
        if m.time >= start:
            errors.append(ct.reference(m.time)[0] - m.position)
    rms = np.sqrt(np.mean(np.square(errors), axis=0))
    print(f"\ncomputed torque, wrist friction unknown to the model ({realism}): RMS error "
          f"{np.round(1e3 * rms, 2).tolist()} mrad, peak {np.round(peak / arm.velocity_max, 3).tolist()} x "
          "velocity_max")
    assert np.all(rms[3:] <= 0.04)  # 7-40 x below the old failure
    assert np.all(peak <= arm.velocity_max)


@pytest.mark.parametrize("joint", [3, 4])
def test_a_stall_just_after_a_breakaway_keeps_the_joint_within_velocity_max(arm, joint):
    """The credit's premise (module docstring of control.safety): a joint that breaks away from static
    friction ``f_s`` keeps at least ``r_s f_s`` (0.5) while it slides. The worst case: a law raises a
    wrist joint's torque slowly (0.5 N m/s) to 90 % of its breakaway level ``fc + fs`` and holds it, so
    that the guard has measured nearly all of ``f_s``; then it asks the torque limit and the controller
    stalls for ``stall_time`` on the first bounded torque. On the full true robot with a wrist whose
    friction drops to 56-57 % of its breakaway level once it slides (the model's fc4 = fc5 = 0): the
    joint breaks away and stays within the bound's aim, 0.95 x velocity_max (measured 0.33 / 0.63 x on
    joints 4 / 5; crediting ``f_s`` itself, ``r_s = 1``: 0.91 / 1.00 x)."""
    sim, model = dry_wrist(arm, True, np.array([1.0, 1.0, 0.6, 0.25, 0.2]), STRIBECK_DIP)
    terms = ModelTerms(model)
    unit = np.zeros(5)
    unit[joint] = 1.0 if joint == 3 else -1.0
    sim.reset(HOME, hold=True)
    sim.step(100)
    breakaway = None
    while breakaway is None:  # the breakaway torque: a ramp of 0.5 N m/s without the guard
        m = sim.measure()
        sim.command("effort", terms.gravity(m.position) + 0.5 * m.time * unit)
        sim.step()
        if abs(m.velocity[joint]) > 0.05:
            breakaway = 0.5 * m.time
    level = 0.9 * breakaway
    sim.reset(HOME, hold=True)
    sim.step(100)
    guard = SafetyGuard(arm, model, SafetyConfig(ramp_time=0.0))
    guard.enable(sim.time)
    t0 = sim.time
    for _ in range(int(round((level / 0.5 + 0.3) / sim.timestep))):
        m = sim.measure()
        push = min(0.5 * (m.time - t0), level)
        tau = guard.command(m.time, m.time, m.position, m.velocity, lambda t, q, dq: terms.gravity(q) + push * unit)
        sim.command("effort", tau)
        sim.step()
    assert abs(sim.data.qvel[joint]) < 0.05  # held (the simulated dry friction creeps, joint 5 at 0.04 rad/s)
    m = sim.measure()
    tau = guard.command(m.time, m.time, m.position, m.velocity,
                        lambda t, q, dq: terms.gravity(q) + arm.torque_limit * unit)
    peak = stalled_peak(sim, tau, 0.1)  # the stall: the drives keep the last torque
    ratio = peak / arm.velocity_max
    print(f"\n{arm.joint_names[joint]} breaks away at {breakaway:.3f} N m, held at 90 %, then a law at the "
          f"torque limit stalled 0.1 s: torque {tau[joint]:.3f} N m, peak {np.round(ratio, 3).tolist()} x velocity_max")
    assert peak[joint] > 0.2 * arm.velocity_max[joint]  # it broke away
    assert np.all(ratio <= STALL_VELOCITY)  # the bound's aim


def pd_goal_on_the_wrist(arm: ArmDescription, sim: ArmSimulator, model: DynamicModel) -> tuple[tuple, np.ndarray]:
    """PD + gravity on ``model`` moves joint 4 up by 0.5 rad from the candle through the guard, as the
    controller node does (:class:`~youbot_dynamics.control.trajectory.GoalArrival` judged with the guard's
    :meth:`~youbot_dynamics.control.safety.SafetyGuard.limit_reason`): the verdict and the peak effort."""
    sim.reset(HOME, hold=True)
    sim.step(200)
    pd = PDGravityController(model, arm)
    q0 = sim.measure().position
    pd.hold(q0)
    guard = SafetyGuard(arm, model)
    guard.enable(sim.time, pd.gravity(q0))
    goal = q0 + np.array([0.0, 0.0, 0.0, 0.5, 0.0])
    arrival = GoalArrival(goal, sim.time, pd.set_goal(goal, sim.time), pd.kp, guard.torque_limit, arm.joint_names)
    peak = np.zeros(5)
    for _ in range(int(round(4.0 / sim.timestep))):
        m = sim.measure()
        tau = guard.command(m.time, m.time, m.position, m.velocity, pd.torque)
        peak = np.maximum(peak, np.abs(tau))
        verdict = arrival.verdict(m.time, m.position, m.velocity, guard.limit_reason)
        if verdict is not None:
            return verdict, peak
        sim.command("effort", tau)
        sim.step()
    raise AssertionError("no verdict in 4 s")


def test_pd_gravity_on_the_nominal_model_lifts_the_wrist(arm, sim):
    """Issue 48 item 3: PD + gravity with the nominal model (no friction) could not move joint 4 up by
    0.5 rad on the simulated robot: the stall bound held its effort at 0.34 N m (its breakaway torque
    is higher). With the breakaway credit it gets there (measured: reached in 0.88 s, 6 mrad)."""
    verdict, peak = pd_goal_on_the_wrist(arm, sim, nominal_model(arm)[0])
    print(f"\nPD + gravity, nominal model, joint 4 +0.5 rad: {verdict[1]}; peak effort {np.round(peak, 3).tolist()} "
          "N m")
    assert verdict[0], verdict[1]


def test_a_goal_not_reached_names_the_bound_that_limited_the_torque(arm):
    """The verdict on a joint held back said 'the PD torque is saturated at 2.7 N m there' while the
    effort published peaked at 0.39 N m: the stall bound had limited it, not the torque limit. Joint 4
    with 2.5 N m of dry friction (beyond what the guard lets a law break away) and the nominal model:
    the verdict names the stall bound and the torque it let through."""
    config = dataclasses.replace(load_sim_config(arm=arm), coulomb_friction=np.array([1.0, 1.0, 0.6, 2.5, 0.1]))
    verdict, peak = pd_goal_on_the_wrist(arm, ArmSimulator(arm, config, realism=True), nominal_model(arm)[0])
    print(f"\n{verdict[1]}; peak effort {np.round(peak, 3).tolist()} N m")
    assert not verdict[0]
    assert "arm_joint_4" in verdict[1] and "stall bound" in verdict[1], verdict[1]
    published = float(re.search(r"stall bound \(stall_time 0\.1 s\): ([0-9.]+) N m of", verdict[1]).group(1))
    assert abs(published) < 2.7 and abs(published - peak[3]) < 0.2 * peak[3], (published, peak)
    assert "saturated" not in verdict[1]


# ---------------------------------------------------------------------------------------------
# Item 8: a torque limit beyond the drives


def test_torque_limit_above_the_drives_is_refused(arm, true_model):
    with pytest.raises(ValueError, match=r"torque_limit of arm_joint_1 = 1000 N m exceeds the drives' limit "
                                         r"min\(effort_max, drive_torque_limit\) = 17 N m"):
        SafetyGuard(arm, true_model, SafetyConfig(torque_limit=[1000.0]))
    with pytest.raises(ValueError, match=r"torque_limit of arm_joint_5 = 1.5 N m .* = 1 N m"):
        SafetyGuard(arm, true_model, SafetyConfig(torque_limit=[17.0, 17.0, 8.0, 2.7, 1.5]))
    drives = np.minimum(arm.effort_max, arm.drive_torque_limit)
    np.testing.assert_array_equal(SafetyGuard(arm, true_model, SafetyConfig(torque_limit=drives)).torque_limit, drives)
    np.testing.assert_array_equal(SafetyGuard(arm, true_model, SafetyConfig(torque_limit=0.5)).torque_limit,
                                  np.full(5, 0.5))


# ---------------------------------------------------------------------------------------------
# Item 4: joint states are judged


def stream(arm, seconds: float = 2.0, rate: float = 1000.0, seed: int = 0):
    """Stamps and positions of a 1 kHz publisher of a motion at the velocity limit (every joint
    reversing), with stamp jitter of +-0.1 ms, quantization and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, seconds, 1.0 / rate) + rng.uniform(-1e-4, 1e-4, int(seconds * rate))
    t[0] = 0.0
    q = HOME + np.sin(np.outer(t, arm.velocity_max)) + rng.normal(0.0, 2e-4, (t.size, arm.n_joints))
    return 1.8e9 + t, q  # epoch-like stamps


def test_monitor_accepts_a_normal_stream_with_drops_and_bursts(arm):
    t, q = stream(arm)
    monitor = JointStateMonitor(arm)
    # what a loaded subscriber with depth 1 sees: random states dropped, any arrival pattern
    keep = np.random.default_rng(1).uniform(size=t.size) > 0.3
    keep[:200:7] = False
    problems = [monitor.check(tk, qk) for tk, qk in zip(t[keep], q[keep])]
    assert problems == [None] * int(keep.sum())
    # a gap of 40 ms in the stamps (a stalled publisher) with the matching motion
    monitor.reset()
    assert monitor.check(t[0], q[0]) is None and monitor.check(t[40], q[40]) is None


def test_monitor_faults_on_a_jump_a_far_state_and_interleaved_stamps(arm):
    t, q = stream(arm, 0.1)
    monitor = JointStateMonitor(arm)
    for k in range(50):
        assert monitor.check(t[k], q[k]) is None
    wrong = q[50].copy()
    wrong[2] += 0.05  # one finite but wrong state: 50 mrad in 1 ms
    reason = monitor.check(t[50], wrong)
    assert reason is not None and reason.startswith("arm_joint_3 jumped 0.05") and "second publisher" in reason
    assert monitor.check(t[51], wrong) is not None  # again: judged against the last accepted state, not the wrong one
    assert monitor.check(t[52], q[52]) is None  # and back
    # far from the last one: another arm's state after a gap of 10 s in the stamps
    reason = monitor.check(t[52] + 10.0, q[52] + np.array([0.0, 0.0, 0.0, 0.3, 0.0]))
    assert reason is not None and "arm_joint_4 jumped 0.3" in reason and "at most 0.1985" in reason
    assert monitor.check(t[52] + 10.001, q[52] + np.array([0.0, 0.0, 0.0, 0.3, 0.0])) is not None  # and stays refused
    monitor.anchor(t[52] + 10.002, q[52] + np.array([0.0, 0.0, 0.0, 0.3, 0.0]))  # until taken as the arm's
    assert monitor.check(t[52] + 10.003, q[52] + np.array([0.0, 0.0, 0.0, 0.3, 0.0])) is None
    # a second publisher: the same pose, its own (older) clock, interleaving
    monitor = JointStateMonitor(arm)
    second = t - 5.0
    reasons = [monitor.check(stamp, q[k]) for k in range(20) for stamp in (t[k], second[k])]
    assert reasons[0] is None and all(r is not None and r.startswith("joint state stamps not increasing")
                                      for r in reasons[1::2])
    # NaN states are left to the guard, not judged
    assert monitor.check(t[30], np.full(5, np.nan)) is None


def test_guard_fault_from_outside_only_while_enabled(arm, true_model):
    guard = SafetyGuard(arm, true_model, SafetyConfig(ramp_time=0.0))
    guard.fault("a second publisher")
    assert guard.state is GuardState.DISABLED and guard.fault_reason is None
    guard.enable(0.0)
    guard.fault("a second publisher")
    assert guard.state is GuardState.FAULT and guard.fault_reason == "a second publisher"
    assert guard.command(0.0, 0.0, HOME, np.zeros(5), lambda t, q, dq: np.ones(5)) is None  # zero effort


# ---------------------------------------------------------------------------------------------
# Over DDS: the PD controller node against sim_node (in-process, domain 160)

ROS_DOMAIN = ros_domain_id(__file__)


@pytest.fixture(scope="module")
def ros(tmp_path_factory):
    """The harness of test_controller_nodes.py (sim_node and a tester on one executor) in domain 160."""
    pytest.importorskip("rclpy")
    from conftest import local_ros_domain
    with local_ros_domain(ROS_DOMAIN):
        from test_controller_nodes import Harness
        from youbot_dynamics.sim.simulator import REALISM_EFFECTS
        # without the extra friction of the true robot (Stribeck excess, load-dependent): its
        # static friction holds the arm at Q_START with the motors off, and the fall test below
        # needs the arm to fall
        effects = [e for e in REALISM_EFFECTS if e != "extra_friction"]
        h = Harness(tmp_path_factory.mktemp("model") / "true_model.yaml", {"realism_effects": effects})
        yield h
        h.close()


# This process shares one executor between the simulator's command subscription, the controller
# and the tester: on a loaded machine the effort commands reach the simulator up to ~20 ms late,
# which the default PD gains (wrist joints 100-150 rad/s) do not tolerate (oscillations up to
# 2.6 x velocity_max, measured); gains of 20 rad/s do (their own process has no such delay).
MODEST_GAINS = {"bandwidth": 20.0, "static_accuracy": 0.01}


@contextmanager
def peak_speed(h):
    """The peak |q'| (n,) of every state the simulator measures inside the block (taken in its
    physics thread: recording 1 kHz over DDS in this shared process would load it)."""
    peak = np.zeros(5)
    publish_state = h.sim._publish_state

    def measured(m, *args) -> None:
        np.maximum(peak, np.abs(m.velocity), out=peak)
        publish_state(m, *args)

    h.sim._publish_state = measured
    try:
        yield peak
    finally:
        h.sim._publish_state = publish_state


@pytest.fixture
def pd_node(ros, request):
    from test_controller_nodes import TOLERANT, Controller
    from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode
    ros.reset_sim()
    # state_timeout 0.5 s: a shared test process
    c = Controller(ros, PDGravityControllerNode, **TOLERANT, **getattr(request, "param", {}))
    yield c
    c.close()
    ros.forget()
    # a test may leave the arm to fall (zero effort after a fault of untrusted states): the next
    # test of this module may not use the simulator but runs with it, so the drives hold it
    ros.reset_sim()


@pytest.mark.ros
@pytest.mark.timeout(120)
@pytest.mark.parametrize("pd_node", [MODEST_GAINS], indirect=True)
def test_pd_node_far_goal_measured_velocity_within_the_limit(pd_node):
    from sensor_msgs.msg import JointState
    from test_controller_nodes import Q_START, enable
    c, h = pd_node, pd_node.h
    enable(c)
    goal = Q_START + np.array([2.3, 0.5, -2.3, 1.0, 2.3])
    with peak_speed(h) as peak:
        c.publish("goal", JointState(name=list(h.arm.joint_names), position=goal.tolist()))
        accepted = c.wait_status("goal accepted")
        assert h.spin_until(lambda: np.abs(c.q() - goal).max() < 0.02, timeout=15.0), \
            (c.q() - goal, c.node.guard.fault_reason)
    peak = peak / h.arm.velocity_max
    print(f"\nPD node, goal {np.round(goal - Q_START, 2).tolist()} rad from the start: {accepted}; peak measured "
          f"|q'| / velocity_max = {np.round(peak, 3).tolist()}")
    assert "arrive in 3.9" in accepted
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason
    assert np.all(peak <= 1.1) and np.all(peak[[0, 2, 4]] >= 0.6)  # the profile ran at 0.7 x the limit


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_second_joint_state_publisher_on_the_graph_refuses_enable_and_faults(pd_node):
    """A second publisher at the same pose on the same clock (two simulators started together):
    its states continue the arm's, so only the ROS graph reveals it."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from test_controller_nodes import COMMANDS, Q_START, enable
    c, h = pd_node, pd_node.h
    commands = h.record(Float64MultiArray, COMMANDS)
    enable(c)  # one publisher (the simulator): enabled
    import rclpy
    second = rclpy.create_node("second_arm_driver", context=h.context)  # publishes nothing: it is there
    publisher = second.create_publisher(JointState, JOINT_STATES, 10)
    c.status.clear()
    reason = c.wait_status("fault", timeout=5.0)
    print(f"\nsecond publisher appears while enabled: {reason}")
    assert "2 publishers of /joint_states (/second_arm_driver, /sim_node)" in reason
    assert c.node.guard.state is GuardState.FAULT
    h.spin_for(0.05)
    assert not np.any(commands[-1][1].data)  # zero effort
    h.hold_with_drives(Q_START)
    response = c.set_enabled(True)
    print(f"enable with two publishers: {response.message}")
    assert not response.success and "2 publishers of /joint_states" in response.message
    assert c.node.guard.state is GuardState.FAULT
    second.destroy_publisher(publisher)
    second.destroy_node()
    assert h.spin_until(lambda: c.node.state_publishers.problem() is None, timeout=5.0)
    enable(c)  # the second one is gone: enabled again


def test_a_publisher_of_an_unknown_node_is_named_in_words():
    """rmw names a publisher whose node it has not discovered '_NODE_NAME_UNKNOWN_' (the fault showed it)."""
    pytest.importorskip("rclpy")
    from types import SimpleNamespace

    from youbot_dynamics.nodes.joint_state_publishers import UNKNOWN_NODE, JointStatePublishers

    infos = [SimpleNamespace(node_name="sim_node", node_namespace="/", endpoint_gid=[1] * 16),
             SimpleNamespace(node_name=UNKNOWN_NODE, node_namespace="_NODE_NAMESPACE_UNKNOWN_",
                             endpoint_gid=[0xab] * 16)]
    node = SimpleNamespace(get_publishers_info_by_topic=lambda topic: infos)
    reason = JointStatePublishers(node, JOINT_STATES, 1).problem()
    assert UNKNOWN_NODE not in reason and "UNKNOWN" not in reason, reason
    assert "/sim_node" in reason and "an unknown node (not discovered yet, or not a ROS node; gid abababab" in reason


@pytest.mark.ros
@pytest.mark.timeout(120)
@pytest.mark.parametrize("pd_node", [{"joint_state_publishers_max": 2}], indirect=True)
def test_second_joint_state_publisher_faults_with_the_reason(pd_node):
    """With the graph check relaxed (2 publishers allowed), the states themselves give away a
    second arm or clock."""
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, Header
    from test_controller_nodes import COMMANDS, enable
    c, h = pd_node, pd_node.h
    second = h.publisher(JointState, JOINT_STATES)  # before enabling: creating it stalls this process
    commands = h.record(Float64MultiArray, COMMANDS)
    names = list(h.arm.joint_names)

    def publish(q, stamp: Time) -> None:
        second.publish(JointState(header=Header(stamp=stamp), name=names, position=list(map(float, q)),
                                  velocity=[0.0] * 5))

    # another simulator at the same pose on its own clock (sim time from 0): stamps interleave
    enable(c)
    c.status.clear()
    for k in range(5):
        publish(c.q(), Time(sec=1, nanosec=k * 1000000))
        h.spin_for(0.01)
    reason = c.wait_status("fault")
    print(f"\nsecond publisher, own clock: {reason}")
    assert "stamps not increasing" in reason and "second publisher" in reason
    assert c.node.guard.state is GuardState.FAULT
    h.spin_for(0.05)
    assert not np.any(commands[-1][1].data)  # zero effort
    # another arm on the same clock: its states jump
    enable(c)
    c.status.clear()
    mine = c.q()
    other = mine + np.array([0.0, 0.0, -0.5, 0.0, 0.0])
    for _ in range(5):
        publish(other, h.tester.get_clock().now().to_msg())
        h.spin_for(0.01)
    reason = c.wait_status("fault")
    print(f"second publisher, another arm: {reason}")
    assert "arm_joint_3 jumped" in reason and "second publisher" in reason
    h.spin_for(0.05)
    assert c.node.guard.state is GuardState.FAULT and not np.any(commands[-1][1].data)
    # handed to the drives where this arm is, not where the other one is (it braked towards the
    # other arm's pose before: a 0.5 rad jump, refused by the simulator, and the arm fell)
    released = c.wait_status("released to the drives on")
    at = np.array(yaml.safe_load(released.split(" at ")[-1].split(", held")[0]))
    print(f"released: {released}")
    np.testing.assert_allclose(at, mine, atol=0.05)


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_controller_node_refuses_a_torque_limit_beyond_the_drives(ros):
    """Item 8: ``torque_limit: [1000.0]`` was accepted silently; now start-up fails with the reason
    (the executables log it and exit 1, see run())."""
    from rclpy.parameter import Parameter
    from youbot_dynamics.nodes.computed_torque_controller import ComputedTorqueControllerNode
    from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode
    for cls in (PDGravityControllerNode, ComputedTorqueControllerNode):
        with pytest.raises(ValueError, match=r"torque_limit of arm_joint_1 = 1000 N m exceeds the drives' limit"):
            cls(context=ros.context, parameter_overrides=[Parameter("model_file", value=str(ros.model_file)),
                                                          Parameter("torque_limit", value=[1000.0])])


def test_hold_after_an_implausible_state_has_no_feedback(arm, true_model):
    """Fault behaviour 'hold' after a second publisher: the states are not the arm's, so the hold is
    G(q_h) at the last good position (a PD on another arm's state would push at full torque)."""
    guard = SafetyGuard(arm, true_model, SafetyConfig(ramp_time=0.0, fault_behaviour="hold"))
    guard.enable(0.0)
    guard.command(0.0, 0.0, HOME, np.zeros(5), lambda t, q, dq: np.zeros(5))  # the last good state
    guard.fault("arm_joint_3 jumped 0.5 rad", trust_states=False)
    other = HOME + np.array([0.0, 0.0, 0.5, 0.0, 0.0])
    tau = guard.command(0.001, 0.001, other, np.zeros(5), lambda t, q, dq: np.zeros(5))
    np.testing.assert_allclose(tau, guard._terms.gravity(HOME), atol=1e-12)
    guard.enable(0.1)  # trusted again
    guard.command(0.1, 0.1, HOME, np.zeros(5), lambda t, q, dq: np.zeros(5))
    guard.fault("stale")
    tau = guard.command(0.101, 0.101, other, np.zeros(5), lambda t, q, dq: np.zeros(5))
    assert abs(tau[2] - guard._terms.gravity(other)[2]) > 1.0  # the PD hold pulls joint 3 back


# -- letting go of the arm: the release to the drives -------------------------------------------


def _let_go_and_watch(c, h, let_go, seconds: float = 1.5):
    """Enable at Q_START, ``let_go()``, then watch the true arm for ``seconds``: the largest
    distance from where it was let go and the peak speed (measured in the simulator's thread)."""
    from test_controller_nodes import enable
    enable(c)
    q0 = h.sim.sim.data.qpos.copy()
    with peak_speed(h) as peak:
        let_go()
        h.spin_for(seconds)
    return np.abs(h.sim.sim.data.qpos - q0).max(), peak


@pytest.mark.ros
@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["disable", "shutdown", "fault"])
def test_letting_go_hands_the_arm_to_the_drives(pd_node, how):
    """Disable, shutdown and a fault with zero effort (default fault_behaviour): the arm, leaning
    forward under gravity, is handed to the drives' trajectory interface and stays put (zero
    torque alone would drop it onto its stops: the test below)."""
    from test_controller_nodes import COMMANDS
    from std_msgs.msg import Float64MultiArray
    c, h = pd_node, pd_node.h
    commands = h.record(Float64MultiArray, COMMANDS)
    actions = {"disable": lambda: c.set_enabled(False),
               "shutdown": c.node.stop_commanding,
               "fault": lambda: c.node.guard.fault("a test fault")}
    moved, peak = _let_go_and_watch(c, h, actions[how])
    status = c.wait_status("released to the drives on")
    print(f"\n{how}: {status}; the arm moved {1e3 * moved:.2f} mrad, peak |q'| {np.round(peak, 3).tolist()} rad/s")
    assert TRAJECTORY in status
    assert h.sim.sim.mode == "trajectory"  # the drives hold it (no timeout)
    assert moved < 5e-3 and np.all(peak < 0.2)
    assert not np.any(commands[-1][1].data)  # the last effort command was zero
    zeros = [m for t, m in commands if not np.any(m.data)]
    assert len(zeros) == 1  # one zero effort before the release, none after it


@pytest.mark.ros
@pytest.mark.timeout(120)
@pytest.mark.parametrize("pd_node", [{"release_topic": ""}], indirect=True)
def test_without_a_release_topic_zero_effort_leaves_the_arm_to_fall(pd_node):
    c, h = pd_node, pd_node.h
    moved, _ = _let_go_and_watch(c, h, lambda: c.set_enabled(False), seconds=0.3)
    assert h.sim.sim.mode is None  # the drives' timeout stopped the motors: the arm falls from here
    assert moved > 1e-3
    h.reset_sim()  # before it reaches the stops


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_pd_node_says_a_goal_the_wrist_does_not_reach_is_not_reached(ros):
    """Issue 35 item 5: the wrist's PD torque below its static friction (Kp 0.3 N m/rad: 0.15 N m at
    0.5 rad, fc 0.25 N m; no friction compensation, which would let it creep): joint 4 stays far from
    its goal and the node says so, naming the joint (it said 'reached in 0.85 s' from the plan, and
    nothing after)."""
    from sensor_msgs.msg import JointState
    from test_controller_nodes import TOLERANT, Controller, enable
    from youbot_dynamics.control.trajectory import GOAL_SETTLE_TIME
    from youbot_dynamics.dynamics.paramfile import load_model
    from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode
    gains = PDGravityController(load_model(str(ros.model_file)), ros.arm, **MODEST_GAINS)
    kp, kd = gains.kp.copy(), gains.kd.copy()
    kp[3], kd[3] = 0.3, 0.1
    ros.reset_sim()
    c = Controller(ros, PDGravityControllerNode, **TOLERANT, kp=kp.tolist(), kd=kd.tolist(),
                   friction_compensation=False)
    try:
        enable(c)
        goal = c.q() + np.array([0.0, 0.0, 0.0, 0.5, 0.0])
        c.publish("goal", JointState(name=list(ros.arm.joint_names), position=goal.tolist()))
        accepted = c.wait_status("goal accepted")
        planned = float(re.search(r"in ([0-9.]+) s", accepted).group(1))
        verdict = c.wait_status("goal not reached", timeout=planned + GOAL_SETTLE_TIME + 10.0)
        off = abs(c.q()[3] - goal[3])
        print(f"\n{accepted}\n{verdict}\njoint 4 is {off:.3f} rad from its goal")
        assert off > 0.1  # the wrist did not get there (physics)
        assert verdict.startswith("goal not reached: arm_joint_4 is ") and "static friction" in verdict
        assert not [m.data for _, m in c.status if m.data.startswith("goal reached")]
    finally:
        c.close()
        ros.forget()
        ros.reset_sim()
