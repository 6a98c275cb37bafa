"""The pysoem backend without hardware: lazy import, clear errors (no network interface is opened)."""
from __future__ import annotations

import sys

import pytest

from youbot_dynamics.driver.bus import RAW_SOCKET_HINT, BusError, PysoemBus
from youbot_dynamics.driver.process_data import MailboxRequest, TmclCommand


def test_no_interface_is_refused():
    with pytest.raises(BusError, match="no network interface"):
        PysoemBus("")


def test_missing_pysoem_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "pysoem", None)  # makes `import pysoem` raise ImportError
    bus = PysoemBus("eth0")
    with pytest.raises(BusError, match="pip install pysoem"):
        bus.open()


def test_unknown_interface_gives_the_raw_socket_hint():
    pytest.importorskip("pysoem")
    bus = PysoemBus("no_such_if0")
    with pytest.raises(BusError, match="cannot open network interface 'no_such_if0'") as info:
        bus.open()
    assert RAW_SOCKET_HINT in str(info.value)


def test_a_closed_bus_refuses_everything():
    bus = PysoemBus("eth0")
    for call in (bus.slaves, lambda: bus.exchange({}), lambda: bus.mailbox(0, MailboxRequest(TmclCommand.GAP, 1))):
        with pytest.raises(BusError, match="not open"):
            call()
    bus.close()  # idempotent


# -- PysoemBus against a stand-in for the pysoem module (the logic around the library calls) -------

class _FakeSlave:
    def __init__(self, name: str, output_size: int = 5, input_size: int = 32) -> None:
        self.name = name
        self.output = bytes(output_size)
        self.input = bytes(input_size)
        self.state = 0
        self.al_status = 0
        self.written: list[tuple[int, bytes]] = []
        self.registers = {0x0800: (0x1000).to_bytes(2, "little") + (16).to_bytes(2, "little"),
                          0x0808: (0x1080).to_bytes(2, "little") + (16).to_bytes(2, "little"),
                          0x0805: bytes([0x00]),  # write mailbox empty
                          0x080D: bytes([0x08]),  # read mailbox full
                          0x1080: bytes([2, 0, 100, 5, 0, 0, 0, 1]) + bytes(8)}  # reply: SAP ok, value 1

    def _fprd(self, address: int, size: int, timeout_us: int = 2000) -> bytes:
        return self.registers[address][:size]

    def _fpwr(self, address: int, data: bytes, timeout_us: int = 2000) -> None:
        self.written.append((address, bytes(data)))


class _FakeMaster:
    def __init__(self, module) -> None:
        self.module = module
        self.slaves = module.slaves
        self.expected_wkc = 3
        self.wkc = 3
        self.state = 0
        self.closed = False

    def open(self, interface: str) -> None:
        if interface != "eth_ok":
            raise ConnectionError(f"could not open interface {interface}")

    def config_init(self) -> int:
        return len(self.slaves)

    def config_map(self) -> None:
        pass

    def state_check(self, state: int, timeout: int) -> int:
        return state

    def send_processdata(self) -> int:
        return 1

    def receive_processdata(self, timeout: int) -> int:
        return self.wkc

    def write_state(self) -> None:
        pass

    def read_state(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class _FakePysoem:
    INIT_STATE, SAFEOP_STATE, OP_STATE = 1, 4, 8

    def __init__(self, slaves) -> None:
        self.slaves = slaves
        self.master: _FakeMaster | None = None

    def Master(self) -> _FakeMaster:  # noqa: N802 - pysoem's name
        self.master = _FakeMaster(self)
        return self.master


def _fake_bus(monkeypatch, slaves):
    fake = _FakePysoem(slaves)
    monkeypatch.setitem(sys.modules, "pysoem", fake)
    bus = PysoemBus("eth_ok")
    bus.open()
    return bus, fake


def test_pysoem_bus_lists_slaves_and_exchanges_process_data(monkeypatch):
    slaves = [_FakeSlave("TMCM-1632"), _FakeSlave("TMCM-1610")]
    bus, fake = _fake_bus(monkeypatch, slaves)
    assert [(s.index, s.name) for s in bus.slaves()] == [(0, "TMCM-1632"), (1, "TMCM-1610")]
    bus.to_operational([1])
    slaves[1].input = bytes(range(32))
    answer = bus.exchange({1: bytes([0xE8, 0x03, 0, 0, 1])})
    assert slaves[1].output == bytes([0xE8, 0x03, 0, 0, 1]) and answer == {1: bytes(range(32))}
    fake.master.wkc = 2  # a slave did not answer: the frame counts as lost
    assert bus.exchange({1: bytes(5)}) is None
    bus.close()
    assert fake.master.closed


def test_pysoem_bus_refuses_a_slave_with_another_process_image(monkeypatch):
    bus, _ = _fake_bus(monkeypatch, [_FakeSlave("TMCM-1610", output_size=8)])
    with pytest.raises(BusError, match="not a youBot joint firmware"):
        bus.to_operational([0])


def test_pysoem_bus_mailbox_goes_through_the_sync_manager_areas(monkeypatch):
    slaves = [_FakeSlave("TMCM-1610")]
    bus, _ = _fake_bus(monkeypatch, slaves)
    reply = bus.mailbox(0, MailboxRequest(TmclCommand.SAP, 158, 1))
    # the 8-byte TMCL request, padded to the write mailbox (16 bytes at 0x1000)
    assert slaves[0].written == [(0x1000, bytes([0, 5, 158, 0, 0, 0, 0, 1]) + bytes(8))]
    assert reply.ok and reply.command == 5 and reply.value == 1


def test_pysoem_bus_mailbox_times_out_when_no_reply_comes(monkeypatch):
    slaves = [_FakeSlave("TMCM-1610")]
    slaves[0].registers[0x080D] = bytes([0x00])  # the read mailbox never fills
    bus, _ = _fake_bus(monkeypatch, slaves)
    bus.mailbox_timeout = 0.01
    with pytest.raises(BusError, match="timeout waiting for the reply"):
        bus.mailbox(0, MailboxRequest(TmclCommand.GAP, 1))
