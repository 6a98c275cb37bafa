"""The identification node's experiment without ROS, on the simulator core (issue 31): the session
at the node's 100 Hz cycle drives the simulated arm (1 kHz) through the trajectory interface
(streamed horizons) or the effort interface (the node's controller, commands ``latency`` late, as
over DDS), and every physics step is recorded as the node records ``/joint_states``. Used by the
tests on the foreign robot; run as a script it measures the figures of doc/identification.md (the
node's default experiment and identification on the foreign robot, and the prediction of a third
motion)::

    .venv/bin/python test/foreign_experiment.py [ROBOT_SEED [KIND]]
    .venv/bin/python test/foreign_experiment.py --family [ROBOT_SEED]   # doc/identification.md's table

(``KIND`` a member of :data:`~youbot_dynamics.sim.true_robot.FOREIGN_FAMILY`, default ``foreign``.)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from youbot_dynamics.identification.experiment.session import ExcitationSession, JointSample
from youbot_dynamics.identification.io.dataset import Dataset
from youbot_dynamics.sim import ArmSimulator

CYCLE_STEPS = 10  # the node's 100 Hz cycle at the simulator's 1 kHz


def run_experiment(sim: ArmSimulator, session: ExcitationSession, interface: str = "trajectory",
                   torque: Callable[[Any, np.ndarray, np.ndarray, float], np.ndarray] | None = None,
                   latency: float = 0.0, until: float | None = None) -> Dataset:
    """Run ``session`` from the arm's current state until its motion ends (or aborts and the stop
    settles); ``torque(reference, q, dq, t)`` the effort interface's controller. Returns the
    recording (every step: time, measured q, q', effort)."""
    m = sim.measure()
    session.start(m.time, JointSample(m.time, m.time, m.position, m.velocity))
    delay = int(round(latency / sim.timestep))
    pending: list[tuple[int, str, Any]] = []
    rows = []
    step, next_message = 0, m.time
    while session.moving or not session.recording_complete(sim.time):
        if until is not None and sim.time >= until:
            break
        if step % CYCLE_STEPS == 0:
            m = sim.measure()
            t = m.time
            session.update(t, JointSample(t, t, m.position, m.velocity))
            if interface == "trajectory" and session.commanding and (t >= next_message - 1e-9 or not session.moving):
                message = session.waypoints(t)
                if message is not None:
                    pending.append((step + delay, "trajectory", message))
                    next_message = t + session.config.stream_period
            elif interface == "effort" and session.commanding:
                pending.append((step + delay, "effort", torque(session.reference(t), m.position, m.velocity, t)))
        while pending and pending[0][0] <= step:
            _, kind, value = pending.pop(0)
            if kind == "trajectory":
                sim.command_trajectory(*value)
            else:
                sim.command("effort", value)
        sim.step(1)
        step += 1
        m = sim.measure()
        rows.append(np.concatenate([[m.time], m.position, m.velocity, m.effort]))
    data = np.array(rows)
    n = sim.n_joints
    return Dataset(data[:, 0], data[:, 1:1 + n], data[:, 1 + 2 * n:1 + 3 * n], data[:, 1 + n:1 + 2 * n],
                   source="simulated experiment")


def true_robot_errors(sim: ArmSimulator, recording: Dataset, options: Any) -> Any:
    """What the simulated robot's own parameters (its dry friction as ``sign(q')``) score on
    ``recording`` processed with ``options``, with the drives' effort gain errors and offsets
    applied: the floor of any model of the arm's state on those data (at rest dry friction lies
    anywhere in its band; near a reversal the joint sticks). The truth is read from the simulator."""
    from youbot_dynamics.dynamics.chain import DHChain
    from youbot_dynamics.dynamics.friction import FrictionModel
    from youbot_dynamics.dynamics.model import DynamicModel
    from youbot_dynamics.identification.estimation.pipeline import predict_recording
    from youbot_dynamics.identification.estimation.validation import torque_errors

    n, config = sim.n_joints, sim.config
    truth = DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.true_parameters,
                                       friction_model=FrictionModel(n, eps=(0.0,) * n))
    observation, tau, _ = predict_recording(truth, recording, sim.arm, options)
    if sim.realism.effort_calibration:
        tau = (1.0 + config.effort_gain_error) * tau + config.effort_offset
    return torque_errors(observation.tau, tau, observation.used)


