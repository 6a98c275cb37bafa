"""The pure-Python simulator core (youbot_dynamics/sim): physics against the project's dynamics and
MuJoCo's inverse dynamics, each realism feature against hand formulas, the drive modes, command
validation, timeouts and the configuration file."""
from __future__ import annotations

import copy
import dataclasses
import json
import os

import numpy as np
import pytest
import yaml
from scipy.interpolate import BPoly, CubicHermiteSpline

from youbot_dynamics.dynamics import rnea
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.arm.kinematics import link_frames
from youbot_dynamics.files.paths import config_path
from youbot_dynamics.sim import (
    ArmSimulator,
    CommandError,
    Realism,
    SimConfigError,
    load_sim_config,
    sim_config_from_dict,
    true_arm,
    true_standard_parameters,
)
from youbot_dynamics.motion.interpolation import HermiteSpline, waypoint_velocities
from sim_checks import mujoco_inverse_dynamics

EXACT = Realism.of(False)  # the ideal rigid-body arm
# seed 002's friction fv, fc, f0 only (the structure of the 14 n standard parameters)
FRICTION_ONLY = dataclasses.replace(EXACT, friction=True)
# A pose with the arm bent forward (large gravity torques), away from all limits.
BENT = np.array([2.9, 0.8, -1.6, 2.2, 2.9])


@pytest.fixture(scope="module")
def config(arm):
    return load_sim_config(arm=arm)


@pytest.fixture(scope="module")
def raw_config():
    return yaml.safe_load(config_path("sim.yaml").read_text())["sim"]


def torques(sim: ArmSimulator, q, dq, ddq) -> np.ndarray:
    """The project's Newton-Euler inverse dynamics (``rnea``, vectorised over (N, n) samples) with the
    simulator's true parameters: ``M q'' + C q' + G + Ia q'' (+ fv q' + fc sign(q') + f0)``."""
    return rnea.inverse_dynamics(DHChain.from_arm(sim.arm), sim.true_parameters, q, dq, ddq)


def holding_torque(sim: ArmSimulator, q) -> np.ndarray:
    """``G(q) (+ f0)``: the torque that holds the arm at rest at ``q``."""
    return torques(sim, q, np.zeros(5), np.zeros(5))


def acceleration_from_rest(sim: ArmSimulator, q, tau) -> np.ndarray:
    """``q'' = M^-1 (tau - G)`` at rest, with ``M e_j = ID(q, 0, e_j) - ID(q, 0, 0)`` (no friction)."""
    bias = holding_torque(sim, q)
    mass = (torques(sim, np.tile(q, (5, 1)), np.zeros((5, 5)), np.eye(5)) - bias).T
    return np.linalg.solve(mass, np.asarray(tau) - bias)


def run(sim: ArmSimulator, seconds: float, interface: str | None = None, values=None, every: int = 50) -> None:
    """Step ``seconds``, re-sending ``values`` on ``interface`` every ``every`` steps (within the timeout)."""
    for k in range(int(round(seconds / sim.timestep))):
        if interface is not None and k % every == 0:
            sim.command(interface, values)
        sim.step()


def smooth_trajectory(q0, amplitude, omega):
    """q(t) = q0 + A (1 - cos(w t)): starts at rest at q0; ``t`` scalar or (N, 1)."""
    def at(t):
        return (q0 + amplitude * (1 - np.cos(omega * t)), amplitude * omega * np.sin(omega * t),
                amplitude * omega ** 2 * np.cos(omega * t))
    return at


# -- physics against the project's dynamics ------------------------------------------------------


def test_mujoco_inverse_dynamics_equals_project_model(arm):
    sim = ArmSimulator(arm, realism=EXACT)
    traj = smooth_trajectory(BENT, np.array([0.5, 0.4, 0.6, -0.5, 0.8]), np.array([1.3, 1.7, 2.1, 2.9, 3.7]))
    q, dq, ddq = traj(np.linspace(0.0, 2.0, 101)[:, None])
    assert np.all(arm.within_limits(q, tolerance=-0.05))  # no limit constraint acts
    model = DynamicModel.from_standard(DHChain.from_arm(arm), sim.true_parameters)
    expected = model.inverse_dynamics(q, dq, ddq)
    np.testing.assert_allclose(torques(sim, q, dq, ddq), expected, rtol=0, atol=1e-9)
    got = mujoco_inverse_dynamics(sim, q, dq, ddq)
    assert np.abs(got - expected).max() < 1e-6


