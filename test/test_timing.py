"""The loop statistics of youbot_dynamics.timing, against figures worked out by hand."""
from __future__ import annotations

import pytest

from youbot_dynamics.timing import LoopStatistics, spread


def test_spread_of_a_report_window():
    values = [k * 1e-3 for k in range(1, 101)]  # 1 .. 100 ms
    # median of 1..100 = 50.5; p99 (linear interpolation) = 99 + 0.01 x (100 - 99) = 99.01
    assert spread(values, "latency") == pytest.approx(
        {"latency_median_ms": 50.5, "latency_p99_ms": 99.01, "latency_max_ms": 100.0})
    assert spread(values[:3], "compute", "us", ("median",)) == pytest.approx({"compute_median_us": 2000.0})
    assert spread([], "state_age") == {"state_age_median_ms": 0.0, "state_age_p99_ms": 0.0, "state_age_max_ms": 0.0}


def test_missed_cycles_and_rate():
    stats = LoopStatistics(0.001)
    for now in (0.000, 0.001, 0.002, 0.0036, 0.0046):  # one period of 1.6 ms > 1.5 x 1 ms
        stats.tick(now)
    report = stats.report()
    assert report["cycles"] == 4 and report["missed_fraction"] == 0.25
    assert report["period_max_ms"] == pytest.approx(1.6) and report["rate_hz"] == pytest.approx(4 / 0.0046)
    assert stats.total_missed == 1 and stats.report()["cycles"] == 0  # a new window
