"""The main job's client node, which plays the user (position hold, services, goals and
trajectories, recordings), the arms it can run on, and the closed-loop runs it drives: one
controller started, enabled holding the arm, given a goal (:func:`run_regulation`) or the stroke
(:func:`run_tracking`), its ``~/state`` recorded (doc/main_job.md)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.context import Context
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..arm.description import ArmDescription
from ..contract.topics import JOINT_STATES, POSITION_COMMANDS
from ..control.evaluation import combine_timing, regulation_metrics, split_state, tracking_metrics
from ..nodes.common import REALTIME_PRIORITY, create_executor
from ..nodes.messages import JointStateReader
from .simulation import NodeProcess

__all__ = ["ARMS", "ArmProcess", "Client", "ControlRun", "control_run", "format_vector", "run_regulation", "run_timing",
           "run_tracking"]


HOME = np.array([2.9496, 1.1345, -2.5482, 1.7890, 2.9234])  # the candle (sim.yaml home)
GOAL_STEP = np.array([0.4, -0.3, 0.3, -0.3, 0.4])  # [rad] regulation step from HOME
STROKE = np.array([0.7, -0.7, 0.7, -0.7, 0.7])  # [rad] tracking: out and back ...
SEGMENT = 1.05  # [s] ... in quintic segments: peak 1.875 x 0.7 / 1.05 = 1.25 rad/s (80 %)
SETTLE_AFTER = 0.3  # [s] of holding the end, inside the tracking window
HOLD_RATE = 50.0  # [Hz] position commands while the client holds the arm
REST_VELOCITY = 0.01  # [rad/s] at rest before each phase (the identification needs < 0.05)
EMULATED_MASTER = "ybdemo0"  # veth end of the master with ``--robot emulated`` (the emulator serves its peer)


@dataclass(frozen=True)
class ArmProcess:
    """How the main job starts and resets an arm node."""

    executable: str
    parameters: tuple[str, ...]  # ros args
    initial_positions: str | None  # the parameter naming the start pose (None: the arm is where it is)
    has_reset: bool  # a ~/reset service (the simulator); else the client drives the arm back
    has_clock: bool  # can publish /clock (then the identification runs on the simulated time)
    identification: tuple[tuple[str, Any], ...] = ()  # identification_node parameters for this arm
    external: bool = False  # takes an external wrench and a payload (the simulator): the issue-17 phase runs


#: the arm of the main job, per ``--robot``
ARMS: dict[str, ArmProcess] = {
    "sim": ArmProcess("sim_node", ("-p", f"realtime_priority:={REALTIME_PRIORITY}"), "initial_positions", True, True,
                      external=True),
    "driver": ArmProcess("youbot_driver", ("-p", "backend:=virtual", "-p", "enable_on_start:=true"),
                         "virtual_initial_positions", True, True),
    # the real driver path: SOEM on a veth pair, the emulated drives (driver.emulator) on the other end
    "emulated": ArmProcess("youbot_driver", ("-p", "backend:=pysoem", "-p", f"interface:={EMULATED_MASTER}",
                                             "-p", "enable_on_start:=true"), None, False, False),
}


def format_vector(v: Any) -> str:
    return "[" + ", ".join(f"{x:+.4f}" for x in np.asarray(v, dtype=float)) + "]"


@dataclass
class ControlRun:
    """One closed-loop run: a label, the executable and its parameters, what it recorded."""

    label: str
    executable: str
    parameters: dict[str, Any]
    #: the ~/state messages as they came, serialized (decoded when read: the job takes them at 500 Hz
    #: beside the joint states, on a machine whose two cores the arm and the controller nearly fill)
    messages: list[bytes] = field(default_factory=list)
    reports: list[dict[str, float]] = field(default_factory=list)
    arm_reports: list[dict[str, float]] = field(default_factory=list)  # the arm node's loop
    _rows: list[list[float]] = field(default_factory=list, repr=False)

    @property
    def rows(self) -> list[list[float]]:
        """~/state, one row per message: ``[q_d, q, e, tau, t]``."""
        for data in self.messages[len(self._rows):]:
            self._rows.append(list(deserialize_message(data, Float64MultiArray).data))
        return self._rows

    def last_time(self) -> float:
        """The time [s] of the newest ~/state (its cycle's, on the controller's clock), -inf before the first."""
        return deserialize_message(self.messages[-1], Float64MultiArray).data[-1] if self.messages else -np.inf


class Client:
    """The user: position hold, services, goals and trajectories, recordings."""

    def __init__(self, context: Context, arm: ArmDescription, arm_process: ArmProcess) -> None:
        self.arm = arm
        self.arm_node = arm_node = arm_process.executable
        self.has_reset = arm_process.has_reset
        self.node = rclpy.create_node("youbot_dynamics_demo_job", context=context)
        # the events executor: the job takes every joint state (1 kHz) to hold and watch the arm; in
        # the Python executor that cost the job 45-50 % of a core, which the identification node then
        # lacked (it fell 1 s behind its joint states in a recalibration, stop 37)
        self.executor = create_executor(events=True, context=context)
        self.executor.add_node(self.node)
        self._q: np.ndarray | None = None
        self._dq: np.ndarray | None = None
        self._newest: bytes | None = None  # the newest joint state, serialized (decoded when read)
        self._reader = JointStateReader(arm.joint_names, require_velocity=False)
        self.node.create_subscription(JointState, JOINT_STATES, self._on_joint_state, 1, raw=True)
        self.position = self.node.create_publisher(Float64MultiArray, POSITION_COMMANDS, 10)
        self.reset_client = self.node.create_client(Trigger, f"/{arm_node}/reset")
        self.run: ControlRun | None = None
        self.progress: DiagnosticStatus | None = None
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 100)

    def _on_joint_state(self, data: bytes) -> None:
        self._newest = data  # 1 kHz: decoding each cost the job a tenth of a core it did not have

    @property
    def q(self) -> np.ndarray | None:
        """The newest good joint state's positions (None before the first, or after :meth:`forget_state`)."""
        self._decode_newest()
        return self._q

    @property
    def dq(self) -> np.ndarray | None:
        """Its velocities (None if it has none)."""
        self._decode_newest()
        return self._dq

    def forget_state(self) -> None:
        """Forget the joint state: :attr:`q` is None until a new one arrives."""
        self._newest = self._q = self._dq = None

    def _decode_newest(self) -> None:
        data, self._newest = self._newest, None
        if data is not None:
            try:
                self._q, self._dq, _ = self._reader.read(deserialize_message(data, JointState))
            except ValueError:  # not the arm's joints, NaN: wait for a good one
                pass

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        run = self.run
        if run is None:
            return
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.name.startswith(run.executable + ":"):
                run.reports.append({k: float(v) for k, v in values.items() if k in TIMING_KEYS})
            elif status.name.startswith(self.arm_node + ":") and all(k in values for k in ARM_TIMING_KEYS):
                run.arm_reports.append({k: float(values[k]) for k in ARM_REPORT_KEYS if k in values})

    def spin_for(self, seconds: float, hold: np.ndarray | None = None) -> None:
        """Spin; with ``hold``, publish it as a position command at :data:`HOLD_RATE`."""
        deadline = time.monotonic() + seconds
        next_hold = time.monotonic()
        while time.monotonic() < deadline:
            if hold is not None and time.monotonic() >= next_hold:
                self.position.publish(Float64MultiArray(data=hold.tolist()))
                next_hold += 1.0 / HOLD_RATE
            self.executor.spin_once(timeout_sec=0.002)

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str,
                 hold: np.ndarray | None = None) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
            self.spin_for(0.02, hold)

    def wait_matched(self, publisher: Any, timeout: float = 10.0) -> None:
        """Wait until ``publisher`` has a subscriber (a message published before is lost)."""
        self.wait_for(lambda: publisher.get_subscription_count() > 0, timeout,
                      f"a subscriber of {publisher.topic_name}")
        self.spin_for(0.05)

    def call(self, client: Any, request: Any, timeout: float = 20.0, hold: np.ndarray | None = None) -> Any:
        self.wait_for(client.service_is_ready, timeout, f"service {client.srv_name}", hold)
        future = client.call_async(request)
        self.wait_for(future.done, timeout, f"an answer of {client.srv_name}", hold)
        return future.result()

    def call_when_ready(self, client: Any, request: Any, hold: np.ndarray, attempts: int = 50) -> Any:
        """Call a service that refuses until its node has a joint state (its service comes up
        first), on simulated time a /clock, and the arm at rest (on a loaded machine the held arm
        was still moving at 0.24 rad/s when the identification was first started): retry every
        0.1 s holding the arm; the call itself does not hold (the node may take over the arm with it)."""
        for _ in range(attempts):
            answer = self.call(client, request)
            if answer.success or not any(text in answer.message for text in ("no joint state", "no /clock yet",
                                                                             "the arm is moving")):
                break
            self.spin_for(0.1, hold)
        return answer

    def reset_and_hold(self, q: np.ndarray | None = None) -> np.ndarray:
        """Put the arm at ``q`` (the simulator: ``~/reset``; a real or virtual arm: position
        commands until it is there and still) and hold it with position commands; the pose held."""
        if self.has_reset:
            answer = self.call(self.reset_client, Trigger.Request())
            if not answer.success:
                raise RuntimeError(f"reset failed: {answer.message}")
            self.spin_for(0.05)  # a joint state from before the reset may still be on its way
            self.forget_state()
            self.wait_for(lambda: self.q is not None, 5.0, "a joint state after the reset")
        elif q is not None:
            self.wait_for(lambda: self.q is not None and np.max(np.abs(self.q - q)) < 2e-3, 20.0,
                          f"the arm at {format_vector(q)}", q)
        hold = self.q.copy() if q is None else q
        self.spin_for(0.3, hold)
        # the arm may still be settling into the hold: on a loaded machine the arm's clock runs
        # behind the wall clock, so wait for rest (the identification refuses to start otherwise)
        self.wait_for(lambda: self.at_rest(hold), 30.0, f"the arm at rest at {format_vector(hold)}", hold)
        return hold

    def at_rest(self, q: np.ndarray) -> bool:
        """The last joint state at ``q`` (2 mrad) and still (:data:`REST_VELOCITY`)."""
        return (self.q is not None and np.max(np.abs(self.q - q)) < 2e-3
                and (self.dq is None or np.max(np.abs(self.dq)) < REST_VELOCITY))


