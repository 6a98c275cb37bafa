"""One case of ``make bench``'s bus-cycle comparison (issue 18 part 4), run as its own process:
``youbot_driver`` on the virtual drives with computed torque tracking a trajectory, the controller
either inside the driver's bus cycle (``hosted``) or as its own process over DDS (``dds``).

    python bench/bus_cycle.py hosted|dds|floor SECONDS OUT.json

The driver runs as its executable does (:func:`~youbot_dynamics.nodes.common.run_node`: events
executor, frozen heap, 20 us switch interval, SCHED_FIFO 50 when allowed), with a tester node in
the same process, whose thread (at the lowest real-time priority) brings the arm to its start with
the drives, enables the controller, streams out-and-back trajectories for ``SECONDS`` and then
writes the figures and ends the process with SIGINT (the driver's normal shutdown):

* ``latency_*_ms``, state to torque. In the bus cycle: from the end of the exchange that read the
  state to its torque in the driver's outputs (the driver measures it every cycle). Over DDS: the
  age of the state, by its stamp (the instant of its read, on the wall clock), when the controller
  published its torque (the controller measures it); the hop of the torque back to the driver (and
  its wait there for the next cycle's decision) is not included: a lower bound of what the bus cycle's
  figure measures.
* ``missed_fraction``: the bus loop's missed cycles (a period over 1.5 ms,
  :class:`~youbot_dynamics.timing.LoopStatistics`) over the tracking window.
* ``floor``: the machine's own floor, no ROS, no driver: one thread at the bus's SCHED_FIFO priority,
  with the CPUs' wake-up latency held as the driver holds it (``cpu_dma_latency``), that burns
  :data:`FLOOR_WORK` of CPU (the bus cycle's median cost with the controller in it) every
  millisecond, paced like the bus loop; its ``missed_fraction`` is what this machine (its other
  tenants, the hypervisor) leaves to any 1 kHz loop with that much work, under the same load.
* ``tracking_rms_mrad``: the controller's RMS tracking error per joint over the window (from its
  ``~/state``, 1 in 10 cycles), to show that both cases control the same motion.
"""
from __future__ import annotations

import gc
import json
import os
import signal
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.contract.topics import POSITION_COMMANDS
from youbot_dynamics.driver import VirtualBus
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.paramfile import save_model
from youbot_dynamics.nodes.common import (REALTIME_PRIORITY, background_priority, hold_cpu_latency, run_node,
                                          set_realtime_priority)
from youbot_dynamics.nodes.messages import trajectory_message
from youbot_dynamics.nodes.youbot_driver import YoubotDriverNode
from youbot_dynamics.contract.parameter_schema import load_schema
from youbot_dynamics.files.paths import config_path
from youbot_dynamics.timing import LoopStatistics

ARM = default_arm()
CT = "computed_torque_controller"
Q_START = np.array([2.95, 1.0, -2.0, 1.8, 2.9])
AMPLITUDE = np.array([0.4, -0.3, 0.3, -0.4, 0.5])  # [rad] out and back from Q_START
SEGMENT = 1.2  # [s] each way, rest to rest (peak speed 1.875 x amplitude / segment: at most 0.78 rad/s)
HOLD = 0.2  # [s] at Q_START between two strokes
# [s] CPU per cycle of the floor loop: the hosted bus cycle's median (virtual drives' physics included;
# measured 0.34-0.38 ms with the Python threads pinned, 0.40-0.46 ms before)
FLOOR_WORK = 0.36e-3
CPU_DMA_LATENCY: int = load_schema("youbot_driver")["cpu_dma_latency"].default  # [us] the driver's default
STARTUP_ALLOWANCE = 15.0  # [s] the driver's start-up, the drive to the start pose and the enable ramp


def controller_file(folder: Path, diagnostics_period: float) -> Path:
    """The package's computed-torque parameters on the virtual arm's true model (an identified model's stand-in)."""
    parameters = VirtualBus(ARM).sim.true_parameters
    model = folder / "true_model.yaml"
    save_model(model, DynamicModel.from_standard(DHChain.from_arm(ARM), parameters),
               "the virtual arm's true parameters (bench stand-in for an identified model)", parameters)
    doc = yaml.safe_load(config_path(f"{CT}.yaml").read_text())
    doc[CT]["ros__parameters"].update(model_file=str(model), diagnostics_period=diagnostics_period)
    path = folder / f"{CT}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


