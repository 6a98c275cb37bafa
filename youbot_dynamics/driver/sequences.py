"""The driver's sequences, run by :meth:`~.driver.ArmDriver.cycle` one output frame per bus cycle
(generators of the outputs; each ``yield`` waits for the next fresh inputs).

**Start-up** (:meth:`connect`, then cyclically): the arm's joint slaves are picked by name
(``TMCM-KR-841`` / ``TMCM-1610``, in bus order; a base's slaves are skipped) and brought to OP;
the timeout and I2t flags are cleared (SAP 158, SAP 29); the drives are commutated (firmware 2.00:
velocity mode at ``commutation_rpm`` until status bit 15, then 0 mA current mode; firmware 1.48:
mode INITIALIZE until bit 15); optionally calibrated; then the motors stay off
(``enable_on_start``) until :meth:`request` ``("motors_on")``.

**Calibration** (youBot driver procedure): every joint moves at ``calibration_velocity`` at the
output towards its stop (``calibration_direction``); a joint is at the stop when its current
exceeds ``calibration_current`` while it moves at less than half the commanded speed, or when it
has not moved 10 % of the commanded distance in ``calibration_stall_time`` (a drive that cannot
reach the calibration current against its stop, e.g. joint 5 with the simulated gains). The tick
count at that moment is the stop; the joint gets 0 mA, and after ``calibration_settle`` its actual
position is set (SAP 1) to the ticks travelled since the stop, so the drive counts from the stop
(q = 0, the seed convention) even if the joint moved while it settled. A bus without a mailbox
keeps the offset in the driver instead.

**Recovery** (``motors_on`` after a fault): the flags are cleared again, the drives must report no
error after five fresh frames, a drive that lost its commutation is commutated again.
"""
from __future__ import annotations

import enum
from typing import Callable, Generator

import numpy as np

from ..arm.description import ArmDescription
from .config import DriverConfig
from .process_data import (ERROR_FLAGS, STOP, AxisParameter, ControllerMode, DriveInput, DriveOutput, StatusFlag,
                           TmclCommand)
from .units import JointUnits

__all__ = ["DriverError", "DriverPhase", "DriveSequences", "Outputs"]

Outputs = list[DriveOutput]  # one output per joint slave: a bus cycle's decision


class DriverError(RuntimeError):
    """Start-up, commutation or calibration failed (the reason is in the message)."""


class DriverPhase(str, enum.Enum):
    """What the driver is doing."""

    DISCONNECTED = "disconnected"
    STARTING = "starting"  # clearing flags, commutating
    CALIBRATING = "calibrating"
    RUNNING = "running"  # motors on or off, see DriverState.enabled
    FAULT = "fault"  # a drive reported an error: motors stopped
    BUS_LOST = "bus_lost"