def measure(robot_seed: int = 31, kind: str = "foreign", verbose: bool = True) -> dict[str, Any]:
    """The default experiment (trajectory interface) on the foreign robot ``kind`` of ``robot_seed``,
    identified as the node does; its held-out, same-motion, third-motion and point-to-point errors and
    computed torque on the stroke (printed with ``verbose``)."""
    from pathlib import Path

    from youbot_dynamics.arm.description import default_arm
    from youbot_dynamics.control import collision_thresholds
    from youbot_dynamics.control.observer import unfitted_rms
    from youbot_dynamics.identification.estimation.friction_fit import EPS_CANDIDATES, TERM_CANDIDATES
    from youbot_dynamics.identification.estimation.pipeline import periodic_cut, summary_lines
    from youbot_dynamics.identification.estimation.processing import VELOCITY_SOURCES, ProcessingOptions
    from youbot_dynamics.identification.experiment.analysis import experiment_lines, identify_experiment
    from youbot_dynamics.identification.experiment.session import SessionConfig
    from youbot_dynamics.identification.io.trajfile import load_trajectory
    from youbot_dynamics.files.paths import config_path
    from youbot_dynamics.sim import load_sim_config
    from youbot_dynamics.sim.true_robot import foreign_robot

    arm = default_arm()
    excitation, validation, third = (load_trajectory(path, arm.joint_names).trajectory for path in (
        config_path("excitation_default.yaml"), config_path("excitation_validation.yaml"),
        Path(__file__).resolve().parent / "foreign_third_motion.yaml"))
    sim = ArmSimulator(arm, foreign_robot(load_sim_config(arm=arm), robot_seed, kind))
    sim.reset(excitation.evaluate(0.0)[0] + np.array([0.1, -0.1, 0.15, -0.1, 0.15]), hold=True)
    sim.step(500)
    session = ExcitationSession(arm, excitation, SessionConfig(state_timeout=0.5), validation)  # the node's defaults
    data = run_experiment(sim, session, "trajectory", latency=0.005)
    run = identify_experiment(data, session.segments(), arm, options=ProcessingOptions(cutoff_hz=5.0),
                              excitation=excitation, method="consistent", structure="full",
                              eps_candidates=EPS_CANDIDATES, term_candidates=TERM_CANDIDATES,
                              velocity_candidates=VELOCITY_SOURCES)
    segments = run.summary["segments"]
    held = periodic_cut(data, segments["validation_start"], segments["validation_period"],
                        segments["validation_repeats"])
    floor = true_robot_errors(sim, held, run.options)
    errors = predict_motion(sim, run, arm, third)
    moves = predict_motion(sim, run, arm, point_to_point_motion(arm, excitation.evaluate(0.0)[0], robot_seed))
    tracking, collisions = computed_torque_stroke(sim, run.model, arm, collision_thresholds(unfitted_rms(run.summary)))
    if verbose:
        print("\n".join(summary_lines(run) + experiment_lines(run)))
        print(f"the robot's own parameters on the held-out segment (its effort gain errors and offsets applied): "
              f"{100 * floor.overall:.2f}% (moving rows {100 * floor.moving:.2f}%, at rest {100 * floor.rest:.2f}%); "
              f"identified / truth {run.identified.overall / floor.overall:.2f}")
        print(f"third motion: {100 * errors.overall:.2f}% (joints "
              f"{', '.join(f'{100 * e:.2f}' for e in errors.relative_rms)} %); held-out / third "
              f"{run.identified.overall / errors.overall:.2f}")
        print(f"point-to-point motion: {100 * moves.overall:.2f}%, moving rows {100 * moves.moving:.2f}% (joints "
              f"{', '.join(f'{100 * e:.2f}' for e in moves.relative_rms)} %)")
        print(f"computed torque on the stroke with this model: tracking RMS per joint "
              f"{', '.join(f'{1e3 * e:.2f}' for e in tracking)} mrad; {collisions} false collision(s)")
    return {"kind": kind, "held_out": run.identified.overall, "third": errors.overall, "third_moving": errors.moving,
            "point_to_point_moving": moves.moving, "tracking_mrad": float(1e3 * tracking.max()),
            "collisions": collisions, "friction": run.summary["friction_selection"]["chosen"]}


