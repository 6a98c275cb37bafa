"""The experiment is supervised by what executes it, and every node ends cleanly on signals.

* Core (no ROS): the streamed messages of the identification node
  (:mod:`youbot_dynamics.identification.experiment.streaming`): braking tails within the velocity and
  acceleration limits from any state of the excitation and from arbitrary states at full
  excitation speed; the horizons, one after the other, reproduce the excitation; executed by the
  simulator core (which splices each new message onto its current reference), the arm follows
  the excitation as it did from one long message, and stops by itself when the messages stop.
* Over DDS (the module's first domain; localhost discovery only): the simulator node runs in this process
  (physics and executor in their own threads, ``/clock``), the identification node as its own
  process on ``use_sim_time``. ``kill -9`` during the
  excitation: the arm, measured on ``/joint_states``, comes to rest within
  :data:`REST_AFTER_KILL` and never exceeds 1.1 x ``velocity_max`` on the way (before
  streaming, the excitation went on for the rest of its 16 s). The speeds before the kill are
  only printed: the simulator times each message from its receipt, so a message that arrives
  later or earlier than the previous one warps the splice (up to 2.4 rad/s measured on a loaded
  machine) until it honours ``header.stamp`` as ros2_control's trajectory controller does.
* Signals (its second domain): SIGTERM or SIGINT two or three times in quick succession end an
  executable with exit 0 and no traceback.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import local_ros_domain, ros_domain_id
from ros_harness import RosHarness

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.contract.topics import JOINT_STATES, TRAJECTORY
from youbot_dynamics.identification.excitation.limits import verification_times
from youbot_dynamics.identification.experiment.session import (MIN_APPROACH_TIME, ExcitationSession, ExperimentPhase,
                                                               JointSample, SessionConfig)
from youbot_dynamics.motion.braking import BrakingTail, braking_duration, tail_states
from youbot_dynamics.identification.io.trajfile import load_trajectory

ROOT = Path(__file__).resolve().parent.parent
ARM = default_arm()
EXCITATION = load_trajectory(ROOT / "config" / "excitation_default.yaml", ARM.joint_names).trajectory
Q_START = EXCITATION.evaluate(0.0)[0]
DOMAIN_ID = ros_domain_id(__file__)
SIGNAL_DOMAIN_ID = ros_domain_id(__file__, 1)
REST_AFTER_KILL = 1.5  # [s] of simulated time from kill -9 to rest (bound: horizon 0.5 + tail 0.54 + settling)
REST_SPEED = 0.02  # [rad/s] a joint slower than this is at rest (the velocity quantum is 0.0007 rad/s)
SPEED_MARGIN = 1.1  # no measured joint velocity above SPEED_MARGIN x velocity_max


def _exe(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    return [str(exe)] if exe.exists() else [sys.executable, "-m", f"youbot_dynamics.nodes.{name}"]


# -- core ---------------------------------------------------------------------------------------------


def test_braking_tails_stay_within_the_limits_from_any_state():
    """From every state of the excitation and from random states at up to velocity_max (and
    accelerations up to acceleration_max, pushing either way), the tail's sampled acceleration
    stays within the deceleration bound, the velocity within velocity_max where the start allows
    it, and it ends at rest, continuous with the state it starts from."""
    deceleration = ARM.acceleration_max
    q, dq, ddq = EXCITATION.evaluate(verification_times(EXCITATION.duration))
    rng = np.random.default_rng(7)
    m = 400
    dq_r = ARM.velocity_max * rng.uniform(-1.0, 1.0, (m, 5))
    dq_r[: m // 4] = ARM.velocity_max * np.sign(dq_r[: m // 4])  # at full speed
    ddq_r = ARM.acceleration_max * rng.uniform(-1.0, 1.0, (m, 5))
    q_r = rng.uniform(ARM.position_min, ARM.position_max, (m, 5))
    states = [np.vstack(x) for x in ((q, q_r), (dq, dq_r), (ddq, ddq_r))]
    durations = braking_duration(states[1], states[2], deceleration)
    s = np.linspace(0.0, 1.0, 401)[:, None, None]
    path, velocity, acceleration = tail_states(*states, durations[:, None], s)
    assert np.all(np.abs(acceleration) <= deceleration * (1.0 + 1e-9))
    np.testing.assert_allclose(acceleration[0], states[2], atol=1e-12)  # continuous where it starts
    np.testing.assert_allclose(velocity[0], states[1], atol=1e-12)
    assert not np.any(velocity[-1]) and not np.any(acceleration[-1])  # at rest
    np.testing.assert_allclose(path[-1][5], BrakingTail(states[0][5], states[1][5], states[2][5],
                                                        float(durations[5])).final)
    # the speed exceeds |q'0| by at most T |q''0| 4/27 (an acceleration that pushes it up or turns
    # the joint around), not at all without acceleration
    rise = np.abs(velocity).max(axis=0) - np.abs(states[1])
    assert np.all(rise <= durations[:, None] * np.abs(states[2]) * 4.0 / 27.0 + 1e-12)
    coasting = tail_states(states[0], states[1], np.zeros_like(states[2]),
                           braking_duration(states[1], 0.0 * states[2], deceleration)[:, None], s)[1]
    assert np.all(np.abs(coasting) <= np.abs(states[1]) + 1e-12)
    # from the excitation (the states a message can end in): within velocity_max, and the
    # shortest duration: 1 % shorter breaks the bound on some joint
    k = len(q)
    assert np.all(np.abs(velocity[:, :k]) <= ARM.velocity_max)
    shorter = tail_states(q, dq, ddq, 0.99 * durations[:k, None], s)[2]
    assert np.all(np.any(np.abs(shorter) > deceleration * (1.0 + 1e-6), axis=(0, 2))[durations[:k] > 0.06])
    # full speed, no acceleration: T = 1.5 v / a
    assert braking_duration([1.5, 0, 0, 0, 0], np.zeros(5), deceleration) == pytest.approx(1.5 * 1.5 / 4.0)


def _streamed_session(**overrides) -> ExcitationSession:
    config = SessionConfig(periods=1, validation_periods=0, settle_time=0.5, hold_time=0.5, **overrides)
    return ExcitationSession(ARM, EXCITATION, config)


def test_horizons_one_after_the_other_reproduce_the_excitation():
    session = _streamed_session()
    session.start(0.0, JointSample(0.0, 0.0, Q_START, np.zeros(5)))
    excite = session.approach_duration + session.config.settle_time
    period = session.config.stream_period
    times, got = [], []
    now = 0.0
    while now < session.motion_duration:
        t, q, dq, ddq = session.waypoints(now)
        first = t <= period + 1e-9  # what is executed before the next message replaces this one
        times.append(now + t[first])
        got.append(np.stack([q[first], dq[first], ddq[first]]))
        now += period
    times, got = np.concatenate(times), np.concatenate(got, axis=1)
    assert np.all(np.diff(times) > 0) and np.max(np.diff(times)) <= period + 1e-9
    inside = (times >= excite) & (times < excite + EXCITATION.duration)
    assert inside.sum() >= EXCITATION.duration / period - 1
    want = EXCITATION.evaluate(times[inside] - excite)
    for k in range(3):
        np.testing.assert_allclose(got[k][inside], want[k], atol=1e-12)


def test_a_node_that_falls_behind_stops_from_what_the_arm_executes():
    """No message for longer than stream_horizon: the controller has begun to brake on the last
    message's tail, so the session aborts (the next horizon would jump back to the plan), and
    its stop continues that tail."""
    session = _streamed_session()
    session.start(0.0, JointSample(0.0, 0.0, Q_START, np.zeros(5)))
    last_message = MIN_APPROACH_TIME + session.config.settle_time + 1.6
    t, sent = 0.0, -1.0
    while session.moving:  # 100 Hz cycles, the arm on its reference; messages until last_message
        q, dq, _ = session.reference(t)
        if session.update(t, JointSample(t, t, q, dq)) is ExperimentPhase.ABORTED:
            break
        if t <= last_message and t >= sent + session.config.stream_period - 1e-9:
            session.waypoints(t)
            sent = t
        t = round(t + 0.01, 6)
    assert session.phase is ExperimentPhase.ABORTED and "commands late" in session.reason, session.reason
    assert t - sent == pytest.approx(session.config.stream_horizon + 0.01)
    _, tail = session.sent
    for got, want in zip((session.stop.q0, session.stop.dq0, session.stop.ddq0), tail.evaluate(0.01)):
        np.testing.assert_allclose(got, want, atol=1e-12)
    assert np.max(np.abs(session.stop.dq0)) < np.max(np.abs(tail.dq0))  # braking already


def _run_on_simulator(session: ExcitationSession, stream: bool, stop_streaming_at: float | None = None,
                      latency: float = 0.0):
    """Drive the simulator core (1 kHz) through the experiment from the node's 100 Hz cycle:
    ``stream`` (every stream_period; a message reaches the simulator ``latency`` later) or one
    message with the whole plan, as the node sent it before. Returns times, measured positions
    and velocities (1 kHz)."""
    from youbot_dynamics.sim import ArmSimulator

    sim = ArmSimulator(ARM)
    sim.reset(Q_START)
    m = sim.measure()
    session.start(0.0, JointSample(0.0, 0.0, m.position, m.velocity))
    if not stream:
        times = np.arange(0.1, session.motion_duration + 0.05, 0.1)
        sim.command_trajectory(times, *session.planned(times))
    delay = int(round(latency / sim.timestep))
    pending: list[tuple[int, tuple]] = []
    next_message, step = 0.0, 0
    t_log, q_log, dq_log = [], [], []
    end = session.motion_duration + 3.0
    while step * sim.timestep < end:
        t = step * sim.timestep
        if step % 10 == 0:
            m = sim.measure()
            session.update(t, JointSample(t, t, m.position, m.velocity))
            streaming = stop_streaming_at is None or t < stop_streaming_at
            if stream and streaming and session.moving and t >= next_message - 1e-9:
                pending.append((step + delay, session.waypoints(t)))
                next_message = t + session.config.stream_period
        while pending and pending[0][0] <= step:
            sim.command_trajectory(*pending.pop(0)[1])
        sim.step(1)
        step += 1
        m = sim.measure()
        t_log.append(m.time)
        q_log.append(m.position)
        dq_log.append(m.velocity)
    return np.array(t_log), np.array(q_log), np.array(dq_log)


def test_the_simulator_follows_the_streamed_excitation_as_it_followed_one_message():
    """The simulator starts each new message from its current reference: streamed, the arm moves
    as it did from one long message (the splices leave a few mrad), within its velocity limit."""
    whole = _streamed_session()
    t, q_whole, dq_whole = _run_on_simulator(whole, stream=False)
    streamed = _streamed_session()
    t, q, dq = _run_on_simulator(streamed, stream=True, latency=0.002)
    assert streamed.phase is ExperimentPhase.IDENTIFY, streamed.reason
    shift = int(round(0.002 / 0.001))  # the messages' latency delays the streamed motion
    difference = np.abs(q[shift:] - q_whole[:-shift]).max(axis=0)
    print(f"\nstreamed vs one message: max position difference {np.round(1e3 * difference, 2).tolist()} mrad, "
          f"max tracking error {1e3 * streamed.max_tracking:.1f} vs {1e3 * whole.max_tracking:.1f} mrad, peak speed "
          f"{np.round(np.abs(dq).max(axis=0), 3).tolist()} vs "
          f"{np.round(np.abs(dq_whole).max(axis=0), 3).tolist()} rad/s")
    assert np.all(difference < 0.005)
    assert streamed.max_tracking < whole.max_tracking + 0.003
    assert np.all(np.abs(dq).max(axis=0) <= np.abs(dq_whole).max(axis=0) + 0.05)
    assert np.all(np.abs(dq) <= ARM.velocity_max)


def test_the_arm_stops_by_itself_when_the_messages_stop():
    """Messages stop during the excitation (the node died): the simulated arm comes to rest
    within the horizon plus the longest tail (plus the drives' settling), within its limits."""
    session = _streamed_session()
    death = MIN_APPROACH_TIME + session.config.settle_time + 1.6  # the excitation near its fastest
    t, q, dq = _run_on_simulator(session, stream=True, stop_streaming_at=death)
    moving = np.flatnonzero(np.abs(dq).max(axis=1) > REST_SPEED)
    rest = t[moving[-1]] - death
    print(f"\nmessages stopped at {death:.2f} s: at rest {rest:.2f} s later (bound "
          f"{session.stop_time_bound():.2f} s + settling), peak speed {np.abs(dq).max():.3f} rad/s")
    assert rest < session.stop_time_bound() + 0.2
    assert np.all(np.abs(dq) <= ARM.velocity_max)
    assert np.all((q >= ARM.position_min) & (q <= ARM.position_max))


# -- over DDS -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ros_environment():
    with local_ros_domain(DOMAIN_ID):
        yield


class SimHarness(RosHarness):
    """The simulator node (physics and executor threads, /clock, joint states at 500 Hz) and a
    tester node recording /joint_states (stamp, velocity) and the identification node's progress."""

    def __init__(self) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import JointState
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        from youbot_dynamics.nodes.sim_node import SimNode

        super().__init__("supervision_tester")
        self.Trigger = Trigger
        self.sim = SimNode(context=self.context, parameter_overrides=[
            Parameter("initial_positions", value=Q_START.tolist()), Parameter("publish_clock", value=True),
            Parameter("publish_rate", value=500.0), Parameter("diagnostics_period", value=0.0)])
        self.states: list[tuple[float, np.ndarray]] = []
        self.progress: list = []
        self.tester.create_subscription(JointState, JOINT_STATES, self._on_state, 1000)
        self.tester.create_subscription(DiagnosticStatus, "/identification_node/progress", self.progress.append, 100)
        self.trajectory_pub = self.tester.create_publisher(JointTrajectory,
                                                           TRAJECTORY, 10)
        self.start_client = self.tester.create_client(Trigger, "/identification_node/start")
        self.spin_in_thread(self.sim)
        self.sim.start()

    def _on_state(self, msg) -> None:
        self.states.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, np.array(msg.velocity)))

    def close(self) -> None:
        self.sim.stop()
        super().close()

    def sim_time(self) -> float:
        return self.sim.sim.time

    def hold(self, q) -> None:
        """Reset the simulated arm to rest at ``q`` and hold it there (a one-point trajectory)."""
        from youbot_dynamics.nodes.messages import trajectory_message

        with self.sim._lock:
            self.sim.sim.reset(q)
        self.trajectory_pub.publish(trajectory_message(ARM.joint_names, [0.05], [q]))
        assert self.spin_until(lambda: self.sim.sim.mode == "trajectory", 5.0)
        start = self.sim_time()
        assert self.spin_until(lambda: self.sim_time() > start + 0.5, 20.0)

    def progress_value(self, key: str) -> str | None:
        if not self.progress:
            return None
        return next((v.value for v in self.progress[-1].values if v.key == key), None)


