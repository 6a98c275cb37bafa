"""The kinematics node over real DDS (in-process and as a subprocess).

Domain 61, localhost discovery only, a private rclpy Context for this module.
"""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from youbot_dynamics.arm.description import default_arm  # noqa: E402
from youbot_dynamics.contract.parameter_schema import load_schema  # noqa: E402
from youbot_dynamics.contract.topics import JOINT_STATES  # noqa: E402
from youbot_dynamics.arm.ik import inverse_kinematics  # noqa: E402
from youbot_dynamics.arm.kinematics import forward_kinematics, link_frames  # noqa: E402
from youbot_dynamics.nodes.messages import matrix_to_pose, pose_to_matrix  # noqa: E402
from youbot_dynamics.nodes.kinematics_node import KinematicsNode  # noqa: E402
from youbot_dynamics.arm.transforms import quaternion_to_rotation, rot_x  # noqa: E402
from conftest import ros_domain_id  # noqa: E402
from ros_harness import RosHarness, SharedHarness, shared_harness_fixture  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parent.parent
DOMAIN_ID = ros_domain_id(__file__)
WAIT = 5.0  # every wait is bounded by this [s] (but a process's)
PROCESS_WAIT = 60.0  # [s] the executable's start-up, first answer or exit: tens of seconds on a loaded machine
ARM = default_arm()
Q0 = np.array([4.4, 0.28, -1.09, 0.45, 3.89])  # inside the limits, three IK solutions in the limits
Q1 = np.array([2.6, 1.2, -2.4, 1.9, 2.5])
EXPECTED_NAMESPACES = set(ARM.link_names) | {"arm_tool"}


class Harness(RosHarness):
    """The node under test, a 'fresh' node that never gets joint states, and a tester node."""

    def __init__(self) -> None:
        super().__init__("kinematics_tester", wait_timeout=WAIT)
        self.node = self.add_node(KinematicsNode(context=self.context,
                                                 parameter_overrides=[Parameter("max_pose_rate", value=0.0)]))
        self.fresh = self.add_node(KinematicsNode(
            context=self.context, namespace="/fresh",
            parameter_overrides=[Parameter("joint_states_topic", value="/fresh/joint_states")]))
        self.poses: list[PoseStamped] = []
        self.markers: list[MarkerArray] = []
        self.solutions: list[JointTrajectory] = []
        self.fresh_solutions: list[JointTrajectory] = []
        t = self.tester
        self.js_pub = t.create_publisher(JointState, JOINT_STATES, 10)
        self.target_pub = t.create_publisher(PoseStamped, "/kinematics_node/ik/target", 10)
        self.fresh_target_pub = t.create_publisher(PoseStamped, "/fresh/kinematics_node/ik/target", 10)
        t.create_subscription(PoseStamped, "/kinematics_node/end_effector_pose", self.poses.append, 10)
        t.create_subscription(MarkerArray, "/kinematics_node/link_frames", self.markers.append, 10)
        t.create_subscription(JointTrajectory, "/kinematics_node/ik/solutions", self.solutions.append, 10)
        t.create_subscription(JointTrajectory, "/fresh/kinematics_node/ik/solutions", self.fresh_solutions.append, 10)
        self._stamp = 0

    def joint_state(self, q, *, drop: str | None = None, short: bool = False) -> int:
        """Publish q (arm joints in shuffled order plus a gripper finger); returns the stamp's sec."""
        self._stamp += 1
        pairs = [(name, float(v)) for name, v in zip(ARM.joint_names, q)] + [("gripper_finger_joint_l", 0.01)]
        order = [3, 5, 0, 4, 2, 1]
        pairs = [pairs[i] for i in order if pairs[i][0] != drop]
        msg = JointState(name=[p[0] for p in pairs], position=[p[1] for p in pairs])
        if short:
            msg.position = msg.position[:-2]
        msg.header.stamp.sec = self._stamp
        msg.header.frame_id = "ignored"
        self.js_pub.publish(msg)
        return self._stamp

    def pose_for(self, stamp: int) -> PoseStamped | None:
        return next((p for p in self.poses if p.header.stamp.sec == stamp), None)

    def markers_for(self, stamp: int) -> MarkerArray | None:
        return next((m for m in self.markers if m.markers and m.markers[0].header.stamp.sec == stamp), None)

    def request_ik(self, target: PoseStamped, *, fresh: bool = False) -> JointTrajectory:
        replies = self.fresh_solutions if fresh else self.solutions
        replies.clear()
        (self.fresh_target_pub if fresh else self.target_pub).publish(target)
        assert self.spin_until(lambda: len(replies) > 0), "no IK reply"
        return replies[0]

    def handshake(self) -> None:
        """Publish until every connection has delivered once (volatile QoS drops early messages)."""
        deadline = time.monotonic() + WAIT
        stamp = None
        while time.monotonic() < deadline:
            stamp = self.joint_state(Q1)
            if self.spin_until(lambda: self.pose_for(stamp) is not None and self.markers_for(stamp) is not None, 0.1):
                break
        assert self.pose_for(stamp) is not None, "no pose from the kinematics node"
        for pub, replies in ((self.target_pub, self.solutions), (self.fresh_target_pub, self.fresh_solutions)):
            deadline = time.monotonic() + WAIT
            while not replies and time.monotonic() < deadline:
                pub.publish(target_msg(forward_kinematics(ARM, Q1)))
                self.spin_until(lambda: len(replies) > 0, 0.1)
            assert replies, "no IK reply"


