"""ROS 2 node: the external joint torques of the arm when another commander drives it (issue 17 item 1).

The momentum observer (:mod:`youbot_dynamics.control.observer`) on the joint states alone: the
motor torque it integrates is the joint state's measured effort (the drives' current x kt x gear),
so it works under the drives' position, velocity or trajectory control, a trajectory controller,
another torque controller. The controller nodes have the same estimate built in, on their own
(noise-free) torque: use this node when none of them commands the arm. It

* subscribes ``joint_states_topic`` (position, velocity and effort of the arm joints, by name; a
  state without effort restarts the observer) reliably with a queue of 500 (every state is
  integrated, in order, even late), differentiating the positions as the controllers do
  (``velocity_filter_time``; the youBot drives' reported velocity lags ~10 ms);
* publishes ``~/external_torque`` (``sensor_msgs/JointState``, ``effort`` [N m], stamped with the
  joint state used) for every joint state;
* detects collisions (``collision_thresholds`` or ``collision_factor`` x the model file's held-out RMS
  error, :mod:`.external_torque`) and reports each on ``~/status`` (``std_msgs/String``) and in the
  log; it commands nothing, so there is no reaction.

The measured effort carries the current measurement's noise, gain error and offset: the estimate
is noisier and has an offset that the controllers' own one has not.
"""
from __future__ import annotations

import sys
from typing import Any

from rclpy.exceptions import ParameterException
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..arm import ArmDescriptionError, load_arm
from ..control.velocity import VelocityFromPositions
from ..dynamics.consistency import check_model
from ..dynamics.paramfile import ModelFileError, load_model
from ..paths import config_path
from .common import run_node
from .controller_node import NOMINAL_MODEL
from .controller_params import COMMON_PARAMETERS, DOUBLE, descriptor
from .conversions import JointStateReader, stamp_seconds
from .external_torque import QOS_DEPTH, ExternalTorqueMonitor, thresholds_from

__all__ = ["ExternalTorqueNode", "main"]

NODE_NAME = "external_torque_observer"
# every joint state, in order, even late (reliable, a queue of 0.5 s at 1 kHz): the observer integrates
# each one (a controller wants only the newest: best effort, depth 1)
STATE_QUEUE = 500


class ExternalTorqueNode(Node):
    """``~/external_torque`` and collisions from the joint states; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        c = COMMON_PARAMETERS  # the controllers' parameters of the same names (controller_node)
        self.declare_parameter('arm_description', *c['arm_description'])
        self.declare_parameter('model_file', *c['model_file'])
        self.declare_parameter('joint_states_topic', *c['joint_states_topic'])
        self.declare_parameter('observer_gain', *c['observer_gain'])
        self.declare_parameter('collision_thresholds', *c['collision_thresholds'])
        self.declare_parameter('collision_factor', *c['collision_factor'])
        self.declare_parameter('friction_eps', *c['friction_eps'])
        self.declare_parameter('velocity_filter_time', *c['velocity_filter_time'])
        self.declare_parameter('max_state_gap', 0.005, descriptor(
            "A gap between joint states longer than this [s] restarts the observer's integral (the estimate "
            "carries over) and the differentiation: a state's measured effort stands for the drives' torque until "
            "the next state, and over a longer gap their own loop changes it (at 1 kHz: 5 states lost).", DOUBLE,
            range_=(1e-4, 1.0)))
        self.declare_parameter('log_throttle_period', *c['log_throttle_period'])
        p = {name: parameter.value for name, parameter in self.get_parameters_by_prefix('').items()}
        self.arm = load_arm(p['arm_description'] or None)
        model_file = p['model_file'] or str(config_path(NOMINAL_MODEL))
        model = load_model(model_file)
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
