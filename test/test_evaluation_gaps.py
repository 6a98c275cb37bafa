"""The main job's figures on a ``~/state`` stream with a gap (issue 31): every evaluation window
that a gap crosses reads "not measured (gap of N ms)", never an exception; the windows beside it
are measured as before. Pure Python (control.evaluation), against closed-form signals."""
from __future__ import annotations

import numpy as np

from youbot_dynamics.control.evaluation import (MAX_GAP, format_table, is_measured, regulation_metrics,
                                                tracking_metrics, window_gap)


def _decay(t: np.ndarray, t_goal: float) -> np.ndarray:
    """``e = 0.3 exp(-(t - t_goal) / 0.1)`` after the step (two joints), 0 before."""
    e = np.where(t >= t_goal, 0.3 * np.exp(-np.clip(t - t_goal, 0.0, None) / 0.1), 0.0)
    return np.column_stack([e, 0.5 * e])


def test_a_gap_in_a_window_is_reported_not_raised():
    t = np.arange(0.0, 3.0, 2e-3)  # ~/state at 500 Hz, as in the main job
    t_goal = 0.5
    # the crash of issue 31: no sample in the 100 ms before t_goal + 2 s
    hole = (t > t_goal + 1.9 - 1e-9) & (t < t_goal + 2.0 + 1e-9)
    tg, error, tau = t[~hole], _decay(t[~hole], t_goal), np.ones((int((~hole).sum()), 2))
    m = regulation_metrics(tg, error, tau, t_goal)
    assert m["error_at"] == "not measured (gap of 100 ms)"  # no sample in the whole window
    # [t_goal, t_goal + 2 s]: from the sample before the hole (2.398 s) to the window's end (2.5 s);
    # the settling time's window (to the end of the stream): to the sample after the hole (2.502 s)
    assert m["tau_rms"] == "not measured (gap of 102 ms)" and m["settling_time"] == "not measured (gap of 104 ms)"
    assert not is_measured(m["error_at"])
    # the same stream without the hole: every figure measured, the closed-form values
    full = regulation_metrics(t, _decay(t, t_goal), np.ones((t.size, 2)), t_goal)
    assert all(is_measured(v) for v in full.values())
    np.testing.assert_allclose(full["error_at"], 0.3 * np.exp(-1.9 / 0.1) * np.array([1.0, 0.5]), rtol=2e-2)
    np.testing.assert_allclose(full["settling_time"], 0.1 * np.log([300.0, 150.0]), atol=2.1e-3)
    # tracking: a window that the hole crosses is not measured; one beside it is
    assert tracking_metrics(tg, error, tau, 2.0, 2.7) == {k: "not measured (gap of 104 ms)"
                                                          for k in ("rms_error", "max_error", "tau_rms")}
    beside = tracking_metrics(tg, error, tau, 0.0, 0.4)
    np.testing.assert_allclose(beside["rms_error"], [0.0, 0.0])
    # a window past the end of the stream is one gap, not an error
    assert tracking_metrics(t, _decay(t, t_goal), np.ones((t.size, 2)), 5.0, 5.1)["rms_error"] == \
        "not measured (gap of 100 ms)"
    # the main job's table prints the text in place of the numbers
    table = format_table([{"label": "PD", **m}], [("label", "controller", 1.0, 0), ("error_at", "|e|", 1e3, 3)])
    assert "not measured (gap of 100 ms)" in table


def test_gaps_up_to_max_gap_are_measured():
    t = np.arange(0.0, 1.0, 1e-3)
    keep = (t < 0.5) | (t >= 0.5 + 0.9 * MAX_GAP)  # a gap just below the limit
    assert window_gap(t[keep], 0.0, 0.999) < MAX_GAP
    m = tracking_metrics(t[keep], np.ones((keep.sum(), 1)), np.zeros((keep.sum(), 1)), 0.0, 0.999)
    assert m["rms_error"] == [1.0]
    assert window_gap(t, 0.2, 0.3) == np.float64(np.max(np.diff(np.r_[0.2, t[(t >= 0.2) & (t <= 0.3)], 0.3])))
