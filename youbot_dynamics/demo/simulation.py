"""``make demo``, simulation part: start the ``sim_node`` executable and drive it over its topics.

The simulator runs as its own process, exactly as ``ros2 launch youbot_dynamics sim.launch.py``
would start it; a client node in this process sends a trajectory and position commands on the
ros2_control topics, then lets the command timeout stop the motors, and prints what
``/joint_states`` reported. DDS stays on this machine (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``)
in the domain of the environment (``ROS_DOMAIN_ID``, default 0).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..arm.description import ArmDescription
from ..contract.topics import JOINT_STATES, POSITION_COMMANDS, TRAJECTORY

__all__ = ["NodeProcess", "run_sim_demo"]


def _fmt(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:+.4f}" for x in v) + "]"


class NodeProcess:
    """A node executable of this package as a child process (context manager; stopped with
    SIGINT, like Ctrl-C). Falls back to ``python -m youbot_dynamics.nodes.<executable>`` when the
    console script is not installed."""

    def __init__(self, executable: str, *ros_args: str) -> None:
        exe = shutil.which(executable) or os.path.join(os.path.dirname(sys.executable), executable)
        cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", f"youbot_dynamics.nodes.{executable}"]
        self.command = cmd + (["--ros-args", *ros_args] if ros_args else [])
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "NodeProcess":
        env = dict(os.environ)
        env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        # a file, not a pipe: a long-running child must never block on a full pipe
        self._log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(self.command, env=env, stdout=self._log, stderr=subprocess.STDOUT, text=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGINT, then SIGKILL after 10 s; at once if it has ended (then :meth:`output` can be read)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(2)  # SIGINT, like Ctrl-C
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        assert self.process is not None and self.process.poll() is not None
        self._log.seek(0)
        return self._log.read()


class _Client:
    """Publishers for the command topics and a recorder of ``/joint_states``."""

    def __init__(self, context: Context) -> None:
        self.node = rclpy.create_node("youbot_dynamics_demo", context=context)
        self.states: list[tuple[float, JointState]] = []
        self.node.create_subscription(JointState, JOINT_STATES,
                                      lambda m: self.states.append((time.perf_counter(), m)), 1000)
        self.position = self.node.create_publisher(Float64MultiArray, POSITION_COMMANDS, 10)
        self.trajectory = self.node.create_publisher(JointTrajectory, TRAJECTORY, 10)
        self.reset = self.node.create_client(Trigger, "/sim_node/reset")
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)

    def spin_for(self, seconds: float, every: float = 0.0, action=None) -> None:
        deadline = time.monotonic() + seconds
        next_action = time.monotonic()
        while time.monotonic() < deadline:
            if action is not None and time.monotonic() >= next_action:
                action()
                next_action += every
            self.executor.spin_once(timeout_sec=0.005)

    def q(self) -> np.ndarray:
        return np.asarray(self.states[-1][1].position)


def run_sim_demo(arm: ArmDescription, timeout: float = 20.0) -> int:
    """Start the simulator, move the arm, print the figures; 0 on success."""
    print("5. Simulated arm (MuJoCo, config/sim.yaml) behind the ros2_control topics:")
    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    status = 1
    try:
        with NodeProcess("sim_node") as sim:
            client = _Client(context)
            start = time.monotonic()
            while not client.states and time.monotonic() - start < timeout and sim.process.poll() is None:
                client.spin_for(0.1)
            if not client.states:
                print("   the simulator did not publish /joint_states")
                return 1
            while (client.position.get_subscription_count() == 0 or client.trajectory.get_subscription_count() == 0) \
                    and time.monotonic() - start < timeout:
                client.spin_for(0.05)
            print(f"   sim_node up after {time.monotonic() - start:.1f} s; with the motors off (until the first "
                  f"command) the arm fell to q = {_fmt(client.q())}")
            future = client.reset.call_async(Trigger.Request())
            while not future.done() and time.monotonic() - start < timeout:
                client.spin_for(0.01)
            client.spin_for(0.05)
            q0 = client.q()
            print(f"   ~/reset: {future.result().message if future.done() else 'no answer'}")
            hold = Float64MultiArray(data=q0.tolist())
            client.spin_for(0.5, every=0.02, action=lambda: client.position.publish(hold))
            goal = np.clip(q0 + np.array([0.5, 0.4, -0.4, 0.3, 0.6]), arm.position_min, arm.position_max)
            msg = JointTrajectory(joint_names=list(arm.joint_names))
            msg.points.append(JointTrajectoryPoint(positions=goal.tolist(), time_from_start=Duration(sec=2)))
            client.trajectory.publish(msg)
            client.states.clear()
            client.spin_for(2.5)
            arrivals = np.array([t for t, _ in client.states])
            rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0.0
            print(f"   trajectory to {_fmt(goal)} in 2 s: final error {_fmt(client.q() - goal)} rad, "
                  f"joint states received at {rate:.0f} Hz")
            client.spin_for(2.0, every=0.02, action=lambda: client.position.publish(hold))
            print(f"   position commands back to the start: error {_fmt(client.q() - q0)} rad")
            client.spin_for(0.5)
            efforts = np.array([m.effort for _, m in client.states[-100:]])
            print(f"   no command for 0.5 s: the drives' timeout stopped the motors, mean |effort| "
                  f"{_fmt(np.abs(efforts).mean(axis=0))} N m; the arm sags to {_fmt(client.q())}")
            client.node.destroy_node()
            status = 0
    finally:
        rclpy.shutdown(context=context)
    print()
    return status
