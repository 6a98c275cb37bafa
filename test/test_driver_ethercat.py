"""The driver over real EtherCAT frames: the unchanged PysoemBus (real SOEM through pysoem) on one end
of a Linux veth pair, the emulated youBot chain (youbot_dynamics.driver.emulator) on the other.

The driver tests of test_driver_virtual run again here with their bus replaced: every
``VirtualBus(...)`` they create becomes an emulator process with that virtual bus behind its slave
controllers, and the driver talks to it through SOEM's configuration (EEPROM, sync managers, FMMUs,
AL states), logical process-data frames and the TMCL mailbox. Cycles still run one by one (every
process-data frame is one physics step), so the ground truth is the same as on the virtual bus.

Needs pysoem and the right to create a veth pair and open raw sockets (root or CAP_NET_ADMIN +
CAP_NET_RAW); skipped with the reason otherwise.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import test_driver_virtual as virtual
from test_driver_virtual import (test_a_few_lost_frames_are_counted_and_tolerated,  # noqa: F401 - rerun here
                                 test_a_refused_trajectory_leaves_a_running_trajectory_going,
                                 test_a_refused_trajectory_leaves_the_arm_held_with_its_motors_on,
                                 test_a_release_from_overspeed_is_accepted_and_brakes_the_arm_to_rest,
                                 test_calibration_finds_the_stops_and_zeroes_the_drives,
                                 test_calibration_waits_through_lost_frames,
                                 test_command_timeout_stops_the_motors,
                                 test_commutation_that_never_completes_is_a_fault,
                                 test_cyclic_loop_runs_in_its_thread_and_stops_the_motors,
                                 test_drive_error_stops_everything_until_cleared,
                                 test_drive_timeout_flag_is_a_fault_cleared_by_motors_on,
                                 test_each_drive_error_flag_stops_all_motors_and_faults_until_cleared,
                                 test_effort_command_is_sent_as_current_and_applied,
                                 test_fast_trajectory_is_not_limited_by_the_position_ramp,
                                 test_firmware_148_commutates_with_mode_initialize,
                                 test_i2t_trips_and_is_cleared_by_motors_on,
                                 test_lost_bus_sends_only_motor_stop_until_reconnect_and_motors_on,
                                 test_lost_bus_stops_and_reconnects_on_request,
                                 test_lost_frames_do_not_wind_up_the_trajectory_feedback,
                                 test_motors_off_refuses_commands,
                                 test_position_command_reaches_the_goal,
                                 test_startup_picks_the_arm_slaves_commutates_and_leaves_the_motors_off,
                                 test_status_flags_that_are_no_error_do_not_stop_the_arm,
                                 test_trajectory_is_followed_to_its_last_point,
                                 test_uncalibrated_drives_count_from_power_up_until_calibrated_on_request,
                                 test_velocity_command_moves_at_the_velocity)
from conftest import local_ros_domain, ros_domain_id
from youbot_dynamics.contract.topics import JOINT_STATES, POSITION_COMMANDS
from youbot_dynamics.driver import ArmDriver, BusError, ControllerMode, DriverConfig, DriverPhase, PysoemBus
from youbot_dynamics.driver.emulator import EmulatorProcess, VethPair

pytest.importorskip("pysoem")

# Generous: a frame the emulator answers late counts as lost (the driver's default is 500 us, for
# drives that answer in microseconds, not for a Python process on a loaded machine).
RECEIVE_TIMEOUT = 0.01


@pytest.fixture(scope="module")
def veth():
    name = f"ybm{os.getpid() % 100000}"
    try:
        pair = VethPair.create(name, f"{name}s")
    except (PermissionError, RuntimeError) as exc:
        pytest.skip(f"cannot create a veth pair here: {exc}")
    yield pair
    pair.remove()


class _SimView:
    """What the tests read of ``bus.sim`` (the MuJoCo arm), from the emulator process."""

    def __init__(self, emulator: EmulatorProcess) -> None:
        self._emulator = emulator

    @property
    def data(self):
        return types.SimpleNamespace(qpos=self._emulator.true_state()["q"])

    @property
    def time(self) -> float:
        return self._emulator.true_state()["time"]

    def measure(self):
        return types.SimpleNamespace(effort=self._emulator.true_state()["effort"])


class EmulatedBus(PysoemBus):
    """PysoemBus on the master end of ``pair``; the emulated chain (with ``VirtualBus(**options)``
    behind it) on the other; VirtualBus' test hooks forwarded to the emulator."""

    def __init__(self, pair: VethPair, **options) -> None:
        super().__init__(pair.master, receive_timeout=RECEIVE_TIMEOUT)
        self.pair = pair
        self.emulator = EmulatorProcess(pair.slave, **options)
        self.sim = _SimView(self.emulator)
        self.drop_frames = self.emulator.drop_frames
        self.inject = self.emulator.inject
        self.clear_injected = self.emulator.clear_injected
        self.drive_mode = self.emulator.drive_mode

    def release(self) -> None:
        self.close()
        self.emulator.close()


@pytest.fixture(autouse=True)
def over_ethercat(veth, monkeypatch):
    """Every VirtualBus the rerun tests create becomes an EmulatedBus on the veth pair."""
    buses: list[EmulatedBus] = []

    def emulated(**options):
        buses.append(EmulatedBus(veth, **options))
        return buses[-1]

    monkeypatch.setattr(virtual, "VirtualBus", emulated)
    yield emulated
    for bus in buses:
        bus.release()


