"""Byte-level tests of the youBot process data and TMCL mailbox frames (youbot_dynamics.driver.process_data).

Every expected frame below is written out by hand from the layout in shared/youbot_hardware.md
(packed little-endian ``int32 value, uint8 controllerMode``; ``int32 actualPosition, actualCurrent,
actualVelocity, uint32 errorFlags, int32 targetPosition, targetCurrent, targetVelocity,
rampGeneratorVelocity``; TMCL: 4 bytes then the value most-significant byte first).
"""
from __future__ import annotations

import pytest

from youbot_dynamics.driver.process_data import (ERROR_FLAGS, AxisParameter, ControllerMode, DriveInput, DriveOutput,
                                                 MailboxReply, MailboxRequest, ProcessDataError, StatusFlag,
                                                 TmclCommand, decode_flags)


@pytest.mark.parametrize("value, mode, frame", [
    (1000, ControllerMode.POSITION_CONTROL, bytes([0xE8, 0x03, 0x00, 0x00, 0x01])),
    (-191, ControllerMode.CURRENT_MODE, bytes([0x41, 0xFF, 0xFF, 0xFF, 0x06])),
    (-1490, ControllerMode.VELOCITY_CONTROL, bytes([0x2E, 0xFA, 0xFF, 0xFF, 0x02])),
    (0, ControllerMode.MOTOR_STOP, bytes([0x00, 0x00, 0x00, 0x00, 0x00])),
    (0, ControllerMode.INITIALIZE, bytes([0x00, 0x00, 0x00, 0x00, 0x07])),
    (2 ** 31 - 1, ControllerMode.POSITION_CONTROL, bytes([0xFF, 0xFF, 0xFF, 0x7F, 0x01])),
    (-(2 ** 31), ControllerMode.POSITION_CONTROL, bytes([0x00, 0x00, 0x00, 0x80, 0x01])),
])
def test_output_frames(value, mode, frame):
    assert DriveOutput(value, mode).encode() == frame
    assert DriveOutput.decode(frame) == DriveOutput(value, mode)


def test_controller_mode_numbers_match_the_firmware():
    assert [(m.name, int(m)) for m in ControllerMode] == [
        ("MOTOR_STOP", 0), ("POSITION_CONTROL", 1), ("VELOCITY_CONTROL", 2), ("NO_MORE_ACTION", 3),
        ("SET_POSITION_TO_REFERENCE", 4), ("CURRENT_MODE", 6), ("INITIALIZE", 7)]


def test_input_frame():
    frame = bytes([
        0x18, 0xFC, 0xFF, 0xFF,  # actualPosition -1000 ticks
        0xFA, 0x00, 0x00, 0x00,  # actualCurrent 250 mA
        0x9C, 0xFF, 0xFF, 0xFF,  # actualVelocity -100 rpm
        0x00, 0x88, 0x01, 0x00,  # errorFlags 0x00018800: torque mode, initialized, timeout
        0x40, 0x42, 0x0F, 0x00,  # targetPosition 1000000
        0xFA, 0x00, 0x00, 0x00,  # targetCurrent 250
        0x00, 0x00, 0x00, 0x00,  # targetVelocity 0
        0xFF, 0xFF, 0xFF, 0xFF,  # rampGeneratorVelocity -1
    ])
    decoded = DriveInput.decode(frame)
    assert decoded == DriveInput(-1000, 250, -100, 0x18800, 1_000_000, 250, 0, -1)
    assert decoded.encode() == frame
    assert decoded.flags == StatusFlag.TORQUE_MODE | StatusFlag.INITIALIZED | StatusFlag.TIMEOUT
    assert decode_flags(decoded.error_flags) == ("TORQUE_MODE", "INITIALIZED", "TIMEOUT")
    assert decoded.errors == ("TIMEOUT",)


