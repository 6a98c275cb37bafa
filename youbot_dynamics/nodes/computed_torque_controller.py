"""ROS 2 node: computed-torque tracking of joint trajectories on the youBot arm (seed 002, (4.8)).

``tau = M(q) (q''_d + Kd e' + Kp e) + C(q, q') q' + G(q) [+ t_f(q'_d)]`` on the model of
``model_file`` (:class:`youbot_dynamics.control.ComputedTorqueController`), inside the safety guard
of :mod:`.controller_node` (joint states, torque topic, ``~/enable``, ``~/state``, ``~/status``,
diagnostics, faults: see there). References:

* ``~/trajectory`` (``trajectory_msgs/JointTrajectory``, joints by name in any order): quintic
  interpolation from the current reference (position, velocity and acceleration: a running
  trajectory is replaced without a jump) through the points, each reached at its
  ``time_from_start`` (strictly increasing) counted from the reception; velocities and
  accelerations of the points are used when every point gives them (else estimated / zero).
  A first point at ``time_from_start = 0`` is the start state: accepted if every joint is within
  :data:`~youbot_dynamics.trajectory_start.START_TOLERANCE` (0.02 rad) of the current reference
  and then dropped, else refused with the distance (:func:`~youbot_dynamics.trajectory_start.drop_start_point`).
  ``header.stamp`` is ignored (execution starts once planned, a few ms after reception; a trajectory
  replacing a running one starts at its reception, continuous with it). An empty trajectory (no
  points, or only the start point) stops: the current desired position is held. After the last
  point it is held. At most :data:`~youbot_dynamics.control.trajectory.MAX_TRAJECTORY_POINTS`
  (5,000) points: a larger message is refused on receipt, before it is deserialized. The topic is
  subscribed serialized (``raw``): rclpy's deserialization (~25 us per point) and the conversion
  run in the planning thread, so that a big message never holds up the control loop;
* ``~/line`` (``geometry_msgs/PoseStamped`` in ``base_frame``): the tool moves on a straight line
  with the same orientation interpolation (slerp) from its desired pose to the target in
  ``line_duration`` s (at most 50 s: 100 IK samples per second, at most ``MAX_TRAJECTORY_POINTS``),
  rest to rest, solved by the IK in the branch of the start configuration
  (:func:`youbot_dynamics.control.cartesian_line`; refused on a branch change, a joint jump near a
  singularity, an unreachable orientation or the joint limits). Only from rest: refused while a
  trajectory is running.

Both are planned (deserialized, converted, interpolated, solved, limit-checked; at most ~0.5 s) in
the planning thread and installed by the
control loop at its next cycle. A reference reaching outside the joint limits or beyond
``velocity_max`` / ``acceleration_max`` anywhere (exact extrema of the quintics), malformed, sent
while the controller is disabled, or overtaken by another reference while planned is refused: the
previous reference stays, the reason is logged and published on ``~/status``.
Enabling holds the current position; a reference received during the enable ramp starts when the
ramp ends.
"""
from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from ..control import ComputedTorqueController, JointTrajectory, cartesian_line
from ..control.laws import CT_BANDWIDTH, CT_INTEGRAL_RATE
from ..control.trajectory import LINE_IK_RATE, MAX_TRAJECTORY_POINTS
from ..trajectory_start import drop_start_point
from .controller_node import QOS_DEPTH, ControllerNode, run
from .controller_params import BOOL, DOUBLE, descriptor
from .conversions import check_serialized_trajectory, pose_to_matrix, read_trajectory

__all__ = ["ComputedTorqueControllerNode", "main"]

NODE_NAME = "computed_torque_controller"


