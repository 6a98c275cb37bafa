"""external_torque_observer (issue 17 item 1): the external torques from the joint states alone,
while the drives' own trajectory control moves the arm; judged against the simulator's truth
(``~/external_torque_true``) over real DDS, in one process. While the arm moves: at rest a stuck
joint's friction takes a push, or part of it, whatever the observer (control.observer); measured
here, holding at rest, the estimate was off by up to 1.5 N m on joint 2 (its stiction band)."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest
from conftest import local_ros_domain, ros_domain_id

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from youbot_dynamics.contract.topics import TRAJECTORY  # noqa: E402
from youbot_dynamics.dynamics.chain import DHChain  # noqa: E402
from youbot_dynamics.dynamics.model import DynamicModel  # noqa: E402
from youbot_dynamics.dynamics.paramfile import save_model  # noqa: E402
from youbot_dynamics.nodes.external_torque_observer import ExternalTorqueNode  # noqa: E402
from youbot_dynamics.nodes.sim_node import SimNode  # noqa: E402

DOMAIN_ID = ros_domain_id(__file__)
Q_HOLD = np.array([2.95, 1.0, -2.0, 1.8, 2.9])
# the seed's friction structure (no Stribeck, asymmetric or load-dependent friction), which the
# true-parameter model below holds exactly; the effort's noise, gain error and offset stay
SEED_FRICTION_EFFECTS = ["friction", "noise", "quantization", "effort_calibration", "velocity_lag"]
# the joint-state rate: at 1 kHz the simulator, the observer and the tester of this one process fell
# behind (the tester missed true torques of the states the observer used; stop 37), as in
# test_controller_nodes.py; the real driver publishes about 300 Hz
RATE = 250.0


def states(seconds: float) -> int:
    """The number of joint states in ``seconds``."""
    return int(round(seconds * RATE))


@pytest.fixture
def nodes(tmp_path):
    with local_ros_domain(DOMAIN_ID):
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        sim = SimNode(context=context, parameter_overrides=[
            Parameter("initial_positions", value=Q_HOLD.tolist()), Parameter("diagnostics_period", value=0.0),
            Parameter("realism_effects", value=SEED_FRICTION_EFFECTS), Parameter("publish_rate", value=RATE)])
        model_file = tmp_path / "true_model.yaml"
        save_model(model_file, DynamicModel.from_standard(DHChain.from_arm(sim.arm), sim.sim.true_parameters),
                   "the simulator's true parameters", sim.sim.true_parameters)
        observer = ExternalTorqueNode(context=context, parameter_overrides=[
            Parameter("model_file", value=str(model_file)), Parameter("collision_thresholds", value=[1.0])])
        tester = rclpy.create_node("external_torque_tester", context=context)
        executor = SingleThreadedExecutor(context=context)
        for node in (sim, observer, tester):
            executor.add_node(node)
        sim.start()
        try:
            yield sim, observer, tester, executor
        finally:
            sim.stop()
            executor.shutdown()
            for node in (sim, observer, tester):
                node.destroy_node()
            rclpy.shutdown(context=context)


def stamp_of(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def spin_until(executor, predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)
        if predicate():
            return True
    return predicate()


def test_a_push_while_the_drives_move_the_arm(nodes):
    sim, observer, tester, executor = nodes
    estimates, truth, status = [], [], []
    tester.create_subscription(JointState, "/external_torque_observer/external_torque", estimates.append, 5000)
    tester.create_subscription(JointState, "/sim_node/external_torque_true", truth.append, 5000)
    tester.create_subscription(String, "/external_torque_observer/status", status.append, 10)
    move = tester.create_publisher(JointTrajectory, TRAJECTORY, 10)
    push = tester.create_publisher(WrenchStamped, "/sim_node/external_wrench", 10)
    # joint 2 out by 0.5 rad and back (3 s each way: about 0.25 rad/s), the others still
    trajectory = JointTrajectory(joint_names=list(sim.arm.joint_names))
    for seconds, offset in ((3, 0.5), (6, 0.0)):
        point = JointTrajectoryPoint(positions=(Q_HOLD + np.array([0.0, offset, 0.0, 0.0, 0.0])).tolist())
        point.time_from_start.sec = seconds
        trajectory.points.append(point)
    assert spin_until(executor, lambda: len(estimates) > 10 and move.get_subscription_count() > 0, 5.0)
    move.publish(trajectory)
    assert spin_until(executor, lambda: sim.sim.mode == "trajectory", 2.0)
    started = sim.sim.time
    assert spin_until(executor, lambda: sim.sim.time > started + 1.0, 5.0)
    window = estimates[-states(0.3):]  # 0.3 s of motion without a push
    quiet = np.array([m.effort for m in window])
    quiet_gap = float(np.max(np.diff([stamp_of(m) for m in window])))  # a loaded machine: gaps in the states
    wrench = WrenchStamped()
    wrench.header.frame_id = "arm_link_2"
    wrench.wrench.torque.z = 3.0  # 3 N m on joint 2 alone (its axis is parallel to link 2's z)
    push.publish(wrench)
    try:
        assert spin_until(executor, lambda: any(abs(m.effort[1]) > 2.9 for m in truth[-states(0.05):]), 3.0)
        pushed_at = len(estimates)
        pushed = truth[-1].effort[1]
        began = min(stamp_of(m) for m in truth if abs(m.effort[1]) > 2.9)
        assert spin_until(executor, lambda: len(estimates) > pushed_at + states(0.4), 5.0)
    finally:
        push.publish(WrenchStamped())

    def seen() -> list[str]:  # collisions reported on a joint state of the push
        return [m.data for m in status if float(re.search(r"at stamp ([0-9.]+) s", m.data).group(1)) >= began]

    assert spin_until(executor, lambda: bool(seen()), 1.0), f"no collision reported during the push: {status}"
    during = np.array([m.effort for m in estimates[pushed_at + states(0.05):pushed_at + states(0.4)]])  # settled
    print(f"\nexternal torque, the drives moving joint 2: largest without a push "
          f"{np.round(np.abs(quiet).max(axis=0), 3)} N m; during a push of {pushed:+.2f} N m on joint 2: median "
          f"{np.round(np.median(during, axis=0), 3)} N m; status {seen()[0]!r}")
    # the measured effort's noise, gain error and offset: largest 0.22-0.56 N m on a quiet machine (the
    # controllers' own estimate, on their noise-free torque: test_external_torque.py), 0.22-0.34 with two
    # CPU hogs (the simulator in this process resynchronising 10-24 times in 1.4 s: gaps in the stamps);
    # 2-24 N m before the simulator stamped the states after a resynchronisation on the 1 ms grid
    largest = np.percentile(np.abs(quiet), 90, axis=0).max()
    assert largest < 0.5, (f"90th percentile of the estimate without a push {largest:.2f} N m; the window's largest "
                           f"gap between joint states {1e3 * quiet_gap:.0f} ms (period {1e3 / RATE:.0f} ms; a gap well "
                           f"above it is a loaded machine, and the observer integrates over a step it did not see)")
    # the joints the drives hold still carry a friction the model cannot know, anywhere in their
    # static band +-fc (joint 3: 0.36-0.44 N m during the push, old code too, stop 37): there the
    # bound is fc; the moving joint 2's friction is known, its bound 0.4 N m
    still = np.arange(sim.arm.n_joints) != 1
    bound = np.where(still, sim.sim.config.coulomb_friction, 0.4)
    np.testing.assert_array_less(np.abs(np.median(during, axis=0) - [0.0, pushed, 0.0, 0.0, 0.0]), bound)
    assert "arm_joint_2" in seen()[0]
    # stamped with the joint state used, to the nanosecond (the true torques share the states' stamps)
    state_stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in truth}
    assert all((m.header.stamp.sec, m.header.stamp.nanosec) in state_stamps
               for m in estimates[pushed_at:pushed_at + states(0.4)])
    # one push, one collision: the observer keeps its estimate over those gaps (it restarted at zero
    # and reported the held push again after each, up to 16 times in CI)
    assert len(seen()) == 1, seen()
