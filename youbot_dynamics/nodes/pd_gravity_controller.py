"""ROS 2 node: PD + gravity regulation of the youBot arm to a goal position (seed 002, (4.1)).

Executable ``pd_gravity_controller``: :class:`youbot_dynamics.control.PDGravityController` on
``~/goal`` and ``~/goal_pose``, inside the common :class:`~.controller_node.ControllerNode`.

Interface, behaviour and figures: doc/control.md; parameters:
PDGravityConfig (youbot_dynamics/control/laws.py) and controller_common (table in doc/parameters.md).
"""
from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from ..arm.ik import inverse_kinematics, sort_by_distance
from .controller_node import QOS_DEPTH, ControllerNode, run
from .messages import check_frame, joint_positions_from_state, pose_to_matrix

__all__ = ["PDGravityControllerNode", "main"]

NODE_NAME = "pd_gravity_controller"


class PDGravityControllerNode(ControllerNode):
    """PD + gravity regulation to goals on ``~/goal`` and ``~/goal_pose``; see doc/control.md."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)

    def _create_interfaces(self) -> None:
        self.create_subscription(JointState, '~/goal', self._on_goal, QOS_DEPTH)
        self.create_subscription(PoseStamped, '~/goal_pose', self._on_goal_pose, QOS_DEPTH)

    # -- goals ----------------------------------------------------------------------------------

    def _on_goal(self, msg: JointState) -> None:
        try:
            q_goal = joint_positions_from_state(msg, self.arm.joint_names)
        except ValueError as exc:
            self.refuse("goal", exc)
            return
        self.loop.apply("goal", lambda: self._install_goal(q_goal))

    def _install_goal(self, q_goal: np.ndarray, detail: str = "") -> str:
        # TrajectoryError (limits, NaN): refused, the previous goal stays; ~0.2 ms (closed-form profile)
        now = time.perf_counter()
        duration = self.law.set_goal(q_goal, now)
        self.loop.watch_arrival(self.law.goal, now, duration)  # "goal reached" or "not reached" follows
        return f"{np.round(self.law.goal, 4).tolist()}{detail}, planned to arrive in {duration:.2f} s"

    def _on_goal_pose(self, msg: PoseStamped) -> None:
        try:
            check_frame(msg.header.frame_id, self.base_frame)
            target = pose_to_matrix(msg.pose)
        except ValueError as exc:
            self.refuse("goal pose", exc)
            return
        q_now = self.measured_position()

        def compute():  # planning thread: IK (IKError is a ValueError: refused)
            solutions = inverse_kinematics(self.arm, target, q_current=q_now, include_outside_limits=False)
            best = sort_by_distance(solutions, q_now)[0] if q_now is not None else solutions[0]
            return lambda: self._install_goal(best.q, f" (IK branch {best.branch}, {len(solutions)} feasible)")

        self.plan("goal pose", compute)


def main(args: list[str] | None = None) -> int:
    """Entry point ``pd_gravity_controller``; 1 if start-up fails."""
    return run(PDGravityControllerNode, NODE_NAME, args)


if __name__ == '__main__':
    sys.exit(main())
