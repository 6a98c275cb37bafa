"""The joint-torque controller node (``pd_gravity_controller``, ``computed_torque_controller``,
``float_controller``, any law of the registry): :class:`ControllerNode`, the ROS face
(parameters, topics, services, the cycle's timing, diagnostics) of the pure-Python
:class:`~youbot_dynamics.control.loop.ControlLoop`; :class:`ControllerHost` is the loop it runs in
inside the arm's process (:mod:`.hosted`).

Interface, behaviour and figures: doc/control.md (in the bus cycle: doc/driver.md, "Control inside
the bus cycle"); parameters: youbot_dynamics/nodes/parameters/controller_common.yaml (table in
doc/parameters.md).
"""
from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Inertia
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from ..arm.description import ArmDescription, ArmDescriptionError, load_arm
from ..compiled import cache_location, compilations, compile_kernels
from ..contract.controller_registry import ControllerEntry, controller, controller_of_node
from ..contract.parameter_schema import record, resolve
from ..control import FloatController, GuardState, SafetyConfig, SafetyGuard
from ..control.law_config import from_values
from ..control.laws import ModelLaw
from ..control.loop import ControlLoop, Done, JointSample, LoopOptions
from ..control.velocity import VelocityFromPositions
from ..dynamics.model import DynamicModel
from ..dynamics.consistency import check_model
from ..dynamics.paramfile import ModelFileError, load_model
from ..dynamics.payload import Payload, with_payload
from ..files.paths import config_path
from ..timing import LoopStatistics
from .common import background_worker, declare_parameters, run_node
from .controller_diagnostics import CycleTimes, controller_status
from .external_torque import ExternalTorqueMonitor, thresholds_from
from .messages import JointStateReader, stamp_seconds, trajectory_message

__all__ = ["ControllerHost", "ControllerNode", "run"]

QOS_DEPTH = 10
# Only the newest joint state matters: keep one, best effort (matches reliable publishers too).
JOINT_STATE_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
NOMINAL_MODEL = "youbot_nominal_model.yaml"
RELEASE_DELAY = 0.002  # [s] between the zero effort and the release trajectory (delivered in that order)
WATCHDOG_PERIODS = 1.5  # cycle_trigger 'joint_states': a cycle runs when no joint state came for this many periods
STATE_QUANTITIES = ("q_desired", "q", "error", "tau", "time")
PUBLISHERS_CHECK_PERIOD = 0.2  # [s] between two looks at the publishers of the joint-state topic

Array = np.ndarray


class ControllerHost(Protocol):
    """The loop a controller runs in, in the arm's process (doc/driver.md: "Control inside the bus cycle")."""

    #: cycles per second of the host's loop (the controller's ``rate`` must equal it)
    rate: float
    #: the loop, for the log ("youbot_driver's bus cycle")
    description: str
    #: where the release goes, for the log ("the driver's trajectory interface")
    release_target: str

    def release(self, times: Array, q: Array, dq: Array, ddq: Array) -> None:
        """Hand the arm to the drives' trajectory interface: waypoints ``times`` [s] from now;
        ``ValueError`` if refused."""

    def zero(self) -> None:
        """Zero effort from outside the loop (shutdown without a release)."""


@dataclass
class _Step:
    """One cycle's decision, between the torque and the rest of the cycle."""

    start: float  # [s, perf_counter] the cycle's start
    state: JointSample | None  # the joint state used
    tau: Array
    publish: bool  # the torque goes out (else nothing is commanded)
    header: float | None  # [s] the state's stamp (None: unstamped)
    end: float = 0.0  # [s, perf_counter] the torque went out


