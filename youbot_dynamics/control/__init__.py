"""Pure-Python control core (no ROS): the control laws of seed 002, section 4 (:mod:`.laws`), their
references (:mod:`.trajectory`), the safety guard (:mod:`.safety`) and the model terms and gain
design they share (:mod:`.terms`)."""
from .laws import ComputedTorqueController, PDGravityController
from .safety import GuardState, SafetyConfig, SafetyGuard
from .trajectory import JointTrajectory, TrajectoryError, cartesian_line, check_goal

__all__ = [
    "ComputedTorqueController",
    "PDGravityController",
    "GuardState",
    "SafetyConfig",
    "SafetyGuard",
    "JointTrajectory",
    "TrajectoryError",
    "cartesian_line",
    "check_goal",
]
