"""Pure-Python control core (no ROS): the control laws of seed 002, section 4 (:mod:`.laws`), their
references (:mod:`.trajectory`), the safety guard (:mod:`.safety`), the plausibility check of
joint states (:mod:`.state_check`), the model terms and gain design they share (:mod:`.terms`),
and the external-torque observer and collision detection (:mod:`.observer`)."""
from .laws import ComputedTorqueController, FloatController, PDGravityController
from .observer import CollisionDetector, MomentumObserver, collision_thresholds
from .safety import GuardState, SafetyConfig, SafetyGuard
from .state_check import JointStateMonitor
from .trajectory import JointTrajectory, TrajectoryError, cartesian_line, check_goal

__all__ = [
    "ComputedTorqueController",
    "FloatController",
    "MomentumObserver",
    "CollisionDetector",
    "collision_thresholds",
    "PDGravityController",
    "GuardState",
    "SafetyConfig",
    "SafetyGuard",
    "JointStateMonitor",
    "JointTrajectory",
    "TrajectoryError",
    "cartesian_line",
    "check_goal",
]
