"""``control_msgs/action/FollowJointTrajectory`` on the computed-torque controller, where ``control_msgs``
is installed (a ROS 2 machine: ``ros-<distro>-control-msgs``): ``/<controller>/follow_joint_trajectory``
for MoveIt and other clients (doc/control.md, "FollowJointTrajectory").

A goal's trajectory (its joints in any order) is planned and followed as ``~/trajectory`` is, from
the running reference; the tolerances (:mod:`youbot_dynamics.control.tolerances`) are judged every
control cycle; feedback (desired, actual, error) goes out every ``feedback_period``. A goal ends

* ``SUCCESSFUL`` when every joint is within its goal tolerance after the trajectory's end;
* ``PATH_TOLERANCE_VIOLATED`` / ``GOAL_TOLERANCE_VIOLATED`` with the joint and error named; after a
  path violation the reference brakes to rest within the acceleration limits and holds there;
* ``INVALID_JOINTS`` / ``INVALID_GOAL`` / ``OLD_HEADER_TIMESTAMP`` at once, for a goal the controller
  cannot run (wrong joints, a trajectory it refuses: limits, too many points; disabled);
* aborted when another reference replaces it (a newer goal: preemption; ``~/trajectory``, ``~/line``)
  or the controller is disabled or faults; canceled on a cancel request, the reference braking to
  rest and holding there.

Goals are started when accepted and stay *accepted* until they end; then the goal is executed and
ends at once (as the identify action: an execute callback waiting for the motion would be a task
the executor polls all along). Without ``control_msgs`` the controller runs without this action and
says so once at start-up.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from trajectory_msgs.msg import JointTrajectoryPoint

from ..control.tolerances import (DEFAULT_GOAL, DEFAULT_PATH, Outcome, ToleranceError, TrajectoryTolerances,
                                  resolve_goal_time, resolve_tolerances)
from .common import goal_label, log_outcome
from .controller_node import Done
from .messages import stamp_seconds, trajectory_arrays

try:  # ros-<distro>-control-msgs on a ROS 2 machine; not on PyPI (a venv: make setup builds a test-only one)
    from control_msgs.action import FollowJointTrajectory
except ImportError:
    FollowJointTrajectory = None

__all__ = ["FollowJointTrajectoryHost", "FollowJointTrajectory", "ACTION_NAME"]

ACTION_NAME = "~/follow_joint_trajectory"


@dataclass
class _Running:
    """A goal whose trajectory is the controller's reference (``reference_id``)."""

    goal: Any
    reference_id: int
    tolerances: TrajectoryTolerances
    next_feedback: float  # [s, perf_counter]