def target_msg(t, frame_id: str = "arm_link_0") -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.pose = matrix_to_pose(t)
    return msg


def trajectory_q(traj: JointTrajectory) -> np.ndarray:
    assert list(traj.joint_names) == list(ARM.joint_names)
    return np.array([list(p.positions) for p in traj.points]).reshape(-1, ARM.n_joints)


@pytest.fixture(scope="module")
def ros_harnesses():
    """The module's harness, made again after a test that failed with it (ros_harness.SharedHarness)."""
    saved = {k: os.environ.get(k) for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")}
    os.environ["ROS_DOMAIN_ID"] = DOMAIN_ID
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    harnesses = SharedHarness(lambda domain: Harness(), [DOMAIN_ID], ready=Harness.handshake)
    try:
        yield harnesses
    finally:
        harnesses.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


ros = shared_harness_fixture("ros", "ros_harnesses")


# -- forward kinematics ----------------------------------------------------------------------------


def test_pose_matches_forward_kinematics(ros):
    stamp = ros.joint_state(Q0)
    assert ros.spin_until(lambda: ros.pose_for(stamp) is not None)
    pose = ros.pose_for(stamp)
    assert pose.header.frame_id == "arm_link_0"
    assert pose.header.stamp.sec == stamp and pose.header.stamp.nanosec == 0
    expected = forward_kinematics(ARM, Q0)
    p = pose.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], expected[:3, 3], atol=1e-12)
    o = pose.pose.orientation
    np.testing.assert_allclose(quaternion_to_rotation([o.x, o.y, o.z, o.w]), expected[:3, :3], atol=1e-12)


def test_invalid_joint_states_publish_nothing(ros):
    q_nan = Q0.copy()
    q_nan[2] = math.nan
    q_inf = Q0.copy()
    q_inf[4] = math.inf
    bad = [
        ros.joint_state(q_nan),
        ros.joint_state(q_inf),
        ros.joint_state(Q0, drop="arm_joint_3"),
        ros.joint_state(Q0, short=True),
    ]
    good = ros.joint_state(Q1)
    assert ros.spin_until(lambda: ros.pose_for(good) is not None and ros.markers_for(good) is not None)
    # reliable, in-order delivery: the bad ones were processed before the good one
    for stamp in bad:
        assert ros.pose_for(stamp) is None
        assert ros.markers_for(stamp) is None
    np.testing.assert_allclose(pose_to_matrix(ros.pose_for(good).pose), forward_kinematics(ARM, Q1), atol=1e-12)


