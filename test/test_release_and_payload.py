"""Issue 35, items 2-5 and 12 (in part), on the simulator core (no ROS): the release the arm accepts
from any state, a rejected trajectory that leaves the arm held, the payload and wrench bounds, the
float law's rest_torque bound, and a goal reported reached only when the arm is there.

Each test checks against the physics of the simulated arm (where it is, how fast it moves, what the
drives do) or the arm description's limits, not against the code under test's own output.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from youbot_dynamics.control import FloatController, PDGravityController
from youbot_dynamics.control.release import release_waypoints
from youbot_dynamics.control.terms import ModelTerms
from youbot_dynamics.control.trajectory import GOAL_SETTLE_TIME, GOAL_TOLERANCE, GoalArrival
from youbot_dynamics.dynamics.paramfile import load_model
from youbot_dynamics.dynamics.payload import PAYLOAD_MASS_MAX, Payload, payload_levers, with_payload
from youbot_dynamics.files.paths import config_path
from youbot_dynamics.sim import ArmSimulator, CommandError, Realism

BENT = np.array([2.9, 0.8, -1.6, 2.2, 2.9])  # gravity loads joints 2-4: without the drives it falls
FOREARM = "arm_link_3"
# the drives' own loops see the true velocity; so does the release here (no lag, no quantization)
DIRECT = Realism(velocity_lag=False, quantization=False)


@pytest.fixture(scope="module")
def nominal():
    return load_model(str(config_path("youbot_nominal_model.yaml")))


def drop_to_zero_effort(sim: ArmSimulator) -> None:
    """What a controller that lets go sends first: zero effort (the drives take the last command's mode)."""
    sim.command("effort", np.zeros(sim.n_joints))


def run(sim: ArmSimulator, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Step ``seconds``; the true positions and velocities of every step."""
    q, dq = [], []
    for _ in range(int(round(seconds / sim.timestep))):
        sim.step()
        q.append(sim.data.qpos.copy())
        dq.append(sim.data.qvel.copy())
    return np.array(q), np.array(dq)


# -- item 2: the release from any state ------------------------------------------------------------


def test_release_waypoints_stay_inside_the_limits_from_overspeed_and_past_a_stop(arm):
    """From 1.5 x velocity_max, heading for a stop too fast to brake before it, and from 0.1 rad past
    a stop (moving out, or in), the release is given (it raised ValueError: a start or an end more
    than 0.05 rad beyond a limit) and every waypoint is what an executor accepts: inside the
    position limits, within velocity_max; it ends at rest inside the limits."""
    states = {"overspeed": (BENT, 1.5 * arm.velocity_max * np.array([1, -1, 1, -1, 1]))}
    near = BENT.copy()
    near[1] = arm.position_min[1] + 0.05  # braking within acceleration_max would end 0.25 rad beyond the stop
    states["heading for a stop"] = (near, np.array([0.0, -arm.velocity_max[1], 0.0, 0.0, 0.0]))
    for direction in (1.0, -1.0):
        past = BENT.copy()
        past[1] = arm.position_max[1] + 0.1
        states[f"past the stop, moving {direction:+g}"] = (past, direction * np.array([0.0, 1.0, 0.0, 0.0, 0.0]))
    for name, (q, dq) in states.items():
        times, positions, velocities, _ = release_waypoints(arm, q, dq)
        assert np.all(np.diff(times) > 0) and times[0] > 0, name
        assert np.all(positions >= arm.position_min) and np.all(positions <= arm.position_max), name
        assert np.all(np.abs(velocities) <= arm.velocity_max * (1 + 1e-12)), name
        np.testing.assert_allclose(velocities[-1], 0.0, atol=1e-12, err_msg=name)
        # mean speeds between samples (independent of the tail's formula) within velocity_max too
        assert np.all(np.abs(np.diff(positions, axis=0)) <= arm.velocity_max * np.diff(times)[:, None] + 1e-12), name


@pytest.mark.limits_exempt("the arm is set moving at 1.5 x velocity_max on purpose (a push, a fall)")
def test_the_simulator_accepts_the_release_from_overspeed_and_brakes_the_arm(arm):
    """An arm moving at 1.5 x velocity_max (after a push) gets zero effort, then the release from its
    measured state: the simulator takes it (it refused: 'velocities above velocity_max'), the arm
    never goes faster than it was, and it comes to rest inside the limits, held (motors on)."""
    sim = ArmSimulator(arm, realism=DIRECT)
    sim.reset(BENT, hold=True)
    sim.step(100)
    start_speed = 1.5 * arm.velocity_max * np.array([0.4, -1.0, 1.0, 0.0, 0.0])
    sim.data.qvel[:] = start_speed
    mujoco.mj_forward(sim.model, sim.data)
    drop_to_zero_effort(sim)
    sim.step()
    m = sim.measure()
    assert np.abs(m.velocity[1]) > 1.4 * arm.velocity_max[1]  # the state is over speed
    sim.command_trajectory(*release_waypoints(arm, m.position, m.velocity))
    q, dq = run(sim, 2.0)
    assert sim.mode == "trajectory" and sim.motors_on
    assert np.all(np.abs(dq) <= np.abs(start_speed) * 1.05 + 0.05)  # braking, never faster
    assert np.all(np.abs(dq[-1]) < 0.01)  # at rest
    assert np.all(q[-1] >= arm.position_min) and np.all(q[-1] <= arm.position_max)
    speed_after = np.abs(dq[int(0.5 / sim.timestep):]).max(axis=0)
    assert np.all(speed_after <= arm.velocity_max)  # within the limit from half a second on


@pytest.mark.limits_exempt("the arm is put 3 mrad into joint 2's stop on purpose (resting on it)")
def test_the_simulator_accepts_a_release_from_a_state_past_its_stop(arm):
    """The arm rests a few mrad into joint 2's stop (as the issue's: an arm on its stop is beyond the
    limit) and the controller's last state is 0.1 rad past it: the release is accepted (it was
    refused: 'positions outside the joint limits', or not given at all) and the drives hold the arm
    at the stop instead of letting it fall."""
    sim = ArmSimulator(arm, realism=DIRECT)
    on_stop = BENT.copy()
    on_stop[1] = arm.position_max[1]
    sim.reset(on_stop, hold=True)
    sim.data.qpos[1] = arm.position_max[1] + 0.003
    mujoco.mj_forward(sim.model, sim.data)
    drop_to_zero_effort(sim)
    m = sim.measure()
    assert m.position[1] > arm.position_max[1]
    sim.command_trajectory(*release_waypoints(arm, m.position, m.velocity))
    past = m.position.copy()
    past[1] = arm.position_max[1] + 0.1
    sim.command_trajectory(*release_waypoints(arm, past, np.zeros(5)))  # another 0.1 rad further: accepted too
    q, _ = run(sim, 1.0)
    assert sim.mode == "trajectory"
    assert np.abs(q[-1] - on_stop).max() < 0.01  # held at the stop, not fallen


@pytest.mark.limits_exempt("a 40 N push on the floating forearm takes joints beyond velocity_max")
def test_a_push_in_float_then_the_release_leaves_the_arm_held(arm, nominal):
    """The issue's case on the simulator core: the float law holds the arm, a 40 N push on the
    forearm for 0.3 s, then (as the guard's fault on the speed does) zero effort and the release
    from the measured state: accepted, and the arm comes to rest held by the drives (it was refused
    and the arm fell with its motors off)."""
    sim = ArmSimulator(arm)
    sim.reset(BENT, hold=True)
    sim.step(200)
    law = FloatController(nominal, arm)
    law.hold(sim.measure().position)
    limit = np.minimum(arm.effort_max, arm.drive_torque_limit)
    sim.apply_wrench(FOREARM, [0.0, -40.0, 0.0], duration=0.3)
    fastest = 0.0
    for _ in range(600):
        m = sim.measure()
        sim.command("effort", np.clip(law.torque(sim.time, m.position, m.velocity), -limit, limit))
        sim.step()
        fastest = max(fastest, float(np.max(np.abs(m.velocity) / arm.velocity_max)))
        if fastest > 1.2:
            break
    assert fastest > 1.2, fastest  # the push took the arm over speed: the guard lets go
    drop_to_zero_effort(sim)
    sim.step()
    m = sim.measure()
    sim.command_trajectory(*release_waypoints(arm, m.position, m.velocity))
    q, dq = run(sim, 2.0)
    assert sim.mode == "trajectory" and np.all(np.abs(dq[-1]) < 0.01)
    assert np.all(q >= arm.position_min - 1e-3) and np.all(q <= arm.position_max + 1e-3)


# -- item 4: a rejected trajectory leaves the arm held ---------------------------------------------


def test_a_rejected_release_leaves_the_arm_held_not_unpowered(arm):
    """A second arm's release (computed from another arm's state: the path to its first point would
    run at tens of rad/s) arrives after a zero effort: refused, and the drives hold the arm where it
    is (it stayed on zero effort, then the motors went off and the loaded arm fell: without friction,
    which alone holds BENT in the realistic arm)."""
    sim = ArmSimulator(arm, realism=False)
    sim.reset(BENT, hold=True)
    sim.step(100)
    drop_to_zero_effort(sim)
    other = BENT + np.array([0.5, 0.4, -0.5, 0.3, 0.0])
    with pytest.raises(CommandError) as refused:
        sim.command_trajectory(*release_waypoints(arm, other, 0.5 * arm.velocity_max))
    q, _ = run(sim, 1.0)
    assert np.abs(q[-1] - BENT).max() < 0.01  # held where it was
    assert sim.motors_on and sim.mode == "trajectory"
    assert "the drives brake the arm from its measured state and hold it" in str(refused.value)


def test_a_rejected_trajectory_keeps_a_running_trajectory(arm):
    """Under the drives' position control a refused trajectory changes nothing: the previous one goes on."""
    sim = ArmSimulator(arm, realism=DIRECT)
    sim.reset(BENT, hold=True)
    target = BENT + np.array([0.1, 0.0, 0.0, 0.0, 0.0])
    sim.command_trajectory([0.5], [target])
    with pytest.raises(CommandError, match="outside the joint limits") as refused:
        sim.command_trajectory([0.5], [BENT + [0.0, 0.0, 5.0, 0.0, 0.0]])
    assert "brake" not in str(refused.value)
    run(sim, 1.0)
    assert np.abs(sim.data.qpos - target).max() < 0.01


