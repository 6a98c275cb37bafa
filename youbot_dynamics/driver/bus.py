"""The EtherCAT bus as the driver sees it: a small :class:`Bus` protocol and its pysoem backend.

A bus is opened, lists its slaves (position on the bus and name), brings the chosen slaves to
OP, exchanges process data once per cycle (``exchange``: the 5-byte outputs of the chosen slaves
go out, their 32-byte inputs come back, or ``None`` when the frame was lost or the working
counter is short) and carries TMCL mailbox requests. :class:`~.virtual.VirtualBus` implements the
same protocol on top of the MuJoCo arm for tests and the demo.

:class:`PysoemBus` imports ``pysoem`` only when it is opened, so everything else runs without it
(and without a network interface or raw-socket permission).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from .process_data import INPUT_SIZE, OUTPUT_SIZE, MailboxReply, MailboxRequest

__all__ = ["BusError", "SlaveInfo", "Bus", "PysoemBus", "RAW_SOCKET_HINT"]

RAW_SOCKET_HINT = ("EtherCAT needs raw sockets: run as root, or give the interpreter the capability once with "
                   "`sudo setcap cap_net_raw,cap_net_admin+eip $(readlink -f .venv/bin/python)`; list the "
                   "interfaces with `ip link`.")


class BusError(RuntimeError):
    """The bus cannot be opened, a slave does not reach OP, or a mailbox exchange failed."""


@dataclass(frozen=True)
class SlaveInfo:
    """A slave found on the bus: its 0-based position and its name (e.g. ``TMCM-1610``)."""

    index: int
    name: str


class Bus(Protocol):
    """What the driver needs from an EtherCAT master."""

    def open(self) -> None:
        """Open the interface and enumerate the slaves (raises :class:`BusError`)."""

    def slaves(self) -> list[SlaveInfo]:
        """The slaves found by :meth:`open`, in bus order."""

    def to_operational(self, slaves: Sequence[int]) -> None:
        """Map the process data and bring ``slaves`` through SAFE_OP to OP (raises :class:`BusError`)."""

    def exchange(self, outputs: Mapping[int, bytes]) -> dict[int, bytes] | None:
        """One cycle: send the outputs, return the inputs of the same slaves, ``None`` if the frame was lost."""

    def mailbox(self, slave: int, request: MailboxRequest) -> MailboxReply:
        """One TMCL request/reply on the mailbox of ``slave`` (raises :class:`BusError`)."""

    def close(self) -> None:
        """Back to INIT and release the interface (idempotent)."""


# EtherCAT slave registers (ETG.1000.4): sync manager 0 (master -> slave mailbox) and 1 (slave ->
# master mailbox), 8 bytes each: start address (uint16), length (uint16), control, status, ...
_SM0, _SM1 = 0x0800, 0x0808
_SM_STATUS = 5
_MAILBOX_FULL = 0x08


class PysoemBus:
    """EtherCAT master on a network interface through pysoem (SOEM).

    ``receive_timeout`` is the process-data receive timeout [s] (the youBot driver uses 500 us).
    The mailbox goes through the sync-manager registers directly (pysoem has no raw-mailbox call):
    the 8-byte TMCL request is written at the start of the slave's write mailbox and the reply read
    from its read mailbox once the slave marks it full, as the youBot driver's ``ec_mbxsend`` /
    ``ec_mbxreceive`` do. This path could not be tested without hardware.
    """

    def __init__(self, interface: str, receive_timeout: float = 500e-6, mailbox_timeout: float = 0.05) -> None:
        if not interface:
            raise BusError("no network interface given (parameter 'interface', e.g. eth0; see `ip link`)")
        self.interface = interface
        self.receive_timeout_us = int(round(receive_timeout * 1e6))
        self.mailbox_timeout = mailbox_timeout
        self._pysoem = None
        self._master = None
        self._chosen: list[int] = []

    def open(self) -> None:
        try:
            import pysoem  # lazy: only a real bus needs it
        except ImportError as exc:
            raise BusError(f"the pysoem backend needs the 'pysoem' package (pip install pysoem): {exc}") from None
        self._pysoem = pysoem
        master = pysoem.Master()
        try:
            master.open(self.interface)
        except (ConnectionError, OSError) as exc:
            raise BusError(f"cannot open network interface '{self.interface}': {exc}. {RAW_SOCKET_HINT}") from None
        self._master = master
        found = master.config_init()
        if found <= 0:
            self.close()
            raise BusError(f"no EtherCAT slaves found on '{self.interface}' (is the youBot powered and the cable "
                           "in its EtherCAT port?)")

    def slaves(self) -> list[SlaveInfo]:
        master = self._require_open()
        return [SlaveInfo(i, str(s.name)) for i, s in enumerate(master.slaves)]

    def to_operational(self, slaves: Sequence[int]) -> None:
        master, pysoem = self._require_open(), self._pysoem
        master.config_map()
        for i in slaves:
            slave = master.slaves[i]
            if len(slave.output) != OUTPUT_SIZE or len(slave.input) != INPUT_SIZE:
                raise BusError(f"slave {i} ({slave.name}) maps {len(slave.output)} output / {len(slave.input)} input "
                               f"bytes, expected {OUTPUT_SIZE} / {INPUT_SIZE}: not a youBot joint firmware")
        if master.state_check(pysoem.SAFEOP_STATE, 50_000) != pysoem.SAFEOP_STATE:
            raise BusError(f"slaves did not reach SAFE_OP: {self._states()}")
        master.state = pysoem.OP_STATE
        for _ in range(40):
            master.send_processdata()
            master.receive_processdata(self.receive_timeout_us)
            master.write_state()
            if master.state_check(pysoem.OP_STATE, 50_000) == pysoem.OP_STATE:
                self._chosen = list(slaves)
                return
        raise BusError(f"slaves did not reach OP: {self._states()}")

    def exchange(self, outputs: Mapping[int, bytes]) -> dict[int, bytes] | None:
        master = self._require_open()
        for i, data in outputs.items():
            master.slaves[i].output = bytes(data)
        master.send_processdata()
        wkc = master.receive_processdata(self.receive_timeout_us)
        if wkc < master.expected_wkc:
            return None
        return {i: bytes(master.slaves[i].input) for i in outputs}

    def mailbox(self, slave: int, request: MailboxRequest) -> MailboxReply:
        s = self._require_open().slaves[slave]
        try:
            write_start, write_length = self._sync_manager(s, _SM0)
            read_start, read_length = self._sync_manager(s, _SM1)
            self._wait_status(s, _SM0, full=False)
            s._fpwr(write_start, request.encode().ljust(write_length, b"\0"))
            self._wait_status(s, _SM1, full=True)
            data = bytes(s._fprd(read_start, read_length))
        except BusError:
            raise
        except Exception as exc:  # pysoem raises several types for a failed datagram
            raise BusError(f"mailbox of slave {slave} failed: {exc}") from None
        return MailboxReply.decode(data)

    def close(self) -> None:
        master, self._master = self._master, None
        if master is None:
            return
        try:
            master.state = self._pysoem.INIT_STATE
            master.write_state()
        finally:
            master.close()

    # -- internals ------------------------------------------------------------------------------

    def _require_open(self):
        if self._master is None:
            raise BusError("the EtherCAT bus is not open")
        return self._master

    def _states(self) -> str:
        master = self._master
        master.read_state()
        return ", ".join(f"{i} {s.name}: state {s.state:#x} AL status {s.al_status:#x}"
                         for i, s in enumerate(master.slaves))

    @staticmethod
    def _sync_manager(slave, register: int) -> tuple[int, int]:
        raw = bytes(slave._fprd(register, 4))
        return int.from_bytes(raw[:2], "little"), int.from_bytes(raw[2:4], "little")

    def _wait_status(self, slave, register: int, *, full: bool) -> None:
        deadline = time.monotonic() + self.mailbox_timeout
        while True:
            status = bytes(slave._fprd(register + _SM_STATUS, 1))[0]
            if bool(status & _MAILBOX_FULL) == full:
                return
            if time.monotonic() > deadline:
                raise BusError(f"mailbox of slave {slave.name}: timeout waiting for the "
                               f"{'reply' if full else 'write mailbox to empty'}")
            time.sleep(0.0005)