class ComputedTorqueControllerNode(ControllerNode):
    """Computed-torque tracking of ``~/trajectory`` and ``~/line``; see the module docstring."""

    LAW_NAME = "computed torque"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)

    def _declare_parameters(self) -> None:
        self.declare_parameter('bandwidth', CT_BANDWIDTH, descriptor(
            "Natural frequency [rad/s] of the error dynamics e'' + Kd e' + Kp e = 0 (designed gains).", DOUBLE,
            range_=(0.1, 1000.0)))
        self.declare_parameter('integral_rate', CT_INTEGRAL_RATE, descriptor(
            "Integral action Ki = integral_rate x Kp [1/s] on the tracking error (a third pole near "
            "-integral_rate); its torque at most the model's Coulomb level per joint, restarted on enable and "
            "with a new payload; 0 = the seed's (4.8) without it.", DOUBLE, range_=(0.0, 100.0)))
        self.declare_parameter('model_feedforward', True, descriptor(
            "Computed torque (4.8); false = a PD on the same error gains scaled by the model's reference "
            "inertia, without M(q), C, G, q''_d or friction (a baseline).", BOOL))
        self.declare_parameter('line_duration', 2.0, descriptor(
            "Duration [s] of a Cartesian straight line on ~/line (rest to rest); a line too fast for the "
            "joint velocity or acceleration limits is refused. At most 50 s: the line is solved at 100 IK samples "
            "per second, at most 5000 samples (bounded planning time).", DOUBLE,
            range_=(0.01, MAX_TRAJECTORY_POINTS / LINE_IK_RATE)))

    def _create_law(self) -> ComputedTorqueController:
        return ComputedTorqueController(self.model, self.arm, kp=self._optional_array('kp'),
                                        kd=self._optional_array('kd'), bandwidth=self._param('bandwidth'),
                                        damping=self._param('damping'),
                                        friction_compensation=self._param('friction_compensation'),
                                        friction_eps=self._param('friction_eps'),
                                        model_feedforward=self._param('model_feedforward'),
                                        integral_rate=self._param('integral_rate'))

    def _create_interfaces(self) -> None:
        self.line_duration = float(self._param('line_duration'))
        # raw: the executor only copies the bytes; deserializing is planning work (module docstring)
        self.create_subscription(JointTrajectoryMsg, '~/trajectory', self._on_trajectory, QOS_DEPTH, raw=True)
        self.create_subscription(PoseStamped, '~/line', self._on_line, QOS_DEPTH)

    def _hold(self, q: np.ndarray) -> None:
        self.law.hold(q)

    def desired_position(self, now: float) -> np.ndarray | None:
        return None if self.law.trajectory is None else self.law.reference(now)[0]

    # -- references -----------------------------------------------------------------------------

    def remaining_time(self, now: float) -> float:
        """Seconds until the current reference ends (0 when holding)."""
        law = self.law
        return 0.0 if law.trajectory is None else max(law.start_time + law.trajectory.duration - now, 0.0)

    def _start(self) -> tuple[float, bool]:
        """``(start, at_rest)``: a new reference starts now or when the enable ramp ends, from the
        current reference at that time; ``at_rest`` if that reference no longer moves then."""
        start = max(time.perf_counter(), self.ramp_end)
        return start, self.remaining_time(start) == 0.0

    def _install(self, trajectory: JointTrajectory, start: float, at_rest: bool) -> str:
        """Follow a planned (already limit-checked) trajectory. From rest it starts at installation
        (or the end of the ramp), else at the planned ``start``: continuous with the moving
        reference it replaces, whose state at ``start`` it starts from."""
        if at_rest:
            start = max(time.perf_counter(), self.ramp_end)
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
        if not self.enabled:
            self.refuse("trajectory", f"the controller is {self.guard.state.value} (call ~/enable first)")
            return
        start, at_rest = self._start()
        q0, dq0, ddq0 = (x.copy() for x in self.law.reference(start))
        if count == 0:  # stop: hold the desired position
            self.apply("empty trajectory (stop)", lambda: self._hold_description(q0))
            return

        def compute():  # planning thread
            times, positions, velocities, accelerations = drop_start_point(*read_trajectory(data, names), q0,
                                                                           joint_names=names)
            if times.size == 0:  # only the start point: hold the desired position
                return lambda: self._hold_description(q0)
            trajectory = JointTrajectory.through(q0, times, positions, velocities, accelerations,
                                                 start_velocity=dq0, start_acceleration=ddq0)
            trajectory.check_limits(self.arm)
            return lambda: self._install(trajectory, start, at_rest)

        self.plan("trajectory", compute)

    def _hold_description(self, q: np.ndarray) -> str:
        self.law.hold(q)
        return f"holding {np.round(q, 4).tolist()}"

    def _on_line(self, msg: PoseStamped) -> None:
        try:
            self.check_frame(msg.header.frame_id)
            target = pose_to_matrix(msg.pose)
        except ValueError as exc:
            self.refuse("line", exc)
            return
        if not self.enabled:
            self.refuse("line", f"the controller is {self.guard.state.value} (call ~/enable first)")
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
