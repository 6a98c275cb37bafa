"""Excitation trajectories (youbot_dynamics.identification): Fourier series and point-to-point
schedules, limits and clearance, the condition-number criterion, the optimal design, the
trajectory file and the ``excite`` command."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import yaml

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.cli import main
from youbot_dynamics.dynamics import rnea
from youbot_dynamics.dynamics.base_parameters import compute_base_parameters
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.identification.excitation.clearance import (OBSTACLE_NAMES, YOUBOT_OBSTACLES, check_points,
                                                                 clearance, obstacle_distances, soft_clearance)
from youbot_dynamics.identification.excitation.criterion import (condition_number, criterion_state_gradient,
                                                                 criterion_value, regressor_model, sample_times,
                                                                 trajectory_condition_number)
from youbot_dynamics.identification.excitation.design import (design_excitation, random_feasible_trajectory,
                                                              random_points_excitation, rest_basis)
from youbot_dynamics.identification.excitation.limits import Margins, MotionLimits, achieved_margins
from youbot_dynamics.identification.excitation.trajectories import (QUINTIC_PEAK_ACCELERATION, QUINTIC_PEAK_VELOCITY,
                                                                    FourierTrajectory, WaypointTrajectory,
                                                                    quintic_duration)
from youbot_dynamics.identification.excitation.waypoints import random_configurations
from youbot_dynamics.identification.io.trajfile import TrajectoryFileError, load_trajectory, save_trajectory

ARM = default_arm()
MID = 0.5 * (ARM.position_min + ARM.position_max)
LIMITS = MotionLimits(ARM)


def theta_pose(theta):
    return ARM.q_from_theta(theta)


CANDLE = theta_pose([0.0, math.pi / 2, 0.0, math.pi / 2, 0.0])


@pytest.fixture(scope="module")
def model():
    return regressor_model(ARM)


@pytest.fixture(scope="module")
def random_fourier():
    rng = np.random.default_rng(7)
    return FourierTrajectory.at_rest(8.0, MID, 0.2 * rng.standard_normal((2 * (4 - 1), ARM.n_joints)))


@pytest.fixture(scope="module")
def quick_design():
    """A short optimisation (few iterations): improves, keeps the margins."""
    return design_excitation(ARM, 10.0, 5, seed=0, max_iterations=15)


# -- trajectories --------------------------------------------------------------------------------


def central_difference(fun, t, h=1e-5):
    return (fun(t + h) - fun(t - h)) / (2 * h)


@pytest.mark.parametrize("kind", ["fourier", "waypoints"])
def test_analytic_derivatives_match_finite_differences(kind, random_fourier):
    if kind == "fourier":
        traj = random_fourier
    else:
        traj = WaypointTrajectory(np.array([MID, MID + 0.3, MID - 0.2]), np.array([1.5, 2.0]), 0.5)
    t = np.linspace(0.01, traj.duration - 0.01, 150)  # no sample on a move boundary (jerk jumps)
    q, dq, ddq = traj.evaluate(t)
    np.testing.assert_allclose(central_difference(lambda s: traj.evaluate(s)[0], t), dq, atol=1e-8)
    np.testing.assert_allclose(central_difference(lambda s: traj.evaluate(s)[1], t), ddq, atol=1e-7)


def test_fourier_rests_at_start_and_end_and_is_periodic(random_fourier):
    traj = random_fourier
    assert traj.harmonics == 4 and traj.n_joints == 5 and traj.duration == 8.0
    for t in (0.0, traj.period, 3 * traj.period):
        q, dq, ddq = traj.evaluate(t)
        np.testing.assert_allclose(q, MID, atol=1e-12)
        np.testing.assert_allclose(dq, 0.0, atol=1e-12)
        np.testing.assert_allclose(ddq, 0.0, atol=1e-12)
    assert traj.rest_error() < 1e-12
    t = np.linspace(0.0, traj.period, 50)
    for a, b in zip(traj.evaluate(t), traj.evaluate(t + traj.period)):
        np.testing.assert_allclose(a, b, atol=1e-11)
    assert np.abs(traj.evaluate(t)[1]).max() > 0.1  # it does move


def test_fourier_equations_and_free_coefficients(random_fourier):
    """Swevers' series term by term; at_rest(free_coefficients()) reproduces the trajectory."""
    traj = random_fourier
    t = 1.234
    w = 2 * math.pi / traj.period
    k = np.arange(1, traj.harmonics + 1)
    q = traj.offset + (traj.a / (w * k) * np.sin(w * k * t) - traj.b / (w * k) * np.cos(w * k * t)).sum(axis=1)
    dq = (traj.a * np.cos(w * k * t) + traj.b * np.sin(w * k * t)).sum(axis=1)
    np.testing.assert_allclose(traj.evaluate(t)[0], q, atol=1e-13)
    np.testing.assert_allclose(traj.evaluate(t)[1], dq, atol=1e-13)
    again = FourierTrajectory.at_rest(traj.period, MID, traj.free_coefficients())
    np.testing.assert_allclose(again.a, traj.a, atol=1e-15)
    np.testing.assert_allclose(again.b, traj.b, atol=1e-15)
    np.testing.assert_allclose(again.offset, traj.offset, atol=1e-15)


