"""The controller nodes over real DDS against the simulator node (in-process), and the executables.

The module's domains (conftest.ros_domain_id): k = 1 for the subprocesses, the others in turn for
the in-process harness (a new one after a test that failed: ros_harness.SharedHarness), localhost
discovery only, a private rclpy Context.
The simulator runs in real time with realism on (friction, noise, quantization, 100 ms command
timeout); the controllers get a model file of the simulator's true parameters (the stand-in for an
identified model), written to a temporary directory. The simulator, the controller under test and
a tester node share one executor spun by the test thread (plus the simulator's physics thread).
"""
from __future__ import annotations

import bisect
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Inertia, PoseStamped, WrenchStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from youbot_dynamics.contract.topics import EFFORT_COMMANDS, POSITION_COMMANDS  # noqa: E402
from youbot_dynamics.control import GuardState  # noqa: E402
from youbot_dynamics.dynamics.chain import DHChain  # noqa: E402
from youbot_dynamics.dynamics.model import DynamicModel  # noqa: E402
from youbot_dynamics.dynamics.paramfile import save_model  # noqa: E402
from youbot_dynamics.arm.kinematics import forward_kinematics  # noqa: E402
from youbot_dynamics.nodes.computed_torque_controller import ComputedTorqueControllerNode  # noqa: E402
from youbot_dynamics.nodes.common import create_executor, realtime_interpreter  # noqa: E402
from youbot_dynamics.control.loop import ZERO_CYCLES_ON_DISABLE  # noqa: E402
from youbot_dynamics.nodes.messages import JointStateReader, matrix_to_pose  # noqa: E402
from youbot_dynamics.contract.controller_registry import controller  # noqa: E402
from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode  # noqa: E402
from youbot_dynamics.nodes.sim_node import SimNode  # noqa: E402
from conftest import ros_domain_id  # noqa: E402
from ros_harness import RosHarness, SharedHarness, shared_harness_fixture  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]

DOMAIN_ID = ros_domain_id(__file__)
SUBPROCESS_DOMAIN_ID = ros_domain_id(__file__, 1)
HARNESS_DOMAINS = [ros_domain_id(__file__, k) for k in (0, 2, 3, 4)]
Q_START = np.array([2.95, 1.0, -2.0, 1.8, 2.9])  # inside the limits, arm leaning forward
COMMANDS = EFFORT_COMMANDS
ROOT = Path(__file__).resolve().parent.parent


# The joint-state and control rate over DDS here. The simulator can publish at its 1 kHz physics
# rate, but the simulator, the controller and the tester of this one process then ran the executor's
# thread at 100 % of a core on a quiet 2-core machine: 40-60 % of the control cycles missed, events
# queued behind each other until replies came seconds late and the arm fell on the drives' command
# timeout (the CI failures of stop 36). At 250 Hz 0.15 % of the cycles were missed (500 Hz: 2 %); the real driver
# publishes about 300 Hz. The 1 kHz loop is measured in its own processes (make bench, the launch tests).
DDS_RATE = 250.0


def duration(seconds: float) -> Duration:
    return Duration(sec=int(seconds), nanosec=int(round((seconds % 1.0) * 1e9)))


class Harness(RosHarness):
    """Simulator and tester nodes on one executor, spun by the test thread; controllers are added
    per test. The test's own work between spins delays the control loop (it shares the thread):
    JIT-compiled functions are warmed up here, and heavy checks run after the arm's motion."""

    def __init__(self, model_file: Path, sim_parameters: dict | None = None, domain_id: str = DOMAIN_ID) -> None:
        super().__init__("controller_tester", spin_period=0.005, wait_timeout=5.0, domain_id=int(domain_id),
                         executor=lambda context: create_executor(events=True, context=context))  # as the executables
        self.model_file = model_file
        self.sim = self.add_node(SimNode(context=self.context, parameter_overrides=[
            Parameter("initial_positions", value=Q_START.tolist()), Parameter("diagnostics_period", value=0.0),
            Parameter("publish_rate", value=DDS_RATE),
            *(Parameter(name, value=value) for name, value in (sim_parameters or {}).items())]))
        self.arm = self.sim.arm
        save_model(model_file, DynamicModel.from_standard(DHChain.from_arm(self.arm), self.sim.sim.true_parameters),
                   "the simulator's true parameters (test stand-in for an identified model)",
                   self.sim.sim.true_parameters)
        self._recordings: list = []
        self._publishers: list = []
        self.sim_clients = {name: self.tester.create_client(Trigger, f"/sim_node/{name}")
                            for name in ("reset", "pause", "resume")}
        self._interpreter = ExitStack()
        self._interpreter.enter_context(realtime_interpreter())  # as the executables do
        forward_kinematics(self.arm, Q_START)  # compile before any controller runs
        self.sim.start()

    def close(self) -> None:
        self.sim.stop()
        try:
            super().close()
        finally:
            self._interpreter.close()

    def problem(self) -> str | None:
        """Also: a node of the last test (a controller) still on the executor."""
        left = [node.get_name() for node in self.executor.get_nodes() if node not in (self.tester, self.sim)]
        return f"nodes of the last test left: {left}" if left else super().problem()

    # -- tester helpers -------------------------------------------------------------------------

    def record(self, msg_type, topic: str) -> list:
        """Messages on ``topic`` as ``(arrival [perf_counter], msg)``, recorded from now on."""
        out: list = []
        self._recordings.append((out, self.tester.create_subscription(
            msg_type, topic, lambda m: out.append((time.perf_counter(), m)), 1000)))
        return out

    def stop_recording(self, recording: list) -> None:
        for k, (out, sub) in enumerate(self._recordings):
            if out is recording:
                del self._recordings[k]
                self.tester.destroy_subscription(sub)
                return

    def forget(self) -> None:
        """Destroy the tester's recordings and publishers (after a test)."""
        for _, sub in self._recordings:
            self.tester.destroy_subscription(sub)
        for pub in self._publishers:
            self.tester.destroy_publisher(pub)
        self._recordings.clear()
        self._publishers.clear()

    def publisher(self, msg_type, topic: str, wait: bool = True):
        pub = self.tester.create_publisher(msg_type, topic, 10)
        self._publishers.append(pub)
        assert not wait or self.spin_until(lambda: pub.get_subscription_count() > 0), topic
        return pub

    def call(self, client, request):
        return self.request(client, request, timeout=self.wait_timeout)

    def sim_call(self, name: str) -> Trigger.Response:
        return self.call(self.sim_clients[name], Trigger.Request())

    def reset_sim(self) -> None:
        """Back to Q_START, held by the drives until the next command, joint states flowing."""
        assert self.sim_call("resume").success
        assert self.sim_call("reset").success
        assert self.spin_until(lambda: self.sim.statistics.total_cycles > 0)

    def hold_with_drives(self, q, seconds: float = 0.5) -> None:
        """Let the drives' position control hold ``q`` (commands every 20 ms, then none): the arm is
        at rest with the drives carrying gravity when a torque controller takes over."""
        pub = self.publisher(Float64MultiArray, POSITION_COMMANDS)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pub.publish(Float64MultiArray(data=[float(v) for v in q]))
            self.spin_for(0.02)


