"""ROS messages <-> numpy for the youbot_dynamics nodes (conversions at the message boundary).

Only conversions live here (no kinematics): the nodes call the pure-Python core with numpy arrays
and use these helpers at the message boundary. Everything that comes from a message is validated:
a malformed message raises ``ValueError`` with the reason, so a node can reject it instead of
turning it into a motion.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from geometry_msgs.msg import Inertia, Point, Pose, Quaternion
from rclpy.serialization import deserialize_message
from std_msgs.msg import ColorRGBA, Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from ..arm.description import ArmDescription
from ..control.trajectory import MAX_TRAJECTORY_POINTS
from ..dynamics.payload import Payload
from ..arm.transforms import quaternion_to_rotation, rotation_to_quaternion, transform

__all__ = [
    "stamp_seconds",
    "pose_to_matrix",
    "matrix_to_pose",
    "joint_positions_from_state",
    "JointStateReader",
    "joint_trajectory",
    "trajectory_arrays",
    "serialized_point_count",
    "serialized_trajectory_limit",
    "check_serialized_trajectory",
    "deserialize_trajectory",
    "read_trajectory",
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


def stamp_seconds(stamp: Any) -> float:
    """A header stamp (``builtin_interfaces/Time``) or a ``builtin_interfaces/Duration`` in seconds
    (0.0 for an unset stamp)."""
    return stamp.sec + 1e-9 * stamp.nanosec


def pose_to_matrix(pose: Pose) -> Array:
    """4x4 homogeneous transform of a ``geometry_msgs/Pose``.

    Raises ``ValueError`` if the position is not finite, or if the quaternion contains NaN/inf or
    its norm differs from 1 by more than 1e-3 (:func:`..arm.transforms.quaternion_to_rotation`, which
    normalises within that tolerance: rounded input is accepted).
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


def _point_field(points: Sequence[Any], field: str, order: NDArray[np.intp], required: bool) -> Array | None:
    """The ``field`` rows (k, n) of ``points``, columns in ``order``; None unless every point gives
    it. A point with a wrong number of values, without a ``required`` field, or with a NaN or
    infinite value in a given field raises ``ValueError`` naming the first such point."""
    n = order.size
    rows = [getattr(point, field) for point in points]
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    wrong = np.flatnonzero((lengths != n) & ((lengths != 0) | required))
    if wrong.size:
        k = int(wrong[0])
        raise ValueError(f"point {k} has no {field}" if lengths[k] == 0
                         else f"point {k}: {lengths[k]} {field} for {n} joint names")
    given = lengths == n
    if not given.any():
        return None
    values = np.frombuffer(b"".join(rows), dtype=float).reshape(-1, n)  # the rows are array.array("d")
    finite = np.isfinite(values).all(axis=1)
    if not finite.all():
        raise ValueError(f"point {int(np.flatnonzero(given)[np.argmin(finite)])}: {field} contain NaN or infinite "
                         "values")
    return values[:, order] if given.all() else None


def trajectory_arrays(msg: JointTrajectory, joint_names: Sequence[str], max_points: int = MAX_TRAJECTORY_POINTS
                      ) -> tuple[Array, Array, Array | None, Array | None]:
    """``(times, positions, velocities, accelerations)`` of a ``trajectory_msgs/JointTrajectory``,
    columns in the order of ``joint_names``.

    ``times`` are the points' ``time_from_start`` [s], non-negative and strictly increasing (a first
    point at 0 is the start state: :func:`~youbot_dynamics.motion.trajectory_start.drop_start_point`);
    ``positions`` (k, n); velocities or accelerations are None unless every point gives them.
    Raises ``ValueError`` if the message has more than ``max_points`` points (checked first, before
    any work), does not name exactly ``joint_names`` (any order), a point lacks positions, a value
    is NaN, or the times do not increase. Vectorised: ~1 us per point.
    """
    points = msg.points
    if len(points) > max_points:
        raise ValueError(f"trajectory has {len(points)} points, at most {max_points} are accepted (send a long "
                         "motion in parts)")
    names = list(msg.joint_names)
    if sorted(names) != sorted(joint_names) or len(set(names)) != len(names):
        raise ValueError(f"trajectory joint_names {names} must be exactly {list(joint_names)} (any order)")
    order = np.array([names.index(name) for name in joint_names], dtype=np.intp)
    stamps = np.array([(d.sec, d.nanosec) for d in (point.time_from_start for point in points)],
                      dtype=float).reshape(-1, 2)
    t = stamps[:, 0] + 1e-9 * stamps[:, 1]
    if t.size and (t[0] < 0.0 or np.any(np.diff(t) <= 0.0)):
        bad = 0 if t[0] < 0.0 else int(np.argmax(np.diff(t) <= 0.0)) + 1
        raise ValueError(f"time_from_start must be non-negative and strictly increasing: point {bad} at "
                         f"{t[bad]:.9g} s" + ("" if bad == 0 else f" after {t[bad - 1]:.9g} s"))
    positions = _point_field(points, "positions", order, required=True)
    return (t, np.empty((0, order.size)) if positions is None else positions,
            _point_field(points, "velocities", order, required=False),
            _point_field(points, "accelerations", order, required=False))


