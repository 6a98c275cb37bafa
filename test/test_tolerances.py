"""Path and goal tolerances of a followed trajectory (control/tolerances.py): the FollowJointTrajectory
semantics (0 = the default, -1 = not checked), judged against hand-made states."""
from __future__ import annotations

import math

import numpy as np
import pytest

from youbot_dynamics.control.tolerances import (DEFAULT_GOAL, DEFAULT_PATH, JointTolerances, Outcome, ToleranceError,
                                                TrajectoryTolerances, resolve_tolerances)
from youbot_dynamics.control.trajectory import GOAL_REST_SPEED, GOAL_SETTLE_TIME, GOAL_TOLERANCE

NAMES = ("j1", "j2", "j3")
ZERO = np.zeros(3)


def test_zero_is_the_default_minus_one_unchecked_and_joints_in_any_order():
    tol = resolve_tolerances(NAMES, [("j3", 0.02, -1.0), ("j1", 0.0, 0.3)], (0.1, 0.5), "path")
    np.testing.assert_array_equal(tol.position, [0.1, 0.1, 0.02])
    np.testing.assert_array_equal(tol.velocity, [0.3, 0.5, math.inf])
    goal = resolve_tolerances(NAMES, [], DEFAULT_GOAL, "goal")
    np.testing.assert_array_equal(goal.position, [GOAL_TOLERANCE] * 3)
    np.testing.assert_array_equal(goal.velocity, [GOAL_REST_SPEED] * 3)
    assert np.all(np.isinf(resolve_tolerances(NAMES, [], DEFAULT_PATH, "path").position))


@pytest.mark.parametrize("entries, words", [
    ([("j4", 0.1, 0.1)], "unknown joint 'j4'"),
    ([("j1", 0.1, 0.1), ("j1", 0.2, 0.2)], "'j1' given twice"),
    ([("j2", -0.5, 0.0)], "path position tolerance of joint 'j2'"),
    ([("j2", 0.1, math.nan)], "path velocity tolerance of joint 'j2'"),
])
def test_bad_tolerances_are_refused_with_the_joint_named(entries, words):
    with pytest.raises(ToleranceError, match=words):
        resolve_tolerances(NAMES, entries, DEFAULT_PATH, "path")


def _tolerances(path: JointTolerances | None = None, goal_time: float = 0.0) -> TrajectoryTolerances:
    return TrajectoryTolerances.of(NAMES, start=10.0, end=12.0, final=np.array([1.0, 2.0, 3.0]), path=path,
                                   goal=JointTolerances(np.array([0.01, 0.01, 0.05]), np.full(3, 0.1)),
                                   goal_time=goal_time)


def test_path_tolerance_is_judged_against_the_reference_until_the_end():
    tol = _tolerances(JointTolerances(np.array([0.05, 0.05, 0.05]), np.array([math.inf, 0.2, math.inf])))
    q_d = np.array([0.5, 0.6, 0.7])
    assert tol.check(11.0, q_d + [0.049, -0.049, 0.0], ZERO, q_d, ZERO) is None
    outcome, text = tol.check(11.0, q_d + [0.0, -0.06, 0.0], ZERO, q_d, ZERO)
    assert outcome is Outcome.PATH_TOLERANCE_VIOLATED
    assert "j2 position -0.06 rad from the reference (tolerance 0.05 rad)" in text and "1.000 s into" in text
    outcome, text = tol.check(11.0, q_d, np.array([9.0, 0.3, 9.0]), q_d, ZERO)  # only j2's velocity is checked
    assert outcome is Outcome.PATH_TOLERANCE_VIOLATED and "j2 velocity +0.3 rad/s" in text
    # the worst relative to its bound is named: j1 1.2 x its bound, j3 2 x
    outcome, text = tol.check(11.0, q_d + [0.06, 0.0, 0.1], ZERO, q_d, ZERO)
    assert "j3 position +0.1 rad" in text
    # after the end the path no longer counts: a far reference is not a path violation
    assert tol.check(12.0, np.array([1.0, 2.0, 3.0]), ZERO, q_d, ZERO)[0] is Outcome.SUCCEEDED


def test_goal_reached_within_tolerance_and_at_rest_else_violated_after_goal_time():
    tol = _tolerances(goal_time=0.5)
    final = np.array([1.0, 2.0, 3.0])
    assert tol.check(11.99, final, ZERO, final, ZERO) is None  # not yet at the end
    outcome, text = tol.check(12.2, final + [0.009, -0.009, 0.049], np.full(3, 0.09), final, ZERO)
    assert outcome is Outcome.SUCCEEDED and "0.200 s after" in text
    off = final + [0.0, 0.02, 0.0]
    assert tol.check(12.5, off, ZERO, final, ZERO) is None  # within goal_time: still waiting
    outcome, text = tol.check(12.51, off, ZERO, final, ZERO)
    assert outcome is Outcome.GOAL_TOLERANCE_VIOLATED
    assert "j2 position +0.02 rad from the goal (tolerance 0.01 rad)" in text and "goal_time_tolerance 0.5 s" in text
    moving = tol.check(12.51, final, np.array([0.0, 0.0, 0.2]), final, ZERO)
    assert moving[0] is Outcome.GOAL_TOLERANCE_VIOLATED and "j3 velocity +0.2 rad/s" in moving[1]


def test_goal_time_zero_is_the_settle_time_of_a_reached_goal():
    tol = _tolerances(goal_time=0.0)
    assert tol.goal_time == GOAL_SETTLE_TIME
    with pytest.raises(ToleranceError, match="goal_time_tolerance"):
        TrajectoryTolerances.of(NAMES, 0.0, 1.0, ZERO, goal_time=math.inf)
