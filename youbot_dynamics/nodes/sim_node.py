"""ROS 2 node: the simulated youBot arm (MuJoCo) behind ros2_control-style topics.

Executable ``sim_node``: a thin wrapper around :class:`youbot_dynamics.sim.ArmSimulator` (the "true robot"
of ``config/sim.yaml``), whose physics runs in its own thread; it can host a controller in that loop (:mod:`.hosted`).

Interface, behaviour, joint state stamps and figures: doc/simulation.md; parameters:
youbot_dynamics/nodes/parameters/sim_node.yaml (table in doc/parameters.md).
"""
from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import deque
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Inertia, WrenchStamped
from rclpy.exceptions import ParameterException
from rclpy._rclpy_pybind11 import RCLError
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..arm.description import ArmDescriptionError, load_arm
from ..driver.driver import LATENCY_WINDOW
from ..motion.commands import from_stamp
from ..sim import ArmSimulator, CommandError, Realism, SimConfigError, load_sim_config
from ..sim.simulator import REALISM_EFFECTS
from ..sim.schedule import PublishSchedule
from ..sim.stamps import StateStamps
from ..sim.true_robot import PUBLISH_STREAM, foreign_kind, foreign_robot, rng_stream
from ..timing import LoopStatistics, LoopThread, pace
from .common import background_worker, declare_parameters, run_node
from .controller_node import ControllerNode
from .hosted import create_hosted_controller, latency_report
from .messages import deserialize_trajectory, stamp_seconds, trajectory_arrays

__all__ = ["SimHost", "SimNode", "main"]

Array = np.ndarray

NODE_NAME = "sim_node"
QOS_DEPTH = 10
# command interface -> parameter holding its Float64MultiArray topic
COMMAND_TOPICS = {"effort": "effort_command_topic", "position": "position_command_topic",
                  "velocity": "velocity_command_topic"}


def _stamp(seconds: float) -> Time:
    sec, nanosec = divmod(int(round(seconds * 1e9)), 1_000_000_000)
    return Time(sec=sec, nanosec=nanosec)


