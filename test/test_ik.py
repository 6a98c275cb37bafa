"""Analytic inverse kinematics (youbot_dynamics.arm.ik).

Every check is made against something computed independently of the IK code: the forward
kinematics of the returned angles (``forward_kinematics``, not the batch's own residual fields),
the configuration that generated the pose, the reachability of the wrist point from the shoulder
(distance within ``[|a2 - a3|, a2 + a3]``), joint-limit membership modulo 2 pi, the geometry of
the elbow relative to the shoulder-wrist line, and tilts of known angle applied to the approach axis.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from youbot_dynamics.arm.ik import (
    BRANCHES,
    IKError,
    IKSolution,
    IKStatus,
    JointLimitError,
    OutOfReachError,
    UnreachableOrientationError,
    closest_solution,
    inverse_kinematics,
    solve_ik_batch,
)
from youbot_dynamics.arm.kinematics import forward_kinematics, link_frames
from youbot_dynamics.arm.transforms import rot_z, rotation_angle, rpy_to_rotation, transform

SEED = 1234
N_ROUND_TRIP = 10_000
POSE_TOL = 1e-9
Q_TOL = 1e-7
# At a singular configuration (elbow stretched or folded) the joint angles are ill-conditioned:
# rounding of c3 = +-1 by ~1e-16 moves theta3 by ~sqrt(2e-16) ~ 1e-8 and theta2 by up to
# a3/|a2 - a3| times that (~1e-7 when folded), while the pose moves only to second order.
Q_TOL_SINGULAR = 1e-6


def axis_angle(axis, angle):
    u = np.asarray(axis, dtype=float)
    u = u / np.linalg.norm(u)
    k = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def uniform_q(arm, n, rng):
    return rng.uniform(arm.position_min, arm.position_max, size=(n, arm.n_joints))


def angle_diff(a, b):
    """Difference of joint angles modulo 2 pi, in (-pi, pi]."""
    return np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b))))


def inside_limits_mod_2pi(arm, q, tol=1e-9):
    """Whether some 2 pi shift of every joint angle lies inside the joint range (independent of ik.py)."""
    span = arm.position_max - arm.position_min
    rel = np.mod(np.asarray(q) - arm.position_min + tol, 2 * np.pi)
    return np.all(rel <= span + 2 * tol, axis=-1)


def assert_pose(arm, q, target, tol=POSE_TOL):
    """FK(q) equals target: position [m] and every rotation-matrix entry."""
    fk = forward_kinematics(arm, q)
    target = np.broadcast_to(target, fk.shape)
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(fk[..., :3, 3], target[..., :3, 3], atol=tol, rtol=0)
    np.testing.assert_allclose(fk[..., :3, :3], target[..., :3, :3], atol=tol, rtol=0)


def facing(p):
    """Horizontal unit vector from the joint-1 axis towards the point p."""
    f = np.array([p[0], p[1], 0.0])
    return f / np.linalg.norm(f)


# ---------------------------------------------------------------------------------------------
# Round trip


@pytest.fixture(scope="module")
def round_trip(arm):
    rng = np.random.default_rng(SEED)
    q0 = uniform_q(arm, N_ROUND_TRIP, rng)
    targets = forward_kinematics(arm, q0)
    return q0, targets, solve_ik_batch(arm, targets)


def test_round_trip_every_real_branch_reaches_the_pose(arm, round_trip):
    q0, targets, batch = round_trip
    assert batch.q.shape == (N_ROUND_TRIP, 4, arm.n_joints)
    assert np.all(batch.status == IKStatus.OK)
    real = batch.real
    assert real.any(axis=1).all()
    q_real = batch.q[real]
    goal = np.repeat(targets[:, None], 4, axis=1)[real]
    assert_pose(arm, q_real, goal)
    # both shoulder branches are exercised, and both elbows
    assert real[:, 0].mean() > 0.5 and real[:, 2].mean() > 0.2
    assert np.all(real[:, 0] == real[:, 1]) and np.all(real[:, 2] == real[:, 3])


def test_round_trip_contains_the_generating_configuration(arm, round_trip):
    q0, _, batch = round_trip
    diff = np.max(np.abs(batch.q - q0[:, None, :]), axis=-1)  # (N, 4)
    diff = np.where(batch.real, diff, np.inf)
    worst = diff.min(axis=1)
    assert worst.max() < Q_TOL, (worst.max(), q0[worst.argmax()])


def test_round_trip_reachability_is_the_wrist_distance(arm, round_trip):
    """A branch is real iff the wrist point is at a distance in [|a2-a3|, a2+a3] from its shoulder."""
    _, targets, batch = round_trip
    a1, a2, a3 = arm.dh_a[:3]
    d1, d5 = arm.dh_d[0], arm.dh_d[4]
    p, z5 = targets[:, :3, 3], targets[:, :3, 2]  # tool = identity
    wrist = p - d5 * z5
    horiz = np.column_stack([p[:, 0], p[:, 1], np.zeros(len(p))])
    horiz /= np.linalg.norm(horiz, axis=1, keepdims=True)
    for k, sign in ((0, 1.0), (2, -1.0)):  # front shoulder towards the target, back away from it
        shoulder = sign * a1 * horiz + [0.0, 0.0, d1]
        dist = np.linalg.norm(wrist - shoulder, axis=1)
        margin = np.minimum(np.abs(dist - (a2 + a3)), np.abs(dist - abs(a2 - a3)))
        clear = margin > 1e-9
        expected = (dist >= abs(a2 - a3)) & (dist <= a2 + a3)
        np.testing.assert_array_equal(batch.real[clear, k], expected[clear])


def test_round_trip_batch_fields(arm, round_trip):
    _, _, batch = round_trip
    np.testing.assert_array_equal(batch.within_limits, batch.real & inside_limits_mod_2pi(arm, batch.q))
    np.testing.assert_array_equal(batch.within_limits, batch.real & arm.within_limits(batch.q))
    assert np.all(np.isnan(batch.position_error[~batch.real]))
    assert np.all(batch.position_error[batch.real] < POSE_TOL)
    assert np.all(batch.orientation_error[batch.real] < POSE_TOL)
    np.testing.assert_array_equal(batch.projection_angle, 0.0)
    assert np.all(np.abs(batch.out_of_plane) < 1e-12)
    # every angle is the 2 pi shift nearest to the joint range (inside it when possible)
    q = batch.q[batch.real]

    def dist(x):
        return np.maximum(np.maximum(arm.position_min - x, x - arm.position_max), 0.0)

    assert np.all(dist(q) <= dist(q + 2 * np.pi) + 1e-12)
    assert np.all(dist(q) <= dist(q - 2 * np.pi) + 1e-12)
    inside_some_shift = (np.mod(q - arm.position_min, 2 * np.pi) <= arm.position_max - arm.position_min)
    assert np.all(dist(q)[inside_some_shift] <= 1e-12)


def test_round_trip_with_a_tool_offset(arm):
    tool = transform(rpy_to_rotation([0.3, -0.2, 1.1]), [0.01, -0.02, 0.05])
    arm_tool = dataclasses.replace(arm, tool=tool)
    rng = np.random.default_rng(SEED + 1)
    q0 = uniform_q(arm, 1000, rng)
    targets = forward_kinematics(arm_tool, q0)
    batch = solve_ik_batch(arm_tool, targets)
    assert_pose(arm_tool, batch.q[batch.real], np.repeat(targets[:, None], 4, axis=1)[batch.real])
    diff = np.where(batch.real, np.max(np.abs(batch.q - q0[:, None]), axis=-1), np.inf)
    assert diff.min(axis=1).max() < Q_TOL


def test_round_trip_outside_limits(arm):
    """Configurations anywhere on the torus: the generating angles are found modulo 2 pi."""
    rng = np.random.default_rng(SEED + 2)
    q0 = rng.uniform(-np.pi, np.pi, size=(2000, arm.n_joints))
    targets = forward_kinematics(arm, q0)
    batch = solve_ik_batch(arm, targets)
    assert_pose(arm, batch.q[batch.real], np.repeat(targets[:, None], 4, axis=1)[batch.real])
    diff = np.where(batch.real, np.max(np.abs(angle_diff(batch.q, q0[:, None])), axis=-1), np.inf)
    assert diff.min(axis=1).max() < Q_TOL
    np.testing.assert_array_equal(batch.within_limits, batch.real & inside_limits_mod_2pi(arm, batch.q))


# ---------------------------------------------------------------------------------------------
# Single-pose API


def test_single_pose_api(arm):
    rng = np.random.default_rng(SEED + 3)
    q0s = uniform_q(arm, 300, rng)
    counts = []
    for q0 in q0s:
        target = forward_kinematics(arm, q0)
        solutions = inverse_kinematics(arm, target)
        counts.append(len(solutions))
        assert 1 <= len(solutions) <= 4
        names = [s.branch for s in solutions]
        assert len(set(names)) == len(names) and set(names) <= set(BRANCHES)
        assert names == [b for b in BRANCHES if b in names]  # in BRANCHES order
        assert_pose(arm, np.array([s.q for s in solutions]), target)
        for i, a in enumerate(solutions):
            assert isinstance(a, IKSolution)
            assert a.within_limits == bool(arm.within_limits(a.q))
            assert a.within_limits == bool(inside_limits_mod_2pi(arm, a.q))
            assert a.residual == max(a.position_error, a.orientation_error) < POSE_TOL
            for b in solutions[i + 1:]:
                assert np.max(np.abs(a.q - b.q)) > 1e-6  # no duplicates
        assert min(np.max(np.abs(s.q - q0)) for s in solutions) < Q_TOL
        inside = inverse_kinematics(arm, target, include_outside_limits=False)
        assert [s.branch for s in inside] == [s.branch for s in solutions if s.within_limits]
        assert all(s.within_limits for s in inside) and inside
    assert max(counts) == 4 and min(counts) <= 2


# ---------------------------------------------------------------------------------------------
# Branch naming, checked geometrically


def test_branch_names_match_the_geometry(arm, round_trip):
    """front/back: x1 (from the joint-1 axis through the shoulder) points towards / away from the
    target. elbow_up: seen in the arm's vertical plane with the horizontal axis f pointing from the
    joint-1 axis towards the target, the elbow (origin of DH frame 2) lies above the straight line
    from the shoulder (frame 1) to the wrist (frame 4), checked where the wrist is in front of the
    shoulder along f (elsewhere "above" flips with the direction of the line).

    The elbow is above the line S-W at the elbow's abscissa iff ``(d_f e_z - d_z e_f) / d_f > 0``
    with ``d = W - S`` and ``e = E - S`` in (f, z) coordinates."""
    _, targets, batch = round_trip
    checked = {b: 0 for b in BRANCHES}
    n_pose = 2000
    frames = link_frames(arm, batch.q[:n_pose].reshape(-1, arm.n_joints), include_tool=False)
    frames = frames.reshape(n_pose, 4, arm.n_joints + 1, 4, 4)
    for i in range(n_pose):
        p = targets[i, :3, 3]
        f = facing(p)
        for k, branch in enumerate(BRANCHES):
            if not batch.real[i, k]:
                continue
            fr = frames[i, k]
            x1 = fr[1, :3, 0]
            expected_side = 1.0 if branch.startswith("front") else -1.0
            assert x1 @ f == pytest.approx(expected_side, abs=1e-9)
            # the tool point lies on the x1 side for front, the other side for back (radially)
            assert expected_side * (x1 @ p) > 0
            shoulder, elbow, wrist = fr[1, :3, 3], fr[2, :3, 3], fr[4, :3, 3]
            d, e = wrist - shoulder, elbow - shoulder
            d_f, d_z, e_f, e_z = d @ f, d[2], e @ f, e[2]
            cross = d_f * e_z - d_z * e_f
            if d_f > 1e-3 and abs(cross) > 1e-6:
                assert (cross > 0) == branch.endswith("elbow_up"), (i, branch, cross)
                checked[branch] += 1
    assert all(count > 50 for count in checked.values()), checked


# ---------------------------------------------------------------------------------------------
# Errors


@pytest.fixture(scope="module")
def reachable(arm):
    """A pose generated inside the joint limits, and its generating configuration."""
    q0 = 0.5 * (arm.position_min + arm.position_max) + np.array([0.3, -0.4, 0.5, 0.2, -0.6])
    return q0, forward_kinematics(arm, q0)


def test_out_of_reach(arm, reachable):
    _, target = reachable
    far = target.copy()
    far[:3, 3] *= 2.0 / np.linalg.norm(target[:3, 3])  # same direction (same arm plane), 2 m away
    with pytest.raises(OutOfReachError, match="out of reach"):
        inverse_kinematics(arm, far)
    batch = solve_ik_batch(arm, far[None])
    assert batch.status[0] == IKStatus.OUT_OF_REACH
    assert not batch.real.any() and not batch.within_limits.any()
    assert issubclass(OutOfReachError, IKError) and issubclass(IKError, ValueError)


def tilt_out_of_plane(target, angle):
    """Rotate the orientation by ``angle`` about the axis n x z5, n the normal of the arm plane
    through the target point: z5 leaves the plane by exactly ``angle``, the point stays."""
    n = np.cross([0.0, 0.0, 1.0], facing(target[:3, 3]))
    axis = np.cross(n, target[:3, 2])
    tilted = target.copy()
    tilted[:3, :3] = axis_angle(axis, angle) @ target[:3, :3]
    return tilted, n


@pytest.mark.parametrize("angle", [2e-3, 0.05, 0.4, -0.9])  # 2e-3: just beyond ORIENTATION_TOLERANCE
def test_unreachable_orientation_and_projection(arm, reachable, angle):
    q0, target = reachable
    tilted, n = tilt_out_of_plane(target, angle)
    assert abs(tilted[:3, 2] @ n) == pytest.approx(np.sin(abs(angle)), abs=1e-15)  # the construction
    with pytest.raises(UnreachableOrientationError, match="approach axis"):
        inverse_kinematics(arm, tilted)
    batch = solve_ik_batch(arm, tilted[None])
    assert batch.status[0] == IKStatus.ORIENTATION_UNREACHABLE
    assert not batch.real.any()
    assert abs(batch.out_of_plane[0]) == pytest.approx(np.sin(abs(angle)), abs=1e-14)

    projected = solve_ik_batch(arm, tilted[None], project=True)
    assert projected.status[0] == IKStatus.OK
    assert projected.projection_angle[0] == pytest.approx(abs(angle), abs=1e-12)
    solutions = inverse_kinematics(arm, tilted, project=True)
    assert solutions
    for s in solutions:
        # the closest reachable orientation is the untilted one: FK gives back the original pose
        assert_pose(arm, s.q, target)
        fk = forward_kinematics(arm, s.q)
        assert rotation_angle(fk[:3, :3], tilted[:3, :3]) == pytest.approx(abs(angle), abs=1e-9)
    assert min(np.max(np.abs(s.q - q0)) for s in solutions) < Q_TOL


def test_small_out_of_plane_error_within_tolerance_is_accepted(arm, reachable):
    _, target = reachable
    tilted, _ = tilt_out_of_plane(target, 1e-8)
    solutions = inverse_kinematics(arm, tilted)
    assert solutions and all(s.orientation_error < 1e-7 for s in solutions)
    with pytest.raises(UnreachableOrientationError):
        inverse_kinematics(arm, tilted, orientation_tolerance=1e-10)


def test_default_orientation_tolerance_is_1e_3_everywhere(arm, reachable):
    """Accepts the out-of-plane error of rounded input (issue 19), refuses a real tilt; the
    kinematics node's parameter file says the same."""
    import yaml

    from youbot_dynamics.files.paths import config_path

    q0, target = reachable
    accepted, _ = tilt_out_of_plane(target, 5e-4)
    assert min(np.max(np.abs(s.q - q0)) for s in inverse_kinematics(arm, accepted)) < 1e-3
    refused, _ = tilt_out_of_plane(target, 2e-3)
    with pytest.raises(UnreachableOrientationError):
        inverse_kinematics(arm, refused)
    from youbot_dynamics.contract.parameter_schema import load_schema

    assert load_schema("kinematics_node")["orientation_tolerance"].default == 1e-3  # the node's default
    assert "orientation_tolerance" not in yaml.safe_load(config_path("kinematics.yaml").read_text())[
        "kinematics_node"]["ros__parameters"]