class DriveSequences:
    """Start-up, commutation, calibration and recovery of :class:`~.driver.ArmDriver` (a base class
    of it: the sequences use its inputs, units, configuration and mailbox, declared here)."""

    arm: ArmDescription
    config: DriverConfig
    units: JointUnits
    n: int  # joints
    _inputs: list[DriveInput]  # the newest input of each joint's drive
    _clock: Callable[[], float]  # [s] the driver's time
    _phase: DriverPhase
    _enabled: bool  # motors on
    _calibrated: bool
    _faults: tuple[str, ...]  # why the driver is in FAULT or BUS_LOST

    def _mailbox(self, joint: int, command: TmclCommand, parameter: int, value: int) -> bool:
        """One TMCL request to a joint drive (the driver's); whether it succeeded."""
        raise NotImplementedError

    def _clear_flags(self) -> None:
        for j in range(self.n):
            self._mailbox(j, TmclCommand.SAP, AxisParameter.CLEAR_TIMEOUT_FLAG, 1)
            self._mailbox(j, TmclCommand.SAP, AxisParameter.CLEAR_I2T_EXCEEDED_FLAG, 1)

    def _drive_errors(self) -> list[str]:
        return [f"{self.arm.joint_names[j]}: {', '.join(i.errors)}" for j, i in enumerate(self._inputs)
                if i.error_flags & int(ERROR_FLAGS)]

    def _startup(self) -> Generator[Outputs, None, None]:
        self._clear_flags()
        for _ in range(5):  # fresh frames so the drives report the cleared flags
            yield [STOP] * self.n
        errors = self._drive_errors()
        if errors:
            raise DriverError(f"drive errors after clearing the flags: {'; '.join(errors)}")
        yield from self._commutate()
        if self.config.calibrate_on_start:
            yield from self._calibrate()
        self._phase = DriverPhase.RUNNING
        self._enabled = self.config.enable_on_start

    def _commutate(self) -> Generator[Outputs, None, None]:
        start = self._clock()
        while True:
            pending = [j for j, i in enumerate(self._inputs) if not i.flags & StatusFlag.INITIALIZED]
            if not pending:
                break
            if self._clock() - start > self.config.commutation_timeout:
                names = ", ".join(self.arm.joint_names[j] for j in pending)
                raise DriverError(f"commutation failed: {names} not initialized after "
                                  f"{self.config.commutation_timeout} s (firmware {self.config.firmware})")
            if self.config.firmware == "2.00":
                yield [DriveOutput(self.config.commutation_rpm, ControllerMode.VELOCITY_CONTROL) if j in pending
                       else DriveOutput(0, ControllerMode.CURRENT_MODE) for j in range(self.n)]
            else:
                yield [DriveOutput(0, ControllerMode.INITIALIZE) if j in pending else STOP for j in range(self.n)]
        yield [DriveOutput(0, ControllerMode.CURRENT_MODE)] * self.n

    def _calibrate(self) -> Generator[Outputs, None, None]:
        cfg, units, n = self.config, self.units, self.n
        self._phase, self._calibrated = DriverPhase.CALIBRATING, False
        toward = np.where(np.array(self.arm.calibration_direction) == "negative", -1.0, 1.0)
        rpm = units.rad_s_to_rpm(toward * cfg.calibration_velocity)
        limit_ma = 1e3 * self.arm.calibration_current
        stall_ticks = 0.1 * cfg.calibration_velocity * cfg.calibration_stall_time / units.rad_per_tick
        start = self._clock()
        window = [(start, i.actual_position) for i in self._inputs]
        hit: list[tuple[float, int] | None] = [None] * n
        done = [False] * n
        moving = [False] * n  # reached half the speed: from then on a high current at low speed is the stop
        offsets = units.offsets.copy()
        while not all(done):
            now = self._clock()
            if now - start > cfg.calibration_timeout:
                names = ", ".join(self.arm.joint_names[j] for j in range(n) if hit[j] is None)
                raise DriverError(f"calibration timed out after {cfg.calibration_timeout} s: {names} did not "
                                  "reach the stop")
            outputs = []
            for j, inp in enumerate(self._inputs):
                if hit[j] is None:
                    t0, ticks0 = window[j]
                    slow = 2 * abs(inp.actual_velocity) < abs(rpm[j])
                    moving[j] |= not slow
                    blocked = moving[j] and slow and abs(inp.actual_current) > limit_ma[j]
                    stalled = (now - t0 >= cfg.calibration_stall_time
                               and abs(inp.actual_position - ticks0) < stall_ticks[j])
                    if blocked or stalled:
                        hit[j] = (now, inp.actual_position)
                    elif now - t0 >= cfg.calibration_stall_time:
                        window[j] = (now, inp.actual_position)
                elif not done[j] and now - hit[j][0] >= cfg.calibration_settle:
                    travelled = inp.actual_position - hit[j][1]
                    offsets[j] = 0 if self._mailbox(j, TmclCommand.SAP, AxisParameter.ACTUAL_POSITION,
                                                    travelled) else hit[j][1]
                    done[j] = True
                outputs.append(DriveOutput(int(rpm[j]), ControllerMode.VELOCITY_CONTROL) if hit[j] is None
                               else DriveOutput(0, ControllerMode.CURRENT_MODE))
            yield outputs
        units.set_offsets(offsets)
        self._calibrated = True
        yield [STOP] * n  # one frame so the next inputs are in the new zero
        self._phase = DriverPhase.RUNNING

    def _recover(self) -> Generator[Outputs, None, None]:
        self._clear_flags()
        for _ in range(5):
            yield [STOP] * self.n
        errors = self._drive_errors()
        if errors:
            raise DriverError(f"drive errors remain after clearing the flags: {'; '.join(errors)}")
        if any(not i.flags & StatusFlag.INITIALIZED for i in self._inputs):
            yield from self._commutate()
        self._faults = ()
        self._phase = DriverPhase.RUNNING
        self._enabled = True