@pytest.mark.limits_exempt("the negative control lets the arm fall without torques for 1 s")
def test_inverse_dynamics_torques_drive_the_sim_along_the_trajectory(arm):
    sim = ArmSimulator(arm, realism=EXACT)
    traj = smooth_trajectory(BENT, np.array([0.4, 0.4, 0.5, -0.5, 0.6]), np.array([2.0, 2.5, 3.0, 3.5, 4.0]))
    steps = np.arange(1000)[:, None]
    # semi-implicit Euler updates the velocity over [t_k, t_k+1]: mid-step torques match it to O(dt^2)
    tau = torques(sim, *traj((steps + 0.5) * sim.timestep))
    wanted = traj((steps + 1) * sim.timestep)[0]
    assert np.all(arm.within_limits(wanted, tolerance=-0.05))
    sim.reset(BENT)
    worst = 0.0
    for k in range(1000):
        sim.command("effort", tau[k])
        sim.step()
        worst = max(worst, float(np.abs(sim.data.qpos - wanted[k]).max()))
    assert worst < 3e-3, worst
    # not trivially true: without the torques the arm ends far from the trajectory
    sim.reset(BENT)
    run(sim, 1.0)
    assert np.abs(sim.data.qpos - traj(1.0)[0]).max() > 0.3


@pytest.mark.limits_exempt("the arm falls with zero torque on purpose")
def test_zero_torque_arm_falls_under_gravity(arm):
    sim = ArmSimulator(arm, realism=EXACT)
    sim.reset(BENT)
    sim.step()
    # first semi-implicit Euler step from rest: q' = dt q'', q'' = M^-1 (0 - G) of the project's model
    expected = acceleration_from_rest(sim, BENT, np.zeros(5))
    np.testing.assert_allclose(sim.data.qvel / sim.timestep, expected, rtol=1e-6, atol=1e-9)
    assert abs(expected[1]) > 1.0  # the shoulder is pulled down in this pose
    sim.step(399)
    assert not sim.motors_on
    assert (sim.data.qpos[1] - BENT[1]) * np.sign(expected[1]) > 0.1  # fell by more than 0.1 rad in 0.4 s


@pytest.mark.parametrize("pose", ["home", "bent"])
def test_gravity_compensation_holds_the_arm_still(arm, config, pose):
    q0 = config.home if pose == "home" else BENT
    sim = ArmSimulator(arm, realism=EXACT)
    sim.reset(q0)
    run(sim, 1.0, "effort", holding_torque(sim, q0))
    assert np.abs(sim.data.qpos - q0).max() < 1e-3


# -- true parameters -----------------------------------------------------------------------------


def test_same_seed_same_true_parameters_different_seed_different(arm, config):
    a = true_standard_parameters(arm, config)
    np.testing.assert_array_equal(a, true_standard_parameters(arm, dataclasses.replace(config)))
    np.testing.assert_array_equal(a, ArmSimulator(arm, config).true_parameters)
    b = true_standard_parameters(arm, dataclasses.replace(config, seed=config.seed + 1))
    assert np.abs(a - b).max() > 1e-3


def test_perturbation_statistics_and_physical_consistency(arm, config):
    """Over many seeds: log mass ratios, CoM offsets and log ratios of the principal second moments
    (per unit mass, ``s = tr(I)/2 - I_kk`` in the nominal principal axes) have the configured spread;
    every link stays a physical body (positive mass, positive definite inertia, triangle inequality)."""
    log_mass, com, log_second = [], [], []
    axes = [np.linalg.eigh(link.inertia)[1] for link in arm.links]

    def second_moments(link, r):
        moments = np.diag(r.T @ link.inertia @ r)
        return (moments.sum() / 2 - moments) / link.mass

    for seed in range(200):
        links = true_arm(arm, dataclasses.replace(config, seed=seed)).links
        for nominal, link, r in zip(arm.links, links, axes):
            moments = np.linalg.eigvalsh(link.inertia)
            assert link.mass > 0 and moments[0] > 0
            assert moments[0] + moments[1] >= moments[2] * (1 - 1e-12)
            log_mass.append(np.log(link.mass / nominal.mass))
            com.append(link.com - nominal.com)
            log_second.append(np.log(second_moments(link, r) / second_moments(nominal, r)))
    p = config.perturbation
    assert np.std(log_mass) == pytest.approx(p.mass_relative_std, rel=0.1)
    assert np.std(com) == pytest.approx(p.com_std, rel=0.1)
    assert np.std(log_second) == pytest.approx(p.inertia_relative_std, rel=0.1)


def test_true_parameters_without_perturbation_are_nominal_plus_drive_terms(arm, config):
    flat = dataclasses.replace(config, perturbation=dataclasses.replace(config.perturbation, mass_relative_std=0.0,
                                                                        com_std=0.0, inertia_relative_std=0.0))
    chi = true_standard_parameters(arm, flat).reshape(5, 14)
    link = arm.links[1]
    c = link.com
    inertia_origin = link.inertia + link.mass * (c @ c * np.eye(3) - np.outer(c, c))  # parallel axis theorem
    np.testing.assert_allclose(chi[1, :4], [link.mass, *(link.mass * c)], rtol=1e-12)
    np.testing.assert_allclose(chi[1, 4:7], np.diag(inertia_origin), rtol=1e-12)
    # Ia = N^2 J: 156^2 * 1.5e-5 = 0.36504 kg m^2 on joint 1
    assert chi[0, 10] == pytest.approx(0.36504, rel=1e-12)
    np.testing.assert_array_equal(chi[:, 11], config.viscous_friction)
    np.testing.assert_array_equal(chi[:, 12], config.coulomb_friction)
    np.testing.assert_array_equal(chi[:, 13], config.friction_offset)


