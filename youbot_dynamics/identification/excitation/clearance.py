"""A simple geometric check that the arm stays clear of the floor, the youBot platform and its own base.

Model (all in the arm base frame = DH frame 0, z up along joint 1; metres):

* **check points**: the origins of DH frames 2..n and of the tool frame (elbow, wrist, tool point
  on the youBot) and the midpoints between consecutive ones (forearm, hand). The upper arm (frame 1
  to 2) is left out: joint 2's range keeps it above the shoulder (elbow height >= 0.16 m);
* **obstacles**, each with a signed distance ``d`` (> 0 clear, < 0 penetrating):
  the floor plane ``d = z - floor_z``; the platform, an axis-aligned box from the floor to
  ``platform_top`` (Euclidean distance to the box outside, minus the depth inside); the column of
  arm links 0-1 around the joint-1 axis, a cylinder of radius ``column_radius`` up to
  ``column_top`` (distance to the capped cylinder).

The clearance of a configuration is the smallest distance over points and obstacles; the optimiser
uses the smooth lower bound :func:`soft_clearance` instead. Points lie on
the link axes: the required margin (``Margins.clearance``) must cover the links' half width
(about 0.04 m) and the gripper. Self-collision between the hand and the upper arm is not modelled.

youBot defaults (:data:`YOUBOT_OBSTACLES`), from youbot/youbot_description: the arm mount is
``base_link -> arm_link_0 = (0.143, 0, 0.046)``; the base collision box is 0.570 x 0.360 x 0.100 m
centred on ``base_link``, with the wheels (radius 0.0475 m) 0.034 m below it, so the floor lies
0.1275 m below ``arm_link_0``; DH frame 0 sits 0.032 m below ``arm_link_0`` on the joint-1 axis
(0.024 m ahead of its origin, :func:`youbot_dynamics.arm.upstream.dh_base_in_upstream`), and the
1 deg yaw between the two is neglected. Hence floor ``z = -0.0955``, platform
``x in [-0.452, 0.118]``, ``y in [-0.18, 0.18]``, top ``z = 0.036``; the column (arm_link_0 and
arm_link_1 housings) is taken as radius 0.10 m up to 0.20 m, a rough bound from the meshes' size.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...arm.kinematics import link_frames

__all__ = ["Obstacles", "YOUBOT_OBSTACLES", "OBSTACLE_NAMES", "check_points", "obstacle_distances", "clearance",
           "soft_clearance"]

Array = NDArray[np.float64]
OBSTACLE_NAMES = ("floor", "platform", "column")


@dataclass(frozen=True)
class Obstacles:
    """Floor, platform box and base column in the arm base frame [m] (module docstring)."""

    floor_z: float
    platform_x: tuple[float, float]
    platform_y: tuple[float, float]
    platform_top: float
    column_radius: float
    column_top: float

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


YOUBOT_OBSTACLES = Obstacles(floor_z=-0.0955, platform_x=(-0.452, 0.118), platform_y=(-0.18, 0.18),
                             platform_top=0.036, column_radius=0.10, column_top=0.20)


def check_points(arm: ArmDescription, q: Any) -> Array:
    """The check points of configurations ``q`` (..., n): (..., P, 3) positions in the base frame."""
    origins = link_frames(arm, q)[..., 2:, :3, 3]  # DH frames 2..n and the tool frame
    mids = 0.5 * (origins[..., 1:, :] + origins[..., :-1, :])
    return np.concatenate([origins, mids], axis=-2)


def _box_distance(p: Array, lower: Array, upper: Array) -> Array:
    """Signed distance of points (..., 3) to an axis-aligned box: > 0 outside, < 0 inside."""
    centre, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
    excess = np.abs(p - centre) - half
    outside = np.linalg.norm(np.maximum(excess, 0.0), axis=-1)
    return outside + np.minimum(excess.max(axis=-1), 0.0)


def _capped_cylinder_distance(p: Array, radius: float, bottom: float, top: float) -> Array:
    """Signed distance to the cylinder ``x^2 + y^2 <= r^2``, ``bottom <= z <= top``."""
    excess = np.stack([np.hypot(p[..., 0], p[..., 1]) - radius,
                       np.abs(p[..., 2] - 0.5 * (top + bottom)) - 0.5 * (top - bottom)], axis=-1)
    return np.linalg.norm(np.maximum(excess, 0.0), axis=-1) + np.minimum(excess.max(axis=-1), 0.0)


def obstacle_distances(points: Array, obstacles: Obstacles) -> Array:
    """Signed distances (..., 3) of points (..., 3) to floor, platform and column (:data:`OBSTACLE_NAMES`)."""
    o = obstacles
    lower = np.array([o.platform_x[0], o.platform_y[0], o.floor_z])
    upper = np.array([o.platform_x[1], o.platform_y[1], o.platform_top])
    return np.stack([points[..., 2] - o.floor_z,
                     _box_distance(points, lower, upper),
                     _capped_cylinder_distance(points, o.column_radius, o.floor_z, o.column_top)], axis=-1)


def clearance(arm: ArmDescription, q: Any, obstacles: Obstacles = YOUBOT_OBSTACLES) -> Array:
    """Clearance [m] of configurations ``q`` (..., n): smallest signed distance, shape (...)."""
    return obstacle_distances(check_points(arm, q), obstacles).min(axis=(-1, -2))


def soft_clearance(arm: ArmDescription, q: Any, obstacles: Obstacles = YOUBOT_OBSTACLES,
                   smoothing: float = 0.01) -> Array:
    """Smooth lower bound of :func:`clearance` [m]: the soft minimum ``-s log sum_k exp(-d_k / s)``
    over all point-obstacle distances ``d_k``, between ``min d - s log(count)`` and ``min d``."""
    d = obstacle_distances(check_points(arm, q), obstacles)
    d = d.reshape(d.shape[:-2] + (-1,))
    low = d.min(axis=-1)
    return low - smoothing * np.log(np.exp(-(d - low[..., None]) / smoothing).sum(axis=-1))
