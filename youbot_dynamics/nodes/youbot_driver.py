"""ROS 2 node: the real youBot arm over EtherCAT (pysoem), or its virtual twin, behind the sim's topic contract.

Executable ``youbot_driver``: a thin wrapper around :class:`youbot_dynamics.driver.ArmDriver` (all logic and
safety live there), whose bus cycle runs in its own thread; it can host a controller in that cycle (:mod:`.hosted`).

Interface, behaviour, figures and the first run on hardware: doc/driver.md; parameters:
youbot_dynamics/nodes/parameters/youbot_driver.yaml (table in doc/parameters.md).
"""
from __future__ import annotations

import dataclasses
import sys
import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy._rclpy_pybind11 import RCLError
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.time import Time as RosTime
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..arm.description import ArmDescriptionError, load_arm
from ..motion.commands import from_stamp
from ..driver import (ArmDriver, BusError, CommandError, CyclicLoop, DriverConfig, DriverError, DriverPhase, PysoemBus,
                      VirtualBus)
from ..driver.driver import CycleInputs
from ..driver.process_data import ERROR_FLAGS, StatusFlag, decode_flags
from ..sim import SimConfigError, load_sim_config
from ..timing import LoopThread
from .common import declare_parameters, log_outcome, run_node
from .controller_node import ControllerNode
from .hosted import create_hosted_controller, latency_report
from .messages import deserialize_trajectory, stamp_seconds, trajectory_arrays

__all__ = ["DriverHost", "YoubotDriverNode", "main"]

Array = np.ndarray
RELEASE_WAIT_MAX = 2.0  # [s, driver clock] longest wait at shutdown for the release trajectory to bring the arm to rest
WALL_WAIT_MAX = 10.0  # [s, wall clock] ... and on the wall clock, whatever the driver's clock does
AT_REST = 0.01  # [rad/s] every joint slower than this: the arm is at rest

NODE_NAME = "youbot_driver"
QOS_DEPTH = 10
COMMAND_TOPICS = {"effort": "effort_command_topic", "position": "position_command_topic",
                  "velocity": "velocity_command_topic"}
SERVICES = ("motors_on", "motors_off", "calibrate", "reconnect")
#: what a drive's error flag means, for the fault's log line (the firmware's flags: driver/process_data.py)
FLAG_CAUSES = {
    "TIMEOUT": "no set-point within the drive's EtherCAT timeout: the bus cycle stalled or stopped",
    "I2T_EXCEEDED": "the motor's i2t limit: too much current for too long",
    "OVER_CURRENT": "over-current", "UNDER_VOLTAGE": "supply voltage too low",
    "OVER_VOLTAGE": "supply voltage too high",
    "OVER_TEMPERATURE": "drive too hot", "EMERGENCY_STOP": "the emergency stop",
    "HALL_SENSOR_ERROR": "hall sensor error", "ENCODER_ERROR": "encoder error",
    "INITIALIZATION_ERROR": "commutation (initialization) failed",
}


