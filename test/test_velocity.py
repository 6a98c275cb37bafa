"""Joint velocity from positions (youbot_dynamics.control.velocity), against exact derivatives."""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.control.velocity import VelocityFromPositions


def test_a_ramp_is_differentiated_exactly_over_jittered_stamps():
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.uniform(0.0005, 0.0015, 400))  # 1 kHz with +-0.5 ms jitter
    slope = np.array([0.5, -1.0, 0.0, 2.0, 0.1])
    estimator = VelocityFromPositions(5, time_constant=0.001)
    v = [estimator.update(tk, 1.0 + slope * tk, np.zeros(5)) for tk in t]
    np.testing.assert_allclose(v[-1], slope, rtol=0, atol=1e-9)  # settled: the exact slope


def test_a_sine_lags_by_about_the_time_constant():
    dt, w, tau = 0.001, 2 * np.pi * 2.0, 0.004
    t = np.arange(0, 2.0, dt)
    estimator = VelocityFromPositions(1, time_constant=tau)
    v = np.array([estimator.update(tk, np.array([np.sin(w * tk)]), np.zeros(1))[0] for tk in t])
    late = t > 1.0
    # first-order low-pass of the backward difference: phase lag atan(w T) + w dt / 2
    lag = np.arctan(w * tau) / w + dt / 2
    expected = w * np.cos(w * (t - lag)) / np.sqrt(1 + (w * tau) ** 2)
    assert np.max(np.abs(v[late] - expected[late])) < 0.01 * w


def test_repeated_stamps_keep_and_gaps_restart_from_the_reported_velocity():
    estimator = VelocityFromPositions(2, time_constant=0.001, max_step=0.02)
    first = estimator.update(0.0, np.zeros(2), np.array([0.3, -0.3]))
    np.testing.assert_array_equal(first, [0.3, -0.3])  # no history: the reported velocity
    moved = estimator.update(0.001, np.array([0.001, 0.0]), np.zeros(2))
    np.testing.assert_array_equal(estimator.update(0.001, np.array([5.0, 5.0]), np.zeros(2)), moved)  # same stamp
    np.testing.assert_array_equal(estimator.update(0.0005, np.array([5.0, 5.0]), np.zeros(2)), moved)  # older
    after_gap = estimator.update(0.5, np.array([9.0, 9.0]), np.array([0.2, 0.1]))
    np.testing.assert_array_equal(after_gap, [0.2, 0.1])


def test_bad_constants_are_refused():
    with pytest.raises(ValueError, match="positive"):
        VelocityFromPositions(5, time_constant=0.0)