def test_realism_off_zeroes_friction_in_true_parameters(arm, config):
    chi = ArmSimulator(arm, config, realism=EXACT).true_parameters.reshape(5, 14)
    assert np.all(chi[:, 11:] == 0) and np.all(chi[:, 10] > 0)


def test_payload_changes_gravity_torque_by_m_g_lever(arm, config):
    mass, q = 0.5, BENT
    sims = [ArmSimulator(arm, dataclasses.replace(config, payload_mass=m), realism=EXACT) for m in (0.0, mass)]
    rest = np.zeros((1, arm.n_joints))
    gravity = [mujoco_inverse_dynamics(sim, q[None], rest, rest)[0] for sim in sims]
    # independent: G_i = m g d(p_z)/dq_i = m g [direction_i z_{i-1} x (p - o_{i-1})]_z (lever about axis i)
    frames = link_frames(arm, q)
    p = frames[-1, :3, 3]
    expected = np.array([mass * arm.gravity * arm.direction[i] * np.cross(frames[i, :3, 2], p - frames[i, :3, 3])[2]
                         for i in range(arm.n_joints)])
    np.testing.assert_allclose(gravity[1] - gravity[0], expected, rtol=0, atol=1e-9)
    assert abs(expected[1]) > 1.0  # a real effect: > 1 N m on the shoulder


# -- realism features ----------------------------------------------------------------------------


def test_friction_matches_the_identification_model(arm, config):
    """With friction, the full model torques (fv q' + fc sign(q') + f0 included) still drive the sim
    along a trajectory whose velocities never cross zero; without those terms it deviates."""
    sim = ArmSimulator(arm, config, realism=FRICTION_ONLY)
    v0 = np.array([0.3, -0.3, 0.3, -0.3, 0.3])
    amp, omega = v0 / 15, np.arange(5, 10.0)  # |amp omega| < |v0|: velocities keep their sign

    def traj(t):
        wave = amp * np.sin(omega * t)
        return BENT + v0 * t + wave, v0 + amp * omega * np.cos(omega * t), -omega ** 2 * wave

    steps = np.arange(800)[:, None]
    q, dq, ddq = traj((steps + 0.5) * sim.timestep)
    full = torques(sim, q, dq, ddq)
    friction = config.viscous_friction * dq + config.coulomb_friction * np.sign(dq) + config.friction_offset
    wanted = traj((steps + 1) * sim.timestep)[0]
    errors = []
    for tau in (full, full - friction):
        sim.reset(BENT)
        sim.data.qvel[:] = traj(0.0)[1]
        worst = 0.0
        for k in range(len(steps)):
            sim.command("effort", tau[k])
            sim.step()
            worst = max(worst, float(np.abs(sim.data.qpos - wanted[k]).max()))
        errors.append(worst)
    assert errors[0] < 1e-3 and errors[1] > 0.05, errors


def test_friction_steady_state_and_sticking_on_joint_1(arm, config):
    """Joint 1 (vertical axis): a torque tau gives the steady speed (tau - f0 - fc) / fv; a torque
    between f0 - fc and f0 + fc leaves it stuck. The other joints hold their gravity torque."""
    fv, fc, f0 = config.viscous_friction[0], config.coulomb_friction[0], config.friction_offset[0]
    q0 = config.home.copy()
    q0[0] = arm.position_min[0] + 0.1
    sim = ArmSimulator(arm, realism=FRICTION_ONLY)
    hold = holding_torque(sim, q0)
    for tau1, speed, moved in ((f0 + 0.5 * fc, 0.0, 1e-3), (f0 + fc + 0.4, 0.4 / fv, 1.0)):
        sim.reset(q0)
        run(sim, 4.0, "effort", np.concatenate([[tau1], hold[1:]]))
        assert sim.measure().velocity[0] == pytest.approx(speed, abs=2e-3), tau1
        assert (abs(sim.data.qpos[0] - q0[0]) > moved) == (speed > 0), tau1


@pytest.mark.limits_exempt("commands 100 N m on purpose: the simulated drives must saturate it")
def test_saturation_at_max_current_times_kt_times_gear_ratio(arm):
    sim = ArmSimulator(arm, realism=EXACT)
    sim.reset(BENT)
    sim.command("effort", [100.0, -100.0, 100.0, -100.0, 100.0])
    sim.step()
    # youbot_hardware.md: max current [A] * kt [N m/A] * N
    limit = np.array([5.768 * 0.0335 * 156, 5.768 * 0.0335 * 156, 3.899 * 0.0335 * 100, 2.746 * 0.051 * 71,
                      1.75 * 0.049 * 71])
    expected = limit * [1, -1, 1, -1, 1]
    np.testing.assert_allclose(sim.measure().effort, expected, rtol=1e-12)
    np.testing.assert_allclose(limit, [30.1, 30.1, 13.1, 9.9, 6.1], atol=0.06)
    # the physics got the saturated torque: first step from rest, q' = dt M^-1 (tau - G)
    accel = acceleration_from_rest(sim, BENT, expected)
    np.testing.assert_allclose(sim.data.qvel / sim.timestep, accel, rtol=1e-6)


