"""The youBot joint drives' EtherCAT process data and TMCL mailbox frames, byte for byte.

Source: youbot/youbot_driver ``include/youbot_driver/youbot/YouBotSlaveMsg.hpp`` and
``YouBotSlaveMailboxMsg.hpp`` (summarised in ``shared/youbot_hardware.md``, EtherCAT section).
Every struct is packed and little-endian, except the TMCL mailbox value (most-significant byte first).

* Output (master -> drive, 5 bytes): ``int32 value`` (ticks, motor rpm or mA depending on the
  mode), ``uint8 controllerMode``.
* Input (drive -> master, 32 bytes): ``int32 actualPosition`` [ticks], ``int32 actualCurrent`` [mA],
  ``int32 actualVelocity`` [motor rpm], ``uint32 errorFlags``, ``int32 targetPosition``,
  ``int32 targetCurrent``, ``int32 targetVelocity``, ``int32 rampGeneratorVelocity``.
* Mailbox (8 bytes each way): request ``moduleAddress, commandNumber, typeNumber, motorNumber,
  value (int32, big-endian)``; reply ``replyAddress, moduleAddress, status, commandNumber, value``.

No ROS, no I/O: pure encode/decode, so it is tested against hand-written frames.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

__all__ = [
    "OUTPUT_SIZE",
    "INPUT_SIZE",
    "MAILBOX_SIZE",
    "ControllerMode",
    "StatusFlag",
    "ERROR_FLAGS",
    "MODE_FLAGS",
    "decode_flags",
    "DriveOutput",
    "DriveInput",
    "STOP",
    "DRIVE_MODULE",
    "TmclCommand",
    "TmclStatus",
    "AxisParameter",
    "GlobalParameter",
    "MailboxRequest",
    "MailboxReply",
    "ProcessDataError",
]

_OUTPUT = struct.Struct("<iB")
_INPUT = struct.Struct("<iiiIiiii")
_MAILBOX_REQUEST = struct.Struct(">BBBBi")
_MAILBOX_REPLY = struct.Struct(">BBBBi")

OUTPUT_SIZE = _OUTPUT.size  # 5
INPUT_SIZE = _INPUT.size  # 32
MAILBOX_SIZE = _MAILBOX_REQUEST.size  # 8

_INT32 = (-(2 ** 31), 2 ** 31 - 1)


class ProcessDataError(ValueError):
    """A frame has the wrong size, or a value does not fit its field."""


class ControllerMode(enum.IntEnum):
    """``controllerMode`` byte of the output process data."""

    MOTOR_STOP = 0
    POSITION_CONTROL = 1  # value: target position [ticks]
    VELOCITY_CONTROL = 2  # value: target velocity [motor rpm]
    NO_MORE_ACTION = 3
    SET_POSITION_TO_REFERENCE = 4
    CURRENT_MODE = 6  # value: target current [mA]
    INITIALIZE = 7  # commutation (firmware 1.48)


class StatusFlag(enum.IntFlag):
    """Bits of ``errorFlags`` (bits 6, 7, 12, 13 as used by ABC-iRobotics/YoubotDriver)."""

    OVER_CURRENT = 1 << 0
    UNDER_VOLTAGE = 1 << 1
    OVER_VOLTAGE = 1 << 2
    OVER_TEMPERATURE = 1 << 3
    MOTOR_HALTED = 1 << 4
    HALL_SENSOR_ERROR = 1 << 5
    ENCODER_ERROR = 1 << 6
    INITIALIZATION_ERROR = 1 << 7
    PWM_MODE = 1 << 8
    VELOCITY_MODE = 1 << 9
    POSITION_MODE = 1 << 10
    TORQUE_MODE = 1 << 11
    EMERGENCY_STOP = 1 << 12
    FREE_RUNNING = 1 << 13
    POSITION_REACHED = 1 << 14
    INITIALIZED = 1 << 15  # commutated
    TIMEOUT = 1 << 16  # EtherCAT timeout: motors stopped until cleared (axis parameter 158)
    I2T_EXCEEDED = 1 << 17  # motors stopped until cleared (axis parameter 29)


_FLAG_NAMES = {flag.value.bit_length() - 1: flag.name for flag in StatusFlag}

#: Flags that mean the drive cannot (or must not) drive the joint; the driver stops on any of them.
ERROR_FLAGS = (StatusFlag.OVER_CURRENT | StatusFlag.UNDER_VOLTAGE | StatusFlag.OVER_VOLTAGE
               | StatusFlag.OVER_TEMPERATURE | StatusFlag.HALL_SENSOR_ERROR | StatusFlag.ENCODER_ERROR
               | StatusFlag.INITIALIZATION_ERROR | StatusFlag.EMERGENCY_STOP | StatusFlag.TIMEOUT
               | StatusFlag.I2T_EXCEEDED)

#: The status bit the drive sets for each controller mode it is in.
MODE_FLAGS = {
    ControllerMode.VELOCITY_CONTROL: StatusFlag.VELOCITY_MODE,
    ControllerMode.POSITION_CONTROL: StatusFlag.POSITION_MODE,
    ControllerMode.CURRENT_MODE: StatusFlag.TORQUE_MODE,
}


def decode_flags(value: int) -> tuple[str, ...]:
    """Names of the set bits of an ``errorFlags`` word, lowest bit first (unknown bits as ``BIT_n``)."""
    if not 0 <= value < 2 ** 32:
        raise ProcessDataError(f"errorFlags must be a uint32, got {value}")
    return tuple(_FLAG_NAMES.get(bit, f"BIT_{bit}") for bit in range(32) if value >> bit & 1)


def _int32(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProcessDataError(f"{name} must be an int, got {value!r}")
    if not _INT32[0] <= value <= _INT32[1]:
        raise ProcessDataError(f"{name} = {value} does not fit an int32")
    return value


def _check_size(data: bytes, size: int, what: str) -> None:
    if len(data) != size:
        raise ProcessDataError(f"{what} must be {size} bytes, got {len(data)}")


@dataclass(frozen=True)
class DriveOutput:
    """Output process data of one joint drive: set-point ``value`` in the unit of ``mode``."""

    value: int
    mode: ControllerMode

    def encode(self) -> bytes:
        return _OUTPUT.pack(_int32("value", self.value), ControllerMode(self.mode))

    @classmethod
    def decode(cls, data: bytes) -> "DriveOutput":
        _check_size(data, OUTPUT_SIZE, "output process data")
        value, mode = _OUTPUT.unpack(data)
        try:
            return cls(value, ControllerMode(mode))
        except ValueError:
            raise ProcessDataError(f"unknown controller mode {mode}") from None


STOP = DriveOutput(0, ControllerMode.MOTOR_STOP)


@dataclass(frozen=True)
class DriveInput:
    """Input process data of one joint drive (motor-side units: ticks, mA, motor rpm)."""

    actual_position: int
    actual_current: int
    actual_velocity: int
    error_flags: int
    target_position: int = 0
    target_current: int = 0
    target_velocity: int = 0
    ramp_generator_velocity: int = 0

    def encode(self) -> bytes:
        fields = (self.actual_position, self.actual_current, self.actual_velocity)
        tail = (self.target_position, self.target_current, self.target_velocity, self.ramp_generator_velocity)
        if not 0 <= self.error_flags < 2 ** 32:
            raise ProcessDataError(f"error_flags must be a uint32, got {self.error_flags}")
        return _INPUT.pack(*(_int32("input field", v) for v in fields), int(self.error_flags),
                           *(_int32("input field", v) for v in tail))

    @classmethod
    def decode(cls, data: bytes) -> "DriveInput":
        _check_size(data, INPUT_SIZE, "input process data")
        return cls(*_INPUT.unpack(data))

    @property
    def flags(self) -> StatusFlag:
        return StatusFlag(self.error_flags)

    @property
    def errors(self) -> tuple[str, ...]:
        """Names of the set error flags (:data:`ERROR_FLAGS`)."""
        return decode_flags(self.error_flags & int(ERROR_FLAGS))


class TmclCommand(enum.IntEnum):
    """TMCL instructions used over the mailbox."""

    SAP = 5  # set axis parameter
    GAP = 6  # get axis parameter
    SGP = 9  # set global parameter
    GGP = 10  # get global parameter


class TmclStatus(enum.IntEnum):
    """TMCL reply status."""

    WRONG_CHECKSUM = 1
    INVALID_COMMAND = 2
    WRONG_TYPE = 3
    INVALID_VALUE = 4
    EEPROM_LOCKED = 5
    COMMAND_NOT_AVAILABLE = 6
    NO_ERROR = 100


class AxisParameter(enum.IntEnum):
    """Axis parameters (``typeNumber`` of SAP/GAP) the driver uses."""

    ACTUAL_POSITION = 1  # set to 0 at the calibration stop
    CLEAR_I2T_EXCEEDED_FLAG = 29
    CLEAR_TIMEOUT_FLAG = 158  # clears the EtherCAT (motor controller) timeout flag


class GlobalParameter(enum.IntEnum):
    """Global parameters (``typeNumber`` of SGP/GGP)."""

    MOTOR_CONTROLLER_TIMEOUT = 90  # [ms]; 100 in the protected configurations


#: ``moduleAddress`` of the drive itself (the gripper on the joint-5 slave is module 1).
DRIVE_MODULE = 0


@dataclass(frozen=True)
class MailboxRequest:
    """One TMCL request (8 bytes, value most-significant byte first)."""

    command: TmclCommand
    type_number: int
    value: int = 0
    motor: int = 0
    module: int = DRIVE_MODULE

    def encode(self) -> bytes:
        for name in ("type_number", "motor", "module"):
            if not 0 <= getattr(self, name) <= 255:
                raise ProcessDataError(f"{name} must be a byte, got {getattr(self, name)}")
        return _MAILBOX_REQUEST.pack(self.module, int(self.command), self.type_number, self.motor,
                                     _int32("value", self.value))

    @classmethod
    def decode(cls, data: bytes) -> "MailboxRequest":
        _check_size(data[:MAILBOX_SIZE], MAILBOX_SIZE, "mailbox request")
        module, command, type_number, motor, value = _MAILBOX_REQUEST.unpack(data[:MAILBOX_SIZE])
        try:
            return cls(TmclCommand(command), type_number, value, motor, module)
        except ValueError:
            raise ProcessDataError(f"unknown TMCL command {command}") from None


@dataclass(frozen=True)
class MailboxReply:
    """One TMCL reply (8 bytes); ``ok`` when the status is ``NO_ERROR``."""

    reply_address: int
    module: int
    status: int
    command: int
    value: int

    @property
    def ok(self) -> bool:
        return self.status == TmclStatus.NO_ERROR

    def encode(self) -> bytes:
        return _MAILBOX_REPLY.pack(self.reply_address, self.module, self.status, self.command,
                                   _int32("value", self.value))

    @classmethod
    def decode(cls, data: bytes) -> "MailboxReply":
        _check_size(data[:MAILBOX_SIZE], MAILBOX_SIZE, "mailbox reply")
        return cls(*_MAILBOX_REPLY.unpack(data[:MAILBOX_SIZE]))
