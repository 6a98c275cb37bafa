"""The generated URDF (youbot_dynamics/arm/urdf.py, urdf/youbot_arm.urdf) against the arm description."""
from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from youbot_dynamics.arm.kinematics import forward_kinematics, link_frames
from youbot_dynamics.arm.transforms import rot_x, rotation_angle, transform
from youbot_dynamics.arm.urdf import (
    REGENERATE_COMMAND,
    TOOL_JOINT,
    TOOL_LINK,
    axis_link_names,
    default_urdf_path,
    dh_frame_names,
    generate_urdf,
    write_urdf,
)

N_SAMPLES = 1000
TOL = 1e-9


@pytest.fixture(scope="module")
def urdf_text(arm):
    return generate_urdf(arm)


@pytest.fixture(scope="module")
def samples(arm):
    rng = np.random.default_rng(20240521)
    return rng.uniform(arm.position_min, arm.position_max, size=(N_SAMPLES, arm.n_joints))


def dh_offset(arm, i):
    """Fixed transform arm_link_{i+1}_axis -> arm_link_{i+1}: Tz(d) Tx(a) Rx(alpha)."""
    return transform(rot_x(arm.dh_alpha[i]), [arm.dh_a[i], 0.0, arm.dh_d[i]])


# ---------------------------------------------------------------------------------------------
# Checks shared with test_gazebo_description.py (descriptions that contain this URDF)


def assert_dh_inertials(arm, root: ET.Element) -> None:
    """The <inertial> of each DH frame link arm_link_1..n in the XML tree equals the arm description's."""
    links = {link.get("name"): link for link in root.findall("link")}
    for name, nominal in zip(arm.link_names[1:], arm.links):
        inertial = links[name].find("inertial")
        assert float(inertial.find("mass").get("value")) == nominal.mass
        assert [float(v) for v in inertial.find("origin").get("xyz").split()] == list(nominal.com)
        inertia = inertial.find("inertia")
        for key, (r, c) in {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2),
                            "iyz": (1, 2)}.items():
            assert float(inertia.get(key)) == nominal.inertia[r, c], (name, key)


def assert_pinocchio_joints_and_limits(arm, model) -> None:
    """The Pinocchio model has exactly the arm's revolute joints, with its limits."""
    assert model.nq == arm.n_joints and model.nv == arm.n_joints
    assert list(model.names)[1:] == list(arm.joint_names)
    for j in range(1, model.njoints):
        # Pinocchio makes axis (0, 0, -1) a JointModelRevoluteUnaligned (+z would be JointModelRZ).
        kind = model.joints[j].shortname()
        assert model.joints[j].nq == 1 and kind.startswith(("JointModelR", "JointModelRevolute")), kind
    np.testing.assert_array_equal(model.lowerPositionLimit, arm.position_min)
    np.testing.assert_array_equal(model.upperPositionLimit, arm.position_max)
    np.testing.assert_array_equal(model.velocityLimit, arm.velocity_max)
    np.testing.assert_array_equal(model.effortLimit, arm.effort_max)


def assert_pinocchio_frames_match_dh(arm, model, samples) -> None:
    """Pinocchio's poses of the DH frame links and the tool equal the DH model's (to TOL) at ``samples``."""
    import pinocchio

    data = model.createData()
    names = list(dh_frame_names(arm)) + [TOOL_LINK]
    ids = [model.getFrameId(name) for name in names]
    assert all(fid < model.nframes for fid in ids)
    expected = link_frames(arm, samples)  # (M, n+2, 4, 4): frames 0..n and the tool
    got = np.empty_like(expected)
    for k, q in enumerate(samples):
        pinocchio.framesForwardKinematics(model, data, q)
        for f, fid in enumerate(ids):
            got[k, f] = data.oMf[fid].homogeneous
    pos_err = np.linalg.norm(got[..., :3, 3] - expected[..., :3, 3], axis=-1).max()
    rot_err = rotation_angle(got[..., :3, :3], expected[..., :3, :3]).max()
    assert pos_err < TOL, pos_err
    assert rot_err < TOL, rot_err


def assert_pinocchio_inertias_match(arm, model) -> None:
    """The moving bodies of the Pinocchio model carry exactly the arm description's inertials."""
    import pinocchio

    total = sum(link.mass for link in arm.links)
    assert abs(pinocchio.computeTotalMass(model) - total) < 1e-12
    for i, link in enumerate(arm.links):
        # Joint i+1's body = arm_link_i_axis (massless) + arm_link_i, expressed in the joint frame.
        x = dh_offset(arm, i)
        r, p = x[:3, :3], x[:3, 3]
        inertia = model.inertias[model.getJointId(arm.joint_names[i])]
        assert abs(inertia.mass - link.mass) < 1e-12
        np.testing.assert_allclose(inertia.lever, r @ link.com + p, rtol=0, atol=1e-12)
        np.testing.assert_allclose(inertia.inertia, r @ link.inertia @ r.T, rtol=0, atol=1e-12)