def test_encoder_and_velocity_quantization_steps(arm):
    # the reported velocity within half an rpm step of the true one: without its lag (tested apart)
    sim = ArmSimulator(arm, realism=Realism(noise=False, velocity_lag=False))
    position_step = 2 * np.pi / (4000 * np.array([156.0, 156.0, 100.0, 71.0, 71.0]))
    velocity_step = 2 * np.pi / (60 * np.array([156.0, 156.0, 100.0, 71.0, 71.0]))
    positions, velocities = [], []
    for k in range(600):
        if k % 50 == 0:
            sim.command("velocity", [0.02, -0.02, 0.02, -0.02, 0.02])
        sim.step()
        m = sim.measure()
        assert np.all(np.abs(m.position - sim.data.qpos) <= position_step / 2 + 1e-12)
        assert np.all(np.abs(m.velocity - sim.data.qvel) <= velocity_step / 2 + 1e-12)
        positions.append(m.position)
        velocities.append(m.velocity)
    for values, step in ((np.array(positions), position_step), (np.array(velocities), velocity_step)):
        ticks = values / step
        np.testing.assert_allclose(ticks, np.round(ticks), rtol=0, atol=1e-6)
        for j in range(5):
            distinct = np.unique(np.round(ticks[:, j]))
            assert distinct.size > 3
            assert np.diff(distinct).min() == 1.0  # neighbouring readings differ by exactly one step


def test_torque_noise_statistics_and_determinism(arm, config):
    sim = ArmSimulator(arm, config)
    tau = np.array([1.0, -2.0, 0.5, 0.2, -0.1])
    sim.command("effort", tau)
    sim.step()  # effort reports the torque the drives produced in the last step
    samples = np.array([sim.measure().effort for _ in range(4000)])
    # the mean is the calibration-error-afflicted (1 + g) tau + o (test_sim_realism.py tests g and o)
    measured = (1 + config.effort_gain_error) * tau + config.effort_offset
    assert np.all(np.abs(samples.mean(axis=0) - measured) < 4 * config.torque_noise_std / np.sqrt(len(samples)))
    np.testing.assert_allclose(samples.std(axis=0), config.torque_noise_std, rtol=0.05)

    def record(s):
        s.reset()
        out = []
        for k in range(200):
            if k % 50 == 0:
                s.command("position", config.home + 0.1)
            s.step()
            m = s.measure()
            out.append(np.concatenate([m.position, m.velocity, m.effort]))
        return np.array(out)

    first = record(sim)
    np.testing.assert_array_equal(first, record(sim))  # reset re-seeds: same run again
    np.testing.assert_array_equal(first, record(ArmSimulator(arm, config)))
    other = record(ArmSimulator(arm, dataclasses.replace(config, seed=config.seed + 1)))
    assert not np.array_equal(first, other)


@pytest.mark.limits_exempt("drives joint 3 into its stop at full torque on purpose: the stop must hold")
def test_joint_limits_are_hard_stops(arm):
    sim = ArmSimulator(arm, realism=EXACT)
    q0 = BENT.copy()
    q0[2] = arm.position_max[2] - 0.3
    sim.reset(q0)
    overshoot, speed = 0.0, 0.0
    for k in range(1500):
        if k % 20 == 0:
            tau = holding_torque(sim, sim.data.qpos.copy())
            tau[2] = 100.0  # saturated: full drive torque into the stop
            sim.command("effort", tau)
        sim.step()
        overshoot = max(overshoot, sim.data.qpos[2] - arm.position_max[2])
        speed = max(speed, abs(sim.data.qvel[2]))
    assert speed > 3.0  # it hit the stop fast (twice velocity_max)
    assert overshoot < 0.01  # the URDF's soft-limit margin
    assert abs(sim.data.qpos[2] - arm.position_max[2]) < 1e-4 and abs(sim.data.qvel[2]) < 1e-3


# -- drive modes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", [0.0, 0.5])
def test_position_pid_reaches_the_setpoint(arm, config, payload):
    sim = ArmSimulator(arm, dataclasses.replace(config, payload_mass=payload))
    target = config.home + np.array([0.4, -0.5, 0.6, -0.4, 0.5])
    run(sim, 2.5, "position", target)
    assert sim.mode == "position"
    assert np.abs(sim.measure().position - target).max() < 3e-3
    ramp_time = np.abs(target - config.home).max() / config.position_controller.ramp_velocity.max()
    assert ramp_time < 1.0  # the ramp reached the target long before


