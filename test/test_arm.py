"""The arm description (config/youbot_arm.yaml) and its validation (youbot_dynamics.arm.description).

Expected values: seed 002 Table 2.1 (DH parameters, offsets in degrees) and the hardware facts in
../shared/youbot_hardware.md (driver tick limits, gear ratios, torque constants, currents),
recomputed here from those raw numbers.
"""
from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
import yaml

from youbot_dynamics.arm.description import ArmDescriptionError, default_arm, load_arm
from youbot_dynamics.files.paths import config_path


@pytest.fixture(scope="module")
def raw_doc():
    return yaml.safe_load(config_path("youbot_arm.yaml").read_text())


def write(tmp_path, doc, name="arm.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_default_arm_loads(arm):
    assert arm.n_joints == 5
    assert arm.joint_names == tuple(f"arm_joint_{i}" for i in range(1, 6))
    assert arm.link_names == tuple(f"arm_link_{i}" for i in range(0, 6))
    assert len(arm.links) == 5
    assert default_arm() is arm  # cached


def test_default_arm_equals_explicit_load(arm):
    again = load_arm(config_path("youbot_arm.yaml"))
    np.testing.assert_array_equal(again.dh_a, arm.dh_a)
    np.testing.assert_array_equal(again.position_max, arm.position_max)


def test_dh_table_is_seed_002_table_2_1(arm):
    np.testing.assert_allclose(arm.dh_a, [0.033, 0.155, 0.135, 0.0, 0.0], atol=0)
    np.testing.assert_allclose(arm.dh_d, [0.147, 0.0, 0.0, 0.0, 0.218], atol=0)
    np.testing.assert_allclose(arm.dh_alpha, [math.pi / 2, 0, 0, math.pi / 2, 0], atol=1e-15)
    offsets_deg = [169.0, 65.0 + 90.0, -146.0, 102.5 + 90.0, 167.5]
    np.testing.assert_allclose(arm.theta_offset, np.radians(offsets_deg), atol=1e-14)
    np.testing.assert_array_equal(arm.direction, [-1, -1, -1, -1, -1])  # theta = offset - q
    np.testing.assert_allclose(arm.theta([0.1, 0.2, 0.3, 0.4, 0.5]),
                               np.radians(offsets_deg) - [0.1, 0.2, 0.3, 0.4, 0.5], atol=1e-14)
    theta = np.array([0.3, -1.0, 2.0, 0.5, 4.0])
    np.testing.assert_allclose(arm.theta(arm.q_from_theta(theta)), theta, atol=1e-14)


def test_joint_limits_are_the_driver_tick_limits(arm):
    """youbot-manipulator.cfg: angle = ticks / 4000 / gear_ratio * 2 pi (sign flipped if inverse)."""
    ticks = np.array([[-580000, -1000], [-260000, -1000], [-320000, -1000], [-155000, -1000], [-255000, -5000]])
    gear = np.array([156.0, 156.0, 100.0, 71.0, 71.0])
    inverse = np.array([True, True, False, True, True])
    angles = ticks / 4000.0 / gear[:, None] * 2 * np.pi
    angles = np.where(inverse[:, None], -angles, angles)
    np.testing.assert_allclose(arm.position_min, angles.min(axis=1), rtol=1e-12)
    np.testing.assert_allclose(arm.position_max, angles.max(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(arm.gear_ratio, gear)
    assert arm.inverse_direction == tuple(inverse)


def test_drive_torque_limit_matches_hardware_notes(arm):
    np.testing.assert_allclose(arm.drive_torque_limit, [30, 30, 13, 9.9, 6.1], rtol=0.01)
    np.testing.assert_allclose(arm.drive_torque_limit, arm.max_current * arm.torque_constant * arm.gear_ratio)
    # 1 Nm at the joint needs tau / (kt * N) amperes at the motor
    amps_per_nm = 1.0 / (arm.torque_constant * arm.gear_ratio)
    assert amps_per_nm[0] == pytest.approx(0.191, abs=5e-4)
    np.testing.assert_allclose(amps_per_nm, [0.191, 0.191, 0.299, 0.276, 0.287], atol=5e-4)
    # the practical limits are below what the drives can do
    assert np.all(arm.effort_max < arm.drive_torque_limit)
    # the torque the arm may be commanded: the practical limits of uzh-rpg youbot_joints.h (all below the drives)
    np.testing.assert_allclose(arm.torque_limit, [17.0, 17.0, 8.0, 2.7, 1.0])


def test_acceleration_limits_are_moderate(arm):
    """Assumed values (see the comment in the YAML): a few rad/s^2, enough for the velocity limit
    to be reached within half a second."""
    assert arm.acceleration_max.shape == (5,)
    assert np.all((arm.acceleration_max >= 3.0) & (arm.acceleration_max <= 8.0))
    assert np.all(arm.velocity_max / arm.acceleration_max <= 0.5)


def test_within_limits(arm):
    mid = 0.5 * (arm.position_min + arm.position_max)
    assert arm.within_limits(mid)
    assert arm.within_limits(arm.position_min) and arm.within_limits(arm.position_max)
    for j in range(5):
        for q_j, ok in ((arm.position_min[j] - 1e-6, False), (arm.position_max[j] + 1e-6, False)):
            q = mid.copy()
            q[j] = q_j
            assert bool(arm.within_limits(q)) is ok
    batch = np.stack([mid, arm.position_max + 0.1])
    np.testing.assert_array_equal(arm.within_limits(batch), [True, False])


def test_check_q(arm):
    q = arm.check_q([0.1, 0.2, 0.3, 0.4, 0.5])
    assert q.dtype == float and q.shape == (5,)
    assert arm.check_q(np.zeros((3, 2, 5))).shape == (3, 2, 5)
    for bad in ([0.1, 0.2, 0.3, 0.4], np.zeros((3, 6)), 0.5, []):
        with pytest.raises(ValueError, match="5 joint values"):
            arm.check_q(bad)
    for bad in ([0.1, np.nan, 0.3, 0.4, 0.5], [0.1, 0.2, np.inf, 0.4, 0.5]):
        with pytest.raises(ValueError, match="NaN or infinite"):
            arm.check_q(bad)
    with pytest.raises(ValueError, match="q_goal"):
        arm.check_q([1.0], name="q_goal")


def test_mutated_copy_of_default_file_still_loads(tmp_path, raw_doc):
    """The dump/load helper itself does not change the description."""
    arm = load_arm(write(tmp_path, copy.deepcopy(raw_doc)))
    np.testing.assert_array_equal(arm.theta_offset, default_arm().theta_offset)
    np.testing.assert_array_equal(arm.links[3].inertia, default_arm().links[3].inertia)


def _del(path):
    def mutate(doc):
        node = doc["arm"]
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return mutate


def _set(path, value):
    def mutate(doc):
        node = doc["arm"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def _pmin_equals_pmax(doc):
    doc["arm"]["joints"]["position_min"][2] = doc["arm"]["joints"]["position_max"][2]


INVALID = {
    "missing dh.a": (_del(["dh", "a"]), r"dh: missing key 'a'"),
    "missing joints": (_del(["joints"]), r"missing key 'joints'"),
    "short position_max": (lambda d: d["arm"]["joints"]["position_max"].pop(),
                           r"joints\.position_max: expected 5 values"),
    "nan mass": (_set(["links", 0, "mass"], float("nan")), r"links\[0\]\.mass"),
    "negative mass": (_set(["links", 2, "mass"], -1.0), r"links\[2\]\.mass"),
    "zero mass": (_set(["links", 2, "mass"], 0.0), r"links\[2\]\.mass"),
    "triangle inequality": (_set(["links", 1, "inertia"], [0.001, 0.001, 0.01, 0.0, 0.0, 0.0]),
                            r"links\[1\]\.inertia: violates the triangle inequality"),
    "not positive definite": (_set(["links", 3, "inertia"], [0.001, 0.001, 0.001, 0.002, 0.0, 0.0]),
                              r"links\[3\]\.inertia: not positive definite"),
    "negative moment": (_set(["links", 4, "inertia"], [-0.001, 0.001, 0.001, 0.0, 0.0, 0.0]),
                        r"links\[4\]\.inertia"),
    "position_min >= position_max": (_pmin_equals_pmax, r"joints\.position_min: must be below position_max"),
    "direction 2": (_set(["dh", "direction", 1], 2), r"dh\.direction"),
    "non-numeric dh.d": (_set(["dh", "d", 0], "abc"), r"dh\.d"),
    "NaN gear ratio": (_set(["drives", "gear_ratio", 0], float("nan")), r"drives\.gear_ratio"),
    "negative velocity limit": (_set(["joints", "velocity_max", 4], -1.0), r"joints\.velocity_max"),
    "missing acceleration_max": (_del(["joints", "acceleration_max"]), r"joints: missing key 'acceleration_max'"),
    "zero acceleration limit": (_set(["joints", "acceleration_max", 1], 0.0), r"joints\.acceleration_max"),
    "short acceleration_max": (lambda d: d["arm"]["joints"]["acceleration_max"].pop(),
                               r"joints\.acceleration_max: expected 5 values"),
    "wrong number of links": (lambda d: d["arm"]["links"].pop(), r"arm\.links"),
    "duplicate joint names": (_set(["joint_names", 1], "arm_joint_1"), r"arm\.joint_names"),
    "inverse_direction not bool": (_set(["drives", "inverse_direction", 0], 1), r"drives\.inverse_direction"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_description_names_the_key(tmp_path, raw_doc, case):
    mutate, pattern = INVALID[case]
    doc = copy.deepcopy(raw_doc)
    mutate(doc)
    path = write(tmp_path, doc)
    if case == "nan mass":
        assert ".nan" in path.read_text()  # the YAML spelling of NaN reaches the loader
    with pytest.raises(ArmDescriptionError, match=pattern):
        load_arm(path)


def test_malformed_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("arm:\n  name: youbot_arm\n  dh: [0.1, 0.2\n")
    with pytest.raises(ArmDescriptionError, match="malformed YAML") as info:
        load_arm(path)
    assert str(path) in str(info.value)


def test_missing_top_level_key(tmp_path):
    path = tmp_path / "other.yaml"
    path.write_text("robot: {}\n")
    with pytest.raises(ArmDescriptionError, match="'arm'"):
        load_arm(path)


def test_file_not_found(tmp_path):
    path = tmp_path / "does_not_exist.yaml"
    with pytest.raises(ArmDescriptionError, match=re.escape(str(path))):
        load_arm(path)


def test_error_is_a_value_error():
    assert issubclass(ArmDescriptionError, ValueError)