def test_link_frame_markers(ros):
    stamp = ros.joint_state(Q0)
    assert ros.spin_until(lambda: ros.markers_for(stamp) is not None)
    markers = ros.markers_for(stamp).markers
    assert {m.ns for m in markers} == EXPECTED_NAMESPACES
    frames = link_frames(ARM, Q0)
    names = list(ARM.link_names) + ["arm_tool"]
    assert len(frames) == len(names)
    scale = ros.node.get_parameter("marker_scale").value
    for m in markers:
        assert m.header.frame_id == "arm_link_0"
        assert m.header.stamp.sec == stamp
        assert m.frame_locked is False
        assert m.type == Marker.ARROW and m.id in (0, 1, 2)
        t = frames[names.index(m.ns)]
        start, end = ([pt.x, pt.y, pt.z] for pt in m.points)
        np.testing.assert_allclose(start, t[:3, 3], atol=1e-12)
        np.testing.assert_allclose(end, t[:3, 3] + scale * t[:3, m.id], atol=1e-12)
        assert [m.color.r, m.color.g, m.color.b] == [float(k == m.id) for k in range(3)]
    assert sorted((m.ns, m.id) for m in markers) == sorted((n, k) for n in names for k in range(3))


def test_max_pose_rate_limits_publication(ros):
    assert ros.node.set_parameters([Parameter("max_pose_rate", value=1.0)])[0].successful
    try:
        start = len(ros.poses)
        stamps = []
        for _ in range(20):
            stamps.append(ros.joint_state(Q0))
            ros.spin_for(0.005)
        last = ros.joint_state(Q1)  # sentinel: it is processed after the burst (not published)
        ros.spin_for(0.3)
        assert ros.node._q_current is not None and np.allclose(ros.node._q_current, Q1)
        published = [p.header.stamp.sec for p in ros.poses[start:]]
        assert published == [stamps[0]], published
        assert last not in published
    finally:
        assert ros.node.set_parameters([Parameter("max_pose_rate", value=0.0)])[0].successful


def test_parameters_are_validated(ros):
    results = ros.node.set_parameters([
        Parameter("max_pose_rate", value=-1.0),
        Parameter("base_frame", value="world"),
        Parameter("marker_scale", value=0.0),
    ])
    assert not any(r.successful for r in results)
    assert ros.node.get_parameter("max_pose_rate").value == 0.0
    assert ros.node.base_frame == "arm_link_0"


def test_parameter_file_matches_declared_parameters(ros):
    """config/kinematics.yaml's parameters (its deviations from the defaults) are the node's, with the
    declared types; the node declares its schema's parameters, no more."""
    # (rclpy's parameter_dict_from_yaml_file round-trips values through str(), which turns 1e-06
    # into a string, so the YAML is read directly.)
    doc = yaml.safe_load((ROOT / "config" / "kinematics.yaml").read_text())
    params = doc["kinematics_node"]["ros__parameters"]
    overrides = [Parameter(name, value=value) for name, value in params.items()]
    node = KinematicsNode(context=ros.context, namespace="/yaml_check", parameter_overrides=overrides)
    try:
        own = set(node.list_parameters([], 0).names) - {"use_sim_time", "start_type_description_service"}
        assert own == set(load_schema("kinematics_node")) and set(params) <= own, own ^ set(params)
        for p in overrides:
            assert node.get_parameter(p.name).value == p.value
    finally:
        node.destroy_node()


# -- inverse kinematics ----------------------------------------------------------------------------


def test_ik_solutions_closest_to_current_state_first(ros):
    target = forward_kinematics(ARM, Q0)
    core = inverse_kinematics(ARM, target, include_outside_limits=False)
    assert len(core) >= 3
    q_state = core[-1].q + 0.01  # near the last IK-ordered solution, so the node must reorder
    stamp = ros.joint_state(q_state)
    assert ros.spin_until(lambda: ros.pose_for(stamp) is not None)

    traj = ros.request_ik(target_msg(target))
    q = trajectory_q(traj)
    assert traj.header.frame_id == "arm_link_0"
    assert len(q) == len(core)
    np.testing.assert_allclose(q[0], core[-1].q, atol=1e-12)
    dist = np.max(np.abs(q - q_state), axis=1)
    assert np.all(np.diff(dist) >= 0)
    assert np.min(np.max(np.abs(q - Q0), axis=1)) < 1e-9
    assert np.all(ARM.within_limits(q))
    np.testing.assert_allclose(forward_kinematics(ARM, q), np.broadcast_to(target, (len(q), 4, 4)), atol=1e-9)
    for point in traj.points:
        assert point.time_from_start.sec == 0 and point.time_from_start.nanosec == 0
        assert len(point.velocities) == 0 and len(point.accelerations) == 0


