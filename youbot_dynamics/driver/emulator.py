"""An emulated youBot EtherCAT chain on a network interface: real frames for a real master (SOEM).

The emulator answers EtherCAT frames on a raw ``AF_PACKET`` socket, normally one end of a Linux
veth pair whose other end the master (:class:`~.bus.PysoemBus`, ``youbot_driver`` with ``backend:
pysoem``) opens. Behind the slave controllers of :mod:`.esc` sit the drives of
:class:`~.virtual.VirtualBus` (the firmware's process data, TMCL mailbox, timeout and errors on the
MuJoCo arm): a frame with process data is one bus cycle of the virtual bus.

* :class:`DriveChain`: the ESCs wired to a virtual bus (no socket; tests can feed it frames);
* :func:`serve`: the frame loop on an interface, with a control connection for test hooks (lose
  frames, inject drive errors, pull the cable, read the true arm);
* :class:`EmulatorProcess`: the loop in its own process (spawned), with those hooks as methods;
* :class:`VethPair`: creates and removes the veth pair (needs root or CAP_NET_ADMIN);
* ``python -m youbot_dynamics.driver.emulator --interface IF`` (or ``--veth MASTER_END``): a chain
  for a master started by hand, e.g. ``youbot_driver`` with ``interface: MASTER_END``.

The emulator answers as fast as Python allows (tens of microseconds per frame; real drives answer
in about a microsecond per slave) and, when permitted, runs at a SCHED_FIFO priority so that a
loaded machine does not delay the answers beyond the master's receive timeout.
"""
from __future__ import annotations

import argparse
import errno
import multiprocessing
import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .esc import ETHERCAT_TYPE, AlState, EscSlave, SlaveChain, SlaveIdentity
from .process_data import MailboxReply, MailboxRequest, ProcessDataError, StatusFlag, TmclStatus
from .virtual import BASE_SLAVE_NAME, VirtualBus

__all__ = ["DriveChain", "EmulatorProcess", "VethPair", "serve", "main"]

_PACKET_OUTGOING = 4  # sll_pkttype of frames this host sent (the emulator's own answers)
_PRODUCTS = {BASE_SLAVE_NAME: 0x1632}


class DriveChain:
    """The slave controllers of the drives of ``bus`` (every slave of :meth:`VirtualBus.slaves`,
    base slaves first), wired to it: process data and mailbox requests go to the virtual drives."""

    def __init__(self, bus: VirtualBus) -> None:
        self.bus = bus
        bus.open()
        infos = bus.slaves()
        bus.to_operational([s.index for s in infos])
        self.lost = 0  # frames lost on purpose (drops) so far
        self.link_up = True
        slaves = [EscSlave(SlaveIdentity(s.name, product=_PRODUCTS.get(s.name, 0x1610)),
                           mailbox=self._mailbox_of(s.index)) for s in infos]
        self.chain = SlaveChain(slaves, self._process_data)

    def answer(self, frame: bytes) -> bytes | None:
        """The frame (Ethernet header included) as it comes back to the master, ``None`` if lost."""
        if not self.link_up or len(frame) < 16 or int.from_bytes(frame[12:14], "big") != ETHERCAT_TYPE:
            return None
        payload = self.chain.process(frame[14:])
        if payload is None:
            return None
        # the first slave marks the frame as returned (locally administered source address)
        return frame[:6] + bytes([frame[6] | 0x02]) + frame[7:14] + payload

    def _process_data(self, chain: SlaveChain) -> bool:
        outputs, reading = {}, []
        for i, slave in enumerate(chain.slaves):
            state = slave.state
            if state in (AlState.SAFE_OP, AlState.OP):
                reading.append((i, slave))
                area = slave.process_area(True)
                if state == AlState.OP and area is not None:
                    outputs[i] = bytes(slave.memory[area[0]:area[0] + area[1]])
        inputs = self.bus.exchange(outputs)
        if inputs is None:
            self.lost += 1
            return False
        for i, slave in reading:
            area = slave.process_area(False)
            if area is not None:
                slave.memory[area[0]:area[0] + area[1]] = inputs[i] if i in inputs else self.bus.inputs(i)
        return True

    def _mailbox_of(self, index: int):
        def mailbox(data: bytes) -> bytes | None:
            try:
                request = MailboxRequest.decode(data)
            except ProcessDataError:
                return MailboxReply(2, data[0], int(TmclStatus.INVALID_COMMAND), data[1], 0).encode()
            return self.bus.mailbox(index, request).encode()
        return mailbox


# -- the frame loop -----------------------------------------------------------------------------

