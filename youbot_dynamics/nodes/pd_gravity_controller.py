"""ROS 2 node: PD + gravity regulation of the youBot arm to a goal position (seed 002, (4.1)).

``tau = Kp (q_d - q) - Kd q' + G(q) [+ t_f(q')]`` on the model of ``model_file``
(:class:`youbot_dynamics.control.PDGravityController`), inside the safety guard of
:mod:`.controller_node` (joint states, torque topic, ``~/enable``, ``~/state``, ``~/status``,
diagnostics, faults: see there). Goals:

* ``~/goal`` (``sensor_msgs/JointState``): the positions of the arm joints, picked by name;
* ``~/goal_pose`` (``geometry_msgs/PoseStamped`` in ``base_frame``): the tool pose, solved by the
  analytic IK (4 branches) in the planning thread; of the solutions inside the joint limits the one
  closest (max-norm) to the measured position becomes the goal.

A goal outside the joint limits, with NaN, unreachable, or sent while the controller is disabled
is refused: the previous goal stays, the reason is logged and published on ``~/status``. Enabling
holds the current position (the goal is reset to it). A goal is not applied as a step: the
reference moves from its current value to the goal along a synchronized quintic profile whose
peak speed is ``goal_velocity_fraction`` (default 0.7) of ``velocity_max`` and whose acceleration
stays within ``acceleration_max`` (:mod:`youbot_dynamics.control.laws`, "Shaped goals"; the
accepted goal's status gives its duration). ``q_desired`` on ``~/state`` is that moving reference
``q_d(t)`` (as for the computed-torque controller), :attr:`~youbot_dynamics.control.PDGravityController.goal`
the final goal.

Default gains (``kp``, ``kd`` unset): ``Kp = max(m bandwidth^2, fc / static_accuracy)``,
``Kd = 2 damping sqrt(Kp m)`` on the model's reference inertia ``m`` and Coulomb friction ``fc``.
"""
from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState

from ..control import PDGravityController
from ..control.laws import GOAL_VELOCITY_FRACTION, PD_BANDWIDTH, STATIC_ACCURACY
from ..ik import inverse_kinematics, sort_by_distance
from .controller_node import QOS_DEPTH, ControllerNode, run
from .controller_params import BOOL, DOUBLE, descriptor
from .conversions import joint_positions_from_state, pose_to_matrix

__all__ = ["PDGravityControllerNode", "main"]

NODE_NAME = "pd_gravity_controller"


class PDGravityControllerNode(ControllerNode):
    """PD + gravity regulation to goals on ``~/goal`` and ``~/goal_pose``; see the module docstring."""

    LAW_NAME = "PD + gravity"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)

    def _declare_parameters(self) -> None:
        self.declare_parameter('bandwidth', PD_BANDWIDTH, descriptor(
            "Natural frequency [rad/s] of the designed gains on each joint's reference inertia.", DOUBLE,
            range_=(0.1, 1000.0)))
        self.declare_parameter('static_accuracy', STATIC_ACCURACY, descriptor(
            "Designed gains: Kp at least fc / static_accuracy [rad], so that static friction can hold a "
            "joint at most this far from the goal.", DOUBLE, range_=(1e-6, 1.0)))
        self.declare_parameter('gravity_compensation', True, descriptor(
            "Add the model's gravity G(q) (4.1); false = PD only (a baseline: the arm sags).", BOOL))
        self.declare_parameter('goal_velocity_fraction', GOAL_VELOCITY_FRACTION, descriptor(
            "Peak speed of the shaped profile to a new goal, as a fraction of velocity_max (the safety guard "
            "damps joints beyond 0.9 x velocity_max).", DOUBLE, range_=(0.05, 0.9)))

    def _create_law(self) -> PDGravityController:
        return PDGravityController(self.model, self.arm, kp=self._optional_array('kp'), kd=self._optional_array('kd'),
                                   bandwidth=self._param('bandwidth'), damping=self._param('damping'),
                                   static_accuracy=self._param('static_accuracy'),
                                   friction_compensation=self._param('friction_compensation'),
                                   friction_eps=self._param('friction_eps'),
                                   gravity_compensation=self._param('gravity_compensation'),
                                   goal_velocity_fraction=self._param('goal_velocity_fraction'))

    def _create_interfaces(self) -> None:
        self.create_subscription(JointState, '~/goal', self._on_goal, QOS_DEPTH)
        self.create_subscription(PoseStamped, '~/goal_pose', self._on_goal_pose, QOS_DEPTH)

    def _hold(self, q: np.ndarray) -> None:
        self.law.hold(q)

    def desired_position(self, now: float) -> np.ndarray | None:
        return None if self.law.profile is None else self.law.reference(now)[0]

    # -- goals ----------------------------------------------------------------------------------

    def _on_goal(self, msg: JointState) -> None:
        try:
            q_goal = joint_positions_from_state(msg, self.arm.joint_names)
        except ValueError as exc:
            self.refuse("goal", exc)
            return
        self.apply("goal", lambda: self._install_goal(q_goal))

    def _install_goal(self, q_goal: np.ndarray, detail: str = "") -> str:
        # TrajectoryError (limits, NaN): refused, the previous goal stays; ~0.2 ms (closed-form profile)
        duration = self.law.set_goal(q_goal, time.perf_counter())
        return f"{np.round(self.law.goal, 4).tolist()}{detail}, reached in {duration:.2f} s"

    def _on_goal_pose(self, msg: PoseStamped) -> None:
        try:
            self.check_frame(msg.header.frame_id)
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
