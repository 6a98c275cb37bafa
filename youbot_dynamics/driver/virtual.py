"""A virtual youBot EtherCAT bus: joint drives with the firmware's process-data behaviour on the MuJoCo arm.

Every :meth:`VirtualBus.exchange` is one bus cycle: the drives take the new outputs (unless the
frame is lost), run their controller for one period on the joint they measure, the MuJoCo arm
(:class:`youbot_dynamics.sim.ArmSimulator`, driven through its effort interface) advances one step,
and the drives answer with their 32-byte inputs. Modelled firmware behaviour:

* **Units and wiring** (written in motor terms here, independently of :mod:`.units`): the motor
  turns ``s N`` times per joint turn (``s = -1`` for the inverse-direction joints), the encoder
  counts ``ticks_per_rev`` per motor turn from an *origin*; current in mA is motor current
  (``tau = s I kt N``), velocity in motor rpm.
* **Encoder origin**: with ``calibrated=True`` the drives count from the calibration stop (q = 0,
  as after an earlier calibration in this power cycle); with ``calibrated=False`` from the joint
  position at power-up, so only a calibration gives true angles. Axis parameter 1 (SAP) sets the
  actual position.
* **Mechanical stops**: the MuJoCo arm gets a hard stop at q = 0 on the calibration side of every
  joint (where the seed convention puts the calibration stop; the driver's range keeps 1000-5000
  ticks of margin) and at the far end of the driver range on the other side.
* **Modes**: MOTOR_STOP (zero current: the arm is free), POSITION_CONTROL (ramp generator and
  position PID), VELOCITY_CONTROL (velocity PI), CURRENT_MODE (the commanded current, saturated at
  ``max_current``), INITIALIZE; the controller gains and ramp of ``config/sim.yaml``. NO_MORE_ACTION
  keeps the previous mode; SET_POSITION_TO_REFERENCE is not modelled (treated as MOTOR_STOP).
* **Commutation**: at power-up the drives are not initialized (status bit 15 clear) and produce no
  torque in position or current mode. Firmware 2.00: velocity mode with a non-zero set-point for
  ``commutation_time`` sets bit 15; firmware 1.48: mode INITIALIZE for ``commutation_time``.
* **Timeout** (global parameter 90, ``timeout``): when no frame arrives for that long (lost frames,
  counted in cycles) the drives set TIMEOUT and stop the motor until the flag is cleared (SAP 158).
* **I2t**: ``sum += (I^2 - I_c^2) dt`` (not below 0) with ``I_c = i2t_continuous * max_current``;
  above ``(max_current^2 - I_c^2) * i2t_capacity`` the drive sets I2T_EXCEEDED and stops until the
  flag is cleared (SAP 29).
* **Status**: mode bits, POSITION_REACHED (position mode, within ``position_window`` ticks of the
  target after the ramp), INITIALIZED, MOTOR_HALTED (0 rpm); other error conditions (over-current,
  voltages, temperature, hall sensor ...) can be injected for tests: they are reported and stop
  the motor while injected.

Base slaves (``base_slaves``, named ``TMCM-1632``) are listed before the arm like on a youBot with
its base; their process data are ignored.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..arm.description import ArmDescription, default_arm
from ..sim import ArmSimulator, SimConfig, load_sim_config
from ..sim.config import PositionGains, VelocityGains
from ..sim.drives import PositionPid, Ramp, VelocityPi
from .bus import BusError, SlaveInfo
from .process_data import (MODE_FLAGS, AxisParameter, ControllerMode, DriveInput, DriveOutput, GlobalParameter,
                           MailboxReply, MailboxRequest, StatusFlag, TmclCommand, TmclStatus)

__all__ = ["VirtualDriveConfig", "VirtualBus", "mechanical_arm", "JOINT_SLAVE_NAME", "BASE_SLAVE_NAME"]

JOINT_SLAVE_NAME = "TMCM-1610"
BASE_SLAVE_NAME = "TMCM-1632"
FIRMWARES = ("1.48", "2.00")
_BASE_INPUT = DriveInput(0, 0, 0, 0).encode()
# status bits as plain ints: the flags are assembled every step for every drive
_TIMEOUT, _I2T = int(StatusFlag.TIMEOUT), int(StatusFlag.I2T_EXCEEDED)
_STOPPING = _TIMEOUT | _I2T
_INITIALIZED, _HALTED = int(StatusFlag.INITIALIZED), int(StatusFlag.MOTOR_HALTED)
_REACHED = int(StatusFlag.POSITION_REACHED)
_MODE_BITS = {mode: int(flag) for mode, flag in MODE_FLAGS.items()}
#: most physics steps one exchange catches up after the master stalled (wall-clock mode)
MAX_CATCH_UP = 200


@dataclass(frozen=True)
class VirtualDriveConfig:
    """Firmware settings of the virtual drives (see the module docstring)."""

    firmware: str = "2.00"
    commutation_time: float = 0.05  # [s]
    timeout: float = 0.1  # [s], global parameter 90
    position_window: int = 100  # [ticks], POSITION_REACHED
    i2t_continuous: float = 0.5  # [-], fraction of max_current that may flow forever
    i2t_capacity: float = 2.0  # [s] at max_current before I2T_EXCEEDED

    def __post_init__(self) -> None:
        if self.firmware not in FIRMWARES:
            raise ValueError(f"firmware must be one of {FIRMWARES}, got {self.firmware!r}")
        for name in ("commutation_time", "timeout", "i2t_capacity"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.i2t_continuous < 1:
            raise ValueError(f"i2t_continuous must be in [0, 1), got {self.i2t_continuous}")


def mechanical_arm(arm: ArmDescription) -> ArmDescription:
    """``arm`` with its hard stops where the mechanics put them: q = 0 on the calibration side."""
    lower, upper = arm.position_min.copy(), arm.position_max.copy()
    for j, direction in enumerate(arm.calibration_direction):
        if direction == "negative":
            lower[j] = min(lower[j], 0.0)
        else:
            upper[j] = max(upper[j], 0.0)
    return dataclasses.replace(arm, position_min=lower, position_max=upper)


def parked_pose(arm: ArmDescription) -> np.ndarray:
    """Where a youBot arm is powered up: parked, every joint resting on its calibration stop
    (q = 0), the pose in which it stays put without power."""
    return np.zeros(arm.n_joints)


def _joint_slice(gains: Any, j: int) -> Any:
    return dataclasses.replace(gains, **{f.name: getattr(gains, f.name)[j:j + 1] for f in dataclasses.fields(gains)})


class _Drive:
    """One joint drive's firmware state and controller (1-element arrays for the sim controllers)."""

    def __init__(self, j: int, position: PositionGains, velocity: VelocityGains, dt: float) -> None:
        self.position_gains, self.velocity_gains, self.dt = _joint_slice(position, j), _joint_slice(velocity, j), dt
        self.mode = ControllerMode.MOTOR_STOP
        self.value = 0
        self.initialized = False
        self.commutation = 0.0  # [s] spent commutating
        self.latched = 0  # TIMEOUT / I2T_EXCEEDED bits, until cleared by the mailbox
        self.injected = 0  # error bits raised by a test
        self.i2t = 0.0
        self.pid: PositionPid | None = None
        self.ramp: Ramp | None = None
        self.pi: VelocityPi | None = None

    def enter(self, mode: ControllerMode, q: float) -> None:
        if mode == ControllerMode.NO_MORE_ACTION or mode == self.mode:
            return
        self.mode = mode
        if mode == ControllerMode.POSITION_CONTROL:
            self.pid = PositionPid(self.position_gains, self.dt)
            self.ramp = Ramp(self.position_gains.ramp_velocity, self.dt)
            self.ramp.start(np.array([q]))
        elif mode == ControllerMode.VELOCITY_CONTROL:
            self.pi = VelocityPi(self.velocity_gains, self.dt)