def test_a_rejected_trajectory_during_a_position_stream_brakes_and_holds(arm):
    """A streamed position command times out (``command_timeout``) when its stream ends: a refused
    trajectory arriving during it brakes the arm and holds it without a timeout, as in the driver."""
    sim = ArmSimulator(arm, realism=False)
    sim.reset(BENT, hold=True)
    sim.command("position", BENT)
    sim.step(50)
    with pytest.raises(CommandError, match="the drives brake the arm"):
        sim.command_trajectory([0.5], [BENT + [0.0, 0.0, 5.0, 0.0, 0.0]])
    q, _ = run(sim, 1.0)  # ten times the command timeout, no further command
    assert sim.motors_on and sim.mode == "trajectory"
    assert np.abs(q[-1] - BENT).max() < 0.01

# -- item 3: payload bounds -------------------------------------------------------------------------


@pytest.mark.parametrize("mass, position, inertia, message", [
    (1e6, [0.0, 0.0, 100.0], None, "more than the arm can carry"),
    (PAYLOAD_MASS_MAX * 1.01, None, None, "more than the arm can carry"),
    (0.5, [0.0, 0.0, 100.0], None, "from the tool frame"),
    (0.5, None, np.diag([1.0, 1.0, 1.0]), "more than a 0.5 kg body"),
    (1.0, [0.0, 0.0, 0.2], None, "would load arm_joint_4 with up to 4.1 N m of gravity, more than 0.8 x its rated 2.7"),
])
def test_a_payload_beyond_what_the_arm_carries_is_refused_by_the_simulator(arm, mass, position, inertia, message):
    """1e6 kg at 100 m was accepted and MuJoCo exploded (joint 3 at 205 rad/s): refused, in one line,
    and nothing changes."""
    sim = ArmSimulator(arm, realism=False)
    parameters = sim.true_parameters
    with pytest.raises(ValueError, match=message) as refused:
        sim.set_payload(mass, position, inertia)
    assert "\n" not in str(refused.value) and "doc/safety.md" in str(refused.value)
    assert sim.true_parameters is parameters and sim.payload.mass == 0.0