class Tester:
    """The bench's client in the driver's process: drives to the start, enable, strokes, figures."""

    def __init__(self, node, mode: str, seconds: float, out: Path, controller_process=None) -> None:
        self.driver_node, self.mode, self.seconds, self.out = node, mode, seconds, out
        self.process = controller_process
        self.node = rclpy.create_node("bus_cycle_bench", context=node.context)
        self.position = self.node.create_publisher(Float64MultiArray, POSITION_COMMANDS, 10)
        self.trajectory = self.node.create_publisher(JointTrajectory, f"/{CT}/trajectory", 10)
        self.enable = self.node.create_client(SetBool, f"/{CT}/enable")
        self.states: list[np.ndarray] = []
        self.node.create_subscription(Float64MultiArray, f"/{CT}/state",
                                      lambda m: self.states.append(np.asarray(m.data).reshape(5, -1)), 100)
        self.reports: list[dict[str, str]] = []
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith(f"{CT}:"):
                self.reports.append({kv.key: kv.value for kv in status.values})

    def start(self) -> None:
        threading.Thread(target=self._run, name="bench", daemon=True).start()

    def _run(self) -> None:
        background_priority()
        try:
            figures = self._measure()
        except Exception as exc:  # noqa: BLE001 - reported in the output, the process still ends
            figures = {"error": repr(exc)}
        self.out.write_text(json.dumps(figures, indent=2))
        os.kill(os.getpid(), signal.SIGINT)

    def _wait(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(what)
            time.sleep(0.02)

    def _measure(self) -> dict[str, float]:
        driver, bus = self.driver_node.driver, self.driver_node.bus
        self._wait(lambda: driver.state() is not None and driver.state().phase.value == "running", 60.0,
                   "the driver's start-up")
        self._wait(lambda: self.position.get_subscription_count() > 0, 10.0, "the position topic")

        def at_start() -> bool:
            self.position.publish(Float64MultiArray(data=Q_START.tolist()))
            return (np.max(np.abs(bus.sim.data.qpos - Q_START)) < 5e-3 and np.max(np.abs(bus.sim.data.qvel)) < 0.02)

        self._wait(at_start, 60.0, "the drives bringing the arm to the start")
        self._wait(lambda: self.enable.service_is_ready() and self.trajectory.get_subscription_count() > 0, 60.0,
                   "the controller")
        response = self.enable.call(SetBool.Request(data=True), timeout_sec=10.0)
        if response is None or not response.success:
            raise RuntimeError(f"enable refused: {response}")
        time.sleep(0.7)  # the torque ramp
        loop = self.driver_node.loop
        cycles0, missed0 = loop.timing.total_cycles, loop.timing.total_missed
        driver.take_controller_latencies()
        self.states.clear()
        self.reports.clear()
        begin = time.perf_counter()
        stroke = trajectory_message(ARM.joint_names, [SEGMENT, 2 * SEGMENT],
                                    np.array([Q_START + AMPLITUDE, Q_START]), np.zeros((2, 5)), np.zeros((2, 5)))
        # over DDS until the controller's report (its window ends SECONDS + STARTUP_ALLOWANCE after its
        # start, so it covers at most the start-up and at least SECONDS of tracking when the start-up fits)
        while time.perf_counter() - begin < self.seconds or (self.mode == "dds" and not self.reports):
            self.trajectory.publish(stroke)
            time.sleep(2 * SEGMENT + HOLD)
        cycles, missed = loop.timing.total_cycles - cycles0, loop.timing.total_missed - missed0
        figures = {"seconds": time.perf_counter() - begin, "bus_cycles": float(cycles), "bus_missed": float(missed),
                   "missed_fraction": missed / max(cycles, 1)}
        if self.mode == "hosted":
            latencies = np.asarray(driver.take_controller_latencies())
        else:
            latencies = None
            report = self.reports[0]
            figures["controller_cycles"] = float(report["cycles"])
            figures.update({f"latency_{k}_ms": float(report[f"state_age_{k}_ms"]) for k in ("median", "p99", "max")})
            figures["controller_missed_fraction"] = float(report["missed_fraction"])
        if latencies is not None:
            figures.update(latency_median_ms=1e3 * float(np.median(latencies)),
                           latency_p99_ms=1e3 * float(np.percentile(latencies, 99.0)),
                           latency_max_ms=1e3 * float(latencies.max()), latency_samples=float(latencies.size))
        rows = np.array(self.states)
        if rows.size:
            error = rows[:, 2]
            figures["tracking_rms_mrad"] = (1e3 * np.sqrt(np.nanmean(error ** 2, axis=0))).round(3).tolist()
        self.enable.call(SetBool.Request(data=False), timeout_sec=10.0)
        return figures


def floor(seconds: float, period: float = 1e-3) -> dict[str, float]:
    """The ``floor`` case (module docstring): missed cycles of a bare loop paced as
    :class:`~youbot_dynamics.driver.loop.CyclicLoop` with :data:`FLOOR_WORK` of busy CPU per cycle."""
    if set_realtime_priority(REALTIME_PRIORITY) is not None:
        raise RuntimeError("the floor needs SCHED_FIFO (root or CAP_SYS_NICE), as the bus loop has it")
    gc.collect()
    gc.freeze()
    timing = LoopStatistics(period)
    with ExitStack() as held:
        latency = hold_cpu_latency(CPU_DMA_LATENCY, held)  # as youbot_driver holds it (its default)
        if latency is not None:
            raise RuntimeError(f"the floor holds the CPUs' wake-up latency as the driver does: {latency}")
        deadline = time.perf_counter()
        end = deadline + seconds
        while deadline < end:
            busy = time.perf_counter() + FLOOR_WORK
            while time.perf_counter() < busy:
                pass
            now = time.perf_counter()
            timing.tick(now)
            deadline += period
            if deadline > now:
                time.sleep(deadline - now)
    return {"seconds": seconds, "bus_cycles": float(timing.total_cycles), "bus_missed": float(timing.total_missed),
            "missed_fraction": timing.total_missed / max(timing.total_cycles, 1)}


def main(argv: list[str]) -> int:
    mode, seconds, out = argv[0], float(argv[1]), Path(argv[2])
    if mode not in ("hosted", "dds", "floor"):
        raise SystemExit(f"mode must be hosted, dds or floor, got {mode!r}")
    if mode == "floor":
        out.write_text(json.dumps(floor(seconds), indent=2))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="bus_cycle_"))
    # over DDS the controller's first timing report covers its first SECONDS + start-up: the window
    params = controller_file(folder, 0.0 if mode == "hosted" else seconds + STARTUP_ALLOWANCE)
    controller = None
    if mode == "dds":
        import subprocess
        controller = subprocess.Popen([sys.executable, "-m", "youbot_dynamics.nodes.computed_torque_controller",
                                       "--ros-args", "--params-file", str(params)])
    overrides = {"backend": "virtual", "enable_on_start": True, "virtual_initial_positions": Q_START.tolist(),
                 "diagnostics_period": 0.0}
    if mode == "hosted":
        overrides.update(controller="computed_torque", controller_params_file=str(params))
    testers: list[Tester] = []

    def create() -> YoubotDriverNode:
        node = YoubotDriverNode(parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        testers.append(Tester(node, mode, seconds, out, controller))
        return node

    def before_spin(node: YoubotDriverNode) -> None:
        node.start()
        testers[0].start()

    try:
        return run_node("youbot_driver", create, (ValueError,), ["--ros-args"], realtime=True,
                        events_executor=True, before_spin=before_spin, after_spin=YoubotDriverNode.stop,
                        hosted=lambda node: [*node.hosted_nodes(), testers[0].node])
    finally:
        if controller is not None:
            controller.send_signal(signal.SIGINT)
            controller.wait(timeout=30.0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
