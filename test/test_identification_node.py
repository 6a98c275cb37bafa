"""The identification node: its cores (session, pipeline segments; no ROS) and the node over real DDS.

Core tests: start refusals, the phase timeline, progress and segments, each safety check, the
stop, the tracking check's tolerance to command delays, the waypoints sent to a trajectory
controller, the node's PD + feedforward on the simulator core, and the alignment and resampling
of a recording.

DDS tests (domain 67 in process, 68 for the executable; localhost discovery only): the simulator
node (realism on: perturbed inertials, friction, torque noise, quantisation) and the
identification node run in this process, the simulator's physics and executor in their own
threads. The simulator publishes ``/clock`` and stamps joint states with the simulated time, and
the identification node runs with ``use_sim_time``: on this shared 2-core machine the simulator
does not always keep real time, and the experiment must follow the arm's time, not the wall
clock. Joint states come at 500 Hz (the default 1 kHz works too, but leaves a loaded machine
less headroom). End to end, started as the identify action (a client written from the .action:
feedback, result), the node approaches, excites (3 periods of the shipped 8 s excitation: 2
identify, 1 validates), records (bag + CSV), identifies, validates and writes the parameter file;
goals it cannot run end at once with the reason; a canceled goal and ``~/abort`` during an
excitation brake and hold the arm (the recording stays valid). Refusals use fake joint states (no
simulator), the executable runs as a subprocess.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import local_ros_domain, ros_domain_id
from ros_harness import RosHarness, SharedHarness, shared_harness_fixture
import yaml

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.contract.topics import JOINT_STATES, TRAJECTORY
from youbot_dynamics.control.laws import PDFeedforward
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.identification.estimation.pipeline import excitation_delay, periodic_cut, reference_models
from youbot_dynamics.identification.experiment.analysis import HELD_OUT, SAME_MOTION
from youbot_dynamics.identification.experiment.session import (MIN_APPROACH_TIME, RECORDING_WAIT, TRAJECTORY_STEP,
                                                               ExcitationSession, ExperimentPhase, JointSample,
                                                               SessionConfig, SessionRefused)
from youbot_dynamics.motion.braking import braking_duration
from youbot_dynamics.identification.io.dataset import Dataset, read_csv_dataset
from youbot_dynamics.identification.io.trajfile import load_trajectory

ROOT = Path(__file__).resolve().parent.parent
ARM = default_arm()
EXCITATION_FILE = ROOT / "config" / "excitation_default.yaml"
EXCITATION = load_trajectory(EXCITATION_FILE, ARM.joint_names).trajectory
Q_START = EXCITATION.evaluate(0.0)[0]
OFFSET = np.array([0.1, -0.1, 0.15, -0.1, 0.15])  # where the DDS tests leave the arm before ~/start
DOMAIN_ID = ros_domain_id(__file__)
CLOCK_DOMAIN_ID = int(ros_domain_id(__file__, 1))  # a domain without any /clock publisher
SUBPROCESS_DOMAIN_ID = ros_domain_id(__file__, 2)
# held-out relative torque errors in the simulator, whose true robot has friction beyond every
# structure identify fits (Stribeck, asymmetric, load-dependent on the link-side torque, issue 13).
# Held-out means a different motion since issue 31 (the validation trajectory): measured in the
# pure-Python session and simulator core with this test's settings, overall 5.32 %, joints
# 4.6-9.1 %, moving rows 4.3 %, 11x better than the nominal model (the same-motion period: 3.55 %;
# before issue 31 that period was the "held-out" figure: 4.07 %, moving rows 2.9 %)
GOALS = {"overall": 0.07, "joint": 0.12, "moving": 0.06, "gain": 5.0}


def sample(t, q, dq=None, stamp_offset=0.0):
    q = np.asarray(q, dtype=float)
    return JointSample(t, t + stamp_offset, q, np.zeros_like(q) if dq is None else np.asarray(dq, dtype=float))


def run_perfectly(session, t0=0.0, dt=0.01, until=None, stamp_offset=0.0):
    """Feed the session the reference itself as the joint state until it leaves the motion phases."""
    t, phases = t0, []
    while session.moving and (until is None or not until(session, t)):
        q, dq, _ = session.reference(t)
        changed = session.update(t, sample(t, q, dq, stamp_offset))
        if changed is not None:
            phases.append((changed, t))
        t += dt
    return t, phases


# -- session core -----------------------------------------------------------------------------------


def test_start_is_refused_with_the_reason():
    config = SessionConfig(max_start_distance=0.5, state_timeout=0.1)
    session = ExcitationSession(ARM, EXCITATION, config)
    cases = [
        (None, "no joint state"),
        (sample(0.0, Q_START), "stale"),  # checked at t = 1.0 below: 1 s old
        (sample(1.0, Q_START + [0.6, 0, 0, 0, 0]), "0.600 rad from the excitation's start pose on joint 1"),
        (sample(1.0, Q_START, dq=[0, 0.2, 0, 0, 0]), "moving"),
        (sample(1.0, np.r_[Q_START[:1], ARM.position_max[1] + 0.1, Q_START[2:]]), "outside its joint limits"),
    ]
    for state, reason in cases:
        with pytest.raises(SessionRefused, match=reason):
            session.start(1.0, state)
        assert session.phase is ExperimentPhase.IDLE and not session.commanding
    assert session.abort(1.0, "nothing moves") is False
    assert session.start(1.0, sample(1.0, Q_START + 0.4)) > MIN_APPROACH_TIME
    with pytest.raises(SessionRefused, match="already approach"):
        session.start(1.1, sample(1.1, Q_START))


def test_excitations_that_would_abort_are_rejected_up_front():
    with pytest.raises(ValueError, match="limit_margin"):
        ExcitationSession(ARM, EXCITATION, SessionConfig(limit_margin=0.2))  # joint 2 comes within 0.105 rad
    with pytest.raises(ValueError, match="validation_periods"):
        SessionConfig(periods=2, validation_periods=2)


def test_phases_progress_and_segments():
    config = SessionConfig(periods=3, validation_periods=1, settle_time=0.5, hold_time=0.5)
    session = ExcitationSession(ARM, EXCITATION, config)
    start = Q_START + np.array([0.3, -0.2, 0.1, 0.0, -0.3])
    approach = session.start(10.0, sample(10.0, start, stamp_offset=-7.0))
    # rest-to-rest quintic: peak velocity 15/8 d / T, peak acceleration 10/sqrt(3) d / T^2
    assert approach == pytest.approx(max(15 / 8 * 0.3 / config.approach_velocity,
                                         np.sqrt(10 / np.sqrt(3) * 0.3 / config.approach_acceleration)))
    np.testing.assert_allclose(session.reference(10.0)[0], start)
    progress, activities = [], {}
    t, phases = 10.0, []
    while session.moving:
        q, dq, _ = session.reference(t)
        changed = session.update(t, sample(t, q, dq, stamp_offset=-7.0))
        if changed is not None:
            phases.append((changed, t))
        progress.append(session.progress(t))
        activities.setdefault(session.phase, []).append(session.activity(t))
        t += 0.01
    assert [p for p, _ in phases] == [ExperimentPhase.SETTLE, ExperimentPhase.EXCITE, ExperimentPhase.SWEEP,
                                      ExperimentPhase.HOLD, ExperimentPhase.IDENTIFY]
    # what the node logs every second: what the experiment does or waits for, never silence
    assert activities[ExperimentPhase.APPROACH][0] == f"moving to the start pose ({approach:.1f} s left)"
    assert activities[ExperimentPhase.SETTLE][0] == "holding the start pose while the arm settles (0.5 s)"
    periods = [a.split(",")[0] for a in activities[ExperimentPhase.EXCITE]]
    assert sorted(set(periods)) == ["excitation period 1 of 3 (identification)",
                                    "excitation period 2 of 3 (identification)",
                                    "excitation period 3 of 3 (same-motion check; not fitted)"]
    assert activities[ExperimentPhase.SWEEP][0].startswith("friction sweep at 6 speeds up to 1.2 rad/s")
    assert activities[ExperimentPhase.HOLD][0].startswith("holding the final pose")
    assert session.activity(t + 3.0) == "computing the parameters from the recording (3 s)"
    times = dict(phases)
    assert times[ExperimentPhase.SETTLE] - 10.0 == pytest.approx(approach, abs=0.011)
    assert times[ExperimentPhase.SWEEP] - times[ExperimentPhase.EXCITE] == pytest.approx(3 * 8.0, abs=0.011)
    sweep = session.sweep_duration  # the friction sweep: 4 moves per speed, a hold at each rest
    assert sweep == pytest.approx(session.sweep.move_durations.sum() + 0.25 * (4 * 6 + 1)) and 30.0 < sweep < 50.0
    assert times[ExperimentPhase.HOLD] - times[ExperimentPhase.SWEEP] == pytest.approx(sweep, abs=0.011)
    assert np.all(np.diff(progress) >= -1e-9) and progress[-1] == pytest.approx(90.0, abs=0.1)
    assert session.recording_complete(t) and session.max_tracking < 1e-9
    # the recording is complete only once it holds the last requested sample on the stamps' clock
    # (a node handling joint states late would otherwise cut it short: issue 15), else after RECORDING_WAIT
    end_stamp = 10.0 + approach + 0.5 - 7.0 + 3 * 8.0 + sweep + config.max_command_delay
    assert not session.recording_complete(t, last_stamp=end_stamp - 0.2)
    assert session.recording_complete(t, last_stamp=end_stamp + 0.001)
    assert session.recording_complete(session.phase_start + RECORDING_WAIT, last_stamp=end_stamp - 0.2)
    segments = session.segments()  # on the stamps' clock (7 s behind the node's here), exactly as planned
    assert segments == {"start": pytest.approx(10.0 + approach + 0.5 - 7.0), "period": 8.0,
                        "identification_periods": 2, "validation_periods": 1,
                        "sweep_start": pytest.approx(10.0 + approach + 0.5 - 7.0 + 3 * 8.0), "sweep_duration": sweep,
                        "validation_start": pytest.approx(10.0 + approach + 0.5 - 7.0 + 3 * 8.0 + sweep),
                        "validation_period": 0.0, "validation_repeats": 0}  # no validation trajectory
    # the identify phase: each stage fills half of what is left; stages the pipeline opens inside
    # another (processing inside the friction choice) and any number of them never move it back
    bar = session.progress_bar("processing")
    bar(0.5)
    assert session.progress(t) == pytest.approx(90.0 + 10.0 * 0.25)
    shown = [session.progress(t)]
    outer = session.progress_bar("choosing the friction structure")
    for _ in range(6):
        inner = session.progress_bar("processing")
        for x in (0.0, 0.3, 1.0):
            inner(x)
            shown.append(session.progress(t))
        inner.done()
        outer(0.2)
        shown.append(session.progress(t))
    outer.done()
    shown.append(session.progress(t))
    assert np.all(np.diff(shown) >= 0.0) and shown[-1] > shown[0] and shown[-1] < 100.0, shown
    session.finish(t)
    assert session.progress(t) == 100.0 and session.commanding  # done: still holding the start pose
    np.testing.assert_allclose(session.reference(t + 5.0)[0], Q_START)
    assert [p["phase"] for p in session.describe()["phases"]] == [
        "approach", "settle", "excite", "sweep", "hold", "identify", "done"]


def excite(session, seconds):
    """Start at the start pose and run perfectly ``seconds`` into the excitation; the time then."""
    session.start(0.0, sample(0.0, Q_START))
    t, _ = run_perfectly(session, until=lambda s, t: s.phase is ExperimentPhase.EXCITE and t - s.phase_start >= seconds)
    return t


def test_an_empty_sweep_speeds_drives_no_sweep():
    """``sweep_speeds: []`` (which a ROS parameter file or ``-p sweep_speeds:=[]`` delivers as None):
    no sweep phase, the validation follows the excitation; a non-positive speed is refused."""
    for empty in ((), [], None):
        session = ExcitationSession(ARM, EXCITATION, SessionConfig(periods=2, validation_periods=1,
                                                                   sweep_speeds=empty))
        assert session.sweep is None and session.sweep_duration == 0.0 and session.config.sweep_speeds == ()
    with pytest.raises(ValueError, match="sweep_speeds must be positive"):
        SessionConfig(sweep_speeds=(0.1, 0.0))
    with pytest.raises(ValueError, match=r"the friction sweep \(sweep_speeds \[0.1, 1.5\]\): .* above every joint"):
        ExcitationSession(ARM, EXCITATION, SessionConfig(sweep_speeds=(0.1, 1.5)))  # 1.5 > 0.9 velocity_max


def test_safety_aborts_stop_and_hold():
    config = SessionConfig(periods=2, validation_periods=1, stop_deceleration=10.0, max_tracking_error=0.05,
                           state_timeout=0.1)
    deceleration = np.minimum(10.0, ARM.acceleration_max)
    # tracking error: the arm 0.3 rad off its reference
    session = ExcitationSession(ARM, EXCITATION, config)
    t = excite(session, 1.0)
    q, dq, ddq = session.reference(t)
    off = q + [0, 0.3, 0, 0, 0]
    assert session.update(t, sample(t, off, dq)) is ExperimentPhase.ABORTED
    assert "tracking error" in session.reason and session.recording_complete(t) is False
    # the stop: from the reference's state (what the arm is commanded), continuous, braking within
    # the arm's acceleration limits (not the 10 rad/s^2 asked for), then held
    stop = session.stop
    assert stop.duration == pytest.approx(float(braking_duration(dq, ddq, deceleration)))
    states = [session.reference(t + k) for k in np.linspace(0.0, stop.duration, 201)]
    for got, want in zip(states[0], (q, dq, ddq)):
        np.testing.assert_allclose(got, want, atol=1e-12)
    assert max(np.max(np.abs(s[2]) / deceleration) for s in states) <= 1.0 + 1e-9
    assert max(np.max(np.abs(s[1]) / ARM.velocity_max) for s in states) <= 1.0
    held = session.reference(t + stop.duration + 1.0)
    np.testing.assert_allclose(held[0], stop.final)
    assert not np.any(held[1]) and session.commanding and not session.moving
    assert session.recording_complete(t + stop.duration + config.stop_settle)
    times, q_w, dq_w, _ = session.waypoints(t)
    np.testing.assert_allclose(q_w[-1], held[0])
    assert times[-1] == pytest.approx(stop.duration) and not np.any(dq_w[-1])
    # stale joint states
    session = ExcitationSession(ARM, EXCITATION, config)
    t = excite(session, 0.5)
    q, dq, _ = session.reference(t)
    assert session.update(t + 0.2, sample(t, q, dq)) is ExperimentPhase.ABORTED
    assert "arrived 0.200 s ago" in session.reason
    # a node falling behind its joint states: each one handled ("received") at once, but measured
    # ever longer ago by its stamp (a queue on a busy machine); a constant clock offset between
    # stamps and receive times is no fault, a growing one is
    session = ExcitationSession(ARM, EXCITATION, config)
    session.start(0.0, sample(0.0, Q_START, stamp_offset=-1.5))
    t, _ = run_perfectly(session, stamp_offset=-1.5,
                         until=lambda s, t: s.phase is ExperimentPhase.EXCITE and t - s.phase_start >= 0.5)
    for lag in np.arange(0.0, 0.09, 0.01):  # 1.5 s clock offset, then up to 90 ms behind: still acting
        q, dq, _ = session.reference(t - lag)
        assert session.update(t, JointSample(t, t - 1.5 - lag, q, dq)) is None, session.reason
        t += 0.01
    q, dq, _ = session.reference(t - 0.12)
    assert session.update(t, JointSample(t, t - 1.5 - 0.12, q, dq)) is ExperimentPhase.ABORTED
    assert "measured 0.120 s ago, by its stamp" in session.reason and "falling behind" in session.reason
    # a joint moving into the limit zone (here joint 2, whose excitation comes within 0.105 rad)
    session = ExcitationSession(ARM, EXCITATION, config)
    t = excite(session, 0.5)
    q, dq, _ = session.reference(t)
    near = q.copy()
    near[1] = ARM.position_max[1] - 0.04
    assert session.update(t, sample(t, near, np.r_[0, 0.5, 0, 0, 0])) is ExperimentPhase.ABORTED
    assert "joint 2" in session.reason and "towards its limit" in session.reason
    # on request; not possible once the motion is over
    session = ExcitationSession(ARM, EXCITATION, config)
    t = excite(session, 0.5)
    assert session.abort(t, "abort requested") and session.phase is ExperimentPhase.ABORTED
    assert session.abort(t + 1.0, "again") is False


def test_excitations_the_arm_could_not_stop_from_are_rejected_up_front():
    """Every streamed message ends in a braking tail: one from any state of the excitation must
    stay within the limits. At 0.5 rad/s^2 the tails from 1.4 rad/s run far beyond them."""
    with pytest.raises(ValueError, match="could not stop within its limits from the excitation at t = "):
        ExcitationSession(ARM, EXCITATION, SessionConfig(stop_deceleration=0.5))
    with pytest.raises(ValueError, match="stream_period"):
        SessionConfig(stream_horizon=0.1, stream_period=0.1)
    session = ExcitationSession(ARM, EXCITATION)
    assert (0.4 < session.max_tail < 0.7
            and session.stop_time_bound() == pytest.approx(session.config.stream_horizon + session.max_tail))


def test_an_arm_resting_on_a_stop_may_start_and_move_away():
    session = ExcitationSession(ARM, EXCITATION, SessionConfig(max_start_distance=2.0))
    on_stop = Q_START.copy()
    on_stop[1] = ARM.position_max[1] + 0.003  # joint 2 fallen onto its upper stop (motors off), a little in
    session.start(0.0, sample(0.0, on_stop))
    assert session.planned(np.linspace(0.0, session.approach_duration, 50))[0].max(axis=0)[1] <= ARM.position_max[1]
    # from the limit, not beyond
    t, phases = run_perfectly(session, until=lambda s, t: s.phase is ExperimentPhase.EXCITE)
    assert [p for p, _ in phases] == [ExperimentPhase.SETTLE, ExperimentPhase.EXCITE]


def test_tracking_check_tolerates_a_command_delay():
    config = SessionConfig(periods=2, validation_periods=1, max_tracking_error=0.02, max_command_delay=0.3)
    session = ExcitationSession(ARM, EXCITATION, config)
    t = excite(session, 2.0)
    late = session.reference(t - 0.25)[0]  # the drives started the trajectory 0.25 s late
    assert np.max(np.abs(late - session.reference(t)[0])) > 0.1
    assert session.update(t, sample(t, late)) is None
    assert np.max(session.tracking_error(sample(t, late))) < 1e-9
    # a state that waited 50 ms in the node's queue is compared with the reference of its stamp; one
    # that waited longer than state_timeout is stale (the node falls behind)
    queued = JointSample(t, t - 0.05, session.reference(t - 0.05)[0], np.zeros(5))
    assert session.update(t, queued) is None and np.max(session.tracking_error(queued)) < 1e-9
    assert np.max(session.tracking_error(JointSample(t, t - 0.5, session.reference(t - 0.5)[0], np.zeros(5)))) < 1e-9
    too_late = session.reference(t - 0.6)[0]
    assert session.update(t, sample(t, too_late)) is ExperimentPhase.ABORTED
    assert "command delay up to 0.3 s" in session.reason


def test_trajectory_waypoints_follow_the_reference():
    """A trajectory controller gets the planned reference over the next stream_horizon, then a
    braking tail to rest; nothing before the start, the rest of the stop after an abort."""
    config = SessionConfig(periods=2, validation_periods=1, stream_horizon=0.3)
    session = ExcitationSession(ARM, EXCITATION, config)
    assert session.waypoints(0.0) is None  # not started
    start = Q_START + 0.2
    approach = session.start(0.0, sample(0.0, start))
    excite_start = approach + config.settle_time
    for now in (0.0, approach - 0.15, excite_start - 0.1, excite_start + 3.05, excite_start + 16.0 - 0.2):
        times, q, dq, ddq = session.waypoints(now)
        horizon = times <= 0.3 + 1e-9
        np.testing.assert_allclose(times[horizon], [0.1, 0.2, 0.3])
        assert np.all(np.diff(times) > 0) and np.all(np.diff(times[~horizon]) <= TRAJECTORY_STEP + 1e-9)
        for got, want in zip((q, dq, ddq), session.planned(now + times[horizon])):
            np.testing.assert_allclose(got[horizon], want, atol=1e-12)
        assert not np.any(dq[-1]) and not np.any(ddq[-1])  # at rest at the end
        assert np.all(np.abs(ddq) <= session.deceleration + 1e-9) and np.all(np.abs(dq) <= ARM.velocity_max)
    np.testing.assert_allclose(session.planned(approach)[0][0], Q_START, atol=1e-12)
    np.testing.assert_allclose(session.planned(excite_start + 3.05)[0][0], EXCITATION.evaluate(3.05)[0], atol=1e-12)
    np.testing.assert_allclose(session.planned(excite_start + 16.0 + 0.1)[0][0], Q_START, atol=1e-12)  # hold
    # at rest (settle): the horizon holds the start pose, no tail
    times, q, dq, _ = session.waypoints(approach + 0.1)
    np.testing.assert_allclose(times, [0.1, 0.2, 0.3])
    np.testing.assert_allclose(q, np.tile(Q_START, (3, 1)), atol=1e-12)
    # after an abort: the rest of the stop, from now (the last message was sent 0.05 s before it)
    session.waypoints(excite_start + 1.95)
    session.abort(excite_start + 2.0, "test")
    assert session.stop.duration > 0.2
    times, q, _, _ = session.waypoints(excite_start + 2.1)
    assert times[-1] == pytest.approx(session.stop.duration - 0.1)
    np.testing.assert_allclose(q[-1], session.stop.final)


def test_pd_feedforward_drives_the_simulated_arm_through_the_experiment():
    """The node's effort controller (100 Hz, zero-order hold) on the simulator core: approach,
    settle, one period, hold, within 0.05 rad of tracking error (2x below the 0.1 rad abort limit;
    measured 0.028 rad before the drives' reflected rotor inertias joined the simulated arm and the
    model, 0.033 rad since: the low default gains of joints 4-5 move a heavier joint; 0.042 rad on
    the harder true robot of issue 13, with Stribeck and load-dependent friction: the bound was
    0.04)."""
    from youbot_dynamics.sim import ArmSimulator

    nominal, _, beta, _ = reference_models(ARM)
    controller = PDFeedforward(ARM, DynamicModel(nominal.chain, nominal.base, beta), [240.0, 240.0, 80.0, 12.0, 8.0],
                               [24.0, 24.0, 8.0, 1.2, 0.8])
    session = ExcitationSession(ARM, EXCITATION, SessionConfig(periods=1, validation_periods=0, settle_time=0.5,
                                                               hold_time=0.5))
    sim = ArmSimulator(ARM)
    sim.reset(Q_START + OFFSET)
    m = sim.measure()
    session.start(0.0, sample(0.0, m.position, m.velocity))
    step = 0
    while session.moving:
        if step % 10 == 0:
            t, m = step * sim.timestep, sim.measure()
            state = sample(t, m.position, m.velocity)
            session.update(t, state)
            sim.command("effort", controller.torque(session.reference(t), m.position, m.velocity))
        sim.step(1)
        step += 1
    assert session.phase is ExperimentPhase.IDENTIFY, session.reason
    assert session.max_tracking < 0.05, session.max_tracking
    # at rest, static friction holds a joint up to its breakaway torque / kp from the goal: on the true
    # robot fc + fa + fs + fl |G(q)| (Stribeck and load-dependent friction, issue 13; joint 4:
    # 0.034 rad measured, 0.021 rad on the seed's robot with fc alone)
    c = sim.config
    gravity = DynamicModel.from_standard(nominal.chain, sim.true_parameters).gravity(Q_START)
    breakaway = (np.asarray(c.coulomb_friction) + np.abs(c.coulomb_asymmetry) + np.asarray(c.stribeck_friction)
                 + np.asarray(c.load_friction) * np.abs(gravity))
    kp = np.array([240.0, 240.0, 80.0, 12.0, 8.0])
    assert np.all(np.abs(sim.measure().position - Q_START) < 1.1 * breakaway / kp + 1e-3)


# -- pipeline segments ----------------------------------------------------------------------------


def test_delay_is_found_and_periods_are_resampled_exactly():
    rng = np.random.default_rng(3)
    t0, delay, period = 100.0, 0.037, EXCITATION.duration
    t = 99.0 + np.cumsum(np.full(20000, 0.0009987) + rng.uniform(-2e-4, 2e-4, 20000))  # jittery 1 kHz stamps
    local = np.clip(t - t0 - delay, 0.0, None)
    q = EXCITATION.evaluate(np.where(local < 2 * period, np.fmod(local, period), 0.0))[0]
    data = Dataset(t, q, np.zeros_like(q), source="synthetic")
    assert excitation_delay(data, EXCITATION, t0, 0.3) == pytest.approx(delay, abs=0.0015)
    cut = periodic_cut(data, t0 + delay, period, 2)
    per_period = round(period / data.sample_time)
    assert cut.n_samples == 2 * per_period and cut.t[0] == 0.0
    np.testing.assert_allclose(np.diff(cut.t), period / per_period)
    np.testing.assert_allclose(cut.q[:per_period], cut.q[per_period:], atol=2e-3)  # periodic again


# -- over DDS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ros_environment():
    with local_ros_domain(DOMAIN_ID):
        yield


class Harness(RosHarness):
    """The simulator (physics and executor threads), the identification node and a tester node
    (executor in the test's thread); see the module docstring."""

    def __init__(self, output: Path, **overrides) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from geometry_msgs.msg import Inertia
        from rclpy.parameter import Parameter
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        from youbot_dynamics.nodes.identification_node import IdentificationNode
        from youbot_dynamics.nodes.sim_node import SimNode

        from youbot_dynamics.nodes.common import create_executor

        # the events executor, as the executables (the Python one fell 1 s behind the joint states with
        # two CPU hogs: aborted "joint states stale")
        super().__init__("identification_tester", executor=lambda context: create_executor(True, context))
        self.Trigger = Trigger
        self.sim = SimNode(context=self.context, parameter_overrides=[
            Parameter("initial_positions", value=(Q_START + OFFSET).tolist()), Parameter("publish_clock", value=True),
            Parameter("publish_rate", value=500.0), Parameter("diagnostics_period", value=0.0)])
        # state_timeout and stream_horizon 1 s (as the demo's node): in this shared process (simulator,
        # node and tester) the node handles joint states late now and then (by their stamps: 0.1 s with
        # two CPU hogs, 0.51-0.56 s with three) and streams late too (a horizon of 0.5 s ran out after
        # 0.536 s with two hogs: "commands late"); the staleness checks have their own tests
        params = {"output_directory": str(output), "periods": 3, "validation_periods": 1, "use_sim_time": True,
                  "settle_time": 0.5, "hold_time": 0.5, "state_timeout": 1.0, "stream_horizon": 1.0, **overrides}
        self.node = IdentificationNode(context=self.context,
                                       parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        self.progress: list = []
        self.tester.create_subscription(DiagnosticStatus, "/identification_node/progress", self.progress.append, 100)
        self.payloads: list = []
        self.tester.create_subscription(Inertia, "/identification_node/payload_estimate", self.payloads.append, 10)
        self.trajectory_pub = self.tester.create_publisher(JointTrajectory,
                                                           TRAJECTORY, 10)
        self.clients = {name: self.tester.create_client(Trigger, f"/identification_node/{name}")
                        for name in ("start", "abort", "recalibrate")}
        from rclpy.action import ActionClient

        from youbot_dynamics_interfaces.action import Identify

        self.Identify = Identify
        self.identify = ActionClient(self.tester, Identify, "/identification_node/identify")
        self.feedback: list = []
        self.spin_in_thread(self.sim)
        self.add_node(self.node)
        self.sim.start()

    def close(self) -> None:
        self.node.shutdown()
        self.sim.stop()
        super().close()

    def call(self, name: str):
        return self.request(self.clients[name], self.Trigger.Request(), timeout=10.0)

    def send_goal(self, excitation_file: str = "", periods: int = 0):
        """An identify goal (written from the .action alone), accepted; its handle."""
        assert self.identify.wait_for_server(timeout_sec=10.0)
        self.feedback.clear()
        future = self.identify.send_goal_async(self.Identify.Goal(excitation_file=excitation_file, periods=periods),
                                               feedback_callback=lambda m: self.feedback.append(m.feedback))
        assert self.spin_until(future.done, 10.0) and future.result().accepted
        return future.result()

    def goal_result(self, goal_handle, timeout: float):
        """``(status, result)`` of a goal, waited for up to ``timeout`` s (asserted)."""
        future = goal_handle.get_result_async()
        assert self.spin_until(future.done, timeout), f"no result in {timeout} s; phase {self.phase()}"
        return future.result().status, future.result().result

    def place_arm(self, q) -> None:
        """Reset the simulated arm to rest at ``q`` and hold it there with a one-point trajectory
        (a trajectory controller holds its last point without a timeout)."""
        from youbot_dynamics.nodes.messages import trajectory_message

        with self.sim._lock:
            self.sim.sim.reset(q)
        self.trajectory_pub.publish(trajectory_message(ARM.joint_names, [0.05], [q]))
        assert self.spin_until(lambda: self.sim.sim.mode == "trajectory", 5.0)
        start = self.sim.sim.time
        assert self.spin_until(lambda: self.sim.sim.time > start + 1.0, 20.0)

    def phase(self) -> ExperimentPhase | None:
        return self.node.runner.session.phase if self.node.runner.session is not None else None


def start_service_ready(h: Harness) -> None:
    assert h.clients["start"].wait_for_service(timeout_sec=10.0)


@pytest.fixture(scope="module")
def harnesses(ros_environment, tmp_path_factory):
    """The module's harness, made again after a test that failed with it (ros_harness.SharedHarness)."""
    pytest.importorskip("rclpy")
    shared = SharedHarness(lambda domain: Harness(tmp_path_factory.mktemp("identification")), [DOMAIN_ID],
                           ready=start_service_ready)
    yield shared
    shared.close()


harness = shared_harness_fixture("harness", "harnesses")


def finished(h: Harness) -> bool:
    return (h.phase() in (ExperimentPhase.DONE, ExperimentPhase.FAILED, ExperimentPhase.ABORTED)
            and h.node.runner.recorder is None and not h.node.runner.identifying)


@pytest.mark.ros
@pytest.mark.timeout(400)
def test_end_to_end_identification_in_the_simulator(harness):
    """The experiment run as the identify action (a goal with the node's parameters), as a client
    written from the .action would: feedback while it runs, the result naming the model file."""
    from action_msgs.msg import GoalStatus

    h = harness
    h.place_arm(Q_START + OFFSET)
    wall = time.monotonic()
    goal = h.send_goal()
    # the friction structure is chosen from the data (issue 31): the identification takes 1-2 min
    status, result = h.goal_result(goal, 330.0)
    wall = time.monotonic() - wall
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success, result.message
    assert h.phase() is ExperimentPhase.DONE, h.node.runner.session.reason
    run = h.node.runner.run_directory
    # the recording: bag and CSV, the whole experiment, readable by the identification readers
    from youbot_dynamics.identification.io.bagio import read_joint_states
    from youbot_dynamics.dynamics.paramfile import load_model

    csv = read_csv_dataset(run / "recording.csv", ARM.n_joints)
    bag = read_joint_states(run / "recording", ARM.joint_names)
    session = h.node.runner.session
    assert bag.n_samples == csv.n_samples
    np.testing.assert_allclose(bag.q, csv.q)
    np.testing.assert_allclose(bag.t, csv.t - csv.t[0], atol=1e-6)
    # the recording begins at the start, the motion when a cycle has a current joint state (0.1-0.3 s
    # quiet, 0.76 s with two CPU hogs; refused as stale after state_timeout)
    lead = session.start_time - csv.t[0]
    assert -0.01 <= lead <= session.config.state_timeout + 0.05, lead  # stamped a step after the begin: -0.002 s
    assert csv.duration == pytest.approx(lead + session.motion_duration, abs=0.2)
    assert np.max(np.diff(csv.t)) < 0.02  # no gap: nothing lost
    metadata = yaml.safe_load((run / "recording" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert metadata["storage_identifier"] == "mcap" and metadata["message_count"] == csv.n_samples
    # the results
    model = load_model(run / "parameters.yaml")
    assert model.base.count == 47
    report = json.loads((run / "report" / "report.json").read_text())
    # held-out: the validation trajectory, a different motion; the same-motion period reported apart
    assert report["validation"]["on"] == HELD_OUT and report["summary"]["held_out"] == "different motion"
    assert report["summary"]["same_motion"]["what"] == SAME_MOTION
    assert (run / "report" / "torques.png").is_file()
    ident, nominal = report["validation"]["identified"], report["validation"]["nominal"]
    summary = report["summary"]
    print(f"\nend to end: {wall:.1f} s wall for {session.motion_duration:.1f} s of motion "
          f"({h.sim.sim.time:.1f} s simulated so far), {csv.n_samples} joint states, excitation delay "
          f"{1e3 * summary['segments']['delay']:.0f} ms, max tracking error {1e3 * session.max_tracking:.1f} mrad, "
          f"{report['estimation']['n_samples']} averaged samples, condition number "
          f"{report['estimation']['condition_number']:.1f}")
    print("held-out relative torque error per joint [%]: identified "
          f"{np.round(100 * np.array(ident['relative_rms']), 2).tolist()}, nominal "
          f"{np.round(100 * np.array(nominal['relative_rms']), 1).tolist()}")
    print(f"overall: identified {100 * ident['overall_relative']:.2f} %, nominal "
          f"{100 * nominal['overall_relative']:.1f} % ({nominal['overall_relative'] / ident['overall_relative']:.0f}x)")
    assert ident["overall_relative"] <= GOALS["overall"]
    assert ident["moving_relative"] <= GOALS["moving"]
    assert max(ident["relative_rms"]) <= GOALS["joint"]
    assert nominal["overall_relative"] >= GOALS["gain"] * ident["overall_relative"]
    assert report["session"]["outcome"] == "identify" and report["session"]["max_tracking_error_rad"] < 0.05
    # progress: the phases in order, percent rising to 100

    def phase_of(message):
        return next(v.value for v in message.values if v.key == "phase")

    assert h.spin_until(lambda: any(phase_of(m) == "done" for m in h.progress), 5.0)
    phases = [phase_of(m) for m in h.progress]
    order = ["approach", "settle", "excite", "sweep", "validate", "hold", "identify", "done"]
    seen = [p for i, p in enumerate(phases) if p in order and (i == 0 or phases[i - 1] != p)]
    assert seen == order, seen
    percents = [float(next(v.value for v in m.values if v.key == "percent")) for m in h.progress
                if phase_of(m) in order]
    assert np.all(np.diff(percents) >= -1e-6) and percents[-1] == 100.0
    done = {v.key: v.value for v in h.progress[-1].values}
    assert "relative_error" in done and done["held_out"] == "different motion" and "same_motion_relative_error" in done
    # the action's result and feedback: the figures of the report, the phases in order
    assert result.model_file == str(run / "parameters.yaml")
    assert result.held_out_relative_error == pytest.approx(ident["overall_relative"], rel=1e-6)
    assert result.nominal_relative_error == pytest.approx(nominal["overall_relative"], rel=1e-6)
    assert "different motion" in result.message and result.model_file in result.message
    assert {f.phase for f in h.feedback} <= {"starting", *order}, [f.phase for f in h.feedback]  # never the last run's
    fed = [f.phase for f in h.feedback if f.phase in order]  # "starting" until the motion begins
    assert [p for i, p in enumerate(fed) if i == 0 or fed[i - 1] != p] in (order, order[:-1]), fed
    assert np.all(np.diff([f.percent for f in h.feedback]) >= -1e-6)
    moving = [f for f in h.feedback if f.phase in ("excite", "validate")]
    assert moving and all(f.remaining_s > 0.0 for f in moving[:-2])
    assert max(f.max_tracking_error for f in h.feedback) == pytest.approx(session.max_tracking, rel=0.5)


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_identify_goals_the_node_cannot_run_end_at_once_with_the_reason(harness, tmp_path):
    from action_msgs.msg import GoalStatus

    h = harness
    missing = tmp_path / "missing.yaml"
    status, result = h.goal_result(h.send_goal(str(missing)), 10.0)
    assert status == GoalStatus.STATUS_ABORTED and not result.success
    assert result.message.startswith("goal refused:") and str(missing) in result.message, result.message
    status, result = h.goal_result(h.send_goal(periods=1), 10.0)  # 1 period, 1 of them left for the check
    assert status == GoalStatus.STATUS_ABORTED and "validation_periods" in result.message, result.message
    assert result.model_file == "" and h.node.runner.recorder is None


def _served_interfaces() -> dict[str, type]:
    """Every service and action type the package's nodes serve (``create_service(Type, ...)``,
    ``ActionServer(node, Type, ...)`` in youbot_dynamics/nodes), by its ROS name, where it is installed."""
    import ast
    import importlib

    served: dict[str, type] = {}
    for path in sorted((ROOT / "youbot_dynamics" / "nodes").glob("*.py")):
        calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]
        names = [call.args[{"create_service": 0, "ActionServer": 1}[name]].id for call in calls
                 for name in [getattr(call.func, "attr", getattr(call.func, "id", ""))]
                 if name in ("create_service", "ActionServer") and len(call.args) > 1
                 and isinstance(call.args[{"create_service": 0, "ActionServer": 1}[name]], ast.Name)]
        if not names:
            continue
        module = importlib.import_module(f"youbot_dynamics.nodes.{path.stem}")
        for name in names:
            kind = getattr(module, name, None)
            if isinstance(kind, type) and (hasattr(kind, "Goal") or hasattr(kind, "Request")):
                package, folder = kind.__module__.split(".")[:2]
                served[f"{package}/{folder}/{kind.__name__}"] = kind
    return served


@pytest.mark.ros
def test_every_goal_and_request_field_the_nodes_serve_is_in_the_one_table():
    """Each field of each goal and request the nodes serve is in contract/request_fields.py, with the
    parameter whose bounds it gets or why it has none; a bounded field is checked with the schema's
    bounds, its own 'node's parameter' value let through."""
    pytest.importorskip("youbot_dynamics_interfaces")
    from youbot_dynamics.contract.parameter_schema import load_schema
    from youbot_dynamics.contract.request_fields import REQUEST_FIELDS, fields_of

    served = _served_interfaces()
    assert {"youbot_dynamics_interfaces/action/Identify", "std_srvs/srv/SetBool", "std_srvs/srv/Trigger",
            "youbot_dynamics_interfaces/srv/SolveIK"} <= set(served), sorted(served)
    for name, kind in served.items():
        message = kind.Goal if hasattr(kind, "Goal") else kind.Request
        fields = set(message.get_fields_and_field_types())
        assert fields == {f.field for f in fields_of(name)}, f"{name}: fields {sorted(fields)}"
    for field in REQUEST_FIELDS:
        assert bool(field.parameter) != bool(field.note), field
        if not field.parameter:
            continue
        spec = load_schema(field.schema)[field.parameter]
        field.check(field.unset)
        field.check(spec.default)
        if spec.bounds is not None:
            low, high = spec.bounds
            field.check(low)
            field.check(high)
            for outside in (low - 1, high + 1):
                if outside != field.unset:
                    with pytest.raises(ValueError, match=re.escape(f"[{low}, {high}]")):
                        field.check(outside)


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_identify_goal_fields_outside_their_parameters_bounds_end_at_once(harness):
    """Every bounded field of the goal, just outside its parameter's bounds and at its type's largest
    value: refused before anything moves (before: periods 1001 planned 8016 s and started)."""
    from action_msgs.msg import GoalStatus

    from youbot_dynamics.contract.request_fields import IDENTIFY, fields_of

    h = harness
    types = h.Identify.Goal.get_fields_and_field_types()
    tried = 0
    for field in fields_of(IDENTIFY):
        if field.spec is None or field.spec.bounds is None:
            continue
        low, high = field.spec.bounds
        largest = {"uint32": 2 ** 32 - 1, "int32": 2 ** 31 - 1, "uint16": 2 ** 16 - 1}[types[field.field]]
        for value in {low - 1, high + 1, largest} - {field.unset, -1}:
            goal = h.Identify.Goal()
            setattr(goal, field.field, value)
            assert h.identify.wait_for_server(timeout_sec=10.0)
            future = h.identify.send_goal_async(goal)
            assert h.spin_until(future.done, 10.0) and future.result().accepted
            status, result = h.goal_result(future.result(), 10.0)
            assert status == GoalStatus.STATUS_ABORTED and not result.success, (field.field, value)
            assert result.message.startswith(f"goal refused: {field.field} must be within [{low}, {high}]") \
                and str(value) in result.message, result.message
            assert h.node.runner.recorder is None and not h.node.runner.starting
            tried += 1
    assert tried >= 2


def test_an_outcome_logs_at_either_severity_from_one_call_site():
    """The identify goal's result (and the driver's services) log success at INFO and failure at
    WARN from one place: rclpy binds a call site to its first severity and raised "Logger severity
    cannot be changed between calls" in the execute callback of the second goal (an empty result)."""
    rclpy_logging = pytest.importorskip("rclpy.logging")
    from youbot_dynamics.nodes.common import log_outcome

    logger = rclpy_logging.get_logger("outcome_test")
    for ok in (True, False, True):
        log_outcome(logger, ok, f"outcome {ok}")


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_canceling_an_identify_goal_brakes_and_holds_the_arm(harness):
    """Cancel during the excitation: the goal ends canceled once the arm is at rest, braked within
    its velocity limits, held where it stopped; a second goal meanwhile is refused as busy."""
    from action_msgs.msg import GoalStatus

    h = harness
    h.place_arm(Q_START)
    goal = h.send_goal(periods=2)
    assert h.spin_until(lambda: h.phase() is ExperimentPhase.EXCITE
                        and h.sim.sim.time > h.node.runner.session.excite_start + 2.0, 30.0), h.phase()
    assert h.feedback and h.feedback[-1].phase == "excite" and 0.0 < h.feedback[-1].percent < 90.0
    status, result = h.goal_result(h.send_goal(), 10.0)
    assert status == GoalStatus.STATUS_ABORTED and result.message.startswith("busy"), result.message
    speeds = []
    cancel = goal.cancel_goal_async()
    assert h.spin_until(cancel.done, 10.0) and len(cancel.result().goals_canceling) == 1
    result_future = goal.get_result_async()

    def ended() -> bool:
        speeds.append(np.abs(h.sim.sim.data.qvel).copy())
        return result_future.done()

    assert h.spin_until(ended, 20.0)
    status, result = result_future.result().status, result_future.result().result
    assert status == GoalStatus.STATUS_CANCELED and not result.success and "canceled" in result.message
    assert h.phase() is ExperimentPhase.ABORTED and h.node.runner.session.commanding and h.node.runner.recorder is None
    assert np.all(np.max(speeds, axis=0) <= 1.1 * ARM.velocity_max), np.max(speeds, axis=0)
    assert np.max(np.abs(h.sim.sim.measure().velocity)) < 0.05  # at rest when the goal ends
    np.testing.assert_allclose(h.sim.sim.measure().position, h.node.runner.session.stop.final, atol=0.02)


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_a_goal_that_aborted_stays_aborted_when_a_cancel_follows(harness):
    """~/abort during the excitation, then a cancel while the arm brakes: the cancel is refused and the
    goal ends aborted with the abort's reason (it ended canceled)."""
    from action_msgs.msg import GoalStatus

    h = harness
    h.place_arm(Q_START)
    goal = h.send_goal(periods=2)
    assert h.spin_until(lambda: h.phase() is ExperimentPhase.EXCITE, 30.0), h.phase()
    assert h.call("abort").success
    assert h.phase() is ExperimentPhase.ABORTED
    cancel = goal.cancel_goal_async()
    assert h.spin_until(cancel.done, 10.0) and not cancel.result().goals_canceling
    status, result = h.goal_result(goal, 20.0)
    assert status == GoalStatus.STATUS_ABORTED and "abort requested" in result.message, (status, result.message)


@pytest.mark.ros
@pytest.mark.timeout(300)
def test_recalibration_finds_a_payload_put_on_after_the_identification(harness):
    """~/recalibrate: a short experiment (2 periods) on the model the node identified, after a
    payload of 0.4 kg was put at the tool (the simulator's true robot: the arm's friction is not
    the model's structure). The payload's mass is found, the held-out part of the recording is
    predicted better than by the old model, and the new model passes the controllers' check."""
    from youbot_dynamics.dynamics.consistency import check_model
    from youbot_dynamics.dynamics.paramfile import identification_block, load_model

    h = harness
    if h.node.runner.last_model is None:  # run alone: identify first
        h.place_arm(Q_START + OFFSET)
        assert h.call("start").success
        assert h.spin_until(lambda: finished(h), 150.0) and h.phase() is ExperimentPhase.DONE, \
            h.node.runner.session.reason
    identified = h.node.runner.last_model
    # the model the node wrote is loaded as the target in its worker (a load of 0.5-1.8 s in the service
    # made the recalibration's first commands late): the service loads nothing, unless the file changed since
    from youbot_dynamics.identification.experiment import runner as runner_module
    loads = []

    def counted(path, arm):
        loads.append(path)
        return original(path, arm)

    original = runner_module.ModelToUpdate.load
    runner_module.ModelToUpdate.load = counted
    try:
        target = h.node.runner.calibration_target(identified)
        assert loads == [] and np.array_equal(target.model.beta, load_model(identified).beta)
        changed = identified.with_name("copy.yaml")
        changed.write_bytes(identified.read_bytes())
        h.node.runner.calibration_target(changed)
        stamp = identified.stat().st_mtime_ns
        os.utime(identified, ns=(stamp + 10**9, stamp + 10**9))
        h.node.runner.calibration_target(identified)
        assert loads == [changed, identified]
        changed.unlink()
    finally:
        runner_module.ModelToUpdate.load = original
    mass, position = 0.4, [0.0, 0.0, 0.05]
    with h.sim._lock:
        h.sim.sim.set_payload(mass, position)
    try:
        h.place_arm(Q_START + OFFSET)
        h.progress.clear()
        response = h.call("recalibrate")
        assert response.success and f"recalibrating {identified}" in response.message, response.message
        assert h.spin_until(lambda: finished(h), 150.0), f"stuck in {h.phase()}"
        assert h.phase() is ExperimentPhase.DONE, h.node.runner.session.reason
    finally:
        with h.sim._lock:
            h.sim.sim.set_payload(0.0)
    run, summary = h.node.runner.run_directory, h.node.runner.result_summary
    assert h.node.runner.session.config.periods == 2 and h.node.runner.last_model == run / "parameters.yaml"
    print(f"\nrecalibration on a {mass} kg payload: found {summary['payload_mass_kg']:+.3f} kg, update "
          f"'{summary['update']}'; held-out moving rows {100 * summary['previous_relative_error']:.2f} % "
          f"(old model) -> {100 * summary['relative_error']:.2f} % (new)")
    assert summary["payload_mass_kg"] == pytest.approx(mass, abs=0.1)
    assert summary["relative_error"] < 0.7 * summary["previous_relative_error"]
    new = load_model(run / "parameters.yaml")
    check_model(new, ARM)  # what the controllers require
    calibration = identification_block(run / "parameters.yaml")["calibration"]
    assert calibration["from_model"] == str(identified) and calibration["payload_change"]["mass_kg"] > 0
    report = json.loads((run / "report" / "report.json").read_text())
    assert report["session"]["config"]["periods"] == 2 and report["update"] == summary["update"]
    assert h.spin_until(lambda: any(v.key == "payload_mass_kg" for m in h.progress for v in m.values), 5.0)
    assert h.progress[-1].name.endswith("recalibration")
    # the controllers' ~/payload message (issue 17 item 4): the mass found, its centre of mass in the tool frame
    assert h.spin_until(lambda: h.payloads, 5.0)
    estimate = h.payloads[-1]
    com = np.array([estimate.com.x, estimate.com.y, estimate.com.z])
    print(f"~/payload_estimate: {estimate.m:.3f} kg at {np.round(com, 4).tolist()} m (true {mass} kg at {position})")
    assert estimate.m == pytest.approx(summary["payload_mass_kg"])
    assert np.linalg.norm(com - position) < 0.03


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_abort_during_the_excitation_holds_and_keeps_the_recording(harness):
    h = harness
    h.place_arm(Q_START)
    h.progress.clear()
    assert h.call("start").success
    assert h.spin_until(lambda: h.phase() is ExperimentPhase.EXCITE
                        and h.sim.sim.time > h.node.runner.session.excite_start + 2.0, 30.0), h.phase()
    response = h.call("abort")  # at full excitation speed (joints 1 and 5 at 1.3-1.4 rad/s)
    assert response.success and "aborted" in response.message, response.message
    assert h.phase() is ExperimentPhase.ABORTED and "~/abort" in h.node.runner.session.reason
    speeds = []  # the simulated arm's joint speeds while it stops

    def stopped() -> bool:
        speeds.append(np.abs(h.sim.sim.data.qvel).copy())
        return finished(h)

    assert h.spin_until(stopped, 20.0)
    # the stop brakes from the commanded state within the arm's limits (issue 14: the old stop
    # from a late measured state drove joint 4 at -15 rad/s)
    stop = h.node.runner.session.stop
    commanded = [stop.evaluate(k) for k in np.linspace(0.0, stop.duration, 101)]
    assert max(np.max(np.abs(c[1]) / ARM.velocity_max) for c in commanded) <= 1.0
    assert max(np.max(np.abs(c[2]) / ARM.acceleration_max) for c in commanded) <= 1.0 + 1e-9
    assert np.all(np.max(speeds, axis=0) <= 1.1 * ARM.velocity_max), np.max(speeds, axis=0)
    t = h.sim.sim.time
    assert h.spin_until(lambda: h.sim.sim.time > t + 0.5, 10.0)
    q0 = h.sim.sim.measure().position
    assert h.spin_until(lambda: h.sim.sim.time > t + 1.5, 10.0)
    q1, dq1 = h.sim.sim.measure().position, h.sim.sim.measure().velocity
    assert h.sim.sim.mode == "trajectory"  # motors on: the trajectory controller holds the stop point
    assert np.max(np.abs(q1 - q0)) < 2e-3 and np.max(np.abs(dq1)) < 0.02
    np.testing.assert_allclose(q1, h.node.runner.session.stop.final, atol=0.02)
    assert not np.allclose(q1, Q_START, atol=0.05)  # stopped where it was, not back at the start
    run = h.node.runner.run_directory
    from youbot_dynamics.identification.io.bagio import read_joint_states

    csv = read_csv_dataset(run / "recording.csv", ARM.n_joints)
    bag = read_joint_states(run / "recording", ARM.joint_names)
    assert bag.n_samples == csv.n_samples > 1000
    assert not (run / "parameters.yaml").exists()
    from diagnostic_msgs.msg import DiagnosticStatus

    levels = [m.level for m in h.progress if any(v.key == "phase" and v.value == "aborted" for v in m.values)]
    assert levels and levels[-1] == DiagnosticStatus.WARN
    assert not h.call("abort").success  # nothing moves any more


class FakeArm(RosHarness):
    """An identification node in its own namespace and on its own topics, fed with fake joint
    states (no simulator; the harness's node, if alive, has the same name in the root namespace)."""

    def __init__(self, output: Path, namespace: str, domain_id: int | None = None, **overrides) -> None:
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_srvs.srv import Trigger

        from youbot_dynamics.nodes.identification_node import IdentificationNode

        super().__init__(f"{namespace}_arm", domain_id=domain_id)
        self.JointState, self.Trigger = JointState, Trigger
        params = {"joint_states_topic": f"/{namespace}_joint_states", "output_directory": str(output),
                  "max_start_distance": 0.3, "trajectory_topic": f"/{namespace}_trajectory", "state_timeout": 0.2,
                  **overrides}
        self.node = self.add_node(IdentificationNode(
            context=self.context, namespace=namespace,
            parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))
        self.pub = self.tester.create_publisher(JointState, params["joint_states_topic"], 10)
        self.client = self.tester.create_client(Trigger, f"/{namespace}/identification_node/start")

    def publish(self, q, seconds: float = 0.05) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.pub.publish(self.JointState(name=list(ARM.joint_names), position=list(map(float, q)),
                                             velocity=[0.0] * 5, effort=[0.0] * 5))
            self.spin_for(0.01)
            if time.monotonic() > deadline:
                return

    def start(self):
        return self.request(self.client, self.Trigger.Request(), timeout=5.0)

    def close(self) -> None:
        self.node.shutdown()
        super().close()


@pytest.fixture
def fake_arm(ros_environment, tmp_path):
    """``make(namespace, **parameters) -> FakeArm``; all closed after the test."""
    pytest.importorskip("rclpy")
    made: list[FakeArm] = []

    def make(namespace: str = "fake", domain_id: int | None = None, **overrides) -> FakeArm:
        made.append(FakeArm(tmp_path, namespace, domain_id, **overrides))
        return made[-1]

    yield make
    for arm in made:
        arm.close()


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_start_is_refused_without_fresh_joint_states_or_far_from_the_start(fake_arm, tmp_path):
    arm = fake_arm()
    response = arm.start()
    assert not response.success and "no joint state received" in response.message
    arm.publish(Q_START)
    arm.spin_for(0.5)  # the arm stopped publishing: 0.5 s > state_timeout 0.2 s
    response = arm.start()
    assert not response.success and "stale" in response.message, response.message
    arm.publish(Q_START + [0.0, 0.0, 0.5, 0.0, 0.0])
    response = arm.start()
    assert not response.success and "0.500 rad from the excitation's start pose on joint 3" in response.message
    # ... and says which command moves it there: a trajectory to the start pose, as slow as the approach
    command = response.message.split("to move it there: ")[1]
    head, _, body = command.partition(" trajectory_msgs/msg/JointTrajectory ")
    assert head == "ros2 topic pub --once /fake_trajectory", head
    trajectory = yaml.safe_load(yaml.safe_load(body))  # the shell's quotes, then the message
    assert trajectory["joint_names"] == list(ARM.joint_names) and len(trajectory["points"]) == 1
    np.testing.assert_allclose(trajectory["points"][0]["positions"], Q_START, atol=1e-4)
    seconds = trajectory["points"][0]["time_from_start"]["sec"]
    config = arm.node.runner.setup.config
    assert 1.875 * 0.5 / seconds <= config.approach_velocity  # the quintic's peak speed
    assert 5.77 * 0.5 / seconds**2 <= config.approach_acceleration
    runner = arm.node.runner
    assert runner.session is None and runner.recorder is None and not any(tmp_path.iterdir())  # nothing created


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_effort_interface_hands_the_arm_to_the_drives_without_joint_states(fake_arm):
    """Effort interface (issue 35): without a fresh joint state the node has no torque to send; the
    drives' command timeout would then stop the motors and the arm fall. It releases the arm to the
    drives' trajectory control instead (a braking trajectory from the newest state, held there) and
    sends no torque after it; on shutdown while commanding likewise."""
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory

    def watched(namespace: str):
        arm = fake_arm(namespace, command_interface="effort", effort_command_topic=f"/{namespace}_effort")
        torques, released = [], []
        arm.tester.create_subscription(Float64MultiArray, f"/{namespace}_effort", torques.append, 1000)
        arm.tester.create_subscription(JointTrajectory, f"/{namespace}_trajectory", released.append, 10)
        arm.publish(Q_START, 0.3)
        response = arm.start()
        assert response.success, response.message
        arm.publish(Q_START, 0.5)  # the experiment begins: torques
        assert torques and not released, (len(torques), released)
        return arm, torques, released

    arm, torques, released = watched("stale")
    arm.spin_until(lambda: bool(released), timeout=2.0)  # the states stopped: stale after 0.2 s
    phase = arm.node.runner.session.phase
    assert len(released) == 1 and phase.value == "aborted", (released, phase)
    points = released[0].points
    assert list(released[0].joint_names) == list(ARM.joint_names) and len(points) == 1  # at rest: hold here
    np.testing.assert_allclose(points[0].positions, Q_START, atol=1e-9)
    sent = len(torques)
    arm.spin_for(0.3)
    assert len(torques) == sent and len(released) == 1  # no torque after the release, released once

    arm, torques, released = watched("shutdown")
    arm.node.shutdown()
    arm.spin_until(lambda: bool(released), timeout=2.0)
    assert len(released) == 1
    np.testing.assert_allclose(released[0].points[-1].positions, Q_START, atol=1e-9)


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_recalibrate_is_refused_without_a_model_it_could_update(fake_arm, tmp_path):
    """Before the arm moves: no model yet (nothing identified, no calibration_model), a file that
    is not a model, a model the controllers would refuse."""
    from youbot_dynamics.dynamics.nominal import nominal_model
    from youbot_dynamics.dynamics.paramfile import save_model

    def recalibrate(arm):
        client = arm.tester.create_client(arm.Trigger, f"/{arm.node.get_namespace().strip('/')}/identification_node/"
                                          f"recalibrate")
        return arm.request(client, arm.Trigger.Request(), timeout=5.0)

    arms = [fake_arm("nomodel")]
    arms[0].publish(Q_START)
    response = recalibrate(arms[0])
    assert not response.success and "no model to update" in response.message, response.message
    broken = tmp_path / "broken.yaml"
    broken.write_text("youbot_dynamic_model: [1, 2\n")
    arms.append(fake_arm("broken", calibration_model=str(broken)))
    response = recalibrate(arms[-1])
    assert not response.success and str(broken) in response.message, response.message
    model = nominal_model(ARM)[0]
    beta = model.beta.copy()
    beta[0] = -abs(beta[0]) - 10.0  # far from any physical arm: M(q) indefinite
    bad = tmp_path / "bad.yaml"
    save_model(bad, type(model)(model.chain, model.base, beta), "inconsistent on purpose")
    arms.append(fake_arm("bad", calibration_model=str(bad)))
    response = recalibrate(arms[-1])
    assert not response.success and "bad.yaml" in response.message and "definite" in response.message, \
        response.message
    assert all(a.node.runner.session is None and a.node.runner.recorder is None for a in arms)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "broken.yaml"]  # no run folder


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_on_simulated_time_nothing_is_judged_before_the_first_clock(fake_arm):
    """use_sim_time without /clock: the node's time reads 0. Joint states are ignored (with a receive
    time of 0 they looked 2 s old once the clock jumped to the simulator's time, and ~/start was
    refused "stale" right after launch) and ~/start says what is missing."""
    from builtin_interfaces.msg import Time as Stamp
    from rosgraph_msgs.msg import Clock

    arm = fake_arm("simtime", domain_id=CLOCK_DOMAIN_ID, use_sim_time=True)  # /clock is global: the module's
    # simulator (the harness fixture) publishes one in this test's usual domain
    arm.publish(Q_START, seconds=0.3)
    assert arm.node.runner.latest is None
    response = arm.start()
    assert not response.success and "no /clock yet" in response.message, response.message
    assert "publish_clock:=true" in response.message
    clock_pub = arm.tester.create_publisher(Clock, "/clock", 10)
    assert arm.node.get_clock().ros_time_is_active
    deadline = time.monotonic() + 10.0
    while arm.node.get_clock().now().nanoseconds == 0 and time.monotonic() < deadline:
        clock_pub.publish(Clock(clock=Stamp(sec=100)))
        arm.spin_for(0.02)
    assert arm.node.get_clock().now().nanoseconds == 100 * 10**9
    arm.publish(Q_START, seconds=0.1)
    assert arm.node.runner.latest is not None and arm.node.runner.latest.receive == pytest.approx(100.0)
    response = arm.start()
    assert response.success, response.message
    assert arm.node.abort("test over")[0]


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_the_node_says_what_input_it_waits_for(fake_arm, capfd):
    """No /clock on simulated time, or no joint state at all: a warning that names what is missing
    (the wall-clock check, as if 20 s had passed since start-up)."""
    silent, simulated = fake_arm("silent"), fake_arm("waiting", domain_id=CLOCK_DOMAIN_ID, use_sim_time=True)
    for arm in (silent, simulated):
        arm.node._created -= 20.0
        arm.node._watch_inputs()
    err = capfd.readouterr().err
    # 20 s plus the time since the node was made (a second on a loaded machine: "in 21 s" in CI)
    assert re.search(r"no joint state on /silent_joint_states in 2[0-9] s", err), err
    assert re.search(r"use_sim_time is true and no /clock has arrived in 2[0-9] s", err), err


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_start_on_launch(fake_arm, tmp_path):
    far = fake_arm("far", start_on_launch=True)
    far.spin_for(0.3)
    assert far.node.runner.session is None  # waiting for joint states
    far.publish(Q_START + [0.4, 0.0, 0.0, 0.0, 0.0], seconds=0.3)
    assert far.node.runner.session.phase is ExperimentPhase.FAILED and "0.400 rad" in far.node.runner.session.reason
    assert not far.node.runner.session.commanding
    near = fake_arm("near", start_on_launch=True)
    near.publish(Q_START + [0.0, 0.1, 0.0, 0.0, 0.0], seconds=0.3)
    assert near.node.runner.session.phase is ExperimentPhase.APPROACH and near.node.runner.recorder is not None
    assert near.node.abort("test over")[0] and near.node.runner.session.phase is ExperimentPhase.ABORTED


@pytest.mark.ros
@pytest.mark.timeout(90)
def test_executable_records_and_exits_cleanly_on_sigint(ros_environment, tmp_path):
    """The executable starts, records an experiment (fake joint states at the start pose), and on
    SIGINT stops, closes the recording (bag and CSV valid) and exits with 0; bad parameters exit 1."""
    pytest.importorskip("rclpy")
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    from youbot_dynamics.identification.io.bagio import read_joint_states

    env = dict(os.environ, ROS_DOMAIN_ID=SUBPROCESS_DOMAIN_ID, PYTHONUNBUFFERED="1")
    exe = Path(sys.executable).with_name("identification_node")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "youbot_dynamics.nodes.identification_node"]
    proc = subprocess.Popen(cmd + ["--ros-args", "-p", f"output_directory:={tmp_path}", "-p", "settle_time:=5.0",
                                   "-p", "state_timeout:=1.0"],  # the fake arm below publishes irregularly when busy
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    ros = RosHarness("fake_arm", domain_id=int(SUBPROCESS_DOMAIN_ID), spin_period=0.005)
    arm = ros.tester
    try:
        pub = arm.create_publisher(JointState, JOINT_STATES, 100)
        client = arm.create_client(Trigger, "/identification_node/start")

        def publish(seconds):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                now = time.time()
                msg = JointState(name=list(ARM.joint_names), position=Q_START.tolist(), velocity=[0.0] * 5,
                                 effort=[0.1] * 5)
                msg.header.stamp.sec, msg.header.stamp.nanosec = int(now), int((now % 1) * 1e9)
                pub.publish(msg)
                ros.spin_for(0.005)

        deadline = time.monotonic() + 30.0
        while not any("ready:" in line for line in lines) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert any("ready:" in line for line in lines), "".join(lines)
        assert "excitation_default.yaml" in "".join(lines)
        assert client.wait_for_service(timeout_sec=10.0)
        publish(1.0)
        future = client.call_async(Trigger.Request())
        deadline = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < deadline:
            publish(0.02)
        assert future.result() is not None and future.result().success, (future.result(), "".join(lines))
        publish(2.0)  # approach (0.5 s) and settle: recording
        proc.send_signal(signal.SIGINT)
        publish(0.2)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        ros.close()
    reader.join(timeout=5)
    out = "".join(lines)
    assert proc.returncode == 0, out
    assert "recording closed" in out and "node shutting down" in out, out
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    csv = read_csv_dataset(run / "recording.csv", ARM.n_joints)
    bag = read_joint_states(run / "recording", ARM.joint_names)
    assert bag.n_samples == csv.n_samples > 50 and csv.duration > 1.5
    bad = subprocess.run(cmd + ["--ros-args", "-p", "command_interface:=velocity"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "cannot start" in bad.stdout + bad.stderr