ARM_TIMING_KEYS = ("cycles", "missed_fraction", "rate_hz")
ARM_REPORT_KEYS = (*ARM_TIMING_KEYS, "period_max_ms")  # the arm's longest period of a window, where it reports one
TIMING_KEYS = ("cycles", "missed_cycles", "rate_hz", "latency_median_ms", "latency_p99_ms", "latency_max_ms",
               "compute_median_us")


def control_run(client: Client, run: ControlRun, action: Callable[[Client, np.ndarray], float],
                duration: float) -> tuple[float, float]:
    """Start the controller, enable it holding the arm, run ``action`` (returns the start time of
    the measured part), record for ``duration``; ``(start, end)`` on the client's clock."""
    hold = client.reset_and_hold(HOME)
    args = [a for k, v in {**run.parameters, "state_publish_decimation": 2, "diagnostics_period": 0.5}.items()
            for a in ("-p", f"{k}:={json.dumps(v) if isinstance(v, bool) else v}")]
    enable = client.node.create_client(SetBool, f"/{run.executable}/enable")
    subscription = client.node.create_subscription(
        Float64MultiArray, f"/{run.executable}/state", run.messages.append, 1000, raw=True)
    try:
        with NodeProcess(run.executable, *args) as node:
            try:
                start, end = _controlled(client, run, node, enable, hold, action, duration)
            except RuntimeError as exc:  # what the controller said meanwhile
                status = "had exited" if node.process.poll() is not None else "was running (stopped now)"
                node.stop()
                raise RuntimeError(f"{exc} (/{run.executable}/state: {len(run.messages)} rows; the node {status}; "
                                   f"its output ends:\n{node.output()[-2000:]})") from None
    finally:
        client.run = None
        client.node.destroy_subscription(subscription)
        client.node.destroy_client(enable)
    return start, end