def test_joint_limit_error(arm):
    """Search (fixed seed) for a configuration outside the limits whose pose has no solution inside."""
    rng = np.random.default_rng(SEED + 4)
    q_any = rng.uniform(-np.pi, np.pi, size=(2000, arm.n_joints))
    outside = q_any[~inside_limits_mod_2pi(arm, q_any)]
    targets = forward_kinematics(arm, outside)
    batch = solve_ik_batch(arm, targets)
    candidates = np.flatnonzero(batch.real.any(1) & ~batch.within_limits.any(1))
    assert len(candidates) > 10
    for i in candidates[:10]:
        # independent confirmation: every real branch reaches the pose and is outside the limits
        real = batch.real[i]
        assert_pose(arm, batch.q[i, real], targets[i])
        assert not inside_limits_mod_2pi(arm, batch.q[i, real]).any()
        assert batch.status[i] == IKStatus.OUTSIDE_LIMITS
        with pytest.raises(JointLimitError, match="joint limits"):
            inverse_kinematics(arm, targets[i])
        with pytest.raises(JointLimitError):
            inverse_kinematics(arm, targets[i], include_outside_limits=False)


# ---------------------------------------------------------------------------------------------
# Singular cases: finite results, right pose


def test_wrist_on_axis_with_vertical_approach_keeps_joint_1(arm):
    d1, d5 = arm.dh_d[0], arm.dh_d[4]
    rotation = rot_z(0.3)  # z5 straight up; x5 at an arbitrary angle (joint 5 absorbs it)
    wrist = np.array([0.0, 0.0, d1 + 0.2])
    target = transform(rotation, wrist + d5 * rotation[:, 2])
    mid = 0.5 * (arm.position_min + arm.position_max)
    for q1 in (0.5, 1.0, 2.5, 5.0):
        q_current = mid.copy()
        q_current[0] = q1
        assert arm.within_limits(q_current)
        batch = solve_ik_batch(arm, target[None], q_reference=q_current)
        assert batch.real.all() and np.all(np.isfinite(batch.q))
        assert_pose(arm, batch.q[0], target)
        np.testing.assert_allclose(batch.q[0, :2, 0], q1, atol=1e-12)  # front branches keep joint 1
        if batch.within_limits.any():  # joint 5 may leave its range when joint 1 is kept
            solutions = inverse_kinematics(arm, target, q_current=q_current)
            front = [s for s in solutions if s.branch.startswith("front")]
            assert front and all(s.q[0] == pytest.approx(q1, abs=1e-12) for s in front)
    # without q_current: the middle of the joint-1 range
    batch = solve_ik_batch(arm, target[None])
    np.testing.assert_allclose(batch.q[0, :2, 0], mid[0], atol=1e-12)
    assert_pose(arm, batch.q[0], target)