def _set_realtime(priority: int) -> str:
    if priority <= 0:
        return "normal scheduling"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return f"SCHED_FIFO priority {priority}"
    except (PermissionError, OSError) as exc:
        return f"normal scheduling (SCHED_FIFO {priority} refused: {exc})"


def _hook(drives: DriveChain, request: tuple) -> Any:
    """One test-hook request from the control connection; returns the answer."""
    name, *args = request
    bus = drives.bus
    if name == "drop_frames":
        bus.drop_frames(int(args[0]))
    elif name == "inject":
        bus.inject(int(args[0]), StatusFlag(int(args[1])))
    elif name == "clear_injected":
        bus.clear_injected(int(args[0]))
    elif name == "link":
        drives.link_up = bool(args[0])
    elif name == "drive_mode":
        return bus.drive_mode(int(args[0]))
    elif name == "true_state":
        m = bus.sim.measure()
        return {"q": bus.sim.data.qpos.copy(), "time": bus.sim.time, "effort": np.asarray(m.effort).copy(),
                "frames": bus.frames, "lost": drives.lost,
                "states": [s.state for s in drives.chain.slaves]}
    else:
        raise ValueError(f"unknown emulator request {name!r}")
    return None


def serve(interface: str, drives: DriveChain, control=None, *, stop_after: float | None = None) -> None:
    """Answer EtherCAT frames on ``interface`` until ``control`` sends ``("stop",)`` or closes (or
    ``stop_after`` seconds). ``control``: a :mod:`multiprocessing` connection for :func:`_hook` requests."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERCAT_TYPE))
    sock.bind((interface, ETHERCAT_TYPE))
    waits = [sock] if control is None else [sock, control]
    end = None if stop_after is None else time.monotonic() + stop_after
    try:
        while end is None or time.monotonic() < end:
            ready, _, _ = select.select(waits, [], [], 0.2)
            if sock in ready:
                try:
                    frame, address = sock.recvfrom(2048)
                    if address[2] != _PACKET_OUTGOING:
                        answer = drives.answer(frame)
                        if answer is not None:
                            sock.send(answer)
                except OSError as exc:  # link down (cable pulled): the slaves wait for it to come back
                    if exc.errno not in (errno.ENETDOWN, errno.ENXIO, errno.ENODEV):
                        raise
                    time.sleep(0.01)
            if control is not None and control in ready:
                try:
                    request = control.recv()
                except EOFError:
                    return
                if request[0] == "stop":
                    control.send(None)
                    return
                try:
                    control.send(("ok", _hook(drives, request)))
                except Exception as exc:  # the test sees the error, the chain keeps running
                    control.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        sock.close()


def _run(interface: str, bus_options: dict, wall_clock: bool, priority: int, control) -> None:
    """Body of :class:`EmulatorProcess` (a spawned process)."""
    try:
        bus = VirtualBus(**bus_options, clock=time.monotonic if wall_clock else None)
        drives = DriveChain(bus)
        scheduling = _set_realtime(priority)
    except Exception as exc:
        control.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    control.send(("ready", scheduling))
    serve(interface, drives, control)


class EmulatorProcess:
    """An emulated youBot chain on ``interface``, in its own process (see the module docstring).

    ``bus_options`` go to :class:`~.virtual.VirtualBus` (``initial_positions``, ``calibrated``,
    ``realism``, ``config``, ``base_slaves``, ...). ``wall_clock``: the arm keeps real time (for a
    master on its own cycle); else every process-data frame is one physics step (tests that run the
    master's cycles one by one). ``realtime_priority``: SCHED_FIFO priority of the process (0: none).
    """

    def __init__(self, interface: str, *, wall_clock: bool = False, realtime_priority: int = 80,
                 start_timeout: float = 60.0, **bus_options: Any) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with DDS threads
        self._conn, child = context.Pipe()
        self.process = context.Process(target=_run, name=f"youbot_emulator_{interface}", daemon=True,
                                       args=(interface, bus_options, wall_clock, realtime_priority, child))
        self.process.start()
        child.close()
        if not self._conn.poll(start_timeout):
            self.close()
            raise RuntimeError(f"the EtherCAT emulator on {interface} did not start in {start_timeout} s")
        try:
            status, detail = self._conn.recv()
        except EOFError:
            status, detail = "error", f"the process ended (exit code {self.process.exitcode})"
        if status != "ready":
            self.close()
            raise RuntimeError(f"the EtherCAT emulator on {interface} failed: {detail}")
        self.scheduling = detail

    def call(self, *request: Any) -> Any:
        self._conn.send(request)
        status, value = self._conn.recv()
        if status != "ok":
            raise RuntimeError(value)
        return value

    # -- test hooks (as VirtualBus) ---------------------------------------------------------------

    def drop_frames(self, count: int) -> None:
        """Lose the next ``count`` process-data frames (not answered; the drives count them as missing)."""
        self.call("drop_frames", count)

    def inject(self, joint: int, flags: StatusFlag) -> None:
        self.call("inject", joint, int(flags))

    def clear_injected(self, joint: int) -> None:
        self.call("clear_injected", joint)

    def drive_mode(self, joint: int):
        return self.call("drive_mode", joint)

    def set_link(self, up: bool) -> None:
        """``False``: no frame is answered any more (a cable pulled between master and arm)."""
        self.call("link", up)

    def true_state(self) -> dict:
        """The MuJoCo arm behind the drives: ``q``, ``time``, ``effort``; frames served and lost;
        the slaves' AL states."""
        return self.call("true_state")

    def close(self) -> None:
        """Stop the process (idempotent)."""
        if self.process.is_alive():
            try:
                self._conn.send(("stop",))
                self._conn.poll(5.0)
            except (BrokenPipeError, OSError):
                pass
            self.process.join(5.0)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        self._conn.close()


# -- veth ---------------------------------------------------------------------------------------

@dataclass
class VethPair:
    """A Linux veth pair: the master opens ``master``, the emulator serves ``slave``."""

    master: str
    slave: str

    @classmethod
    def create(cls, master: str, slave: str) -> "VethPair":
        """Create the pair, both ends up, IPv6 off (no stray frames); raises ``PermissionError``
        without the right to (root or CAP_NET_ADMIN), ``RuntimeError`` on other failures."""
        pair = cls(master, slave)
        pair.remove()
        pair._ip("link", "add", master, "type", "veth", "peer", "name", slave)
        for end in (master, slave):
            try:
                with open(f"/proc/sys/net/ipv6/conf/{end}/disable_ipv6", "w") as f:
                    f.write("1")
            except OSError:
                pass
            pair._ip("link", "set", end, "up")
        return pair

    def set_up(self, up: bool) -> None:
        """Carrier on/off (``ip link set SLAVE up/down``): the master's end loses its link too."""
        self._ip("link", "set", self.slave, "up" if up else "down")

    def remove(self) -> None:
        subprocess.run(["ip", "link", "del", self.master], capture_output=True, check=False)

    @staticmethod
    def _ip(*args: str) -> None:
        try:
            done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise RuntimeError("the `ip` command (iproute2) is not installed") from None
        if done.returncode:
            message = done.stderr.strip()
            if "Operation not permitted" in message:
                raise PermissionError(f"ip {' '.join(args)}: {message} (needs root or CAP_NET_ADMIN)")
            raise RuntimeError(f"ip {' '.join(args)}: {message}")


# -- command line -------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m youbot_dynamics.driver.emulator", description=(
        "Emulated youBot arm drives on an EtherCAT interface (raw frames; needs root or CAP_NET_RAW)."))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--interface", help="serve this interface (e.g. one end of a veth pair)")
    where.add_argument("--veth", metavar="MASTER_END",
                       help="create the veth pair MASTER_END <-> MASTER_END's peer 'MASTER_END_s' and serve the peer; "
                            "start the master on MASTER_END")
    parser.add_argument("--base-slaves", type=int, default=0, help="base drives before the arm (youBot: 4)")
    parser.add_argument("--uncalibrated", action="store_true", help="encoders count from power-up")
    parser.add_argument("--commutated", action="store_true", help="drives already commutated")
    parser.add_argument("--no-realism", action="store_true", help="the ideal simulator (no friction, delays)")
    parser.add_argument("--realtime-priority", type=int, default=80, help="SCHED_FIFO priority (0: none)")
    parser.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    args = parser.parse_args(argv)
    pair = VethPair.create(args.veth, f"{args.veth}_s") if args.veth else None
    interface = pair.slave if pair else args.interface
    try:
        bus = VirtualBus(base_slaves=args.base_slaves, calibrated=not args.uncalibrated, commutated=args.commutated,
                         realism=not args.no_realism, clock=time.monotonic)
        drives = DriveChain(bus)
        print(f"youBot EtherCAT emulator: {len(drives.chain.slaves)} slaves on {interface} "
              f"({_set_realtime(args.realtime_priority)})" + (f"; master end: {pair.master}" if pair else ""),
              flush=True)
        serve(interface, drives, stop_after=args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        if pair is not None:
            pair.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