class TrajectoryFollower(Protocol):
    """What the action uses of its controller node (:class:`~.computed_torque_controller.ComputedTorqueControllerNode`,
    the members of :class:`~.controller_node.ControllerNode` and the two below)."""

    arm: Any  # the arm description
    law: Any  # the control law: ``reference(t)``, ``kp``
    guard: Any  # the safety guard: ``state``
    reports: Any  # its reports: ``submit(job, *args)`` in its reporting thread, ``last_status``
    enabled: bool
    reference_id: int

    def locked(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` under the control cycle's lock where the node needs it."""

    def get_clock(self) -> Any:
        """The node's ROS clock."""

    def get_logger(self) -> Any:
        """The node's logger."""

    def follow(self, what: str, read: Callable[[], tuple[Any, ...]], done: Done | None = None,
               delay: float = 0.0) -> None:
        """Plan and follow the trajectory ``read()`` returns, from the reference ``delay`` [s] from now."""

    def stop(self, what: str) -> None:
        """Bring the reference to rest within the acceleration limits and hold there."""


class FollowJointTrajectoryHost:
    """The action server of a :class:`~.computed_torque_controller.ComputedTorqueControllerNode`
    (module docstring); :meth:`update` runs in every control cycle."""

    def __init__(self, node: TrajectoryFollower, feedback_period: float) -> None:
        self.node = node
        self.feedback_period = feedback_period
        self._running: _Running | None = None
        self._pending: Any = None  # the goal being planned
        result = FollowJointTrajectory.Result
        self._codes = {Outcome.SUCCEEDED: result.SUCCESSFUL,
                       Outcome.PATH_TOLERANCE_VIOLATED: result.PATH_TOLERANCE_VIOLATED,
                       Outcome.GOAL_TOLERANCE_VIOLATED: result.GOAL_TOLERANCE_VIOLATED}
        self._server = ActionServer(node, FollowJointTrajectory, ACTION_NAME, execute_callback=self._result,
                                    goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                    handle_accepted_callback=node.locked(self._accepted),
                                    cancel_callback=node.locked(self._cancel))

    def destroy(self) -> None:
        self._server.destroy()

    # -- a goal's life ----------------------------------------------------------------------------

    def _accepted(self, goal_handle: Any) -> None:
        """Plan the goal's trajectory; a goal the controller cannot run ends at once with the reason."""
        node, request, codes = self.node, goal_handle.request, FollowJointTrajectory.Result
        names = node.arm.joint_names
        trajectory = request.trajectory
        if request.multi_dof_trajectory.points or request.multi_dof_trajectory.joint_names:
            self._end(goal_handle, codes.INVALID_GOAL, "the arm has no multi-DOF joints (multi_dof_trajectory)")
            return
        if sorted(trajectory.joint_names) != sorted(names) or len(set(trajectory.joint_names)) != len(names):
            self._end(goal_handle, codes.INVALID_JOINTS, f"joint_names {list(trajectory.joint_names)} must be "
                                                         f"exactly {list(names)} (any order)")
            return
        if not trajectory.points:
            self._end(goal_handle, codes.INVALID_GOAL, "the trajectory has no points")
            return
        try:
            path = resolve_tolerances(names, _entries(request.path_tolerance), DEFAULT_PATH, "path")
            goal = resolve_tolerances(names, _entries(request.goal_tolerance), DEFAULT_GOAL, "goal")
            goal_time = resolve_goal_time(stamp_seconds(request.goal_time_tolerance))
        except ToleranceError as exc:
            self._end(goal_handle, codes.INVALID_GOAL, str(exc))
            return
        stamp = stamp_seconds(trajectory.header.stamp)
        if stamp > 0.0:  # a start in the ROS clock: the points' times count from it
            late = node.get_clock().now().nanoseconds * 1e-9 - stamp
            end = stamp_seconds(trajectory.points[-1].time_from_start)
            if late > end:
                self._end(goal_handle, codes.OLD_HEADER_TIMESTAMP,
                          f"the trajectory ended {late - end:.3f} s ago (header stamp {stamp:.3f} s)")
                return
        else:
            late = 0.0
        self._pending = goal_handle

        def done(accepted: bool, text: str) -> None:  # control thread, at installation or refusal (on ~/status)
            if self._pending is goal_handle:
                self._pending = None
            if not accepted:
                self._end(goal_handle, codes.INVALID_GOAL, text, logged=True)
                return
            previous, self._running = self._running, None
            if previous is not None:
                self._end(previous.goal, codes.INVALID_GOAL, f"aborted: preempted by goal {goal_label(goal_handle)}")
            if goal_handle.is_cancel_requested:  # canceled while it was planned
                node.stop("follow_joint_trajectory goal canceled")
                self._end(goal_handle, codes.SUCCESSFUL, "canceled: braking to rest, then holding")
                return
            law = node.law
            if law.trajectory is None:  # only the start point: held
                start = end = law.start_time
                final = law.reference(start)[0]
            else:
                start, end, final = law.start_time, law.start_time + law.trajectory.duration, law.trajectory.final
            self._running = _Running(goal_handle, node.reference_id, TrajectoryTolerances.of(
                names, start, end, final, path, goal, goal_time), time.perf_counter())

        node.follow(f"follow_joint_trajectory goal {goal_label(goal_handle)}",
                    lambda: _from_start(trajectory_arrays(trajectory, names), late), done, delay=max(-late, 0.0))

    def _cancel(self, goal_handle: Any) -> CancelResponse:
        """Cancel the running goal: the reference brakes to rest and holds there; the goal ends canceled."""
        running = self._running
        if running is None or goal_handle is not running.goal:
            return CancelResponse.ACCEPT if goal_handle is self._pending else CancelResponse.REJECT
        self._running = None
        self.node.stop("follow_joint_trajectory goal canceled")
        self._end(goal_handle, FollowJointTrajectory.Result.SUCCESSFUL, "canceled: braking to rest, then holding")
        return CancelResponse.ACCEPT

    def update(self, now: float, q: np.ndarray, dq: np.ndarray) -> None:
        """In the control cycle, after its torque: judge the running goal at ``now`` [s, perf_counter]
        with the measured ``q, q'``; feedback when due."""
        running, node = self._running, self.node
        if running is None:
            return
        codes = FollowJointTrajectory.Result
        if node.reference_id != running.reference_id or not node.enabled:
            self._running = None
            why = ("another reference replaced it (a newer goal, ~/trajectory, ~/line or a stop)" if node.enabled
                   else f"the controller is {node.guard.state.value}: {node.reports.last_status}")
            self._end(running.goal, codes.INVALID_GOAL, f"aborted: {why}")
            return
        q_d, dq_d, _ = node.law.reference(now)
        if now >= running.next_feedback:
            running.next_feedback = max(running.next_feedback + self.feedback_period, now)
            node.reports.submit(self._feedback, running.goal, q_d.copy(), dq_d.copy(), q.copy(), dq.copy())
        verdict = running.tolerances.check(now, q, dq, q_d, dq_d)
        if verdict is None:
            return
        outcome, text = verdict
        self._running = None
        if outcome is Outcome.PATH_TOLERANCE_VIOLATED:
            node.stop("follow_joint_trajectory: path tolerance violated")
            text += "; braking to rest, then holding"
        self._end(running.goal, self._codes[outcome], text)

    def _feedback(self, goal_handle: Any, q_d: np.ndarray, dq_d: np.ndarray, q: np.ndarray, dq: np.ndarray) -> None:
        """Publish one feedback message (the node's reporting thread)."""
        feedback = FollowJointTrajectory.Feedback()
        feedback.header.stamp = self.node.get_clock().now().to_msg()
        feedback.joint_names = list(self.node.arm.joint_names)
        feedback.desired = JointTrajectoryPoint(positions=q_d.tolist(), velocities=dq_d.tolist())
        feedback.actual = JointTrajectoryPoint(positions=q.tolist(), velocities=dq.tolist())
        feedback.error = JointTrajectoryPoint(positions=(q_d - q).tolist(), velocities=(dq_d - dq).tolist())
        goal_handle.publish_feedback(feedback)

    def _end(self, goal_handle: Any, code: int, text: str, logged: bool = False) -> None:
        """Execute the goal: :meth:`_result` sets its terminal state in a task of the executor;
        ``logged``: the node's status already said why. Any thread may call this (the bus cycle's
        too): rclpy's executors take tasks from other threads (the events executor queues them as it
        queues the middleware's events; the others under a lock)."""
        goal_handle.execute(lambda handle: self._result(handle, code, text, logged))

    def _result(self, goal_handle: Any, code: int = -1, text: str = "", logged: bool = False) -> Any:
        result = FollowJointTrajectory.Result(error_code=code, error_string=text)
        succeeded = code == FollowJointTrajectory.Result.SUCCESSFUL
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif succeeded:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        if not logged:
            log_outcome(self.node.get_logger(), succeeded,
                        f"follow_joint_trajectory goal {goal_label(goal_handle)}: {text}")
        return result


def _entries(tolerances: Any) -> list[tuple[str, float, float]]:
    return [(t.name, float(t.position), float(t.velocity)) for t in tolerances]


def _from_start(arrays: tuple[Any, ...], late: float) -> tuple[Any, ...]:
    """The trajectory's arrays with times counted from now, for a start ``late`` [s] in the past: the
    points still ahead (at least the last), from the running reference."""
    times, positions, velocities, accelerations = arrays
    if late <= 0.0:
        return arrays
    keep = times > late
    keep[-1] = True
    return (np.maximum(times[keep] - late, 1e-3), positions[keep],
            None if velocities is None else velocities[keep], None if accelerations is None else accelerations[keep])
