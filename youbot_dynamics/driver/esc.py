"""EtherCAT slave controllers (ESCs) in software: what a chain of youBot drives does with a frame.

The slave side of ETG.1000 (EtherCAT specification, parts 3 and 4), as far as an EtherCAT master
(SOEM) uses it to find, configure and run the youBot's drives:

* **Frames and datagrams**: an EtherCAT frame (EtherType 0x88A4) carries datagrams (command,
  index, address, length with the "more follows" bit, IRQ, data, working counter). Every slave of
  the chain sees every datagram in order and increments the working counter (WKC) when it serves
  it: reads +1, writes +1, read-write commands +1 for the read and +2 for the write.
* **Addressing**: auto-increment (APRD/APWR/APRW/ARMW: the slave whose position makes the address
  reach 0; every slave increments it), configured station address (FPRD/FPWR/FPRW/FRMW: register
  0x0010), broadcast (BRD/BWR/BRW; reads are ORed over the slaves) and logical (LRD/LWR/LRW:
  through the slave's FMMUs, read FMMUs copy memory into the datagram, write FMMUs the datagram
  into memory). ARMW/FRMW: the addressed slave reads, all others write.
* **Registers** SOEM reads or writes: type/features (0x0000-0x0008), station address and alias
  (0x0010, 0x0012), DL control/status (0x0100, 0x0110: the ports, hence the topology), AL control,
  status and status code (0x0120, 0x0130, 0x0134: the state machine), PDI control (0x0140), the SII
  EEPROM interface (0x0500-0x050F), FMMUs (0x0600, 16 bytes each) and sync managers (0x0800,
  8 bytes each). Read-only registers keep their value when written (SOEM writes whole SM records,
  status bytes included).
* **SII EEPROM** (ETG.2010): read 4 bytes at a word address through 0x0502/0x0504/0x0508; the image
  of :func:`youbot_sii`: identity, standard mailbox, and the categories strings (the name),
  general, FMMU, sync managers and the TxPDO/RxPDO entries that give the process-data sizes.
* **AL state machine**: INIT -> PRE-OP (the mailbox sync managers must be set up as in the SII),
  -> SAFE-OP (the process-data sync managers must have the SII's lengths and an FMMU each; else the
  error flag and AL status code 0x001D/0x001E), -> OP; any state back down; BOOT refused (0x0011);
  the error flag stays until a request with the acknowledge bit.
* **Mailbox**: sync manager 0 (master writes) and 1 (master reads) in mailbox mode. Writing the last
  byte of SM0's buffer delivers the request to the drive, whose reply fills SM1 and sets its
  "mailbox full" status bit; reading SM1's last byte empties it. The youBot drives put an 8-byte
  TMCL frame in the mailbox without the mailbox header (their own protocol: SII mailbox protocols
  0, so SOEM does no CoE).

Process data (SM2 outputs, SM3 inputs) is plain memory here; the chain calls ``on_process_data``
once per frame carrying logical datagrams, after the frame's writes and before its reads, so the
drives behind it can take the new outputs and refresh the inputs (``False``: the frame is lost).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ["EscSlave", "SlaveChain", "SlaveIdentity", "youbot_sii", "Command", "AlState",
           "ETHERCAT_TYPE", "MEMORY_SIZE"]

ETHERCAT_TYPE = 0x88A4
MEMORY_SIZE = 0x3000  # registers 0x0000-0x0FFF, process RAM 0x1000-0x2FFF (ET1100: 8 KiB)


class Command:
    """Datagram commands (ETG.1000.4 table 10)."""

    NOP, APRD, APWR, APRW, FPRD, FPWR, FPRW, BRD, BWR, BRW, LRD, LWR, LRW, ARMW, FRMW = range(15)


class AlState:
    """AL status / control values."""

    INIT, PRE_OP, BOOT, SAFE_OP, OP = 0x01, 0x02, 0x03, 0x04, 0x08
    ERROR, ACK = 0x10, 0x10


# registers
REG_TYPE, REG_FMMU_COUNT, REG_SM_COUNT, REG_RAM_SIZE, REG_PORTS, REG_FEATURES = 0x0000, 0x0004, 0x0005, 0x0006, \
    0x0007, 0x0008
REG_STATION, REG_DL_STATUS = 0x0010, 0x0110
REG_AL_CONTROL, REG_AL_STATUS, REG_AL_CODE, REG_PDI_CONTROL = 0x0120, 0x0130, 0x0134, 0x0140
REG_EEP_CONFIG, REG_EEP_PDI, REG_EEP_CONTROL, REG_EEP_ADDRESS, REG_EEP_DATA = 0x0500, 0x0501, 0x0502, 0x0504, 0x0508
REG_FMMU, REG_SM = 0x0600, 0x0800
N_FMMU = N_SM = 8

# AL status codes (ETG.1000.6 table 11)
AL_INVALID_STATE_CHANGE = 0x0011
AL_BOOTSTRAP_NOT_SUPPORTED = 0x0013
AL_INVALID_MAILBOX_CONFIGURATION = 0x0016
AL_INVALID_OUTPUT_CONFIGURATION = 0x001D
AL_INVALID_INPUT_CONFIGURATION = 0x001E

# SII word addresses and category types (ETG.2010)
SII_VENDOR, SII_PRODUCT, SII_REVISION, SII_SERIAL = 0x08, 0x0A, 0x0C, 0x0E
SII_RX_MAILBOX, SII_TX_MAILBOX, SII_MAILBOX_PROTOCOL, SII_SIZE, SII_VERSION = 0x18, 0x1A, 0x1C, 0x3E, 0x3F
CAT_STRINGS, CAT_GENERAL, CAT_FMMU, CAT_SM, CAT_TXPDO, CAT_RXPDO, CAT_END = 10, 30, 40, 41, 50, 51, 0xFFFF

# sync manager control byte: mode (bits 0-1: 0 buffered, 2 mailbox), direction (bits 2-3: 0 the
# master reads, 1 the master writes); status bit 3: mailbox full
SM_MAILBOX, SM_MASTER_WRITES, SM_FULL = 0x02, 0x04, 0x08
SM_MAILBOX_WRITE = 0x26  # mailbox, master writes, interrupt to PDI (SOEM's EC_DEFAULTMBXSM0)
SM_MAILBOX_READ = 0x22
SM_OUTPUTS, SM_INPUTS = 0x64, 0x20  # buffered; master writes / reads (SOEM's defaults for SM2/SM3)

_READ_ONLY = frozenset([*range(0x0000, 0x0010), 0x0110, 0x0111, *range(0x0130, 0x0136), REG_EEP_PDI,
                        *(REG_SM + 8 * n + k for n in range(N_SM) for k in (5, 7))])


@dataclass(frozen=True)
class SlaveIdentity:
    """What a slave's SII says about it. The youBot's vendor and product codes are not documented
    in our sources (the youBot driver accepts its slaves by name), so these are stand-ins."""

    name: str
    vendor: int = 0x0000_0286
    product: int = 0x0000_1610
    revision: int = 0x0002_0000
    serial: int = 0
    output_size: int = 5
    input_size: int = 32
    mailbox_write: tuple[int, int] = (0x1000, 0x40)  # start, length
    mailbox_read: tuple[int, int] = (0x1080, 0x40)
    outputs_start: int = 0x1100
    inputs_start: int = 0x1180


def _category(kind: int, data: bytes) -> bytes:
    if len(data) % 2:
        data += b"\0"
    return struct.pack("<HH", kind, len(data) // 2) + data


def _pdo(index: int, sm: int, entries: Sequence[tuple[int, int, int]]) -> bytes:
    """One PDO: header (index, entries, SM, sync, name, flags) and 8-byte entries (index, sub, name, type, bits)."""
    out = struct.pack("<HBBBBH", index, len(entries), sm, 0, 0, 0)
    for entry_index, sub, bits in entries:
        out += struct.pack("<HBBBBH", entry_index, sub, 0, 0x07 if bits == 32 else 0x05, bits, 0)
    return out


def youbot_sii(identity: SlaveIdentity) -> bytes:
    """The SII EEPROM image of a youBot drive (layout of ETG.2010; the contents: identity, a 64-byte
    mailbox for TMCL, 5 output and 32 input bytes: ``YouBotSlaveMsg`` of the youBot driver)."""
    words = [0] * 0x40
    for address, value in ((SII_VENDOR, identity.vendor), (SII_PRODUCT, identity.product),
                           (SII_REVISION, identity.revision), (SII_SERIAL, identity.serial)):
        words[address], words[address + 1] = value & 0xFFFF, value >> 16
    words[SII_RX_MAILBOX], words[SII_RX_MAILBOX + 1] = identity.mailbox_write
    words[SII_TX_MAILBOX], words[SII_TX_MAILBOX + 1] = identity.mailbox_read
    words[SII_MAILBOX_PROTOCOL] = 0  # TMCL in the raw mailbox: no standard protocol
    words[SII_VERSION] = 1
    name = identity.name.encode()
    strings = bytes([1, len(name)]) + name
    general = bytes([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) + bytes(16)  # name = string 1
    fmmu = bytes([1, 2, 0xFF, 0xFF])  # FMMU0 outputs, FMMU1 inputs
    sync = b"".join(struct.pack("<HHBBBB", start, length, control, 0, 1, kind) for start, length, control, kind in (
        (*identity.mailbox_write, SM_MAILBOX_WRITE, 1), (*identity.mailbox_read, SM_MAILBOX_READ, 2),
        (identity.outputs_start, identity.output_size, SM_OUTPUTS, 3),
        (identity.inputs_start, identity.input_size, SM_INPUTS, 4)))
    tx = _pdo(0x1A00, 3, [(0x6000, k + 1, 32) for k in range(identity.input_size // 4)])
    rx = _pdo(0x1600, 2, [(0x7000, 1, 32), (0x7000, 2, 8)])
    image = b"".join(struct.pack("<H", w) for w in words)
    image += b"".join(_category(kind, data) for kind, data in (
        (CAT_STRINGS, strings), (CAT_GENERAL, general), (CAT_FMMU, fmmu), (CAT_SM, sync),
        (CAT_TXPDO, tx), (CAT_RXPDO, rx)))
    return image + struct.pack("<H", CAT_END) + b"\xff" * 6


class EscSlave:
    """One slave controller: its memory, EEPROM, state machine and mailbox (see the module docstring).

    ``mailbox`` is called with the content of the write mailbox when the master has filled it and
    returns the reply for the read mailbox (``None``: no reply).
    """

    def __init__(self, identity: SlaveIdentity, mailbox: Callable[[bytes], bytes | None] | None = None) -> None:
        self.identity = identity
        self.sii = youbot_sii(identity)
        self.mailbox = mailbox
        self.memory = bytearray(MEMORY_SIZE)
        self._cached: tuple | None = None
        self.last_in_chain = True
        m = self.memory
        m[REG_TYPE], m[REG_FMMU_COUNT], m[REG_SM_COUNT], m[REG_RAM_SIZE], m[REG_PORTS] = 0x11, N_FMMU, N_SM, 8, 0x0F
        m[REG_PDI_CONTROL] = 0x05  # SPI slave (the drives' microcontroller)
        self._set16(REG_AL_STATUS, AlState.INIT)

    # -- state ----------------------------------------------------------------------------------

    @property
    def station(self) -> int:
        return self._get16(REG_STATION)

    @property
    def state(self) -> int:
        """The AL status (state bits and the error flag)."""
        return self._get16(REG_AL_STATUS)

    @property
    def status_code(self) -> int:
        return self._get16(REG_AL_CODE)

    def sync_manager(self, n: int) -> tuple[int, int, int, int, bool]:
        """``(start, length, control, status, active)`` of sync manager ``n``."""
        start, length, control, status, activate = struct.unpack_from("<HHBBB", self.memory, REG_SM + 8 * n)
        return start, length, control, status, bool(activate & 1)

    def process_area(self, master_writes: bool) -> tuple[int, int] | None:
        """``(start, length)`` of the active buffered sync manager in that direction (outputs if the master writes)."""
        return self._layout()[2 + int(not master_writes)]

    def fmmus(self) -> tuple[tuple[int, int, int, int], ...]:
        """The active FMMUs: ``(logical start, length, physical start, type)`` (type 1 read, 2 write, 3 both)."""
        return self._layout()[0]

    # -- the datagram interface -----------------------------------------------------------------

    def read(self, address: int, length: int) -> bytes:
        """Physical read by the master (side effect: reading a full read mailbox's last byte empties it)."""
        end = address + length
        if address < 0 or end > MEMORY_SIZE:
            return bytes(length)
        data = bytes(self.memory[address:end])
        mailbox = self._layout()[1][1]
        if mailbox is not None and address <= mailbox[1] + mailbox[2] - 1 < end:
            self.memory[REG_SM + 8 * mailbox[0] + 5] &= ~SM_FULL & 0xFF
        return data

    def write(self, address: int, data: bytes) -> None:
        """Physical write by the master, with the registers' side effects."""
        end = address + len(data)
        if address < 0 or end > MEMORY_SIZE:
            return
        kept = {a: self.memory[a] for a in range(address, end) if a in _READ_ONLY} if address < 0x0900 else {}
        self.memory[address:end] = data
        for a, value in kept.items():
            self.memory[a] = value
        if address < REG_SM + 8 * N_SM and end > REG_FMMU:
            self._cached = None
        if address <= REG_AL_CONTROL < end:
            self._al_control(self.memory[REG_AL_CONTROL])
        if address <= REG_EEP_CONTROL + 1 < end or address <= REG_EEP_CONTROL < end:
            self._eeprom_command()
        mailbox = self._layout()[1][0]
        if mailbox is not None and address <= mailbox[1] + mailbox[2] - 1 < end:
            self._deliver(bytes(self.memory[mailbox[1]:mailbox[1] + mailbox[2]]))

    # -- internals ------------------------------------------------------------------------------

    def _layout(self) -> tuple:
        """The FMMUs, the write and read mailboxes ``(sm, start, length)`` and the output and input
        areas ``(start, length)``, decoded once per configuration (cleared by writes to 0x0600-0x083F)."""
        if self._cached is None:
            fmmus = []
            for n in range(N_FMMU):
                log_start, length, _, _, phys, _, kind, active = struct.unpack_from("<IHBBHBBB", self.memory,
                                                                                    REG_FMMU + 16 * n)
                if active & 1 and length:
                    fmmus.append((log_start, length, phys, kind))
            found: dict[tuple[int, bool], tuple] = {}
            for n in range(N_SM):
                start, length, control, _, active = self.sync_manager(n)
                if active and length:
                    key = (control & 0x03, bool(control & SM_MASTER_WRITES))
                    found.setdefault(key, (n, start, length))
            outputs, inputs = found.get((0, True)), found.get((0, False))
            self._cached = (tuple(fmmus), (found.get((SM_MAILBOX, True)), found.get((SM_MAILBOX, False))),
                            outputs and outputs[1:], inputs and inputs[1:])
        return self._cached

    def _get16(self, address: int) -> int:
        return int.from_bytes(self.memory[address:address + 2], "little")

    def _set16(self, address: int, value: int) -> None:
        self.memory[address:address + 2] = int(value).to_bytes(2, "little")

    def _eeprom_command(self) -> None:
        command = self._get16(REG_EEP_CONTROL)
        if command & 0x0700 == 0x0100:  # read: 4 bytes at the word address
            word = int.from_bytes(self.memory[REG_EEP_ADDRESS:REG_EEP_ADDRESS + 4], "little")
            chunk = self.sii[2 * word:2 * word + 4]
            self.memory[REG_EEP_DATA:REG_EEP_DATA + 4] = chunk.ljust(4, b"\xff")
        self._set16(REG_EEP_CONTROL, 0x0000)  # done at once: not busy, no error, 4-byte reads

    def _al_control(self, value: int) -> None:
        requested, ack = value & 0x0F, value & AlState.ACK
        current = self.state & 0x0F
        if self.state & AlState.ERROR and not ack and requested > current:
            return  # an error must be acknowledged before going up
        code = self._transition_error(current, requested)
        if code:
            self._set16(REG_AL_STATUS, current | AlState.ERROR)
            self._set16(REG_AL_CODE, code)
        else:
            self._set16(REG_AL_STATUS, requested)
            self._set16(REG_AL_CODE, 0)

    def _transition_error(self, current: int, requested: int) -> int:
        if requested == AlState.BOOT:
            return AL_BOOTSTRAP_NOT_SUPPORTED
        if requested not in (AlState.INIT, AlState.PRE_OP, AlState.SAFE_OP, AlState.OP):
            return AL_INVALID_STATE_CHANGE
        if requested <= current:
            return 0
        order = (AlState.INIT, AlState.PRE_OP, AlState.SAFE_OP, AlState.OP)
        if order.index(requested) != order.index(current) + 1:
            return AL_INVALID_STATE_CHANGE
        ident = self.identity
        if requested == AlState.PRE_OP:
            ok = (self.sync_manager(0)[:3] == (*ident.mailbox_write, SM_MAILBOX_WRITE) and self.sync_manager(0)[4]
                  and self.sync_manager(1)[:3] == (*ident.mailbox_read, SM_MAILBOX_READ) and self.sync_manager(1)[4])
            return 0 if ok else AL_INVALID_MAILBOX_CONFIGURATION
        if requested == AlState.SAFE_OP:
            mapped = {kind for _, _, _, kind in self.fmmus()}
            if self.process_area(True) != (ident.outputs_start, ident.output_size) or 2 not in mapped:
                return AL_INVALID_OUTPUT_CONFIGURATION
            if self.process_area(False) != (ident.inputs_start, ident.input_size) or 1 not in mapped:
                return AL_INVALID_INPUT_CONFIGURATION
        return 0

    def _deliver(self, request: bytes) -> None:
        reply = self.mailbox(request) if self.mailbox is not None else None
        if reply is None:
            return
        mailbox = self._layout()[1][1]
        if mailbox is not None:
            n, start, size = mailbox
            self.memory[start:start + size] = reply[:size].ljust(size, b"\0")
            self.memory[REG_SM + 8 * n + 5] |= SM_FULL


class SlaveChain:
    """A line of slaves on one port: processes the EtherCAT part of a frame (see the module docstring).

    ``on_process_data(chain)`` runs once per frame with logical datagrams, between their writes and
    their reads; it returns ``False`` to lose the frame.
    """

    def __init__(self, slaves: Sequence[EscSlave],
                 on_process_data: Callable[["SlaveChain"], bool] | None = None) -> None:
        self.slaves = list(slaves)
        self.on_process_data = on_process_data
        for k, slave in enumerate(self.slaves):
            slave.last_in_chain = k == len(self.slaves) - 1
            # port 0 (to the master) communicating, port 1 communicating unless the last slave
            slave.memory[REG_DL_STATUS:REG_DL_STATUS + 2] = (
                0x0210 | (0x0400 if slave.last_in_chain else 0x0820)).to_bytes(2, "little")

    def process(self, payload: bytes) -> bytes | None:
        """The EtherCAT payload of a frame (after the Ethernet header) as it returns to the master,
        or ``None`` if the frame is lost (malformed, or dropped by ``on_process_data``)."""
        out = bytearray(payload)
        if len(out) < 2 or (int.from_bytes(out[0:2], "little") >> 12) != 1:
            return None
        logical = [], []  # (offset, length, command) of the logical datagrams
        offset = 2
        while True:
            if offset + 12 > len(out):
                return None
            command = out[offset]
            length_field = int.from_bytes(out[offset + 6:offset + 8], "little")
            length = length_field & 0x07FF
            if offset + 12 + length > len(out):
                return None
            if command in (Command.LRD, Command.LWR, Command.LRW):
                logical[0].append((offset, length, command))
            else:
                self._physical(out, offset, command, length)
            offset += 12 + length
            if not length_field & 0x8000:
                break
        if logical[0]:
            for entry in logical[0]:
                self._logical(out, *entry, write=True)
            if self.on_process_data is not None and not self.on_process_data(self):
                return None
            for entry in logical[0]:
                self._logical(out, *entry, write=False)
        return bytes(out)

    # -- internals ------------------------------------------------------------------------------

    @staticmethod
    def _add_wkc(out: bytearray, offset: int, length: int, count: int) -> None:
        at = offset + 10 + length
        wkc = int.from_bytes(out[at:at + 2], "little") + count
        out[at:at + 2] = (wkc & 0xFFFF).to_bytes(2, "little")

    def _physical(self, out: bytearray, offset: int, command: int, length: int) -> None:
        adp = int.from_bytes(out[offset + 2:offset + 4], "little")
        ado = int.from_bytes(out[offset + 4:offset + 6], "little")
        data = slice(offset + 10, offset + 10 + length)
        wkc = 0
        if command in (Command.APRD, Command.APWR, Command.APRW, Command.ARMW):
            addressed = [(adp + k) & 0xFFFF == 0 for k in range(len(self.slaves))]
            out[offset + 2:offset + 4] = ((adp + len(self.slaves)) & 0xFFFF).to_bytes(2, "little")
        elif command in (Command.FPRD, Command.FPWR, Command.FPRW, Command.FRMW):
            addressed = [s.station == adp for s in self.slaves]
        elif command in (Command.BRD, Command.BWR, Command.BRW):
            addressed = [True] * len(self.slaves)
            out[offset + 2:offset + 4] = ((adp + len(self.slaves)) & 0xFFFF).to_bytes(2, "little")
        else:
            return  # NOP and unknown commands pass unserved
        for slave, hit in zip(self.slaves, addressed):
            if command in (Command.ARMW, Command.FRMW):
                if hit:
                    out[data] = slave.read(ado, length)
                else:
                    slave.write(ado, bytes(out[data]))
                wkc += 1
            elif not hit:
                continue
            elif command in (Command.APRD, Command.FPRD):
                out[data] = slave.read(ado, length)
                wkc += 1
            elif command in (Command.APWR, Command.FPWR, Command.BWR):
                slave.write(ado, bytes(out[data]))
                wkc += 1
            elif command == Command.BRD:
                read = slave.read(ado, length)
                out[data] = bytes(a | b for a, b in zip(out[data], read))
                wkc += 1
            else:  # APRW, FPRW, BRW: read the old content, write the datagram's
                written = bytes(out[data])
                read = slave.read(ado, length)
                slave.write(ado, written)
                out[data] = bytes(a | b for a, b in zip(out[data], read)) if command == Command.BRW else read
                wkc += 3
        self._add_wkc(out, offset, length, wkc)

    def _logical(self, out: bytearray, offset: int, length: int, command: int, *, write: bool) -> None:
        address = int.from_bytes(out[offset + 2:offset + 6], "little")
        base = offset + 10
        wkc = 0
        for slave in self.slaves:
            state = slave.state
            if state & AlState.ERROR or state & 0x0F not in (AlState.SAFE_OP, AlState.OP):
                continue  # process data from SAFE-OP (inputs) and OP (outputs) on
            served = False
            for log_start, size, phys, kind in slave.fmmus():
                lo, hi = max(address, log_start), min(address + length, log_start + size)
                if lo >= hi:
                    continue
                at, count = phys + lo - log_start, hi - lo
                if write and kind & 2 and command in (Command.LWR, Command.LRW) and state == AlState.OP:
                    slave.write(at, bytes(out[base + lo - address:base + hi - address]))
                    served = True
                elif not write and kind & 1 and command in (Command.LRD, Command.LRW):
                    out[base + lo - address:base + hi - address] = slave.read(at, count)
                    served = True
            if served:
                wkc += (2 if command == Command.LRW else 1) if write else 1
        self._add_wkc(out, offset, length, wkc)
