"""The emulated EtherCAT slave controllers (youbot_dynamics.driver.esc) against ETG.1000's rules,
datagram by datagram, without a network (real SOEM against them: test_driver_ethercat)."""
from __future__ import annotations

import struct

import pytest

from youbot_dynamics.driver.esc import AlState, Command, EscSlave, SlaveChain, SlaveIdentity, youbot_sii

IDENTITY = SlaveIdentity("TMCM-1610")


def frame(*datagrams: tuple[int, int, bytes]) -> bytes:
    """EtherCAT payload: ``(command, address (32 bit), data)`` per datagram, WKC 0."""
    body = b""
    for k, (command, address, data) in enumerate(datagrams):
        more = 0x8000 if k < len(datagrams) - 1 else 0
        body += bytes([command, k]) + struct.pack("<IHH", address, len(data) | more, 0) + data + b"\0\0"
    return struct.pack("<H", len(body) | 0x1000) + body


def datagrams(payload: bytes) -> list[tuple[int, bytes, int]]:
    """``(address, data, wkc)`` of each datagram of a returned payload."""
    out, offset = [], 2
    while True:
        address = struct.unpack_from("<I", payload, offset + 2)[0]
        field = struct.unpack_from("<H", payload, offset + 6)[0]
        length = field & 0x7FF
        data = payload[offset + 10:offset + 10 + length]
        out.append((address, data, struct.unpack_from("<H", payload, offset + 10 + length)[0]))
        offset += 12 + length
        if not field & 0x8000:
            return out


def fp(station: int, register: int) -> int:
    return station | register << 16


def configure(slave: EscSlave, station: int, log_out: int, log_in: int, output_size: int = 5) -> None:
    """What SOEM writes: station address, mailbox and process-data SMs, one output and one input FMMU."""
    slave.write(0x0010, struct.pack("<H", station))
    slave.write(0x0800, struct.pack("<HHBBBB", 0x1000, 0x40, 0x26, 0, 1, 0) + struct.pack("<HHBBBB", 0x1080, 0x40,
                                                                                          0x22, 0, 1, 0))
    slave.write(0x0810, struct.pack("<HHBBBB", 0x1100, output_size, 0x64, 0, 1, 0)
                + struct.pack("<HHBBBB", 0x1180, 32, 0x20, 0, 1, 0))
    slave.write(0x0600, struct.pack("<IHBBHBBBxxx", log_out, output_size, 0, 7, 0x1100, 0, 2, 1)
                + struct.pack("<IHBBHBBBxxx", log_in, 32, 0, 7, 0x1180, 0, 1, 1))


def operational(n: int = 2) -> tuple[SlaveChain, list[EscSlave]]:
    slaves = [EscSlave(IDENTITY) for _ in range(n)]
    for k, slave in enumerate(slaves):
        configure(slave, 0x1001 + k, 5 * k, 5 * n + 32 * k)
        for state in (AlState.PRE_OP, AlState.SAFE_OP, AlState.OP):
            slave.write(0x0120, struct.pack("<H", state))
        assert slave.state == AlState.OP
    return SlaveChain(slaves), slaves


def test_auto_increment_addresses_the_kth_slave_and_every_slave_counts_the_position_up():
    chain = SlaveChain([EscSlave(IDENTITY) for _ in range(3)])
    payload = chain.process(frame((Command.APWR, (-1 & 0xFFFF) | 0x0010 << 16, struct.pack("<H", 0x1002))))
    (address, _, wkc), = datagrams(payload)
    assert wkc == 1 and [s.station for s in chain.slaves] == [0, 0x1002, 0]
    assert address & 0xFFFF == 2  # -1 + 3 slaves
    (_, data, wkc), = datagrams(chain.process(frame((Command.FPRD, fp(0x1002, 0x0010), bytes(2)))))
    assert wkc == 1 and data == struct.pack("<H", 0x1002)
    (_, _, wkc), = datagrams(chain.process(frame((Command.FPRD, fp(0x7777, 0x0010), bytes(2)))))
    assert wkc == 0  # nobody has that station address


def test_broadcast_read_ors_the_slaves_and_counts_them():
    chain = SlaveChain([EscSlave(IDENTITY) for _ in range(3)])
    chain.slaves[1].write(0x0120, struct.pack("<H", AlState.SAFE_OP))  # INIT -> SAFE_OP: refused, error flag
    (_, data, wkc), = datagrams(chain.process(frame((Command.BRD, 0x0130 << 16, bytes(2)))))
    assert wkc == 3
    assert struct.unpack("<H", data)[0] == AlState.INIT | AlState.ERROR


