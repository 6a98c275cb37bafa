"""ROS 2 node: the identification experiment on the arm (simulated, Gazebo or real), end to end.

Executable ``identification_node``: a thin shell (parameters, topics, timers, the safety wiring) around
:class:`youbot_dynamics.identification.experiment.session.ExcitationSession`, the recorder
:class:`~youbot_dynamics.identification.experiment.recording.JointStateRecorder` and
:mod:`youbot_dynamics.identification.estimation.pipeline` (as ``youbot-dynamics identify``).

The same experiment is the action ``~/identify`` (:mod:`.identify_action`). Interface, behaviour
and figures: doc/identification.md; parameters:
youbot_dynamics/nodes/parameters/identification_node.yaml (table in doc/parameters.md).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Inertia
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from ..arm.description import ArmDescriptionError, load_arm
from ..contract.parameter_schema import dataclass_of
from ..control.laws import PDFeedforward
from ..files.dataio import DataFileError
from ..dynamics.model import DynamicModel
from ..dynamics.paramfile import ModelFileError
from ..identification.estimation.calibration import Calibration
from ..identification.estimation.calibration import summary_lines as calibration_lines
from ..identification.estimation.pipeline import reference_models, summary_lines
from ..identification.experiment.analysis import experiment_lines
from ..identification.experiment.effort import EffortLoop
from ..identification.experiment.jobs import (ExcitationPlan, ModelToUpdate, Settings, calibration_summary,
                                              identification_summary, identify_pilot, identify_recording,
                                              new_run_directory, payload_in_tool, plan_excitation,
                                              recalibrate_recording)
from ..identification.experiment.recording import JointStateRecorder, RecordingThread
from ..identification.experiment.session import (ExcitationSession, ExperimentPhase, JointSample, SessionConfig,
                                                 SessionRefused, TooFarFromStart)
from ..identification.io.bagio import typestore
from ..identification.io.dataset import IdentificationError
from ..identification.io.trajfile import load_trajectory
from ..files.paths import config_path
from .common import (background_priority, background_worker, declare_parameters, freeze_heap, log_outcome,
                     run_node)
from .experiment_commands import ExperimentCommands
from .experiment_progress import progress_status
from .identify_action import Identify, IdentifyActionHost
from .messages import JointStateReader, move_hint

__all__ = ["IdentificationNode", "main"]

NODE_NAME = "identification_node"
QOS_DEPTH = 10
INPUT_CHECK_PERIOD = 2.0  # [s, wall clock] how often a missing /clock or joint state is looked for
NO_STATE_WARNING = 5.0  # [s, wall clock] without any joint state before the node warns
STATE_QOS_DEPTH = 1000  # 1 kHz joint states: room for 1 s of scheduling hiccups (no gap in the recording)
# [s] an experiment begins once the newest joint state handled was measured at most this long ago: a
# start request takes 0.2-0.5 s to prepare (the model, the recorder's first bag) while joint states
# queue behind it; begun on the last state handled before it, the first cycles found the states
# stale (0.52 s) or the commands late (0.79 s) and aborted (the demo's recalibration, stop 37)
START_STATE_LAG = 0.05
DEFAULT_EXCITATION = "excitation_default.yaml"
DEFAULT_VALIDATION = "excitation_validation.yaml"  # the validation trajectory: the held-out motion


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "unknown"


class IdentificationNode(Node):
    """The identification experiment; see doc/identification.md."""

    def __init__(self, **kwargs: Any) -> None:
        # the recording, written on a thread of its own (its disk work must not hold the executor); set first:
        # destroy_node() may run on a half-built node
        self.recorder: RecordingThread | None = None
        self.session: ExcitationSession | None = None
        self.identify_action: IdentifyActionHost | None = None
        self._worker = background_worker("identify")
        super().__init__(NODE_NAME, **kwargs)
        p = declare_parameters(self, NODE_NAME)
        self.p = p
        self.arm = load_arm(p['arm_description'] or None)
        self.validation_file = Path(p['validation_file'] or config_path(DEFAULT_VALIDATION)).expanduser()
        self.validation = (load_trajectory(self.validation_file, self.arm.joint_names, self.arm).trajectory
                           if p['validation_repeats'] > 0 else None)
        # the session's settings are the parameters of their names (the others keep SessionConfig's defaults)
        self.config = dataclass_of(SessionConfig, p)
        self.settings = dataclass_of(Settings, p)
        self.calibration_config = dataclasses.replace(self.config, periods=int(p['calibration_periods']),
                                                      validation_periods=0, validation_repeats=0)
        # effort: a pilot pass, the excitation slowed down, identified for the feedforward (effort.py)
        self.pilot_config = dataclasses.replace(self.config, periods=1, validation_periods=0, validation_repeats=0)
        self._pilot = False  # the running experiment is the pilot pass
        self.interface = p['command_interface']
        # the parameters' excitation, checked now, not at ~/start; an identify goal may name another (plan())
        self.default_plan = self.plan(p['excitation_file'], 0)
        self.running_plan = self.default_plan  # what the identification started last drives
        nominal, _, baseline_beta, self.baseline_label = reference_models(self.arm, p['structure'],
                                                                          p['nominal_model'] or None)
        self.nominal_feedforward = DynamicModel(nominal.chain, nominal.base, baseline_beta)
        controller = (EffortLoop(PDFeedforward(self.arm, self.nominal_feedforward, p['effort_kp'], p['effort_kd']),
                                 p['effort_ki'], p['effort_integral_limit']) if self.interface == 'effort' else None)
        self.output_root = Path(p['output_directory']).expanduser()
        self.run_directory: Path | None = None
        self.result_summary: dict[str, Any] = {}
        self.last_model: Path | None = None  # the model file this node wrote last (what ~/recalibrate updates)
        self._calibrating: ModelToUpdate | None = None  # what the running experiment recalibrates (None: identifies)
        self._starting = False  # an experiment was prepared by start(): a cycle begins it (_begin)
        self._start_requested = 0.0  # [s] when it was
        self._holding: ExcitationSession | None = None  # the session before it, commanding until then
        self._identification: concurrent.futures.Future | None = None
        self._latest: JointSample | None = None
        self._reader = JointStateReader(self.arm.joint_names, require_velocity=False)
        self._next_log = 0.0  # node time of the next progress line in the log
        self._auto_start = bool(p['start_on_launch'])
        typestore()  # import rosbags now: 0.15 s at ~/start would stall the node beyond state_timeout

        self.create_subscription(JointState, p['joint_states_topic'], self._on_joint_state, STATE_QOS_DEPTH)
        self.commands = ExperimentCommands(self, self.arm, p, controller, self.config.stream_period, self._fresh_sample,
                                           lambda: self._latest)
        self.progress_pub = self.create_publisher(DiagnosticStatus, '~/progress', QOS_DEPTH)
        self.payload_pub = self.create_publisher(Inertia, '~/payload_estimate', QOS_DEPTH)
        self.create_service(Trigger, '~/start', self._on_start)
        self.create_service(Trigger, '~/abort', self._on_abort)
        self.create_service(Trigger, '~/recalibrate', self._on_recalibrate)
        if Identify is not None:
            self.identify_action = IdentifyActionHost(self)
        else:
            self.get_logger().warning("youbot_dynamics_interfaces is not installed: no ~/identify action (make setup "
                                      "or colcon build builds it; doc/usage.md); ~/start and ~/abort serve")
        self.create_timer(1.0 / p['command_rate'], self._cycle)
        self.create_timer(p['flush_period'], self._flush)
        self.create_timer(p['progress_period'], self._publish_progress)
        self._created = time.monotonic()
        self.create_timer(INPUT_CHECK_PERIOD, self._watch_inputs, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"ready: excitation {self.default_plan.path} ({self.config.periods} x "
            f"{self.default_plan.trajectory.duration:g} s, "
            f"condition number {_number(self.default_plan.design.get('condition_number'))}, "
            f"{self.config.validation_periods} left for the same-motion check), "
            + (f"held-out motion {self.validation_file} ({self.config.validation_repeats} x "
               f"{self.validation.duration:g} s)" if self.validation is not None else "no held-out motion")
            + f", command interface '{self.interface}'"
            + (f" ({self.config.stream_horizon:g} s horizons every {self.config.stream_period:g} s: without them the "
               f"arm stops within {self.default_plan.stop_time_bound:.2f} s)" if self.interface == 'trajectory' else "")
            + f", output in {self.output_root}; "
            + ("starting at the first joint state" if self._auto_start else "call ~/start to begin"))

    def plan(self, excitation_file: str, periods: int) -> ExcitationPlan:
        """The identification of ``excitation_file`` (empty: the parameter ``excitation_file``, else the
        package's default) for ``periods`` periods (0: the parameter ``periods``), checked as ``~/start``
        would run it with the node's validation trajectory and limits; ``ValueError`` (a
        ``TrajectoryFileError`` for the file) with the reason otherwise."""
        p = self.p
        path = Path(excitation_file or p['excitation_file'] or config_path(DEFAULT_EXCITATION)).expanduser()
        config = dataclasses.replace(self.config, periods=int(periods)) if periods else self.config
        slowdown = p['effort_pilot_slowdown'] if self.interface == 'effort' else 0.0
        return plan_excitation(self.arm, path, config, self.validation, self.pilot_config, slowdown)

    @property
    def starting(self) -> bool:
        """An experiment was prepared by :meth:`start` and has not begun yet."""
        return self._starting

    # -- clock and joint states -----------------------------------------------------------------

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _clock_missing(self) -> bool:
        """``use_sim_time`` and no ``/clock`` yet: the node's time reads 0 and does not run."""
        return self.get_clock().ros_time_is_active and self.get_clock().now().nanoseconds == 0

    def _watch_inputs(self) -> None:
        """Say what the node waits for when an input it needs never came (on the wall clock: the
        node's own timers do not fire without ``/clock``)."""
        waited = time.monotonic() - self._created
        if self._clock_missing():
            self.get_logger().warning(
                f"use_sim_time is true and no /clock has arrived in {waited:.0f} s: this node's time does not run "
                f"(no timers, joint states ignored, ~/start refused); start the simulator with publish_clock:=true "
                f"or run this node with use_sim_time:=false", throttle_duration_sec=10.0)
        elif self._latest is None and waited > NO_STATE_WARNING:
            self.get_logger().warning(
                f"no joint state on {self.p['joint_states_topic']} in {waited:.0f} s: is the driver or the simulator "
                f"running, on this ROS_DOMAIN_ID? (ros2 topic hz {self.p['joint_states_topic']})",
                throttle_duration_sec=10.0)

    def _on_joint_state(self, msg: JointState) -> None:
        receive_ns = self.get_clock().now().nanoseconds
        if receive_ns == 0 and self.get_clock().ros_time_is_active:
            # no /clock yet: a receive time of 0 would make this state look seconds old once the clock
            # jumps to the simulated time (measured: ~/start refused "arrived 2.2 s ago" right after launch)
            return
        try:
            q, dq, effort = self._reader.read(msg)
            if dq is None or effort is None:
                raise ValueError("the joint state lacks velocities or efforts of the arm joints")
            stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            if self.recorder is not None:
                self.recorder.write(stamp_ns, msg.name, msg.position, msg.velocity, msg.effort, receive_ns=receive_ns)
        except OSError as exc:  # disk full, folder removed: stop the experiment, keep what is on disk
            self._recording_failed(exc)
            return
        except ValueError as exc:  # malformed message (IdentificationError is a ValueError too)
            self.get_logger().warning(f"joint state ignored: {exc}", throttle_duration_sec=1.0)
            return
        self._latest = JointSample(receive_ns * 1e-9, (stamp_ns or receive_ns) * 1e-9, q, dq)

    # -- services -------------------------------------------------------------------------------

    def _on_start(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.start()
        return response

    def _on_abort(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.abort("abort requested (~/abort)")
        return response

    def _on_recalibrate(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.recalibrate()
        return response

    def recalibrate(self) -> tuple[bool, str]:
        """Start the short recalibration experiment now (doc/identification.md); ``(started, message)``.
        Refused, before the arm moves, without a model to update or with one the controllers would
        refuse."""
        source = self.p['calibration_model'] or self.last_model
        if not source:
            message = ("recalibrate refused: no model to update: set calibration_model to an identified model file, "
                       "or identify first (~/start)")
            self.get_logger().error(message)
            return False, message
        path = Path(source).expanduser()
        try:
            target = ModelToUpdate.load(path, self.arm)
        except (ModelFileError, IdentificationError, ValueError, OSError) as exc:
            message = f"recalibrate refused: model {path}: {exc}"
            self.get_logger().error(message)
            return False, message
        return self.start(calibrate=target)

    def start(self, calibrate: ModelToUpdate | None = None, directory: Path | None = None,
              plan: ExcitationPlan | None = None) -> tuple[bool, str]:
        """Start an experiment now: the identification of ``plan`` (default: the parameters'; first
        its pilot pass, if any), or with ``calibrate`` the recalibration of that model; ``(started,
        message)``. ``directory``: the identification after its pilot pass, in the pilot's folder."""
        if self._clock_missing():
            message = ("start refused: no /clock yet (use_sim_time is true): this node's time does not run; start "
                       "the simulator with publish_clock:=true or run this node with use_sim_time:=false")
            self.get_logger().error(message)
            return False, message
        if self._starting:
            return False, "busy: starting"
        if self.session is not None and (self.session.moving or self.session.phase is ExperimentPhase.IDENTIFY
                                         or self.recorder is not None):
            return False, f"busy: {self.session.phase.value}" + (" (closing the recording)" if not self.session.moving
                                                                 and self.recorder is not None else "")
        now = self._now()
        plan = self.running_plan if directory is not None else plan or self.default_plan
        pilot = calibrate is None and directory is None and plan.pilot is not None
        session = (ExcitationSession(self.arm, plan.pilot, self.pilot_config) if pilot
                   else ExcitationSession(self.arm, plan.trajectory, plan.config, self.validation) if calibrate is None
                   else ExcitationSession(self.arm, self.default_plan.trajectory, self.calibration_config))
        name = "pilot_recording" if pilot else "recording"
        try:
            session.check_start(now, self._latest)
            directory = directory or new_run_directory(self.output_root)
            self.recorder = RecordingThread(JointStateRecorder(
                directory / name, self.arm.joint_names, directory / f"{name}.csv", topic=self.p['joint_states_topic'],
                flush_period=self.p['flush_period']), f"{self.get_name()}_recorder", background_priority)
        except SessionRefused as exc:
            message = f"start refused: {exc}" + (move_hint(self.p['trajectory_topic'], self.arm.joint_names, exc)
                                                 if isinstance(exc, TooFarFromStart) else "")
            self.get_logger().error(message)
            return False, message
        except OSError as exc:
            message = f"start refused: cannot create the output in {self.output_root}: {exc}"
            self.get_logger().error(message)
            return False, message
        # the session that commands the arm now (a pilot pass holding it) goes on until the new one begins:
        # a position or effort stream that stopped would time out the drives
        self._holding = self.session if self.session is not None and self.session.commanding else None
        self.session, self.run_directory, self.result_summary = session, directory, {}
        self._calibrating, self._pilot = calibrate, pilot
        if calibrate is None:
            self.running_plan = plan
        if self.identify_action is not None:
            self.identify_action.started(session)
        controller = self.commands.controller
        if controller is not None:
            controller.reset()
            if pilot:
                controller.use_model(self.nominal_feedforward)
        # the heap out of the collector's way before the arm moves, while nothing is commanded: after an
        # identification (the recorded data, the fit, the plots, a loaded model's base parameters) the
        # periodic collection paused the node 0.35-0.5 s mid-recalibration (stop 37)
        freeze_heap()
        # the motion begins in a later cycle, on a fresh clock and joint state (START_STATE_LAG, _begin)
        self._starting, self._start_requested = True, self._now()
        approach = session.approach_time(session.q_start - self._latest.q)
        what = (f" recalibrating {calibrate.path}" if calibrate is not None else
                f" the pilot pass (the excitation {self.p['effort_pilot_slowdown']:g} x slower)" if pilot else "")
        message = (f"started{what}: "
                   f"approach {approach:.1f} s, "
                   f"excitation {session.config.periods} x {session.period:g} s"
                   + (f", validation {session.config.validation_repeats} x {session.validation_period:g} s"
                      if session.validation is not None else "")
                   + f", about {session.motion_duration:.0f} s "
                   f"of motion; output {directory}")
        self.get_logger().info(message)
        return True, message

    def _begin(self, now: float) -> None:
        """The start of the experiment :meth:`start` prepared: the approach from the newest state."""
        self._starting, self._holding = False, None
        self.commands.restart()
        self._next_log = now
        try:
            self.session.start(now, self._latest)
        except SessionRefused as exc:  # the arm moved or the states stopped since the request
            self.session.refuse(now, f"start refused: {exc}")
            self._close_recording()
        self._phase_changed(now)

    def abort(self, reason: str) -> tuple[bool, str]:
        """Stop and hold the arm if an experiment is moving; ``(aborted, message)``."""
        session = self.session
        now = self._now()
        if self._starting:  # prepared, not yet moving: it does not begin (a session holding the arm goes on)
            self._starting = False
            self._close_recording()
            if self._holding is not None:
                self.session, self._holding = self._holding, None
                return True, "aborted before the arm moved: the previous experiment holds it"
            session.refuse(now, f"aborted before the start: {reason}")
            self._phase_changed(now)
            return True, "aborted before the arm moved"
        if session is None or not session.abort(now, reason):
            phase = session.phase.value if session is not None else ExperimentPhase.IDLE.value
            return False, f"nothing to abort: {phase}"
        self._phase_changed(now)
        return True, f"aborted: stopping in {session.stop.duration if session.stop else 0.0:.2f} s and holding"

    def _fresh_sample(self, now: float) -> JointSample | None:
        sample = self._latest
        return sample if sample is not None and now - sample.receive <= self.config.state_timeout else None

    # -- the cycle ------------------------------------------------------------------------------

    def _cycle(self) -> None:
        now = self._now()
        session = self.session
        if session is None:
            if self._auto_start and self._fresh_sample(now) is None:
                self.get_logger().info("start_on_launch: waiting for joint states", throttle_duration_sec=5.0)
            elif self._auto_start:
                self._auto_start = False
                started, message = self.start()
                if not started:
                    failed = ExcitationSession(self.arm, self.default_plan.trajectory, self.config, self.validation)
                    failed.refuse(now, message)
                    self.session = failed
                    self._phase_changed(now)
            return
        if self.identify_action is not None:
            self.identify_action.update(now)
        if self._starting:
            if (now - session.measured_at(self._latest) <= START_STATE_LAG
                    or now - self._start_requested > session.config.state_timeout):  # else: refused as stale
                self._begin(now)
            elif self._holding is not None:
                self.commands.stream(now, self._holding)
            return
        if session.update(now, self._latest) is not None:
            self._phase_changed(now)
        if self.recorder is not None and session.recording_complete(
                now, None if self._latest is None else self._latest.stamp):
            self._close_recording()
            if session.phase is ExperimentPhase.IDENTIFY:
                arguments = (self.run_directory, session, self.arm, self.settings)
                self._identification = (
                    self._worker.submit(identify_pilot, *arguments) if self._pilot
                    else self._worker.submit(identify_recording, *arguments, self.running_plan,
                                             self.validation_file, self.interface) if self._calibrating is None
                    else self._worker.submit(recalibrate_recording, *arguments, self._calibrating,
                                             self.default_plan.trajectory))  # the parameters' excitation
        if self._identification is not None and self._identification.done():
            self._identification_finished(now)
        if session.commanding:
            self.commands.stream(now, session)
        if self.p['log_period'] > 0.0 and (session.moving or session.phase is ExperimentPhase.IDENTIFY) \
                and now >= self._next_log:
            self._next_log = now + self.p['log_period']
            self.get_logger().info(f"{session.phase.value} {session.progress(now):.0f}%: {session.activity(now)}"
                                   + (f"; {session.remaining(now):.0f} s of motion left" if session.moving else ""))

    def _phase_changed(self, now: float) -> None:
        session = self.session
        phase = session.phase
        text = f"phase {phase.value}" + (f": {session.reason}" if session.reason else "")
        log = self.get_logger()
        if phase is ExperimentPhase.ABORTED:
            log.warning(text)
        elif phase is ExperimentPhase.FAILED:
            log.error(text)
        else:
            log.info(text)
        self.commands.phase_changed(now, session)
        self._publish_progress()

    def _flush(self) -> None:
        if self.recorder is not None:
            try:
                self.recorder.flush()
            except OSError as exc:
                self._recording_failed(exc)

    def _recording_failed(self, exc: OSError) -> None:
        """The recorder stopped (a RecordingError: it names the files it closed readable, issue 35):
        so does the experiment, with that message."""
        self.get_logger().error(str(exc), throttle_duration_sec=1.0)
        self.abort(str(exc))

    def _close_recording(self) -> None:
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return
        try:
            recorder.close()
        except OSError as exc:
            self.get_logger().error(f"cannot close the recording: {exc}")
            return
        files = recorder.recorder
        self.get_logger().info(f"recording closed: {files.bag.message_count} joint states in {files.bag.path} "
                               f"and {files.csv_path}")

    # -- identification (worker thread) ---------------------------------------------------------

    def _pilot_finished(self, now: float, future: concurrent.futures.Future) -> None:
        """Feed the pilot model forward (if it is usable) and start the identification's experiment."""
        log = self.get_logger()
        try:
            model, line = future.result()
        except Exception as exc:  # noqa: BLE001 - a solver's or a bug's: the experiment goes on, nominal feedforward
            model, line = None, f"pilot pass not identified ({type(exc).__name__}: {exc}): nominal feedforward kept"
        log_outcome(log, model is not None, line)
        self.session.finish(now)
        if model is not None:
            self.commands.controller.use_model(model)
        started, message = self.start(directory=self.run_directory)
        if not started:
            self.session.fail(now, message)
            self._phase_changed(now)

    def _publish_payload(self, run: Calibration) -> None:
        """The recalibration's payload change as the ``~/payload`` message of the controllers (a point
        mass; its centre of mass from the last DH frame into the tool frame)."""
        payload = payload_in_tool(run, self.arm)
        if payload is None:
            self.get_logger().info(f"payload change {run.payload_mass:+.4g} kg: not published on ~/payload_estimate "
                                   "(a payload is added mass)")
            return
        mass, com = payload
        msg = Inertia(m=mass)
        msg.com.x, msg.com.y, msg.com.z = (float(v) for v in com)
        self.payload_pub.publish(msg)
        self.get_logger().info(f"published the payload {run.payload_mass:.4g} kg at {np.round(com, 4).tolist()} m "
                               "(tool frame) on ~/payload_estimate")

    def _experiment(self) -> str:
        return "recalibration" if self._calibrating is not None else "pilot pass" if self._pilot else "identification"

    def _identification_finished(self, now: float) -> None:
        future, self._identification = self._identification, None
        if self._pilot:
            self._pilot_finished(now, future)
            return
        session = self.session
        log = self.get_logger()
        experiment = self._experiment()
        try:
            run = future.result()
        except (IdentificationError, DataFileError, ModelFileError, ValueError, OSError) as exc:
            session.fail(now, f"{experiment} failed: {exc}")
            self._phase_changed(now)
            return
        except Exception as exc:  # noqa: BLE001 - a solver's or a bug's: report it, keep the node (and the hold) alive
            session.fail(now, f"{experiment} failed: {type(exc).__name__}: {exc}")
            self._phase_changed(now)
            return
        written = self.run_directory / "parameters.yaml"
        if isinstance(run, Calibration):
            for line in calibration_lines(run, self.arm.n_joints, self.p['calibration_holdout']):
                log.info(line)
            self.result_summary = calibration_summary(run, written, self._calibrating.path)
            self._publish_payload(run)
        else:
            for line in summary_lines(run) + experiment_lines(run):
                log.info(line)
            self.result_summary = identification_summary(run, written)
        self.last_model = written
        log.info(f"wrote {written} and {self.run_directory / 'report'}")
        session.finish(now)
        self._phase_changed(now)

    # -- progress -------------------------------------------------------------------------------

    def _publish_progress(self) -> None:
        now, session = self._now(), self.session
        if self.identify_action is not None and session is not None:
            self.identify_action.feedback(session.phase.value, session.progress(now), session.remaining(now),
                                          session.max_tracking)
        self.progress_pub.publish(progress_status(f"{self.get_name()}: {self._experiment()}", self.arm.name, now,
                                                  session, self.run_directory, self.result_summary))

    # -- shutdown -------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Before destroying: stop a moving arm (best effort), close the recording, wait for a
        running identification."""
        if self.session is not None and self.session.moving:
            try:
                self.abort("node shutting down")
            except Exception:  # noqa: BLE001 - the context may already be shut down
                pass
        if self.interface == 'effort' and self.session is not None and self.session.commanding:
            try:
                self.commands.release("node shutting down")
            except Exception:  # noqa: BLE001 - the context may already be shut down
                pass
        self._close_recording()
        self._worker.shutdown(wait=True)

    def destroy_node(self) -> None:
        if self.identify_action is not None:
            self.identify_action.destroy()
        self._close_recording()
        self._worker.shutdown(wait=False)
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """Entry point ``identification_node``: run until Ctrl-C or an external shutdown (then stop the
    arm if it moves and close the recording); 1 if start-up fails (the reason is logged)."""
    return run_node(NODE_NAME, IdentificationNode, (ArmDescriptionError, ModelFileError, DataFileError,
                                                    IdentificationError, ParameterException, ValueError, OSError),
                    args, realtime=True, events_executor=True, after_spin=IdentificationNode.shutdown)


if __name__ == '__main__':
    sys.exit(main())