class SimNode(Node):
    """The MuJoCo arm behind ``/joint_states`` and the controller topics; see doc/simulation.md."""

    def __init__(self, **kwargs: Any) -> None:
        # first: destroy_node() may run on a half-built node
        self._thread = LoopThread(self._loop, "sim_physics", above=True)
        self.host: SimHost | None = None
        self.controller = None  # the controller node in the physics loop (parameter 'controller'), if any
        super().__init__(NODE_NAME, **kwargs)
        p = declare_parameters(self, NODE_NAME)
        self.arm = load_arm(p['arm_description'] or None)
        config = load_sim_config(p['sim_config'] or None, self.arm)
        if p['physics_rate'] > 0.0:
            config = dataclasses.replace(config, timestep=1.0 / p['physics_rate'])
        if p['seed'] >= 0:
            config = dataclasses.replace(config, seed=int(p['seed']))
        if foreign_kind(p['robot']):
            config = foreign_robot(config, int(p['robot_seed']), foreign_kind(p['robot']))
        interfaces = tuple(p['command_interfaces'])
        effects = tuple(p['realism_effects'])
        realism = Realism(**{name: bool(p['realism']) and name in effects for name in REALISM_EFFECTS})
        self.sim = ArmSimulator(self.arm, config, enabled_interfaces=interfaces, realism=realism)
        self._schedule = PublishSchedule(p['publish_rate'], self.sim.timestep, p['publish_jitter'],
                                         rng_stream(config.seed, PUBLISH_STREAM))
        self._real_time_factor = float(p['real_time_factor'])
        if p['realtime_priority'] > 0 and self._real_time_factor == 0.0:
            raise ValueError("realtime_priority needs real_time_factor > 0: as fast as possible, the physics "
                             "thread never sleeps and would starve the machine")
        self._publish_clock = bool(p['publish_clock'])
        self._throttle = float(p['error_throttle_period'])
        self._hold_on_start = bool(p['hold_on_start'])
        self.sim.reset(self._initial_positions(), hold=self._hold_on_start)

        self._lock = threading.Lock()
        self._paused = False
        self._stamps = StateStamps(self._real_time_factor, self.sim.timestep)  # the joint states' stamps
        self._publish_lock = threading.Lock()  # ~/pause waits for a joint state being published
        self.statistics = LoopStatistics(1.0 / p['publish_rate'] / max(self._real_time_factor, 1e-300))

        self._state_msg = JointState(name=list(self.arm.joint_names))
        self._external_msg = JointState(name=list(self.arm.joint_names))
        self._external_torque = np.zeros(self.arm.n_joints)  # of the last step, taken under the lock
        self.state_pub = self.create_publisher(JointState, p['joint_states_topic'], QOS_DEPTH)
        self.external_torque_pub = self.create_publisher(JointState, '~/external_torque_true', QOS_DEPTH)
        self.clock_pub = self.create_publisher(Clock, '/clock', QOS_DEPTH) if self._publish_clock else None
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', QOS_DEPTH)
        for interface, name in COMMAND_TOPICS.items():
            self.create_subscription(Float64MultiArray, p[name],
                                     lambda msg, kind=interface: self._on_command(kind, msg), QOS_DEPTH)
        # raw: a trajectory's size is judged before it is deserialized (messages.deserialize_trajectory)
        self.create_subscription(JointTrajectory, p['trajectory_topic'], self._on_trajectory, QOS_DEPTH, raw=True)
        self.create_subscription(Inertia, '~/payload', self._on_payload, QOS_DEPTH)
        self.create_subscription(WrenchStamped, '~/external_wrench', self._on_external_wrench, QOS_DEPTH)
        self.create_service(Trigger, '~/reset', self._on_reset)
        self.create_service(Trigger, '~/pause', lambda req, res: self._set_paused(True, res))
        self.create_service(Trigger, '~/resume', lambda req, res: self._set_paused(False, res))
        # due-checked by the physics thread right after a joint state, built and published by a
        # helper thread at the lowest real-time priority (a timer on the executor thread could
        # fire just when a step is due)
        self._diagnostics_period = float(p['diagnostics_period'])
        self._reporter = background_worker("sim_diagnostics")
        if p['controller']:
            if self._real_time_factor == 0.0:
                raise ValueError("controller needs real_time_factor > 0 (its rate is the loop's)")
            self.host = SimHost(self, p['publish_rate'] * self._real_time_factor)
            self.controller = create_hosted_controller(p['controller'], p['controller_params_file'], self.host,
                                                       self.context, self.get_namespace())
            self.host.controller = self.controller
        jitter = f" (jitter {p['publish_jitter']:g} s)" if p['publish_jitter'] > 0 else ""
        self.get_logger().info(
            f"simulated '{self.arm.name}' at {1.0 / self.sim.timestep:g} Hz (real time x{self._real_time_factor:g}), "
            f"joint states on {p['joint_states_topic']} at {p['publish_rate']:g} Hz{jitter}, "
            f"interfaces {list(interfaces)}")

    # -- physics loop ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the physics thread (idempotent)."""
        self._thread.start()

    def hosted_nodes(self) -> list[Node]:
        """The nodes this one runs in its process (the controller in the physics loop), for the executor."""
        return [] if self.controller is None else [self.controller]

    def let_go(self) -> None:
        """At shutdown, the controller in the physics loop lets go of the arm as a stand-alone one does."""
        if self.controller is not None:
            self.controller.stop_commanding()

    def stop(self) -> None:
        """Stop and join the physics thread."""
        self._thread.stop()

    def destroy_node(self) -> None:
        self.stop()
        reporter = getattr(self, "_reporter", None)  # absent if the constructor failed early
        if reporter is not None:
            reporter.shutdown(wait=True)
        if self.controller is not None:
            self.controller.destroy_node()
            self.controller = None
        super().destroy_node()

    def _loop(self) -> None:
        wall_step = self.sim.timestep / self._real_time_factor if self._real_time_factor > 0.0 else 0.0
        steps = 0
        deadline = time.perf_counter()
        diagnostics_due = deadline + self._diagnostics_period
        while self._thread.running and self.context.ok():
            try:
                if self._paused:
                    time.sleep(0.01)
                    deadline = time.perf_counter()
                    if self.host is not None:  # no state: the controller coasts, then faults, as over DDS
                        self.host.cycle(deadline, None, None, None, None)
                else:
                    with self._lock:
                        steps = self._schedule.next_steps()
                        self.sim.step(steps)
                        measurement = self.sim.measure()
                        self._external_torque = self.sim.external_torque  # a copy
                    read_time = time.perf_counter()
                    with self._publish_lock:
                        if not self._paused:  # paused meanwhile: this state is not published
                            m = measurement
                            stamp = (_stamp(m.time) if self._publish_clock
                                     else self._state_stamp(m.time, deadline if wall_step > 0.0 else None))
                            if self.host is not None:
                                self.host.cycle(read_time, stamp.sec + 1e-9 * stamp.nanosec, m.position, m.velocity,
                                                m.effort)
                            self._publish_state(m, stamp)
                    self.statistics.tick(time.perf_counter())
                if self._diagnostics_period > 0.0 and time.perf_counter() >= diagnostics_due:
                    diagnostics_due = max(diagnostics_due + self._diagnostics_period, time.perf_counter())
                    self._reporter.submit(self._publish_diagnostics)  # ~1 ms: off the physics thread
            except RCLError:
                if self.context.ok():
                    raise
                break  # rclpy was shut down (Ctrl-C) before the node was destroyed
            if wall_step == 0.0 or self._paused:
                continue
            deadline, resynchronised = pace(deadline, steps * wall_step, self.statistics)
            if resynchronised:
                self._stamps.restart()

    def _publish_state(self, m: Any, stamp: Time) -> None:
        """The measurement ``m`` on the joint states (and the true external torques), stamped ``stamp``."""
        msg = self._state_msg
        msg.header.stamp = stamp
        msg.position = m.position.tolist()
        msg.velocity = m.velocity.tolist()
        msg.effort = m.effort.tolist()
        self.state_pub.publish(msg)
        external = self._external_msg
        external.header.stamp = msg.header.stamp
        external.effort = self._external_torque.tolist()
        self.external_torque_pub.publish(external)
        if self.clock_pub is not None:
            self.clock_pub.publish(Clock(clock=msg.header.stamp))

    def _state_stamp(self, sim_time: float, due: float | None) -> Time:
        """The simulated instant ``sim_time`` on the ROS clock, after the previous stamp whatever the
        load (:class:`~..sim.stamps.StateStamps`); ``due`` the ``perf_counter`` instant the loop was due to
        publish it at."""
        now = self.get_clock().now().nanoseconds
        late = 0 if due is None else int(1e9 * (time.perf_counter() - due))
        nanoseconds = self._stamps.stamp(sim_time, now, late)
        return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)

    # -- commands -------------------------------------------------------------------------------

    def reject(self, what: str, exc: Exception) -> None:
        self.get_logger().error(f"{what} rejected: {exc}", throttle_duration_sec=self._throttle)

    def command_effort(self, tau: np.ndarray) -> None:
        """Joint torques [N m] to the simulator (``CommandError`` if refused)."""
        with self._lock:
            self.sim.command("effort", tau)

    def command_trajectory(self, times: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> None:
        """Waypoints ``times`` [s] from now to the simulator's trajectory interface (``CommandError`` if refused)."""
        with self._lock:
            self.sim.command_trajectory(times, q, dq, ddq)

    def _on_command(self, interface: str, msg: Float64MultiArray) -> None:
        try:
            with self._lock:
                self.sim.command(interface, np.asarray(msg.data, dtype=float))
        except CommandError as exc:
            self.reject(f"{interface} command", exc)

    def _on_trajectory(self, data: bytes) -> None:
        try:
            msg = deserialize_trajectory(data, self.arm.n_joints)
            times, positions, velocities, accelerations = trajectory_arrays(msg, self.arm.joint_names)
            stamp = stamp_seconds(msg.header.stamp)
            with self._lock:
                if stamp > 0.0:  # timed from its stamp (0: from now)
                    now = self.sim.time if self._publish_clock else self.get_clock().now().nanoseconds * 1e-9
                    times, positions, velocities, accelerations = from_stamp(
                        times, positions, velocities, accelerations, now - stamp, self.sim.timestep)
                if times.size == 0:  # an empty trajectory stops the motion: hold the current position
                    here = self.sim.measure().position[None, :]
                    self.sim.command_trajectory(np.array([self.sim.timestep]), here)
                else:
                    self.sim.command_trajectory(times, positions, velocities, accelerations)
        except ValueError as exc:  # CommandError is a ValueError
            self.reject("trajectory", exc)

    def _on_payload(self, msg: Inertia) -> None:
        com = [msg.com.x, msg.com.y, msg.com.z]
        inertia = [[msg.ixx, msg.ixy, msg.ixz], [msg.ixy, msg.iyy, msg.iyz], [msg.ixz, msg.iyz, msg.izz]]
        try:
            with self._lock:
                self.sim.set_payload(msg.m, com, inertia)
        except ValueError as exc:
            self.get_logger().error(f"payload rejected: {exc}")
            return
        self.get_logger().info(f"payload {msg.m:g} kg at {com} m in the tool frame")

    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        force, torque, link = [f.x, f.y, f.z], [t.x, t.y, t.z], msg.header.frame_id
        if not any(force + torque):  # all zero (a NaN is not): no wrench, whatever the frame
            with self._lock:
                self.sim.clear_wrench()
            self.get_logger().info("external wrench cleared", throttle_duration_sec=self._throttle)
            return
        duration = self.get_parameter('external_wrench_duration').value
        try:
            with self._lock:
                self.sim.apply_wrench(link, force, torque, duration=duration if duration > 0.0 else float("inf"))
        except ValueError as exc:
            self.reject("external wrench", exc)
            return
        until = f"for {duration:g} s" if duration > 0.0 else "until cleared"
        self.get_logger().info(f"external wrench on {link} {until}: force {force} N, torque {torque} N m "
                               "in the link frame", throttle_duration_sec=self._throttle)

    # -- services -------------------------------------------------------------------------------

    def _initial_positions(self) -> np.ndarray | None:
        value = self.get_parameter_or('initial_positions', None).value  # None while not set
        return np.asarray(value, dtype=float) if value is not None and len(value) else None

    def _on_reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            q = self._initial_positions()
            with self._lock:
                self.sim.reset(q, hold=self._hold_on_start)
                self._schedule.restart()
                self._stamps.restart()
                position = self.sim.measure().position
        except ValueError as exc:
            response.success, response.message = False, f"reset refused: {exc}"
            return response
        response.success = True
        then = "the drives hold it" if self._hold_on_start else "motors off"
        response.message = f"reset to {np.round(position, 4).tolist()} ({then} until the next command)"
        return response

    def _set_paused(self, paused: bool, response: Trigger.Response) -> Trigger.Response:
        """Pause or resume; once ``~/pause`` has answered, no joint state is published until ``~/resume``."""
        with self._publish_lock:
            self._paused = paused
            self._stamps.restart()
        response.success = True
        response.message = "paused" if paused else "running"
        return response

    # -- diagnostics ----------------------------------------------------------------------------

    def _publish_diagnostics(self) -> None:
        report = self.statistics.report()
        with self._lock:
            mode, sim_time = self.sim.mode, self.sim.time
        if self.host is not None:
            report.update(latency_report(self.host.take_latencies()))
        values = {**{k: f"{v:.6g}" for k, v in report.items()}, "mode": str(mode), "sim_time": f"{sim_time:.3f}"}
        status = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{self.get_name()}: simulation",
                                  message="paused" if self._paused else "running", hardware_id=self.arm.name,
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        self.diagnostics_pub.publish(DiagnosticArray(header=Header(stamp=self._state_msg.header.stamp),
                                                     status=[status]))
        self.get_logger().debug(f"loop: {values}")


class SimHost:
    """``sim_node``'s physics loop as a :class:`~.controller_host.ControllerHost`: the controller runs
    on each state the loop publishes (and every loop pass while paused: no fresh state, so it
    coasts and faults as over DDS), its torque is the simulator's effort command of that step."""

    description = "sim_node's physics loop"
    release_target = "in the physics loop (the simulator's trajectory interface)"

    def __init__(self, node: SimNode, rate: float) -> None:
        self._node = node
        self.rate = rate
        self.controller: ControllerNode | None = None
        self._lock = threading.Lock()
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)

    def release(self, times: Array, q: Array, dq: Array, ddq: Array) -> None:
        self._node.command_trajectory(times, q, dq, ddq)

    def zero(self) -> None:
        try:
            self._node.command_effort(np.zeros(self._node.arm.n_joints))
        except CommandError as exc:
            self._node.get_logger().warning(f"zero effort at shutdown refused: {exc}")

    def cycle(self, read_time: float, stamp: float | None, q: Array | None, dq: Array | None,
              effort: Array | None) -> None:
        """One controller cycle in the loop: on the state read at ``read_time``, stamped ``stamp`` [s]
        (None: none fresh), its torque to the simulator, then the rest of the controller's cycle."""
        tau = self.controller.cycle.host_command(read_time, stamp, q, dq, effort)
        if tau is not None:
            try:
                self._node.command_effort(tau)
            except CommandError as exc:
                self._node.reject("controller torque", exc)
            else:
                with self._lock:
                    self._latencies.append(time.perf_counter() - read_time)
        self.controller.cycle.host_after_outputs()

    def take_latencies(self) -> list[float]:
        """Read-to-command latencies [s] of the torques since the previous call (at most
        :data:`~youbot_dynamics.driver.driver.LATENCY_WINDOW`, the newest)."""
        with self._lock:
            latencies = list(self._latencies)
            self._latencies.clear()
        return latencies


def main(args: list[str] | None = None) -> int:
    """Entry point ``sim_node``: simulate until Ctrl-C or an external shutdown; 1 if start-up fails."""
    return run_node(NODE_NAME, SimNode, (ArmDescriptionError, SimConfigError, ParameterException, ValueError), args,
                    realtime=True, events_executor=True, before_spin=SimNode.start, after_spin=SimNode.let_go,
                    hosted=SimNode.hosted_nodes)


if __name__ == '__main__':
    sys.exit(main())