def test_rest_basis_is_the_linear_map_of_the_design(random_fourier):
    traj = random_fourier
    t = np.linspace(0.0, traj.period, 33)
    phi = rest_basis(traj.period, traj.harmonics, t)
    free = traj.free_coefficients()
    q, dq, ddq = traj.evaluate(t)
    np.testing.assert_allclose(MID + phi[0] @ free, q, atol=1e-12)
    np.testing.assert_allclose(phi[1] @ free, dq, atol=1e-12)
    np.testing.assert_allclose(phi[2] @ free, ddq, atol=1e-12)


def test_waypoint_schedule_passes_waypoints_and_rests():
    wp = np.array([MID, MID + [0.5, -0.2, 0.1, 0.0, 0.3], MID])
    moves = np.array([quintic_duration(wp[1] - wp[0], LIMITS.velocity_bound, LIMITS.acceleration_bound)] * 2)
    traj = WaypointTrajectory(wp, moves, 0.7)
    assert traj.duration == pytest.approx(3 * 0.7 + moves.sum())
    starts = traj.move_starts()
    np.testing.assert_allclose(starts, [0.7, 1.4 + moves[0]])
    for t, target in ((0.0, wp[0]), (0.69, wp[0]), (starts[0] + moves[0] + 0.3, wp[1]), (traj.duration + 5, wp[2])):
        q, dq, ddq = traj.evaluate(t)
        np.testing.assert_allclose(q, target, atol=1e-12)
        np.testing.assert_allclose(dq, 0.0, atol=1e-12)
        np.testing.assert_allclose(ddq, 0.0, atol=1e-12)
    # the quintic peaks reach exactly the limiting bound: 15/8 d / T and 10/sqrt(3) d / T^2
    q, dq, ddq = traj.evaluate(np.linspace(starts[0], starts[0] + moves[0], 20001))
    d = np.abs(wp[1] - wp[0])
    np.testing.assert_allclose(np.abs(dq).max(axis=0), QUINTIC_PEAK_VELOCITY * d / moves[0], rtol=1e-6)
    np.testing.assert_allclose(np.abs(ddq).max(axis=0), QUINTIC_PEAK_ACCELERATION * d / moves[0] ** 2, rtol=1e-6)
    assert achieved_margins(LIMITS, traj).violations(LIMITS.margins) == []


def test_trajectory_constructors_reject_bad_values():
    with pytest.raises(ValueError, match="period"):
        FourierTrajectory(0.0, MID, np.zeros((5, 2)), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="offset"):
        FourierTrajectory(1.0, MID[:4], np.zeros((5, 2)), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="move durations"):
        WaypointTrajectory(np.array([MID, MID]), np.array([0.0]), 1.0)
    with pytest.raises(ValueError, match="dwell"):
        WaypointTrajectory(np.array([MID, MID]), np.array([1.0]), -1.0)


# -- limits and clearance ------------------------------------------------------------------------


def _one_joint(joint, a1, period=2 * math.pi / 1.5, offset=MID):
    """A one-harmonic motion of one joint, ``q' = a1 cos(w t)`` (not from rest: the check doesn't care)."""
    a = np.zeros((5, 1))
    a[joint, 0] = a1
    return FourierTrajectory(period, offset, a, np.zeros((5, 1)))


