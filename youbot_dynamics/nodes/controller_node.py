"""The joint-torque controller node (any law of the registry): :class:`ControllerNode`, the ROS face
of the pure-Python :class:`~youbot_dynamics.control.loop.ControlLoop`, with its cycles
(:mod:`.controller_cycle`), reports (:mod:`.controller_reports`) and host in the arm's process
(:mod:`.controller_host`, :mod:`.hosted`). Interface, behaviour, figures: doc/control.md (in the bus
cycle: doc/driver.md); parameters: the law's ``Config`` and controller_common (doc/parameters.md)."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np
from geometry_msgs.msg import Inertia
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from ..arm.description import ArmDescription, ArmDescriptionError, load_arm
from ..compiled import warm_up
from ..contract.controller_registry import controller_of_node
from ..contract.parameter_schema import dataclass_of, record, resolve
from ..control import SafetyConfig, SafetyGuard
from ..control.law_config import from_values
from ..control.laws import ModelLaw
from ..control.loop import ControlLoop, Done, LoopOptions
from ..control.velocity import VelocityFromPositions
from ..dynamics.paramfile import ModelFileError, load_model
from ..files.paths import config_path
from .common import background_worker, declare_parameters, run_node
from .controller_cycle import ControllerCycle
from .controller_host import ControllerHost
from .controller_reports import ControllerReports
from .external_torque import create_observer
from .joint_state_publishers import JointStatePublishers
from .messages import JointStateReader, payload_from_message, stamp_seconds, trajectory_message

__all__ = ["ControllerNode", "run"]

QOS_DEPTH = 10
# Only the newest joint state matters: keep one, best effort (matches reliable publishers too).
JOINT_STATE_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
NOMINAL_MODEL = "youbot_nominal_model.yaml"
RELEASE_DELAY = 0.002  # [s] between the zero effort and the release trajectory (delivered in that order)
WATCHDOG_PERIODS = 1.5  # cycle_trigger 'joint_states': a cycle runs when no joint state came for this many periods

Array = np.ndarray


class ControllerNode(Node):
    """The ROS face of a :class:`~youbot_dynamics.control.loop.ControlLoop` (:attr:`loop`: guard,
    law, references, release, observer reaction, payload) running the registry's law of node
    ``node_name`` (:meth:`_create_law`): parameters (:attr:`params`), topics, services, the cycle's
    timing, the planning thread; see doc/control.md. A controller with topics of its own subclasses
    it with :meth:`_create_interfaces` (and :meth:`_after_cycle` if it needs it)."""

    def __init__(self, node_name: str, host: ControllerHost | None = None, **kwargs: Any) -> None:
        # set before Node.__init__: it creates the parameter services (create_service, locked when hosted)
        self.host = host
        #: held by every cycle and, in the bus cycle (``host``), by every callback (doc/driver.md)
        self.cycle_lock = threading.Lock()
        super().__init__(node_name, **kwargs)
        self.entry = controller_of_node(node_name)
        self._values = declare_parameters(self, node_name)  # its own, its law's Config, controller_common
        #: the parameters, read once at start-up: fields of the record its schema generates
        self.params = p = record(node_name, self._values)
        self.arm: ArmDescription = load_arm(p.arm_description or None)
        warm_up(self.arm, self.get_logger())
        model_file = p.model_file or str(config_path(NOMINAL_MODEL))
        model = load_model(model_file, self.arm)  # checked against the arm by the law: a bad file fails start-up
        self.loop: ControlLoop | None = None  # below, once its parts exist
        self.base_frame: str = p.base_frame
        self.rate = float(p.rate)
        if host is not None and abs(self.rate - host.rate) > 1e-9 * host.rate:
            raise ValueError(f"rate ({self.rate:g} Hz) must be the rate of the loop the controller runs in "
                             f"({host.rate:g} Hz)")
        self._period = 1.0 / self.rate
        self._watchdog = p.cycle_trigger == 'joint_states'
        if not self._period < p.state_timeout:
            raise ValueError(f"state_timeout ({p.state_timeout} s) must exceed the control period "
                             f"1 / rate = {self._period:g} s")
        # the guard's settings are the parameters of their names (the others keep SafetyConfig's defaults)
        config = dataclass_of(SafetyConfig, vars(p))  # arrays as the record has them: unset or empty = None
        law = self._create_law(model)
        self._reader = JointStateReader(self.arm.joint_names, allow_nonfinite=True)
        self._planner = background_worker(f"{node_name}_planner")  # references off the control thread (1-40 ms)
        self.reports = ControllerReports(self, self.arm.joint_names, self.rate)
        options = LoopOptions(releases=bool(p.release_topic), bumpless=p.bumpless_enable,
                              collision_reaction=p.collision_reaction, observe_command=p.observer_torque == 'command')
        float_law, observer = create_observer(self, self.arm, model, p, model_file)
        velocity = (VelocityFromPositions(self.arm.n_joints, p.velocity_filter_time, config.state_timeout)
                    if p.velocity_source == 'positions' else None)
        self.loop = self.reports.loop = ControlLoop(
            self.arm, model, law, SafetyGuard(self.arm, model, config), options,
            report=lambda text, refused, error: self.report_status(text, refused=refused, error=error),
            release=self._deliver_release, float_law=float_law, observer=observer, velocity=velocity,
            after_cycle=self._after_cycle,
            release_target=f"on {p.release_topic}" if host is None else host.release_target)
        self._command_msg = Float64MultiArray()
        self.joint_states_topic: str = p.joint_states_topic
        topic = None
        if host is None:
            self.command_pub = self.create_publisher(Float64MultiArray, p.command_topic, QOS_DEPTH)
            self.release_pub = self.create_publisher(JointTrajectory, p.release_topic, QOS_DEPTH) \
                if p.release_topic else None
            topic = self.create_subscription(JointState, p.joint_states_topic, self._on_joint_state,
                                             JOINT_STATE_QOS).topic_name
        # in the bus cycle the states come from the host, not from the topic: its publishers do not matter
        maximum = p.joint_state_publishers_max if host is None else 0
        self.state_publishers = JointStatePublishers(self, topic or "", maximum)
        self.cycle = ControllerCycle(self.loop, self.reports, self.state_publishers, p, self.enable,
                                     self.get_logger(), self.arm.name, self.cycle_lock)
        self.create_service(SetBool, '~/enable', self._on_enable)
        self.create_subscription(Inertia, '~/payload', self._on_payload, QOS_DEPTH)
        self._create_interfaces()
        if host is None:
            # with cycle_trigger 'joint_states' the timer is a watchdog, restarted by every joint state:
            # it only fires (and wakes the executor) when a state is half a period late
            self._timer = self.create_timer(self._period * (WATCHDOG_PERIODS if self._watchdog else 1.0),
                                            self._on_timer, clock=Clock(clock_type=ClockType.STEADY_TIME))
        wiring = (f"joint states on {p.joint_states_topic}, torques on {p.command_topic}" if host is None
                  else f"in {host.description}")
        self.get_logger().info(
            f"{law.LABEL} for '{self.arm.name}' with model {model_file}: {self.rate:g} Hz, {wiring}; "
            f"Kp = {np.round(law.kp, 4).tolist()}, Kd = {np.round(law.kd, 4).tolist()}, torque limit = "
            f"{np.round(self.guard.torque_limit, 3).tolist()} N m; "
            f"{'enabling at the first joint state' if self.cycle.enable_pending else 'disabled (call ~/enable)'}")

    # -- callbacks under the cycle lock in the bus cycle ----------------------------------------

    def locked(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` holding :attr:`cycle_lock` when hosted (doc/driver.md), else itself."""
        if self.host is None:
            return callback

        def locked(*args: Any) -> Any:
            with self.cycle_lock:
                return callback(*args)

        return locked

    def create_subscription(self, msg_type: Any, topic: str, callback: Callable[..., Any], *args: Any,
                            **kwargs: Any) -> Any:
        return super().create_subscription(msg_type, topic, self.locked(callback), *args, **kwargs)

    def create_service(self, srv_type: Any, srv_name: str, callback: Callable[..., Any], *args: Any,
                       **kwargs: Any) -> Any:
        return super().create_service(srv_type, srv_name, self.locked(callback), *args, **kwargs)

    # -- hooks ----------------------------------------------------------------------------------

    def _create_law(self, model: Any) -> ModelLaw:
        """The registry's law on ``model``, its ``Config`` from the parameters (``friction_eps`` the node's)."""
        law_type = resolve(self.entry.law)
        return law_type.from_config(model, self.arm, from_values(law_type.Config, self._values),
                                    self.params.friction_eps)

    def _after_cycle(self, now: float, q: Array, dq: Array) -> None:
        """Called by every cycle with a joint state, after its torque went out (``now`` [s,
        perf_counter] the cycle's start, ``q, q'`` the state it used): e.g. an action's verdict."""

    def _create_interfaces(self) -> None:
        """Create the controller's own subscriptions."""

    # -- the loop's parts, for the hosts, the subclasses and the tests ----------------------------

    law = property(lambda self: self.loop.law, doc="The control law.")
    guard = property(lambda self: self.loop.guard, doc="The safety guard.")
    model = property(lambda self: self.loop.model, doc="The model in use (with the payload).")
    payload = property(lambda self: self.loop.payload, doc="The payload the model holds.")
    external = property(lambda self: self.loop.observer, doc="The external-torque monitor (None: none).")
    floating = property(lambda self: self.loop.floating, doc="The collision reaction 'float' is active.")
    ramp_end = property(lambda self: self.loop.ramp_end, doc="[s, steady clock] end of the enable ramp.")
    enabled = property(lambda self: self.loop.enabled, doc="The guard is enabled.")
    reference_id = property(lambda self: self.loop.reference_id,
                            doc="Counts references, enables and disables: a reference is current while it holds.")
    last_refusal = property(lambda self: self.reports.last_refusal, doc="The last refusal's text.")
    statistics = property(lambda self: self.reports.statistics, doc="The control cycles' timing.")
    stalls = property(lambda self: self.cycle.stalls, doc="Cycles deferred because the node itself had stalled.")
    last_torque = property(lambda self: self.cycle.last_torque, doc="The last command (zero: nothing commanded).")

    @property
    def collisions(self) -> int:
        """Collisions detected since start."""
        return 0 if self.external is None else self.external.collisions

    def report_status(self, text: str, *, refused: bool = False, error: bool = False) -> None:
        """Log ``text`` and publish it on ``~/status`` (:meth:`~.controller_reports.ControllerReports.status`)."""
        self.reports.status(text, refused=refused, error=error)

    def timing_report(self) -> dict[str, float]:
        """The cycles' timing since the previous report (:meth:`.ControllerReports.timing_report`)."""
        return self.reports.timing_report(self.stalls)

    def refuse(self, what: str, reason: Any) -> None:
        self.loop.refuse_reference(what, reason, None)

    def measured_position(self) -> Array | None:
        """The newest measured position (None before the first joint state)."""
        return None if self.loop.state is None else self.loop.state[1]

    # -- new references and payloads, computed in the planning thread ---------------------------

    def plan(self, what: str, compute: Callable[[], Callable[[], str]], done: Done | None = None) -> None:
        """Compute a reference in the planning thread, so that the control loop keeps its rate
        (:meth:`~youbot_dynamics.control.loop.ControlLoop.plan_job`)."""
        job = self.loop.plan_job(what, compute, done)
        if job is not None:
            self._planner.submit(job)

    def _on_payload(self, msg: Inertia) -> None:
        """A payload at the tool: its model built and checked in the planning thread, installed between two cycles."""
        try:
            self._planner.submit(self.loop.prepare_payload, payload_from_message(msg, self.arm))
        except ValueError as exc:
            self.refuse("payload", exc)

    # -- joint states, enable / disable -----------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        arrival = time.perf_counter()
        try:
            q, dq, effort = self._reader.read(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignoring joint state: {exc}",
                                      throttle_duration_sec=self.params.log_throttle_period)
            return
        self.loop.take_state(arrival, stamp_seconds(msg.header.stamp), msg.header.stamp, q, dq, effort)
        if self._watchdog:
            self._timer.reset()
            if arrival - self.cycle.last_cycle >= 0.5 * self._period:
                self.cycle.run(self._publish_command)

    def _on_timer(self) -> None:
        # as a watchdog: no joint state for WATCHDOG_PERIODS periods (unless one just ran a cycle)
        if not self._watchdog or time.perf_counter() - self.cycle.last_cycle >= self._period:
            self.cycle.run(self._publish_command)

    def enable(self) -> tuple[bool, str]:
        """Hold the current position and ramp the torque in; ``(success, message)``."""
        return self.loop.enable(time.perf_counter(), f"no joint state received on {self.joint_states_topic}",
                                self.state_publishers.problem())

    def disable(self) -> str:
        return self.loop.disable()

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        if request.data:
            response.success, response.message = self.enable()
        else:
            response.success, response.message = True, self.disable()
        self.report_status(response.message if response.success else f"enable refused: {response.message}",
                           refused=not response.success)
        return response

    def _publish_command(self, tau: Array) -> None:
        """The torque of a cycle over DDS (:meth:`.ControllerCycle.run`), on ``command_topic``."""
        self._command_msg.data = tau.tolist()
        self.command_pub.publish(self._command_msg)

    # -- shutdown -------------------------------------------------------------------------------

    def destroy_node(self) -> None:
        if hasattr(self, "reports"):  # absent if the constructor failed early; the reports are flushed
            self._planner.shutdown(wait=True, cancel_futures=True)
            self.reports.shutdown()
        super().destroy_node()

    def stop_commanding(self) -> None:
        """Before shutdown, if the node is commanding: publish zero effort once, then hand the arm
        to the drives (``release_topic``)."""
        with self.cycle_lock:  # in the bus cycle its loop still runs
            if self.loop.stop():
                if self.host is None:
                    self._publish_command(self.loop.zero)
                else:
                    self.host.zero()
            self.loop.release()

    def _deliver_release(self, times: Array, q: Array, dq: Array, ddq: Array) -> None:
        """The loop's release to the drives: on ``release_topic`` (after :data:`RELEASE_DELAY`, so that
        the zero effort arrives first) or to the host's trajectory interface."""
        if self.host is None:
            time.sleep(RELEASE_DELAY)
            self.release_pub.publish(trajectory_message(self.arm.joint_names, times, q, dq, ddq))
        else:
            self.host.release(times, q, dq, ddq)


def run(node_class: Callable[[], ControllerNode], node_name: str, args: list[str] | None = None) -> int:
    """Entry point of a controller node: spin until Ctrl-C (SIGINT) or an external shutdown, then
    publish zero effort if commanding; 1 if start-up fails (the reason is logged)."""
    return run_node(node_name, node_class, (ArmDescriptionError, ModelFileError, ParameterException, ValueError,
                                            OSError), args, realtime=True, events_executor=True,
                    after_spin=ControllerNode.stop_commanding)