def test_wrist_on_axis_batch_with_per_pose_reference(arm):
    d1, d5 = arm.dh_d[0], arm.dh_d[4]
    target = transform(np.eye(3), [0.0, 0.0, d1 + 0.2 + d5])
    mid = 0.5 * (arm.position_min + arm.position_max)
    refs = np.tile(mid, (3, 1))
    refs[:, 0] = [0.5, 1.5, 2.5]
    batch = solve_ik_batch(arm, np.repeat(target[None], 3, axis=0), q_reference=refs)
    assert np.all(np.isfinite(batch.q))
    np.testing.assert_allclose(batch.q[:, 0, 0], refs[:, 0], atol=1e-12)
    assert_pose(arm, batch.q[batch.real], target)


@pytest.mark.parametrize("elevation", [-1.0, -0.3, 0.4, 1.2])
def test_target_on_axis_with_non_vertical_approach(arm, elevation):
    """The arm plane must contain the approach axis: joint 1 follows its azimuth."""
    azimuth = 0.7
    z5 = np.array([np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth), np.sin(elevation)])
    x5 = np.cross([-np.sin(azimuth), np.cos(azimuth), 0.0], z5)  # in the plane, normal to z5
    rotation = np.column_stack([x5, np.cross(z5, x5), z5])
    # the wrist p - d5 z5 at 0.1 m above the shoulder: within a2 + a3 of the front shoulder
    d1, d5 = arm.dh_d[0], arm.dh_d[4]
    target = transform(rotation, [0.0, 0.0, d1 + 0.1 + d5 * np.sin(elevation)])
    batch = solve_ik_batch(arm, target[None])
    assert np.all(np.isfinite(batch.q))
    assert batch.real.any()
    assert_pose(arm, batch.q[batch.real], target)
    for q in batch.q[batch.real]:
        x1 = link_frames(arm, q)[1, :3, 0]
        assert abs(x1 @ [np.cos(azimuth), np.sin(azimuth), 0.0]) == pytest.approx(1.0, abs=1e-12)