def test_velocity_mode_tracks_the_commanded_velocity(arm, config):
    sim = ArmSimulator(arm, config)
    v = np.array([0.3, -0.3, 0.3, -0.3, 0.3])
    run(sim, 0.5, "velocity", v)
    start = sim.measure().position
    speeds = []
    for _ in range(5):
        run(sim, 0.1, "velocity", v)
        speeds.append(sim.measure().velocity)
    np.testing.assert_allclose(speeds, np.broadcast_to(v, (5, 5)), atol=5e-3)
    np.testing.assert_allclose(sim.measure().position - start, 0.5 * v, atol=2e-3)


@pytest.mark.parametrize("interpolation", ["cubic", "quintic"])
def test_spline_matches_scipy(interpolation):
    rng = np.random.default_rng(3)
    t = np.array([0.0, 0.3, 0.7, 1.5])
    p, v, a = rng.normal(size=(3, 4, 2))
    spline = HermiteSpline.through(t, p, v, a, interpolation)
    if interpolation == "cubic":
        reference = CubicHermiteSpline(t, p, v)
    else:
        reference = BPoly.from_derivatives(t, np.stack([p, v, a], 1))
    for x in np.linspace(0.0, 1.49, 50):
        q, dq = spline.evaluate(x)
        np.testing.assert_allclose(q, reference(x), atol=1e-12)
        np.testing.assert_allclose(dq, reference(x, 1), atol=1e-11)
    np.testing.assert_array_equal(spline.evaluate(2.0)[0], p[-1])


def test_missing_waypoint_velocities():
    times = np.array([0.0, 1.0, 3.0, 4.0])
    positions = np.array([[0.0], [1.0], [3.0], [2.0]])
    # point 1: slopes 1 and 1 -> (2 * 1 + 1 * 1) / 3 = 1; point 2: slopes 1 and -1 (extremum) -> 0; last -> 0
    np.testing.assert_allclose(waypoint_velocities(times, positions), [[0.0], [1.0], [0.0], [0.0]])


def test_trajectory_of_positions_only_passes_the_waypoints(arm, config):
    sim = ArmSimulator(arm, config)
    times = [0.6, 1.2, 1.8]
    positions = config.home + np.array([[0.2, -0.2, 0.2, -0.2, 0.2], [0.4, -0.3, 0.5, -0.3, 0.4], [0.1] * 5])
    sim.command_trajectory(times, positions)
    for t, q in zip(times, positions):
        sim.step(int(round((t - sim.time) / sim.timestep)))
        assert sim.time == pytest.approx(t)
        assert np.abs(sim.measure().position - q).max() < 0.01


def test_trajectory_follows_the_interpolation_and_holds_the_end(arm, config):
    sim = ArmSimulator(arm, config)
    q0 = config.home
    times = np.array([0.8, 1.6, 2.2])
    positions = q0 + np.array([[0.3, -0.3, 0.4, -0.3, 0.4], [0.5, -0.2, 0.6, -0.6, 0.2], [0.2, -0.4, 0.2, -0.2, 0.0]])
    velocities = np.array([[0.4, 0.0, 0.3, -0.3, 0.0], [-0.3, -0.2, -0.3, 0.2, -0.3], [0.0] * 5])
    sim.command_trajectory(times, positions, velocities)
    # independent reference: scipy's quintic Hermite from rest at q0, zero waypoint accelerations
    knots = np.concatenate([[0.0], times])
    derivatives = np.stack([np.vstack([q0, positions]), np.vstack([np.zeros(5), velocities]), np.zeros((4, 5))], 1)
    reference = BPoly.from_derivatives(knots, derivatives)
    worst = other = 0.0
    for k in range(int(round(2.2 / sim.timestep))):
        sim.step()
        worst = max(worst, float(np.abs(sim.measure().position - reference(sim.time)).max()))
        linear = [np.interp(sim.time, knots, derivatives[:, 0, j]) for j in range(5)]
        other = max(other, float(np.abs(reference(sim.time) - linear).max()))
    assert worst < 0.01 < 0.05 < other, (worst, other)  # follows this interpolation, not another one
    sim.step(int(round(5 * config.command_timeout / sim.timestep)))  # long after the end: still holding
    assert sim.mode == "trajectory"  # a trajectory controller keeps commanding: no timeout
    assert np.abs(sim.measure().position - positions[-1]).max() < 3e-3


def test_new_commands_continue_from_the_current_reference(arm, config):
    """Replacing a trajectory, or switching between trajectory and position, moves the arm smoothly
    (each command is re-sent every 50 ms: a new trajectory starts from the running reference)."""
    sim = ArmSimulator(arm, config)
    home = config.home
    sim.command_trajectory([1.0], [home + 0.3])
    sim.command_trajectory([1.0], [home + 0.2])  # replaced before any step: starts at rest at home
    sim.step(20)
    assert np.abs(sim.measure().position - home).max() < 2e-3
    sim.step(480)
    for command in (lambda: sim.command_trajectory([1.0], [home]), lambda: sim.command("position", home + 0.3),
                    lambda: sim.command_trajectory([0.5, 1.0], [home + 0.1, home])):
        previous = sim.measure().position
        for k in range(300):
            if k % 50 == 0:
                command()
            sim.step()
            position = sim.measure().position
            assert np.abs(position - previous).max() < 2e-3  # below 2 rad/s
            previous = position


