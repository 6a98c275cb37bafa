"""ROS 2 node: forward kinematics of the joint states and analytic IK on request.

Executable ``kinematics_node``: a thin wrapper around :mod:`youbot_dynamics.arm.kinematics` and
:mod:`youbot_dynamics.arm.ik`.

Interface and behaviour: doc/kinematics.md; parameters: youbot_dynamics/nodes/parameters/kinematics_node.yaml
(table in doc/parameters.md).
"""
from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import MarkerArray

from ..arm.description import ArmDescriptionError, load_arm
from ..arm.ik import IKError, IKSolution, inverse_kinematics, sort_by_distance
from ..arm.kinematics import forward_kinematics, link_frames
from ..contract.parameter_schema import load_schema
from .common import declare_parameters, run_node
from .messages import frame_markers, joint_positions_from_state, joint_trajectory, matrix_to_pose, pose_to_matrix

try:  # built by make setup or colcon (doc/usage.md); without it the node serves the topics only
    from youbot_dynamics_interfaces.srv import ComputeFK, SolveIK
except ImportError:
    ComputeFK = SolveIK = None

__all__ = ["KinematicsNode", "main"]

NODE_NAME = "kinematics_node"
TOOL_FRAME_NAME = "arm_tool"
QOS_DEPTH = 10
#: requests a service keeps until the executor takes them, and answers until the client takes them
#: (rclpy's default for services: 10). A request beyond it is dropped by the middleware without a
#: word, and its client waits forever: with the simulator's 1 kHz joint states, 27-131 of a burst of
#: 200 requests were lost with 10 (doc/kinematics.md, "Bursts of requests")
SERVICE_QUEUE_DEPTH = 1000
SERVICE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=SERVICE_QUEUE_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

# Parameters that may change at runtime (parameters/kinematics_node.yaml); the others are read once at start-up.
_DYNAMIC = tuple(name for name, spec in load_schema(NODE_NAME).items() if not spec.read_only)


