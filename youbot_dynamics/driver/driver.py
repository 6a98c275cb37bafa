"""The youBot arm driver logic: one :meth:`ArmDriver.cycle` per bus cycle, no ROS, no threads of its own.

:class:`ArmDriver` owns a :class:`~.bus.Bus` and, every cycle, sends the outputs decided in the
previous cycle, decodes the drives' inputs into joint units (:class:`~.units.JointUnits`),
publishes a :class:`DriverState` snapshot and decides the next outputs. :class:`~.loop.CyclicLoop`
runs it in a dedicated thread; the ROS node (or a test) talks to it through thread-safe calls that
never wait for the bus: :meth:`~ArmDriver.command`, :meth:`~ArmDriver.command_trajectory`,
:meth:`~ArmDriver.state`, :meth:`~ArmDriver.wait_state`, and :meth:`~ArmDriver.request` (a
``concurrent.futures.Future`` for ``motors_on``, ``motors_off``, ``calibrate``, ``reconnect``).

**Start-up, calibration and recovery**: the sequences of :mod:`.sequences` (:class:`~.sequences.DriveSequences`).

**Commands** (validated on the caller's thread; :class:`CommandError` on a wrong length, NaN,
positions outside the limits, velocities above ``velocity_max``, an unknown interface, or motors
off): ``effort`` [N m] -> CURRENT_MODE (mA), ``position`` [rad] -> POSITION_CONTROL (ticks; the
drives' PID and ramp), ``velocity`` [rad/s] -> VELOCITY_CONTROL (motor rpm), ``trajectory`` ->
interpolated here (:mod:`youbot_dynamics.motion.interpolation`) and executed every cycle in velocity mode
with position feedback, ``v = v_ref + trajectory_gain (q_ref - q)`` (clipped to ``velocity_max``):
the drives' position mode would limit the motion to its ramp generator's speed. The last point is
held without timeout. In a cycle without fresh inputs (a lost frame, whose outputs may still reach
the drives) ``v = v_ref``: feedback on the stale position wound up to ``velocity_max``. A trajectory
starts from the running one's reference, else from the measured position and velocity clamped into
the limits and ``velocity_max`` (:meth:`~youbot_dynamics.motion.commands.CommandChecker.start_state`: a
release from an arm pushed beyond them brakes from there). A refused trajectory never leaves the arm
on zero effort or unpowered (issue 35, as the simulator): a running trajectory goes on, any other
command is replaced by a braking from the measured state to rest
(:func:`~youbot_dynamics.motion.commands.braking_waypoints`), held, and the error says so.

**Safety**, every cycle:

* command timeout: a streamed command (effort, position, velocity) older than
  ``command_timeout`` stops the motors (MOTOR_STOP), like the simulator;
* currents are clipped to ``current_limit_scale * max_current`` of the arm description;
* joint-limit monitor (current and velocity modes; the drives' position loop has its own range):
  within ``limit_margin`` of a limit, a current or velocity pushing further towards it is set to 0;
* drive errors (:data:`~.process_data.ERROR_FLAGS`: over-current, voltages, temperature, hall,
  encoder, EtherCAT timeout, I2t, ...) or a lost commutation: all motors stop, the driver goes to
  *fault* and refuses commands until ``motors_on`` clears the flags;
* stale bus: a lost frame (no answer or short working counter) is counted (the start-up and
  calibration sequences wait for fresh inputs, so stale ones cannot look like a stalled joint); after
  ``max_lost_frames`` consecutive ones the motors are stopped and the driver reports the bus lost
  until ``reconnect`` re-opens it and runs the start-up again.

**A controller in the bus cycle** (:meth:`ArmDriver.attach_controller`, issue 18): as ros2_control's
controller manager runs its controllers in the hardware's update loop, a :class:`CycleController`
gets every cycle's inputs right after the exchange that read them (joint units, the
``perf_counter`` instant of the read, whether they are fresh) and returns a joint torque or
``None`` (nothing to command). The torque becomes the active effort command of that cycle's
decision, so it goes out in the next exchange without a hop through another thread or process
(the command timeout does not apply: the controller answers every cycle). A torque while the
motors are off or during a sequence is refused like a streamed command (counted in
``controller_refusals``, the reason kept in :attr:`ArmDriver.controller_refusal`); a streamed
command or trajectory submitted by another thread in the same cycle (the controller's release,
say) takes over after it, as the later command. The time from the read to the torque in the
outputs is kept per cycle (:meth:`ArmDriver.take_controller_latencies`). After the outputs and the
state snapshot, :meth:`CycleController.after_outputs` runs the controller's work that may wait
(observer, reports).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Generator, Protocol, Sequence

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, default_arm
from ..motion.commands import CommandChecker, CommandError, braking_waypoints, path_from
from ..contract.topics import COMMAND_INTERFACES as INTERFACES, STREAMED_INTERFACES
from ..motion.interpolation import HermiteSpline
from .bus import Bus, BusError
from .config import FIRMWARES, DriverConfig
from .process_data import (STOP, ControllerMode, DriveInput, DriveOutput, MailboxRequest,
                           StatusFlag, TmclCommand, decode_flags)
from .sequences import DriverError, DriverPhase, DriveSequences, Outputs
from .units import JointUnits

__all__ = ["JOINT_SLAVE_NAMES", "INTERFACES", "REQUESTS", "FIRMWARES", "DriverError", "CommandError", "DriverPhase",
           "DriverConfig", "DriverState", "ArmDriver", "CycleInputs", "CycleController", "LATENCY_WINDOW"]

Array = NDArray[np.float64]

JOINT_SLAVE_NAMES = ("TMCM-KR-841", "TMCM-1610")
REQUESTS = ("motors_on", "motors_off", "calibrate", "reconnect")
LATENCY_WINDOW = 1 << 17  # read-to-output latencies kept until taken: 131 s at 1 kHz (a bench run's 60 s fit)
BRAKE = "brake"  # the command a refused trajectory leaves: braking_waypoints from the state of the cycle it starts in


@dataclass(frozen=True)
class DriverState:
    """One cycle's snapshot: joint units (rad, rad/s, N m) and the raw drive data behind them."""

    sequence: int  # cycle counter
    time: float  # [s] driver clock
    position: Array
    velocity: Array
    effort: Array
    ticks: tuple[int, ...]
    current_ma: tuple[int, ...]
    rpm: tuple[int, ...]
    flags: tuple[int, ...]  # errorFlags per drive
    modes: tuple[ControllerMode, ...]  # the mode sent to each drive
    phase: DriverPhase
    enabled: bool  # motors on: commands accepted
    interface: str | None  # active command interface, None = motors stopped
    calibrated: bool  # calibrated in this run (else the drives' own zero is trusted)
    faults: tuple[str, ...]
    fresh: bool  # the inputs of this cycle arrived (False: the values are the last received)
    read_time: float = 0.0  # [s] time.perf_counter() right after the exchange of this cycle (its measurement instant)

    def flag_names(self, joint: int) -> tuple[str, ...]:
        return decode_flags(self.flags[joint])


