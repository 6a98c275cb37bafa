"""The driver logic (youbot_dynamics.driver.ArmDriver) on the virtual bus: the whole driver but the socket.

Cycles are run synchronously (no thread), so the driver's clock is the bus' time (cycles x 1 ms).
The ground truth is the MuJoCo arm behind the virtual drives (``bus.sim``).
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.control.release import release_waypoints
from youbot_dynamics.driver import (ArmDriver, BusError, CommandError, ControllerMode, CyclicLoop, DriverConfig,
                                    DriverPhase, StatusFlag, VirtualBus, VirtualDriveConfig)
from youbot_dynamics.driver.process_data import AxisParameter, DriveInput, DriveOutput, TmclCommand

ARM = default_arm()
N = ARM.n_joints
Q_START = np.array([2.95, 1.0, -2.0, 1.8, 2.9])


def make(driver_config: DriverConfig = DriverConfig(), *, motors_on: bool = True, **bus_options):
    options = {"initial_positions": Q_START, "realism": False, **bus_options}
    bus = VirtualBus(**options)
    driver = ArmDriver(bus, config=driver_config)
    driver.connect()
    run_until(driver, lambda s: s.phase == DriverPhase.RUNNING, 5000)
    if motors_on:
        assert request(driver, "motors_on") == (True, "motors on: commands accepted")
    return bus, driver


def run(driver, cycles: int):
    state = None
    for _ in range(cycles):
        state = driver.cycle()
    return state


def run_until(driver, predicate, max_cycles: int):
    for _ in range(max_cycles):
        state = driver.cycle()
        if predicate(state):
            return state
    raise AssertionError(f"not reached in {max_cycles} cycles: phase {state.phase}, faults {state.faults}")


def request(driver, name: str, max_cycles: int = 5000):
    future = driver.request(name)
    for _ in range(max_cycles):
        driver.cycle()
        if future.done():
            return future.result()
    raise AssertionError(f"request {name} not done")


def hold(driver, interface: str, values, cycles: int, every: int = 20, refused_ok: bool = False):
    """Repeat a command every ``every`` cycles; ``refused_ok``: carry on when the driver refuses it."""
    state = None
    for k in range(cycles):
        if k % every == 0:
            try:
                driver.command(interface, values)
            except CommandError:
                if not refused_ok:
                    raise
        state = driver.cycle()
    return state


def true_q(bus):
    return bus.sim.data.qpos.copy()


# -- start-up ---------------------------------------------------------------------------------------

def test_startup_picks_the_arm_slaves_commutates_and_leaves_the_motors_off():
    bus = VirtualBus(initial_positions=Q_START, realism=False, base_slaves=4)
    driver = ArmDriver(bus)
    driver.connect()
    assert driver.slaves == [4, 5, 6, 7, 8] and driver.slave_names == ["TMCM-1610"] * 5
    first = driver.cycle()
    assert not any(f & StatusFlag.INITIALIZED for f in first.flags)  # power-up: not commutated
    modes = set()
    state = first
    while state.phase != DriverPhase.RUNNING:
        state = driver.cycle()
        modes |= {bus.drive_mode(j) for j in range(N)}
        assert state.sequence < 1000
    assert ControllerMode.VELOCITY_CONTROL in modes  # firmware 2.00 commutates in velocity mode
    assert all(f & StatusFlag.INITIALIZED for f in state.flags)
    assert not state.enabled and state.interface is None
    state = run(driver, 5)
    assert all(m == ControllerMode.MOTOR_STOP for m in state.modes)
    with pytest.raises(CommandError, match="motors are off"):
        driver.command("position", Q_START)
    np.testing.assert_allclose(state.position, true_q(bus), atol=2e-4)  # virtual drives count from the stop


def test_firmware_148_commutates_with_mode_initialize():
    bus, driver = make(DriverConfig(firmware="1.48"), motors_on=False, config=VirtualDriveConfig(firmware="1.48"))
    assert all(driver.state().flags[j] & StatusFlag.INITIALIZED for j in range(N))


def test_commutation_that_never_completes_is_a_fault():
    bus = VirtualBus(initial_positions=Q_START, realism=False)  # firmware 2.00 ignores INITIALIZE
    driver = ArmDriver(bus, config=DriverConfig(firmware="1.48", commutation_timeout=0.1))
    driver.connect()
    state = run_until(driver, lambda s: s.phase == DriverPhase.FAULT, 500)
    assert "commutation failed" in state.faults[0]


def test_too_few_joint_slaves_is_refused():
    class FourJoints(VirtualBus):
        def slaves(self):
            return super().slaves()[:4]

    driver = ArmDriver(FourJoints(realism=False))
    with pytest.raises(Exception, match="found 4 arm joint slaves"):
        driver.connect()


def test_uncommutated_drive_gives_no_current():
    bus = VirtualBus(initial_positions=Q_START, realism=False)
    bus.open()
    bus.to_operational(range(N))
    from youbot_dynamics.driver.process_data import DriveInput, DriveOutput
    out = {j: DriveOutput(-500, ControllerMode.CURRENT_MODE).encode() for j in range(N)}
    answer = bus.exchange(out)
    assert all(DriveInput.decode(answer[j]).actual_current == 0 for j in range(N))


# -- calibration ------------------------------------------------------------------------------------

NEAR_STOPS = np.array([0.12, 0.1, -0.1, 0.12, 0.2])  # close to the calibration stops (q = 0)
# The stop is found while the drive pushes into it: the compliant MuJoCo stop yields up to ~0.4 mrad
# on joint 5 (about 18 ticks), which the zero inherits, as a real stop's compliance would.
CALIBRATION_ATOL = 1e-3


def test_calibration_finds_the_stops_and_zeroes_the_drives():
    bus, driver = make(DriverConfig(calibrate_on_start=True), motors_on=False, calibrated=False,
                       initial_positions=NEAR_STOPS)
    state = driver.state()
    assert state.calibrated and state.phase == DriverPhase.RUNNING and not state.enabled
    np.testing.assert_allclose(state.position, true_q(bus), atol=CALIBRATION_ATOL)
    assert driver.units.offsets.tolist() == [0] * N  # the drives were zeroed by SAP 1


def test_uncalibrated_drives_count_from_power_up_until_calibrated_on_request():
    bus, driver = make(motors_on=False, calibrated=False, initial_positions=NEAR_STOPS)
    np.testing.assert_allclose(driver.state().position, true_q(bus) - NEAR_STOPS, atol=3e-4)
    assert request(driver, "calibrate") == (True, "done")
    state = run(driver, 2)
    assert state.calibrated
    np.testing.assert_allclose(state.position, true_q(bus), atol=CALIBRATION_ATOL)


def test_calibration_waits_through_lost_frames():
    bus, driver = make(DriverConfig(calibration_stall_time=0.05), motors_on=False, calibrated=False,
                       initial_positions=NEAR_STOPS)
    future = driver.request("calibrate")
    run(driver, 300)
    bus.drop_frames(80)  # longer than the stall window: stale inputs must not look like stalled joints
    run(driver, 80)
    while not future.done():
        driver.cycle()
    assert future.result() == (True, "done")
    np.testing.assert_allclose(run(driver, 2).position, true_q(bus), atol=CALIBRATION_ATOL)


def test_calibration_without_mailbox_keeps_the_offsets_in_the_driver():
    class NoMailbox(VirtualBus):
        def mailbox(self, slave, request):
            raise BusError("no mailbox on this bus")

    bus = NoMailbox(initial_positions=NEAR_STOPS, realism=False, calibrated=False)
    driver = ArmDriver(bus, config=DriverConfig(calibrate_on_start=True))
    driver.connect()
    state = run_until(driver, lambda s: s.phase == DriverPhase.RUNNING, 5000)
    assert driver.units.offsets.tolist() != [0] * N
    assert driver.statistics.mailbox_errors >= N  # counted (and reported on /diagnostics)
    np.testing.assert_allclose(state.position, true_q(bus), atol=CALIBRATION_ATOL)


# -- command modes ----------------------------------------------------------------------------------

def test_position_command_reaches_the_goal():
    bus, driver = make()
    goal = Q_START + np.array([0.2, -0.15, 0.2, -0.2, 0.25])
    state = hold(driver, "position", goal, 1500)
    assert state.interface == "position" and all(m == ControllerMode.POSITION_CONTROL for m in state.modes)
    np.testing.assert_allclose(true_q(bus), goal, atol=3e-3)
    np.testing.assert_allclose(state.position, true_q(bus), atol=2e-4)


def test_velocity_command_moves_at_the_velocity():
    bus, driver = make()
    v = np.array([0.3, 0.0, 0.0, 0.0, -0.4])
    hold(driver, "velocity", v, 300)
    q0 = true_q(bus)
    state = hold(driver, "velocity", v, 500)
    np.testing.assert_allclose((true_q(bus) - q0) / 0.5, v, atol=0.02)
    np.testing.assert_allclose(state.velocity, v, atol=0.02)
    assert all(m == ControllerMode.VELOCITY_CONTROL for m in state.modes)


def test_effort_command_is_sent_as_current_and_applied():
    bus, driver = make()
    tau = np.array([1.0, 0.0, 0.0, 0.0, 0.0])  # joint 1 turns about the vertical: no gravity
    state = hold(driver, "effort", tau, 50)
    assert all(m == ControllerMode.CURRENT_MODE for m in state.modes)
    assert state.current_ma[0] == -191  # 1 N m = 0.191 A, inverse-direction joint
    # the arm gets 0.191 A x 0.0335 N m/A x 156 = 0.99815 N m on joint 1
    assert bus.sim.measure().effort[0] == pytest.approx(0.99815, abs=1e-4)
    assert state.effort[0] == pytest.approx(0.99815, abs=1e-4)
    q0 = true_q(bus)
    hold(driver, "effort", tau, 200)
    assert true_q(bus)[0] > q0[0] + 0.005


def test_trajectory_is_followed_to_its_last_point():
    bus, driver = make()
    goal = Q_START + np.array([-0.3, 0.2, -0.2, 0.2, -0.3])
    driver.command_trajectory([0.5, 1.0], [(Q_START + goal) / 2, goal])
    run(driver, 500)
    progress = (true_q(bus) - Q_START) / (goal - Q_START)
    assert np.all((progress > 0.3) & (progress < 0.8)), progress
    state = run(driver, 1200)  # no timeout: the last point is held
    assert state.interface == "trajectory"
    assert all(m == ControllerMode.VELOCITY_CONTROL for m in state.modes)  # velocity mode + position feedback
    np.testing.assert_allclose(true_q(bus), goal, atol=3e-3)


def test_fast_trajectory_is_not_limited_by_the_position_ramp():
    bus, driver = make()
    # at rest first (the arm moves after the start-up): a trajectory starts from the measured state, and the
    # reference below is the rest-to-rest quintic
    q0 = hold(driver, "position", driver.state().position, 300).position
    goal = q0 + np.array([0.0, 0.0, 0.0, 0.0, -1.0])
    driver.command_trajectory([1.3], goal[None, :])  # quintic: peak 1.875 x 1 rad / 1.3 s = 1.44 rad/s
    errors = []
    for k in range(1, 1301):
        driver.cycle()
        tau = min(k * 0.001 / 1.3, 1.0)  # the quintic rest-to-rest reference, written out
        reference = q0[4] - 1.0 * (10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5)
        errors.append(abs(reference - true_q(bus)[4]))
    run(driver, 300)
    np.testing.assert_allclose(true_q(bus), goal, atol=3e-3)
    assert max(errors) < 0.02  # a reference limited to the drives' 1 rad/s position ramp would lag 0.15 rad


def test_bad_commands_are_rejected():
    bus, driver = make()
    for interface, values, match in [
            ("position", np.full(4, 2.0), "5 joint values"),
            ("position", np.r_[Q_START[:4], np.nan], "NaN"),
            ("position", ARM.position_max + 0.1, "outside the joint limits"),
            ("velocity", np.full(5, 3.0), "velocity_max"),
            ("effort", [[1.0] * 5] * 2, "expected shape"),
            ("torque", np.zeros(5), "unknown interface")]:
        with pytest.raises(CommandError, match=match):
            driver.command(interface, values)
    with pytest.raises(CommandError, match="increasing"):
        driver.command_trajectory([0.5, 0.4], [Q_START, Q_START])
    # the same refusals as the simulator (issue 19 items 7, 12): a path beyond velocity_max (the
    # driver used to clip it: the arm lagged its reference), a start point away from the arm
    with pytest.raises(CommandError, match="arm_joint_1 would move at .* above its velocity_max"):
        driver.command_trajectory([0.05], (Q_START + [1.5, 0, 0, 0, 0])[None, :])
    with pytest.raises(CommandError, match=r"0\.30\d\d rad from the current position on arm_joint_2"):
        driver.command_trajectory([0.0, 1.0], [Q_START + [0, 0.3, 0, 0, 0], Q_START])
    assert run(driver, 3).interface == "trajectory"  # refused: the drives brake the arm and hold it (issue 35)
    driver.command_trajectory([0.0, 1.0], [Q_START, Q_START + [0, 0.1, 0, 0, 0]])  # the start state: accepted
    assert run(driver, 3).interface == "trajectory"


# -- safety -----------------------------------------------------------------------------------------

def test_command_timeout_stops_the_motors():
    bus, driver = make()
    driver.command("position", Q_START)
    state = run(driver, 95)
    assert state.interface == "position"
    state = run(driver, 10)
    assert state.interface is None and all(m == ControllerMode.MOTOR_STOP for m in state.modes)
    assert driver.statistics.command_timeouts == 1
    assert state.enabled  # still on: the next command drives again
    assert hold(driver, "position", Q_START, 5).interface == "position"


def test_currents_are_clipped_to_the_limits_of_the_arm_description():
    bus, driver = make(DriverConfig(current_limit_scale=0.5))
    hold(driver, "effort", np.array([100.0, 0.0, 0.0, 0.0, -100.0]), 3)
    sent = [bus._drives[j].value for j in range(N)]  # what the drives received
    assert sent[0] == -2884 and sent[4] == 875  # 0.5 x 5768 mA (inverse joint), 0.5 x 1750 mA
    assert driver.statistics.current_clamps > 0


def test_limit_monitor_stops_torque_towards_a_limit():
    near = Q_START.copy()
    near[0] = ARM.position_min[0] + 0.01  # inside the 0.02 rad margin
    bus, driver = make(initial_positions=near, realism=True)  # friction stops the coasting after commutation
    run(driver, 200)
    near = true_q(bus)
    assert near[0] < ARM.position_min[0] + 0.02
    push = np.array([-2.0, 0, 0, 0, 0])
    hold(driver, "effort", push, 300)
    assert abs(true_q(bus)[0] - near[0]) < 1e-3
    assert bus._drives[0].value == 0 and driver.statistics.limit_interventions > 0
    hold(driver, "effort", -push, 300)  # away from the limit: allowed
    assert true_q(bus)[0] > near[0] + 0.01
    assert bus._drives[0].value == -383  # 2 N m / (0.0335 N m/A x 156) = 0.3827 A, inverse-direction joint 1


def test_limit_monitor_is_off_away_from_the_limits():
    bus, driver = make(realism=True)
    hold(driver, "effort", np.array([-2.0, 0, 0, 0, 0]), 300)
    assert true_q(bus)[0] < Q_START[0] - 0.01 and driver.statistics.limit_interventions == 0


def test_drive_error_stops_everything_until_cleared():
    bus, driver = make()
    hold(driver, "position", Q_START, 50)
    bus.inject(1, StatusFlag.OVER_CURRENT)
    state = run(driver, 3)
    assert state.phase == DriverPhase.FAULT and not state.enabled
    assert "arm_joint_2: OVER_CURRENT" in state.faults[0]
    assert all(m == ControllerMode.MOTOR_STOP for m in state.modes)
    with pytest.raises(CommandError, match="OVER_CURRENT"):
        driver.command("position", Q_START)
    ok, message = request(driver, "motors_on")
    assert not ok and "OVER_CURRENT" in message
    bus.clear_injected(1)
    assert request(driver, "motors_on") == (True, "done")
    assert driver.state().phase == DriverPhase.RUNNING and driver.state().enabled


@pytest.mark.limits_exempt("an i2t trip stops the drive at full current: joint 1 accelerates, then the arm falls, "
                           "as the hardware's would")
def test_i2t_trips_and_is_cleared_by_motors_on():
    bus, driver = make(config=VirtualDriveConfig(i2t_capacity=0.02))
    state = hold(driver, "effort", np.array([25.0, 0, 0, 0, 0]), 200, refused_ok=True)
    assert state.phase == DriverPhase.FAULT and "I2T_EXCEEDED" in state.faults[0]
    assert request(driver, "motors_on") == (True, "done")
    assert not driver.state().flags[0] & StatusFlag.I2T_EXCEEDED


def test_a_few_lost_frames_are_counted_and_tolerated():
    bus, driver = make()
    bus.drop_frames(30)
    state = hold(driver, "position", Q_START, 100)
    assert state.phase == DriverPhase.RUNNING and state.interface == "position"
    assert driver.statistics.lost_frames == 30 and driver.statistics.max_consecutive_lost == 30


def test_drive_timeout_flag_is_a_fault_cleared_by_motors_on():
    bus, driver = make(config=VirtualDriveConfig(timeout=0.02))
    bus.drop_frames(30)  # the drives time out after 20 cycles; the driver tolerates 100 lost frames
    state = hold(driver, "position", Q_START, 40, refused_ok=True)
    assert state.phase == DriverPhase.FAULT and "TIMEOUT" in state.faults[0]
    assert request(driver, "motors_on") == (True, "done")
    assert hold(driver, "position", Q_START, 5).interface == "position"


def test_lost_bus_stops_and_reconnects_on_request():
    bus, driver = make()
    bus.drop_frames(150)
    state = hold(driver, "position", Q_START, 101, refused_ok=True)
    assert state.phase == DriverPhase.BUS_LOST and not state.fresh and "bus lost" in state.faults[0]
    with pytest.raises(CommandError, match="bus lost"):
        driver.command("position", Q_START)
    state = run(driver, 100)  # frames are back, but the driver waits for a reconnect
    assert state.phase == DriverPhase.BUS_LOST and state.flags[0] & StatusFlag.TIMEOUT  # the drives timed out
    ok, _ = request(driver, "motors_on")
    assert not ok
    assert request(driver, "reconnect") == (True, "done")
    assert driver.statistics.reconnects == 1 and not driver.state().flags[0] & StatusFlag.TIMEOUT
    assert request(driver, "motors_on")[0]
    assert hold(driver, "position", Q_START, 5).interface == "position"


def test_motors_off_refuses_commands():
    bus, driver = make()
    hold(driver, "position", Q_START, 10)
    assert request(driver, "motors_off") == (True, "motors off")
    state = run(driver, 2)
    assert state.interface is None and all(m == ControllerMode.MOTOR_STOP for m in state.modes)
    with pytest.raises(CommandError):
        driver.command("effort", np.zeros(5))
    with pytest.raises(ValueError, match="unknown request"):
        driver.request("explode")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_virtual_arm_on_a_wall_clock_keeps_real_time_and_times_out_on_late_frames():
    clock = FakeClock()
    bus = VirtualBus(initial_positions=Q_START, realism=False, clock=clock, commutated=True)
    bus.open()
    bus.to_operational(range(N))
    stop = {j: DriveOutput(0, ControllerMode.MOTOR_STOP).encode() for j in range(N)}
    bus.exchange(stop)
    t0 = bus.sim.time
    clock.now += 0.0055  # the master was 5.5 ms late: the arm did not wait
    bus.exchange(stop)
    assert bus.sim.time - t0 == pytest.approx(0.005)
    clock.now += 0.0004  # early: still one step
    bus.exchange(stop)
    assert bus.sim.time - t0 == pytest.approx(0.006)
    clock.now += 0.15  # a frame 150 ms late: the drives' 100 ms timeout tripped before it arrived
    answer = bus.exchange(stop)
    assert DriveInput.decode(answer[0]).flags & StatusFlag.TIMEOUT
    assert bus.sim.time - t0 == pytest.approx(0.155)  # 155.9 ms of wall time since: locked to the clock


def test_virtual_mailbox_parameters():
    bus = VirtualBus(realism=False)
    bus.open()
    from youbot_dynamics.driver.process_data import MailboxRequest
    assert bus.mailbox(0, MailboxRequest(TmclCommand.GGP, 90)).value == 100
    assert bus.mailbox(0, MailboxRequest(TmclCommand.SGP, 90, 50)).ok
    assert bus.mailbox(0, MailboxRequest(TmclCommand.GGP, 90)).value == 50
    assert not bus.mailbox(0, MailboxRequest(TmclCommand.SAP, 200, 1)).ok
    reply = bus.mailbox(0, MailboxRequest(TmclCommand.SAP, AxisParameter.ACTUAL_POSITION, 1234))
    assert reply.ok and bus.mailbox(0, MailboxRequest(TmclCommand.GAP, AxisParameter.ACTUAL_POSITION)).value == 1234


def test_config_is_validated():
    for bad in ({"cycle_period": 0.0}, {"firmware": "3.0"}, {"current_limit_scale": 1.5}, {"max_lost_frames": 0},
                {"trajectory_interpolation": "linear"}, {"command_timeout": float("nan")}):
        with pytest.raises(ValueError):
            DriverConfig(**bad)


# -- the thread -------------------------------------------------------------------------------------

def test_cyclic_loop_runs_in_its_thread_and_stops_the_motors():
    bus = VirtualBus(initial_positions=Q_START, realism=False)
    driver = ArmDriver(bus, config=DriverConfig(enable_on_start=True), clock=time.monotonic)
    driver.connect()
    loop = CyclicLoop(driver)
    loop.start()
    try:
        first = driver.wait_state(0, timeout=2.0)
        assert first is not None
        deadline = time.monotonic() + 5.0
        while driver.state().phase != DriverPhase.RUNNING and time.monotonic() < deadline:
            time.sleep(0.01)
        start = driver.state().sequence
        deadline = time.monotonic() + 10.0
        while driver.state().sequence - start <= 150:  # the thread cycles (its rate: make bench)
            assert time.monotonic() < deadline, f"{driver.state().sequence - start} cycles in 10 s"
            driver.command("position", Q_START)
            time.sleep(0.02)
        later = driver.state()
        assert later.interface == "position"
        assert loop.timing.report()["cycles"] > 0 and loop.error is None
    finally:
        loop.stop()
    assert driver.phase == DriverPhase.DISCONNECTED
    with pytest.raises(BusError):
        bus.exchange({})


# -- what goes on the wire: bus loss and drive errors (issue 34) ------------------------------------

class WireLog:
    """Every output frame the driver hands to ``bus.exchange`` (lost ones included), decoded: what the
    drives get, observed outside the driver (its own state is not asked)."""

    def __init__(self, bus) -> None:
        self.frames: list[list[DriveOutput]] = []
        exchange = bus.exchange

        def recording(outputs):
            self.frames.append([DriveOutput.decode(data) for data in outputs.values()])
            return exchange(outputs)

        bus.exchange = recording

    def __len__(self) -> int:
        return len(self.frames)

    def assert_stopped(self, start: int, what: str, allowed=()) -> None:
        """Every drive output of frames ``start`` on is MOTOR_STOP (or one of ``allowed``)."""
        assert len(self) > start, f"no frames {what}"
        for k, frame in enumerate(self.frames[start:], start):
            moving = [(j, out.mode.name, out.value) for j, out in enumerate(frame)
                      if out.mode != ControllerMode.MOTOR_STOP and out not in allowed]
            assert not moving, f"frame {k - start} {what} drives the joints: {moving}"


class ZeroTorque:
    """A controller in the bus cycle that commands 0 N m every cycle (CURRENT_MODE 0 mA on the wire)."""

    def command(self, inputs):
        return np.zeros(N)

    def after_outputs(self) -> None:
        pass


TRAJECTORY_GOAL = Q_START + np.array([0.4, -0.3, 0.3, -0.3, 0.4])


@pytest.mark.parametrize("driving", ["trajectory", "streamed velocity", "controller in the bus cycle"])
def test_lost_bus_sends_only_motor_stop_until_reconnect_and_motors_on(driving):
    """Issue 34: from the cycle that declares the bus lost, every output the driver puts on the wire is
    MOTOR_STOP and no command is active, while the frames are lost, after they return, through a refused
    motors_on and until reconnect (its start-up: MOTOR_STOP or 0 mA) and motors_on; a trajectory that
    was running at the loss does not resume after them."""
    bus, driver = make(realism=True)  # friction holds the arm once the timed-out drives let it go
    controller = ZeroTorque() if driving == "controller in the bus cycle" else None

    def drive(k: int) -> None:
        if driving == "streamed velocity" and k % 20 == 0:
            try:
                driver.command("velocity", [0.3, 0.0, 0.0, 0.0, -0.3])
            except CommandError:
                pass

    if driving == "trajectory":
        driver.command_trajectory([0.8], TRAJECTORY_GOAL[None, :])  # at the loss: 0.8 rad/s
    driver.attach_controller(controller)
    for k in range(300):
        drive(k)
        state = driver.cycle()
    moving_mode = ControllerMode.CURRENT_MODE if controller else ControllerMode.VELOCITY_CONTROL
    assert state.interface is not None and all(m == moving_mode for m in state.modes)  # driving at the loss
    assert controller or np.max(np.abs(state.velocity)) > 0.25  # the arm moves
    wire = WireLog(bus)
    bus.drop_frames(150)
    k = 0
    while state.phase != DriverPhase.BUS_LOST:
        drive(k)
        state = driver.cycle()
        k += 1
        assert k <= DriverConfig().max_lost_frames, "the bus was not declared lost"
    lost = len(wire)  # the outputs decided in the declaring cycle go out in the next frame
    states = [state]
    for _ in range(250):  # the frames return after 150; the driver waits for reconnect
        drive(k)
        states.append(driver.cycle())
        k += 1
    assert request(driver, "motors_on") == (False, "the bus is lost: call reconnect first")
    wire.assert_stopped(lost, "after the bus was declared lost")
    assert all(bus.drive_mode(j) == ControllerMode.MOTOR_STOP for j in range(N))  # what the drives hold
    assert states[-1].fresh and "bus lost" in states[-1].faults[0]
    assert all(s.phase == DriverPhase.BUS_LOST and s.interface is None and not s.enabled for s in states)
    before_reconnect = len(wire)
    assert request(driver, "reconnect") == (True, "done")
    wire.assert_stopped(before_reconnect, "of the start-up after reconnect",
                        allowed=(DriveOutput(0, ControllerMode.CURRENT_MODE),))
    after_reconnect = len(wire)
    for _ in range(50):
        drive(k)
        state = driver.cycle()
        k += 1
    assert state.phase == DriverPhase.RUNNING and not state.enabled and state.interface is None
    wire.assert_stopped(after_reconnect, "after reconnect, before motors_on")
    assert all(bus.drive_mode(j) == ControllerMode.MOTOR_STOP for j in range(N))
    assert request(driver, "motors_on")[0]
    if driving == "trajectory":  # the trajectory of before the loss is gone: a new command is needed
        after_motors_on = len(wire)
        state = run(driver, 50)
        assert state.interface is None
        wire.assert_stopped(after_motors_on, "after motors_on (the old trajectory must not resume)")
        driver.command_trajectory([], np.empty((0, N)))  # hold here: accepted, on the wire again
    state = run(driver, 5) if driving != "streamed velocity" else hold(driver, "velocity", np.zeros(N), 5)
    assert state.interface is not None and all(out.mode == moving_mode for out in wire.frames[-1]), wire.frames[-1]


#: the drives' error flags and the driver's documented reaction to each (doc/driver.md, Safety): all
#: motors stop, the driver goes to fault naming the joint and the flag, commands are refused until
#: motors_on clears the flags. Listed here, not taken from the driver's ERROR_FLAGS.
DRIVE_ERRORS = ("OVER_CURRENT", "UNDER_VOLTAGE", "OVER_VOLTAGE", "OVER_TEMPERATURE", "HALL_SENSOR_ERROR",
                "ENCODER_ERROR", "INITIALIZATION_ERROR", "EMERGENCY_STOP", "TIMEOUT", "I2T_EXCEEDED")


@pytest.mark.parametrize("flag", DRIVE_ERRORS)
def test_each_drive_error_flag_stops_all_motors_and_faults_until_cleared(flag):
    joint = DRIVE_ERRORS.index(flag) % N
    bus, driver = make(realism=True)
    driver.command_trajectory([1.0], TRAJECTORY_GOAL[None, :])
    state = run(driver, 200)
    assert state.interface == "trajectory" and all(m == ControllerMode.VELOCITY_CONTROL for m in state.modes)
    wire = WireLog(bus)
    bus.inject(joint, StatusFlag[flag])
    state = driver.cycle()  # the flag arrives with this cycle's inputs: the decision of this cycle stops
    assert state.phase == DriverPhase.FAULT, f"{flag} on {ARM.joint_names[joint]}: still {state.phase.value}"
    assert not state.enabled and state.interface is None
    assert f"{ARM.joint_names[joint]}: {flag}" in state.faults[0] and flag in state.flag_names(joint)
    assert driver.statistics.faults == 1
    with pytest.raises(CommandError, match=flag):
        driver.command("position", Q_START)
    run(driver, 100)
    assert request(driver, "motors_on")[0] is False  # the flag is still raised
    wire.assert_stopped(1, f"after {flag}")
    assert driver.state().phase == DriverPhase.FAULT
    bus.clear_injected(joint)
    assert request(driver, "motors_on") == (True, "done")
    state = run(driver, 20)
    assert state.phase == DriverPhase.RUNNING and state.enabled and state.interface is None  # nothing resumed
    wire.assert_stopped(1, f"after {flag}, until a new command")
    assert hold(driver, "position", state.position, 5).interface == "position"


@pytest.mark.parametrize("flag", ["MOTOR_HALTED", "POSITION_REACHED", "FREE_RUNNING"])
def test_status_flags_that_are_no_error_do_not_stop_the_arm(flag):
    """The status bits a healthy drive reports (MOTOR_HALTED at 0 rpm, POSITION_REACHED) are no fault."""
    bus, driver = make(realism=True)
    bus.inject(2, StatusFlag[flag])
    state = hold(driver, "position", Q_START, 50)
    assert state.phase == DriverPhase.RUNNING and state.enabled and state.interface == "position"
    assert all(m == ControllerMode.POSITION_CONTROL for m in state.modes)


def test_lost_frames_do_not_wind_up_the_trajectory_feedback():
    """Below ``max_lost_frames`` the driver keeps sending outputs, and they may reach the drives (an
    answer that came late, a short working counter: the drives took the frame). The trajectory's
    position feedback must not act on the stale positions of those cycles: each output stays at the
    reference velocity (the quintic written out), where feedback on the last received position climbed
    to velocity_max within 60 lost frames."""
    bus, driver = make(realism=True)
    driver.command_trajectory([0.8], TRAJECTORY_GOAL[None, :])
    first = driver.cycle()  # the trajectory starts here, at rest at the measured position
    run(driver, 299)
    wire = WireLog(bus)
    times = [driver.state().time]  # frame k was decided in the cycle of times[k]
    bus.drop_frames(60)
    for _ in range(60):
        times.append(driver.cycle().time)
    sign = np.where(ARM.inverse_direction, -1.0, 1.0)
    worst = 0.0
    for frame, t in zip(wire.frames, times):
        u = (t - first.time) / 0.8
        reference = (TRAJECTORY_GOAL - first.position) * 30 * u ** 2 * (1 - u) ** 2 / 0.8  # quintic rest to rest
        sent = np.array([out.value for out in frame]) * sign * 2 * np.pi / (60 * ARM.gear_ratio)  # rpm -> rad/s
        worst = max(worst, np.abs(sent - reference).max())
    print(f"\nlargest |output - reference velocity| during 60 lost frames: {worst:.4f} rad/s")
    assert worst < 0.1, f"{worst:.3f} rad/s from the reference velocity during 60 lost frames"


# -- the release and a refused trajectory (issue 35 items 2 and 4) ---------------------------------

def push(driver, torque, speed: float, max_cycles: int = 1000):
    """Effort ``torque`` [N m] (a push) on each joint until it moves faster than ``speed`` [rad/s], then 0
    on it; the state when every pushed joint is that fast."""
    torque = np.asarray(torque, dtype=float)
    for _ in range(max_cycles):
        state = driver.cycle()
        torque = np.where(np.abs(state.velocity) > speed, 0.0, torque)
        if not torque.any():
            return state
        driver.command("effort", torque)
    raise AssertionError(f"the push did not reach {speed:.3g} rad/s in {max_cycles} cycles: {state.velocity}")


def true_motion(driver, bus, cycles: int):
    """The true positions after each of ``cycles`` cycles (one 1 ms physics step each) and the last state."""
    q = [true_q(bus)]
    for _ in range(cycles):
        state = driver.cycle()
        q.append(true_q(bus))
    return np.array(q), state


@pytest.mark.limits_exempt("joints 1 and 5 are pushed to 1.2 x velocity_max on purpose (the issue's push)")
def test_a_release_from_overspeed_is_accepted_and_brakes_the_arm_to_rest():
    """Issue 35 item 2 on the driver: joints 1 and 5 pushed to 1.2 x velocity_max, then the controllers'
    release from the measured state (zero effort, then release_waypoints). The driver accepts it (it
    started a trajectory from the measured position at zero velocity and refused any release from about
    0.65 x velocity_max: 'would move at ... above its velocity_max'), the arm only slows down (no stop and
    restart) and comes to rest inside the limits, held by the motors. Judged on the true motion."""
    bus, driver = make()
    hold(driver, "position", Q_START, 300)
    over = 1.2 * ARM.velocity_max
    state = push(driver, [15.0, 0.0, 0.0, 0.0, 0.5], over[0])
    pushed = np.abs(state.velocity) > over
    assert pushed[0] and pushed[4], state.velocity
    driver.command("effort", np.zeros(N))
    driver.command_trajectory(*release_waypoints(ARM, state.position, state.velocity))
    q, state = true_motion(driver, bus, 2000)
    assert state.enabled and state.interface == "trajectory"
    assert all(m == ControllerMode.VELOCITY_CONTROL for m in state.modes)  # the motors hold the arm
    speed = np.abs(np.diff(q, axis=0)) / 0.001
    slowest = np.minimum.accumulate(speed, axis=0)
    # 0.14 rad/s measured: the position feedback takes back the distance the arm ran ahead of the clamped start
    rise = (speed - slowest)[:, pushed].max()
    assert rise < 0.3, f"a pushed joint sped up again by {rise:.3f} rad/s after slowing down"
    assert np.all(speed[100:] <= ARM.velocity_max * 1.01)  # within velocity_max from 0.1 s on (10 ms measured)
    assert np.all(speed[-100:] < 0.01)  # at rest
    assert np.all(q >= ARM.position_min) and np.all(q <= ARM.position_max)


#: what a faulty peer sends (issue 35 item 4: a second controller's release, 98 rad/s), or a
#: trajectory beyond a joint's limit; and the refusal's reason
BAD_TRAJECTORIES = {
    "98 rad/s": (lambda q: ([0.02, 0.04], [q, q], [[0.0, 98.3, 0.0, 0.0, 0.0]] * 2), "above velocity_max"),
    "outside the limits": (lambda q: ([0.5], [q + [0.0, ARM.position_max[1] + 0.2 - q[1], 0.0, 0.0, 0.0]], None),
                           "outside the joint limits"),
}


@pytest.mark.parametrize("previous, bad", [("zero effort", "98 rad/s"), ("position", "outside the limits")])
def test_a_refused_trajectory_leaves_the_arm_held_with_its_motors_on(previous, bad):
    """Issue 35 items 2 and 4 on the driver: the arm at rest under gravity (joint 2 loaded), a controller
    lets go (zero effort) or a position stream stops, and a trajectory the driver refuses arrives. The
    refusal is reported (one line, saying the arm is held) and the drives keep the arm where it was:
    motors on, no command timeout, drift < 3 mrad over 1 s (the zero effort stayed, the command timed out
    and the arm fell with its motors off)."""
    bus, driver = make()
    hold(driver, "position", Q_START, 300)
    if previous == "zero effort":
        driver.command("effort", np.zeros(N))
    driver.cycle()
    make_trajectory, reason = BAD_TRAJECTORIES[bad]
    q0 = true_q(bus)
    with pytest.raises(CommandError) as refusal:
        driver.command_trajectory(*make_trajectory(driver.state().position))
    q, state = true_motion(driver, bus, 1000)
    drift = np.abs(q - q0).max()
    assert drift < 3e-3, f"the arm moved {drift:.4f} rad after the refusal ({refusal.value})"
    assert state.phase == DriverPhase.RUNNING and state.enabled and state.interface == "trajectory"
    assert all(m == ControllerMode.VELOCITY_CONTROL for m in state.modes)
    assert driver.statistics.command_timeouts == 0
    message = str(refusal.value)
    assert reason in message and message.endswith("; the drives brake the arm from its measured state and hold it")
    assert "\n" not in message


@pytest.mark.parametrize("bad", BAD_TRAJECTORIES)
def test_a_refused_trajectory_leaves_a_running_trajectory_going(bad):
    """A trajectory runs and a bad one arrives half-way: refused (no braking: the running one holds the
    arm), and the running one goes on to its goal."""
    bus, driver = make()
    driver.command_trajectory([1.0], TRAJECTORY_GOAL[None, :])
    run(driver, 400)
    halfway = true_q(bus)
    assert np.all(np.abs(halfway - TRAJECTORY_GOAL) > 0.05)
    make_trajectory, reason = BAD_TRAJECTORIES[bad]
    with pytest.raises(CommandError) as refusal:
        driver.command_trajectory(*make_trajectory(driver.state().position))
    state = run(driver, 1100)
    assert state.interface == "trajectory" and state.enabled
    np.testing.assert_allclose(true_q(bus), TRAJECTORY_GOAL, atol=3e-3)
    assert reason in str(refusal.value) and "brake" not in str(refusal.value)