@pytest.mark.parametrize("traj, expected", [
    (_one_joint(0, 1.6), "joint 1: velocity margin -0.01859"),  # 1.6 rad/s > 0.9 pi / 2
    (_one_joint(4, 1.0, period=2 * math.pi / 6.0), "joint 5: acceleration margin 3"),  # 6 rad/s^2 > 0.9 * 6
    (_one_joint(0, 0.0, offset=MID + [2.85, 0, 0, 0, 0]), "joint 1: position margin 0.065"),
], ids=["velocity", "acceleration", "position"])
def test_feasibility_check_catches_a_violating_trajectory(traj, expected):
    lines = achieved_margins(LIMITS, traj).violations(LIMITS.margins)
    assert len(lines) == 1 and lines[0].startswith(expected) and lines[0].endswith("< required 0.1")


def test_random_feasible_trajectory_is_as_large_as_the_limits_allow():
    fitted = random_feasible_trajectory(ARM, 8.0, 4, seed=3)
    assert achieved_margins(LIMITS, fitted).violations(LIMITS.margins) == []
    larger = FourierTrajectory.at_rest(8.0, MID, 1.2 * fitted.free_coefficients())
    assert achieved_margins(LIMITS, larger).violations(LIMITS.margins) != []


def test_margins_and_limits_validate():
    with pytest.raises(ValueError, match="velocity margin"):
        Margins(velocity=1.0)
    with pytest.raises(ValueError, match="clearance margin"):
        Margins(clearance=-0.1)
    with pytest.raises(ValueError, match="no range"):
        MotionLimits(ARM, Margins(position=3.0))
    assert LIMITS.as_dict()["acceleration_max"] == ARM.acceleration_max.tolist()
    np.testing.assert_allclose(LIMITS.acceleration_bound, 0.9 * ARM.acceleration_max)


def test_obstacle_distances_of_hand_placed_points():
    o = YOUBOT_OBSTACLES
    points = np.array([
        [0.3, 0.0, -0.2],  # below the floor, in front of the platform
        [-0.167, 0.0, 0.1],  # 0.064 m above the middle of the platform
        [-0.3, 0.1, 0.0],  # inside the platform, 0.036 m below its top
        [0.04, 0.0, 0.1],  # inside the base column
        [0.0, 0.0, 0.35],  # 0.15 m above the column
        [0.118 + 0.03, 0.18 + 0.04, 0.036 + 0.12],  # off the platform's corner edge: 0.05 x 0.12 apart
    ])
    d = obstacle_distances(points, o)
    np.testing.assert_allclose(d[:, 0], points[:, 2] + 0.0955)
    np.testing.assert_allclose(d[1, 1], 0.064)
    np.testing.assert_allclose(d[2, 1], -0.036)
    np.testing.assert_allclose(d[3, 2], -0.06)
    np.testing.assert_allclose(d[4, 2], 0.15)
    np.testing.assert_allclose(d[5, 1], math.hypot(0.05, 0.12))
    assert d[0, 0] < 0 and d[0, 1] > 0


@pytest.mark.parametrize("name, theta", [
    ("floor", [0.0, 0.2, -1.6, 1.2, 0.0]),  # leaning far forward, hand pointing down
    ("platform", [0.0, 2.4, 1.2, 2.4, 0.0]),  # leaning back, folded down onto the platform
    ("column", [0.0, 0.4, -2.4, 0.0, 0.0]),  # forearm folded back into the base column
])
def test_clearance_catches_poses_hitting_floor_platform_or_column(name, theta):
    q = theta_pose(theta)
    assert ARM.within_limits(q)
    d = obstacle_distances(check_points(ARM, q), YOUBOT_OBSTACLES).min(axis=0)
    assert OBSTACLE_NAMES[int(np.argmin(d))] == name
    assert d.min() < -0.03 and np.sort(d)[1] > 0.03  # only that obstacle is hit
    assert clearance(ARM, q) == pytest.approx(d.min())
    assert not LIMITS.configuration_ok(q)