def assert_mujoco_matches_dh(arm, model, samples) -> None:
    """MuJoCo's joints, ranges, link masses and forward kinematics (first 200 samples) equal the DH model's."""
    import mujoco

    assert model.njnt == arm.n_joints and model.nq == arm.n_joints
    for i, name in enumerate(arm.joint_names):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        assert jid == i and model.jnt_type[jid] == mujoco.mjtJoint.mjJNT_HINGE
        np.testing.assert_array_equal(model.jnt_range[jid], [arm.position_min[i], arm.position_max[i]])
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
                for name in list(dh_frame_names(arm)) + [TOOL_LINK]]
    assert min(body_ids) >= 0
    for i, link in enumerate(arm.links):
        assert abs(model.body_mass[body_ids[i + 1]] - link.mass) < 1e-12

    data = mujoco.MjData(model)
    subset = samples[:200]
    frames = link_frames(arm, subset)
    tool = forward_kinematics(arm, subset)
    pos_err = rot_err = tool_err = 0.0
    for k, q in enumerate(subset):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        xpos = data.xpos[body_ids]
        xmat = data.xmat[body_ids].reshape(-1, 3, 3)
        pos_err = max(pos_err, float(np.linalg.norm(xpos - frames[k, :, :3, 3], axis=-1).max()))
        rot_err = max(rot_err, float(rotation_angle(xmat, frames[k, :, :3, :3]).max()))
        tool_err = max(tool_err, float(np.linalg.norm(xpos[-1] - tool[k, :3, 3])))
    assert tool_err < TOL, tool_err
    assert pos_err < TOL, pos_err
    assert rot_err < TOL, rot_err


# ---------------------------------------------------------------------------------------------
# Text and XML


def test_shipped_urdf_is_up_to_date(arm, urdf_text):
    path = default_urdf_path()
    assert path.is_file(), f"{path} is missing; generate it with `{REGENERATE_COMMAND}`"
    assert path.read_text() == urdf_text, (
        f"{path} differs from generate_urdf(default_arm()) (config/youbot_arm.yaml changed?); "
        f"regenerate it with `{REGENERATE_COMMAND}`"
    )


def test_generation_is_deterministic(arm, urdf_text):
    assert generate_urdf(arm) == urdf_text
    assert "-0.0 " not in urdf_text and '-0.0"' not in urdf_text
    assert REGENERATE_COMMAND.replace(" --write", "") in urdf_text


def test_write_urdf(arm, urdf_text, tmp_path):
    target = tmp_path / "sub" / "arm.urdf"
    assert write_urdf(arm, target) == target
    assert target.read_text() == urdf_text


def test_xml_structure_and_limits(arm, urdf_text):
    root = ET.fromstring(urdf_text)
    assert root.tag == "robot" and root.get("name") == arm.name
    # No NaN/inf anywhere in numeric attributes.
    for element in root.iter():
        for key, value in element.attrib.items():
            for token in value.split():
                try:
                    number = float(token)
                except ValueError:
                    continue
                assert math.isfinite(number), f"<{element.tag} {key}={value!r}>"
    links = [link.get("name") for link in root.findall("link")]
    expected_links = set(dh_frame_names(arm)) | set(axis_link_names(arm)) | {TOOL_LINK}
    assert sorted(links) == sorted(expected_links)
    joints = {joint.get("name"): joint for joint in root.findall("joint")}
    revolute = [j.get("name") for j in root.findall("joint") if j.get("type") == "revolute"]
    assert revolute == list(arm.joint_names)
    assert joints[TOOL_JOINT].get("type") == "fixed"
    limits = root.findall("joint/limit")
    assert len(limits) == arm.n_joints
    for i, name in enumerate(arm.joint_names):
        limit = joints[name].find("limit")
        assert float(limit.get("lower")) == arm.position_min[i]
        assert float(limit.get("upper")) == arm.position_max[i]
        assert float(limit.get("velocity")) == arm.velocity_max[i]
        assert float(limit.get("effort")) == arm.effort_max[i]
        assert [float(v) for v in joints[name].find("axis").get("xyz").split()] == [0.0, 0.0, arm.direction[i]]
    # Only the DH frames carry inertials, exactly those of the arm description.
    for link in root.findall("link"):
        if link.get("name") not in arm.link_names[1:]:
            assert link.find("inertial") is None, link.get("name")
    assert_dh_inertials(arm, root)


def test_other_arm_changes_urdf(arm, urdf_text):
    """The URDF follows the description (not a hard-coded file)."""
    other = dataclasses.replace(arm, effort_max=arm.effort_max * 2)
    text = generate_urdf(other)
    assert text != urdf_text
    root = ET.fromstring(text)
    efforts = [float(limit.get("effort")) for limit in root.findall("joint/limit")]
    assert efforts == list(arm.effort_max * 2)


# ---------------------------------------------------------------------------------------------
# Pinocchio


@pytest.fixture(scope="module")
def pin_model(urdf_text):
    pinocchio = pytest.importorskip("pinocchio")
    return pinocchio.buildModelFromXML(urdf_text)


def test_pinocchio_joints_and_limits(arm, pin_model):
    assert_pinocchio_joints_and_limits(arm, pin_model)


def test_pinocchio_frames_match_dh(arm, pin_model, samples):
    assert_pinocchio_frames_match_dh(arm, pin_model, samples)


def test_pinocchio_inertias_match_description(arm, pin_model):
    assert_pinocchio_inertias_match(arm, pin_model)


# ---------------------------------------------------------------------------------------------
# MuJoCo


def test_mujoco_loads_and_matches_fk(arm, urdf_text, samples):
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_string(urdf_text)
    assert_mujoco_matches_dh(arm, model, samples)
    assert abs(model.body_mass.sum() - sum(link.mass for link in arm.links)) < 1e-12