def run_timing(run: ControlRun) -> dict[str, float]:
    """The controller's timing and, for comparison, the rate, missed cycles and longest period of the
    arm node's joint-state loop over the same run (a cycle per joint state: the arm's misses are the
    loop's). A stall of tens of ms counts as one missed cycle; the longest period shows it (over the
    arm's report windows received during the run: the first may begin before it)."""
    arm = combine_timing(run.arm_reports) if run.arm_reports else {}
    periods = [r["period_max_ms"] for r in run.arm_reports if r["cycles"] > 0 and "period_max_ms" in r]
    longest = {"arm_period_max_ms": float(max(periods))} if periods else {}
    return {**combine_timing(run.reports), **{f"arm_{k}": arm[k] for k in ("rate_hz", "missed_fraction") if k in arm},
            **longest}


def run_regulation(client: Client, runs: list[ControlRun]) -> list[dict[str, Any]]:
    goal = HOME + GOAL_STEP
    results = []
    for run in runs:
        publisher = client.node.create_publisher(JointState, f"/{run.executable}/goal", 10)

        def step(c: Client, _hold: np.ndarray) -> float:
            c.wait_matched(publisher)
            publisher.publish(JointState(name=list(c.arm.joint_names), position=goal.tolist()))
            return time.perf_counter()

        # the goal is approached on a speed-limited profile (0.76 s for GOAL_STEP), then held 2.3 s
        start, _ = control_run(client, run, step, 3.1)
        client.node.destroy_publisher(publisher)
        t, q_d, _, error, tau = split_state(run.rows, client.arm.n_joints)
        reached = t[(t >= start) & np.all(np.abs(q_d - goal) < 1e-9, axis=1)]
        if reached.size == 0:
            raise RuntimeError(f"{run.label}: the goal was not taken (status of the node in its log)")
        metrics = regulation_metrics(t, error, tau, float(reached[0]))
        results.append({"label": run.label, **metrics, **run_timing(run), "t": t - reached[0], "error": error,
                        "tau": tau})
    return results