def test_logical_read_write_counts_one_per_read_and_two_per_write_and_moves_the_data():
    chain, slaves = operational(2)
    outputs = bytes(range(1, 11))
    slaves[1].memory[0x1180:0x1180 + 32] = bytes(range(100, 132))
    (_, data, wkc), = datagrams(chain.process(frame((Command.LRW, 0, outputs + bytes(64)))))
    assert wkc == 2 * (1 + 2)  # two slaves, each read (+1) and written (+2)
    assert bytes(slaves[0].memory[0x1100:0x1105]) == outputs[:5]
    assert bytes(slaves[1].memory[0x1100:0x1105]) == outputs[5:]
    assert data[10 + 32:] == bytes(range(100, 132))
    (_, _, wkc), = datagrams(chain.process(frame((Command.LRD, 0, bytes(74)))))
    assert wkc == 2
    (_, _, wkc), = datagrams(chain.process(frame((Command.LWR, 0, bytes(74)))))
    assert wkc == 2


def test_outputs_are_taken_in_op_only_and_inputs_from_safe_op():
    chain, slaves = operational(1)
    slaves[0].write(0x0120, struct.pack("<H", AlState.SAFE_OP))
    (_, _, wkc), = datagrams(chain.process(frame((Command.LRW, 0, b"\x07" * 5 + bytes(32)))))
    assert wkc == 1 and bytes(slaves[0].memory[0x1100:0x1105]) == bytes(5)


def test_process_data_hook_runs_between_the_writes_and_the_reads_and_can_lose_the_frame():
    seen = []

    def drives(chain: SlaveChain) -> bool:
        slave = chain.slaves[0]
        seen.append(bytes(slave.memory[0x1100:0x1105]))
        slave.memory[0x1180:0x1184] = b"\x2a\0\0\0"
        return len(seen) < 2

    chain, _ = operational(1)
    chain.on_process_data = drives
    (_, data, _), = datagrams(chain.process(frame((Command.LRW, 0, b"\x05" * 5 + bytes(32)))))
    assert seen == [b"\x05" * 5] and data[5:9] == b"\x2a\0\0\0"  # the drive's answer to these outputs
    assert chain.process(frame((Command.LRW, 0, bytes(37)))) is None


def test_al_state_machine_checks_the_configuration_and_latches_errors_until_acknowledged():
    slave = EscSlave(IDENTITY)
    slave.write(0x0120, struct.pack("<H", AlState.PRE_OP))  # mailbox not set up
    assert slave.state == AlState.INIT | AlState.ERROR and slave.status_code == 0x0016
    configure(slave, 0x1001, 0, 5, output_size=6)  # not the youBot's 5 output bytes
    slave.write(0x0120, struct.pack("<H", AlState.PRE_OP))
    assert slave.state == AlState.INIT | AlState.ERROR  # not acknowledged: stays
    slave.write(0x0120, struct.pack("<H", AlState.PRE_OP | AlState.ACK))
    assert slave.state == AlState.PRE_OP and slave.status_code == 0
    slave.write(0x0120, struct.pack("<H", AlState.SAFE_OP))
    assert slave.state == AlState.PRE_OP | AlState.ERROR and slave.status_code == 0x001D
    slave.write(0x0120, struct.pack("<H", AlState.BOOT | AlState.ACK))
    assert slave.status_code == 0x0013
    slave.write(0x0120, struct.pack("<H", AlState.INIT | AlState.ACK))
    assert slave.state == AlState.INIT


def test_mailbox_request_is_delivered_on_its_last_byte_and_the_reply_emptied_by_reading_it():
    requests = []
    slave = EscSlave(IDENTITY, mailbox=lambda data: requests.append(data) or b"\x02\x00\x64\x0a\0\0\0\x64")
    configure(slave, 0x1001, 0, 5)
    slave.write(0x1000, b"\x00\x0a\x5a\x00")  # part of the mailbox: not yet delivered
    assert requests == [] and not slave.sync_manager(1)[3] & 0x08
    slave.write(0x1000, bytes(0x40))
    assert len(requests) == 1 and slave.sync_manager(1)[3] & 0x08  # reply waiting: mailbox full
    slave.write(0x080D, b"\x00")  # SOEM rewrites whole SM records: the status byte is read-only
    assert slave.sync_manager(1)[3] & 0x08
    assert slave.read(0x1080, 0x40)[:8] == b"\x02\x00\x64\x0a\0\0\0\x64"
    assert not slave.sync_manager(1)[3] & 0x08


def test_eeprom_reads_four_bytes_at_a_word_address():
    slave = EscSlave(IDENTITY)
    image = youbot_sii(IDENTITY)
    slave.write(0x0502, struct.pack("<HI", 0x0100, 0x08))  # read the vendor id (word 8)
    assert slave.read(0x0502, 2) == b"\0\0"  # not busy, no error
    assert slave.read(0x0508, 4) == image[16:20] == struct.pack("<I", IDENTITY.vendor)


@pytest.mark.parametrize("garbage", [b"", b"\x01", bytes([0xFF, 0x2F]) + bytes(10)])
def test_malformed_frames_are_not_answered(garbage):
    assert SlaveChain([EscSlave(IDENTITY)]).process(garbage) is None