def serialized_point_count(data: bytes) -> int | None:
    """Number of points of a serialized ``trajectory_msgs/JointTrajectory`` (what a ``raw``
    subscription delivers), read from the prefix of the CDR data without deserializing it (O(number
    of joint names)); None if the data is too short for it (malformed: deserializing will tell).

    Layout: 4 bytes of encapsulation (representation id, big endian; odd = little endian data),
    ``header.stamp`` (2 x 4 bytes), ``header.frame_id`` (uint32 length including the terminating
    NUL, the bytes), ``joint_names`` (uint32 count, then each string as before), ``points`` (uint32
    count); every uint32 aligned to 4 bytes from the end of the encapsulation. The same in XCDR1
    and XCDR2 (no 8-byte alignment and no member headers before the point count).
    """
    if len(data) < 4:
        return None
    fmt = "<I" if data[1] & 1 else ">I"
    offset = 12  # encapsulation, stamp

    def uint32() -> int:
        nonlocal offset
        offset = 4 + (offset - 1 & ~3)  # = 4 + round_up(offset - 4, 4)
        if offset + 4 > len(data):
            raise IndexError
        (value,) = struct.unpack_from(fmt, data, offset)
        offset += 4
        return value

    def skip_string() -> None:
        nonlocal offset
        length = uint32()
        offset += length

    try:
        skip_string()  # frame_id
        for _ in range(min(uint32(), len(data))):  # joint names
            skip_string()
        return uint32()
    except IndexError:
        return None


def serialized_trajectory_limit(n_joints: int, max_points: int = MAX_TRAJECTORY_POINTS) -> int:
    """Largest accepted size [bytes] of a serialized ``JointTrajectory``: ``max_points`` points
    with positions, velocities, accelerations and efforts of ``n_joints`` joints, plus 64 KiB for
    the header and joint names (a bound on deserialization work when the point count is unread)."""
    return max_points * (8 + 4 * (8 + 8 * n_joints)) + 65536


def check_serialized_trajectory(data: bytes, n_joints: int, max_points: int = MAX_TRAJECTORY_POINTS) -> int | None:
    """Before deserializing (cheap, in a subscription callback): the number of points of a
    serialized ``JointTrajectory`` (:func:`serialized_point_count`; None if unreadable); raises
    ``ValueError`` if it exceeds ``max_points`` or the data exceed :func:`serialized_trajectory_limit`."""
    count = serialized_point_count(data)
    if count is not None and count > max_points:
        raise ValueError(f"trajectory has {count} points, at most {max_points} are accepted (send a long motion "
                         "in parts)")
    limit = serialized_trajectory_limit(n_joints, max_points)
    if len(data) > limit:
        raise ValueError(f"trajectory message of {len(data)} bytes, at most {limit} are accepted")
    return count


def read_trajectory(data: bytes, joint_names: Sequence[str], max_points: int = MAX_TRAJECTORY_POINTS
                    ) -> tuple[Array, Array, Array | None, Array | None]:
    """:func:`trajectory_arrays` of a serialized ``JointTrajectory``, checked by
    :func:`check_serialized_trajectory` before it is deserialized (deserializing costs ~25 us
    per point: do it outside a control thread)."""
    return trajectory_arrays(deserialize_trajectory(data, len(joint_names), max_points), joint_names, max_points)


def deserialize_trajectory(data: bytes, n_joints: int, max_points: int = MAX_TRAJECTORY_POINTS) -> JointTrajectory:
    """The ``JointTrajectory`` of a serialized one (what a ``raw`` subscription receives), checked
    by :func:`check_serialized_trajectory` first: a message of more than ``max_points`` points is
    refused (``ValueError``) before any deserializing work (60,000 points held ``sim_node``'s
    executor 179 ms)."""
    check_serialized_trajectory(data, n_joints, max_points)
    try:
        return deserialize_message(data, JointTrajectory)
    except RuntimeError as exc:  # rclpy's RMWError
        raise ValueError(f"malformed trajectory message ({exc})") from None


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


def payload_from_message(msg: Inertia, arm: ArmDescription) -> Payload:
    """The payload of an ``Inertia`` message: mass [kg], centre of mass in the tool frame [m], inertia
    about it [kg m^2] (:meth:`~youbot_dynamics.dynamics.payload.Payload.of`: ``ValueError`` if impossible)."""
    inertia = [[msg.ixx, msg.ixy, msg.ixz], [msg.ixy, msg.iyy, msg.iyz], [msg.ixz, msg.iyz, msg.izz]]
    return Payload.of(msg.m, [msg.com.x, msg.com.y, msg.com.z], inertia, arm=arm)


def check_frame(frame_id: str, base_frame: str) -> None:
    """``ValueError`` unless ``frame_id`` is empty or ``base_frame`` (a pose in another frame: no tf2 here)."""
    if frame_id and frame_id != base_frame:
        raise ValueError(f"frame '{frame_id}' is not the base frame '{base_frame}' (no tf2 here)")


def move_hint(topic: str, joint_names: Sequence[str], refused: Any) -> str:
    """For a refusal ``refused`` too far from the start pose (``q_start``, the approach's ``duration``):
    the command that moves the arm there on the drives' trajectory ``topic``, as slowly as the approach
    would."""
    point = (f"{{positions: {np.round(refused.q_start, 4).tolist()}, time_from_start: "
             f"{{sec: {math.ceil(refused.duration)}}}}}")
    return (f"; to move it there: ros2 topic pub --once {topic} trajectory_msgs/msg/JointTrajectory "
            f"\"{{joint_names: {list(joint_names)}, points: [{point}]}}\"")