def shoulder_of(arm, q, target):
    x1 = link_frames(arm, q)[1, :3, 0]
    return "front" if x1 @ facing(target[:3, 3]) > 0 else "back"


def test_stretched_elbow(arm):
    """theta3 = 0: elbow up and down coincide; one solution is left for that shoulder branch."""
    rng = np.random.default_rng(SEED + 5)
    span3 = np.sort(arm.theta([arm.position_min, arm.position_max])[:, 2])
    assert span3[0] < 0.0 < span3[1]  # theta3 = 0 is inside the joint-3 range
    done = 0
    for q0 in uniform_q(arm, 200, rng):
        theta = arm.theta(q0)
        theta[2] = 0.0
        q0 = arm.q_from_theta(theta)
        if not arm.within_limits(q0):
            continue
        target = forward_kinematics(arm, q0)
        batch = solve_ik_batch(arm, target[None])
        assert np.all(np.isfinite(batch.q))
        assert_pose(arm, batch.q[0, batch.real[0]], target)
        solutions = inverse_kinematics(arm, target)
        shoulder = shoulder_of(arm, q0, target)
        mine = [s for s in solutions if s.branch.startswith(shoulder)]
        assert len(mine) == 1, [s.branch for s in solutions]
        assert np.max(np.abs(mine[0].q - q0)) < Q_TOL_SINGULAR
        done += 1
    assert done > 50