def test_candle_and_middle_poses_are_clear():
    c = clearance(ARM, np.array([CANDLE, MID]))
    assert c[0] == pytest.approx(0.302 - 0.20)  # the elbow above the column top
    assert c[1] > 0.09 and np.all(LIMITS.configuration_ok(np.array([CANDLE, MID])))
    points = check_points(ARM, CANDLE)
    assert points.shape == (9, 3)  # frames 2..5, tool, and the 4 midpoints
    np.testing.assert_allclose(points[4], [0.033, 0.0, 0.655], atol=1e-12)  # tool point (seed oracle)


def test_soft_clearance_is_a_close_lower_bound():
    q = np.random.default_rng(2).uniform(ARM.position_min, ARM.position_max, (500, 5))
    hard, soft = clearance(ARM, q), soft_clearance(ARM, q, smoothing=0.01)
    assert np.all(soft <= hard + 1e-15)
    assert np.all(hard - soft <= 0.01 * math.log(27) + 1e-12)


# -- criterion -----------------------------------------------------------------------------------


def test_condition_number_matches_an_independent_computation(quick_design):
    """numpy's cond of the numeric Newton-Euler regressor, base columns, unit-norm columns."""
    chain = DHChain.from_arm(ARM)
    base = compute_base_parameters(chain, "full")
    traj = quick_design.trajectory
    q, dq, ddq = traj.evaluate((np.arange(quick_design.samples) + 0.5) * traj.period / quick_design.samples)
    w = rnea.regressor(chain, q, dq, ddq)[..., base.independent].reshape(-1, base.count)
    expected = np.linalg.cond(w / np.linalg.norm(w, axis=0))
    assert quick_design.condition_number == pytest.approx(expected, rel=1e-8)
    assert quick_design.parameters == base.count == 47


def test_condition_number_of_unexcited_parameters_is_infinite(model):
    q = np.tile(MID, (20, 1))
    assert condition_number(model.regressor(q, np.zeros_like(q), np.zeros_like(q))) == math.inf


@pytest.mark.parametrize("criterion", ["condition", "logdet"])
def test_criterion_gradient_matches_finite_differences(model, random_fourier, criterion):
    q, dq, ddq = random_fourier.evaluate(sample_times(random_fourier.period, 40))
    grad = criterion_state_gradient(model, q, dq, ddq, criterion)
    rng = np.random.default_rng(0)
    h = 1e-6
    for k in range(3):
        for s, j in zip(rng.integers(0, 40, 4), rng.integers(0, 5, 4)):
            states = [q.copy(), dq.copy(), ddq.copy()]
            plus, minus = [x.copy() for x in states], [x.copy() for x in states]
            plus[k][s, j] += h
            minus[k][s, j] -= h
            fd = (criterion_value(model.regressor(*plus), criterion)
                  - criterion_value(model.regressor(*minus), criterion)) / (2 * h)
            assert grad[k, s, j] == pytest.approx(fd, rel=1e-4, abs=1e-7)


# -- design --------------------------------------------------------------------------------------


def test_random_feasible_trajectories_are_poorly_conditioned(model):
    conds = [trajectory_condition_number(model, random_feasible_trajectory(ARM, seed=s), 200) for s in range(4)]
    assert np.median(conds) > 100


def test_quick_design_improves_well_over_random(quick_design):
    r = quick_design
    assert r.condition_number < r.start_condition_number / 5
    assert r.condition_number <= 200
    assert r.margins.violations(r.limits.margins) == []
    traj = r.trajectory
    np.testing.assert_allclose(traj.evaluate(0.0)[0], MID, atol=1e-12)
    assert traj.rest_error() < 1e-12
    assert r.method == "fourier" and r.optimizer == "SLSQP" and r.iterations >= 1
    report = r.report()
    json.dumps(report)  # plain data
    assert report["margins_achieved"]["clearance"] >= 0.05


def test_default_design_reaches_condition_200():
    """The issue's goal on the youBot model: condition number <= 200 (random feasible: hundreds
    to thousands), default T = 10 s and 5 harmonics."""
    r = design_excitation(ARM, seed=0)
    assert r.condition_number <= 200
    assert r.margins.violations(r.limits.margins) == []  # (its time: make bench, excitation_design_s)


