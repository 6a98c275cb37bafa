"""ROS 2 node: the identification experiment on the arm (simulated, Gazebo or real), end to end.

Executable ``identification_node``: the ROS face (parameters, topics, services, timers, the clock checks)
of :class:`youbot_dynamics.identification.experiment.runner.ExperimentRunner`, which supervises the
experiment (:class:`~youbot_dynamics.identification.experiment.session.ExcitationSession`, the recorder
:class:`~youbot_dynamics.identification.experiment.recording.JointStateRecorder`, the identification of
:mod:`youbot_dynamics.identification.estimation.pipeline` as ``youbot-dynamics identify``).

The same experiment is the action ``~/identify`` (:mod:`.identify_action`). Interface, behaviour
and figures: doc/identification.md; parameters:
youbot_dynamics/nodes/parameters/identification_node.yaml (table in doc/parameters.md).
"""
from __future__ import annotations

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
from ..dynamics.model import DynamicModel
from ..dynamics.paramfile import ModelFileError
from ..files.dataio import DataFileError
from ..files.paths import config_path
from ..identification.estimation.calibration import Calibration
from ..identification.estimation.pipeline import reference_models
from ..identification.experiment.effort import EffortLoop
from ..identification.experiment.jobs import ExcitationPlan, Settings, payload_in_tool
from ..identification.experiment.recording import JointStateRecorder, RecordingThread
from ..identification.experiment.runner import ExperimentRunner, ExperimentSetup
from ..identification.experiment.session import (ExcitationSession, JointSample, SessionConfig, SessionRefused,
                                                 TooFarFromStart)
from ..identification.io.bagio import typestore
from ..identification.io.dataset import IdentificationError
from ..identification.io.trajfile import load_trajectory
from .common import background_priority, background_worker, declare_parameters, freeze_heap, run_node
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
DEFAULT_EXCITATION = "excitation_default.yaml"
DEFAULT_VALIDATION = "excitation_validation.yaml"  # the validation trajectory: the held-out motion


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "unknown"