def test_ik_without_joint_state_keeps_ik_order(ros):
    target = forward_kinematics(ARM, Q0)
    core = inverse_kinematics(ARM, target, include_outside_limits=False)
    q = trajectory_q(ros.request_ik(target_msg(target, frame_id=""), fresh=True))  # '' = base frame
    np.testing.assert_allclose(q, np.array([s.q for s in core]), atol=1e-12)


@pytest.mark.parametrize("case", ["unreachable", "wrong_frame", "non_unit_quaternion", "orientation"])
def test_ik_failure_gives_empty_trajectory(ros, case):
    target = forward_kinematics(ARM, Q0)
    frame = "arm_link_0"
    if case == "unreachable":
        target[:3, 3] = [2.0, 0.0, 0.5]
    elif case == "wrong_frame":
        frame = "base_link"
    elif case == "orientation":
        target[:3, :3] = target[:3, :3] @ rot_x(0.2)  # tilts the approach axis out of the arm plane
    msg = target_msg(target, frame)
    if case == "non_unit_quaternion":
        msg.pose.orientation.w *= 1.5
    traj = ros.request_ik(msg)
    assert list(traj.joint_names) == list(ARM.joint_names)
    assert len(traj.points) == 0
    assert traj.header.frame_id == "arm_link_0"


def test_ik_projection_parameter(ros, capfd):
    target = forward_kinematics(ARM, Q1)
    target[:3, :3] = target[:3, :3] @ rot_x(0.2)
    assert ros.node.set_parameters([Parameter("project_orientation", value=True)])[0].successful
    try:
        q = trajectory_q(ros.request_ik(target_msg(target)))
    finally:
        assert ros.node.set_parameters([Parameter("project_orientation", value=False)])[0].successful
    assert len(q) > 0
    fk = forward_kinematics(ARM, q)
    np.testing.assert_allclose(fk[:, :3, 3], np.broadcast_to(target[:3, 3], (len(q), 3)), atol=1e-9)
    # the reachable orientation closest to the target: z axis in the plane, fk_z . target_z maximal
    assert np.all(np.einsum("ki,i->k", fk[:, :3, 2], target[:3, 2]) > math.cos(0.2) - 1e-9)
    assert "projected by" in capfd.readouterr().err
    assert len(ros.request_ik(target_msg(target)).points) == 0  # back to rejecting


# -- the executable --------------------------------------------------------------------------------


def _node_command() -> list[str]:
    script = Path(sys.executable).with_name("kinematics_node")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "youbot_dynamics.nodes.kinematics_node"]


@pytest.mark.timeout(4 * PROCESS_WAIT)
def test_executable_publishes_and_exits_cleanly_on_sigint(ros):
    env = dict(os.environ, ROS_DOMAIN_ID=DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    cmd = _node_command() + [
        "--ros-args", "--params-file", str(ROOT / "config" / "kinematics.yaml"),
        "-r", "__ns:=/subproc", "-p", "max_pose_rate:=0.0", "-p", "joint_states_topic:=/subproc/joint_states",
    ]
    poses: list[PoseStamped] = []
    pub = ros.tester.create_publisher(JointState, "/subproc/joint_states", 10)
    sub = ros.tester.create_subscription(PoseStamped, "/subproc/kinematics_node/end_effector_pose", poses.append, 10)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert ros.spin_until(lambda: pub.get_subscription_count() > 0 or proc.poll() is not None, PROCESS_WAIT), \
            f"the node did not subscribe within {PROCESS_WAIT:g} s"
        assert proc.poll() is None, proc.communicate()
        msg = JointState(name=list(ARM.joint_names), position=[float(v) for v in Q1])
        deadline = time.monotonic() + PROCESS_WAIT
        while not poses and time.monotonic() < deadline:
            pub.publish(msg)
            ros.spin_until(lambda: bool(poses), 0.1)
        assert poses, f"no pose from the executable within {PROCESS_WAIT:g} s"
        np.testing.assert_allclose(pose_to_matrix(poses[0].pose), forward_kinematics(ARM, Q1), atol=1e-12)

        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=PROCESS_WAIT)
        assert proc.returncode == 0, (out, err)
        assert "Traceback" not in err + out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        ros.tester.destroy_publisher(pub)
        ros.tester.destroy_subscription(sub)