# the controllers' input topics (the tester's publishers are created before enabling: creating a
# DDS endpoint blocks this single-threaded process for longer than the 20 ms state timeout)
INPUTS = {"pd_gravity_controller": {"goal": JointState, "goal_pose": PoseStamped},
          "computed_torque_controller": {"trajectory": JointTrajectory, "line": PoseStamped},
          "float_controller": {}}


class Controller:
    """A controller node on the harness executor with tester endpoints for its topics."""

    def __init__(self, harness: Harness, cls, **overrides) -> None:
        self.h = harness
        # no diagnostics timer unless asked: its reports start new timing windows
        params = {"model_file": str(harness.model_file), "diagnostics_period": 0.0, "rate": DDS_RATE, **overrides}
        self.node = cls(context=harness.context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        name = self.node.get_name()
        harness.executor.add_node(self.node)
        t = harness.tester
        self.enable_client = t.create_client(SetBool, f"/{name}/enable")
        self.status = harness.record(String, f"/{name}/status")
        self.states = harness.record(Float64MultiArray, f"/{name}/state")
        self.publishers = {topic: harness.publisher(msg_type, f"/{name}/{topic}")
                           for topic, msg_type in INPUTS[name].items()}
        assert harness.spin_until(lambda: self.node.measured_position() is not None or
                                  overrides.get("joint_states_topic"), timeout=5.0)

    def publish(self, topic: str, msg) -> None:
        self.publishers[topic].publish(msg)

    def set_enabled(self, value: bool) -> SetBool.Response:
        return self.h.call(self.enable_client, SetBool.Request(data=value))

    def wait_status(self, text: str, timeout: float = 10.0, since: float = 0.0) -> str:
        """The first status message containing ``text`` that arrived after ``since`` [s, perf_counter]
        (default: any, already received or coming; waited for ``timeout`` s: the planning thread of
        this shared process is late under load)."""
        found: list[str] = []

        def seen() -> bool:
            found[:] = [m.data for t, m in self.status if t >= since and text in m.data]
            return bool(found)

        assert self.h.spin_until(seen, timeout), \
            f"no status with {text!r} in {timeout:g} s; got {[m.data for _, m in self.status]} {self.load()}"
        return found[0]

    def q(self) -> np.ndarray:
        return self.node.measured_position().copy()

    def state_rows(self, since: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """``~/state`` since ``since`` [s, perf_counter]: the controller's times (k,) and the data
        as (k, 4, n): q_d, q, e, tau. Only the messages that reached the tester after ``since`` are
        decoded (a row's time is earlier than its arrival): this runs as a wait's predicate."""
        first = bisect.bisect_left(self.states, since, key=lambda record: record[0])
        rows = np.array([np.asarray(m.data).reshape(5, -1) for _, m in self.states[first:]])
        if rows.size == 0:
            return np.zeros(0), np.zeros((0, 4, self.h.arm.n_joints))
        np.testing.assert_array_equal(rows[:, 4], rows[:, 4, :1] * np.ones(rows.shape[2]))  # t per joint
        keep = rows[:, 4, 0] >= since
        return rows[keep, 4, 0], rows[keep, :4]

    def load(self) -> str:
        """The load of this shared process as the controller saw it (for the message of an accuracy
        or timing assertion: such a failure names what the machine gave the loop)."""
        r = self.node.timing_report()
        return (f"(under load: the control loop missed {r['total_missed']:.0f} of {r['total_cycles']:.0f} cycles "
                f"at {self.node.rate:g} Hz; latency joint state -> torque p99 {r.get('latency_p99_ms', 0.0):.1f} ms, "
                f"max {r.get('latency_max_ms', 0.0):.1f} ms)")

    def _drained(self, quiet: float):
        """A predicate: no joint state has been taken in by the node for ``quiet`` s."""
        last = [self.node.loop.state, time.monotonic()]

        def drained() -> bool:
            if self.node.loop.state is not last[0]:
                last[:] = [self.node.loop.state, time.monotonic()]
            return time.monotonic() - last[1] > quiet

        return drained

    def rows_from_now(self, count: int, timeout: float = 30.0) -> np.ndarray:
        """The next ``count`` ``~/state`` rows (k, 4, n) the controller publishes from now on, waited
        for (on a busy machine they arrive late: rows "of the last 0.25 s" were once none)."""
        mark = time.perf_counter()
        assert self.h.spin_until(lambda: self.state_rows(since=mark)[0].size >= count, timeout), \
            f"fewer than {count} ~/state rows in {timeout:g} s {self.load()}"
        return self.state_rows(since=mark)[1]

    def close(self) -> None:
        self.node.stop_commanding()
        self.h.executor.remove_node(self.node)
        # the events executor still dispatches the events queued before the removal; a callback run after
        # destroy_node raises InvalidHandle in every later spin (CI26, two CPU hogs: 10 tests lost after
        # 0.05 s; a loaded run of this stop: after 0.3 s). Spin until no joint state has reached the
        # removed node for 0.1 s (its queue is empty), then destroy it.
        self.h.spin_until(self._drained(0.1), timeout=10.0)
        self.node.destroy_node()
        self.h.tester.destroy_client(self.enable_client)
        self.h.stop_recording(self.status)
        self.h.stop_recording(self.states)


@pytest.fixture(scope="module", autouse=True)
def ros_environment():
    old = {k: os.environ.get(k) for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")}
    os.environ["ROS_DOMAIN_ID"] = DOMAIN_ID
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


# The nodes' plumbing is tested on the simulated robot without its friction beyond the seed's
# (Stribeck excess, asymmetric and load-dependent, issue 13 item 6): its static friction holds the
# shoulder at Q_START without gravity compensation (0.35 mrad, the test of the PD node's gravity
# needs a sag), and computed torque over DDS held the end of its stroke 3.5 mrad off on joint 4
# (bound 3 mrad), measured. How the controllers fare on the full true robot is the control tests'.
SEED_FRICTION_EFFECTS = ["friction", "noise", "quantization", "effort_calibration", "velocity_lag"]


@pytest.fixture(scope="module")
def harnesses(ros_environment, tmp_path_factory):
    model_file = tmp_path_factory.mktemp("model") / "true_model.yaml"
    shared = SharedHarness(lambda domain: Harness(model_file, {"realism_effects": SEED_FRICTION_EFFECTS}, domain),
                           HARNESS_DOMAINS)
    yield shared
    shared.close()


harness = shared_harness_fixture("harness", "harnesses")


# The simulator, the controller and the tester share one Python process (and its GIL) on a machine
# that may be shared with other work: the process then stalls now and then for 20-150 ms (the
# thread holding the GIL is descheduled). A stall stops the simulator as well (it resynchronises,
# no catch-up), but would fault the controller: the functional tests allow 0.5 s, the stale-state
# test uses the default 50 ms.
TOLERANT = {"state_timeout": 0.5}
# PD goals at half the default speed: with two CPU hogs this shared process ran the loop at 441 Hz
# (50 % missed) and the wrist, oscillating around a goal profile at 0.7 x velocity_max, reached
# 1.12-1.14 x velocity_max (the suite-wide limit check, conftest.py)
# ... and PD gains of 20 rad/s, at least those that hold within 2 mrad against static friction
# (static_accuracy): with commands up to 11 ms late (the loop of this shared process at 539 Hz,
# 42 % missed, in a loaded CI run) the default 60 rad/s made the wrist oscillate around a slow
# goal profile to 1.13 x velocity_max; 20 rad/s keeps the phase lag of such a delay small (their
# own processes have no such delay: the launched hold uses the defaults)
SLOW_GOALS = {"goal_velocity_fraction": 0.35, "bandwidth": 20.0, "static_accuracy": 0.002}


@pytest.fixture
def make_controller(harness):
    made: list[Controller] = []

    def make(cls, **overrides) -> Controller:
        # one controller at a time: a second node of the same name answered the first one's ~/enable
        # too, and the two fought over the arm (CI26 run 2: the arm left its velocity limit)
        while made:
            made.pop().close()
        harness.reset_sim()
        made.append(Controller(harness, cls, **overrides))
        return made[-1]

    yield make
    while made:
        made.pop().close()
    harness.forget()


@pytest.fixture
def pd(make_controller):
    return make_controller(PDGravityControllerNode, **TOLERANT, **SLOW_GOALS)


@pytest.fixture
def ct(make_controller):
    return make_controller(ComputedTorqueControllerNode, **TOLERANT)


def enable(c: Controller, settle: float = 0.6, check: bool = True) -> np.ndarray:
    """Hold Q_START with the drives, enable (bumpless), wait through the ramp; the held position."""
    c.h.hold_with_drives(Q_START)
    response = c.set_enabled(True)
    assert response.success, response.message
    c.h.spin_for(settle)
    assert not check or c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason
    return c.node.law.desired_position(time.perf_counter()).copy()


def print_timing(c: Controller, label: str) -> dict:
    report = c.node.timing_report()
    print(f"\n{label}: control loop {report['rate_hz']:.0f} Hz (nominal {c.node.rate:g}), "
          f"{report['missed_cycles']} of {report['cycles']:.0f} cycles missed "
          f"(total {report['total_missed']:.0f} of {report['total_cycles']:.0f}); latency joint state -> torque "
          f"median {report['latency_median_ms']:.3f} ms, p99 {report['latency_p99_ms']:.3f} ms, "
          f"max {report['latency_max_ms']:.2f} ms; compute median {report['compute_median_us']:.0f} us, "
          f"p99 {report['compute_p99_us']:.0f} us")
    return report


# ---------------------------------------------------------------------------------------------
# PD + gravity


def test_pd_enable_ramp_goal_settles_and_timing(pd):
    c, h = pd, pd.h
    commands = h.record(Float64MultiArray, COMMANDS)
    h.hold_with_drives(Q_START)
    assert not commands, "disabled at start: no commands"
    effort = c.node.loop.state[3].copy()  # the drives hold the arm: gravity
    response = c.set_enabled(True)
    assert response.success and "from the measured effort" in response.message, response.message
    enabled = time.perf_counter()
    h.spin_for(0.7)
    # bumpless and smooth: the first torques are the drives' effort, no jumps between the commands of
    # the first half of the ramp (later the full-gain law reacts to a stall of this shared process)
    tau = np.array([m.data for t, m in commands])
    ramp = tau[np.array([t for t, _ in commands]) < enabled + 0.25]
    limit = c.node.guard.torque_limit
    first = np.abs(tau[:20] - effort).max(axis=0)
    step = np.abs(np.diff(ramp, axis=0)).max(axis=0)
    print(f"\nenable ramp: effort before {np.round(effort, 3)} N m, first 20 commands within {np.round(first, 3)} "
          f"N m of it, largest step between commands over 0.25 s {np.round(step, 3)} N m (limit {np.round(limit, 1)})")
    # 20 ms of ramp from the effort of one joint state; ``effort`` is another sample (noise <= 0.05 N m)
    assert np.all(first <= 0.1 * limit + 0.2)
    assert np.all(step <= 0.1 * limit)
    h.stop_recording(commands)  # DDS_RATE callbacks a second less in this shared process

    goal = c.node.law.goal + np.array([0.3, -0.3, 0.3, -0.3, 0.3])
    c.node.timing_report()  # start a timing window
    c.publish("goal", JointState(name=list(reversed(h.arm.joint_names)),
                                 position=goal[::-1].tolist()))  # by name, any order
    assert "goal accepted" in c.wait_status("goal accepted")
    h.spin_for(2.25)
    rows = c.rows_from_now(25)  # 0.25 s at the default state_publish_decimation (100 Hz)
    error = np.median(np.abs(rows[:, 2]), axis=0)  # robust to a stall of this shared test process
    report = print_timing(c, "PD + gravity")
    print(f"PD + gravity over DDS: |q - q_d| 2.25-2.5 s after a 0.3 rad step (median of ~/state) = "
          f"{np.round(1e3 * error, 3)} mrad")
    assert np.all(error < 3e-3), f"{error} {c.load()}"
    assert report["cycles"] > 0  # (the loop's rate and latency printed above: goals of make bench)
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason
    # ~/state: [q_d, q, e, tau] with e = q_d - q, the desired position the goal
    start = time.perf_counter()
    c.rows_from_now(20)
    times, rows = c.state_rows(since=start)
    now = time.perf_counter()
    assert rows.shape[1:] == (4, 5)
    # the steady clock: a row's time is the arrival of the state its cycle used; when no state came for
    # 1.5 periods the watchdog runs a cycle on the same state, and two rows share its time (two CPU hogs:
    # 1 of 5 loaded runs, stop 27; a loaded CI run of this stop)
    assert np.all(np.diff(times) >= 0) and start <= times[0] and times[-1] <= now
    np.testing.assert_allclose(rows[-1, 0], goal)
    np.testing.assert_allclose(rows[-1, 2], rows[-1, 0] - rows[-1, 1])


def test_pd_node_needs_its_gravity_compensation(make_controller):
    """The same pose held by the same gains with and without the model's gravity (and friction):
    without it the shoulder and elbow sag by up to G / Kp (less where the joints' friction holds
    them), with it they do not; so a node that lost its model fails here. Soft gains on joints 2
    and 3 make the sag a few mrad."""
    errors = {}
    gains = {"kp": [2000.0, 300.0, 300.0, 500.0, 200.0], "kd": [65.0, 25.0, 15.0, 7.0, 4.0]}
    for label, overrides in (("PD + gravity", {}),
                             ("PD only", {"gravity_compensation": False, "friction_compensation": False})):
        c = make_controller(PDGravityControllerNode, **TOLERANT, **gains, **overrides)
        held = enable(c, settle=1.5)
        c.h.spin_for(0.25)
        rows = c.rows_from_now(75)  # 0.75 s
        errors[label] = np.median(np.abs(rows[:, 2]), axis=0)  # robust to a stall of this shared process
        sag = c.node.model.gravity(held) / c.node.law.kp  # what PD alone must leave [rad]
        print(f"\n{label}: |q - q_d| holding {np.round(held, 3).tolist()} = {np.round(1e3 * errors[label], 3)} mrad "
              f"(G / Kp = {np.round(1e3 * sag, 3)} mrad)")
        c.set_enabled(False)
        c.h.spin_for(0.1)
    with_g, without = errors["PD + gravity"], errors["PD only"]
    assert without[1] > 1e-3  # the shoulder really is loaded (the elbow's friction may hold it)
    # (idle: 0.01-0.2 vs 2.4-2.8 mrad; with two CPU hogs up to 0.83 vs 2.4)
    assert with_g[1] < 0.5 * without[1], (with_g, without, c.load())
    # the elbow no worse with G, or within half its sag G / Kp: its friction holds most of the sag without G
    # (idle 0.35 vs 0.94 mrad of a 2.5 mrad sag), and with two CPU hogs the held error was 1.13 vs 1.10 once
    assert with_g[2] <= max(without[2], 0.5 * abs(sag[2])), (with_g, without, sag, c.load())


def test_pd_goal_pose_refused_goals_and_diagnostics(make_controller):
    c = make_controller(PDGravityControllerNode, diagnostics_period=0.5, **TOLERANT, **SLOW_GOALS)
    h = c.h
    diagnostics = h.record(DiagnosticArray, "/diagnostics")
    held = enable(c)
    target_q = held + np.array([-0.2, 0.15, -0.2, 0.2, -0.3])
    target = forward_kinematics(h.arm, target_q)
    c.publish("goal_pose", PoseStamped(pose=matrix_to_pose(target)))
    c.wait_status("goal pose accepted")
    np.testing.assert_allclose(c.node.law.goal, target_q, atol=1e-6)  # the closest feasible branch
    h.spin_for(2.0)
    reached = forward_kinematics(h.arm, c.q())
    position_error = np.linalg.norm(reached[:3, 3] - target[:3, 3])
    print(f"\ngoal pose: tool {1e3 * position_error:.3f} mm from the target, joints "
          f"{np.round(1e3 * np.abs(c.q() - target_q), 3)} mrad")
    assert position_error < 2e-3, c.load()

    # refused: outside the limits, unreachable pose, wrong frame; the goal and the arm stay
    q_before, goal_before = c.q(), c.node.law.goal.copy()
    outside = target_q.copy()
    outside[2] = h.arm.position_max[2] + 0.2
    c.publish("goal", JointState(name=list(h.arm.joint_names), position=outside.tolist()))
    reason = c.wait_status("goal refused")
    assert "limit" in reason and "arm_joint_3" in reason, reason
    far = np.eye(4)
    far[:3, 3] = [2.0, 0.0, 0.5]
    c.publish("goal_pose", PoseStamped(pose=matrix_to_pose(far)))
    assert "reach" in c.wait_status("goal pose refused")
    wrong = PoseStamped(pose=matrix_to_pose(target))
    wrong.header.frame_id = "map"
    c.status.clear()
    c.publish("goal_pose", wrong)
    assert "frame" in c.wait_status("goal pose refused")
    h.spin_for(0.5)
    print(f"refusal reasons: {[m.data for _, m in c.status]}")
    np.testing.assert_array_equal(c.node.law.goal, goal_before)
    assert np.max(np.abs(c.q() - q_before)) < 3e-3, c.load()
    assert c.node.last_refusal and "frame" in c.node.last_refusal
    # the timing report on /diagnostics
    assert h.spin_until(lambda: any(s.name.startswith("pd_gravity_controller") for _, m in diagnostics
                                    for s in m.status), timeout=2.0)
    status = [s for _, m in diagnostics for s in m.status if s.name.startswith("pd_gravity")][-1]
    values = {kv.key: kv.value for kv in status.values}
    print(f"/diagnostics: {status.message}; {values}")
    assert {"rate_hz", "missed_cycles", "latency_median_ms", "latency_p99_ms", "state", "last_refusal"} <= set(values)
    assert values["state"] == "enabled" and "frame" in values["last_refusal"]


# ---------------------------------------------------------------------------------------------
# Computed torque


def trajectory_msg(names, points) -> JointTrajectory:
    msg = JointTrajectory(joint_names=list(names))
    for t, q in points:
        msg.points.append(JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=duration(t)))
    return msg


def test_computed_torque_follows_a_trajectory_and_holds_its_end(ct):
    c, h = ct, ct.h
    held = enable(c)
    stroke = np.array([0.4, -0.3, 0.4, -0.4, 0.5])
    # out and back, quintic rest-to-rest segments of 1 s: peak 0.94 rad/s (60 % of velocity_max)
    points = [(1.0, held + stroke), (2.0, held)]
    c.node.timing_report()
    c.publish("trajectory", trajectory_msg(h.arm.joint_names, points))
    c.wait_status("trajectory accepted")
    accepted = time.perf_counter()
    assert c.node.law.trajectory.duration == pytest.approx(2.0)  # time_from_start honoured
    h.spin_for(1.0)
    mid = c.node.law.desired_position(c.node.law.start_time + 1.0)
    np.testing.assert_allclose(mid, held + stroke, atol=1e-9)
    h.spin_for(1.5)
    times, rows = c.state_rows(since=accepted)
    moving = times < accepted + 2.0
    rms = np.sqrt(np.mean(rows[moving, 2] ** 2, axis=0))
    peak = np.abs(rows[moving, 2]).max(axis=0)
    end_error = np.abs(c.q() - held)
    report = print_timing(c, "computed torque")
    print(f"computed torque over DDS: RMS tracking error {np.round(1e3 * rms, 3)} mrad, peak {np.round(1e3 * peak, 3)}"
          f" mrad ({moving.sum()} samples of ~/state); holding the end: {np.round(1e3 * end_error, 3)} mrad")
    assert np.ptp(rows[moving, 0], axis=0) == pytest.approx(np.abs(stroke), rel=0.02)  # the reference moved
    assert np.all(rms < 10e-3), c.load()  # loose: ~0.2-1 mrad on an idle machine, more when the CPUs are shared
    assert np.all(end_error < 3e-3), c.load()
    np.testing.assert_allclose(rows[-1, 0], held, atol=1e-12)  # holds the last point
    assert report["cycles"] > 0  # (its rate and latency printed above: goals of make bench)


def test_computed_torque_needs_its_model_feedforward(make_controller):
    """The same pose held by the same gains with and without the model's feed-forward (M q''_d +
    C q'_d + G + friction; at rest the gravity): without it the shoulder sags by G / (M Kp), with
    it it does not; so a node that lost its model fails here. (Tracking errors of this shared
    test process are dominated by the joint states' transport, not by the model: the demo's
    test compares tracking, test_demo_job.py.)"""
    errors = {}
    for label, overrides in (("computed torque", {}), ("PD on the same error gains", {"model_feedforward": False})):
        c = make_controller(ComputedTorqueControllerNode, **TOLERANT, **overrides)
        held = enable(c, settle=1.5)
        c.h.spin_for(0.75)
        rows = c.rows_from_now(25)  # 0.25 s
        errors[label] = np.median(np.abs(rows[:, 2]), axis=0)
        print(f"\n{label}: |q - q_d| holding {np.round(held, 3).tolist()} = {np.round(1e3 * errors[label], 3)} mrad")
        c.set_enabled(False)
        c.h.spin_for(0.1)
    with_model, without = errors["computed torque"], errors["PD on the same error gains"]
    assert without[1] > 0.3e-3  # the shoulder really is loaded
    # at most half: 0.04 vs 0.88 mrad on an idle machine, 0.29 vs 0.93 mrad in a CI run on a busy one
    assert with_model[1] < 0.5 * without[1], (with_model, without, c.load())


def test_computed_torque_cartesian_line(ct):
    c, h = ct, ct.h
    held = enable(c)
    start = forward_kinematics(h.arm, held)
    goal = start.copy()
    goal[:3, 3] += [0.04, 0.0, -0.04]  # 5.7 cm forward and down, same orientation
    c.publish("line", PoseStamped(pose=matrix_to_pose(goal)))
    c.wait_status("line accepted")
    accepted = time.perf_counter()
    h.spin_for(c.node.line_duration + 0.5)
    _, rows = c.state_rows(since=accepted)
    tool = np.array([forward_kinematics(h.arm, np.array(q))[:3, 3] for q in rows[:, 1]])  # contiguous: compiled
    direction = (goal[:3, 3] - start[:3, 3]) / np.linalg.norm(goal[:3, 3] - start[:3, 3])
    offsets = tool - start[:3, 3]
    off_line = np.linalg.norm(offsets - np.outer(offsets @ direction, direction), axis=1).max()
    final = np.linalg.norm(forward_kinematics(h.arm, c.q())[:3, 3] - goal[:3, 3])
    print(f"\nCartesian line (5.7 cm in {c.node.line_duration:g} s): largest distance of the measured tool from the "
          f"line {1e3 * off_line:.3f} mm, final position error {1e3 * final:.3f} mm")
    assert off_line < 2e-3 and final < 2e-3, c.load()
    # a line out of reach is refused with the reason, and so is one while a trajectory runs
    far = goal.copy()
    far[:3, 3] += [0.0, 0.0, 1.0]
    c.publish("line", PoseStamped(pose=matrix_to_pose(far)))
    print(c.wait_status("line refused"))


def test_computed_torque_refusals(ct):
    c, h = ct, ct.h
    names = h.arm.joint_names
    # while disabled
    c.publish("trajectory", trajectory_msg(names, [(1.0, Q_START)]))
    assert "disabled" in c.wait_status("trajectory refused")
    held = enable(c)
    q_before = c.q()
    cases = {
        "position": [(1.0, held + np.array([0.0, 0.0, 0.0, 0.0, 3.5]))],  # joint 5 beyond its limit
        "velocity": [(0.3, held + np.array([1.0, 0.0, 0.0, 0.0, 0.0]))],  # peaks at 6.25 rad/s
        # joint 5: 0.4 rad in 0.5 s peaks at 1.5 rad/s (< 1.57) and 9.2 rad/s^2 (> 6)
        "acceleration": [(0.5, held + np.array([0.0, 0.0, 0.0, 0.0, 0.4]))],
        "increasing": [(1.0, held), (0.5, held)],
    }
    reasons = {}
    for key, points in cases.items():
        c.status.clear()
        c.publish("trajectory", trajectory_msg(names, points))
        reasons[key] = c.wait_status("trajectory refused")
    missing = JointTrajectory(joint_names=list(names[:4]))
    missing.points.append(JointTrajectoryPoint(positions=[3.0] * 4, time_from_start=duration(1.0)))
    c.status.clear()
    c.publish("trajectory", missing)
    reasons["joint names"] = c.wait_status("trajectory refused")
    h.spin_for(0.3)
    print("\n" + "\n".join(f"{k}: {v}" for k, v in reasons.items()))
    assert "limit position_max" in reasons["position"]
    assert "velocity of arm_joint_1" in reasons["velocity"]
    assert "acceleration of arm_joint_5" in reasons["acceleration"]
    assert "strictly increasing" in reasons["increasing"]
    assert "joint_names" in reasons["joint names"]
    np.testing.assert_allclose(c.node.law.desired_position(time.perf_counter()), held)
    assert np.max(np.abs(c.q() - q_before)) < 3e-3, c.load()


# ---------------------------------------------------------------------------------------------
# FollowJointTrajectory (control_msgs: without a real one the test-only one make setup builds, doc/control.md)


class Follow:
    """An action client of ``/computed_torque_controller/follow_joint_trajectory`` on the tester node,
    written from control_msgs' FollowJointTrajectory.action alone."""

    def __init__(self, c: Controller) -> None:
        self.action = pytest.importorskip("control_msgs.action").FollowJointTrajectory
        from rclpy.action import ActionClient
        self.c, self.h = c, c.h
        self.client = ActionClient(c.h.tester, self.action, "/computed_torque_controller/follow_joint_trajectory")
        assert self.h.spin_until(self.client.server_is_ready, 5.0), "no follow_joint_trajectory server"
        self.feedback: list = []

    def goal(self, names, points, path=None, goal=None, goal_time: float = 0.0):
        """A goal of ``points`` ``(t, q)`` (q in the arm's order) sent with ``names`` in that order."""
        from control_msgs.msg import JointTolerance
        order = [self.h.arm.joint_names.index(name) for name in names]
        request = self.action.Goal(trajectory=trajectory_msg(names, [(t, np.asarray(q)[order]) for t, q in points]))
        request.path_tolerance = [JointTolerance(name=n, position=p) for n, p in (path or {}).items()]
        request.goal_tolerance = [JointTolerance(name=n, position=p) for n, p in (goal or {}).items()]
        request.goal_time_tolerance = duration(goal_time)
        return request

    def send(self, request):
        """The goal handle (accepted)."""
        future = self.client.send_goal_async(request, feedback_callback=lambda m: self.feedback.append(
            (time.perf_counter(), m.feedback)))
        assert self.h.spin_until(future.done, 5.0), "no answer to the goal"
        handle = future.result()
        assert handle.accepted
        return handle

    def result(self, handle, timeout: float = 15.0):
        """``(status, result)`` once the goal ended."""
        future = handle.get_result_async()
        assert self.h.spin_until(future.done, timeout), f"the goal did not end in {timeout:g} s {self.c.load()}"
        return future.result().status, future.result().result


def check_feedback(f: Follow, arm, motion: float, load: str) -> None:
    """At least 10 Hz of feedback over the ``motion`` [s] (20 Hz by default), in the arm's joint order, its
    error the desired less the actual position."""
    assert len(f.feedback) >= 10 * motion, f"{len(f.feedback)} feedback messages over the {motion:g} s motion {load}"
    last = f.feedback[-1][1]
    assert list(last.joint_names) == list(arm.joint_names)
    np.testing.assert_allclose(np.array(last.error.positions),
                               np.array(last.desired.positions) - np.array(last.actual.positions), atol=1e-12)


@pytest.fixture
def follow(ct):
    # the client stays on the tester node until the harness closes: destroyed after a failed test with
    # its goal still running, the events executor then dispatched the goal's result to it (segfault)
    return Follow(ct)


STROKE = np.array([0.4, -0.3, 0.4, -0.4, 0.5])


def test_follow_joint_trajectory_succeeds_with_joints_in_any_order_and_feedback(follow):
    from action_msgs.msg import GoalStatus
    c, h, f = follow.c, follow.h, follow
    held = enable(c)
    names = list(reversed(h.arm.joint_names))
    # tolerances a loaded machine keeps (computed torque over DDS tracks to ~1 mrad when idle; with the
    # loop missing half its cycles joint 1 was once 51 mrad off its reference)
    request = f.goal(names, [(1.0, held + STROKE), (2.0, held)], path={n: 0.2 for n in names},
                     goal={n: 0.005 for n in names}, goal_time=1.0)
    sent = time.perf_counter()
    status, result = f.result(f.send(request))
    ended = time.perf_counter()
    assert status == GoalStatus.STATUS_SUCCEEDED and result.error_code == 0, result.error_string
    assert "goal reached" in result.error_string
    # the goal's points in the arm's order: the reference passed them
    np.testing.assert_allclose(c.node.law.trajectory.sample(1.0)[0], held + STROKE, atol=1e-9)
    np.testing.assert_allclose(c.node.law.trajectory.final, held, atol=1e-12)
    assert np.all(np.abs(c.q() - held) < 0.005), c.load()  # the arm is there (the simulator's measurement)
    times = np.array([t for t, _ in f.feedback])
    print(f"\nFollowJointTrajectory: succeeded {ended - sent:.2f} s after sending; {len(times)} feedback messages, "
          f"largest gap {np.diff(times).max():.3f} s")
    check_feedback(f, h.arm, 2.0, c.load())
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason


def test_follow_joint_trajectory_path_violation_aborts_and_holds(follow):
    from action_msgs.msg import GoalStatus
    c, h, f = follow.c, follow.h, follow
    held = enable(c)
    names = h.arm.joint_names
    # 0.1 mrad on joint 2: computed torque over DDS tracks it to ~1 mrad, the violation comes early
    request = f.goal(names, [(1.5, held + STROKE), (3.0, held)], path={"arm_joint_2": 1e-4})
    status, result = f.result(f.send(request))
    assert status == GoalStatus.STATUS_ABORTED, result.error_string
    assert result.error_code == f.action.Result.PATH_TOLERANCE_VIOLATED
    assert "arm_joint_2 position" in result.error_string and "tolerance 0.0001 rad" in result.error_string
    # held: the reference braked to rest within the limits and stays; the arm with it, still enabled
    h.spin_for(1.0)
    now = time.perf_counter()
    q_d, dq_d, _ = c.node.law.reference(now)
    assert np.all(dq_d == 0.0) and np.max(np.abs(q_d - held - STROKE)) > 0.05  # stopped short of the stroke
    rows = c.rows_from_now(20)
    assert np.all(np.ptp(rows[:, 1], axis=0) < 2e-3), c.load()  # at rest
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason


def test_follow_joint_trajectory_preempt_cancel_and_refusals(follow):
    from action_msgs.msg import GoalStatus
    c, h, f = follow.c, follow.h, follow
    names = h.arm.joint_names
    codes = f.action.Result
    status, result = f.result(f.send(f.goal(names, [(1.0, Q_START)])))  # disabled
    assert status == GoalStatus.STATUS_ABORTED and result.error_code == codes.INVALID_GOAL
    assert "call ~/enable first" in result.error_string
    held = enable(c)
    status, result = f.result(f.send(f.goal(names[:4], [(1.0, held[:4])])))
    assert status == GoalStatus.STATUS_ABORTED and result.error_code == codes.INVALID_JOINTS, result.error_string
    # a goal tolerance no arm meets: violated goal_time_tolerance after the end
    status, result = f.result(f.send(f.goal(names, [(0.5, held + 0.1 * STROKE)], goal={"arm_joint_3": 1e-7},
                                            goal_time=0.2)))
    assert status == GoalStatus.STATUS_ABORTED and result.error_code == codes.GOAL_TOLERANCE_VIOLATED
    assert "arm_joint_3 position" in result.error_string and "goal_time_tolerance 0.2 s" in result.error_string
    # a new goal preempts the running one, a cancel brakes to rest and holds
    here = c.node.law.reference(time.perf_counter())[0].copy()
    first = f.send(f.goal(names, [(2.0, here + STROKE), (4.0, here)]))
    h.spin_for(0.5)
    second = f.send(f.goal(names, [(2.0, here - 0.5 * STROKE)]))
    status, result = f.result(first)
    assert status == GoalStatus.STATUS_ABORTED and "preempted by goal" in result.error_string
    h.spin_for(0.5)
    cancel = second.cancel_goal_async()
    assert h.spin_until(cancel.done, 5.0)
    status, result = f.result(second)
    assert status == GoalStatus.STATUS_CANCELED, result.error_string
    h.spin_for(1.0)
    q_d, dq_d, _ = c.node.law.reference(time.perf_counter())
    assert np.all(dq_d == 0.0)
    assert np.max(np.abs(q_d - (here - 0.5 * STROKE))) > 0.05  # stopped on the way
    rows = c.rows_from_now(20)
    assert np.all(np.abs(rows[:, 2]) < 5e-3) and np.all(np.ptp(rows[:, 1], axis=0) < 2e-3), c.load()
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason


# ---------------------------------------------------------------------------------------------
# Safety


def enabled(c: Controller, event: str) -> str:
    """The message of an assertion that the controller is still enabled after ``event``: the
    guard's fault, which names the load when it is a timing limit ("stale: 520 ms old")."""
    return f"the guard faulted {event}: {c.node.guard.fault_reason}"


def test_stale_joint_states_coast_then_fault_to_zero_torque(make_controller):
    """Default timeouts (state_timeout 50 ms, state_loss_timeout 500 ms): a stall of the controller
    itself is no fault, joint states 0.1 s late are coasted over on gravity, joint states that stop
    are a fault after state_loss_timeout, with a zero torque and the release. The fault needs a
    state 0.5 s old, ten times what the coasting needs: a machine that loses that much time fails
    this test alone, with the age in the guard's message."""
    c = make_controller(PDGravityControllerNode)
    h = c.h
    commands = h.record(Float64MultiArray, COMMANDS)
    enable(c)
    assert h.spin_until(lambda: commands and np.any(np.abs(commands[-1][1].data) > 0.0)), "no torque after enabling"

    # a stall of the controller itself (executor blocked 80 ms while the simulator's thread keeps
    # publishing) is no fault: the next cycle first takes the queued joint states in
    stalls = c.node.stalls
    time.sleep(0.08)
    assert h.spin_until(lambda: c.node.stalls > stalls), "the 80 ms stall was not seen"
    h.spin_for(0.05)
    assert c.node.guard.state is GuardState.ENABLED, enabled(c, "after a stall of 80 ms")
    assert h.spin_until(lambda: time.perf_counter() > c.node.ramp_end + 0.01), "the ramp did not end"  # full gain

    # joint states 0.1 s late: coasted over, no fault, the law again
    coasts = c.node.guard.coast_cycles
    assert h.sim_call("pause").success
    h.spin_for(0.1)
    assert h.sim_call("resume").success
    assert h.spin_until(lambda: c.node.guard.coast_cycles > coasts and not c.node.guard.coasting), \
        f"no coasting over joint states 0.1 s late, or no end of it ({c.node.guard.coast_cycles - coasts} cycles)"
    assert c.node.guard.state is GuardState.ENABLED, enabled(c, "over joint states 0.1 s late")

    c.status.clear()
    coasts = c.node.guard.coast_cycles
    paused = time.perf_counter()
    assert h.sim_call("pause").success
    c.wait_status("fault")
    last_state, q_last = c.node.loop.state[0], c.node.loop.state[1]
    # the zero command of the fault cycle may be taken after the status
    assert h.spin_until(lambda: any(t > last_state and not np.any(m.data) for t, m in commands)), \
        "no zero command after the joint states stopped"
    first_zero = next(k for k, (t, m) in enumerate(commands) if t > last_state and not np.any(m.data))
    assert "braking to rest" in c.wait_status("released to the drives on")
    config = c.node.guard.config
    print(f"\nstale joint states: last state {1e3 * (last_state - paused):.1f} ms after the pause call, first zero "
          f"command received {1e3 * (commands[first_zero][0] - last_state):.1f} ms after it "
          f"({c.node.guard.coast_cycles - coasts} cycles coasted; state_timeout 50 ms, state_loss_timeout 500 ms); "
          f"reason: {c.node.guard.fault_reason}")
    # in order, whatever the delays of this shared process: the law's torques, then the coast on
    # G(q_last) (the nominal model's gravity, the arm at rest), then zeros only (never the last
    # torque again; the release goes to the drives' trajectory interface)
    gravity = c.node.model.gravity(q_last)
    coasted = 0
    for _, m in reversed(commands[:first_zero]):
        if not np.allclose(m.data, gravity, rtol=0.0, atol=1e-9):
            break
        coasted += 1
    trace = [(round(1e3 * (t - last_state), 1), round(float(np.abs(m.data).max()), 3)) for t, m in commands
             if t > last_state - 0.06]
    assert coasted > 0 and c.node.guard.coast_cycles > coasts, trace
    assert all(not np.any(m.data) for _, m in commands[first_zero:]), trace
    # the fault not before state_loss_timeout (a late machine only makes it later)
    assert commands[first_zero][0] - last_state >= config.state_loss_timeout, trace
    assert c.node.guard.state is GuardState.FAULT and "state_loss_timeout 500 ms" in c.node.guard.fault_reason
    assert h.sim_call("resume").success
    h.spin_for(0.1)
    assert c.node.guard.state is GuardState.FAULT  # latched until ~/enable
    response = c.set_enabled(True)
    assert response.success and "ramp" in response.message, response.message  # cleared, a new ramp
    c.set_enabled(False)


def test_nan_joint_state_faults(make_controller):
    """A controller on its own topics, fed by the tester (slower: state_timeout 0.5 s), enabled on start."""
    c = make_controller(PDGravityControllerNode, joint_states_topic="/nan_test/joint_states",
                        command_topic="/nan_test/commands", state_timeout=0.5, ramp_time=0.0,
                        enabled_on_start=True)
    h = c.h
    states = h.publisher(JointState, "/nan_test/joint_states")
    commands = h.record(Float64MultiArray, "/nan_test/commands")
    names = list(h.arm.joint_names)

    def feed(seconds: float, position, velocity=np.zeros(5)) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            states.publish(JointState(name=names, position=list(map(float, position)),
                                      velocity=list(map(float, velocity))))
            h.spin_for(0.01)

    feed(0.2, Q_START)
    assert "enabled: holding" in c.wait_status("enabled")  # enabled_on_start: at the first joint state
    assert commands and np.any(np.abs(commands[-1][1].data) > 0.0)  # gravity
    bad = Q_START.copy()
    bad[3] = np.nan
    feed(0.05, bad)
    reason = c.wait_status("fault")
    feed(0.1, Q_START)
    print(f"\nNaN joint state: {reason}")
    assert "NaN" in reason and c.node.guard.state is GuardState.FAULT
    assert not np.any(commands[-1][1].data)


def test_disable_publishes_zero_then_nothing(pd):
    c, h = pd, pd.h
    commands = h.record(Float64MultiArray, COMMANDS)
    enable(c)
    assert commands and np.any(commands[-1][1].data)
    response = c.set_enabled(False)
    assert response.success
    # torques stop with the disable (the guard gives none while disabled), and in the order of the
    # commands received (not their arrival times, late in this shared process under load): the
    # last torque, then at most ZERO_CYCLES_ON_DISABLE zeros
    assert c.node.guard.state is GuardState.DISABLED
    assert h.spin_until(lambda: not np.any(commands[-1][1].data)), "no zero command after the disable"
    h.spin_for(0.2)
    last_torque = max(i for i, (_, m) in enumerate(commands) if np.any(m.data))
    zeros = commands[last_torque + 1:]
    print(f"\ndisable: {len(zeros)} zero commands after the last torque, then silence")
    assert 0 < len(zeros) <= ZERO_CYCLES_ON_DISABLE and all(not np.any(m.data) for _, m in zeros)
    n = len(commands)
    h.spin_for(0.1)
    assert len(commands) == n  # silent while disabled


@pytest.mark.parametrize("reaction", ["stop", "float"])
def test_external_torque_collision_and_reaction(make_controller, reaction):
    """~/external_torque shows a push the simulator applies (4 N m on joint 2: a torque on the upper
    arm about an axis parallel to joint 2's), the collision is reported and gets its reaction; the
    estimate is judged against the simulator's own ~/external_torque_true. At rest the threshold of
    a joint is raised by its stiction band (a stuck joint's friction takes part of a push), hence
    4 N m and explicit 0.5 N m thresholds here; test_external_torque.py has the issue's figures."""
    c = make_controller(PDGravityControllerNode, **TOLERANT, **SLOW_GOALS, collision_thresholds=[0.5],
                        collision_reaction=reaction)
    h = c.h
    estimate = h.record(JointState, f"/{c.node.get_name()}/external_torque")
    truth = h.record(JointState, "/sim_node/external_torque_true")
    push = h.publisher(WrenchStamped, "/sim_node/external_wrench")
    enable(c)
    assert estimate and np.abs(estimate[-1][1].effort).max() < 2.0, \
        f"holding, no push: estimate {np.round(estimate[-1][1].effort, 2)} N m {c.load()}"
    wrench = WrenchStamped()
    wrench.header.frame_id = "arm_link_2"
    wrench.wrench.torque.z = 4.0
    # the push ends on the arm's clock (0.15 s of simulated time), not when this thread gets to clear it:
    # under load the tester saw the collision late and a floating arm went on being pushed (0.88 rad)
    h.sim.set_parameters([Parameter("external_wrench_duration", value=0.15)])
    pushed_at = time.perf_counter()  # the push's collision, not one before it: with two CPU hogs a disabled
    push.publish(wrench)  # controller reported one while the drives moved the reset arm ("reaction none")
    try:
        text = c.wait_status("collision", timeout=3.0, since=pushed_at)
    finally:
        push.publish(WrenchStamped())  # all zero: cleared
        h.sim.set_parameters([Parameter("external_wrench_duration", value=0.0)])
    assert f"reaction {reaction}" in text and "arm_joint_2" in text, f"{text} {c.load()}"
    pushed = [m for _, m in truth if abs(m.effort[1]) > 3.9]
    assert pushed, "the simulator applied no push"
    peak = max(abs(m.effort[1]) for _, m in estimate)
    assert np.sign(max((m.effort[1] for _, m in estimate), key=abs)) == np.sign(pushed[0].effort[1])
    print(f"\ncollision ({reaction}): {text}; estimate peak on joint 2 {peak:.2f} N m (true 4)")
    # low-passed, and cleared as soon as the collision was reported; 1.5 x the true 4 N m at most (with
    # two CPU hogs the loop missed 113 of 181 cycles and the estimate peaked at 5.21 N m)
    assert 1.0 < peak < 6.0, c.load()
    assert c.node.collisions >= 1 and c.node.floating == (reaction == "float")
    h.spin_for(0.5)
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason
    moved = np.abs(c.q() - Q_START)
    assert moved.max() < 0.3, (moved, c.load())  # held, or floated only as far as 0.15 s of a push takes it


def test_payload_at_run_time(make_controller):
    """~/payload swaps the model between two cycles (the law, the guard, the observer); a bad payload is
    refused with the reason and changes nothing. The simulator takes the same message: the PD holds
    the arm, now 0.5 kg heavier, where it was."""
    c = make_controller(PDGravityControllerNode, **TOLERANT, **SLOW_GOALS)
    h = c.h
    controller_payload = h.publisher(Inertia, f"/{c.node.get_name()}/payload")
    sim_payload = h.publisher(Inertia, "/sim_node/payload")
    held = enable(c)
    g_before = c.node.law.gravity(Q_START).copy()
    controller_payload.publish(Inertia(m=-1.0))
    assert "mass" in c.wait_status("payload refused")
    assert c.node.payload.mass == 0.0
    msg = Inertia(m=0.5)
    msg.com.z = 0.05
    controller_payload.publish(msg)
    sim_payload.publish(msg)
    c.wait_status("payload 0.5 kg")
    assert c.node.payload.mass == 0.5 and c.node.model is not c.node.loop.base_model
    assert np.abs(c.node.law.gravity(Q_START) - g_before).max() > 0.3  # the law feels it
    h.spin_for(0.5)
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason
    error = np.abs(c.q() - held)
    print(f"\npayload 0.5 kg applied: |q - held| {np.round(1e3 * error, 3)} mrad")
    assert error.max() < 2e-3, c.load()
    sim_payload.publish(Inertia())  # the next tests' arm carries nothing
    h.spin_for(0.1)


def test_float_controller_moves_by_hand_and_stays(make_controller):
    """Hand-guiding over DDS: a 0.3 s push on the forearm (the simulator's ~/external_wrench, 15 N)
    moves the floating arm, which then stays where it was left (the issue: drift <= 1 mrad/s)."""
    c = make_controller(controller("float").node_type(), **TOLERANT)  # the common node running FloatController
    h = c.h
    push = h.publisher(WrenchStamped, "/sim_node/external_wrench")
    enable(c)
    h.spin_for(0.5)
    before = c.q()
    h.sim.set_parameters([Parameter("external_wrench_duration", value=0.3)])
    try:
        wrench = WrenchStamped()
        wrench.header.frame_id = "arm_link_3"
        wrench.wrench.force.y = -15.0
        push.publish(wrench)
        assert h.spin_until(lambda: np.abs(c.q() - before).max() > 0.02, timeout=3.0), "the push moved nothing"
        h.spin_for(1.5)  # the push is over after 0.3 s (simulated); the arm coasts to rest
    finally:
        h.sim.set_parameters([Parameter("external_wrench_duration", value=0.0)])
    assert c.node.guard.state is GuardState.ENABLED, c.node.guard.fault_reason
    rested, start = c.q(), h.sim.sim.time
    # 1 s of the arm's (simulated) time: it runs behind the wall clock on a loaded machine
    assert h.spin_until(lambda: h.sim.sim.time > start + 1.0, timeout=30.0), "the simulated time stood still"
    drift = np.abs(c.q() - rested) / (h.sim.sim.time - start)
    print(f"\nfloat: moved {np.round(rested - before, 3)} rad by the push; then drift "
          f"{np.round(1e3 * drift, 3)} mrad/s")
    assert np.all(drift <= 1e-3), c.load()


def test_joint_state_reader():
    reader = JointStateReader(["a", "b"], allow_nonfinite=True)
    q, dq, effort = reader.read(JointState(name=["x", "b", "a"], position=[9.0, 2.0, 1.0], velocity=[0.0, 0.2, 0.1]))
    np.testing.assert_array_equal(q, [1.0, 2.0])
    np.testing.assert_array_equal(dq, [0.1, 0.2])
    assert effort is None  # optional
    q, _, _ = reader.read(JointState(name=["x", "b", "a"], position=[9.0, np.nan, 1.0], velocity=[0.0] * 3))
    assert np.isnan(q[1])  # passed on: the guard faults on it
    with pytest.raises(ValueError, match="NaN"):  # a goal or a recording refuses it
        JointStateReader(["a", "b"]).read(JointState(name=["b", "a"], position=[np.nan, 1.0], velocity=[0.0] * 2))
    q, dq, _ = JointStateReader(["a"], require_velocity=False).read(JointState(name=["a"], position=[1.0]))
    assert q.tolist() == [1.0] and dq is None
    for bad in (JointState(name=["a"], position=[1.0], velocity=[0.0]),
                JointState(name=["a", "b", "a"], position=[1.0] * 3, velocity=[0.0] * 3),
                JointState(name=["a", "b"], position=[1.0, 2.0])):
        with pytest.raises(ValueError):
            reader.read(bad)


# ---------------------------------------------------------------------------------------------
# The executables (subprocesses)


def _command(module: str) -> list[str]:
    return [sys.executable, "-m", f"youbot_dynamics.nodes.{module}"]


def test_executable_runs_and_stops_on_sigint(tmp_path):
    env = dict(os.environ, ROS_DOMAIN_ID=SUBPROCESS_DOMAIN_ID, PYTHONUNBUFFERED="1")
    params = ROOT / "config" / "pd_gravity_controller.yaml"  # the package's file is valid
    proc = subprocess.Popen(_command("pd_gravity_controller") + ["--ros-args", "--params-file", str(params)], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        started = time.monotonic()
        while not any("PD + gravity for 'youbot_arm'" in line for line in lines):
            assert proc.poll() is None and time.monotonic() - started < 60.0, "".join(lines)
            time.sleep(0.1)
        print(f"\nstarted in {time.monotonic() - started:.1f} s")
        time.sleep(0.5)  # spinning
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=5)
    out = "".join(lines)
    assert proc.returncode == 0, out
    assert "youbot_nominal_model.yaml" in out and "disabled (call ~/enable)" in out


@pytest.mark.parametrize("module", ["pd_gravity_controller", "computed_torque_controller"])
def test_executable_refuses_a_bad_model_file(tmp_path, module):
    env = dict(os.environ, ROS_DOMAIN_ID=SUBPROCESS_DOMAIN_ID)
    bad = tmp_path / "model.yaml"
    bad.write_text("not_a_model: 1\n")
    params = ROOT / "config" / f"{module}.yaml"  # every other parameter valid: the model file fails
    out = subprocess.run(_command(module) + ["--ros-args", "--params-file", str(params), "-p", f"model_file:={bad}"],
                         env=env,
                         capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "cannot start" in text and "youbot_dynamics_model" in text, text


@pytest.mark.parametrize("args, message", [
    (["collision_reaction:=jump"], "collision_reaction must be one of ('none', 'stop', 'float'), got 'jump'"),
    (["observer_torque:=guess"], "observer_torque must be one of ('measured', 'command'), got 'guess'"),
    (["observer_gain:=0.0", "collision_reaction:=stop"], "collision_reaction needs the observer"),
    (["collision_thresholds:=[0.5, 0.5]"],
     "collision_thresholds: expected 5 values (one per joint) or none (unset) or 1 (one for all), got 2"),
])
def test_executable_refuses_bad_observer_parameters(args, message):
    """Issue 17: an unknown reaction or observer torque, a reaction without the observer, thresholds
    of the wrong length: start-up fails with the reason (no node that would not react as asked)."""
    env = dict(os.environ, ROS_DOMAIN_ID=SUBPROCESS_DOMAIN_ID)
    params = ROOT / "config" / "pd_gravity_controller.yaml"
    overrides = [a for arg in args for a in ("-p", arg)]
    out = subprocess.run(_command("pd_gravity_controller") + ["--ros-args", "--params-file", str(params), *overrides],
                         env=env, capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "cannot start" in text and message in text, text