def test_command_timeout_stops_the_motors(arm, config):
    sim = ArmSimulator(arm, realism=EXACT)
    sim.reset(BENT)
    sim.command("effort", holding_torque(sim, BENT))
    steps = int(round(config.command_timeout / sim.timestep))
    assert steps == 100  # 0.1 s at 1 kHz
    sim.step(steps - 1)
    assert sim.mode == "effort" and sim.motors_on
    assert np.abs(sim.data.qpos - BENT).max() < 1e-3
    sim.step()
    assert sim.mode is None and not sim.motors_on
    np.testing.assert_array_equal(sim.measure().effort, 0.0)
    sim.step(200)
    assert np.abs(sim.data.qpos - BENT).max() > 0.05  # zero torque: it falls


def test_each_command_restarts_the_timeout_and_switches_mode(arm, config):
    sim = ArmSimulator(arm, config)
    sim.command("velocity", np.zeros(5))
    sim.step(80)
    sim.command("position", config.home)
    assert sim.mode == "position"
    sim.step(80)
    assert sim.mode == "position"
    sim.step(20)
    assert sim.mode is None


# -- command validation --------------------------------------------------------------------------


@pytest.mark.parametrize("interface, values, message", [
    ("effort", [1.0, 2.0], "shape"),
    ("effort", [1.0, 2.0, np.nan, 0.0, 0.0], "NaN"),
    ("effort", ["a", 0, 0, 0, 0], "numbers"),
    ("position", [0.0, 1.0, -1.0, 1.0, 1.0], "arm_joint_1"),
    ("velocity", [0.0, 0.0, 2.0, 0.0, 0.0], "arm_joint_3"),
    ("torque", [0.0] * 5, "unknown interface"),
    ("trajectory", [0.0] * 5, "command_trajectory"),
])
def test_bad_commands_raise_and_keep_the_last_valid_command(arm, config, interface, values, message):
    sim = ArmSimulator(arm, config, realism=EXACT)
    sim.command("effort", [0.5, 0.4, 0.3, 0.2, 0.1])
    sim.step(50)
    with pytest.raises(CommandError, match=message):
        sim.command(interface, values)
    sim.step()
    assert sim.mode == "effort"
    np.testing.assert_array_equal(sim.measure().effort, [0.5, 0.4, 0.3, 0.2, 0.1])
    sim.step(49)
    assert sim.mode is None  # the rejected command did not restart the timeout


@pytest.mark.parametrize("kwargs, message", [
    ({"times": [0.5, 0.5], "positions": "home2"}, "strictly increasing"),
    ({"times": [-0.1, 0.5], "positions": "home2"}, "positive"),
    # a first point at time 0 is the start state: refused away from where the arm is (issue 19 item 12)
    ({"times": [0.0, 0.5], "positions": "away2"}, "0.3000 rad from the current position on arm_joint_1"),
    # waypoints inside the limits, the path between them 10 x too fast (issue 19 item 7: it was executed)
    ({"times": [0.05], "positions": "far1"}, "arm_joint_1 would move at .* above its velocity_max"),
    ({"times": [0.5, 1.0], "positions": "home1"}, "shape"),
    # the joint, its value and its limits, not the limit matrix (issue 48)
    ({"times": [0.5], "positions": "outside"},
     r"outside the joint limits: arm_joint_3 = [-0-9.]+ rad, limits \[-5.0\d*, -0.0\d+\] rad;"),
    ({"times": [0.5], "positions": "home1", "velocities": [[0, 0, 0, 0, np.inf]]}, "NaN or infinite"),
    ({"times": [0.5], "positions": "home1", "velocities": [[0, 0, 0, 0, 3.0]]},
     r"above velocity_max: arm_joint_5 at 3 rad/s, velocity_max [0-9.]+ rad/s;"),
])
def test_bad_trajectories_raise(arm, config, kwargs, message):
    positions = {"home1": [config.home], "home2": [config.home, config.home],
                 "outside": [config.home + [0, 0, 5.0, 0, 0]],
                 "away2": [config.home + [0.3, 0, 0, 0, 0], config.home],
                 "far1": [config.home + [1.5, 0, 0, 0, 0]]}[kwargs.pop("positions")]
    with pytest.raises(CommandError, match=message):
        ArmSimulator(arm, config).command_trajectory(positions=positions, **kwargs)


def test_a_start_point_at_time_zero_is_dropped(arm, config):
    """The usual ROS form: the first point is where the arm is, at time_from_start 0."""
    sim = ArmSimulator(arm, config, realism=EXACT)
    here = sim.measure().position
    sim.command_trajectory([0.0, 0.5], [here, here + [0.05, 0, 0, 0, 0]])
    assert sim.mode == "trajectory"
    sim.step(round(0.6 / sim.timestep))
    np.testing.assert_allclose(sim.measure().position[0], here[0] + 0.05, atol=5e-3)


