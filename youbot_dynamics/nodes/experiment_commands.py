"""The commands of the identification experiment on the arm's chosen interface (:class:`ExperimentCommands`):
the session's horizons as stamped trajectory messages (``trajectory``), its set-point every cycle
(``position``) or the effort loop's torque (``effort``, :class:`~..identification.experiment.effort.EffortLoop`),
and on the effort interface the release to the drives when the states go stale or the node stops
(doc/identification.md, doc/safety.md)."""
from __future__ import annotations

from typing import Any, Callable

from rclpy.node import Node
from rclpy.time import Time
from std_msgs.msg import Float64MultiArray, Header
from trajectory_msgs.msg import JointTrajectory

from ..arm.description import ArmDescription
from ..control.release import release_waypoints
from ..identification.experiment.effort import EffortLoop
from ..identification.experiment.session import ExcitationSession, JointSample
from .messages import trajectory_message

__all__ = ["ExperimentCommands"]

QOS_DEPTH = 10


class ExperimentCommands:
    """What ``node`` sends the arm on ``interface`` (``position``, ``effort`` or ``trajectory``;
    topics from the node's parameters ``p``), ``controller`` the effort loop (effort only), the
    session's trajectory horizons every ``stream_period`` [s]; ``fresh_sample(now)`` is the newest
    joint state if it is fresh (effort: no feedback, no torque), ``latest()`` the newest at all."""

    def __init__(self, node: Node, arm: ArmDescription, p: dict[str, Any], controller: EffortLoop | None,
                 stream_period: float, fresh_sample: Callable[[float], JointSample | None],
                 latest: Callable[[], JointSample | None]) -> None:
        self._node, self._arm, self.interface, self.controller = node, arm, p['command_interface'], controller
        self._stream_period, self._fresh_sample, self._latest = stream_period, fresh_sample, latest
        self.trajectory_topic = p['trajectory_topic']
        self.position_pub = self.effort_pub = self.trajectory_pub = None
        if self.interface == 'position':
            self.position_pub = node.create_publisher(Float64MultiArray, p['position_command_topic'], QOS_DEPTH)
        elif self.interface == 'effort':
            self.effort_pub = node.create_publisher(Float64MultiArray, p['effort_command_topic'], QOS_DEPTH)
        # effort: the release to the drives (release); trajectory: the experiment's waypoints
        if self.interface in ('effort', 'trajectory'):
            self.trajectory_pub = node.create_publisher(JointTrajectory, self.trajectory_topic, QOS_DEPTH)
        self.released = False  # effort: the arm was handed to the drives (no torque until the next experiment)
        self._next_message = 0.0  # node time of the next streamed trajectory message

    def stream(self, now: float, session: ExcitationSession) -> None:
        """Streamed commands: the next horizon every ``stream_period`` (trajectory), the set-point
        (position) or the torque (effort) every cycle."""
        if self.interface == 'trajectory':
            if session.moving and now >= self._next_message:
                self.send_waypoints(now, session)
        elif self.interface == 'position':
            self.position_pub.publish(Float64MultiArray(data=session.reference(now)[0].tolist()))
        elif self.interface == 'effort' and not self.released:
            sample = self._fresh_sample(now)
            if sample is None:  # no feedback, no torque: the drives take the arm
                self.release("joint states stale")
                return
            tau = self.controller.torque(session.reference(now), sample.q, sample.dq, now)
            self.effort_pub.publish(Float64MultiArray(data=tau.tolist()))

    def phase_changed(self, now: float, session: ExcitationSession) -> None:
        """A new phase: its trajectory message at once (trajectory), and the streamed command."""
        if self.interface == 'trajectory':
            self.send_waypoints(now, session)
        if session.commanding:
            self.stream(now, session)

    def send_waypoints(self, now: float, session: ExcitationSession) -> None:
        """The session's trajectory message for ``now`` (the next horizon, or the stop), if any,
        stamped ``now``: a trajectory controller that honours the stamp (ros2_control's) times
        the waypoints from when they were planned, not from when the message arrived."""
        waypoints = session.waypoints(now)
        if waypoints is not None:
            clock_type = self._node.get_clock().clock_type
            header = Header(stamp=Time(nanoseconds=round(now * 1e9), clock_type=clock_type).to_msg())
            self.trajectory_pub.publish(trajectory_message(self._arm.joint_names, *waypoints, header=header))
            self._next_message = now + self._stream_period

    def release(self, why: str) -> None:
        """Effort interface: hand the arm to the drives instead of leaving it to zero torque (which
        drops it once their command timeout stops the motors): a braking trajectory from the newest
        joint state to rest, held by their position control (control/release.py, doc/safety.md); no
        torque is sent until the next experiment (:meth:`restart`)."""
        latest = self._latest()
        if self.released or latest is None:
            return
        self.released = True
        waypoints = release_waypoints(self._arm, latest.q, latest.dq)
        self.trajectory_pub.publish(trajectory_message(self._arm.joint_names, *waypoints))
        self._node.get_logger().warning(f"{why}: released the arm to the drives on {self.trajectory_topic} "
                                        f"(braking to rest in {waypoints[0][-1]:.2f} s, held there)")

    def restart(self) -> None:
        """A new experiment begins: commands again (after a release)."""
        self.released = False