def test_the_rated_payload_and_a_gripped_part_are_accepted(arm):
    """The youBot's rated 0.5 kg 5 cm out with a solid body's inertia, and the mass bound at the tool."""
    Payload.of(0.5, [0.0, 0.0, 0.05], np.diag([2e-4, 2e-4, 1e-4]), arm=arm)
    Payload.of(PAYLOAD_MASS_MAX, arm=arm)


def test_the_payload_gravity_bound_holds_over_random_poses(arm, nominal):
    """The levers bound the payload's gravity torque over the workspace: the model's gravity with and
    without the payload, on 2000 random poses, never differs by more than m g lever (and comes within
    2 % of it on joints 2-4: the bound is not loose)."""
    payload = Payload.of(1.0, [0.03, -0.02, 0.15])
    terms = [ModelTerms(model, 0.01) for model in (nominal, with_payload(nominal, payload, arm.tool))]
    poses = np.random.default_rng(5).uniform(arm.position_min, arm.position_max, (2000, 5))
    worst = np.max([np.abs(terms[1].gravity(q) - terms[0].gravity(q)) for q in poses], axis=0)
    bound = payload.mass * arm.gravity * payload_levers(payload, arm)
    assert np.all(worst <= bound + 1e-9), (worst, bound)
    assert np.all(worst[1:4] >= 0.98 * bound[1:4]), (worst, bound)


