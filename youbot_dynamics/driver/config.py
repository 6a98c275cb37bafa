"""The driver's settings (:class:`DriverConfig`, the node's parameters of the same names)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..motion.interpolation import INTERPOLATIONS

__all__ = ["FIRMWARES", "DriverConfig"]

FIRMWARES = ("1.48", "2.00")


@dataclass(frozen=True)
class DriverConfig:
    """Driver settings (the node's parameters of the same names)."""

    cycle_period: float = 0.001  # [s]
    command_timeout: float = 0.1  # [s]
    max_lost_frames: int = 100
    firmware: str = "2.00"
    commutation_rpm: int = 100  # [motor rpm], firmware 2.00
    commutation_timeout: float = 2.0  # [s]
    calibrate_on_start: bool = False
    calibration_velocity: float = 2.0 * math.pi / 60.0  # [rad/s] at the output: 1 rpm
    calibration_timeout: float = 60.0  # [s]
    calibration_settle: float = 0.1  # [s] at 0 mA before the position is set
    calibration_stall_time: float = 0.25  # [s]
    current_limit_scale: float = 1.0  # [-] of max_current
    limit_margin: float = 0.02  # [rad]
    trajectory_interpolation: str = "quintic"
    trajectory_gain: float = 20.0  # [1/s], position feedback of the trajectory execution
    enable_on_start: bool = False

    def __post_init__(self) -> None:
        positive = ("cycle_period", "command_timeout", "commutation_timeout", "calibration_velocity",
                    "calibration_timeout", "calibration_stall_time", "trajectory_gain")
        for name in positive:
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not self.calibration_settle >= 0:
            raise ValueError(f"calibration_settle must be >= 0, got {self.calibration_settle!r}")
        if not (isinstance(self.max_lost_frames, int) and self.max_lost_frames >= 1):
            raise ValueError(f"max_lost_frames must be an integer >= 1, got {self.max_lost_frames!r}")
        if self.firmware not in FIRMWARES:
            raise ValueError(f"firmware must be one of {FIRMWARES}, got {self.firmware!r}")
        if not (isinstance(self.commutation_rpm, int) and self.commutation_rpm > 0):
            raise ValueError(f"commutation_rpm must be a positive integer, got {self.commutation_rpm!r}")
        if not 0.0 < self.current_limit_scale <= 1.0:
            raise ValueError(f"current_limit_scale must be in (0, 1], got {self.current_limit_scale!r}")
        if not (math.isfinite(self.limit_margin) and self.limit_margin >= 0.0):
            raise ValueError(f"limit_margin must be >= 0, got {self.limit_margin!r}")
        if self.trajectory_interpolation not in INTERPOLATIONS:
            raise ValueError(f"trajectory_interpolation must be one of {INTERPOLATIONS}, "
                             f"got {self.trajectory_interpolation!r}")