def test_folded_elbow(arm):
    """theta3 = pi puts the wrist 2 cm from the shoulder."""
    # theta3 = +-pi is outside the youBot's joint-3 range (asserted below): the "solution inside the
    # limits" sub-case cannot exist and is skipped; finiteness, the pose and the merged elbow pair
    # are checked on configurations anywhere on the torus.
    span3 = np.sort(arm.theta([arm.position_min, arm.position_max])[:, 2])
    assert not (span3[0] <= np.pi <= span3[1]) and not (span3[0] <= -np.pi <= span3[1])
    rng = np.random.default_rng(SEED + 6)
    for theta in np.column_stack([rng.uniform(-3, 3, (30, 2)), np.full(30, np.pi), rng.uniform(-3, 3, (30, 2))]):
        q0 = arm.q_from_theta(theta)
        target = forward_kinematics(arm, q0)
        batch = solve_ik_batch(arm, target[None])
        assert np.all(np.isfinite(batch.q))
        assert_pose(arm, batch.q[0, batch.real[0]], target)
        diff = np.where(batch.real[0], np.max(np.abs(angle_diff(batch.q[0], q0)), axis=-1), np.inf)
        assert diff.min() < Q_TOL_SINGULAR
        k = int(diff.argmin())
        assert not batch.within_limits[0, k]
        # the elbow pair of that shoulder is one configuration
        pair = batch.q[0, (k // 2) * 2: (k // 2) * 2 + 2]
        assert np.max(np.abs(angle_diff(pair[0], pair[1]))) < 2 * Q_TOL_SINGULAR
        shoulder = BRANCHES[k].split("_")[0]
        solutions = inverse_kinematics(arm, target, include_outside_limits=True) \
            if batch.within_limits[0].any() else None
        if solutions is not None:
            assert len([s for s in solutions if s.branch.startswith(shoulder)]) == 1


@pytest.mark.parametrize("up", [True, False])
def test_vertical_approach(arm, up):
    rng = np.random.default_rng(SEED + 7 + up)
    for _ in range(100):
        theta = rng.uniform(-np.pi, np.pi, 5)
        theta[3] = (np.pi if up else 0.0) - theta[1] - theta[2]
        q0 = arm.q_from_theta(theta)
        target = forward_kinematics(arm, q0)
        np.testing.assert_allclose(target[:3, 2], [0, 0, 1 if up else -1], atol=1e-12)
        batch = solve_ik_batch(arm, target[None])
        assert np.all(np.isfinite(batch.q))
        assert_pose(arm, batch.q[0, batch.real[0]], target)
        diff = np.where(batch.real[0], np.max(np.abs(angle_diff(batch.q[0], q0)), axis=-1), np.inf)
        assert diff.min() < Q_TOL


# ---------------------------------------------------------------------------------------------
# closest_solution and input validation


def test_closest_solution(arm):
    rng = np.random.default_rng(SEED + 8)
    tested = 0
    for q0 in uniform_q(arm, 200, rng):
        solutions = inverse_kinematics(arm, forward_kinematics(arm, q0))
        feasible = [s for s in solutions if s.within_limits]
        if len(feasible) < 2:
            continue
        for s in feasible:
            assert closest_solution(solutions, s.q + rng.normal(scale=1e-3, size=5)) is s
        q_ref = uniform_q(arm, 1, rng)[0]
        distances = [np.max(np.abs(s.q - q_ref)) for s in feasible]
        assert closest_solution(solutions, q_ref) is feasible[int(np.argmin(distances))]
        tested += 1
    assert tested > 20


def test_closest_solution_never_returns_an_infeasible_one(arm):
    inside = IKSolution(np.full(5, 1.0), "front_elbow_down", True, 0.0, 0.0)
    outside = IKSolution(np.full(5, 0.0), "front_elbow_up", False, 0.0, 0.0)
    assert closest_solution([outside, inside], np.zeros(5)) is inside
    with pytest.raises(JointLimitError):
        closest_solution([outside], np.zeros(5))
    with pytest.raises(JointLimitError):
        closest_solution([], np.zeros(5))


def test_invalid_targets(arm, reachable):
    _, target = reachable
    bad = target.copy()
    bad[0, 3] = np.nan
    with pytest.raises(ValueError):
        inverse_kinematics(arm, bad)
    with pytest.raises(ValueError):
        solve_ik_batch(arm, np.stack([target, bad]))
    inf = target.copy()
    inf[1, 1] = np.inf
    with pytest.raises(ValueError):
        inverse_kinematics(arm, inf)
    with pytest.raises(ValueError):
        inverse_kinematics(arm, target[:3])
    with pytest.raises(ValueError):
        solve_ik_batch(arm, target)  # needs (N, 4, 4)
    with pytest.raises(ValueError):
        inverse_kinematics(arm, target, q_current=[0.1, np.nan, 0.1, 0.1, 0.1])


def test_non_youbot_structure_is_rejected(arm, reachable):
    _, target = reachable
    other = dataclasses.replace(arm, dh_a=np.array([0.033, 0.155, 0.135, 0.01, 0.0]))
    with pytest.raises(ValueError, match="DH structure"):
        solve_ik_batch(other, target[None])