@pytest.fixture(scope="module")
def sim_harness(ros_environment):
    pytest.importorskip("rclpy")
    h = SimHarness()
    yield h
    h.close()


class NodeProcess:
    """An executable in its own process, its output collected by a thread."""

    def __init__(self, name: str, *args: str, domain: str) -> None:
        env = dict(os.environ, ROS_DOMAIN_ID=domain, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(_exe(name) + ["--ros-args", *args], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [threading.Thread(target=lambda s=s, d=d: d.extend(s), daemon=True)
                         for s, d in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for thread in self._threads:
            thread.start()

    def text(self) -> str:
        return "".join(self.out) + "".join(self.err)

    def wait_for(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while text not in self.text() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return text in self.text()

    def finish(self, timeout: float = 20.0) -> int:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for thread in self._threads:
            thread.join(timeout=5.0)
        return self.proc.returncode


@pytest.mark.ros
@pytest.mark.timeout(180)
def test_a_killed_identification_node_leaves_the_arm_at_rest(sim_harness, tmp_path):
    h = sim_harness
    h.hold(Q_START)
    h.states.clear()  # judged from here: the reset to the start pose is no motion of the experiment
    node = NodeProcess("identification_node", "-p", "use_sim_time:=true", "-p", f"output_directory:={tmp_path}",
                       "-p", "periods:=2", "-p", "settle_time:=0.5", "-p", "hold_time:=0.5", "-p",
                       "state_timeout:=0.5", "-p", "realtime_priority:=50", domain=DOMAIN_ID)  # as the demo runs it
    # (on the normal scheduler with two CPU hogs it once came 0.5 s late and aborted: "commands late")
    try:
        assert node.wait_for("ready:", 60.0), node.text()
        assert h.start_client.wait_for_service(timeout_sec=20.0)
        for _ in range(50):  # its service comes up before its first /clock and joint state
            future = h.start_client.call_async(h.Trigger.Request())
            assert h.spin_until(future.done, 20.0), node.text()
            answer = future.result()
            if answer.success or not any(text in answer.message for text in ("no /clock yet", "no joint state")):
                break
            h.spin_for(0.1)
        assert answer.success, (answer, node.text())
        # 15 %: 1.5 s into the excitation, close to its fastest
        assert h.spin_until(lambda: h.progress_value("phase") == "excite"
                            and float(h.progress_value("percent")) >= 15.0, 60.0), node.text()
        node.proc.kill()  # SIGKILL: no shutdown handler, no abort, no last message
        killed = h.sim_time()
        assert h.spin_until(lambda: h.sim_time() > killed + 4.0, 60.0)
    finally:
        if node.proc.poll() is None:
            node.proc.kill()
        node.finish()
    stamps = np.array([s for s, _ in h.states])
    speeds = np.abs(np.array([v for _, v in h.states]))
    during = stamps >= killed - 2.0
    assert np.any(speeds[during & (stamps < killed)].max(axis=1) > 0.5)  # it was moving fast
    after = stamps >= killed
    moving = np.flatnonzero(after & (speeds.max(axis=1) > REST_SPEED))
    rest = stamps[moving[-1]] - killed if moving.size else 0.0
    print(f"\nkill -9 at {killed:.2f} s (simulated): at rest {rest:.2f} s later, peak speed after it "
          f"{np.round(speeds[after].max(axis=0), 3).tolist()} rad/s; before it "
          f"{np.round(speeds[~after].max(axis=0), 3).tolist()} rad/s (limit {ARM.velocity_max[0]:.3f})")
    assert rest < REST_AFTER_KILL, f"still moving {rest:.1f} s after the node died"
    assert np.all(speeds[after] <= SPEED_MARGIN * ARM.velocity_max), speeds[after].max(axis=0)


# -- signals ------------------------------------------------------------------------------------------


# executable -> (arguments, the log line that says it is up)
EXECUTABLES = {
    "sim_node": (("-p", "realtime_priority:=0"), "simulated '"),
    "kinematics_node": ((), "joint states on"),
    "identification_node": (("-p", "output_directory:={tmp}"), "ready"),
    "pd_gravity_controller": (("-p", "realtime_priority:=0"), "call ~/enable"),
    "computed_torque_controller": (("-p", "realtime_priority:=0"), "call ~/enable"),
    "youbot_driver": (("-p", "backend:=virtual", "-p", "realtime_priority:=0"), "youBot arm driver"),
}


@pytest.mark.ros
@pytest.mark.timeout(180)
@pytest.mark.parametrize("executable", list(EXECUTABLES))
def test_signals_end_every_executable_with_exit_0(executable, tmp_path):
    """Every executable, in both spin modes (``YOUBOT_DYNAMICS_EXECUTOR``): SIGINT, then SIGTERM
    and SIGINT 10 and 30 ms later (``ros2 launch`` re-sends SIGINT and escalates to SIGTERM; the
    later ones land during the shutdown) on the events executor; one SIGTERM on the single-threaded
    one. Exit 0 and no traceback every time (before: a KeyboardInterrupt traceback from
    destroy_node() or death by the signal in most runs)."""
    pytest.importorskip("rclpy")
    from youbot_dynamics.nodes.common import EXECUTOR_VARIABLE

    arguments, up = EXECUTABLES[executable]
    arguments = tuple(a.format(tmp=tmp_path) for a in arguments)
    for mode, signals in (("events", (signal.SIGINT, signal.SIGTERM, signal.SIGINT)), ("single", (signal.SIGTERM,))):
        os.environ[EXECUTOR_VARIABLE] = mode
        try:
            node = NodeProcess(executable, *arguments, domain=SIGNAL_DOMAIN_ID)
        finally:
            del os.environ[EXECUTOR_VARIABLE]
        try:
            assert node.wait_for(up, 60.0), node.text()
            time.sleep(0.5)  # spinning
            for signum, gap in zip(signals, (0.01, 0.03, 0.0)):
                node.proc.send_signal(signum)
                time.sleep(gap)
        finally:
            code = node.finish()
        assert code == 0 and "Traceback" not in node.text(), f"{mode}: exit {code}\n{node.text()[-3000:]}"