def run_tracking(client: Client, runs: list[ControlRun], before: Callable[[Client], None] | None = None,
                 during: Callable[[Client], None] | None = None) -> list[dict[str, Any]]:
    """The stroke on each run's controller; ``before(client)`` runs once the controller is enabled,
    ``during(client)`` right after the trajectory was sent (e.g. a push in mid-motion)."""
    results = []
    duration = 2 * SEGMENT
    for run in runs:
        publisher = client.node.create_publisher(JointTrajectory, f"/{run.executable}/trajectory", 10)

        def go(c: Client, hold: np.ndarray) -> float:
            c.wait_matched(publisher)
            if before is not None:
                before(c)
            msg = JointTrajectory(joint_names=list(c.arm.joint_names))
            for k, q in enumerate((hold + STROKE, hold), start=1):
                sec, frac = divmod(k * SEGMENT, 1.0)
                msg.points.append(JointTrajectoryPoint(positions=q.tolist(), velocities=[0.0] * len(q),
                                                       accelerations=[0.0] * len(q),
                                                       time_from_start=Duration(sec=int(sec),
                                                                                nanosec=int(round(frac * 1e9)))))
            publisher.publish(msg)
            sent = time.perf_counter()
            if during is not None:
                during(c)
            return sent

        start, _ = control_run(client, run, go, duration + SETTLE_AFTER + 0.2)
        client.node.destroy_publisher(publisher)
        t, q_d, _, error, tau = split_state(run.rows, client.arm.n_joints)
        after = t >= start
        if not after.any():
            raise RuntimeError(f"{run.label}: no ~/state after the trajectory was sent")
        held = q_d[after][0]  # the hold the trajectory starts from
        moving = t[after][np.any(np.abs(q_d[after] - held) > 1e-6, axis=1)]
        if moving.size == 0:
            raise RuntimeError(f"{run.label}: the trajectory was not taken (status of the node in its log)")
        t0 = float(moving[0])
        metrics = tracking_metrics(t, error, tau, t0, t0 + duration + SETTLE_AFTER)
        results.append({"label": run.label, **metrics, **run_timing(run), "t": t - t0, "error": error, "tau": tau})
    return results


def _controlled(client: Client, run: ControlRun, node: NodeProcess, enable: Any, hold: np.ndarray,
                action: Callable[[Client, np.ndarray], float], duration: float) -> tuple[float, float]:
    """:func:`control_run`'s part with the controller up: enable, ``action``, record, disable."""
    client.wait_for(enable.service_is_ready, 60.0, f"{run.executable}", hold)
    client.spin_for(0.2, hold)
    answer = client.call_when_ready(enable, SetBool.Request(data=True), hold)
    if not answer.success:
        raise RuntimeError(f"enable refused: {answer.message}")
    client.spin_for(0.7)  # the torque ramp (0.5 s) and a moment of holding
    client.run = run
    start = action(client, hold)
    client.spin_for(duration)
    end = time.perf_counter()
    # the rows carry the controller's times: a late client waits for those up to the end
    client.wait_for(lambda: run.last_time() >= end, 10.0, "the ~/state of the run")
    client.run = None
    client.call(enable, SetBool.Request(data=False))
    if node.process.poll() is not None:
        raise RuntimeError(f"{run.executable} exited")
    return start, end
