"""ROS message <-> numpy conversions for the youbot_dynamics nodes.

Only conversions live here (no kinematics): the nodes call the pure-Python core with numpy arrays
and use these helpers at the message boundary. Everything that comes from a message is validated:
a malformed message raises ``ValueError`` with the reason, so a node can reject it instead of
turning it into a motion.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from geometry_msgs.msg import Point, Pose, Quaternion
from std_msgs.msg import ColorRGBA, Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from ..transforms import quaternion_to_rotation, rotation_to_quaternion, transform

__all__ = [
    "pose_to_matrix",
    "matrix_to_pose",
    "joint_positions_from_state",
    "JointStateReader",
    "joint_trajectory",
    "trajectory_arrays",
    "frame_markers",
    "trajectory_message",
    "AXIS_COLORS",
]

Array = NDArray[np.float64]

#: RGBA of the x, y and z axis markers (red, green, blue).
AXIS_COLORS: tuple[tuple[float, float, float, float], ...] = (
    (1.0, 0.0, 0.0, 1.0),
    (0.0, 1.0, 0.0, 1.0),
    (0.0, 0.0, 1.0, 1.0),
)


def pose_to_matrix(pose: Pose) -> Array:
    """4x4 homogeneous transform of a ``geometry_msgs/Pose``.

    Raises ``ValueError`` if the position is not finite, or if the quaternion contains NaN/inf or
    is not unit length (checked by :func:`..transforms.quaternion_to_rotation`; it is not silently
    normalised).
    """
    p = (pose.position.x, pose.position.y, pose.position.z)
    if not all(math.isfinite(v) for v in p):
        raise ValueError(f"pose position contains NaN or infinite values: {list(p)}")
    o = pose.orientation
    rotation = quaternion_to_rotation([o.x, o.y, o.z, o.w])
    return transform(rotation, p)


def matrix_to_pose(t: Any) -> Pose:
    """``geometry_msgs/Pose`` of a 4x4 homogeneous transform (quaternion with ``w >= 0``)."""
    t = np.asarray(t, dtype=float)
    if t.shape != (4, 4):
        raise ValueError(f"expected a 4x4 transform, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("transform contains NaN or infinite values")
    x, y, z, w = rotation_to_quaternion(t[:3, :3])
    pose = Pose()
    pose.position = Point(x=float(t[0, 3]), y=float(t[1, 3]), z=float(t[2, 3]))
    pose.orientation = Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))
    return pose


def joint_positions_from_state(msg: Any, joint_names: Sequence[str]) -> Array:
    """Positions of ``joint_names`` (in that order) picked by name from a ``sensor_msgs/JointState``
    (a goal, a seed): :meth:`JointStateReader.read` with velocities optional, NaN and infinity refused."""
    return JointStateReader(joint_names, require_velocity=False).read(msg)[0]


class JointStateReader:
    """Picks ``joint_names`` by name from ``sensor_msgs/JointState`` messages, fast enough for 1 kHz.

    Other joints in the message (gripper fingers, wheels) are ignored, and so is the message's name
    order; the name-to-index map is cached for the last name list seen. :meth:`read` raises
    ``ValueError`` if a requested joint is missing or listed twice, if the positions (and, with
    ``require_velocity``, the velocities) do not match the names in number, and - unless
    ``allow_nonfinite`` - if a position or velocity of a requested joint is NaN or infinite.
    Controllers set ``allow_nonfinite``: they pass such values on to their safety guard, which
    faults at once (rejecting the message would only fault later, when the state goes stale).
    """

    def __init__(self, joint_names: Sequence[str], *, require_velocity: bool = True,
                 allow_nonfinite: bool = False) -> None:
        self.joint_names = tuple(joint_names)
        self.require_velocity = require_velocity
        self.allow_nonfinite = allow_nonfinite
        self._names: tuple[str, ...] | None = None
        self._index: list[int] = []

    def _lookup(self, names: tuple[str, ...]) -> list[int]:
        if names != self._names:
            index: dict[str, int] = {}
            for i, name in enumerate(names):
                if name in index:
                    if name in self.joint_names:
                        raise ValueError(f"joint '{name}' appears more than once in JointState")
                    continue
                index[name] = i
            missing = [name for name in self.joint_names if name not in index]
            if missing:
                raise ValueError(f"joints {missing} missing from JointState (got names {list(names)})")
            self._index = [index[name] for name in self.joint_names]
            self._names = names
        return self._index

    def read(self, msg: Any) -> tuple[Array, Array | None, Array | None]:
        """``(positions, velocities or None, efforts or None)`` of the joints, in the order of
        ``joint_names``; velocities are None only without ``require_velocity``."""
        names = tuple(msg.name)
        index = self._lookup(names)
        n = len(names)
        if len(msg.position) != n:
            raise ValueError(f"JointState has {len(msg.position)} positions for {n} joint names")
        if self.require_velocity and len(msg.velocity) != n:
            raise ValueError(f"JointState has {len(msg.velocity)} velocities for {n} joint names (needed)")
        q = np.asarray(msg.position, dtype=float)[index]
        dq = np.asarray(msg.velocity, dtype=float)[index] if len(msg.velocity) == n else None
        effort = np.asarray(msg.effort, dtype=float)[index] if len(msg.effort) == n else None
        if not self.allow_nonfinite:
            for what, values in (("positions", q), ("velocities", dq)):
                if values is not None and not np.isfinite(values).all():
                    raise ValueError(f"JointState {what} contain NaN or infinite values: {values.tolist()}")
        return q, dq, effort


def joint_trajectory(joint_names: Sequence[str], configurations: Iterable[Any], header: Header) -> JointTrajectory:
    """``trajectory_msgs/JointTrajectory`` with one positions-only point per configuration.

    Every point has ``time_from_start = 0`` (the points are alternatives, not a path); an empty
    ``configurations`` gives a trajectory with the joint names and no points.
    """
    msg = JointTrajectory()
    msg.header = header
    msg.joint_names = list(joint_names)
    for q in configurations:
        q = np.asarray(q, dtype=float)
        if q.shape != (len(joint_names),):
            raise ValueError(f"configuration must have {len(joint_names)} values, got shape {q.shape}")
        msg.points.append(JointTrajectoryPoint(positions=[float(v) for v in q]))
    return msg


def _point_values(point: Any, field: str, order: Sequence[int], k: int) -> Array | None:
    values = getattr(point, field)
    if len(values) == 0:
        return None
    if len(values) != len(order):
        raise ValueError(f"point {k}: {len(values)} {field} for {len(order)} joint names")
    out = np.asarray(values, dtype=float)[list(order)]
    if not np.isfinite(out).all():
        raise ValueError(f"point {k}: {field} contain NaN or infinite values")
    return out


def trajectory_arrays(msg: JointTrajectory, joint_names: Sequence[str]
                      ) -> tuple[Array, Array, Array | None, Array | None]:
    """``(times, positions, velocities, accelerations)`` of a ``trajectory_msgs/JointTrajectory``,
    columns in the order of ``joint_names``.

    ``times`` are the points' ``time_from_start`` [s], strictly increasing; ``positions`` (k, n);
    velocities or accelerations are None unless every point gives them. Raises ``ValueError`` if
    the message does not name exactly ``joint_names`` (any order), a point lacks positions, a
    value is NaN, or the times do not increase.
    """
    names = list(msg.joint_names)
    if sorted(names) != sorted(joint_names) or len(set(names)) != len(names):
        raise ValueError(f"trajectory joint_names {names} must be exactly {list(joint_names)} (any order)")
    order = [names.index(name) for name in joint_names]
    times, positions, velocities, accelerations = [], [], [], []
    for k, point in enumerate(msg.points):
        q = _point_values(point, "positions", order, k)
        if q is None:
            raise ValueError(f"point {k} has no positions")
        times.append(point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec)
        positions.append(q)
        velocities.append(_point_values(point, "velocities", order, k))
        accelerations.append(_point_values(point, "accelerations", order, k))
    t = np.asarray(times, dtype=float)
    if t.size and (t[0] < 0.0 or np.any(np.diff(t) <= 0.0)):
        raise ValueError(f"time_from_start must be non-negative and strictly increasing, got {t.tolist()}")
    n = len(joint_names)

    def stacked(rows: list) -> Array | None:
        return None if not rows or any(r is None for r in rows) else np.asarray(rows).reshape(-1, n)

    return t, np.asarray(positions).reshape(-1, n), stacked(velocities), stacked(accelerations)


def frame_markers(frames: Any, namespaces: Sequence[str], header: Header, scale: float) -> MarkerArray:
    """Coordinate-axis markers of the frames ``(k, 4, 4)``: per frame three ARROW markers.

    Marker ``ns`` is the frame's name, ``id`` 0/1/2 the x/y/z axis (red/green/blue), each arrow
    from the frame origin along the axis with length ``scale`` [m]; not frame-locked.
    """
    frames = np.asarray(frames, dtype=float)
    if frames.ndim != 3 or frames.shape[1:] != (4, 4):
        raise ValueError(f"frames must have shape (k, 4, 4), got {frames.shape}")
    if len(namespaces) != frames.shape[0]:
        raise ValueError(f"{frames.shape[0]} frames but {len(namespaces)} names")
    out = MarkerArray()
    for ns, t in zip(namespaces, frames):
        origin = t[:3, 3]
        for axis in range(3):
            tip = origin + scale * t[:3, axis]
            m = Marker()
            m.header = header
            m.ns = ns
            m.id = axis
            m.type = Marker.ARROW
            m.action = Marker.ADD
            m.frame_locked = False
            m.pose.orientation.w = 1.0  # points are in the header frame
            m.points = [Point(x=float(origin[0]), y=float(origin[1]), z=float(origin[2])),
                        Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2]))]
            m.scale.x = 0.1 * scale  # shaft diameter
            m.scale.y = 0.2 * scale  # head diameter
            m.scale.z = 0.3 * scale  # head length
            m.color = ColorRGBA(r=AXIS_COLORS[axis][0], g=AXIS_COLORS[axis][1], b=AXIS_COLORS[axis][2],
                                a=AXIS_COLORS[axis][3])
            out.markers.append(m)
    return out


def trajectory_message(joint_names: Sequence[str], times: Any, positions: Any, velocities: Any = None,
                       accelerations: Any = None, header: Header | None = None) -> JointTrajectory:
    """``trajectory_msgs/JointTrajectory`` through the waypoints reached ``times`` [s] after its
    start (``time_from_start``), with positions and, when given, velocities and accelerations
    (each (k, n)). The header stamp is left zero by default: "start on receipt"."""
    times = np.asarray(times, dtype=float)
    rows = {"positions": np.asarray(positions, dtype=float)}
    if velocities is not None:
        rows["velocities"] = np.asarray(velocities, dtype=float)
    if accelerations is not None:
        rows["accelerations"] = np.asarray(accelerations, dtype=float)
    n = len(joint_names)
    for name, values in rows.items():
        if values.shape != (times.size, n):
            raise ValueError(f"{name} must have shape ({times.size}, {n}), got {values.shape}")
        if not np.isfinite(values).all():
            raise ValueError(f"{name} contain NaN or infinite values")
    msg = JointTrajectory(joint_names=list(joint_names))
    if header is not None:
        msg.header = header
    for k, t in enumerate(times):
        sec = int(math.floor(t))
        point = JointTrajectoryPoint(**{name: values[k].tolist() for name, values in rows.items()})
        point.time_from_start.sec = sec
        point.time_from_start.nanosec = min(int(round((t - sec) * 1e9)), 999_999_999)
        msg.points.append(point)
    return msg