class VirtualBus:
    """Virtual youBot arm drives on the bus; implements :class:`~.bus.Bus`. See the module docstring.

    ``period`` [s] is the cycle (one physics step per exchange); ``initial_positions`` the joint
    positions at power-up (default: :func:`parked_pose`, where the unpowered arm rests); ``sim_config`` and
    ``realism`` as for :class:`~youbot_dynamics.sim.ArmSimulator`. ``sim`` is the simulator (the
    ground truth in tests). Time: without ``clock`` every exchange is one step of ``period`` (the
    arm's time is the bus' time, as the simulator's); with ``clock`` (e.g. ``time.monotonic``) the
    arm keeps real time like hardware: an exchange runs the steps since the previous one, the drives
    holding their set-points, and frames later than the drives' timeout trip it.
    Test hooks: :meth:`drop_frames`, :meth:`inject`, :meth:`clear_injected`.
    """

    def __init__(self, arm: ArmDescription | None = None, sim_config: SimConfig | None = None, *,
                 period: float = 0.001, initial_positions: Any = None, calibrated: bool = True,
                 commutated: bool = False, realism: bool = True, config: VirtualDriveConfig = VirtualDriveConfig(),
                 base_slaves: int = 0, clock: Callable[[], float] | None = None) -> None:
        self.arm = arm if arm is not None else default_arm()
        self.config = config
        cfg = sim_config if sim_config is not None else load_sim_config(arm=self.arm)
        cfg = dataclasses.replace(cfg, timestep=period)
        # watched against the drives' peak: their own current loops (position, velocity modes) reach it
        self.sim = ArmSimulator(mechanical_arm(self.arm), cfg, enabled_interfaces=("effort",), realism=realism,
                                limit_torque=self.arm.drive_torque_limit)
        self.sim.reset(parked_pose(self.arm) if initial_positions is None else initial_positions)
        n = self.arm.n_joints
        self.dt = period
        self._sign = np.where(np.asarray(self.arm.inverse_direction), -1.0, 1.0)
        self._ticks_per_rad = self.arm.encoder_ticks * self.arm.gear_ratio / (2.0 * math.pi)
        self._rpm_per_rad_s = 60.0 * self.arm.gear_ratio / (2.0 * math.pi)
        self._nm_per_a = self.arm.torque_constant * self.arm.gear_ratio
        self._i_max = self.arm.max_current
        self._i2t_limit = (1.0 - config.i2t_continuous ** 2) * self._i_max ** 2 * config.i2t_capacity
        q0 = self.sim.measure().position
        self._origin = np.zeros(n) if calibrated else q0.copy()  # joint angle where the encoder reads 0
        self._drives = [_Drive(j, cfg.position_controller, cfg.velocity_controller, period) for j in range(n)]
        for d in self._drives:
            d.initialized = commutated
        self._names = [BASE_SLAVE_NAME] * base_slaves + [JOINT_SLAVE_NAME] * n
        self._first_joint = base_slaves
        self._timeout_cycles = self._cycles_of(config.timeout)
        self._clock = clock
        self._t0: float | None = None
        self._done = 0
        self._since_frame = 0
        self._drop = 0
        self._open = False
        self._operational = False
        self._tau = np.zeros(n)
        self._tau_max = self.sim.arm.drive_torque_limit
        self._inputs: list[DriveInput] = []
        self._measure()
        self.frames = 0

    # -- Bus protocol ---------------------------------------------------------------------------

    def open(self) -> None:
        self._open = True

    def slaves(self) -> list[SlaveInfo]:
        self._require(open_=True)
        return [SlaveInfo(i, name) for i, name in enumerate(self._names)]

    def to_operational(self, slaves: Sequence[int]) -> None:
        self._require(open_=True)
        bad = [i for i in slaves if not 0 <= i < len(self._names)]
        if bad:
            raise BusError(f"no slaves at {bad}")
        self._operational = True

    def exchange(self, outputs: Mapping[int, bytes]) -> dict[int, bytes] | None:
        self._require(open_=True, operational=True)
        lost = self._drop > 0
        if lost:
            self._drop -= 1
        steps = self._steps_due()
        for k in range(steps):
            if k == steps - 1 and not lost:  # the frame arrives at the last step (late if steps > 1)
                self._check_watchdog()
                self._since_frame = 0
                self._apply(outputs)
            else:
                self._since_frame += 1
                self._check_watchdog()
            self._step()
        self.frames += 1
        if lost:
            return None
        return {i: self.inputs(i) for i in outputs}

    def inputs(self, slave: int) -> bytes:
        """The 32 input bytes slave ``slave`` reports now (zeros for a base slave)."""
        j = slave - self._first_joint
        return self._inputs[j].encode() if j >= 0 else _BASE_INPUT

    def mailbox(self, slave: int, request: MailboxRequest) -> MailboxReply:
        self._require(open_=True)
        j = slave - self._first_joint
        if not 0 <= j < len(self._drives):
            raise BusError(f"slave {slave} is no joint drive")
        drive, cmd, value = self._drives[j], request.command, request.value
        status, answer = TmclStatus.NO_ERROR, value
        if cmd == TmclCommand.SAP and request.type_number == AxisParameter.CLEAR_TIMEOUT_FLAG:
            drive.latched &= ~_TIMEOUT
        elif cmd == TmclCommand.SAP and request.type_number == AxisParameter.CLEAR_I2T_EXCEEDED_FLAG:
            drive.latched &= ~_I2T
            drive.i2t = 0.0
        elif cmd == TmclCommand.SAP and request.type_number == AxisParameter.ACTUAL_POSITION:
            ticks = self._inputs[j].actual_position
            self._origin[j] += (ticks - value) / (self._sign[j] * self._ticks_per_rad[j])
            self._measure()
        elif cmd == TmclCommand.GAP and request.type_number == AxisParameter.ACTUAL_POSITION:
            answer = self._inputs[j].actual_position
        elif cmd == TmclCommand.SGP and request.type_number == GlobalParameter.MOTOR_CONTROLLER_TIMEOUT:
            if value <= 0:
                status = TmclStatus.INVALID_VALUE
            else:
                self._timeout_cycles = self._cycles_of(value / 1000.0)
        elif cmd == TmclCommand.GGP and request.type_number == GlobalParameter.MOTOR_CONTROLLER_TIMEOUT:
            answer = int(round(self._timeout_cycles * self.dt * 1000.0))
        else:
            status, answer = TmclStatus.WRONG_TYPE, 0
        return MailboxReply(2, request.module, int(status), int(cmd), int(answer))

    def close(self) -> None:
        self._open = self._operational = False

    def reset(self, positions: Any = None) -> None:
        """Put the arm at rest at ``positions`` (default: :func:`parked_pose`), like ``sim_node``'s
        reset; the drives stay powered (commutated, same encoder origin: the arm moved as if by
        hand) and stop until their next set-point. Raises ``ValueError`` outside the stops."""
        self.sim.reset(parked_pose(self.arm) if positions is None else positions)
        for drive in self._drives:
            drive.enter(ControllerMode.MOTOR_STOP, 0.0)
            drive.value = 0
        self._measure()

    # -- test hooks -----------------------------------------------------------------------------

    def drop_frames(self, count: int) -> None:
        """Lose the next ``count`` frames (the drives get no outputs, the master no inputs)."""
        self._drop = int(count)

    def inject(self, joint: int, flags: StatusFlag) -> None:
        """Raise error conditions on drive ``joint`` (0-based) until :meth:`clear_injected`."""
        self._drives[joint].injected |= int(flags)

    def clear_injected(self, joint: int) -> None:
        self._drives[joint].injected = 0

    def drive_mode(self, joint: int) -> ControllerMode:
        return self._drives[joint].mode

    # -- internals ------------------------------------------------------------------------------

    def _cycles_of(self, seconds: float) -> int:
        return max(1, int(round(seconds / self.dt)))

    def _require(self, *, open_: bool, operational: bool = False) -> None:
        if open_ and not self._open:
            raise BusError("the virtual bus is not open")
        if operational and not self._operational:
            raise BusError("the virtual slaves are not in OP")

    def _steps_due(self) -> int:
        """Physics steps of this exchange: 1, or with a wall clock the steps of the time since the
        previous exchange (at least 1, at most :data:`MAX_CATCH_UP`; beyond that the time is dropped)."""
        if self._clock is None:
            return 1
        now = self._clock()
        if self._t0 is None:
            self._t0, self._done = now - self.dt, 0
        due = int((now - self._t0) / self.dt) - self._done
        if due > MAX_CATCH_UP:
            self._t0 += (due - MAX_CATCH_UP) * self.dt
            due = MAX_CATCH_UP
        steps = max(1, due)
        self._done += steps
        return steps

    def _check_watchdog(self) -> None:
        if self._since_frame >= self._timeout_cycles:
            for d in self._drives:
                d.latched |= _TIMEOUT

    def _apply(self, outputs: Mapping[int, bytes]) -> None:
        q = self._last.position
        for index, data in outputs.items():
            j = index - self._first_joint
            if 0 <= j < len(self._drives):
                out = DriveOutput.decode(data)
                drive = self._drives[j]
                drive.enter(out.mode, q[j])
                if out.mode != ControllerMode.NO_MORE_ACTION:
                    drive.value = out.value

    def _torque(self, j: int, drive: _Drive, q: float, dq: float) -> float:
        if drive.latched & _STOPPING or drive.injected:
            return 0.0
        mode, s = drive.mode, self._sign[j]
        if mode == ControllerMode.VELOCITY_CONTROL:
            if not drive.initialized and self.config.firmware == "2.00" and drive.value != 0:
                drive.commutation += self.dt
            target = drive.value / (s * self._rpm_per_rad_s[j])
            return float(drive.pi.torque(np.array([target]), np.array([dq]))[0])
        if mode == ControllerMode.INITIALIZE:
            if self.config.firmware == "1.48":
                drive.commutation += self.dt
            return 0.0
        if not drive.initialized:
            return 0.0
        if mode == ControllerMode.POSITION_CONTROL:
            target = self._origin[j] + drive.value / (s * self._ticks_per_rad[j])
            drive.ramp.advance(np.array([target]))
            return float(drive.pid.torque(drive.ramp.position, drive.ramp.velocity, np.array([q]), np.array([dq]))[0])
        if mode == ControllerMode.CURRENT_MODE:
            current = float(np.clip(drive.value / 1000.0, -self._i_max[j], self._i_max[j]))
            return s * current * self._nm_per_a[j]
        return 0.0

    def _step(self) -> None:
        q, dq = self._sensed  # what the drives' loops measured after the previous step (not lagged)
        for j, drive in enumerate(self._drives):
            self._tau[j] = self._torque(j, drive, q[j], dq[j])
            if not drive.initialized and drive.commutation >= self.config.commutation_time:
                drive.initialized = True
        # the drives' current limit, inside the drive (its PI and PID outputs included)
        np.clip(self._tau, -self._tau_max, self._tau_max, out=self._tau)
        self.sim.command("effort", self._tau)
        self.sim.step()
        self._measure(update_i2t=True)

    def _measure(self, update_i2t: bool = False) -> None:
        self._last = m = self.sim.measure()  # reported: lagged velocity, calibration error on the current
        self._sensed = self.sim.sense()
        current = m.effort / self._nm_per_a * self._sign  # [A], motor current
        ticks = np.round(self._sign * (m.position - self._origin) * self._ticks_per_rad).astype(np.int64)
        rpm = np.round(self._sign * m.velocity * self._rpm_per_rad_s).astype(np.int64)
        inputs = []
        for j, drive in enumerate(self._drives):
            if update_i2t:
                continuous = self.config.i2t_continuous * self._i_max[j]
                drive.i2t = max(0.0, drive.i2t + (current[j] ** 2 - continuous ** 2) * self.dt)
                if drive.i2t > self._i2t_limit[j]:
                    drive.latched |= _I2T
            flags = drive.latched | drive.injected | _MODE_BITS.get(drive.mode, 0)
            if drive.initialized:
                flags |= _INITIALIZED
            if rpm[j] == 0:
                flags |= _HALTED
            target_position = target_current = target_velocity = ramp_velocity = 0
            if drive.mode == ControllerMode.POSITION_CONTROL:
                target_position = drive.value
                ramp_ticks = int(round(self._sign[j] * (drive.ramp.position[0] - self._origin[j])
                                       * self._ticks_per_rad[j]))
                ramp_velocity = int(round(self._sign[j] * drive.ramp.velocity[0] * self._rpm_per_rad_s[j]))
                if ramp_ticks == drive.value and abs(drive.value - ticks[j]) <= self.config.position_window:
                    flags |= _REACHED
            elif drive.mode == ControllerMode.VELOCITY_CONTROL:
                target_velocity = drive.value
            elif drive.mode == ControllerMode.CURRENT_MODE:
                target_current = drive.value
            inputs.append(DriveInput(int(ticks[j]), int(round(current[j] * 1000.0)), int(rpm[j]), flags,
                                     target_position, target_current, target_velocity, ramp_velocity))
        self._inputs = inputs