class ControllerNode(Node):
    """Base of the controller nodes, the ROS face of a :class:`~youbot_dynamics.control.loop.ControlLoop`
    (:attr:`loop`: guard, law, references, release, observer reaction, payload): parameters, topics,
    services, the cycle's timing and diagnostics, the planning and reporting threads; see
    doc/control.md. Parameters: the schema named like the node (``parameters/<node_name>.yaml``).
    It runs the registry's law of its node (:meth:`_create_law`); a controller with topics of its own
    subclasses it with :meth:`_create_interfaces` (and :meth:`_after_cycle` if it needs it)."""

    def __init__(self, node_name: str, host: ControllerHost | None = None, **kwargs: Any) -> None:
        # set before Node.__init__: it creates the parameter services (create_service, locked when hosted)
        self.host = host
        #: held by every cycle and, in the bus cycle (``host``), by every callback (doc/driver.md)
        self.cycle_lock = threading.Lock()
        self._step: _Step | None = None  # hosted: the cycle between host_command and host_after_outputs
        super().__init__(node_name, **kwargs)
        #: the registry's entry of this controller (its law)
        self.entry: ControllerEntry = controller_of_node(node_name)
        values = declare_parameters(self, node_name)  # its own, its law's Config, controller_common.yaml
        #: the parameters, read once at start-up (fields of the schema's record)
        self.params = p = record(node_name, values)
        self._law_values = values
        self.arm: ArmDescription = load_arm(p.arm_description or None)
        self._warm_up()
        model_file = p.model_file or str(config_path(NOMINAL_MODEL))
        # checked against the arm by the control law (ModelLaw): a bad file fails start-up with the reason
        self._model_without_payload: DynamicModel = load_model(model_file, self.arm)  # ~/payload sets one on it
        self.loop: ControlLoop | None = None  # below, once its parts exist
        self.base_frame: str = p.base_frame
        self.rate = float(p.rate)
        if host is not None and abs(self.rate - host.rate) > 1e-9 * host.rate:
            raise ValueError(f"rate ({self.rate:g} Hz) must be the rate of the loop the controller runs in "
                             f"({host.rate:g} Hz)")
        self.cycle_trigger: str = p.cycle_trigger
        self._period = 1.0 / self.rate
        self._watchdog = self.cycle_trigger == 'joint_states'
        if not 1.0 / self.rate < p.state_timeout:
            raise ValueError(f"state_timeout ({p.state_timeout} s) must exceed the control period "
                             f"1 / rate = {1.0 / self.rate:g} s")
        self._throttle = float(p.log_throttle_period)
        config = SafetyConfig(state_timeout=p.state_timeout,
                              state_loss_timeout=p.state_loss_timeout,
                              fault_behaviour=p.fault_behaviour,
                              torque_limit=p.torque_limit,
                              limit_margin=p.limit_margin,
                              limit_damping=p.limit_damping, ramp_time=p.ramp_time,
                              hold_bandwidth=p.hold_bandwidth)
        law = self._create_law()
        self._enable_pending = bool(p.enabled_on_start)
        self._decimation = int(p.state_publish_decimation)
        n = self.arm.n_joints
        self._reader = JointStateReader(self.arm.joint_names, allow_nonfinite=True)
        velocity = (VelocityFromPositions(n, p.velocity_filter_time, config.state_timeout)
                    if p.velocity_source == 'positions' else None)
        # in the bus cycle the states come from the host, not from the topic: its publishers do not matter
        self._publishers_max = int(p.joint_state_publishers_max) if host is None else 0
        self._publishers_due = 0.0
        self._cycle_count = 0
        self._last_cycle = time.perf_counter()
        self._stall_gap = config.state_timeout
        self._deferred = False
        self.stalls = 0  # cycles deferred because the node itself had stalled (see _cycle)
        self.last_torque = np.zeros(n)  # the last published command (zero when nothing is commanded)
        self.last_refusal: str | None = None
        self.last_status: str = ""
        # references computed off the control thread (IK, lines, limit checks: 1-40 ms each)
        self._planner = background_worker(f"{node_name}_planner")
        self._reporter = background_worker(f"{node_name}_status")  # log lines and ~/status

        # timing: per-cycle latency and compute time, swapped out by timing_report()
        self.statistics = LoopStatistics(1.0 / self.rate)
        self._times = CycleTimes()
        self._wall_offset = time.time() - time.perf_counter()  # wall clock = steady clock + this
        self.last_report: dict[str, float] = {}

        self._command_msg = Float64MultiArray()
        self._state_msg = Float64MultiArray(layout=MultiArrayLayout(dim=[
            MultiArrayDimension(label="quantity:" + "|".join(STATE_QUANTITIES), size=len(STATE_QUANTITIES),
                                stride=len(STATE_QUANTITIES) * n),
            MultiArrayDimension(label="joint:" + "|".join(self.arm.joint_names), size=n, stride=n)]))
        self.joint_states_topic: str = p.joint_states_topic
        self.command_topic: str = p.command_topic
        release_topic = p.release_topic
        options = LoopOptions(releases=bool(release_topic), bumpless=bool(p.bumpless_enable),
                              collision_reaction=p.collision_reaction,
                              observe_command=p.observer_torque == 'command')
        float_law, observer = self._create_observer(model_file, options.collision_reaction)
        model = self._model_without_payload
        self.loop = ControlLoop(self.arm, model, law, SafetyGuard(self.arm, model, config), options,
                                report=lambda text, refused, error: self.report_status(text, refused=refused,
                                                                                       error=error),
                                release=self._deliver_release, float_law=float_law, observer=observer,
                                velocity=velocity, after_cycle=self._after_cycle,
                                release_target=f"on {release_topic}" if host is None else host.release_target)
        self.state_pub = self.create_publisher(Float64MultiArray, '~/state', QOS_DEPTH)
        self.status_pub = self.create_publisher(String, '~/status', QOS_DEPTH)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', QOS_DEPTH)
        if host is None:
            self.command_pub = self.create_publisher(Float64MultiArray, self.command_topic, QOS_DEPTH)
            self.release_pub = (self.create_publisher(JointTrajectory, release_topic, QOS_DEPTH) if release_topic
                                else None)
            self._state_sub = self.create_subscription(JointState, self.joint_states_topic, self._on_joint_state,
                                                       JOINT_STATE_QOS)
        self.create_service(SetBool, '~/enable', self._on_enable)
        self.create_subscription(Inertia, '~/payload', self._on_payload, QOS_DEPTH)
        self._create_interfaces()
        if host is None:
            steady = Clock(clock_type=ClockType.STEADY_TIME)
            # with cycle_trigger 'joint_states' the timer is a watchdog, restarted by every joint state:
            # it only fires (and wakes the executor) when a state is half a period late
            self._timer = self.create_timer(self._period * (WATCHDOG_PERIODS if self._watchdog else 1.0),
                                            self._on_timer, clock=steady)
        # the timing report is due-checked right after a cycle's torque and built and published by
        # the reporting thread (a timer of its own could fire just when a state arrives)
        self._diagnostics_period = float(p.diagnostics_period)
        self._diagnostics_due = time.perf_counter() + self._diagnostics_period
        wiring = (f"joint states on {self.joint_states_topic}, torques on {self.command_topic}" if host is None
                  else f"in {host.description}")
        self.get_logger().info(
            f"{self.law.LABEL} for '{self.arm.name}' with model {model_file}: {self.rate:g} Hz, {wiring}; "
            f"Kp = {np.round(self.law.kp, 4).tolist()}, "
            f"Kd = {np.round(self.law.kd, 4).tolist()}, torque limit = {np.round(self.guard.torque_limit, 3).tolist()}"
            f" N m; {'enabling at the first joint state' if self._enable_pending else 'disabled (call ~/enable)'}")

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

    # -- hooks of the concrete controllers ------------------------------------------------------

    def _create_law(self) -> ModelLaw:
        """The registry's law, from its ``Config`` read off the parameters (``friction_eps`` the node's)."""
        law_type = resolve(self.entry.law)
        return law_type.from_config(self.model, self.arm, from_values(law_type.Config, self._law_values),
                                    self.params.friction_eps)

    def desired_position(self, now: float) -> Array | None:
        """The desired position at ``now`` (for ``~/state``), None without a reference."""
        return self.law.desired_position(now)

    def _after_cycle(self, now: float, q: Array, dq: Array) -> None:
        """Called by every cycle with a joint state, after its torque went out (``now`` [s,
        perf_counter] the cycle's start, ``q, q'`` the state it used): e.g. an action's verdict."""

    def _create_interfaces(self) -> None:
        """Create the controller's own subscriptions."""

    def _warm_up(self) -> None:
        """Make the compiled kernels ready before anything uses them (:func:`~..compiled.compile_kernels`):
        loaded from numba's cache in well under a second (a debug line), compiled in 6-25 s on the first
        start after an install (:func:`~..compiled.compilations`: then said in the log, with how to do it
        ahead of time; issue 35: said on later starts too when loading the cache took over 2 s)."""
        with compilations() as compiled:
            seconds = sum(compile_kernels(self.arm, batches=False).values())
        if compiled:
            self.get_logger().info(f"compiled the model kernels in {seconds:.1f} s (a first start; cached in "
                                   f"{cache_location()} for the next ones; `youbot-dynamics compile` does it ahead "
                                   "of time, e.g. after colcon build)")
        else:
            self.get_logger().debug(f"model kernels loaded from numba's cache in {seconds:.1f} s")

    # -- parameters -----------------------------------------------------------------------------

    def _create_observer(self, model_file: str, collision_reaction: str) -> tuple[Any, Any]:
        """``(float law, observer)``: the law of the collision reaction 'float' (or None), and the
        external-torque estimate with collision detection (or None: ``observer_gain`` 0)."""
        p = self.params
        float_law = (FloatController(self._model_without_payload, self.arm, friction_eps=p.friction_eps)
                     if collision_reaction == 'float' else None)
        gain = float(p.observer_gain)
        if gain == 0.0:
            if collision_reaction != 'none':
                raise ValueError("collision_reaction needs the observer: observer_gain must be positive")
            return float_law, None
        thresholds = thresholds_from(p.collision_thresholds, p.collision_factor,
                                     model_file, self.arm.n_joints)
        if thresholds is None and collision_reaction != 'none':
            raise ValueError(f"collision_reaction '{collision_reaction}' needs collision_thresholds: the model "
                             f"file {model_file} has no joint_rms_errors_nm to derive them from")
        return float_law, ExternalTorqueMonitor(self, self.arm, self._model_without_payload, gain,
                                                p.friction_eps, p.state_timeout, thresholds)

    # -- the loop's parts, for the hosts, the subclasses and the tests ----------------------------

    @property
    def law(self) -> Any:
        return self.loop.law

    @property
    def guard(self) -> SafetyGuard:
        return self.loop.guard

    @property
    def model(self) -> DynamicModel:
        """The model in use (with the payload); the file's until the loop exists."""
        return self._model_without_payload if self.loop is None else self.loop.model

    @property
    def payload(self) -> Payload:
        return self.loop.payload

    @property
    def external(self) -> ExternalTorqueMonitor | None:
        return self.loop.observer

    @property
    def floating(self) -> bool:
        """The collision reaction 'float' is active (until ~/enable)."""
        return self.loop.floating

    @property
    def ramp_end(self) -> float:
        """[s, steady clock] end of the current enable ramp."""
        return self.loop.ramp_end

    @property
    def collisions(self) -> int:
        """Collisions detected since start."""
        return 0 if self.external is None else self.external.collisions

    # -- helpers for the subclasses -------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.guard.state is GuardState.ENABLED

    def report_status(self, text: str, *, refused: bool = False, error: bool = False) -> None:
        """Log ``text`` and publish it on ``~/status``, in order, from the reporting thread (a log
        line costs the control thread 0.3-0.6 ms); a refusal is kept in :attr:`last_refusal` at once."""
        if refused:
            self.last_refusal = text
        self.last_status = text
        self._reporter.submit(self._emit_status, text, refused, error)

    def _emit_status(self, text: str, refused: bool, error: bool) -> None:
        logger = self.get_logger()  # one call site per severity (rclpy keys its log filters by caller)
        if error:
            logger.error(text)
        elif refused:
            logger.warning(text)
        else:
            logger.info(text)
        self.status_pub.publish(String(data=text))

    def report(self, job: Callable[..., None], *args: Any) -> None:
        """Run ``job(*args)`` in the reporting thread, in order with the status lines (publishing
        from the control thread costs it 0.1-0.5 ms)."""
        self._reporter.submit(job, *args)

    def refuse(self, what: str, reason: Any) -> None:
        self.loop.refuse_reference(what, reason, None)

    def check_frame(self, frame_id: str) -> None:
        """``ValueError`` unless ``frame_id`` is empty or :attr:`base_frame`."""
        if frame_id and frame_id != self.base_frame:
            raise ValueError(f"frame '{frame_id}' is not the base frame '{self.base_frame}' (no tf2 here)")

    def measured_position(self) -> Array | None:
        """The newest measured position (None before the first joint state)."""
        state = self.loop.state
        return None if state is None else state[1]

    # -- new references -------------------------------------------------------------------------

    def apply(self, what: str, install: Callable[[], str], done: Done | None = None) -> None:
        """Install a new reference now (control thread): :meth:`~youbot_dynamics.control.loop.ControlLoop.apply`."""
        self.loop.apply(what, install, done)

    def refused_unless_enabled(self, what: str, done: Done | None = None) -> bool:
        """Refuse the reference ``what`` (and tell ``done``) unless the controller is enabled; whether it did."""
        return self.loop.refused_unless_enabled(what, done)

    @property
    def reference_id(self) -> int:
        """Counts the references installed, enables and disables: a reference is still the one
        installed as long as this has not changed."""
        return self.loop.reference_id

    def plan(self, what: str, compute: Callable[[], Callable[[], str]], done: Done | None = None) -> None:
        """Compute a reference in the planning thread, so that the control loop keeps its rate:
        ``compute()`` (no model, no law: it runs concurrently with the loop) returns the
        ``install`` function of :meth:`apply`, which the control thread runs at its next cycle, or
        raises ``ValueError`` (refused with the reason). A plan is also refused if the controller
        was disabled or got another reference while it was computed (resend it then). ``done`` as
        in :meth:`apply`, from the control thread."""
        if self.refused_unless_enabled(what, done):
            return
        reference_id, planned = self.loop.reference_id, self.loop.planned

        def job() -> None:
            try:
                planned.put((what, reference_id, compute(), None, done))
            except Exception as exc:  # noqa: BLE001 - ValueError: refused; anything else: reported too
                planned.put((what, reference_id, None, exc, done))

        self._planner.submit(job)

    def watch_arrival(self, goal: Array, start: float, duration: float) -> None:
        """From an ``install`` function of :meth:`apply`: report whether the arm gets to ``goal``
        (:meth:`~youbot_dynamics.control.loop.ControlLoop.watch_arrival`)."""
        self.loop.watch_arrival(goal, start, duration)

    # -- joint states ---------------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        arrival = time.perf_counter()
        try:
            q, dq, effort = self._reader.read(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignoring joint state: {exc}", throttle_duration_sec=self._throttle)
            return
        self._take_state(arrival, stamp_seconds(msg.header.stamp), msg.header.stamp, q, dq, effort)
        if self._watchdog:
            self._timer.reset()
            if arrival - self._last_cycle >= 0.5 * self._period:
                self._cycle()

    def _take_state(self, arrival: float, stamp: float, header_stamp: Time | None, q: Array, dq: Array,
                    effort: Array | None) -> None:
        """A new joint state for the loop (:meth:`~youbot_dynamics.control.loop.ControlLoop.take_state`)."""
        self.loop.take_state(arrival, stamp, header_stamp, q, dq, effort)

    def _on_timer(self) -> None:
        # as a watchdog: no joint state for WATCHDOG_PERIODS periods (unless one just ran a cycle)
        if not self._watchdog or time.perf_counter() - self._last_cycle >= self._period:
            self._cycle()

    # -- enable / disable -----------------------------------------------------------------------

    def enable(self) -> tuple[bool, str]:
        """Hold the current position and ramp the torque in; ``(success, message)``."""
        return self.loop.enable(time.perf_counter(), f"no joint state received on {self.joint_states_topic}",
                                self.joint_state_publishers_problem())

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

    # -- the control cycle ----------------------------------------------------------------------

    def _cycle(self) -> None:
        """One control cycle over DDS: the torque on ``command_topic``, then the rest of the cycle."""
        with self.cycle_lock:
            step = self._decide(time.perf_counter())
            if step is None:
                return
            if step.publish:
                self._command_msg.data = step.tau.tolist()
                self.command_pub.publish(self._command_msg)
            self._let_go(step)
            step.end = time.perf_counter()
            self._finish(step)

    def host_command(self, arrival: float, stamp: float | None, q: Array | None, dq: Array | None,
                     effort: Array | None) -> Array | None:
        """In the bus cycle (doc/driver.md): the state the host just read (``arrival`` its read on
        the steady clock, ``stamp`` [s] its stamp as the host publishes it; ``stamp`` None: no fresh
        state this cycle, ``q``, ``dq``, ``effort`` are ignored) and a cycle on it; the torque for this
        cycle's outputs, or None (nothing commanded). :meth:`host_after_outputs` must follow."""
        with self.cycle_lock:
            if stamp is not None:
                self._take_state(arrival, stamp, None, q, dq, effort)
            step = self._decide(time.perf_counter())
            if step is None:
                return None
            released = self._let_go(step)
            step.end = time.perf_counter()
            self._step = step
            # a release replaces the zero effort at once (doc/driver.md)
            return step.tau if step.publish and not released else None

    def host_after_outputs(self) -> None:
        """In the bus cycle, once the host's outputs are decided: the rest of the cycle."""
        with self.cycle_lock:
            step, self._step = self._step, None
            if step is not None:
                self._finish(step)

    def _decide(self, start: float) -> _Step | None:
        """The cycle up to its torque (None: a stalled node's cycle, which commands nothing)."""
        self.statistics.tick(start)
        gap, self._last_cycle = start - self._last_cycle, start
        if gap > self._stall_gap and not self._deferred and self.guard.state is not GuardState.DISABLED:
            # This node itself did not run for longer than state_timeout: the joint states that
            # arrived meanwhile are still queued (the executor runs timers before subscriptions).
            # Let them in and judge the state at the next cycle (nothing published in this one).
            self._deferred = True
            self.stalls += 1
            return None
        self._deferred = False
        loop = self.loop
        state = loop.state
        if self._enable_pending and state is not None:
            self._enable_pending = False
            ok, message = self.enable()
            self.report_status(message if ok else f"enable at start refused: {message}", refused=not ok)
        tau, publish = loop.command(start)
        coasted = loop.coast_ended(start)
        if coasted is not None:
            self._reporter.submit(self._log_coast, coasted)
        return _Step(start, state, tau, publish, loop.stamp if loop.stamped else None)

    def _let_go(self, step: _Step) -> bool:
        """Right after a cycle's torque went out: the release if it let go of the arm
        (:meth:`~youbot_dynamics.control.loop.ControlLoop.let_go`); whether the arm was handed to the drives."""
        self.last_torque = step.tau
        return self.loop.let_go(step.tau)

    def _finish(self, step: _Step) -> None:
        """The cycle after its torque: timing, observer, fault report, ~/state, reports."""
        start, state, tau, publish, end = step.start, step.state, step.tau, step.publish, step.end
        stamp = None if state is None else state[0]
        if publish and stamp is not None:  # the age: of the state by its stamp (wall clock) when its torque went out
            self._times.add(end - stamp, end - start,
                            None if step.header is None else end + self._wall_offset - step.header)
        self.loop.after(start, state, tau, publish)  # observer, fault report, verdicts
        self._cycle_count += 1
        if self._decimation and self._cycle_count % self._decimation == 0:
            self._publish_state(start if stamp is None else stamp, None if state is None else state[1], tau)
        if self._diagnostics_period > 0.0 and end >= self._diagnostics_due:
            self._diagnostics_due = max(self._diagnostics_due + self._diagnostics_period, end)
            self._reporter.submit(self._publish_diagnostics)  # ~1 ms of work: off the control thread
        if self._publishers_max and end >= self._publishers_due:
            # counting takes ~5 us (median; p99 60 us): on this thread, no hand-over to a helper
            self._publishers_due = end + PUBLISHERS_CHECK_PERIOD
            if self.count_publishers(self._state_sub.topic_name) > self._publishers_max:
                problem = self.joint_state_publishers_problem()  # the names: ~60 us, only when too many
                if problem is not None:
                    self.guard.fault(problem, trust_states=False)  # acted on from the next cycle

    def _on_payload(self, msg: Inertia) -> None:
        """A payload at the tool (mass, centre of mass in the tool frame, inertia about it): the model
        with it is built and checked in the planning thread, installed between two cycles."""
        inertia = [[msg.ixx, msg.ixy, msg.ixz], [msg.ixy, msg.iyy, msg.iyz], [msg.ixz, msg.iyz, msg.izz]]
        try:
            payload = Payload.of(msg.m, [msg.com.x, msg.com.y, msg.com.z], inertia, arm=self.arm)
        except ValueError as exc:
            self.refuse("payload", exc)
            return
        base, arm, updates = self._model_without_payload, self.arm, self.loop.payload_updates

        def job() -> None:
            try:
                model = with_payload(base, payload, arm.tool)
                check_model(model, arm)
            except ValueError as exc:  # ModelConsistencyError among them
                self.refuse("payload", exc)
                return
            updates.put((payload, model))

        self._planner.submit(job)

    def _log_coast(self, duration: float) -> None:
        self.get_logger().warning(
            f"joint states late: no joint state for about {1e3 * (duration + self.guard.config.state_timeout):.0f} "
            f"ms, coasted on gravity at the last good state for {1e3 * duration:.0f} ms (state_timeout "
            f"{1e3 * self.guard.config.state_timeout:.0f} ms), then the law again; "
            f"{self.guard.coast_cycles} coasted cycles so far", throttle_duration_sec=self._throttle)

    # -- publishers of joint states -------------------------------------------------------------

    def joint_state_publishers_problem(self) -> str | None:
        """Why the publishers of ``joint_states_topic`` on the ROS graph are more than
        ``joint_state_publishers_max`` (naming them), or ``None``."""
        if not self._publishers_max:
            return None
        topic = self._state_sub.topic_name
        infos = self.get_publishers_info_by_topic(topic)
        if len(infos) <= self._publishers_max:
            return None
        names = ", ".join(sorted(f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in infos))
        return (f"{len(infos)} publishers of {topic} ({names}), at most {self._publishers_max} expected: another "
                f"simulator or driver in this ROS domain? Its states would be taken for the arm's "
                f"(joint_state_publishers_max)")

    def _publish_state(self, now: float, q: Array | None, tau: Array) -> None:
        n = self.arm.n_joints
        desired = self.desired_position(now)
        q_d = np.full(n, np.nan) if desired is None else desired
        q_m = np.full(n, np.nan) if q is None else q
        self._state_msg.data = np.concatenate([q_d, q_m, q_d - q_m, tau, np.full(n, now)]).tolist()
        self.state_pub.publish(self._state_msg)

    # -- timing and diagnostics -----------------------------------------------------------------

    def timing_report(self) -> dict[str, float]:
        """Rate, jitter and missed cycles of the control timer, latency (joint state arrival to
        torque publication), state age at the torque's publication (doc/control.md) and compute
        time per cycle, since the previous report."""
        report = self.statistics.report()
        report.update({
            "missed_cycles": round(report["missed_fraction"] * report["cycles"]),
            "total_cycles": float(self.statistics.total_cycles),
            "total_missed": float(self.statistics.total_missed),
            "stalls": float(self.stalls),
            "coast_cycles": float(self.guard.coast_cycles),
            **self._times.report(),
        })
        return report

    def _publish_diagnostics(self) -> None:
        report = self.timing_report()
        self.last_report = report
        status = controller_status(
            f"{self.get_name()}: {self.law.LABEL}", self.arm.name, report, self.guard.state, self.guard.fault_reason,
            self.arm.joint_names, self.guard.saturated,
            {"last_refusal": self.last_refusal or "", "collisions": str(self.collisions),
             "floating": str(self.floating).lower()})
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics_pub.publish(array)

    # -- shutdown -------------------------------------------------------------------------------

    def destroy_node(self) -> None:
        for worker, cancel in ((getattr(self, "_planner", None), True), (getattr(self, "_reporter", None), False)):
            if worker is not None:  # absent if the constructor failed early; reports are flushed
                worker.shutdown(wait=True, cancel_futures=cancel)
        super().destroy_node()

    def stop_commanding(self) -> None:
        """Before shutdown, if the node is commanding: publish zero effort once, then hand the arm
        to the drives (``release_topic``)."""
        with self.cycle_lock:  # in the bus cycle its loop still runs
            if self.loop.stop():
                if self.host is None:
                    self._command_msg.data = self.loop.zero.tolist()
                    self.command_pub.publish(self._command_msg)
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


@functools.lru_cache(maxsize=None)
def law_node_class(entry: ControllerEntry) -> type[ControllerNode]:
    """The node class of a registry controller without one of its own: :class:`ControllerNode` named
    ``entry.node``, running ``entry.law``."""

    def __init__(self: ControllerNode, **kwargs: Any) -> None:
        ControllerNode.__init__(self, entry.node, **kwargs)

    title = "".join(part.title() for part in entry.node.split("_"))
    return type(f"{title}Node", (ControllerNode,), {"__init__": __init__, "__doc__": f"{entry.summary} ({entry.law})."})


def __getattr__(name: str) -> Callable[[list[str] | None], int]:
    """``main_<controller>``: the entry point of a registry controller without a node class of its own
    (``setup.py``'s console script; PEP 562)."""
    if name.startswith("main_"):
        try:
            entry = controller(name[len("main_"):])
        except ValueError as exc:
            raise AttributeError(str(exc)) from None
        return functools.partial(run, law_node_class(entry), entry.node)
    raise AttributeError(f"module {__name__} has no attribute {name}")
