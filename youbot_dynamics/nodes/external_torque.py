"""The external-torque estimate of a node (issue 17): the momentum observer on the arm's joint
states, ``~/external_torque`` and collision detection, shared by the controller nodes (on the
measured effort or their own torque) and :mod:`.external_torque_observer` (on the measured effort). The physics is in
:mod:`youbot_dynamics.control.observer`."""
from __future__ import annotations

from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from numpy.typing import NDArray
from rclpy.node import Node
from sensor_msgs.msg import JointState

from ..arm.description import ArmDescription
from ..control import CollisionDetector, FloatController, MomentumObserver, collision_thresholds
from ..control.observer import STICTION_FACTOR, unfitted_rms
from ..dynamics.model import DynamicModel
from ..dynamics.paramfile import identification_block

__all__ = ["ExternalTorqueMonitor", "create_observer", "thresholds_from"]

Array = NDArray[np.float64]

QOS_DEPTH = 10


def thresholds_from(given: Any, factor: float, model_file: str, n: int) -> Array | None:
    """Collision thresholds [N m] per joint: ``given`` (one value or n), else ``factor`` x the model
    file's RMS torque error per joint on motions it was not fitted on (its identification block,
    :func:`~youbot_dynamics.control.observer.unfitted_rms`,
    :func:`~youbot_dynamics.control.collision_thresholds`), else ``None`` (no detection)."""
    if given is not None:
        values = np.asarray(given, dtype=float)
        if values.ndim != 1 or values.size not in (1, n):
            raise ValueError(f"collision_thresholds must be one value or {n}, got {values.tolist()}")
        return np.broadcast_to(values, (n,)).copy()
    rms = unfitted_rms(identification_block(model_file))
    return None if rms is None else collision_thresholds(rms, factor)


class ExternalTorqueMonitor:
    """The observer of ``model`` (bandwidth ``gain`` [1/s]) publishing ``~/external_torque`` on ``node``
    (``sensor_msgs/JointState``: the joint names, ``effort`` = the estimate [N m], stamped with the
    joint state used), and a collision detector when ``thresholds`` are given."""

    def __init__(self, node: Node, arm: ArmDescription, model: DynamicModel, gain: float, friction_eps: float,
                 max_step: float, thresholds: Array | None) -> None:
        self.arm = arm
        self.node = node
        self._warned_no_effort = False
        self.observer = MomentumObserver(model, gain, friction_eps, max_step)
        self.detector = CollisionDetector(thresholds) if thresholds is not None else None
        self.collisions = 0
        self.residual = np.zeros(arm.n_joints)
        self.stamp = 0.0  # of the joint state of the last update
        self._msg = JointState(name=list(arm.joint_names))
        self._pub = node.create_publisher(JointState, '~/external_torque', QOS_DEPTH)

    def update(self, stamp: float, q: Array, dq: Array, tau: Array | None, measured: bool = False,
               header_stamp: Time | None = None) -> bool:
        """One joint state (stamp [s]) and the motor torque from it on, or with ``measured`` the state's
        measured effort (the torque up to it) (``None``: unknown, the observer restarts); publishes the
        estimate, stamped ``header_stamp`` (the joint state's own, exactly; ``stamp`` to the
        nanosecond a float holds, 0.5 us, when not given). ``True`` when a collision begins."""
        observe = self.observer.update_measured if measured else self.observer.update
        if tau is None and not self._warned_no_effort:
            self._warned_no_effort = True
            self.node.get_logger().warning("the joint states carry no effort: no external-torque estimate and no "
                                           "collision detection until they do (a controller's observer_torque "
                                           "'command' integrates its own torque instead)")
        try:
            r = observe(stamp, q, dq, tau)  # checks the state and the torque
        except ValueError:  # NaN, or no effort (None): nothing to integrate
            self.observer.reset()
            return False
        self.residual = r
        self.stamp = stamp
        msg = self._msg
        if header_stamp is not None:  # copied: the message keeps no reference to the joint state's
            msg.header.stamp.sec, msg.header.stamp.nanosec = header_stamp.sec, header_stamp.nanosec
        else:
            msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(1e9 * (stamp % 1.0))
        msg.effort = r.tolist()
        self._pub.publish(msg)
        if self.detector is None:
            return False
        up, down = self.observer.terms.kinetic_levels(self.observer.gravity)
        if self.detector.update(stamp, r, dq, STICTION_FACTOR * np.maximum(up, down)) is True:
            self.collisions += 1
            return True
        return False

    def describe_collision(self) -> str:
        """What the last collision was: the estimate, the thresholds, the joints beyond them and the
        stamp of the joint state it was seen on."""
        joints = ", ".join(self.arm.joint_names[j] for j in self.detector.joints)
        return (f"collision: external torque {np.round(self.residual, 2).tolist()} N m beyond the thresholds "
                f"{np.round(self.detector.thresholds, 2).tolist()} on {joints} at stamp {self.stamp:.4f} s")

    def set_model(self, model: DynamicModel) -> None:
        self.observer.set_model(model)

    def reset_detection(self) -> None:
        if self.detector is not None:
            self.detector.reset()


def create_observer(node: Node, arm: ArmDescription, model: DynamicModel, params: Any,
                    model_file: str) -> tuple[FloatController | None, ExternalTorqueMonitor | None]:
    """A controller node's ``(float law, observer)`` from its parameters ``params`` (fields of
    controller_common): the law of the collision reaction 'float' (or None), and the external-torque
    estimate with collision detection (None: ``observer_gain`` 0); ``ValueError`` for a collision
    reaction without an observer or thresholds."""
    reaction = params.collision_reaction
    float_law = FloatController(model, arm, friction_eps=params.friction_eps) if reaction == 'float' else None
    if params.observer_gain == 0.0:
        if reaction != 'none':
            raise ValueError("collision_reaction needs the observer: observer_gain must be positive")
        return float_law, None
    thresholds = thresholds_from(params.collision_thresholds, params.collision_factor, model_file, arm.n_joints)
    if thresholds is None and reaction != 'none':
        raise ValueError(f"collision_reaction '{reaction}' needs collision_thresholds: the model file "
                         f"{model_file} has no joint_rms_errors_nm to derive them from")
    return float_law, ExternalTorqueMonitor(node, arm, model, float(params.observer_gain), params.friction_eps,
                                            params.state_timeout, thresholds)