def test_disabled_interface_is_rejected(arm, config):
    sim = ArmSimulator(arm, config, enabled_interfaces=("effort",))
    with pytest.raises(CommandError, match="not enabled"):
        sim.command("position", config.home)
    with pytest.raises(CommandError, match="not enabled"):
        sim.command_trajectory([1.0], [config.home])
    sim.command("effort", np.zeros(5))
    with pytest.raises(ValueError, match="unknown interfaces"):
        ArmSimulator(arm, config, enabled_interfaces=("effort", "current"))


def test_reset_to_a_given_or_home_configuration(arm, config):
    sim = ArmSimulator(arm, config)
    sim.command("velocity", [0.2] * 5)
    sim.step(30)
    sim.reset(BENT)
    m = sim.measure()
    assert m.time == 0.0 and sim.mode is None
    np.testing.assert_allclose(m.position, BENT, atol=1e-4)
    np.testing.assert_array_equal(m.velocity, 0.0)
    sim.reset()
    np.testing.assert_allclose(sim.measure().position, config.home, atol=1e-4)
    with pytest.raises(CommandError, match="outside the joint limits"):
        sim.reset(arm.position_max + 0.1)
    with pytest.raises(CommandError, match="shape"):
        sim.reset([1.0, 2.0])


# -- configuration -------------------------------------------------------------------------------


def test_config_must_fit_the_arm(arm, config):
    with pytest.raises(SimConfigError, match=r"sim\.home"):
        ArmSimulator(arm, dataclasses.replace(config, home=arm.position_max + 0.1))


def test_shipped_config_is_valid_and_plausible(arm, config):
    assert config.timestep == 0.001 and config.command_timeout == 0.1
    assert config.payload_mass == 0.0 and config.encoder_quantization and config.velocity_quantization
    assert arm.within_limits(config.home)
    assert ArmSimulator(arm, config).joint_names == arm.joint_names


def _set(doc, path, value):
    node = doc
    *parents, key = path.split(".")
    for p in parents:
        node = node[p]
    if value is _DELETE:
        del node[key]
    else:
        node[key] = value


_DELETE = object()


@pytest.mark.parametrize("path, value, key", [
    ("timestep", -0.001, "sim.timestep"),
    ("timestep", "fast", "sim.timestep"),
    ("seed", True, "sim.seed"),
    ("viscous_friction", [0.1] * 4, "sim.viscous_friction"),
    ("coulomb_friction", [0.1, 0.1, -0.1, 0.1, 0.1], "sim.coulomb_friction"),
    ("torque_noise_std", [0.1, 0.1, float("nan"), 0.1, 0.1], "sim.torque_noise_std"),
    ("home", [0.0] * 5, "sim.home"),
    ("encoder_quantization", "yes", "sim.encoder_quantization"),
    ("trajectory_interpolation", "linear", "sim.trajectory_interpolation"),
    ("position_controller.kp", [1.0, 1.0, 0.0, 1.0, 1.0], "sim.position_controller.kp"),
    ("velocity_controller.ki", _DELETE, "sim.velocity_controller.ki"),
    ("perturbation.com_std", -0.01, "sim.perturbation.com_std"),
    ("perturbation.colour", 1, "sim.perturbation.colour"),
    ("payload", 0.5, "sim.payload"),
    ("command_timeout", _DELETE, "sim.command_timeout"),
])
def test_config_errors_name_the_key(arm, raw_config, path, value, key):
    doc = copy.deepcopy(raw_config)
    _set(doc, path, value)
    with pytest.raises(SimConfigError, match=key.replace(".", r"\.")):
        sim_config_from_dict(doc, arm)


def test_config_file_errors(tmp_path, arm):
    bad = tmp_path / "sim.yaml"
    bad.write_text("simulation: {}\n")
    with pytest.raises(SimConfigError, match="'sim'"):
        load_sim_config(bad, arm)
    bad.write_text("sim: [unclosed\n")
    with pytest.raises(SimConfigError, match="malformed"):
        load_sim_config(bad, arm)
    with pytest.raises(SimConfigError, match="cannot read"):
        load_sim_config(tmp_path / "missing.yaml", arm)


# -- the limit monitor (the suite-wide rule of test/conftest.py) ---------------------------------