class YoubotDriverNode(Node):
    """The youBot arm driver node; see doc/driver.md."""

    def __init__(self, **kwargs: Any) -> None:
        # first: destroy_node() may run on a half-built node
        self._publisher = LoopThread(self._publish_states, "joint_states")
        self.loop: CyclicLoop | None = None
        self.host: DriverHost | None = None
        self.controller = None  # the controller node in the bus cycle (parameter 'controller'), if any
        super().__init__(NODE_NAME, **kwargs)
        p = declare_parameters(self, NODE_NAME)
        self.arm = load_arm(p['arm_description'] or None)
        config = DriverConfig(**{f.name: p[f.name] for f in dataclasses.fields(DriverConfig)})
        self._interfaces = tuple(p['command_interfaces'])
        cycle_rate = 1.0 / config.cycle_period
        ratio = cycle_rate / p['publish_rate']
        self._publish_every = int(round(ratio))
        if self._publish_every < 1 or abs(ratio - self._publish_every) > 1e-6 * ratio:
            raise ValueError(f"publish_rate {p['publish_rate']} Hz must divide the cycle rate {cycle_rate:g} Hz")
        self._throttle = float(p['error_throttle_period'])
        self._request_timeout = float(p['request_timeout'])
        self.backend = p['backend']
        self._publish_clock = bool(p['publish_clock'])
        if self._publish_clock and self.backend != 'virtual':
            raise ValueError("publish_clock needs backend 'virtual' (the real arm runs on the wall clock)")
        if self.backend == 'virtual':
            initial = p['virtual_initial_positions']
            # With /clock the virtual arm's time is the bus' (cycles x cycle_period, as sim_node's simulated
            # time); else it keeps wall-clock time like the real arm, even when the bus thread is late.
            clock = None if self._publish_clock else time.monotonic
            bus = VirtualBus(self.arm, load_sim_config(p['virtual_sim_config'] or None, self.arm),
                             period=config.cycle_period,
                             initial_positions=np.asarray(initial, dtype=float) if initial is not None and len(initial)
                             else None,
                             calibrated=bool(p['virtual_calibrated']), realism=bool(p['virtual_realism']), clock=clock)
            self.hardware_id = "virtual"
        elif self.backend == 'pysoem':
            bus = PysoemBus(p['interface'])
            clock = time.monotonic
            self.hardware_id = p['interface']
        else:  # the schema allows no other (parameters/youbot_driver.yaml)
            raise AssertionError(self.backend)
        self.bus = bus
        self.driver = ArmDriver(bus, self.arm, config, clock=clock)
        if p['controller']:  # before the bus is opened: a controller that cannot start leaves it closed
            self.host = DriverHost(self)
            self.controller = create_hosted_controller(p['controller'], p['controller_params_file'], self.host,
                                                       self.context, self.get_namespace())
            self.host.attach(self.controller)
        self.driver.connect()
        self.loop = CyclicLoop(self.driver)
        self._refusals_seen = 0
        self._faults_logged: tuple[str, ...] = ()  # the faults of the last state, logged once (fault_message)

        self._state_msg = JointState(name=list(self.arm.joint_names))
        self.state_pub = self.create_publisher(JointState, p['joint_states_topic'], QOS_DEPTH)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', QOS_DEPTH)
        self.clock_pub = self.create_publisher(Clock, '/clock', QOS_DEPTH) if self._publish_clock else None
        for interface, name in COMMAND_TOPICS.items():
            self.create_subscription(Float64MultiArray, p[name],
                                     lambda msg, kind=interface: self._on_command(kind, msg), QOS_DEPTH)
        # raw: a trajectory's size is judged before it is deserialized (messages.deserialize_trajectory)
        self.create_subscription(JointTrajectory, p['trajectory_topic'], self._on_trajectory, QOS_DEPTH, raw=True)
        for name in SERVICES:
            self.create_service(Trigger, f'~/{name}', lambda req, res, what=name: self._on_request(what, res))
        if self.backend == 'virtual':
            self._initial_positions = initial
            self.create_service(Trigger, '~/reset', self._on_reset)
        if p['diagnostics_period'] > 0.0:
            self.create_timer(p['diagnostics_period'], self._publish_diagnostics)
        self.get_logger().info(
            f"youBot arm driver ({self.backend}{'' if self.backend == 'virtual' else ' on ' + p['interface']}): "
            f"joint slaves {self.driver.slaves}, cycle {1e3 * config.cycle_period:g} ms, joint states on "
            f"{p['joint_states_topic']} at {p['publish_rate']:g} Hz; motors "
            f"{'on at start' if config.enable_on_start else 'off until ~/motors_on'}")

    # -- threads --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the bus thread and the joint state publisher (idempotent)."""
        self.loop.start()
        self._publisher.start()

    def hosted_nodes(self) -> list[Node]:
        """The nodes this one runs in its process (the controller in the bus cycle), for the executor."""
        return [] if self.controller is None else [self.controller]

    def stop(self) -> None:
        """The controller in the bus cycle lets go of the arm, then the publisher and the bus thread
        stop (motors stopped, bus closed)."""
        if self.host is not None and self.loop is not None and self.loop.running:
            self.host.let_go()
        self._publisher.stop()
        if self.loop is not None:
            self.loop.stop()
            self.loop = None

    def destroy_node(self) -> None:
        self.stop()
        if self.controller is not None:
            self.controller.destroy_node()
            self.controller = None
        super().destroy_node()

    def state_stamp(self, driver_time: float, read_time: float) -> float:
        """The stamp [s] of a joint state read at ``driver_time`` (driver clock), ``read_time`` (steady
        clock): the virtual time with ``publish_clock``, else the instant of the read on the system
        clock (the ROS clock of a node without ``use_sim_time``): its measurement instant, not its
        later publication, so that the age of a state at a controller includes the wait for the
        publisher thread. Cheap (no ROS clock call): the controller in the bus cycle gets it too."""
        if self._publish_clock:
            return driver_time
        return time.time() - (time.perf_counter() - read_time)

    def _publish_states(self) -> None:
        seen = next_publish = 0
        while self._publisher.running and self.context.ok():
            state = self.driver.wait_state(seen, timeout=0.1)
            if state is None:
                continue
            seen = state.sequence
            if state.faults != self._faults_logged:
                self._faults_logged = state.faults
                if state.faults:
                    self.get_logger().error(fault_message(state.faults))
            if seen < next_publish:
                continue
            next_publish = seen + self._publish_every
            msg = self._state_msg
            msg.header.stamp = RosTime(nanoseconds=round(1e9 * self.state_stamp(state.time, state.read_time))).to_msg()
            msg.position = state.position.tolist()
            msg.velocity = state.velocity.tolist()
            msg.effort = state.effort.tolist()
            try:
                self.state_pub.publish(msg)
                if self.clock_pub is not None:
                    self.clock_pub.publish(Clock(clock=msg.header.stamp))
            except RCLError:
                if self.context.ok():
                    raise
                break  # rclpy shut down (Ctrl-C) before the node was destroyed

    # -- commands and services ------------------------------------------------------------------

    def _reject(self, what: str, exc: Exception) -> None:
        self.get_logger().error(f"{what} rejected: {exc}", throttle_duration_sec=self._throttle)

    def check_interface(self, interface: str) -> None:
        """``CommandError`` unless ``interface`` is in ``command_interfaces``."""
        if interface not in self._interfaces:
            raise CommandError(f"interface {interface!r} is not enabled (command_interfaces: "
                               f"{', '.join(self._interfaces)})")

    def _on_command(self, interface: str, msg: Float64MultiArray) -> None:
        try:
            self.check_interface(interface)
            self.driver.command(interface, np.asarray(msg.data, dtype=float))
        except ValueError as exc:  # CommandError is a ValueError
            self._reject(f"{interface} command", exc)

    def _on_trajectory(self, data: bytes) -> None:
        try:
            self.check_interface("trajectory")
            msg = deserialize_trajectory(data, self.arm.n_joints)
            times, positions, velocities, accelerations = trajectory_arrays(msg, self.arm.joint_names)
            stamp = stamp_seconds(msg.header.stamp)
            if stamp > 0.0:  # timed from its stamp (0: from now), on the clock of the joint state stamps
                state = self.driver.state()
                now = (state.time if self._publish_clock and state is not None
                       else self.get_clock().now().nanoseconds * 1e-9)
                times, positions, velocities, accelerations = from_stamp(
                    times, positions, velocities, accelerations, now - stamp, self.driver.config.cycle_period)
            self.driver.command_trajectory(times, positions, velocities, accelerations)
        except ValueError as exc:
            self._reject("trajectory", exc)

    def _on_request(self, name: str, response: Trigger.Response) -> Trigger.Response:
        future = self.driver.request(name)
        try:
            response.success, response.message = future.result(timeout=self._request_timeout)
        except FutureTimeout:
            response.success = False
            response.message = f"{name}: no answer from the driver in {self._request_timeout} s"
        log_outcome(self.get_logger(), response.success, f"{name}: {response.message}")
        return response

    def _on_reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Virtual backend: the arm at rest at ``virtual_initial_positions`` (parked when unset), as sim_node."""
        initial = self._initial_positions
        q = np.asarray(initial, dtype=float) if initial is not None and len(initial) else None

        def reset() -> str:
            self.bus.reset(q)
            return f"virtual arm reset to {np.round(self.bus.sim.measure().position, 4).tolist()} (motors stopped " \
                   "until the next command)"

        try:
            response.success, response.message = self.driver.run_in_cycle(reset).result(timeout=self._request_timeout)
        except FutureTimeout:
            response.success, response.message = False, "reset: no answer from the driver"
        return response

    # -- diagnostics ----------------------------------------------------------------------------

    def _publish_diagnostics(self) -> None:
        state = self.driver.state()
        loop = self.loop
        if state is None or loop is None:
            return
        timing = loop.timing.report()
        if self.controller is not None:
            timing.update(latency_report(self.driver.take_controller_latencies()))
        stats = self.driver.statistics.as_dict()
        if stats["controller_refusals"] > self._refusals_seen:
            self._refusals_seen = stats["controller_refusals"]
            self._reject("controller torque", CommandError(self.driver.controller_refusal))
        level = DiagnosticStatus.OK
        if state.faults or loop.error is not None:
            level = DiagnosticStatus.ERROR
        elif state.phase.value != "running" or stats["consecutive_lost"]:
            level = DiagnosticStatus.WARN
        message = "; ".join(state.faults) if state.faults else (
            f"{state.phase.value}, motors {'on' if state.enabled else 'off'}"
            + (f", {state.interface}" if state.interface else ""))
        if loop.error is not None:
            message = f"bus thread died: {loop.error!r}"
        values = {"backend": self.backend, "phase": state.phase.value, "enabled": str(state.enabled),
                  "interface": str(state.interface), "calibrated_this_run": str(state.calibrated),
                  **{("total_cycles" if k == "cycles" else k): str(v) for k, v in stats.items()},
                  **{k: f"{v:.6g}" for k, v in timing.items()}}  # the window's cycles, rate_hz, ... as sim_node
        statuses = [DiagnosticStatus(level=level, name=f"{self.get_name()}: EtherCAT bus", message=message,
                                     hardware_id=self.hardware_id,
                                     values=[KeyValue(key=k, value=v) for k, v in values.items()])]
        for j, joint in enumerate(self.arm.joint_names):
            flags = state.flags[j]
            errors = decode_flags(flags & int(ERROR_FLAGS))
            joint_level = (DiagnosticStatus.ERROR if errors else DiagnosticStatus.OK
                           if flags & StatusFlag.INITIALIZED else DiagnosticStatus.WARN)
            joint_values = {"flags": ", ".join(decode_flags(flags)), "error_flags": f"{flags:#010x}",
                            "mode": state.modes[j].name, "ticks": str(state.ticks[j]),
                            "current_mA": str(state.current_ma[j]), "velocity_rpm": str(state.rpm[j]),
                            "position_rad": f"{state.position[j]:.5f}", "effort_Nm": f"{state.effort[j]:.4f}",
                            "temperature": "not in the process data"}
            statuses.append(DiagnosticStatus(
                level=joint_level, name=f"{self.get_name()}: {joint}",
                message=", ".join(errors) if errors else ("ok" if joint_level == DiagnosticStatus.OK
                                                          else "not commutated"),
                hardware_id=f"{self.driver.slave_names[j]} slave {self.driver.slaves[j]}",
                values=[KeyValue(key=k, value=v) for k, v in joint_values.items()]))
        msg = DiagnosticArray(status=statuses)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics_pub.publish(msg)


def fault_message(faults: tuple[str, ...]) -> str:
    """The log line of the driver's ``faults`` (which joint, which flag): what the flags in it mean, and
    that the motors are off until ``~/motors_on`` clears them (issue 35: a fault showed only on /diagnostics)."""
    text = "; ".join(faults)
    causes = [f"{flag}: {cause}" for flag, cause in FLAG_CAUSES.items() if flag in text]
    return (f"fault: {text}" + (f" ({'; '.join(causes)})" if causes else "")
            + "; motors off, commands refused until ~/motors_on clears it")


class DriverHost:
    """``youbot_driver``'s bus cycle as a :class:`~.controller_host.ControllerHost` and the
    :class:`~youbot_dynamics.driver.driver.CycleController` of its :class:`ArmDriver`: the controller
    gets each cycle's inputs (stamped as the node stamps its joint states), its torque goes into
    the same cycle's outputs, its release to the driver's trajectory interface."""

    description = "youbot_driver's bus cycle"
    release_target = "in the bus cycle (the driver's trajectory interface)"

    def __init__(self, node: YoubotDriverNode) -> None:
        self._node = node
        self._driver: ArmDriver = node.driver
        self.rate = 1.0 / self._driver.config.cycle_period
        self.controller: ControllerNode | None = None
        self.release_end = 0.0  # [s, driver clock] the last release brings the arm to rest by then

    # -- ControllerHost -------------------------------------------------------------------------

    def release(self, times: Array, q: Array, dq: Array, ddq: Array) -> None:
        self._node.check_interface("trajectory")
        self._driver.command_trajectory(times, q, dq, ddq)
        state = self._driver.state()
        self.release_end = (0.0 if state is None else state.time) + float(times[-1])

    def zero(self) -> None:
        try:
            self._node.check_interface("effort")
            self._driver.command("effort", np.zeros(self._driver.n))
        except CommandError as exc:
            self._node.get_logger().warning(f"zero effort at shutdown refused: {exc}")

    # -- CycleController --------------------------------------------------------------------------

    def command(self, inputs: CycleInputs) -> Array | None:
        # no state during the drives' start-up: the controller enables with the motors (it enabled at the
        # first state and every torque was refused for ~0.4 s), and one that was enabled coasts, then faults
        fresh = inputs.fresh and self._driver.phase is not DriverPhase.STARTING
        stamp = self._node.state_stamp(inputs.time, inputs.read_time) if fresh else None
        return self.controller.cycle.host_command(inputs.read_time, stamp, inputs.position, inputs.velocity,
                                                  inputs.effort)

    def after_outputs(self) -> None:
        self.controller.cycle.host_after_outputs()

    # -- start and stop -------------------------------------------------------------------------

    def attach(self, controller: ControllerNode) -> None:
        """Run ``controller`` in the bus cycle from the next cycle on."""
        self.controller = controller
        self._driver.attach_controller(self)

    def let_go(self) -> None:
        """Before the bus stops: the controller lets go of the arm (zero, then the release, as at the
        shutdown of a stand-alone controller), and the bus runs until the release has ended and the
        arm is at rest (every joint below :data:`AT_REST`; at most :data:`RELEASE_WAIT_MAX`: the
        driver executes the release from the measured position at zero velocity, so a moving arm
        takes a little longer than the release); then the controller leaves the cycle. Timed on the
        driver's clock (the virtual drives' simulated time runs slower than the wall clock on a busy
        machine: on the wall clock the bus stopped with joint 1 still at 0.14 rad/s, two CPU hogs), and
        a cycle late by more than 0.1 s is waited for while the bus runs."""
        self.release_end = 0.0
        self.controller.stop_commanding()
        first = self._driver.state()
        deadline = (0.0 if first is None else first.time) + RELEASE_WAIT_MAX
        give_up = time.perf_counter() + WALL_WAIT_MAX
        seen = 0
        while self.release_end > 0.0 and time.perf_counter() < give_up:
            state = self._driver.wait_state(seen, timeout=0.1)
            if state is None:
                if self._node.loop is None or not self._node.loop.running:
                    break  # the bus thread has stopped
                continue
            seen = state.sequence
            if state.time >= deadline or (state.time >= self.release_end and np.max(np.abs(state.velocity)) < AT_REST):
                break
        self._driver.attach_controller(None)


def main(args: list[str] | None = None) -> int:
    """Entry point ``youbot_driver``: drive the arm until Ctrl-C (then stop the motors and close the bus while
    the context is valid); 1 if start-up fails (reason logged). ``realtime``: see :func:`.common.run_node`."""
    return run_node(NODE_NAME, YoubotDriverNode,
                    (ArmDescriptionError, SimConfigError, BusError, DriverError, ParameterException, ValueError), args,
                    realtime=True, events_executor=True, before_spin=YoubotDriverNode.start,
                    after_spin=YoubotDriverNode.stop, hosted=YoubotDriverNode.hosted_nodes)


if __name__ == '__main__':
    sys.exit(main())