@dataclass(frozen=True)
class CycleInputs:
    """What a controller in the bus cycle gets: this cycle's inputs in joint units."""

    read_time: float  # [s] time.perf_counter() right after the exchange that read them
    time: float  # [s] driver clock
    position: Array
    velocity: Array
    effort: Array
    fresh: bool  # False: no answer this cycle, the values are the last received


class CycleController(Protocol):
    """A controller run in the bus cycle (:meth:`ArmDriver.attach_controller`)."""

    def command(self, inputs: CycleInputs) -> Array | None:
        """The joint torque [N m] for this cycle's outputs, or None (nothing to command)."""

    def after_outputs(self) -> None:
        """The controller's work that may wait until the outputs are decided (estimates, reports)."""


@dataclass
class BusStatistics:
    """Counters since start (the node reports them on /diagnostics)."""

    cycles: int = 0
    lost_frames: int = 0
    consecutive_lost: int = 0
    max_consecutive_lost: int = 0
    bus_errors: int = 0
    mailbox_errors: int = 0  # TMCL requests that failed or were refused (flag clearing, zeroing)
    reconnects: int = 0
    command_timeouts: int = 0
    limit_interventions: int = 0  # cycles in which the limit monitor zeroed a joint's set-point
    current_clamps: int = 0  # cycles in which a current was clipped to its limit
    faults: int = 0
    controller_refusals: int = 0  # cycles whose in-cycle controller torque was refused (motors off, invalid)

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class _Command:
    interface: str
    values: Any  # (n,) array, or the trajectory tuple (times, positions, velocities, accelerations)
    time: float


