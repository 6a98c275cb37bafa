"""The identification experiment as an action: ``youbot_dynamics_interfaces/action/Identify`` at
``/identification_node/identify`` (doc/identification.md, "The identify action").

A goal runs what ``~/start`` runs (its excitation file and periods, empty or 0 for the node's
parameters, each checked as that parameter is: :mod:`youbot_dynamics.contract.request_fields`);
feedback every ``progress_period`` with ``~/progress``; cancel stops the arm as ``~/abort`` does
(braking within the limits, then holding) and the goal ends, canceled, once the arm is at rest and
the recording closed. One goal at a time: a goal while another runs, or while ``~/start`` or
``~/recalibrate`` keeps the node busy, is aborted at once with the reason. The node keeps its
topics and ``Trigger`` services; this host only adds the action (rclpy's ``ActionServer``).
"""
from __future__ import annotations

from typing import Any, Protocol

from rclpy.action import ActionServer, CancelResponse, GoalResponse

from ..contract.request_fields import IDENTIFY, check_request
from ..identification.experiment.runner import ExperimentRunner
from ..identification.experiment.session import ExcitationSession, ExperimentPhase
from .common import goal_label, log_outcome

try:  # built by make setup or colcon (doc/usage.md); without it the node has no action
    from youbot_dynamics_interfaces.action import Identify
except ImportError:
    Identify = None

__all__ = ["IdentifyActionHost", "Identify"]

ACTION_NAME = "~/identify"
STARTING = "starting"  # feedback phase before the goal's experiment has begun
ENDED = (ExperimentPhase.DONE, ExperimentPhase.FAILED, ExperimentPhase.ABORTED)


class IdentifyHost(Protocol):
    """The node whose experiment the action runs (:class:`~.identification_node.IdentificationNode`)."""

    runner: ExperimentRunner  # the experiment's supervision

    def start(self, plan: Any = None) -> tuple[bool, str]:
        """Start an experiment of ``plan`` now; ``(started, message)``."""

    def abort(self, reason: str) -> tuple[bool, str]:
        """Brake the arm to rest and hold; ``(aborted, message)``."""

    def get_logger(self) -> Any:
        """The node's logger."""


class IdentifyActionHost:
    """The ``Identify`` action server of an :class:`~.identification_node.IdentificationNode`.

    A goal is started when accepted and stays *accepted* while its experiment runs; when it has
    ended, :meth:`update` executes the goal, which sets its terminal state and result at once. (An
    execute callback that waited for the experiment would be an rclpy task polled by the executor
    all along: with the events executor 35 % of a core more, measured.)"""

    def __init__(self, node: IdentifyHost) -> None:
        self.node = node
        self._goal: Any = None  # the goal handle whose experiment runs
        self._session: ExcitationSession | None = None  # the experiment's session (the pilot's, then its own)
        self._server = ActionServer(node, Identify, ACTION_NAME, execute_callback=self._result,
                                    goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                    handle_accepted_callback=self._accepted, cancel_callback=self._cancel)

    def destroy(self) -> None:
        self._server.destroy()

    # -- the goal's life -------------------------------------------------------------------------

    def _accepted(self, goal_handle: Any) -> None:
        """Start the experiment of the goal; a goal the node cannot run ends at once with the reason."""
        node, request = self.node, goal_handle.request
        if self._goal is not None:
            self._end(goal_handle, False, "busy: another identify goal is running")
            return
        try:  # another file is loaded and checked here: 0.2-0.5 s in the executor, like ~/start's own preparation
            check_request(IDENTIFY, request)  # each field within the bounds of the parameter it overrides
            plan = (node.runner.plan(request.excitation_file, request.periods)
                    if request.excitation_file or request.periods else node.runner.default_plan)
        except (ValueError, OSError) as exc:
            self._end(goal_handle, False, f"goal refused: {exc}")
            return
        self._goal = goal_handle
        started, message = node.start(plan=plan)
        if not started:
            self._goal = self._session = None
            self._end(goal_handle, False, message)
            return
        node.get_logger().info(f"identify goal {goal_label(goal_handle)}: {message}")

    def _cancel(self, goal_handle: Any) -> CancelResponse:
        """Cancel: stop the arm as ``~/abort`` does; the goal ends when it is at rest. Refused once its
        experiment has ended (done, failed, aborted by itself or ``~/abort``, still braking): the goal's
        outcome is decided and stays the one it reports (a cancel after an abort made it *canceled*)."""
        if goal_handle is not self._goal or (self._session is not None and self._session.phase in ENDED):
            return CancelResponse.REJECT
        self.node.abort("identify goal canceled")
        return CancelResponse.ACCEPT

    def started(self, session: ExcitationSession) -> None:
        """Called by the node when an experiment starts: while a goal runs, it is the goal's."""
        if self._goal is not None:
            self._session = session

    def update(self, now: float) -> None:
        """Called by the node's cycle: end the running goal once its experiment has ended, its
        recording is closed and the arm of an aborted one is at rest (the node takes the next goal)."""
        runner = self.node.runner
        goal, session = self._goal, runner.session
        if goal is None or self._session is None:
            return
        if session is not self._session:  # aborted before it moved: the session before it holds the arm
            outcome = (False, "aborted before the arm moved")
        elif runner.starting or session.phase not in ENDED or runner.recorder is not None:
            return
        elif session.phase is ExperimentPhase.ABORTED and session.stop is not None \
                and now < session.stop_time + session.stop.duration:
            return  # still braking
        else:
            outcome = (session.phase is ExperimentPhase.DONE, session.reason)
        self._goal = self._session = None
        self._end(goal, *outcome)

    def feedback(self, phase: str, percent: float, remaining: float, max_tracking_error: float) -> None:
        """Publish the running goal's feedback (the node's ``~/progress`` values): phase
        :data:`STARTING` at 0 % while the goal's experiment is being prepared (the node's session is then
        still the one before, idle or done)."""
        if self._goal is None:
            return
        if self._session is None:
            phase, percent, remaining, max_tracking_error = STARTING, 0.0, 0.0, 0.0
        self._goal.publish_feedback(Identify.Feedback(phase=phase, percent=percent, remaining_s=remaining,
                                                      max_tracking_error=max_tracking_error))

    def _end(self, goal_handle: Any, success: bool, reason: str) -> None:
        """Execute the goal now: :meth:`_result` sets its terminal state (rclpy runs it as a task)."""
        goal_handle.execute(lambda handle: self._result(handle, success, reason))

    def _result(self, goal_handle: Any, success: bool = False, reason: str = "") -> Any:
        summary = self.node.runner.result_summary if success else {}
        result = Identify.Result(success=success, message=reason,
                                 model_file=str(summary.get("parameters", "")),
                                 held_out_relative_error=float(summary.get("relative_error", float("nan"))),
                                 nominal_relative_error=float(summary.get("nominal_relative_error", float("nan"))))
        if success:
            result.message = (f"identified: {result.model_file}; relative torque error "
                              f"{100 * result.held_out_relative_error:.2f} % on the held-out motion "
                              f"({summary.get('held_out', 'unknown')}), nominal model "
                              f"{100 * result.nominal_relative_error:.1f} %")
            goal_handle.succeed()
        elif goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        log_outcome(self.node.get_logger(), success, f"identify goal {goal_label(goal_handle)}: {result.message}")
        return result
