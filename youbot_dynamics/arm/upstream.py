"""Import of the youbot_description (ROS 1) URDF inertials into the DH link frames.

The upstream URDF (``config/youbot_description_upstream.yaml``, copied verbatim) puts its link
frames at the joints with axes along ``z`` (joints 1, 5) or ``y`` (joints 2-4); the arm
description uses the DH frames of seed 002. Both frames of a link are attached to the same body,
so one constant rigid transform ``X_i`` maps one into the other:

``X_i = T_up_i(q)^-1  B  T_dh_i(q)``

where ``T_up_i`` is the upstream URDF forward kinematics of link i, ``T_dh_i`` the DH forward
kinematics and ``B`` the pose of DH frame 0 in the upstream ``arm_link_0``. ``B`` puts the DH
base on the joint-1 axis at the height that makes the joint-2 axes coincide, rotated about z by
the difference of the joint-1 zero angles (upstream 170 deg, seed 169 deg).

The two kinematic models are not identical (joint-1 zero differs by 1 deg, the upstream joint 5
is offset 2 mm from the joint-4 plane, the DH frame 5 sits at the tool point), so ``X_i`` is
evaluated at a reference configuration ``q_ref`` (the middle of the joint ranges); the residual
variation over the workspace is reported by :func:`frame_mismatch`: below 4 mm, rotations exact.
The inertia is then re-expressed: ``com_dh = X^-1 com_up``, ``I_dh = R^T I_up R``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .description import ArmDescription, ArmDescriptionError, LinkInertial, _get, _link_inertial, _vector
from ..files.fileio import atomic_write_text, load_yaml, read_text
from .kinematics import link_frames
from ..files.paths import config_path
from .transforms import invert_transform, rot_z, rpy_to_rotation, transform

__all__ = ["UpstreamArm", "load_upstream", "upstream_link_frames", "dh_base_in_upstream",
           "link_frame_offsets", "reference_configuration", "frame_mismatch", "convert_upstream_inertials",
           "links_yaml_block", "write_links_block"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class UpstreamArm:
    joint_origins: tuple[Array, ...]  # 4x4 joint origin in the parent link frame
    joint_axes: tuple[Array, ...]
    links: tuple[LinkInertial, ...]  # in the upstream link frames


def load_upstream(path: str | Path | None = None) -> UpstreamArm:
    """Read and check ``config/youbot_description_upstream.yaml`` (the arm description's checks of
    numbers and inertials); :class:`ArmDescriptionError` naming the file and the key."""
    path = Path(path) if path is not None else config_path("youbot_description_upstream.yaml")
    doc = load_yaml(path, ArmDescriptionError, "upstream description")
    try:
        if not isinstance(doc, dict):
            raise ArmDescriptionError("missing top-level key 'upstream'")
        up = _get(doc, "upstream", "top level")
        joints, links = (_get(up, key, "upstream") for key in ("joints", "links"))
        if not isinstance(joints, list) or not isinstance(links, list) or not joints or len(joints) != len(links):
            raise ArmDescriptionError("upstream.joints, upstream.links: expected two lists of one entry per joint")
        where = [f"upstream.joints[{i}]" for i in range(len(joints))]
        origins = tuple(transform(rpy_to_rotation(_vector(j, "rpy", w, 3)), _vector(j, "xyz", w, 3))
                        for j, w in zip(joints, where))
        axes = tuple(_vector(j, "axis", w, 3) for j, w in zip(joints, where))
        inertials = tuple(_link_inertial(node, f"upstream.links[{i}]") for i, node in enumerate(links))
    except ArmDescriptionError as exc:
        raise ArmDescriptionError(f"{path}: {exc}") from None
    return UpstreamArm(origins, axes, inertials)


def _axis_rotation(axis: Array, angle: Array) -> Array:
    """Rodrigues rotation about a unit axis, batched over ``angle``."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    a = np.asarray(angle, dtype=float)[..., None, None]
    return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * (k @ k)