def test_design_respects_a_given_start_and_options():
    q_start = MID + [0.3, -0.2, 0.2, 0.1, -0.4]
    r = design_excitation(ARM, 6.0, 3, q_start=q_start, seed=4, max_iterations=5, samples_per_period=60,
                          structure="rotor", margins=Margins(position=0.2, clearance=0.08))
    np.testing.assert_allclose(r.trajectory.evaluate(0.0)[0], q_start, atol=1e-12)
    np.testing.assert_allclose(r.trajectory.evaluate(6.0)[0], q_start, atol=1e-12)
    assert r.trajectory.harmonics == 3 and r.samples == 60 and r.parameters < 47
    assert r.margins.violations(Margins(position=0.2, clearance=0.08)) == []
    with pytest.raises(ValueError, match="q_start"):
        design_excitation(ARM, q_start=ARM.position_max)
    with pytest.raises(ValueError, match="optimizer"):
        design_excitation(ARM, optimizer="nelder-mead")
    with pytest.raises(ValueError, match="harmonics"):
        design_excitation(ARM, harmonics=1)


def test_max_time_stops_the_design_early():
    r = design_excitation(ARM, seed=1, max_time=0.0)
    assert r.iterations == 1
    assert r.margins.violations(r.limits.margins) == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_designs_from_several_seeds_reach_condition_200(seed):
    r = design_excitation(ARM, seed=seed)
    assert r.condition_number <= 200 and r.margins.violations(r.limits.margins) == []


@pytest.mark.slow
@pytest.mark.parametrize("optimizer, criterion", [("SLSQP", "logdet"), ("COBYLA", "condition")])
def test_other_criterion_and_optimizer(optimizer, criterion):
    r = design_excitation(ARM, seed=0, optimizer=optimizer, criterion=criterion)
    assert r.condition_number <= 200 and r.margins.violations(r.limits.margins) == []


# -- the seed's method ---------------------------------------------------------------------------


def test_random_configurations_reachable_inside_limits_and_clear():
    traj = random_configurations(ARM, 6, seed=3, dwell=0.5)
    wp = traj.waypoints
    assert wp.shape == (8, 5)
    np.testing.assert_allclose(wp[0], MID)
    np.testing.assert_allclose(wp[-1], MID)
    assert np.all(LIMITS.configuration_ok(wp))
    assert np.all(np.isfinite(check_points(ARM, wp)))
    q = traj.evaluate(np.linspace(0.0, traj.duration, 4000))[0]
    assert np.all(LIMITS.configuration_ok(q))  # the moves stay clear too
    assert achieved_margins(LIMITS, traj).violations(LIMITS.margins) == []
    again = random_configurations(ARM, 6, seed=3, dwell=0.5)
    np.testing.assert_array_equal(again.waypoints, wp)  # seeded


def test_random_points_excitation_reports(model):
    r = random_points_excitation(ARM, 8, seed=1)
    assert r.method == "random-points" and r.start_condition_number is None
    assert r.condition_number == pytest.approx(trajectory_condition_number(model, r.trajectory, r.samples))
    assert r.margins.violations(r.limits.margins) == []


# -- trajectory file -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fourier", "waypoints"])
def test_file_round_trip(tmp_path, random_fourier, model, kind):
    traj = random_fourier if kind == "fourier" else random_configurations(ARM, 3, seed=0)
    design = {"condition_number": 12.5, "margins_achieved": {"clearance": 0.07}}
    path = save_trajectory(tmp_path / "traj.yaml", traj, ARM.joint_names, design)
    loaded = load_trajectory(path, ARM.joint_names)
    # the design block round-trips but for the condition number: the trajectory's own (issue 35, item 8)
    computed, samples = loaded.design["condition_number"], loaded.design["samples"]
    assert loaded.joint_names == ARM.joint_names
    assert loaded.design == {**design, "condition_number": computed, "samples": samples}
    assert computed == pytest.approx(trajectory_condition_number(model, traj, samples), rel=1e-12)
    assert type(loaded.trajectory) is type(traj) and loaded.trajectory.duration == traj.duration
    t = np.linspace(0.0, traj.duration, 101)
    for a, b in zip(loaded.trajectory.evaluate(t), traj.evaluate(t)):
        np.testing.assert_array_equal(a, b)


def _broken(key, value):
    def mutate(doc):
        if value is _DELETE:
            del doc[key]
        else:
            doc[key] = value
    return mutate


