"""Issue 19 items 5, 6 and 12: bounded trajectories and lines, no big message in the control loop,
quaternion tolerance, a first trajectory point at ``time_from_start = 0``.

Pure tests first; then over DDS: ``sim_node`` and ``computed_torque_controller`` as executables
(subprocesses, domain 170: the loop's timing is measured in its own process, not in one shared with
the tester) and the in-process harness of test_controller_nodes.py (domain 171).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from youbot_dynamics.arm.description import load_arm
from youbot_dynamics.contract.topics import POSITION_COMMANDS
from youbot_dynamics.control.trajectory import (LINE_IK_RATE, MAX_TRAJECTORY_POINTS, JointTrajectory, TrajectoryError,
                                                cartesian_line)
from youbot_dynamics.arm.kinematics import forward_kinematics
from youbot_dynamics.motion.trajectory_start import START_TOLERANCE, StartPointError, drop_start_point
from youbot_dynamics.arm.transforms import quaternion_to_rotation, rot_x, rot_z, rotation_to_quaternion
from conftest import ros_domain_id

ARM = load_arm(None)
HOME = np.array([2.9496, 1.1345, -2.5482, 1.7890, 2.9234])  # sim.home: the candle
BENT_DOWN = HOME + np.array([0.0, 0.5, -0.9, 0.6, 0.0])  # elbow-down pose in front of the base


def smooth_points(q0: np.ndarray, k: int, period: float = 0.01, amplitude: float = 0.05):
    """``k`` waypoints every ``period`` s from ``q0``: a slow raised cosine (within every limit)."""
    t = period * np.arange(1, k + 1)
    phase = 2.0 * np.pi * t / max(period * k, period)
    return t, q0 + amplitude * 0.5 * (1.0 - np.cos(phase))[:, None] * np.ones(q0.size)


# ---------------------------------------------------------------------------------------------
# Item 6: bounded work


def test_joint_trajectory_has_at_most_max_points():
    t, q = smooth_points(HOME, MAX_TRAJECTORY_POINTS + 1)
    with pytest.raises(TrajectoryError, match=f"{MAX_TRAJECTORY_POINTS + 1} waypoints: at most "
                                              f"{MAX_TRAJECTORY_POINTS}"):
        JointTrajectory.through(HOME, t, q)
    trajectory = JointTrajectory.through(HOME, t[:-1], q[:-1])  # the maximum is accepted
    trajectory.check_limits(ARM)
    assert trajectory.duration == pytest.approx(t[-2])


def _line_goal() -> np.ndarray:
    goal = forward_kinematics(ARM, BENT_DOWN)
    goal[:3, 3] += [0.05, 0.0, -0.08]
    return goal


@pytest.mark.parametrize("duration, rate", [(3600.0, LINE_IK_RATE), (50.01, LINE_IK_RATE), (2.0, 1e6),
                                            (1e6, LINE_IK_RATE)])
def test_cartesian_line_refuses_too_many_samples_before_any_work(monkeypatch, duration, rate):
    # 'line_duration: 3600' planned for 60 s and took 1.5 GB; 'line --duration 1e6' took 24 GB: refused
    # before the samples are even allocated (no IK, no kinematics is ever called)
    import youbot_dynamics.control.trajectory as core
    goal = _line_goal()

    def no_work(*args, **kwargs):
        raise AssertionError("cartesian_line started its work")

    monkeypatch.setattr(core, "forward_kinematics", no_work)
    monkeypatch.setattr(core, "solve_ik_batch", no_work)
    with pytest.raises(TrajectoryError) as info:
        cartesian_line(ARM, BENT_DOWN, goal, duration, rate=rate)
    message = str(info.value)
    print(f"\n{message}")
    assert f"at most {MAX_TRAJECTORY_POINTS}" in message and "\n" not in message
    assert isinstance(info.value, ValueError)  # the CLI's exit 2


def test_cartesian_line_bound_is_exact():
    rate = MAX_TRAJECTORY_POINTS / 500.0  # 10 samples/s for 500 s: the maximum of samples
    with pytest.raises(TrajectoryError, match=f"needs {MAX_TRAJECTORY_POINTS + 1} samples"):
        cartesian_line(ARM, BENT_DOWN, _line_goal(), 500.0 + 1.0 / rate, rate=rate)
    trajectory = cartesian_line(ARM, BENT_DOWN, _line_goal(), 500.0, rate=rate)
    assert trajectory.spline.breaks.size == MAX_TRAJECTORY_POINTS + 1  # start + samples
    np.testing.assert_allclose(forward_kinematics(ARM, trajectory.final)[:3, 3], _line_goal()[:3, 3], atol=1e-6)


@pytest.mark.parametrize("rate", [0.0, -5.0, float("nan")])
def test_cartesian_line_refuses_a_bad_ik_rate(rate):
    with pytest.raises(TrajectoryError, match="IK rate must be positive"):
        cartesian_line(ARM, BENT_DOWN, _line_goal(), 2.0, rate=rate)


# ---------------------------------------------------------------------------------------------
# Item 12: quaternions


def _some_rotation() -> np.ndarray:
    return rot_z(0.7) @ rot_x(-1.1) @ rot_z(2.3)


@pytest.mark.parametrize("r", [rot_x(np.pi / 2), rot_z(np.pi / 3)])  # [0.70711, 0, 0, 0.70711], [0, 0, 0.5, 0.86603]
def test_a_unit_quaternion_rounded_to_5_decimals_is_accepted(r):
    rounded = np.round(rotation_to_quaternion(r), 5)
    assert abs(np.linalg.norm(rounded) - 1.0) > 1e-6  # what the old 1e-6 tolerance refused
    np.testing.assert_allclose(quaternion_to_rotation(rounded), r, atol=3e-5)
    rotation = quaternion_to_rotation(rounded)
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=1e-12)  # normalised: a rotation


@pytest.mark.parametrize("q, norm", [([0.0, 0.0, 0.0, 0.0], "norm 0;"), ([0.0, 0.0, 0.0, 2.0], "norm 2;"),
                                     ([0.1, 0.0, 0.0, 1.0], "norm 1.00499;"), ([0.0, 0.0, 0.0, 0.998], "norm 0.998;")])
def test_a_quaternion_beyond_the_tolerance_is_refused_with_its_norm(q, norm):
    with pytest.raises(ValueError, match="not unit length") as info:
        quaternion_to_rotation(q)
    assert norm in str(info.value), str(info.value)


def test_pose_messages_accept_rounded_quaternions():
    pytest.importorskip("rclpy")
    from geometry_msgs.msg import Pose
    from youbot_dynamics.nodes.messages import pose_to_matrix
    x, y, z, w = np.round(rotation_to_quaternion(_some_rotation()), 5)
    pose = Pose()
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = float(x), float(y), float(z), \
        float(w)
    np.testing.assert_allclose(pose_to_matrix(pose)[:3, :3], _some_rotation(), atol=3e-5)
    pose.orientation.x = pose.orientation.y = pose.orientation.z = pose.orientation.w = 0.0
    with pytest.raises(ValueError, match="norm 0;"):
        pose_to_matrix(pose)


# ---------------------------------------------------------------------------------------------
# Item 12: a first point at time_from_start = 0


def test_a_first_point_at_zero_is_the_start_state():
    times = np.array([0.0, 0.5, 1.0])
    positions = np.vstack([HOME + 0.5 * START_TOLERANCE, HOME + 0.1, HOME + 0.2])
    velocities = np.ones((3, 5))
    t, q, v, a = drop_start_point(times, positions, velocities, None, HOME)
    np.testing.assert_array_equal(t, times[1:])
    np.testing.assert_array_equal(q, positions[1:])
    np.testing.assert_array_equal(v, velocities[1:])
    assert a is None
    # unchanged without a point at 0; only the start point: nothing left (a stop)
    np.testing.assert_array_equal(drop_start_point(times[1:], positions[1:], None, None, HOME)[1], positions[1:])
    assert drop_start_point(times[:1], positions[:1], None, None, HOME)[0].size == 0
    # far from the current position: refused with the joint and the distance
    far = positions.copy()
    far[0, 2] = HOME[2] - 0.3
    with pytest.raises(StartPointError, match=r"0\.3000 rad from the current position on arm_joint_3"):
        drop_start_point(times, far, None, None, HOME, joint_names=ARM.joint_names)
    assert issubclass(StartPointError, ValueError)


# ---------------------------------------------------------------------------------------------
# Item 5: message conversion (pure, with the ROS message types)


def _message(names, t, q, v=None):
    from youbot_dynamics.nodes.messages import trajectory_message
    return trajectory_message(names, t, q, v)


def test_trajectory_arrays_refuses_too_many_points_first():
    pytest.importorskip("rclpy")
    from youbot_dynamics.nodes import messages
    t, q = smooth_points(HOME, 11)
    msg = _message(ARM.joint_names, t, q)
    msg.joint_names = ["wrong"] * 5  # the size is judged before anything else
    with pytest.raises(ValueError, match="trajectory has 11 points, at most 10 are accepted"):
        messages.trajectory_arrays(msg, ARM.joint_names, max_points=10)
    t, q = smooth_points(HOME, MAX_TRAJECTORY_POINTS + 1)
    with pytest.raises(ValueError, match=f"at most {MAX_TRAJECTORY_POINTS} are accepted"):
        messages.trajectory_arrays(_message(ARM.joint_names, t, q), ARM.joint_names)


def test_trajectory_arrays_any_order_start_at_zero_and_bad_points():
    pytest.importorskip("rclpy")
    from youbot_dynamics.nodes.messages import trajectory_arrays
    names = ARM.joint_names
    t = np.array([0.0, 0.25, 1.5])
    q = HOME + np.arange(15.0).reshape(3, 5) * 0.01
    v = np.arange(15.0).reshape(3, 5) * 0.1
    times, positions, velocities, accelerations = trajectory_arrays(
        _message(list(reversed(names)), t, q[:, ::-1], v[:, ::-1]), names)
    np.testing.assert_allclose(times, t)  # t = 0 first: allowed here (the executor drops or refuses it)
    np.testing.assert_array_equal(positions, q)
    np.testing.assert_array_equal(velocities, v)
    assert accelerations is None
    bad = _message(names, t, q, v)
    bad.points[2].velocities = [0.0, float("nan"), 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="point 2: velocities contain NaN"):
        trajectory_arrays(bad, names)
    bad = _message(names, t, q)
    bad.points[1].time_from_start = bad.points[0].time_from_start
    with pytest.raises(ValueError, match="strictly increasing: point 1"):
        trajectory_arrays(bad, names)


def test_serialized_trajectory_is_judged_before_deserializing(monkeypatch):
    pytest.importorskip("rclpy")
    from rclpy.serialization import serialize_message
    from youbot_dynamics.nodes import messages
    for k in (0, 1, 3, 7):
        for frame in ("", "a", "abc", "arm_link_0"):
            msg = _message(ARM.joint_names[: max(k, 1)], *smooth_points(HOME[: max(k, 1)], k))
            msg.header.frame_id = frame
            assert messages.serialized_point_count(serialize_message(msg)) == k
    data = serialize_message(_message(ARM.joint_names, *smooth_points(HOME, MAX_TRAJECTORY_POINTS + 1)))

    def no_deserialization(*args):
        raise AssertionError("deserialized")

    monkeypatch.setattr(messages, "deserialize_message", no_deserialization)
    with pytest.raises(ValueError, match=f"{MAX_TRAJECTORY_POINTS + 1} points, at most {MAX_TRAJECTORY_POINTS}"):
        messages.read_trajectory(data, ARM.joint_names)
    with pytest.raises(ValueError, match="bytes, at most"):
        messages.check_serialized_trajectory(b"\x00\x01\x00\x00" + bytes(2_000_000), 5)


# ---------------------------------------------------------------------------------------------
# Over DDS, executables: a maximal trajectory does not hold up the control loop (domain 170)

ROOT = Path(__file__).resolve().parent.parent
EXECUTABLE_DOMAIN = ros_domain_id(__file__)
HARNESS_DOMAIN = ros_domain_id(__file__, 1)
STATE_TIMEOUT = 0.1  # [s] of the controller under test: generous on a shared machine


def _start(module: str, params: list[str], env: dict, cwd: Path):
    proc = subprocess.Popen([sys.executable, "-m", f"youbot_dynamics.nodes.{module}", "--ros-args",
                             *[a for p in params for a in ("-p", p)]], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    return proc, lines


@pytest.mark.ros
@pytest.mark.timeout(240)
def test_a_maximal_trajectory_is_planned_without_stalling_the_loop(tmp_path):
    """The loop's timing as the controller itself measures it (``period_max_ms``: the longest time
    between two of its cycles, ``stalls``: cycles later than ``state_timeout``, on /diagnostics):
    a tester on a loaded machine may miss messages, the controller's own clock does not. Before,
    a 5,000-point message held the loop for ~0.2 s (deserialized and converted in its thread)."""
    rclpy = pytest.importorskip("rclpy")
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions
    from std_msgs.msg import Float64MultiArray, String
    from std_srvs.srv import SetBool
    from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

    from conftest import local_ros_domain
    from youbot_dynamics.dynamics.chain import DHChain
    from youbot_dynamics.dynamics.model import DynamicModel
    from youbot_dynamics.dynamics.paramfile import save_model
    from youbot_dynamics.sim.config import load_sim_config
    from youbot_dynamics.sim.true_robot import true_standard_parameters

    parameters = true_standard_parameters(ARM, load_sim_config(arm=ARM))
    model_file = tmp_path / "true_model.yaml"
    save_model(model_file, DynamicModel.from_standard(DHChain.from_arm(ARM), parameters),
               "the simulator's true parameters (test stand-in for an identified model)", parameters)
    env = dict(os.environ, ROS_DOMAIN_ID=EXECUTABLE_DOMAIN, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONUNBUFFERED="1")
    processes = []
    with local_ros_domain(EXECUTABLE_DOMAIN):
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        tester = rclpy.create_node("bounds_tester", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(tester)
        desired: list[np.ndarray] = []  # q_d of ~/state (10 Hz)
        status: list[str] = []
        reports: list[tuple[float, dict]] = []  # (arrival, the controller's /diagnostics values)

        def on_diagnostics(m) -> None:
            for st in m.status:
                if st.name.startswith("computed_torque_controller"):
                    reports.append((time.perf_counter(), {kv.key: kv.value for kv in st.values}))

        measured: list[np.ndarray] = []  # q of ~/state

        def on_state(m) -> None:
            desired.append(np.asarray(m.data[:5]))
            measured.append(np.asarray(m.data[5:10]))

        tester.create_subscription(Float64MultiArray, "/computed_torque_controller/state", on_state, 100)
        tester.create_subscription(String, "/computed_torque_controller/status", lambda m: status.append(m.data), 100)
        tester.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
        pub = tester.create_publisher(JointTrajectoryMsg, "/computed_torque_controller/trajectory", 10)
        drives = tester.create_publisher(Float64MultiArray, POSITION_COMMANDS, 10)
        enable = tester.create_client(SetBool, "/computed_torque_controller/enable")
        spinning = True

        def spin() -> None:
            while spinning:
                executor.spin_once(timeout_sec=0.01)

        spinner = threading.Thread(target=spin, daemon=True)
        spinner.start()

        def wait(predicate, timeout: float, what: str) -> None:
            deadline = time.monotonic() + timeout
            while not predicate():
                assert time.monotonic() < deadline and all(p.poll() is None for p, _ in processes), \
                    (what, status, ["".join(lines)[-3000:] for _, lines in processes])
                time.sleep(0.02)

        try:
            # the simulator real-time like the driver: its joint states are not starved by the machine's load
            processes.append(_start("sim_node", ["diagnostics_period:=0.0", "realtime_priority:=50"], env, tmp_path))
            processes.append(_start("computed_torque_controller", [
                f"model_file:={model_file}", f"state_timeout:={STATE_TIMEOUT}", "state_publish_decimation:=100",
                "diagnostics_period:=0.25"], env, tmp_path))

            def held_by_the_drives() -> bool:  # until the controller is up and the arm is back at HOME
                drives.publish(Float64MultiArray(data=HOME.tolist()))  # (it falls onto its stops at start-up)
                return (enable.service_is_ready() and len(measured) > 0
                        and bool(np.max(np.abs(measured[-1] - HOME)) < 0.01))

            wait(held_by_the_drives, 120.0, "the controller and the arm at HOME")
            future = enable.call_async(SetBool.Request(data=True))
            wait(future.done, 10.0, "enable")
            assert future.result().success, future.result().message
            wait(lambda: np.isfinite(desired[-1]).all(), 10.0, "enabled controller")
            time.sleep(1.0)  # through the 0.5 s enable ramp
            wait(lambda: pub.get_subscription_count() > 0, 10.0, "trajectory subscription")
            held = desired[-1].copy()
            # one point too many: refused on receipt, before deserialization
            too_many = _message(ARM.joint_names, *smooth_points(held, MAX_TRAJECTORY_POINTS + 1))
            maximal = _message(ARM.joint_names, *smooth_points(held, MAX_TRAJECTORY_POINTS))
            start = time.perf_counter()
            pub.publish(too_many)
            wait(lambda: any(s.startswith("trajectory refused") for s in status), 30.0, "refusal")
            refused = time.perf_counter()
            # the maximum: planned (deserialized, converted, limit-checked) beside the loop
            sent = time.perf_counter()
            pub.publish(maximal)
            wait(lambda: any(s.startswith("trajectory accepted") for s in status), 60.0, "acceptance")
            accepted = time.perf_counter()
            wait(lambda: reports and reports[-1][0] > accepted + 0.3, 10.0, "the report after the acceptance")
        finally:
            spinning = False
            spinner.join(timeout=5)
            for proc, _ in reversed(processes):
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            executor.shutdown()
            tester.destroy_node()
            rclpy.shutdown(context=context)
    during = [r for t, r in reports if start <= t <= accepted + 0.6]  # windows overlapping the planning
    before = [r for t, r in reports if t < start]
    period_max = max(float(r["period_max_ms"]) for r in during)
    stalls = float(during[-1]["stalls"]) - float(before[-1]["stalls"])
    print(f"\n{status}\nrefused {1e3 * (refused - start):.0f} ms after sending {MAX_TRAJECTORY_POINTS + 1} points; "
          f"{MAX_TRAJECTORY_POINTS} points accepted {accepted - sent:.2f} s after sending; "
          "the controller's longest time "
          f"between cycles meanwhile {period_max:.1f} ms (before: {max(float(r['period_max_ms']) for r in before):.1f} "
          f"ms), stalls {stalls:.0f} (state_timeout {1e3 * STATE_TIMEOUT:.0f} ms)")
    refusal = next(s for s in status if s.startswith("trajectory refused"))
    assert f"trajectory has {MAX_TRAJECTORY_POINTS + 1} points, at most {MAX_TRAJECTORY_POINTS}" in refusal
    assert any(s.startswith(f"trajectory accepted: {0.01 * MAX_TRAJECTORY_POINTS:.3f} s to") for s in status), status
    assert not any("fault" in s for s in status), status
    assert all(r["state"] == "enabled" for r in during)
    assert stalls == 0 and period_max < 1e3 * STATE_TIMEOUT, (stalls, period_max)


# ---------------------------------------------------------------------------------------------
# Over DDS, in-process harness (domain 171): the start point, rounded quaternions, line_duration


@pytest.fixture(scope="module")
def ros(tmp_path_factory):
    """The harness of test_controller_nodes.py (sim_node and a tester on one executor)."""
    pytest.importorskip("rclpy")
    from conftest import local_ros_domain
    with local_ros_domain(HARNESS_DOMAIN):
        from test_controller_nodes import Harness
        h = Harness(tmp_path_factory.mktemp("model") / "true_model.yaml")
        yield h
        h.close()


@pytest.fixture
def ct(ros):
    from test_controller_nodes import TOLERANT, Controller
    from youbot_dynamics.nodes.computed_torque_controller import ComputedTorqueControllerNode
    ros.reset_sim()
    c = Controller(ros, ComputedTorqueControllerNode, **TOLERANT)
    yield c
    c.close()
    ros.forget()


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_controller_first_point_at_zero(ct):
    from test_controller_nodes import enable, trajectory_msg
    c, names = ct, ct.h.arm.joint_names
    held = enable(c)
    stroke = np.array([0.05, -0.05, 0.05, -0.05, 0.05])
    # the usual ROS form: the first point is the start state at time_from_start 0
    c.publish("trajectory", trajectory_msg(names, [(0.0, held + 0.5 * START_TOLERANCE), (1.0, held + stroke)]))
    accepted = c.wait_status("trajectory")
    assert "trajectory accepted: 1.000 s to" in accepted, accepted
    c.h.spin_for(1.2)
    np.testing.assert_allclose(c.node.law.desired_position(time.perf_counter()), held + stroke, atol=1e-9)
    # only the start point: hold
    c.status.clear()
    c.publish("trajectory", trajectory_msg(names, [(0.0, held + stroke)]))
    assert "trajectory accepted: holding" in c.wait_status("trajectory")
    # a start point elsewhere: refused with the distance, the reference stays
    c.status.clear()
    c.publish("trajectory", trajectory_msg(names, [(0.0, held + stroke + [0.0, 0.3, 0.0, 0.0, 0.0]),
                                                   (1.0, held)]))
    reason = c.wait_status("trajectory")
    print(f"\n{accepted}\n{reason}")
    assert "trajectory refused" in reason and "0.3000 rad from the current position on arm_joint_2" in reason, reason
    np.testing.assert_allclose(c.node.law.desired_position(time.perf_counter()), held + stroke, atol=1e-9)


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_controller_line_with_a_rounded_quaternion(ct):
    from geometry_msgs.msg import PoseStamped
    from test_controller_nodes import enable
    from youbot_dynamics.nodes.messages import matrix_to_pose
    c = ct
    held = enable(c)
    goal = forward_kinematics(c.h.arm, held)
    goal[:3, 3] += [0.02, 0.0, -0.02]
    pose = matrix_to_pose(goal)
    o = pose.orientation
    o.x, o.y, o.z, o.w = (round(v, 5) for v in (o.x, o.y, o.z, o.w))
    c.publish("line", PoseStamped(pose=pose))
    assert "line accepted" in c.wait_status("line"), [m.data for _, m in c.status]
    c.h.spin_for(c.node.line_duration + 0.3)
    c.status.clear()
    o.x = o.y = o.z = o.w = 0.0
    c.publish("line", PoseStamped(pose=pose))
    reason = c.wait_status("line")
    print(f"\n{reason}")
    assert "line refused" in reason and "norm 0;" in reason


@pytest.mark.ros
@pytest.mark.timeout(60)
def test_line_duration_is_bounded(ros):
    from rclpy.exceptions import InvalidParameterValueException
    from rclpy.parameter import Parameter
    from youbot_dynamics.nodes.computed_torque_controller import ComputedTorqueControllerNode
    limit = MAX_TRAJECTORY_POINTS / LINE_IK_RATE
    with pytest.raises(InvalidParameterValueException, match="line_duration"):
        ComputedTorqueControllerNode(context=ros.context, parameter_overrides=[Parameter("line_duration",
                                                                                         value=3600.0)])
    node = ComputedTorqueControllerNode(context=ros.context, parameter_overrides=[
        Parameter("line_duration", value=limit), Parameter("model_file", value=str(ros.model_file))])
    try:
        assert node.line_duration == limit == 50.0
    finally:
        node.destroy_node()