def test_status_bits_are_the_documented_ones():
    expected = {"OVER_CURRENT": 0, "UNDER_VOLTAGE": 1, "OVER_VOLTAGE": 2, "OVER_TEMPERATURE": 3, "MOTOR_HALTED": 4,
                "HALL_SENSOR_ERROR": 5, "ENCODER_ERROR": 6, "INITIALIZATION_ERROR": 7, "PWM_MODE": 8,
                "VELOCITY_MODE": 9, "POSITION_MODE": 10, "TORQUE_MODE": 11, "EMERGENCY_STOP": 12,
                "FREE_RUNNING": 13, "POSITION_REACHED": 14, "INITIALIZED": 15, "TIMEOUT": 16, "I2T_EXCEEDED": 17}
    assert {f.name: f.value.bit_length() - 1 for f in StatusFlag} == expected
    assert int(ERROR_FLAGS) == 0b11_0001_0000_1110_1111  # bits 0-3, 5-7, 12, 16, 17


def test_decode_flags_names_unknown_bits_and_rejects_non_uint32():
    assert decode_flags(0) == ()
    assert decode_flags((1 << 31) | 1) == ("OVER_CURRENT", "BIT_31")
    assert decode_flags(0x20000) == ("I2T_EXCEEDED",)
    with pytest.raises(ProcessDataError):
        decode_flags(-1)
    with pytest.raises(ProcessDataError):
        decode_flags(1 << 32)


@pytest.mark.parametrize("bad", [b"", bytes(4), bytes(6)])
def test_output_of_wrong_size_is_rejected(bad):
    with pytest.raises(ProcessDataError, match="5 bytes"):
        DriveOutput.decode(bad)


def test_input_of_wrong_size_is_rejected():
    with pytest.raises(ProcessDataError, match="32 bytes"):
        DriveInput.decode(bytes(31))


def test_values_that_do_not_fit_are_rejected():
    with pytest.raises(ProcessDataError, match="int32"):
        DriveOutput(2 ** 31, ControllerMode.POSITION_CONTROL).encode()
    with pytest.raises(ProcessDataError):
        DriveOutput(1.5, ControllerMode.POSITION_CONTROL).encode()
    with pytest.raises(ProcessDataError, match="controller mode 5"):
        DriveOutput.decode(bytes([0, 0, 0, 0, 5]))
    with pytest.raises(ValueError):
        DriveOutput(0, 5).encode()
    with pytest.raises(ProcessDataError):
        DriveInput(0, 0, 0, -1).encode()


def test_mailbox_request_frames():
    # SAP 158 (clear timeout flag) value 1, motor 0, module 0
    assert MailboxRequest(TmclCommand.SAP, AxisParameter.CLEAR_TIMEOUT_FLAG, 1).encode() == bytes(
        [0x00, 0x05, 0x9E, 0x00, 0x00, 0x00, 0x00, 0x01])
    # SAP 1 (actual position) -1000: value big-endian
    frame = bytes([0x00, 0x05, 0x01, 0x00, 0xFF, 0xFF, 0xFC, 0x18])
    assert MailboxRequest(TmclCommand.SAP, AxisParameter.ACTUAL_POSITION, -1000).encode() == frame
    assert MailboxRequest.decode(frame) == MailboxRequest(TmclCommand.SAP, 1, -1000)
    # GGP 90 (motor-controller timeout) on module 1 (the gripper side)
    assert MailboxRequest(TmclCommand.GGP, 90, 0, module=1).encode() == bytes([1, 10, 90, 0, 0, 0, 0, 0])
    with pytest.raises(ProcessDataError):
        MailboxRequest(TmclCommand.SAP, 256).encode()


def test_mailbox_reply_frames():
    reply = MailboxReply.decode(bytes([0x02, 0x01, 0x64, 0x05, 0x00, 0x00, 0x01, 0x00]))
    assert reply == MailboxReply(2, 1, 100, 5, 256) and reply.ok
    assert not MailboxReply.decode(bytes([2, 1, 3, 6, 0, 0, 0, 0])).ok  # status 3: wrong type
