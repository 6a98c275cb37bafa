"""ROS 2 node: the external joint torques of the arm when another commander drives it (issue 17 item 1).

Executable ``external_torque_observer``: the momentum observer (:mod:`youbot_dynamics.control.observer`)
on the joint states and their measured effort alone, with collision detection; it commands nothing.

Interface, behaviour and figures: doc/control.md ("external_torque_observer"); parameters:
youbot_dynamics/nodes/parameters/external_torque_observer.yaml (table in doc/parameters.md).
"""
from __future__ import annotations

import sys
from typing import Any

from rclpy.exceptions import ParameterException
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..arm.description import ArmDescriptionError, load_arm
from ..control.velocity import VelocityFromPositions
from ..dynamics.consistency import check_model
from ..dynamics.paramfile import ModelFileError, load_model
from ..files.paths import config_path
from .common import declare_parameters, run_node
from .controller_node import NOMINAL_MODEL
from .external_torque import QOS_DEPTH, ExternalTorqueMonitor, thresholds_from
from .messages import JointStateReader, stamp_seconds

__all__ = ["ExternalTorqueNode", "main"]

NODE_NAME = "external_torque_observer"
# every joint state, in order, even late (reliable, a queue of 0.5 s at 1 kHz): the observer integrates
# each one (a controller wants only the newest: best effort, depth 1)
STATE_QUEUE = 500


class ExternalTorqueNode(Node):
    """``~/external_torque`` and collisions from the joint states; see doc/control.md."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        p = declare_parameters(self, NODE_NAME)  # several borrowed from the controllers' (controller_common)
        self.arm = load_arm(p['arm_description'] or None)
        model_file = p['model_file'] or str(config_path(NOMINAL_MODEL))
        model = load_model(model_file, self.arm)
        check_model(model, self.arm)  # as the controllers: an impossible model is refused at start-up
        if not p['observer_gain'] > 0.0:
            raise ValueError("observer_gain must be positive: this node is the observer")
        thresholds = thresholds_from(p['collision_thresholds'] or None, p['collision_factor'], model_file,
                                     self.arm.n_joints)
        self.external = ExternalTorqueMonitor(self, self.arm, model, p['observer_gain'], p['friction_eps'],
                                              p['max_state_gap'], thresholds)
        self._reader = JointStateReader(self.arm.joint_names)
        self._velocity = VelocityFromPositions(self.arm.n_joints, p['velocity_filter_time'], p['max_state_gap'])
        self._throttle = float(p['log_throttle_period'])
        self.status_pub = self.create_publisher(String, '~/status', QOS_DEPTH)
        self.create_subscription(JointState, p['joint_states_topic'], self._on_joint_state, STATE_QUEUE)
        detection = ("no collision detection (no collision_thresholds and no joint_rms_errors_nm in the model file)"
                     if thresholds is None else f"collision thresholds {thresholds.round(3).tolist()} N m")
        self.get_logger().info(f"external torques of '{self.arm.name}' from {p['joint_states_topic']} on model "
                               f"{model_file}, observer bandwidth {p['observer_gain']:g} 1/s; {detection}")

    def _on_joint_state(self, msg: JointState) -> None:
        try:
            q, dq, effort = self._reader.read(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignoring joint state: {exc}", throttle_duration_sec=self._throttle)
            return
        stamp, header_stamp = stamp_seconds(msg.header.stamp), msg.header.stamp
        if stamp <= 0.0:
            stamp, header_stamp = self.get_clock().now().nanoseconds * 1e-9, None
        dq = self._velocity.update(stamp, q, dq)
        if self.external.update(stamp, q, dq, effort, measured=True, header_stamp=header_stamp):
            text = self.external.describe_collision()
            self.get_logger().error(text)
            self.status_pub.publish(String(data=text))


def main(args: list[str] | None = None) -> int:
    """Entry point ``external_torque_observer``; 1 if start-up fails."""
    return run_node(NODE_NAME, ExternalTorqueNode, (ArmDescriptionError, ModelFileError, ParameterException,
                                                    ValueError, OSError), args)


if __name__ == '__main__':
    sys.exit(main())