def upstream_link_frames(up: UpstreamArm, q: Any) -> Array:
    """Upstream URDF poses of arm_link_1..n in arm_link_0, shape (..., n, 4, 4)."""
    q = np.asarray(q, dtype=float)
    n = len(up.joint_origins)
    out = np.empty(q.shape[:-1] + (n, 4, 4))
    current = np.broadcast_to(np.eye(4), q.shape[:-1] + (4, 4))
    for i in range(n):
        motion = transform(_axis_rotation(up.joint_axes[i], q[..., i]), np.zeros(3))
        current = current @ up.joint_origins[i] @ motion
        out[..., i, :, :] = current
    return out


def dh_base_in_upstream(arm: ArmDescription, up: UpstreamArm) -> Array:
    """Pose ``B`` of DH frame 0 in the upstream ``arm_link_0`` (see the module docstring)."""
    joint1 = up.joint_origins[0]
    joint2_height = joint1[2, 3] + up.joint_origins[1][2, 3]
    yaw_up = np.arctan2(joint1[1, 0], joint1[0, 0])  # upstream joint-1 zero angle
    yaw = yaw_up - arm.theta_offset[0]
    return transform(rot_z(yaw), [joint1[0, 3], joint1[1, 3], joint2_height - arm.dh_d[0]])


def link_frame_offsets(arm: ArmDescription, up: UpstreamArm, q: Any) -> Array:
    """``X_i(q) = T_up_i^-1 B T_dh_i``: DH frame of link i in its upstream frame, (..., n, 4, 4)."""
    base = dh_base_in_upstream(arm, up)
    t_up = upstream_link_frames(up, q)
    t_dh = link_frames(arm, q, include_tool=False)[..., 1:, :, :]
    return invert_transform(t_up) @ base @ t_dh


def reference_configuration(arm: ArmDescription) -> Array:
    """Middle of the joint ranges, where the offsets ``X_i`` are evaluated."""
    return 0.5 * (arm.position_min + arm.position_max)


def frame_mismatch(arm: ArmDescription, up: UpstreamArm, q: Any) -> tuple[float, float]:
    """Largest change of ``X_i`` from its reference value over configurations ``q``: (metres, radians)."""
    ref = link_frame_offsets(arm, up, reference_configuration(arm))
    x = link_frame_offsets(arm, up, q)
    dpos = np.linalg.norm(x[..., :3, 3] - ref[:, :3, 3], axis=-1).max()
    drot = np.abs(x[..., :3, :3] - ref[:, :3, :3]).max()
    return float(dpos), float(drot)


def convert_upstream_inertials(arm: ArmDescription, up: UpstreamArm | None = None) -> list[LinkInertial]:
    """The upstream inertials re-expressed in the DH link frames of ``arm``."""
    up = up if up is not None else load_upstream()
    if len(up.links) != arm.n_joints:
        raise ArmDescriptionError(f"upstream description has {len(up.links)} links, the arm {arm.n_joints}")
    offsets = link_frame_offsets(arm, up, reference_configuration(arm))
    out = []
    for link, x in zip(up.links, offsets):
        inv = invert_transform(x)
        com = inv[:3, :3] @ link.com + inv[:3, 3]
        rot = x[:3, :3]
        out.append(LinkInertial(mass=link.mass, com=com, inertia=rot.T @ link.inertia @ rot))
    return out


def links_yaml_block(links: list[LinkInertial]) -> str:
    """The ``links:`` list of ``config/youbot_arm.yaml`` for these inertials (full precision)."""
    rows = []
    for link in links:
        i = link.inertia
        six = [i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]]
        fmt = lambda v: ", ".join(repr(float(round(x, 15)) + 0.0) for x in v)  # noqa: E731 (+0.0: no -0.0)
        rows.append(f"    - {{mass: {link.mass!r}, com: [{fmt(link.com)}], inertia: [{fmt(six)}]}}")
    return "  links:\n" + "\n".join(rows) + "\n"


def write_links_block(path: str | Path, links: list[LinkInertial]) -> None:
    """Replace the ``  links:`` block (the last key of the file) of an arm description YAML (atomically)."""
    path = Path(path)
    text = read_text(path, ArmDescriptionError, "arm description")
    marker = "\n  links:\n"
    if marker not in text:
        raise ArmDescriptionError(f"{path}: no '  links:' block to replace")
    atomic_write_text(path, text[: text.index(marker) + 1] + links_yaml_block(links))
