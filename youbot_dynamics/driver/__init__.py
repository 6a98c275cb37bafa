"""EtherCAT driver core for the real youBot arm (no ROS): process data, units, bus backends, driver logic.

* :mod:`.process_data`: the drives' 5-byte output / 32-byte input process data, controller modes,
  status flags and TMCL mailbox frames, byte for byte;
* :mod:`.units`: ticks / motor rpm / mA <-> rad / rad/s / N m per joint, from the arm description;
* :mod:`.bus`: the :class:`Bus` protocol and :class:`PysoemBus` (pysoem imported only when opened);
* :mod:`.virtual`: :class:`VirtualBus`, drives with the firmware's behaviour on the MuJoCo arm;
* :mod:`.driver`: :class:`ArmDriver`, the cycle logic (start-up, commutation, calibration,
  commands, safety, statistics); :mod:`.loop`: :class:`CyclicLoop`, its dedicated thread.

The ROS 2 node is :mod:`youbot_dynamics.nodes.youbot_driver`.
"""
from .bus import Bus, BusError, PysoemBus, SlaveInfo
from .driver import (INTERFACES, JOINT_SLAVE_NAMES, REQUESTS, ArmDriver, CommandError, DriverConfig, DriverError,
                     DriverPhase, DriverState)
from .loop import CyclicLoop
from .process_data import (ERROR_FLAGS, ControllerMode, DriveInput, DriveOutput, MailboxReply, MailboxRequest,
                           StatusFlag, decode_flags)
from .units import JointUnits
from .virtual import VirtualBus, VirtualDriveConfig

__all__ = [
    "ArmDriver", "Bus", "BusError", "CommandError", "ControllerMode", "CyclicLoop", "DriveInput", "DriveOutput",
    "DriverConfig", "DriverError", "DriverPhase", "DriverState", "ERROR_FLAGS", "INTERFACES", "JOINT_SLAVE_NAMES",
    "JointUnits", "MailboxReply", "MailboxRequest", "PysoemBus", "REQUESTS", "SlaveInfo", "StatusFlag", "VirtualBus",
    "VirtualDriveConfig", "decode_flags",
]
