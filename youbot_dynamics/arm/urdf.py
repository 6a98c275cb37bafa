"""URDF of the arm, generated from the arm description (the single source of truth).

A standard DH step ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` cannot be one URDF joint when
``a_i != 0``: a URDF joint axis passes through the origin of its child frame. Each DH step therefore
becomes two URDF joints:

* revolute ``arm_joint_i``: ``arm_link_{i-1}`` (DH frame i-1) -> ``arm_link_i_axis``, origin
  ``rpy = (0, 0, theta_offset_i)``, axis ``(0, 0, direction_i)``, so the child frame is
  ``Rz(theta_offset_i + direction_i q_i) = Rz(theta_i)`` of DH frame i-1 and the URDF joint
  position equals the driver angle ``q_i``;
* fixed ``arm_link_i_dh_joint``: ``arm_link_i_axis`` -> ``arm_link_i`` with origin
  ``Tz(d_i) Tx(a_i) Rx(alpha_i)`` (``xyz = (a_i, 0, d_i)``, ``rpy = (alpha_i, 0, 0)``), so
  ``arm_link_i`` IS DH frame i and carries the link inertial of the arm description unchanged.

A fixed ``arm_tool_joint`` adds the tool frame ``arm_tool``. Visual and collision geometry are
plain cylinders and boxes along the DH segments (no meshes). The ``<mujoco>`` extension element
lets MuJoCo's URDF importer keep every link as its own body; other URDF parsers ignore it.

Regenerate the shipped ``urdf/youbot_arm.urdf`` with ``python -m youbot_dynamics urdf --write``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable
from xml.sax.saxutils import quoteattr

import numpy as np

from .description import ArmDescription
from ..files.fileio import atomic_write_text
from ..files.paths import share_directory
from .transforms import rotation_to_rpy

__all__ = [
    "TOOL_LINK",
    "TOOL_JOINT",
    "URDF_FILE_NAME",
    "dh_frame_names",
    "axis_link_names",
    "generate_urdf",
    "default_urdf_path",
    "write_urdf",
]

TOOL_LINK = "arm_tool"
TOOL_JOINT = "arm_tool_joint"
URDF_FILE_NAME = "youbot_arm.urdf"
REGENERATE_COMMAND = "python -m youbot_dynamics urdf --write"

# Cosmetic geometry (visual/collision only; no effect on kinematics or dynamics) [m].
_LINK_RADIUS = 0.03
_HOUSING_RADIUS = 0.04
_HOUSING_LENGTH = 0.08
_BASE_BOX = (0.2, 0.16, 0.05)
_GRIPPER_BOX = (0.02, 0.07, 0.04)
_GEOMETRY_DIGITS = 12  # geometry numbers are rounded so float noise (6e-17) does not show up


def dh_frame_names(arm: ArmDescription) -> tuple[str, ...]:
    """URDF link names of the DH frames 0..n (``arm.link_names``; index i is DH frame i)."""
    return tuple(arm.link_names)


def axis_link_names(arm: ArmDescription) -> tuple[str, ...]:
    """Names of the intermediate links ``<link_i>_axis`` (i = 1..n), the children of the revolute joints."""
    return tuple(f"{name}_axis" for name in arm.link_names[1:])


def _num(x: float) -> str:
    """Full-precision, deterministic number (``repr``), ``-0.0`` written as ``0.0``."""
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"non-finite number in URDF: {value}")
    return repr(value + 0.0)


def _geo(x: float) -> str:
    """Number of the cosmetic geometry (rounded to hide float noise)."""
    return _num(round(float(x), _GEOMETRY_DIGITS))


def _nums(values: Iterable[float], fmt=_num) -> str:
    return " ".join(fmt(v) for v in values)


def _origin(xyz: Iterable[float], rpy: Iterable[float], fmt=_num) -> str:
    return f'<origin xyz="{_nums(xyz, fmt)}" rpy="{_nums(rpy, fmt)}"/>'


def _shape(kind: str, origin: str, geometry: str, material: str) -> list[str]:
    lines = [f"    <{kind}>", f"      {origin}", f"      <geometry>{geometry}</geometry>"]
    if kind == "visual":
        lines.append(f'      <material name="{material}"/>')
    lines.append(f"    </{kind}>")
    return lines


def _cylinder_between(p0: np.ndarray, p1: np.ndarray, radius: float) -> tuple[str, str] | None:
    """Origin and geometry of a cylinder from p0 to p1 (URDF cylinders lie along their z axis)."""
    u = np.asarray(p1, dtype=float) - np.asarray(p0, dtype=float)
    length = float(np.linalg.norm(u))
    if length < 1e-9:
        return None
    mid = 0.5 * (np.asarray(p0, dtype=float) + np.asarray(p1, dtype=float))
    # Rz(yaw) Ry(pitch) maps z onto u.
    pitch = math.atan2(math.hypot(u[0], u[1]), u[2])
    yaw = math.atan2(u[1], u[0]) if math.hypot(u[0], u[1]) > 1e-12 else 0.0
    return (
        _origin(mid, (0.0, pitch, yaw), _geo),
        f'<cylinder radius="{_geo(radius)}" length="{_geo(length)}"/>',
    )


def _link_shapes(arm: ArmDescription, index: int) -> list[tuple[str, str, str]]:
    """(origin, geometry, material) of the cosmetic shapes of link ``index`` (0 = base), in its DH frame."""
    shapes: list[tuple[str, str, str]] = []
    n = arm.n_joints
    if index == 0:
        bx, by, bz = _BASE_BOX
        shapes.append((_origin((0.0, 0.0, -0.5 * bz), (0.0, 0.0, 0.0), _geo),
                       f'<box size="{_nums(_BASE_BOX, _geo)}"/>', "youbot_grey"))
    else:
        i = index - 1
        a, d, alpha = arm.dh_a[i], arm.dh_d[i], arm.dh_alpha[i]
        # Points of the DH path Tz(d) Tx(a) Rx(alpha) from joint axis i to this frame, expressed in
        # this frame: previous origin, the corner after Tz(d), the origin.
        ca, sa = math.cos(alpha), math.sin(alpha)
        rx_t = np.array([[1.0, 0.0, 0.0], [0.0, ca, sa], [0.0, -sa, ca]])  # Rx(alpha)^T
        start = rx_t @ np.array([-a, 0.0, -d])
        corner = np.array([-a, 0.0, 0.0])
        for p0, p1 in ((start, corner), (corner, np.zeros(3))):
            cyl = _cylinder_between(p0, p1, _LINK_RADIUS)
            if cyl is not None:
                shapes.append((cyl[0], cyl[1], "youbot_orange"))
    if index < n:
        # Housing of the next joint: along z of this DH frame, centred on its origin.
        shapes.append((_origin((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), _geo),
                       f'<cylinder radius="{_geo(_HOUSING_RADIUS)}" length="{_geo(_HOUSING_LENGTH)}"/>',
                       "youbot_grey"))
    else:
        shapes.append((_origin((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), _geo),
                       f'<box size="{_nums(_GRIPPER_BOX, _geo)}"/>', "youbot_grey"))
    return shapes


def _link(arm: ArmDescription, index: int) -> list[str]:
    name = arm.link_names[index]
    lines = [f"  <link name={quoteattr(name)}>"]
    if index > 0:
        inertial = arm.links[index - 1]
        i = inertial.inertia
        lines += [
            "    <inertial>",
            f"      {_origin(inertial.com, (0.0, 0.0, 0.0))}",
            f'      <mass value="{_num(inertial.mass)}"/>',
            f'      <inertia ixx="{_num(i[0, 0])}" ixy="{_num(i[0, 1])}" ixz="{_num(i[0, 2])}"'
            f' iyy="{_num(i[1, 1])}" iyz="{_num(i[1, 2])}" izz="{_num(i[2, 2])}"/>',
            "    </inertial>",
        ]
    for origin, geometry, material in _link_shapes(arm, index):
        lines += _shape("visual", origin, geometry, material)
        lines += _shape("collision", origin, geometry, material)
    lines.append("  </link>")
    return lines


def _joint(name: str, kind: str, parent: str, child: str, origin: str, extra: Iterable[str] = ()) -> list[str]:
    return [
        f"  <joint name={quoteattr(name)} type=\"{kind}\">",
        f"    <parent link={quoteattr(parent)}/>",
        f"    <child link={quoteattr(child)}/>",
        f"    {origin}",
        *(f"    {line}" for line in extra),
        "  </joint>",
    ]


def _header_lines(arm: ArmDescription) -> list[str]:
    # An XML comment cannot contain "--", so the command's "--write" is spelled out in words.
    lines = [
        f"GENERATED FILE - do not edit. URDF of '{arm.name.replace('--', '- -')}' generated from the arm description",
        "(config/youbot_arm.yaml) by youbot_dynamics/arm/urdf.py. To regenerate it, run",
        f"  {REGENERATE_COMMAND.replace(' --write', '')}",
        "with the write option (double dash + write; an XML comment cannot hold a double dash).",
        "Link arm_link_i is DH frame i (seed 002, standard DH); arm_link_i_axis is the frame",
        "Rz(theta_i) of DH frame i-1 that the revolute joint arm_joint_i moves. Joint positions",
        "are the youBot driver angles q (the joint axis carries the DH direction).",
    ]
    assert not any("--" in line for line in lines)
    return lines


def generate_urdf(arm: ArmDescription) -> str:
    """URDF XML of ``arm`` (deterministic text; see the module docstring for the structure)."""
    links = dh_frame_names(arm)
    axis_links = axis_link_names(arm)
    out = [
        '<?xml version="1.0"?>',
        "<!--",
        *(f"  {line}" for line in _header_lines(arm)),
        "-->",
        f"<robot name={quoteattr(arm.name)}>",
        "  <!-- For MuJoCo's URDF import: keep every link as a body, take masses only from the",
        "       inertial elements. Other URDF parsers ignore this element. -->",
        "  <mujoco>",
        '    <compiler discardvisual="true" fusestatic="false" inertiafromgeom="false"/>',
        "  </mujoco>",
        '  <material name="youbot_orange">',
        '    <color rgba="1.0 0.55 0.0 1.0"/>',
        "  </material>",
        '  <material name="youbot_grey">',
        '    <color rgba="0.3 0.3 0.3 1.0"/>',
        "  </material>",
        "",
    ]
    out += _link(arm, 0)
    for i in range(arm.n_joints):
        out.append("")
        out += _joint(
            arm.joint_names[i], "revolute", links[i], axis_links[i],
            _origin((0.0, 0.0, 0.0), (0.0, 0.0, arm.theta_offset[i])),
            (
                f'<axis xyz="{_nums((0.0, 0.0, arm.direction[i]))}"/>',
                f'<limit lower="{_num(arm.position_min[i])}" upper="{_num(arm.position_max[i])}"'
                f' effort="{_num(arm.effort_max[i])}" velocity="{_num(arm.velocity_max[i])}"/>',
            ),
        )
        out += [f"  <link name={quoteattr(axis_links[i])}/>"]
        out += _joint(
            f"{links[i + 1]}_dh_joint", "fixed", axis_links[i], links[i + 1],
            _origin((arm.dh_a[i], 0.0, arm.dh_d[i]), (arm.dh_alpha[i], 0.0, 0.0)),
        )
        out += _link(arm, i + 1)
    out.append("")
    out += _joint(TOOL_JOINT, "fixed", links[-1], TOOL_LINK,
                  _origin(arm.tool[:3, 3], rotation_to_rpy(arm.tool[:3, :3])))
    out += [f"  <link name={quoteattr(TOOL_LINK)}/>", "</robot>", ""]
    return "\n".join(out)


def default_urdf_path() -> Path:
    """Path of the shipped URDF: ``<share>/urdf/youbot_arm.urdf``."""
    return share_directory() / "urdf" / URDF_FILE_NAME


def write_urdf(arm: ArmDescription, path: str | Path | None = None) -> Path:
    """Write :func:`generate_urdf` of ``arm`` to ``path`` (default :func:`default_urdf_path`); returns the path."""
    path = Path(path) if path is not None else default_urdf_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, generate_urdf(arm))
    return path