def family_table(robot_seed: int = 31) -> str:
    """:func:`measure` on every member of the family, as the markdown table of doc/identification.md
    (per member, then the worst and the median of each column)."""
    from youbot_dynamics.sim.true_robot import FOREIGN_FAMILY

    rows = [measure(robot_seed, kind, verbose=False) for kind in FOREIGN_FAMILY]
    keys = ("held_out", "third", "third_moving", "point_to_point_moving", "tracking_mrad", "collisions")
    scale = {"tracking_mrad": 1.0}  # the others are fractions, shown in %
    lines = [f"| robot (seed {robot_seed}) | held-out [%] | third motion [%] | third, moving rows [%] | point to "
             f"point, moving rows [%] | computed torque, worst joint [mrad RMS] | false collisions |",
             "|---" * (len(keys) + 1) + "|"]

    def cell(key: str, value: float) -> str:
        return f"{value:.0f}" if key == "collisions" else f"{scale.get(key, 100.0) * value:.2f}"

    for row in rows:
        lines.append(f"| {row['kind']} | " + " | ".join(cell(k, row[k]) for k in keys) + " |")
    for name, pick in (("worst", np.max), ("median", np.median)):
        lines.append(f"| **{name}** | " + " | ".join(cell(k, pick([r[k] for r in rows])) for k in keys) + " |")
    return "\n".join(lines)


def point_to_point_motion(arm: Any, q_start: np.ndarray, seed: int) -> Any:
    """Point-to-point moves like the controllers' jobs: rest-to-rest quintics between random clear
    configurations, each at a random fraction (0.1-1) of the fastest move the limits allow, from and
    back to ``q_start`` (a motion of another character than a Fourier excitation or the sweep)."""
    from youbot_dynamics.identification.excitation.trajectories import WaypointTrajectory
    from youbot_dynamics.identification.excitation.waypoints import random_configurations

    moves = random_configurations(arm, 8, seed, q_start=q_start, dwell=0.5)
    slow = np.random.default_rng(seed).uniform(1.0, 10.0, moves.move_durations.size)
    return WaypointTrajectory(moves.waypoints, moves.move_durations * slow, moves.dwell)


def predict_motion(sim: ArmSimulator, run: Any, arm: Any, motion: Any) -> Any:
    """Drive ``motion`` once on ``sim`` (trajectory interface) and the errors of ``run``'s model on it."""
    from youbot_dynamics.identification.estimation.pipeline import excitation_delay, periodic_cut, predict_recording
    from youbot_dynamics.identification.experiment.session import SessionConfig

    probe = ExcitationSession(arm, motion, SessionConfig(periods=1, validation_periods=0, validation_repeats=0,
                                                         sweep_speeds=()))
    recording = run_experiment(sim, probe, "trajectory", latency=0.005)
    start = probe.segments()["start"]
    cut = periodic_cut(recording, start + excitation_delay(recording, motion, start, 0.3), motion.duration, 1)
    return predict_recording(run.model, cut, arm, run.options)[2]


def computed_torque_stroke(sim: ArmSimulator, model: Any, arm: Any, thresholds: np.ndarray) -> tuple[np.ndarray, int]:
    """The main job's stroke under computed torque with ``model`` (:func:`stroke.stroke`, 0.5 s
    held after it): the RMS tracking error per joint [rad] from the trajectory's start, and the
    collisions the momentum observer and detector report (as the controller node runs them: on the
    joint states' measured effort, ``observer_torque: measured``; on the command instead, the
    drives' effort gain errors, which the identified model carries, showed as 0.15-0.35 N m of
    external torque while moving fast: 12 false collisions with the model of positions-derived
    velocities)."""
    from stroke import START, stroke

    from youbot_dynamics.control import CollisionDetector, MomentumObserver
    from youbot_dynamics.control.observer import STICTION_FACTOR

    observer, detector = MomentumObserver(model), CollisionDetector(thresholds)
    errors, collisions = [], 0
    for t, q, dq, tau, q_d in stroke(sim, model, arm, 0.5):
        r = observer.update_measured(t, q, dq, sim.measure().effort)  # the state's effort: not stepped yet
        up, down = observer.terms.kinetic_levels(observer.gravity)
        collisions += detector.update(t, r, dq, STICTION_FACTOR * np.maximum(up, down)) is True
        if t >= START:
            errors.append(q - q_d)
    return np.sqrt(np.mean(np.square(errors), axis=0)), collisions


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1 and sys.argv[1] == "--family":
        print(family_table(int(sys.argv[2]) if len(sys.argv) > 2 else 31))
    else:
        measure(int(sys.argv[1]) if len(sys.argv) > 1 else 31, sys.argv[2] if len(sys.argv) > 2 else "foreign")
