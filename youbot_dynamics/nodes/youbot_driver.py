"""ROS 2 node: the real youBot arm over EtherCAT (pysoem), or its virtual twin, behind the sim's topic contract.

Thin wrapper around :class:`youbot_dynamics.driver.ArmDriver` (all logic and safety live there):

* the driver's cycle runs in its own thread (:class:`~youbot_dynamics.driver.CyclicLoop`, every
  ``cycle_period``); ROS callbacks only hand commands and requests over, they never touch the bus;
* ``sensor_msgs/JointState`` on ``joint_states_topic`` (``arm_joint_1..5``: position [rad],
  velocity [rad/s], effort = the current-derived joint torque [N m]) at ``publish_rate``, from a
  publisher thread woken by the cycle;
* ``std_msgs/Float64MultiArray`` on the effort (current mode), position and velocity topics and
  ``trajectory_msgs/JointTrajectory`` on the trajectory topic, as ``sim_node``; a rejected command
  (wrong length, NaN, outside the limits, interface not in ``command_interfaces``, motors off)
  is logged as a throttled error and changes nothing; streamed commands time out after
  ``command_timeout`` (motors stop);
* services (``std_srvs/Trigger``) ``~/motors_on`` (also clears drive errors), ``~/motors_off``,
  ``~/calibrate``, ``~/reconnect`` (after a lost bus); with the virtual backend also ``~/reset``
  (the virtual arm at rest at ``virtual_initial_positions``, as ``sim_node``) and, with
  ``publish_clock``, the virtual time on ``/clock``;
* ``/diagnostics`` every ``diagnostics_period``: the bus (phase, statistics, cycle timing) and
  each drive's decoded status/error flags and raw values.

``backend: virtual`` replaces the EtherCAT master by :class:`~youbot_dynamics.driver.VirtualBus`
(drives with the firmware's behaviour on the MuJoCo arm): the whole driver runs without hardware.

``controller`` (``pd_gravity``, ``computed_torque``, ``float``; ``''`` = none) runs that controller
node in this process, in the bus cycle (:mod:`.hosted`): its torque goes out in the cycle that read
its state. Its interfaces are the stand-alone node's; ``/diagnostics`` adds the latency from the
read to the torque in the outputs (``controller_latency_*``) and the refused torques
(``controller_refusals``). At shutdown it lets go of the arm (the release to the trajectory
interface) and the bus runs until the arm is at rest (at most 2 s) before the motors stop.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterType
from rclpy._rclpy_pybind11 import RCLError
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.time import Time as RosTime
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..arm import ArmDescriptionError, load_arm
from ..commands import from_stamp
from ..contract import EFFORT_COMMANDS, JOINT_STATES, POSITION_COMMANDS, TRAJECTORY, VELOCITY_COMMANDS
from ..driver import (INTERFACES, ArmDriver, BusError, CommandError, CyclicLoop, DriverConfig, DriverError, PysoemBus,
                      VirtualBus)
from ..driver.process_data import ERROR_FLAGS, StatusFlag, decode_flags
from ..interpolation import INTERPOLATIONS
from ..sim import SimConfigError, load_sim_config
from ..timing import LoopThread
from .common import REALTIME_PRIORITY, parameter_descriptor, realtime_priority_parameter, run_node
from .conversions import deserialize_trajectory, stamp_seconds, trajectory_arrays
from .hosted import CONTROLLERS, DriverHost, create_hosted_controller, latency_report

__all__ = ["YoubotDriverNode", "main", "BACKENDS"]

NODE_NAME = "youbot_driver"
QOS_DEPTH = 10
BACKENDS = ("pysoem", "virtual")
COMMAND_TOPICS = {"effort": "effort_command_topic", "position": "position_command_topic",
                  "velocity": "velocity_command_topic"}
SERVICES = ("motors_on", "motors_off", "calibrate", "reconnect")

_descriptor = partial(parameter_descriptor, read_only=True)


class YoubotDriverNode(Node):
    """The youBot arm driver node; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        # first: destroy_node() may run on a half-built node
        self._publisher = LoopThread(self._publish_states, "joint_states")
        self.loop: CyclicLoop | None = None
        self.host: DriverHost | None = None
        self.controller = None  # the controller node in the bus cycle (parameter 'controller'), if any
        super().__init__(NODE_NAME, **kwargs)
        s, d, b = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_BOOL
        i, sa, da = (ParameterType.PARAMETER_INTEGER, ParameterType.PARAMETER_STRING_ARRAY,
                     ParameterType.PARAMETER_DOUBLE_ARRAY)
        dc = DriverConfig()
        self.declare_parameter('backend', 'pysoem', _descriptor(
            "EtherCAT backend: 'pysoem' (the real arm on 'interface') or 'virtual' (drives on the MuJoCo arm).", s))
        self.declare_parameter('interface', 'eth0', _descriptor(
            "Network interface of the youBot's EtherCAT port (see `ip link`); pysoem backend only.", s))
        self.declare_parameter('arm_description', '', _descriptor(
            "Path of the arm description YAML; '' = the package's config/youbot_arm.yaml.", s))
        self.declare_parameter('cycle_period', dc.cycle_period, _descriptor(
            "Bus cycle [s] (the youBot driver's EtherCATUpdateRate: 1 ms).", d, range_=(1e-4, 0.1)))
        self.declare_parameter('command_timeout', dc.command_timeout, _descriptor(
            "A streamed effort/position/velocity command older than this [s] stops the motors.", d,
            range_=(0.001, 10.0)))
        self.declare_parameter('max_lost_frames', dc.max_lost_frames, _descriptor(
            "Consecutive lost frames after which the bus counts as lost (motors stopped, ~/reconnect).", i,
            int_range=(1, 100000)))
        self.declare_parameter('firmware', dc.firmware, _descriptor(
            "Drive firmware, selects the commutation procedure: '2.00' (velocity mode) or '1.48' (INITIALIZE).", s))
        self.declare_parameter('commutation_rpm', dc.commutation_rpm, _descriptor(
            "Motor speed [rpm] of the firmware 2.00 commutation.", i, int_range=(1, 1000)))
        self.declare_parameter('commutation_timeout', dc.commutation_timeout, _descriptor(
            "Time [s] the drives get to report commutation (status bit 15).", d, range_=(0.01, 60.0)))
        self.declare_parameter('calibrate_on_start', dc.calibrate_on_start, _descriptor(
            "Drive every joint to its calibration stop at start-up and zero it there (else trust the drives' "
            "zero from an earlier calibration in this power cycle; ~/calibrate does it on request).", b))
        self.declare_parameter('calibration_velocity', dc.calibration_velocity, _descriptor(
            "Joint speed [rad/s] towards the calibration stops (0.1047 = 1 rpm at the output).", d,
            range_=(0.001, 0.5)))
        self.declare_parameter('calibration_timeout', dc.calibration_timeout, _descriptor(
            "Time [s] the calibration may take before it fails.", d, range_=(0.1, 600.0)))
        self.declare_parameter('calibration_settle', dc.calibration_settle, _descriptor(
            "Time [s] at 0 mA after reaching a stop before the position is set.", d, range_=(0.0, 5.0)))
        self.declare_parameter('calibration_stall_time', dc.calibration_stall_time, _descriptor(
            "A calibrating joint that moved less than 10 % of the commanded distance in this time [s] is at "
            "its stop.", d, range_=(0.01, 10.0)))
        self.declare_parameter('current_limit_scale', dc.current_limit_scale, _descriptor(
            "Fraction (0, 1] of each drive's max_current (arm description) that current commands may use.", d,
            range_=(0.01, 1.0)))
        self.declare_parameter('limit_margin', dc.limit_margin, _descriptor(
            "Within this distance [rad] of a joint limit, current/velocity towards the limit is set to 0.", d,
            range_=(0.0, 0.5)))
        self.declare_parameter('trajectory_interpolation', dc.trajectory_interpolation, _descriptor(
            f"Interpolation of trajectory waypoints: one of {list(INTERPOLATIONS)}.", s))
        self.declare_parameter('trajectory_gain', dc.trajectory_gain, _descriptor(
            "Position feedback [1/s] of trajectory execution: v = v_ref + gain (q_ref - q), in velocity mode.", d,
            range_=(0.1, 200.0)))
        self.declare_parameter('enable_on_start', dc.enable_on_start, _descriptor(
            "Accept commands right after start-up (else call ~/motors_on first).", b))
        self.declare_parameter('publish_rate', 1000.0, _descriptor(
            "Joint state rate [Hz]; must divide the cycle rate.", d, range_=(1.0, 10000.0)))
        self.declare_parameter('joint_states_topic', JOINT_STATES, _descriptor(
            "sensor_msgs/JointState output topic.", s))
        self.declare_parameter('effort_command_topic', EFFORT_COMMANDS, _descriptor(
            "std_msgs/Float64MultiArray joint torques [N m], sent as currents (drive current mode).", s))
        self.declare_parameter('position_command_topic', POSITION_COMMANDS, _descriptor(
            "std_msgs/Float64MultiArray joint positions [rad], executed by the drives' position loop.", s))
        self.declare_parameter('velocity_command_topic', VELOCITY_COMMANDS, _descriptor(
            "std_msgs/Float64MultiArray joint velocities [rad/s], executed by the drives' velocity loop.", s))
        self.declare_parameter('trajectory_topic', TRAJECTORY, _descriptor(
            "trajectory_msgs/JointTrajectory, interpolated by the driver, executed in velocity mode.", s))
        self.declare_parameter('command_interfaces', list(INTERFACES), _descriptor(
            f"Accepted command interfaces (of {list(INTERFACES)}).", sa))
        self.declare_parameter('request_timeout', 120.0, _descriptor(
            "Longest wait [s] of a service call for the driver (a calibration takes up to calibration_timeout).",
            d, range_=(0.1, 3600.0)))
        self.declare_parameter('error_throttle_period', 1.0, _descriptor(
            "Minimum period [s] between error messages about rejected commands.", d, range_=(0.0, 3600.0)))
        self.declare_parameter('diagnostics_period', 1.0, _descriptor(
            "Period [s] of the /diagnostics report; 0 = none.", d, range_=(0.0, 3600.0)))
        self.declare_parameter('realtime_priority', *realtime_priority_parameter(REALTIME_PRIORITY))
        self.declare_parameter('virtual_sim_config', '', _descriptor(
            "Virtual backend: simulated robot file; '' = the package's config/sim.yaml.", s))
        self.declare_parameter('virtual_initial_positions', Parameter.Type.DOUBLE_ARRAY, _descriptor(
            "Virtual backend: joint positions [rad] at power-up; unset = parked on the calibration stops (q = 0), "
            "where the unpowered arm rests.", da))
        self.declare_parameter('virtual_calibrated', True, _descriptor(
            "Virtual backend: the drives count from the calibration stops (as after an earlier calibration); "
            "false = from the power-up pose, so only a calibration gives true angles.", b))
        self.declare_parameter('virtual_realism', True, _descriptor(
            "Virtual backend: friction, noise and quantization of the sim file; false = ideal arm.", b))
        self.declare_parameter('publish_clock', False, _descriptor(
            "Virtual backend: the virtual arm's time is the bus' (cycles x cycle_period), published on /clock "
            "and in the joint state stamps, like sim_node (for use_sim_time nodes on a loaded machine); "
            "false = the virtual arm keeps wall-clock time like the real one.", b))
        self.declare_parameter('controller', '', _descriptor(
            f"Controller run in this process, in the bus cycle (one of {sorted(CONTROLLERS)}; '' = none): its "
            "torque goes out in the cycle that read its state, without DDS; its node (same name, services and "
            "topics as the stand-alone controller) takes its parameters from controller_params_file.", s))
        self.declare_parameter('controller_params_file', '', _descriptor(
            "Parameter file of that controller (its node's section and /**); '' = the package's "
            "config/<controller>_controller.yaml. Its rate must be the bus rate (1 / cycle_period).", s))

        p = {name: param.value for name, param in self.get_parameters_by_prefix('').items()}
        self.arm = load_arm(p['arm_description'] or None)
        config = DriverConfig(**{f.name: p[f.name] for f in dataclasses.fields(DriverConfig)})
        interfaces = tuple(p['command_interfaces'])
        unknown = sorted(set(interfaces) - set(INTERFACES))
        if unknown:
            raise ValueError(f"command_interfaces: unknown {unknown}; known: {list(INTERFACES)}")
        self._interfaces = interfaces
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
        else:
            raise ValueError(f"backend must be one of {list(BACKENDS)}, got {self.backend!r}")
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

        self._state_msg = JointState(name=list(self.arm.joint_names))
        self.state_pub = self.create_publisher(JointState, p['joint_states_topic'], QOS_DEPTH)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', QOS_DEPTH)
        self.clock_pub = self.create_publisher(Clock, '/clock', QOS_DEPTH) if self._publish_clock else None
        for interface, name in COMMAND_TOPICS.items():
            self.create_subscription(Float64MultiArray, p[name],
                                     lambda msg, kind=interface: self._on_command(kind, msg), QOS_DEPTH)
        # raw: a trajectory's size is judged before it is deserialized (conversions.deserialize_trajectory)
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
        (self.get_logger().info if response.success else self.get_logger().warning)(f"{name}: {response.message}")
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


def main(args: list[str] | None = None) -> int:
    """Entry point ``youbot_driver``: drive the arm until Ctrl-C (then stop the motors and close the bus while
    the context is valid); 1 if start-up fails (reason logged). ``realtime``: see :func:`.common.run_node`."""
    return run_node(NODE_NAME, YoubotDriverNode,
                    (ArmDescriptionError, SimConfigError, BusError, DriverError, ParameterException, ValueError), args,
                    realtime=True, events_executor=True, before_spin=YoubotDriverNode.start,
                    after_spin=YoubotDriverNode.stop, hosted=YoubotDriverNode.hosted_nodes)


if __name__ == '__main__':
    sys.exit(main())