def test_soem_brings_the_emulated_arm_and_base_to_op(over_ethercat):
    bus = over_ethercat(base_slaves=4, realism=False)
    bus.open()
    names = [s.name for s in bus.slaves()]
    assert names == ["TMCM-1632"] * 4 + ["TMCM-1610"] * 5
    bus.to_operational(range(4, 9))
    state = bus.emulator.true_state()
    assert state["states"] == [0x08] * 9  # every slave's AL status: OP, no error flag
    frames = state["frames"]
    bus.exchange({i: bytes(5) for i in range(4, 9)})
    assert bus.emulator.true_state()["frames"] == frames + 1  # one logical frame, one bus cycle


def test_unplugged_cable_is_a_lost_bus_and_reconnect_recovers(over_ethercat, veth):
    bus = over_ethercat(initial_positions=virtual.Q_START, realism=False)
    driver = ArmDriver(bus, config=DriverConfig(max_lost_frames=20))
    driver.connect()
    virtual.run_until(driver, lambda s: s.phase == DriverPhase.RUNNING, 5000)
    assert virtual.request(driver, "motors_on")[0]
    virtual.hold(driver, "position", virtual.Q_START, 20)
    veth.set_up(False)  # link down on the emulator's end: the master's end loses its carrier too
    try:
        state = virtual.hold(driver, "position", virtual.Q_START, 25, refused_ok=True)
        assert state.phase == DriverPhase.BUS_LOST and "bus lost" in state.faults[0]
        ok, message = virtual.request(driver, "reconnect", max_cycles=20)
        assert not ok, message  # nobody answers while the cable is out
    finally:
        veth.set_up(True)
    deadline = time.monotonic() + 10.0
    while True:  # the link needs a moment to come back up
        ok, message = virtual.request(driver, "reconnect", max_cycles=20)
        if ok or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ok, message
    assert virtual.request(driver, "motors_on")[0]
    state = virtual.hold(driver, "position", virtual.Q_START, 200)
    assert state.phase == DriverPhase.RUNNING and state.interface == "position"
    np.testing.assert_allclose(state.position, bus.sim.data.qpos, atol=2e-4)


def test_no_slaves_on_the_interface_is_a_clear_error(veth):
    bus = PysoemBus(veth.master, receive_timeout=RECEIVE_TIMEOUT)  # no emulator behind the veth pair
    with pytest.raises(BusError, match="no EtherCAT slaves found"):
        bus.open()


def test_driver_node_with_the_pysoem_backend_runs_the_emulated_arm_and_stops_on_sigint(veth, tmp_path):
    """The node as users start it (``backend: pysoem``), over DDS: joint states of the emulated arm, a
    position command executed by its drives, Ctrl-C: motors stopped, bus back to INIT, exit 0."""
    # realism on: the friction of the joints holds the arm while the motors are off (start-up and
    # commutation); the ideal arm falls, like an unpowered youBot without its friction, into its limits
    emulator = EmulatorProcess(veth.slave, wall_clock=True, initial_positions=virtual.Q_START)
    received: list[np.ndarray] = []
    with local_ros_domain(ros_domain_id(__file__)):
        context = Context()
        rclpy.init(context=context)
        node = rclpy.create_node("ethercat_test_client", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        node.create_subscription(JointState, JOINT_STATES, lambda m: received.append(np.array(m.position)), 10)
        command = node.create_publisher(Float64MultiArray, POSITION_COMMANDS, 10)
        proc = subprocess.Popen([sys.executable, "-m", "youbot_dynamics.nodes.youbot_driver", "--ros-args",
                                 "-p", "backend:=pysoem", "-p", f"interface:={veth.master}",
                                 "-p", "enable_on_start:=true"],
                                env=dict(os.environ, PYTHONUNBUFFERED="1"), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def spin_until(condition, timeout: float, what: str, publish=None) -> None:
            deadline = time.monotonic() + timeout
            while not condition():
                assert proc.poll() is None, f"the driver ended: {proc.stdout.read()}"
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                if publish is not None:
                    command.publish(Float64MultiArray(data=publish.tolist()))
                executor.spin_once(timeout_sec=0.02)

        try:
            spin_until(lambda: len(received) > 200, 60.0, "joint states from the driver", publish=virtual.Q_START)
            truth = emulator.true_state()["q"]
            np.testing.assert_allclose(received[-1], truth, atol=2e-3)
            goal = virtual.Q_START + np.array([0.1, -0.1, 0.1, -0.1, 0.1])
            spin_until(lambda: np.max(np.abs(emulator.true_state()["q"] - goal)) < 3e-3, 30.0,
                       "the emulated arm at the commanded position", publish=goal)
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
            assert proc.returncode == 0, out
            assert "youBot arm driver (pysoem on" in out
            state = emulator.true_state()
            assert state["states"] == [0x01] * 5  # the master closed the bus: every slave back in INIT
            assert all(emulator.drive_mode(j) == ControllerMode.MOTOR_STOP for j in range(5))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
            emulator.close()
            executor.shutdown()
            node.destroy_node()
            rclpy.shutdown(context=context)