# -- item 12: wrench and rest_torque bounds --------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"force": [1e6, 0.0, 0.0]}, "force .* more than 500 N"),
    ({"force": [1.0, 0.0, 0.0], "torque": [0.0, 500.0, 0.0]}, "torque .* more than 100 N m"),
    ({"force": [1.0, 0.0, 0.0], "point": [0.0, 0.0, 50.0]}, "point .* more than 1 m"),
])
def test_a_wrench_beyond_its_bound_is_refused(arm, kwargs, message):
    sim = ArmSimulator(arm, realism=False)
    with pytest.raises(ValueError, match=message):
        sim.apply_wrench(FOREARM, **kwargs)
    sim.step()
    assert not np.any(sim.external_torque)


def test_float_rest_torque_beyond_a_quarter_of_the_rated_torque_is_refused(arm, nominal):
    """rest_torque 100 N m was taken: a spring no hand moves, saturating the drives."""
    with pytest.raises(ValueError, match=r"rest_torque 100 N m on arm_joint_5 is more than a hand breaks away"):
        FloatController(nominal, arm, rest_torque=100.0)
    FloatController(nominal, arm, rest_torque=[0.55, 0.5, 0.3, 0.12, 0.05])  # config/float_controller.yaml's example


# -- item 5: a goal is reached when the arm is there -----------------------------------------------


def regulate(sim: ArmSimulator, law: PDGravityController, goal: np.ndarray, seconds: float
             ) -> tuple[bool, str] | None:
    """PD + gravity (saturated as the guard does) to ``goal`` on the simulator; the first verdict."""
    limit = np.minimum(sim.arm.effort_max, sim.arm.drive_torque_limit)
    q0 = sim.measure().position
    law.hold(q0)
    duration = law.set_goal(goal, sim.time)
    arrival = GoalArrival(law.goal, sim.time, duration, law.kp, limit, sim.arm.joint_names)
    for _ in range(int(round(seconds / sim.timestep))):
        m = sim.measure()
        verdict = arrival.verdict(sim.time, m.position, m.velocity)
        if verdict is not None:
            return verdict
        sim.command("effort", np.clip(law.torque(sim.time, m.position, m.velocity), -limit, limit))
        sim.step()
    return None


def test_a_goal_the_wrist_never_reaches_is_reported_not_reached(arm, nominal):
    """Joint 4's PD torque below its static friction (Kp 0.5 N m/rad: 0.25 N m at 0.5 rad): the joint
    sticks far from the goal, and the verdict says so, names the joint and the cause (the node said 'reached
    in 0.85 s' from the plan)."""
    sim = ArmSimulator(arm)
    sim.reset(BENT, hold=True)
    sim.step(200)
    kp = PDGravityController(nominal, arm).kp.copy()
    kp[3] = 0.5
    law = PDGravityController(nominal, arm, kp=kp, kd=2.0 * np.sqrt(kp * 0.05))
    goal = sim.measure().position + np.array([0.0, 0.0, 0.0, 0.5, 0.0])
    verdict = regulate(sim, law, goal, 4.0)
    off = abs(sim.measure().position[3] - goal[3])
    assert off > 0.1  # the wrist did not get there (physics)
    assert verdict is not None and verdict[0] is False, verdict
    assert verdict[1].startswith(f"goal not reached: arm_joint_4 is {off:.3g} rad from its goal")
    assert "static friction" in verdict[1] and "\n" not in verdict[1]


def test_a_goal_the_arm_gets_to_is_reported_reached(arm, nominal):
    sim = ArmSimulator(arm)
    sim.reset(BENT, hold=True)
    sim.step(200)
    law = PDGravityController(nominal, arm)
    goal = sim.measure().position + np.array([0.2, -0.1, 0.1, 0.3, 0.2])
    verdict = regulate(sim, law, goal, 3.0 + GOAL_SETTLE_TIME)
    assert verdict is not None and verdict[0] is True, verdict
    assert np.abs(sim.measure().position - goal).max() <= GOAL_TOLERANCE  # the arm is there (physics)