def test_limit_monitor_bounds_and_log(arm, tmp_path, monkeypatch):
    from youbot_dynamics.sim.limits import LIMIT_LOG_VARIABLE, LimitMonitor
    log = tmp_path / "excursions.jsonl"
    monkeypatch.setenv(LIMIT_LOG_VARIABLE, str(log))
    monitor = LimitMonitor(arm)
    inside = 0.5 * (arm.position_min + arm.position_max)
    # at the bounds: 1.1 x velocity_max (hand computed from the arm description), a limit + 1 mrad
    monitor.observe(0.0, inside, -1.0999 * arm.velocity_max, "effort")
    monitor.observe(0.0, arm.position_max + 0.9e-3, np.zeros(5), "effort")
    monitor.observe(0.0, arm.position_min - 0.9e-3, np.zeros(5), None)
    practical = np.minimum(arm.effort_max, arm.drive_torque_limit)  # what the controllers saturate to
    monitor.command(0.0, -practical, "effort")
    assert monitor.excursions == [] and not log.exists()
    fast = np.zeros(5)
    fast[1] = -1.11 * arm.velocity_max[1]
    monitor.observe(1.5, inside, fast, "trajectory")
    fast[1] = -1.3 * arm.velocity_max[1]
    monitor.observe(1.501, inside, fast, "trajectory")  # the same excursion, its peak updated
    beyond = inside.copy()
    beyond[2] = arm.position_min[2] - 2e-3
    monitor.observe(2.0, beyond, np.zeros(5), None)
    torque = np.zeros(5)
    torque[4] = 5.0  # joint 5: effort_max 1 N m, below the drive's 6.1 N m
    monitor.command(3.0, torque, "effort")
    monitor.command(3.001, 1.01 * torque, "effort")  # the same excursion
    kinds = [(e.kind, e.joint, e.time, e.mode) for e in monitor.excursions]
    assert kinds == [("velocity", "arm_joint_2", 1.5, "trajectory"), ("position", "arm_joint_3", 2.0, None),
                     ("torque", "arm_joint_5", 3.0, "effort")]
    assert monitor.excursions[2].value == pytest.approx(5.05) and monitor.excursions[2].limit == arm.effort_max[4]
    velocity = monitor.excursions[0]
    assert velocity.value == pytest.approx(-1.3 * arm.velocity_max[1])
    assert velocity.limit == pytest.approx(-1.1 * arm.velocity_max[1])
    assert monitor.excursions[1].limit == arm.position_min[2]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["kind"], e["joint"]) for e in lines] == [("velocity", "arm_joint_2"), ("position", "arm_joint_3"),
                                                        ("torque", "arm_joint_5")]
    assert (lines[0]["pid"] == os.getpid()
            and "arm_joint_2 velocity -1.7436 rad/s beyond its limit -1.7279" in lines[0]["message"])
    assert "(drives: motors off)" in lines[1]["message"]
    # back within the limits, then beyond again (after a reset, say): a new excursion, logged again
    monitor.observe(4.0, inside, np.zeros(5), "effort")
    monitor.command(4.0, np.zeros(5), "effort")
    monitor.observe(5.0, inside, fast, "effort")
    monitor.command(5.0, -torque, "effort")
    kinds = [(e.kind, e.joint, e.time) for e in monitor.excursions[3:]]
    assert kinds == [("velocity", "arm_joint_2", 5.0), ("torque", "arm_joint_5", 5.0)]
    assert len(log.read_text().splitlines()) == 5


@pytest.mark.limits_exempt("the arm falls from the home pose with the motors off: the monitor must see it")
def test_simulator_reports_the_fall_with_motors_off(arm, config):
    # with seed 002's friction; the extra static friction (Stribeck excess, load) holds the nearly
    # balanced candle with the motors off (test_sim_realism.py), so the arm would not fall
    sim = ArmSimulator(arm, realism=Realism(extra_friction=False))
    sim.step(1000)
    assert sim.limits.excursions == []  # still below 1.1 x velocity_max after 1 s
    sim.step(1000)
    first = sim.limits.excursions[0]
    assert (first.kind, first.joint, first.mode) == ("velocity", "arm_joint_2", None)
    assert 1.0 < first.time < 1.5
    peak = max(e.value for e in sim.limits.excursions if e.kind == "velocity")
    assert peak > 1.5 * arm.velocity_max[1]
    assert not [e for e in sim.limits.excursions if e.kind == "position"]  # it lands on the stops, within 1 mrad
    # driven into joint 2's stop at 90 % of the drive's torque: beyond the limit
    q = 0.5 * (arm.position_min + arm.position_max)
    q[1] = arm.position_max[1] - 0.05
    sim.reset(q)
    tau = np.zeros(5)
    tau[1] = 0.9 * arm.drive_torque_limit[1]
    sim.command("effort", tau)
    sim.step(300)
    stop = [e for e in sim.limits.excursions if e.kind == "position"]
    assert stop and stop[0].joint == "arm_joint_2" and stop[0].limit == arm.position_max[1]
    assert stop[0].value > arm.position_max[1] + 1e-3


@pytest.mark.limits_exempt("an effort command above the drives' limit on purpose: the monitor must see it")
def test_simulator_reports_an_effort_command_above_the_drives(arm):
    sim = ArmSimulator(arm, realism=EXACT)
    sim.reset(BENT)
    tau = holding_torque(sim, BENT)
    sim.command("effort", tau)
    assert sim.limits.excursions == []
    tau[0] = 2.0 * arm.drive_torque_limit[0]
    sim.command("effort", tau)
    assert [(e.kind, e.joint) for e in sim.limits.excursions] == [("torque", "arm_joint_1")]
