"""Trajectories timed from their ``header.stamp`` (commands.from_stamp, used by sim_node and youbot_driver)."""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.motion.commands import STAMP_TOLERANCE, CommandError, from_stamp

TIMES = np.array([0.1, 0.2, 0.3])
POS = np.arange(15.0).reshape(3, 5)
VEL = POS + 100.0


def test_waypoints_already_due_are_dropped_and_the_rest_keep_their_absolute_times():
    times, pos, vel, acc = from_stamp(TIMES, POS, VEL, None, 0.15, 0.001)
    np.testing.assert_allclose(times, [0.05, 0.15])
    np.testing.assert_array_equal(pos, POS[1:])
    np.testing.assert_array_equal(vel, VEL[1:])
    assert acc is None


def test_a_stamp_in_the_future_delays_the_waypoints():
    times, pos, _, _ = from_stamp(TIMES, POS, None, None, -0.05, 0.001)
    np.testing.assert_allclose(times, TIMES + 0.05)
    np.testing.assert_array_equal(pos, POS)


def test_when_every_waypoint_is_past_the_last_is_held():
    times, pos, vel, acc = from_stamp(TIMES, POS, VEL, VEL, 0.5, 0.001)
    np.testing.assert_allclose(times, [0.001])
    np.testing.assert_array_equal(pos, POS[-1:])
    assert vel is None and acc is None


@pytest.mark.parametrize("elapsed", [STAMP_TOLERANCE + 0.01, -STAMP_TOLERANCE - 0.01, 1.7e9])
def test_a_stamp_from_another_clock_is_refused(elapsed):
    with pytest.raises(CommandError, match="use_sim_time on one side only"):
        from_stamp(TIMES, POS, None, None, elapsed, 0.001)
