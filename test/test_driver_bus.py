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