_DELETE = object()
MALFORMED = {
    "missing period": (_broken("period", _DELETE), r"missing key 'period'"),
    "wrong version": (_broken("format_version", 2), r"format_version: expected 1, got 2"),
    "unknown kind": (_broken("kind", "spline"), r"kind: expected one of fourier, waypoints, got 'spline'"),
    "negative period": (_broken("period", -1.0), r"period: must be > 0"),
    "text period": (_broken("period", "ten"), r"period: expected a finite number"),
    "short offset": (_broken("offset", [0.0, 1.0]), r"offset: expected shape 5"),
    "ragged a": (_broken("a", [[0.0, 1.0], [1.0]]), r"a: expected numbers in nested lists"),
    "b of other shape": (_broken("b", [[0.0]] * 5), r"b: expected shape 5 x 3"),
    "not at rest": (_broken("a", [[0.1, 0.2, 0.3]] * 5), r"a: the trajectory does not start at rest"),
    "nan in b": (_broken("b", [[float("nan"), 0.0, 0.0]] * 5), r"b: values must be finite"),
    "joint names": (_broken("joint_names", ["j1", "j2", "j3", "j4", "j5"]), r"joint_names: expected \['arm_joint_1'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_are_rejected_naming_the_key(tmp_path, case):
    traj = FourierTrajectory.at_rest(10.0, MID, 0.1 * np.ones((4, 5)))
    path = save_trajectory(tmp_path / "t.yaml", traj, ARM.joint_names)
    doc = yaml.safe_load(path.read_text())
    mutate, pattern = MALFORMED[case]
    mutate(doc["youbot_excitation_trajectory"])
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TrajectoryFileError, match=pattern) as info:
        load_trajectory(path, ARM.joint_names)
    assert str(path) in str(info.value)


def test_malformed_waypoint_file_and_unreadable_files(tmp_path):
    path = save_trajectory(tmp_path / "w.yaml", random_configurations(ARM, 2, seed=0), ARM.joint_names)
    doc = yaml.safe_load(path.read_text())
    doc["youbot_excitation_trajectory"]["move_durations"][1] = 0.0
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TrajectoryFileError, match=r"move_durations: values must be > 0"):
        load_trajectory(path)
    (tmp_path / "bad.yaml").write_text("youbot_excitation_trajectory: [1, 2\n")
    with pytest.raises(TrajectoryFileError, match="malformed YAML"):
        load_trajectory(tmp_path / "bad.yaml")
    (tmp_path / "other.yaml").write_text("something: {}\n")
    with pytest.raises(TrajectoryFileError, match="missing top-level key 'youbot_excitation_trajectory'"):
        load_trajectory(tmp_path / "other.yaml")
    with pytest.raises(TrajectoryFileError, match="cannot read"):
        load_trajectory(tmp_path / "none.yaml")


# -- command line --------------------------------------------------------------------------------


def test_cli_excite_fourier(tmp_path, capsys):
    out = tmp_path / "traj.yaml"
    code = main(["excite", "--duration", "8", "--harmonics", "3", "--out", str(out), "--seed", "2",
                 "--max-iterations", "10"])
    text = capsys.readouterr().out
    assert code == 0
    assert f"wrote {out}" in text and "condition number" in text and "margins achieved" in text
    assert "acceleration max [rad/s2] [4.000, 4.000, 5.000, 6.000, 6.000]" in text
    loaded = load_trajectory(out, ARM.joint_names)
    assert loaded.trajectory.period == 8.0 and loaded.trajectory.harmonics == 3
    assert loaded.design["condition_number"] == pytest.approx(
        float(text.split("condition number ")[1].split()[0]), abs=0.05)