class IdentificationNode(Node):
    """The identification experiment; see doc/identification.md. The host of an
    :class:`~youbot_dynamics.identification.experiment.runner.ExperimentRunner` (:attr:`runner`)."""

    def __init__(self, **kwargs: Any) -> None:
        self.runner: ExperimentRunner | None = None  # set first: destroy_node() may run on a half-built node
        self.identify_action: IdentifyActionHost | None = None
        worker = background_worker("identify")
        super().__init__(NODE_NAME, **kwargs)
        p = declare_parameters(self, NODE_NAME)
        self.p = p
        arm = load_arm(p['arm_description'] or None)
        validation_file = Path(p['validation_file'] or config_path(DEFAULT_VALIDATION)).expanduser()
        validation = (load_trajectory(validation_file, arm.joint_names, arm).trajectory
                      if p['validation_repeats'] > 0 else None)
        nominal, _, baseline_beta, _ = reference_models(arm, p['structure'], p['nominal_model'] or None)
        # the session's and the identification's settings are the parameters of their names
        setup = ExperimentSetup(
            arm, dataclass_of(SessionConfig, p), dataclass_of(Settings, p),
            Path(p['excitation_file'] or config_path(DEFAULT_EXCITATION)), validation_file, validation,
            Path(p['output_directory']).expanduser(), p['command_interface'], p['effort_pilot_slowdown'],
            int(p['calibration_periods']), DynamicModel(nominal.chain, nominal.base, baseline_beta), p['log_period'])
        self.arm = arm
        controller = (EffortLoop(PDFeedforward(arm, setup.nominal_feedforward, p['effort_kp'], p['effort_kd']),
                                 p['effort_ki'], p['effort_integral_limit']) if setup.interface == 'effort' else None)
        self._reader = JointStateReader(arm.joint_names, require_velocity=False)
        self._auto_start = bool(p['start_on_launch'])
        typestore()  # import rosbags now: 0.15 s at ~/start would stall the node beyond state_timeout

        self.create_subscription(JointState, p['joint_states_topic'], self._on_joint_state, STATE_QOS_DEPTH)
        self.commands = ExperimentCommands(self, arm, p, controller, setup.config.stream_period,
                                           lambda now: self.runner.fresh_sample(now), lambda: self.runner.latest)
        self.progress_pub = self.create_publisher(DiagnosticStatus, '~/progress', QOS_DEPTH)
        self.payload_pub = self.create_publisher(Inertia, '~/payload_estimate', QOS_DEPTH)
        # the parameters' excitation is checked now (the runner's default plan), not at ~/start
        self.runner = ExperimentRunner(setup, self.commands, self, self.get_logger(), worker, self._now)
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
        plan, config = self.runner.default_plan, setup.config
        self.get_logger().info(
            f"ready: excitation {plan.path} ({config.periods} x {plan.trajectory.duration:g} s, "
            f"condition number {_number(plan.design.get('condition_number'))}, "
            f"{config.validation_periods} left for the same-motion check), "
            + (f"held-out motion {validation_file} ({config.validation_repeats} x "
               f"{validation.duration:g} s)" if validation is not None else "no held-out motion")
            + f", command interface '{setup.interface}'"
            + (f" ({config.stream_horizon:g} s horizons every {config.stream_period:g} s: without them the "
               f"arm stops within {plan.stop_time_bound:.2f} s)" if setup.interface == 'trajectory' else "")
            + f", output in {setup.output_root}; "
            + ("starting at the first joint state" if self._auto_start else "call ~/start to begin"))

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
        elif self.runner.latest is None and waited > NO_STATE_WARNING:
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
            if self.runner.recorder is not None:
                self.runner.recorder.write(stamp_ns, msg.name, msg.position, msg.velocity, msg.effort,
                                           receive_ns=receive_ns)
        except OSError as exc:  # disk full, folder removed: stop the experiment, keep what is on disk
            self._recording_failed(exc)
            return
        except ValueError as exc:  # malformed message (IdentificationError is a ValueError too)
            self.get_logger().warning(f"joint state ignored: {exc}", throttle_duration_sec=1.0)
            return
        self.runner.latest = JointSample(receive_ns * 1e-9, (stamp_ns or receive_ns) * 1e-9, q, dq)

    # -- services and what the runner asks of its host ------------------------------------------

    def _on_start(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.start()
        return response

    def _on_abort(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.abort("abort requested (~/abort)")
        return response

    def _on_recalibrate(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = (self._clock_refusal("recalibrate")
                                              or self.runner.recalibrate(self.p['calibration_model']))
        return response

    def start(self, plan: ExcitationPlan | None = None) -> tuple[bool, str]:
        """Start the identification of ``plan`` (default: the parameters') now, unless the node's
        clock does not run yet; ``(started, message)`` (:meth:`ExperimentRunner.start`)."""
        return self._clock_refusal("start") or self.runner.start(plan=plan)

    def _clock_refusal(self, what: str) -> tuple[bool, str] | None:
        """``(False, why)`` while the node's time does not run (``use_sim_time``, no ``/clock``), else None."""
        if not self._clock_missing():
            return None
        message = (f"{what} refused: no /clock yet (use_sim_time is true): this node's time does not run; start "
                   "the simulator with publish_clock:=true or run this node with use_sim_time:=false")
        self.get_logger().error(message)
        return False, message

    def abort(self, reason: str) -> tuple[bool, str]:
        """Stop and hold the arm if an experiment is moving; ``(aborted, message)``."""
        return self.runner.abort(self._now(), reason)

    def phase_changed(self, _now: float) -> None:
        self._publish_progress()

    def recorder(self, directory: Path, name: str) -> RecordingThread:
        return RecordingThread(JointStateRecorder(
            directory / name, self.arm.joint_names, directory / f"{name}.csv", topic=self.p['joint_states_topic'],
            flush_period=self.p['flush_period']), f"{self.get_name()}_recorder", background_priority)

    def started(self, session: ExcitationSession) -> None:
        if self.identify_action is not None:
            self.identify_action.started(session)

    def quiet_moment(self) -> None:
        # the heap out of the collector's way before the arm moves, while nothing is commanded: after an
        # identification (the recorded data, the fit, the plots, a loaded model's base parameters) the
        # periodic collection paused the node 0.35-0.5 s mid-recalibration (stop 37)
        freeze_heap()

    def refusal_hint(self, refusal: SessionRefused) -> str:
        return (move_hint(self.p['trajectory_topic'], self.arm.joint_names, refusal)
                if isinstance(refusal, TooFarFromStart) else "")

    def payload_changed(self, run: Calibration) -> None:
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

    # -- timers ---------------------------------------------------------------------------------

    def _cycle(self) -> None:
        now, runner = self._now(), self.runner
        if runner.session is None and self._auto_start:
            if runner.fresh_sample(now) is None:
                self.get_logger().info("start_on_launch: waiting for joint states", throttle_duration_sec=5.0)
                return
            self._auto_start = False
            started, message = self.start()
            if not started:
                runner.refuse(now, message)
            return
        if self.identify_action is not None and runner.session is not None:
            self.identify_action.update(now)
        runner.cycle(now)

    def _flush(self) -> None:
        if self.runner.recorder is not None:
            try:
                self.runner.recorder.flush()
            except OSError as exc:
                self._recording_failed(exc)

    def _recording_failed(self, exc: OSError) -> None:
        """The recorder stopped (a RecordingError: it names the files it closed readable, issue 35):
        so does the experiment, with that message."""
        self.get_logger().error(str(exc), throttle_duration_sec=1.0)
        self.abort(str(exc))

    def _publish_progress(self) -> None:
        now, runner = self._now(), self.runner
        session = runner.session
        if self.identify_action is not None and session is not None:
            self.identify_action.feedback(session.phase.value, session.progress(now), session.remaining(now),
                                          session.max_tracking)
        self.progress_pub.publish(progress_status(f"{self.get_name()}: {runner.experiment}", self.arm.name, now,
                                                  session, runner.run_directory, runner.result_summary))

    # -- shutdown -------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Before destroying: stop a moving arm (best effort), close the recording, wait for a
        running identification."""
        try:
            now = self._now()
        except Exception:  # noqa: BLE001 - the context may already be shut down: nothing to brake with
            now = None
        self.runner.stop(now, "node shutting down")

    def destroy_node(self) -> None:
        if self.identify_action is not None:
            self.identify_action.destroy()
        if self.runner is not None:
            self.runner.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """Entry point ``identification_node``: run until Ctrl-C or an external shutdown (then stop the
    arm if it moves and close the recording); 1 if start-up fails (the reason is logged)."""
    return run_node(NODE_NAME, IdentificationNode, (ArmDescriptionError, ModelFileError, DataFileError,
                                                    IdentificationError, ParameterException, ValueError, OSError),
                    args, realtime=True, events_executor=True, after_spin=IdentificationNode.shutdown)


if __name__ == '__main__':
    sys.exit(main())
