"""ROS 2 node: computed-torque tracking of joint trajectories on the youBot arm (seed 002, (4.8)).

Executable ``computed_torque_controller``: :class:`youbot_dynamics.control.ComputedTorqueController`
on ``~/trajectory`` and ``~/line``, inside the common :class:`~.controller_node.ControllerNode`.

Interface, behaviour and figures: doc/control.md; parameters:
youbot_dynamics/nodes/parameters/computed_torque_controller.yaml, ComputedTorqueConfig
(youbot_dynamics/control/laws.py) and controller_common (table in doc/parameters.md).
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable

import numpy as np
from geometry_msgs.msg import PoseStamped
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from ..motion.commands import braking_waypoints
from ..control import JointTrajectory, cartesian_line
from ..motion.trajectory_start import drop_start_point
from .controller_node import QOS_DEPTH, ControllerNode, Done, run
from .follow_joint_trajectory import FollowJointTrajectory, FollowJointTrajectoryHost
from .messages import check_frame, check_serialized_trajectory, pose_to_matrix, read_trajectory

__all__ = ["ComputedTorqueControllerNode", "main"]

NODE_NAME = "computed_torque_controller"


class ComputedTorqueControllerNode(ControllerNode):
    """Computed-torque tracking of ``~/trajectory`` and ``~/line``; see doc/control.md."""

    def __init__(self, **kwargs: Any) -> None:
        self.follow_host: FollowJointTrajectoryHost | None = None  # set before the node: destroy_node reads it
        super().__init__(NODE_NAME, **kwargs)

    def _create_interfaces(self) -> None:
        self.line_duration = float(self.params.line_duration)
        # raw: the executor only copies the bytes; deserializing is planning work (doc/control.md)
        self.create_subscription(JointTrajectoryMsg, '~/trajectory', self._on_trajectory, QOS_DEPTH, raw=True)
        self.create_subscription(PoseStamped, '~/line', self._on_line, QOS_DEPTH)
        if FollowJointTrajectory is None:
            self.get_logger().info("control_msgs is not installed: no ~/follow_joint_trajectory action "
                                   "(ros-<distro>-control-msgs provides it; ~/trajectory works without it)")
        else:
            self.follow_host = FollowJointTrajectoryHost(self, float(self.params.feedback_period))

    def _after_cycle(self, now: float, q: np.ndarray, dq: np.ndarray) -> None:
        if self.follow_host is not None:
            self.follow_host.update(now, q, dq)

    def destroy_node(self) -> None:
        if self.follow_host is not None:
            self.follow_host.destroy()
        super().destroy_node()

    # -- references -----------------------------------------------------------------------------

    def remaining_time(self, now: float) -> float:
        """Seconds until the current reference ends (0 when holding)."""
        law = self.law
        return 0.0 if law.trajectory is None else max(law.start_time + law.trajectory.duration - now, 0.0)

    def _start(self, delay: float = 0.0) -> tuple[float, bool]:
        """``(start, at_rest)``: a new reference starts now (or ``delay`` [s] from now) or when the
        enable ramp ends, from the current reference at that time; ``at_rest`` if that reference no
        longer moves then."""
        start = max(time.perf_counter() + delay, self.ramp_end)
        return start, self.remaining_time(start) == 0.0

    def _install(self, trajectory: JointTrajectory, start: float, at_rest: bool, delay: float = 0.0) -> str:
        """Follow a planned (already limit-checked) trajectory. From rest it starts at installation
        (or the end of the ramp) plus ``delay``, else at the planned ``start``: continuous with the
        moving reference it replaces, whose state at ``start`` it starts from."""
        if at_rest:
            start = max(time.perf_counter() + delay, self.ramp_end)
        # ComputedTorqueController.follow() would repeat the exact limit check (up to ~10 ms in the
        # control thread); the planning thread has done it.
        self.law.trajectory, self.law.start_time = trajectory, float(start)
        delay = start - time.perf_counter()
        return (f"{trajectory.duration:.3f} s to {np.round(trajectory.final, 4).tolist()}"
                + (f", starting after the enable ramp in {delay:.3f} s" if delay > 0.0 else ""))

    def _on_trajectory(self, data: bytes) -> None:
        """A serialized ``JointTrajectory``: only its size is checked here (O(1)); an empty one
        (a stop) is read and applied at once, any other planned."""
        names = self.arm.joint_names
        try:
            count = check_serialized_trajectory(data, self.arm.n_joints)
            if count == 0:
                read_trajectory(data, names)  # a few bytes: checks the joint names
        except ValueError as exc:
            self.refuse("trajectory", exc)
            return
        if self.loop.refused_unless_enabled("trajectory"):
            return
        if count == 0:  # stop: hold the desired position
            q0 = self.law.reference(self._start()[0])[0].copy()
            self.loop.apply("empty trajectory (stop)", lambda: self._hold_description(q0))
            return
        self.follow("trajectory", lambda: read_trajectory(data, names))

    def follow(self, what: str, read: Callable[[], tuple[Any, ...]], done: Done | None = None,
               delay: float = 0.0) -> None:
        """Plan and follow the trajectory whose ``(times, positions, velocities, accelerations)``
        (the arm's joint order) ``read()`` returns in the planning thread, from the reference at its
        start (now, or ``delay`` [s] later; :meth:`_start`); ``done`` as in :meth:`plan`."""
        if self.loop.refused_unless_enabled(what, done):
            return
        start, at_rest = self._start(delay)
        q0, dq0, ddq0 = (x.copy() for x in self.law.reference(start))
        names = self.arm.joint_names

        def compute():  # planning thread
            times, positions, velocities, accelerations = drop_start_point(*read(), q0, joint_names=names)
            if times.size == 0:  # only the start point: hold the desired position
                return lambda: self._hold_description(q0)
            trajectory = JointTrajectory.through(q0, times, positions, velocities, accelerations,
                                                 start_velocity=dq0, start_acceleration=ddq0)
            trajectory.check_limits(self.arm)
            return lambda: self._install(trajectory, start, at_rest, delay)

        self.plan(what, compute, done)

    def stop(self, what: str) -> None:
        """Bring the reference from its state now to rest within the acceleration limits and hold
        there (:func:`~youbot_dynamics.motion.commands.braking_waypoints`); where that cannot be planned, hold
        the reference's position now."""
        if self.loop.refused_unless_enabled(what):
            return
        start = time.perf_counter()
        q0, dq0, ddq0 = (x.copy() for x in self.law.reference(start))

        def compute():  # planning thread
            try:
                times, positions, velocities, accelerations = braking_waypoints(self.arm, q0, dq0)
                trajectory = JointTrajectory.through(q0, times, positions, velocities, accelerations,
                                                     start_velocity=dq0, start_acceleration=ddq0)
                trajectory.check_limits(self.arm)
            except ValueError:
                return lambda: self._hold_description(q0)
            return lambda: self._install(trajectory, start, False)  # continuous with the reference it brakes

        self.plan(what, compute)

    def _hold_description(self, q: np.ndarray) -> str:
        self.law.hold(q)
        return f"holding {np.round(q, 4).tolist()}"

    def _on_line(self, msg: PoseStamped) -> None:
        try:
            check_frame(msg.header.frame_id, self.base_frame)
            target = pose_to_matrix(msg.pose)
        except ValueError as exc:
            self.refuse("line", exc)
            return
        if self.loop.refused_unless_enabled("line"):
            return
        start, at_rest = self._start()
        if not at_rest:
            self.refuse("line", f"a trajectory is running ({self.remaining_time(start):.3f} s left); a line "
                                "starts from rest")
            return
        q0 = self.law.reference(start)[0].copy()
        duration = self.line_duration

        def compute():  # planning thread; cartesian_line checks branch, steps and limits
            trajectory = cartesian_line(self.arm, q0, target, duration)
            return lambda: self._install(trajectory, start, True)

        self.plan("line", compute)


def main(args: list[str] | None = None) -> int:
    """Entry point ``computed_torque_controller``; 1 if start-up fails."""
    return run(ComputedTorqueControllerNode, NODE_NAME, args)


if __name__ == '__main__':
    sys.exit(main())
