"""Joint unit conversions of the driver (youbot_dynamics.driver.units) against the hardware notes.

Expected values are the numbers printed in shared/youbot_hardware.md (tick limits and the driver
range in radians, amperes per N m, peak torques), not values computed by the code under test.
"""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.driver.units import JointUnits

ARM = default_arm()


@pytest.fixture
def units():
    return JointUnits(ARM)


def test_tick_limits_give_the_documented_driver_range(units):
    # doc table: limits [ticks] and driver range [rad] (5 decimals)
    low_ticks = [-580000, -260000, -320000, -155000, -255000]
    high_ticks = [-1000, -1000, -1000, -1000, -5000]
    rad_of_low = [5.84014, 2.61799, -5.02655, 3.42920, 5.64159]
    rad_of_high = [0.01007, 0.01007, -0.01571, 0.02212, 0.11062]
    np.testing.assert_allclose(units.ticks_to_rad(low_ticks), rad_of_low, atol=1e-5)
    np.testing.assert_allclose(units.ticks_to_rad(high_ticks), rad_of_high, atol=1e-5)


def test_one_newton_metre_needs_the_documented_current(units):
    # 0.191 / 0.191 / 0.299 / 0.276 / 0.287 A per N m, sign flipped on inverse-direction joints (1, 2, 4, 5)
    assert units.nm_to_ma(np.ones(5)).tolist() == [-191, -191, 299, -276, -287]
    assert units.nm_to_ma(-np.ones(5)).tolist() == [191, 191, -299, 276, 287]


def test_max_current_gives_the_documented_peak_torque(units):
    peak = units.ma_to_nm(units.sign * units.max_current_ma)
    np.testing.assert_allclose(peak, [30.0, 30.0, 13.0, 9.9, 6.1], atol=0.15)
    assert units.max_current_ma.tolist() == [5768, 5768, 3899, 2746, 1750]


def test_velocity_in_motor_rpm(units):
    # 1 rad/s at the joint = N * 60 / (2 pi) motor rpm: 1489.69 (N = 156), 954.9 (100), 678.0 (71)
    assert units.rad_s_to_rpm(np.ones(5)).tolist() == [-1490, -1490, 955, -678, -678]
    np.testing.assert_allclose(units.rpm_to_rad_s([-1490, 0, 955, 0, 0]), [1.00021, 0, 1.00007, 0, 0], atol=1e-5)


def test_round_trips_are_exact_to_quantisation(units):
    rng = np.random.default_rng(7)
    q = rng.uniform(ARM.position_min, ARM.position_max, size=(200, 5))
    assert np.all(np.abs(units.ticks_to_rad(units.rad_to_ticks(q)) - q) <= 0.5 * units.rad_per_tick + 1e-15)
    ticks = rng.integers(-600000, 600000, size=(200, 5))
    assert np.array_equal(units.rad_to_ticks(units.ticks_to_rad(ticks)), ticks)
    rpm = rng.integers(-9000, 9000, size=(200, 5))
    assert np.array_equal(units.rad_s_to_rpm(units.rpm_to_rad_s(rpm)), rpm)
    ma = rng.integers(-5768, 5768, size=(200, 5))
    assert np.array_equal(units.nm_to_ma(units.ma_to_nm(ma)), ma)
    tau = rng.uniform(-10, 10, size=(200, 5))
    assert np.all(np.abs(units.ma_to_nm(units.nm_to_ma(tau)) - tau) <= 0.5 * units.nm_per_ma + 1e-12)


def test_calibration_offsets_shift_the_zero(units):
    units.set_offsets([1000, 0, -2000, 0, 5])
    assert units.ticks_to_rad([1000, 0, -2000, 0, 5]).tolist() == [0.0] * 5
    assert units.rad_to_ticks(np.zeros(5)).tolist() == [1000, 0, -2000, 0, 5]
    with pytest.raises(ValueError):
        units.set_offsets([0.5, 0, 0, 0, 0])
    with pytest.raises(ValueError):
        units.set_offsets([0, 0, 0])