@dataclass
class _Active:
    interface: str | None = None
    setpoint: Array | None = None
    time: float = 0.0
    spline: HermiteSpline | None = None
    reference: Array | None = None  # last position reference sent by the trajectory
    started: float = 0.0


class ArmDriver(DriveSequences):
    """The driver logic on a bus; see the module docstring. ``clock`` gives the time [s] used for the
    command timeout and the sequences; default: cycles x ``cycle_period`` (the bus' time, right for
    the virtual bus); pass ``time.monotonic`` on hardware."""

    def __init__(self, bus: Bus, arm: ArmDescription | None = None, config: DriverConfig = DriverConfig(),
                 clock: Callable[[], float] | None = None) -> None:
        self.bus = bus
        self.arm = arm if arm is not None else default_arm()
        self.config = config
        self.units = JointUnits(self.arm)
        self.n = self.arm.n_joints
        self._commands = CommandChecker(self.arm)
        self._clock = clock if clock is not None else (lambda: self.statistics.cycles * config.cycle_period)
        self.statistics = BusStatistics()
        self.slaves: list[int] = []
        self.slave_names: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._pending: _Command | None = None
        self._requests: list[tuple[str, Future]] = []
        self._calls: list[tuple[Callable[[], str], Future]] = []
        self._phase = DriverPhase.DISCONNECTED
        self._enabled = False
        self._calibrated = False
        self._faults: tuple[str, ...] = ()
        self._active = _Active()
        self._sequence: Generator[Outputs, None, None] | None = None
        self._sequence_future: Future | None = None
        self._outputs: Outputs = [STOP] * self.n
        self._inputs: list[DriveInput] = [DriveInput(0, 0, 0, 0)] * self.n
        self._current_limit = np.floor(self.units.max_current_ma * config.current_limit_scale).astype(np.int64)
        self._state: DriverState | None = None
        self._last_state_time = 0.0
        self._controller: CycleController | None = None
        self.controller_refusal: str | None = None  # why the last in-cycle torque was refused
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)

    # -- thread-safe interface ------------------------------------------------------------------

    @property
    def phase(self) -> DriverPhase:
        return self._phase

    def state(self) -> DriverState | None:
        """The latest snapshot (None before the first cycle)."""
        with self._lock:
            return self._state

    def wait_state(self, after: int, timeout: float) -> DriverState | None:
        """The first snapshot with ``sequence > after``, waiting up to ``timeout`` s (else None)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._state is not None and self._state.sequence > after, timeout):
                return None
            return self._state

    def command(self, interface: str, values: Any) -> None:
        """A streamed set-point: ``effort`` [N m], ``position`` [rad] or ``velocity`` [rad/s], one per joint."""
        if interface not in STREAMED_INTERFACES:
            raise CommandError(f"unknown interface {interface!r}; streamed interfaces: "
                               f"{', '.join(STREAMED_INTERFACES)} (trajectories go through command_trajectory)")
        values = self._commands.set_point(interface, values)
        self._submit(_Command(interface, values, self._clock()))

    def command_trajectory(self, times: Any, positions: Any, velocities: Any = None,
                           accelerations: Any = None) -> None:
        """Waypoints reached ``times`` [s] after now, as :meth:`ArmSimulator.command_trajectory`; an
        empty ``times`` holds the current position. A refused trajectory (:class:`CommandError`) never
        leaves the arm on zero effort or unpowered (issue 35): a running trajectory goes on, any other
        command is replaced by a braking from the measured state to rest, held (module docstring)."""
        start_q, start_dq = self._reference_now()
        try:
            times, positions, velocities, accelerations = self._commands.trajectory(
                np.ravel(times), positions, velocities, accelerations, allow_empty=True, start=start_q)
            if times.size and start_q is not None:  # the path from where the arm is now, as the cycle will build it
                self._commands.spline(self._path(start_q, start_dq, (times, positions, velocities, accelerations)))
        except CommandError as exc:
            if self._active.interface == "trajectory" or self._phase != DriverPhase.RUNNING or not self._enabled:
                raise  # a running trajectory goes on; motors off: nothing to hold
            self._submit(_Command(BRAKE, None, self._clock()))
            raise CommandError(f"{exc}; the drives brake the arm from its measured state and hold it") from None
        self._submit(_Command("trajectory", (times, positions, velocities, accelerations), self._clock()))

    def _reference_now(self) -> tuple[Array | None, Array | None]:
        """The running trajectory's reference now, else the measured state clamped into the limits and
        ``velocity_max`` (:meth:`~youbot_dynamics.motion.commands.CommandChecker.start_state`; None before the
        first cycle): where a new trajectory will start."""
        active, state = self._active, self.state()
        if active.interface == "trajectory" and active.reference is not None:
            return active.spline.evaluate(self._clock() - active.started)
        return (None, None) if state is None else self._commands.start_state(state.position, state.velocity)

    def _path(self, start_q: Array, start_dq: Array, trajectory: tuple) -> HermiteSpline:
        """The path from the start state through the waypoints (:func:`~youbot_dynamics.motion.commands.path_from`)."""
        return path_from(start_q, start_dq, trajectory, self.config.cycle_period, self.config.trajectory_interpolation)

    def run_in_cycle(self, function: Callable[[], str]) -> Future:
        """Run ``function()`` on the cycle's thread before the next cycle's decision (e.g. reset the
        virtual arm); the active command is dropped. The future gives ``(True, its message)``, or
        ``(False, the error)`` if it raised ``ValueError``/``BusError``."""
        future: Future = Future()
        with self._lock:
            self._calls.append((function, future))
        return future

    def attach_controller(self, controller: CycleController | None) -> None:
        """Run ``controller`` in every cycle from the next one on (None: no more); see the module docstring."""
        self._controller = controller

    def take_controller_latencies(self) -> list[float]:
        """The in-cycle controller's latencies [s] (read of the inputs to its torque in the outputs) since
        the previous call (at most :data:`LATENCY_WINDOW`, the newest)."""
        with self._lock:
            latencies = list(self._latencies)
            self._latencies.clear()
        return latencies

    def request(self, name: str) -> Future:
        """Ask the cycle to run ``name`` (one of :data:`REQUESTS`); the future gives ``(success, message)``."""
        if name not in REQUESTS:
            raise ValueError(f"unknown request {name!r}; known: {', '.join(REQUESTS)}")
        future: Future = Future()
        with self._lock:
            self._requests.append((name, future))
        return future

    # -- start and stop (the cycle's thread) ----------------------------------------------------

    def connect(self) -> None:
        """Open the bus, pick the arm's joint slaves by name, bring them to OP and start the start-up
        sequence (raises :class:`DriverError` / :class:`BusError`)."""
        self._phase = DriverPhase.DISCONNECTED
        self.bus.open()
        found = self.bus.slaves()
        joints = [s for s in found if s.name in JOINT_SLAVE_NAMES]
        if len(joints) < self.n:
            self.bus.close()
            raise DriverError(f"found {len(joints)} arm joint slaves ({' or '.join(JOINT_SLAVE_NAMES)}), "
                              f"need {self.n}; slaves on the bus: {[s.name for s in found]}")
        self.slaves = [s.index for s in joints[:self.n]]
        self.slave_names = [s.name for s in joints[:self.n]]
        self.bus.to_operational(self.slaves)
        self._outputs = [STOP] * self.n
        self._start_sequence(self._startup(), DriverPhase.STARTING)

    def shutdown(self) -> None:
        """Stop the motors (a few MOTOR_STOP frames) and close the bus."""
        if self._phase != DriverPhase.DISCONNECTED:
            for _ in range(3):
                try:
                    self.bus.exchange(self._frames([STOP] * self.n))
                except BusError:
                    break
        self.bus.close()
        self._phase = DriverPhase.DISCONNECTED
        self._enabled = False
        self._fail_all("driver shut down")

    # -- the cycle ------------------------------------------------------------------------------

    def cycle(self) -> DriverState:
        """One bus cycle (see the module docstring); returns the new snapshot."""
        stats = self.statistics
        fresh = False
        if self._phase != DriverPhase.DISCONNECTED:
            try:
                answer = self.bus.exchange(self._frames(self._outputs))
            except BusError:
                stats.bus_errors += 1
                answer = None
            fresh = answer is not None
            if fresh:
                self._inputs = [DriveInput.decode(answer[i]) for i in self.slaves]
                stats.consecutive_lost = 0
            else:
                stats.lost_frames += 1
                stats.consecutive_lost += 1
                stats.max_consecutive_lost = max(stats.max_consecutive_lost, stats.consecutive_lost)
                if stats.consecutive_lost >= self.config.max_lost_frames and self._phase != DriverPhase.BUS_LOST:
                    self._bus_lost()
        read_time = time.perf_counter()
        stats.cycles += 1
        now = self._clock()
        q = self.units.ticks_to_rad([i.actual_position for i in self._inputs])
        velocity = self.units.rpm_to_rad_s([i.actual_velocity for i in self._inputs])
        effort = self.units.ma_to_nm([i.actual_current for i in self._inputs])
        controller = self._controller  # first: its torque is judged after the requests and the drives' checks
        torque = None if controller is None else controller.command(
            CycleInputs(read_time, now, q, velocity, effort, fresh))
        self._handle_requests()
        if fresh:
            self._check_drives()
        installed = None if torque is None else self._command_in_cycle(torque, now)
        if fresh or self._sequence is None:  # a sequence (start-up, calibration) acts on fresh inputs only
            self._outputs = self._decide(now, q, velocity)
        if installed is not None and self._active.setpoint is installed:  # not replaced by a later command
            with self._lock:
                self._latencies.append(time.perf_counter() - read_time)
        state = self._publish(now, q, velocity, effort, fresh, read_time)
        if controller is not None:
            controller.after_outputs()
        return state

    def _command_in_cycle(self, torque: Array, now: float) -> Array | None:
        """The in-cycle controller's torque as the active effort command (see the module docstring);
        the set-point installed, None if refused."""
        if self._phase != DriverPhase.RUNNING or not self._enabled:
            reason = ", ".join(self._faults) if self._faults else self._phase.value
            self._refuse_in_cycle(f"motors are off ({reason}); call motors_on first")
            return None
        try:
            setpoint = self._commands.set_point("effort", torque)
        except CommandError as exc:
            self._refuse_in_cycle(str(exc))
            return None
        self._active = _Active("effort", setpoint, now)
        return setpoint

    def _refuse_in_cycle(self, reason: str) -> None:
        self.statistics.controller_refusals += 1
        self.controller_refusal = reason

    # -- internals: deciding the outputs ---------------------------------------------------------

    def _decide(self, now: float, q: Array, velocity: Array) -> Outputs:
        if self._sequence is not None:
            try:
                return next(self._sequence)
            except StopIteration:
                self._finish_sequence(True, "done")
            except (DriverError, BusError) as exc:
                self._finish_sequence(False, str(exc))
                self._fault(str(exc))
        if self._phase != DriverPhase.RUNNING or not self._enabled:
            self._take_pending()  # discard: commands are refused while off
            self._active = _Active()
            return [STOP] * self.n
        self._activate(self._take_pending(), q, velocity, now)
        active = self._active
        if active.interface in STREAMED_INTERFACES and now - active.time > self.config.command_timeout:
            self.statistics.command_timeouts += 1
            self._active = _Active()
        return self._outputs_for(self._active, q, now)

    def _outputs_for(self, active: _Active, q: Array, now: float) -> Outputs:
        units, n = self.units, self.n
        if active.interface is None:
            return [STOP] * n
        if active.interface == "effort":
            current = units.nm_to_ma(active.setpoint)
            clipped = np.clip(current, -self._current_limit, self._current_limit)
            self.statistics.current_clamps += bool(np.any(clipped != current))
            current = self._limit_monitor(clipped, q)
            return [DriveOutput(int(c), ControllerMode.CURRENT_MODE) for c in current]
        if active.interface == "velocity":
            rpm = self._limit_monitor(units.rad_s_to_rpm(active.setpoint), q)
            return [DriveOutput(int(r), ControllerMode.VELOCITY_CONTROL) for r in rpm]
        if active.interface == "trajectory":
            active.reference, reference_velocity = active.spline.evaluate(now - active.started)
            velocity = reference_velocity  # stale inputs (a lost frame): no feedback on an old position
            if not self.statistics.consecutive_lost:
                velocity = velocity + self.config.trajectory_gain * (active.reference - q)
            velocity = np.clip(velocity, -self.arm.velocity_max, self.arm.velocity_max)
            rpm = self._limit_monitor(units.rad_s_to_rpm(velocity), q)
            return [DriveOutput(int(r), ControllerMode.VELOCITY_CONTROL) for r in rpm]
        return [DriveOutput(int(t), ControllerMode.POSITION_CONTROL) for t in units.rad_to_ticks(active.setpoint)]

    def _limit_monitor(self, motor_values: np.ndarray, q: Array) -> np.ndarray:
        """Zero the motor-side set-points (mA or rpm) that push a joint further towards a near limit."""
        joint_direction = self.units.sign * np.sign(motor_values)  # sign of the joint torque / velocity
        margin = self.config.limit_margin
        towards = (((q <= self.arm.position_min + margin) & (joint_direction < 0))
                   | ((q >= self.arm.position_max - margin) & (joint_direction > 0)))
        if np.any(towards):
            self.statistics.limit_interventions += 1
            motor_values = np.where(towards, 0, motor_values)
        return motor_values

    def _activate(self, command: _Command | None, q: Array, velocity: Array, now: float) -> None:
        """Make ``command`` the active one; a trajectory starts from the running reference, else from the
        measured state clamped (:meth:`~youbot_dynamics.motion.commands.CommandChecker.start_state`); a
        :data:`BRAKE` from the measured state (:func:`~youbot_dynamics.motion.commands.braking_waypoints`)."""
        if command is None:
            return
        active = self._active
        if command.interface not in ("trajectory", BRAKE):
            self._active = _Active(command.interface, command.values, command.time)
            return
        waypoints = braking_waypoints(self.arm, q, velocity) if command.interface == BRAKE else command.values
        if command.interface == "trajectory" and active.interface == "trajectory" and active.reference is not None:
            start_q, start_dq = active.spline.evaluate(now - active.started)
        else:
            start_q, start_dq = self._commands.start_state(q, velocity)
        spline = self._path(start_q, start_dq, waypoints)
        self._active = _Active("trajectory", None, command.time, spline, start_q, now)

    # -- internals: sequences -------------------------------------------------------------------

    def _start_sequence(self, sequence: Generator[Outputs, None, None], phase: DriverPhase,
                        future: Future | None = None) -> None:
        self._sequence, self._sequence_future, self._phase = sequence, future, phase
        self._enabled = False
        self._active = _Active()

    def _finish_sequence(self, success: bool, message: str) -> None:
        future, self._sequence, self._sequence_future = self._sequence_future, None, None
        if future is not None and not future.done():
            future.set_result((success, message))

    # -- internals: requests, faults, bus ---------------------------------------------------------

    def _handle_requests(self) -> None:
        with self._lock:
            requests, self._requests = self._requests, []
            calls, self._calls = self._calls, []
        for function, future in calls:
            self._active = _Active()
            try:
                future.set_result((True, function()))
            except (ValueError, BusError) as exc:
                future.set_result((False, str(exc)))
        for name, future in requests:
            if self._sequence is not None and name != "reconnect" and name != "motors_off":
                future.set_result((False, f"busy ({self._phase.value}); try again when it is done"))
            elif name == "motors_off":
                if self._sequence is not None:
                    self._finish_sequence(False, "aborted by motors_off")
                    self._phase = DriverPhase.RUNNING if self._phase != DriverPhase.BUS_LOST else self._phase
                self._enabled = False
                self._active = _Active()
                future.set_result((True, "motors off"))
            elif name == "motors_on":
                if self._phase == DriverPhase.BUS_LOST:
                    future.set_result((False, "the bus is lost: call reconnect first"))
                elif self._phase == DriverPhase.FAULT:
                    self._start_sequence(self._recover(), DriverPhase.STARTING, future)
                elif self._phase == DriverPhase.RUNNING:
                    self._enabled = True
                    future.set_result((True, "motors on: commands accepted"))
                else:
                    future.set_result((False, f"not ready ({self._phase.value})"))
            elif name == "calibrate":
                if self._phase != DriverPhase.RUNNING:
                    future.set_result((False, f"cannot calibrate while {self._phase.value}"))
                else:
                    self._start_sequence(self._calibrate(), DriverPhase.CALIBRATING, future)
            elif name == "reconnect":
                self._finish_sequence(False, "aborted by reconnect")
                try:
                    self.bus.close()
                    self.connect()
                except (BusError, DriverError) as exc:
                    self._phase = DriverPhase.BUS_LOST
                    future.set_result((False, f"reconnect failed: {exc}"))
                    continue
                self.statistics.reconnects += 1
                self.statistics.consecutive_lost = 0
                self._faults = ()
                self._sequence_future = future

    def _check_drives(self) -> None:
        if self._phase not in (DriverPhase.RUNNING, DriverPhase.CALIBRATING):
            return
        errors = self._drive_errors()
        lost = [self.arm.joint_names[j] for j, i in enumerate(self._inputs) if not i.flags & StatusFlag.INITIALIZED]
        if lost:
            errors.append(f"not commutated: {', '.join(lost)}")
        if errors:
            self._finish_sequence(False, "; ".join(errors))
            self._fault("; ".join(errors))

    def _fault(self, reason: str) -> None:
        self.statistics.faults += 1
        self._phase = DriverPhase.FAULT
        self._enabled = False
        self._active = _Active()
        self._sequence = None
        self._faults = (reason,)

    def _bus_lost(self) -> None:
        self._finish_sequence(False, "bus lost")
        self._phase = DriverPhase.BUS_LOST
        self._enabled = False
        self._active = _Active()
        self._faults = (f"bus lost: {self.statistics.consecutive_lost} consecutive frames without answer",)
        self.statistics.faults += 1

    def _mailbox(self, joint: int, command: TmclCommand, parameter: int, value: int) -> bool:
        """One TMCL request to a joint drive; False (counted in ``mailbox_errors``) if it failed."""
        try:
            ok = self.bus.mailbox(self.slaves[joint], MailboxRequest(command, int(parameter), int(value))).ok
        except (BusError, NotImplementedError):
            ok = False
        self.statistics.mailbox_errors += not ok
        return ok

    def _fail_all(self, message: str) -> None:
        self._finish_sequence(False, message)
        with self._lock:
            pending = [future for _, future in self._requests + self._calls]
            self._requests, self._calls = [], []
        for future in pending:
            future.set_result((False, message))

    # -- internals: helpers ---------------------------------------------------------------------

    def _frames(self, outputs: Sequence[DriveOutput]) -> dict[int, bytes]:
        return {slave: out.encode() for slave, out in zip(self.slaves, outputs)}

    def _submit(self, command: _Command) -> None:
        if self._phase != DriverPhase.RUNNING or not self._enabled:
            reason = ", ".join(self._faults) if self._faults else self._phase.value
            raise CommandError(f"motors are off ({reason}); call motors_on first")
        with self._lock:
            self._pending = command

    def _take_pending(self) -> _Command | None:
        with self._lock:
            command, self._pending = self._pending, None
        return command

    def _publish(self, now: float, q: Array, velocity: Array, effort: Array, fresh: bool,
                 read_time: float) -> DriverState:
        inputs = self._inputs
        state = DriverState(
            sequence=self.statistics.cycles, time=now, position=q, velocity=velocity, effort=effort,
            ticks=tuple(i.actual_position for i in inputs), current_ma=tuple(i.actual_current for i in inputs),
            rpm=tuple(i.actual_velocity for i in inputs), flags=tuple(i.error_flags for i in inputs),
            modes=tuple(o.mode for o in self._outputs), phase=self._phase, enabled=self._enabled,
            interface=self._active.interface, calibrated=self._calibrated, faults=self._faults, fresh=fresh,
            read_time=read_time)
        with self._changed:
            self._state = state
            self._changed.notify_all()
        return state
