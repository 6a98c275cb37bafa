"""Import of the youbot_description inertials into the DH link frames (youbot_dynamics.arm.upstream).

Independent checks: the DH base pose in the upstream base is rebuilt from the numbers in the
URDF joint table (hardware notes) and seed 002; the conversion must preserve the physics of the
whole arm: total mass, the centre of mass in the world (from the upstream URDF kinematics with
the upstream inertials versus the DH kinematics with the converted ones) and the inertia about it.
"""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.arm.kinematics import link_frames
from youbot_dynamics.arm.transforms import invert_transform, rot_z, transform
from youbot_dynamics.arm.upstream import (
    convert_upstream_inertials,
    dh_base_in_upstream,
    frame_mismatch,
    link_frame_offsets,
    load_upstream,
    reference_configuration,
    upstream_link_frames,
)

SEED = 99
MISMATCH_M = 4e-3  # the two kinematic models differ by up to 4 mm (see upstream.py)


@pytest.fixture(scope="module")
def up():
    return load_upstream()


@pytest.fixture(scope="module")
def converted(arm, up):
    return convert_upstream_inertials(arm, up)


def random_q(arm, n, seed=SEED):
    rng = np.random.default_rng(seed)
    return rng.uniform(arm.position_min, arm.position_max, size=(n, arm.n_joints))


def test_shipped_inertials_equal_the_conversion(arm, converted):
    assert len(converted) == len(arm.links) == 5
    for shipped, conv in zip(arm.links, converted):
        assert shipped.mass == conv.mass
        np.testing.assert_allclose(shipped.com, conv.com, atol=1e-12, rtol=0)
        np.testing.assert_allclose(shipped.inertia, conv.inertia, atol=1e-12, rtol=0)


def test_upstream_file_matches_the_hardware_notes(up):
    """URDF joint table: xyz and rpy (degrees) of arm_joint_1..5, masses of the links."""
    xyz = [[0.024, 0, 0.096], [0.033, 0, 0.019], [0, 0, 0.155], [0, 0, 0.135], [-0.002, 0, 0.130]]
    for origin, expected in zip(up.joint_origins, xyz):
        np.testing.assert_allclose(origin[:3, 3], expected, atol=1e-15)
    yaw_1 = np.arctan2(up.joint_origins[0][1, 0], up.joint_origins[0][0, 0])
    assert np.degrees(yaw_1) == pytest.approx(170.0, abs=1e-12)
    assert [link.mass for link in up.links] == [2.412, 1.155, 0.934, 0.877, 0.251]


def test_dh_base_pose_from_the_joint_table(arm, up):
    """DH frame 0 sits on the joint-1 axis (x = 0.024 m in arm_link_0), the joint-2 axis at height
    d1 above it (0.096 + 0.019 - 0.147), turned by the joint-1 zero difference 170 - 169 deg."""
    expected = transform(rot_z(np.radians(170.0 - 169.0)), [0.024, 0.0, 0.096 + 0.019 - 0.147])
    np.testing.assert_allclose(dh_base_in_upstream(arm, up), expected, atol=1e-15)


def test_frame_offsets_are_constant_rigid_transforms(arm, up):
    q = random_q(arm, 500)
    ref = link_frame_offsets(arm, up, reference_configuration(arm))
    x = link_frame_offsets(arm, up, q)
    assert x.shape == (500, 5, 4, 4)
    np.testing.assert_allclose(x[..., :3, :3], np.broadcast_to(ref[:, :3, :3], x[..., :3, :3].shape), atol=1e-12)
    drift = np.linalg.norm(x[..., :3, 3] - ref[:, :3, 3], axis=-1)
    assert drift.max() < MISMATCH_M
    dpos, drot = frame_mismatch(arm, up, q)
    assert dpos == pytest.approx(drift.max(), abs=1e-15) and dpos < MISMATCH_M
    assert drot < 1e-12
    np.testing.assert_allclose(reference_configuration(arm), 0.5 * (arm.position_min + arm.position_max))


def test_total_mass_preserved(arm, up, converted):
    total = sum(link.mass for link in up.links)
    assert sum(link.mass for link in converted) == pytest.approx(total, abs=1e-15)
    assert sum(link.mass for link in arm.links) == pytest.approx(total, abs=1e-15)


def test_converted_inertias_are_rotations_of_the_upstream_ones(up, converted):
    """Principal moments and the trace do not depend on the frame the tensor is expressed in."""
    for a, b in zip(up.links, converted):
        np.testing.assert_allclose(np.linalg.eigvalsh(a.inertia), np.linalg.eigvalsh(b.inertia), atol=1e-15)
        np.testing.assert_allclose(np.trace(a.inertia), np.trace(b.inertia), atol=1e-15)


def composite(frames, links):
    """Mass, centre of mass and inertia about it (world axes) of bodies with poses ``frames`` (..., n, 4, 4)."""
    masses = np.array([link.mass for link in links])
    coms = np.einsum("...nij,nj->...ni", frames[..., :3, :3], np.array([link.com for link in links]))
    coms = coms + frames[..., :3, 3]
    total = masses.sum()
    com = np.einsum("n,...ni->...i", masses, coms) / total
    inertia = np.zeros(com.shape + (3,))
    for i, link in enumerate(links):
        r = frames[..., i, :3, :3]
        d = coms[..., i, :] - com
        inertia = inertia + r @ link.inertia @ np.swapaxes(r, -1, -2)
        inertia = inertia + masses[i] * (np.einsum("...i,...i->...", d, d)[..., None, None] * np.eye(3)
                                         - d[..., :, None] * d[..., None, :])
    return total, com, inertia


def world_composites(arm, up, converted, q):
    """Both models in the DH base frame: the upstream one mapped by the rebuilt base pose."""
    base = transform(rot_z(np.radians(170.0 - 169.0)), [0.024, 0.0, 0.096 + 0.019 - 0.147])
    up_in_dh_base = invert_transform(base) @ upstream_link_frames(up, q)
    dh = link_frames(arm, q, include_tool=False)[..., 1:, :, :]
    return composite(up_in_dh_base, up.links), composite(dh, converted)


def test_centre_of_mass_agrees_over_the_workspace(arm, up, converted):
    (m_up, c_up, _), (m_dh, c_dh, _) = world_composites(arm, up, converted, random_q(arm, 1000, SEED + 1))
    assert m_up == pytest.approx(m_dh, abs=1e-15)
    err = np.linalg.norm(c_up - c_dh, axis=-1)
    assert err.max() < MISMATCH_M
    # and it is a real comparison: the centre of mass moves by decimetres over the workspace
    assert np.ptp(c_dh, axis=0).max() > 0.1


def test_composite_inertia_agrees_at_the_reference_configuration(arm, up, converted):
    q_ref = reference_configuration(arm)
    (_, c_up, i_up), (_, c_dh, i_dh) = world_composites(arm, up, converted, q_ref)
    np.testing.assert_allclose(c_up, c_dh, atol=1e-12)
    np.testing.assert_allclose(i_up, i_dh, atol=1e-12)


def test_shipped_inertials_reproduce_the_upstream_arm(arm, up):
    """The values in config/youbot_arm.yaml (not just the function output) carry the same physics."""
    q_ref = reference_configuration(arm)
    (_, c_up, i_up), (_, c_dh, i_dh) = world_composites(arm, up, list(arm.links), q_ref)
    np.testing.assert_allclose(c_up, c_dh, atol=1e-12)
    np.testing.assert_allclose(i_up, i_dh, atol=1e-12)
