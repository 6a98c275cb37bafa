"""A controller node in the arm's own loop ("control inside the bus cycle", issue 18).

Over DDS the control loop crosses the middleware twice per cycle (arm -> ``/joint_states`` ->
controller -> ``/arm_effort_controller/commands`` -> arm); with the virtual drives the controllers
missed 0.13-1.5 % of their cycles (p99 latency up to 1.95 ms) and the driver 0.05-1.05 %.
ros2_control avoids both hops by running its controllers in the hardware's update loop. So can
``youbot_driver`` and ``sim_node``: with their parameter ``controller`` (``pd_gravity``,
``computed_torque`` or ``float``; ``''`` = none) they create that controller node in their own
process (:func:`create_hosted_controller`: the same class, node name, services, topics and
parameter file as the stand-alone node) and run its cycle in their loop thread on the state just
read; its torque goes into the same cycle's command (:class:`DriverHost`, :class:`SimHost`). Its
parameters come from ``controller_params_file`` (``''`` = the package's
``config/<controller>_controller.yaml``), the section of its node name and ``/**``; the process's
own ``--ros-args`` (the host's ``-p`` overrides) do not reach it. Its ``rate`` must be the loop's
rate; its ``realtime_priority`` is the host's (one process).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

import numpy as np
from rclpy.context import Context
from rclpy.parameter import Parameter, parameter_dict_from_yaml_file

from ..controller_registry import CONTROLLERS as REGISTRY, ControllerEntry
from ..driver import ArmDriver, CommandError
from ..driver.driver import LATENCY_WINDOW, CycleInputs
from ..paths import config_path
from ..timing import spread
from .controller_node import ControllerHost, ControllerNode

if TYPE_CHECKING:
    from .sim_node import SimNode
    from .youbot_driver import YoubotDriverNode

__all__ = ["CONTROLLERS", "DriverHost", "SimHost", "controller_parameters", "create_hosted_controller",
           "latency_report"]

Array = np.ndarray

#: ``controller`` parameter value -> its entry in the registry (:mod:`youbot_dynamics.controller_registry`)
CONTROLLERS: dict[str, ControllerEntry] = {entry.name: entry for entry in REGISTRY}
RELEASE_WAIT_MAX = 2.0  # [s, driver clock] longest wait at shutdown for the release trajectory to bring the arm to rest
WALL_WAIT_MAX = 10.0  # [s, wall clock] ... and on the wall clock, whatever the driver's clock does
AT_REST = 0.01  # [rad/s] every joint slower than this: the arm is at rest


def controller_parameters(node_name: str, params_file: str, namespace: str = "/") -> list[Parameter]:
    """The parameters of node ``node_name`` (in ``namespace``) in ``params_file`` (its section and
    ``/**``; ``''`` = the package's ``config/<node_name>.yaml``); ``ValueError`` if it has none."""
    path = params_file or str(config_path(f"{node_name}.yaml"))
    full_name = f"{namespace.rstrip('/')}/{node_name}"
    try:
        messages = parameter_dict_from_yaml_file(path, use_wildcard=True, target_nodes=[full_name])
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"controller_params_file {path}: {exc}") from None
    return [Parameter.from_parameter_msg(message) for message in messages.values()]


def create_hosted_controller(kind: str, params_file: str, host: ControllerHost, context: Context,
                             namespace: str = "/") -> ControllerNode:
    """The controller node ``kind`` (a key of :data:`CONTROLLERS`) running in ``host``'s loop."""
    if kind not in CONTROLLERS:
        raise ValueError(f"controller must be '' or one of {sorted(CONTROLLERS)}, got '{kind}'")
    entry = CONTROLLERS[kind]
    return entry.node_type()(host=host, context=context, namespace=namespace, use_global_arguments=False,
                             parameter_overrides=controller_parameters(entry.node, params_file, namespace))


def latency_report(latencies: list[float]) -> dict[str, float]:
    """``controller_latency_{median,p99,max}_ms`` and ``controller_cycles`` of in-loop latencies [s]."""
    if not latencies:
        return {"controller_cycles": 0.0}
    return {"controller_cycles": float(len(latencies)), **spread(latencies, "controller_latency")}


class DriverHost:
    """``youbot_driver``'s bus cycle as a :class:`~.controller_node.ControllerHost` and the
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
        stamp = self._node.state_stamp(inputs.time, inputs.read_time) if inputs.fresh else None
        return self.controller.host_command(inputs.read_time, stamp, inputs.position, inputs.velocity, inputs.effort)

    def after_outputs(self) -> None:
        self.controller.host_after_outputs()

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


class SimHost:
    """``sim_node``'s physics loop as a :class:`~.controller_node.ControllerHost`: the controller runs
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
        tau = self.controller.host_command(read_time, stamp, q, dq, effort)
        if tau is not None:
            try:
                self._node.command_effort(tau)
            except CommandError as exc:
                self._node._reject("controller torque", exc)  # noqa: SLF001 - the node's own throttled log
            else:
                with self._lock:
                    self._latencies.append(time.perf_counter() - read_time)
        self.controller.host_after_outputs()

    def take_latencies(self) -> list[float]:
        """Read-to-command latencies [s] of the torques since the previous call (at most
        :data:`~youbot_dynamics.driver.driver.LATENCY_WINDOW`, the newest)."""
        with self._lock:
            latencies = list(self._latencies)
            self._latencies.clear()
        return latencies
