"""Per-joint conversions between the drives' motor-side units and joint units.

All data come from the arm description (``config/youbot_arm.yaml``: ``gear_ratio`` N = motor
revolutions per joint revolution, ``encoder_ticks_per_motor_revolution``, ``inverse_direction``,
``torque_constant`` kt), as the youBot driver does (``YouBotJoint.cpp``); ``s = -1`` for the
inverse-direction joints, else ``+1``:

* position: ``q = s (ticks - offset) 2 pi / (ticks_per_rev N)`` [rad]. ``offset`` is the tick count
  at the calibration stop; the drives' actual position is set to 0 there by the calibration, so
  the default offset is 0 and ``q`` follows the seed convention (q = 0 at the calibration stop).
* velocity: ``q' = s rpm 2 pi / (60 N)`` [rad/s]; a command is ``round(s q' 60 N / (2 pi))`` motor rpm.
* torque: the current is the *motor* current, the motor torque is ``kt I`` and the gearbox multiplies
  it by N (joint speed is the motor speed / N), so ``tau = s I kt N`` [N m] and
  ``I = s tau / (kt N)``. The youBot driver writes this as ``current * kt / gear_ratio`` with its
  ``gear_ratio = 1/N`` (e.g. 1/156): the same formula. Check against the hardware notes: 1 N m on
  joint 1 needs 1 / (0.0335 * 156) = 0.191 A. No friction or efficiency model.

Commands are rounded to integers (ticks, rpm, mA): ``rad -> ticks -> rad`` is exact to half a tick,
``ticks -> rad -> ticks`` exact.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription

__all__ = ["JointUnits"]

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


class JointUnits:
    """Vectorised conversions for the joints of ``arm`` (arrays of one value per joint)."""

    def __init__(self, arm: ArmDescription, offsets: Any = None) -> None:
        n = arm.n_joints
        self.arm = arm
        self.sign = np.where(np.asarray(arm.inverse_direction), -1.0, 1.0)
        self.rad_per_tick = 2.0 * math.pi / (arm.encoder_ticks * arm.gear_ratio)
        self.rad_s_per_rpm = 2.0 * math.pi / (60.0 * arm.gear_ratio)
        self.nm_per_ma = 1e-3 * arm.torque_constant * arm.gear_ratio
        self.offsets = np.zeros(n, dtype=np.int64)
        if offsets is not None:
            self.set_offsets(offsets)
        #: Drive current limits [mA] from ``max_current`` (rounded down).
        self.max_current_ma = np.floor(1e3 * arm.max_current).astype(np.int64)

    def set_offsets(self, offsets: Any) -> None:
        """Tick counts at the calibration stops (one integer per joint)."""
        offsets = np.asarray(offsets)
        if offsets.shape != self.offsets.shape or not np.issubdtype(offsets.dtype, np.integer):
            raise ValueError(f"offsets must be {self.offsets.size} integers, got {offsets!r}")
        self.offsets = offsets.astype(np.int64)

    # -- position -------------------------------------------------------------------------------

    def ticks_to_rad(self, ticks: Any) -> Array:
        return self.sign * (np.asarray(ticks, dtype=np.int64) - self.offsets) * self.rad_per_tick

    def rad_to_ticks(self, q: Any) -> IntArray:
        return np.round(self.sign * np.asarray(q, dtype=float) / self.rad_per_tick).astype(np.int64) + self.offsets

    # -- velocity -------------------------------------------------------------------------------

    def rpm_to_rad_s(self, rpm: Any) -> Array:
        return self.sign * np.asarray(rpm, dtype=float) * self.rad_s_per_rpm

    def rad_s_to_rpm(self, velocity: Any) -> IntArray:
        return np.round(self.sign * np.asarray(velocity, dtype=float) / self.rad_s_per_rpm).astype(np.int64)

    # -- torque ---------------------------------------------------------------------------------

    def ma_to_nm(self, current_ma: Any) -> Array:
        return self.sign * np.asarray(current_ma, dtype=float) * self.nm_per_ma

    def nm_to_ma(self, torque: Any) -> IntArray:
        return np.round(self.sign * np.asarray(torque, dtype=float) / self.nm_per_ma).astype(np.int64)