class KinematicsNode(Node):
    """Forward kinematics of ``/joint_states``, IK on ``~/ik/target``, services ``~/solve_ik`` and ``~/compute_fk``.

    See doc/kinematics.md and doc/usage.md (the services).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        declare_parameters(self, NODE_NAME)

        path = self.get_parameter('arm_description').value
        self.arm = load_arm(path or None)
        self.base_frame: str = self.get_parameter('base_frame').value
        if not self.base_frame:
            raise ValueError("parameter base_frame must not be empty")
        self.frame_names = tuple(self.arm.link_names) + (TOOL_FRAME_NAME,)
        self._warn_period: float = self.get_parameter('warn_throttle_period').value
        self._read_dynamic_parameters()
        self.add_post_set_parameters_callback(self._on_parameters_set)

        self._q_current: np.ndarray | None = None
        self._last_pose_time: float | None = None  # time.monotonic() of the last pose publication

        self.pose_pub = self.create_publisher(PoseStamped, '~/end_effector_pose', QOS_DEPTH)
        self.markers_pub = self.create_publisher(MarkerArray, '~/link_frames', QOS_DEPTH)
        self.ik_pub = self.create_publisher(JointTrajectory, '~/ik/solutions', QOS_DEPTH)
        topic = self.get_parameter('joint_states_topic').value
        self.create_subscription(JointState, topic, self._on_joint_state, QOS_DEPTH)
        self.create_subscription(PoseStamped, '~/ik/target', self._on_ik_target, QOS_DEPTH)
        # numba loads the FK kernel from its cache at its first call (0.3 s; a compile on the first start after
        # an install): here, not in the first request of a burst (doc/kinematics.md, "Bursts of requests")
        q_mid = 0.5 * (self.arm.position_min + self.arm.position_max)
        try:
            inverse_kinematics(self.arm, forward_kinematics(self.arm, q_mid), q_current=q_mid)
        except ValueError:  # IKError: compiled either way
            pass
        if SolveIK is None:
            self.get_logger().warning("youbot_dynamics_interfaces is not installed: no ~/solve_ik and ~/compute_fk "
                                      "services (make setup or colcon build builds it; doc/usage.md)")
        else:
            self.create_service(SolveIK, '~/solve_ik', self._on_solve_ik, qos_profile=SERVICE_QOS)
            self.create_service(ComputeFK, '~/compute_fk', self._on_compute_fk, qos_profile=SERVICE_QOS)
        self.get_logger().info(
            f"arm '{self.arm.name}' from {self.arm.source}; joint states on {topic}, frame {self.base_frame}")

    # -- parameters -----------------------------------------------------------------------------

    def _read_dynamic_parameters(self) -> None:
        self.max_pose_rate = float(self.get_parameter('max_pose_rate').value)
        self.publish_markers = bool(self.get_parameter('publish_markers').value)
        self.marker_scale = float(self.get_parameter('marker_scale').value)
        self.orientation_tolerance = float(self.get_parameter('orientation_tolerance').value)
        self.project_orientation = bool(self.get_parameter('project_orientation').value)

    def _on_parameters_set(self, parameters: list) -> SetParametersResult:
        if any(p.name in _DYNAMIC for p in parameters):
            self._read_dynamic_parameters()
            if any(p.name == 'max_pose_rate' for p in parameters):
                self._last_pose_time = None  # the new rate applies from the next joint state
        return SetParametersResult(successful=True)

    # -- forward kinematics ---------------------------------------------------------------------

    def _on_joint_state(self, msg: JointState) -> None:
        try:
            q = joint_positions_from_state(msg, self.arm.joint_names)
        except ValueError as exc:
            self.get_logger().warning(f"ignoring joint state: {exc}", throttle_duration_sec=self._warn_period)
            return
        self._q_current = q
        now = time.monotonic()
        if (self.max_pose_rate > 0.0 and self._last_pose_time is not None
                and now - self._last_pose_time < 1.0 / self.max_pose_rate):
            return
        self._last_pose_time = now
        header = Header(stamp=msg.header.stamp, frame_id=self.base_frame)
        pose = PoseStamped(header=header, pose=matrix_to_pose(forward_kinematics(self.arm, q)))
        self.pose_pub.publish(pose)
        if self.publish_markers:
            frames = link_frames(self.arm, q)
            self.markers_pub.publish(frame_markers(frames, self.frame_names, header, self.marker_scale))

    # -- inverse kinematics ---------------------------------------------------------------------

    def _on_ik_target(self, msg: PoseStamped) -> None:
        configurations: list[np.ndarray] = []
        try:
            configurations = self._solve(msg)
        except ValueError as exc:  # IKError is a ValueError
            kind = type(exc).__name__ if isinstance(exc, IKError) else "invalid target"
            self.get_logger().warning(f"IK: no solution ({kind}): {exc}")
        header = Header(stamp=self.get_clock().now().to_msg(), frame_id=self.base_frame)
        self.ik_pub.publish(joint_trajectory(self.arm.joint_names, configurations, header))

    def _solve(self, msg: PoseStamped) -> list[np.ndarray]:
        frame = msg.header.frame_id
        if frame and frame != self.base_frame:
            raise ValueError(f"frame {frame} is not the base frame {self.base_frame} (no tf2 here)")
        return [s.q for s in self._solutions(pose_to_matrix(msg.pose), self._q_current)]

    def _solutions(self, target: np.ndarray, reference: np.ndarray | None) -> list[IKSolution]:
        """IK solutions of ``target`` within the limits, nearest (max-norm) to ``reference`` first."""
        solutions = inverse_kinematics(self.arm, target, q_current=reference, project=self.project_orientation,
                                       include_outside_limits=False,
                                       orientation_tolerance=self.orientation_tolerance)
        if solutions and solutions[0].projection_angle > 0.0:
            self.get_logger().info(f"IK: target orientation projected by "
                                   f"{math.degrees(solutions[0].projection_angle):.4g} deg onto the arm plane")
        return solutions if reference is None else sort_by_distance(solutions, reference)

    # -- services (youbot_dynamics_interfaces) --------------------------------------------------

    def _on_solve_ik(self, request: Any, response: Any) -> Any:
        """``~/solve_ik``: every branch (or the nearest) within the limits; refused with the IK's diagnosis."""
        try:
            seed = self.arm.check_q(request.seed, "seed") if len(request.seed) else self._q_current
            solutions = self._solutions(pose_to_matrix(request.pose), seed)
        except ValueError as exc:  # IKError is a ValueError: the diagnosis the CLI prints
            response.success, response.message = False, str(exc)
            return response
        solutions = solutions if request.all_branches else solutions[:1]
        response.solutions = [JointTrajectoryPoint(positions=s.q.tolist()) for s in solutions]
        response.branches = [s.branch for s in solutions]
        response.success = True
        return response

    def _on_compute_fk(self, request: Any, response: Any) -> Any:
        """``~/compute_fk``: the tool pose in the base frame of five joint positions; refused on a wrong
        length or a joint more than a turn beyond its limits; outside the limits answered, with a word."""
        try:
            q = self.arm.joint_positions(request.positions, "positions")
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.pose = matrix_to_pose(forward_kinematics(self.arm, q))
        response.success = True
        outside = self.arm.outside_limits(q)
        response.message = f"positions {outside} (the arm cannot take them)" if outside else ""
        return response


def main(args: list[str] | None = None) -> int:
    """Entry point ``kinematics_node``: spin until Ctrl-C or an external shutdown; 1 if start-up fails."""
    return run_node(NODE_NAME, KinematicsNode, (ArmDescriptionError, ParameterException, ValueError), args)


if __name__ == '__main__':
    sys.exit(main())