def test_cli_excite_random_points_json(tmp_path, capsys):
    out = tmp_path / "points.yaml"
    start = CANDLE + [0.0, 0.1, 0.0, 0.0, 0.0]
    code = main(["excite", "--method", "random-points", "--points", "4", "--dwell", "0.5", "--out", str(out),
                 "--start", *map(repr, start.tolist()), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["method"] == "random-points" and report["out"] == str(out)
    loaded = load_trajectory(out)
    np.testing.assert_allclose(loaded.trajectory.waypoints[0], start)
    assert loaded.trajectory.waypoints.shape == (6, 5) and loaded.trajectory.dwell == 0.5


@pytest.mark.parametrize("argv, message", [
    (["--points", "3"], "--points do(es) not apply to --method fourier"),
    (["--method", "random-points", "--harmonics", "3"], "--harmonics do(es) not apply"),
    (["--start", "1", "2"], "--start needs 5 joint angles"),
    (["--start", "0", "0", "0", "0", "0"], "q_start"),
])
def test_cli_excite_bad_input_exits_2(tmp_path, capsys, argv, message):
    code = main(["excite", "--out", str(tmp_path / "x.yaml"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_cli_excite_runs_as_a_program(tmp_path):
    out = tmp_path / "p.yaml"
    proc = subprocess.run([sys.executable, "-m", "youbot_dynamics", "excite", "--method", "random-points",
                           "--points", "2", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "condition number" in proc.stdout and out.exists()


def test_the_friction_sweep_passes_every_speed_level_both_ways_within_the_limits():
    """``speed_sweep`` from the default excitation's start pose: starts and ends at rest there; per
    level every joint with room reaches the level's peak speed (the quintic's 15/8 d / T) moving up
    and moving down, in the level's sign pattern; the slow levels accelerate gently; every sample
    respects the position bounds, the reduced velocity and acceleration limits and the clearance."""
    from youbot_dynamics.identification.excitation.sweep import SWEEP_SPEEDS, direction_patterns, speed_sweep

    from youbot_dynamics.files.paths import config_path

    q0 = load_trajectory(config_path("excitation_default.yaml"), ARM.joint_names).trajectory.evaluate(0.0)[0]
    sweep = speed_sweep(LIMITS, q0)
    assert isinstance(sweep, WaypointTrajectory) and len(sweep.move_durations) == 4 * len(SWEEP_SPEEDS)
    q, dq, ddq = sweep.evaluate(np.linspace(0.0, sweep.duration, 40001))
    np.testing.assert_allclose(q[[0, -1]], [q0, q0], atol=1e-12)
    np.testing.assert_allclose(dq[[0, -1]], 0.0, atol=1e-12)
    assert np.all(LIMITS.configuration_ok(q))
    assert np.all(np.abs(dq) <= LIMITS.velocity_bound + 1e-9)
    assert np.all(np.abs(ddq) <= LIMITS.acceleration_bound + 1e-6)
    starts = np.concatenate([sweep.move_starts(), [sweep.duration]])
    t = np.linspace(0.0, sweep.duration, 40001)
    # rows 0-5 of the Sylvester-Hadamard matrix of order 8, first 5 columns (written out here)
    patterns = [[1, 1, 1, 1, 1], [1, -1, 1, -1, 1], [1, 1, -1, -1, 1], [1, -1, -1, 1, 1], [1, 1, 1, 1, -1],
                [1, -1, 1, -1, -1]]
    np.testing.assert_array_equal(direction_patterns(len(SWEEP_SPEEDS), ARM.n_joints), patterns)
    for k, (speed, signs) in enumerate(zip(sorted(SWEEP_SPEEDS), patterns)):
        level = (t >= starts[4 * k]) & (t < starts[4 * k + 4])
        peak_up, peak_down = dq[level].max(axis=0), -dq[level].min(axis=0)
        np.testing.assert_allclose(peak_up, peak_down, rtol=1e-3)  # both directions
        assert np.all(peak_up <= speed * (1 + 1e-3)), (speed, peak_up)
        assert np.sum(peak_up >= speed * (1 - 1e-3)) >= 3, (speed, peak_up)  # all but joints short of room
        first = (t >= starts[4 * k]) & (t < starts[4 * k + 1])  # the level's first move: out along its pattern
        np.testing.assert_array_equal(np.sign(q[first][-1] - q0), signs)
    slowest = t < starts[4]
    assert np.abs(ddq[slowest]).max() < 0.3  # [rad/s^2]: friction and gravity, hardly inertia
    with pytest.raises(ValueError, match="positive"):
        speed_sweep(LIMITS, q0, [0.1, -0.2])
    with pytest.raises(ValueError, match="above every joint's reduced velocity limit"):
        speed_sweep(LIMITS, q0, [0.1, 1.5])
