"""The figures of ``make demo`` (control.evaluation, pure) and the main job end to end.

The pure tests check the metrics against closed-form signals (an exponential decay with a known
settling time, constant and sinusoidal errors with known RMS) and the exact bookkeeping of the
timing windows. The end-to-end test runs ``youbot-dynamics demo --skip-kinematics`` as a
subprocess (sim_node, identification_node and the controllers as their own processes, DDS domain
69, localhost only) and checks its summary with loose bounds: the table's accuracy goals are
asserted, the timing goals only reported (2 shared cores).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from youbot_dynamics.control.evaluation import (combine_timing, format_table, is_measured, plot_runs,
                                                regulation_metrics, split_state, tracking_metrics)
from conftest import ros_domain_id

DOMAIN_ID = ros_domain_id(__file__)


def test_regulation_metrics_on_an_exponential_decay():
    t = np.arange(0.0, 3.0, 1e-3)
    t_goal = 0.5
    tau_c = np.array([0.1, 0.2])  # time constants [s]; e = 0.3 exp(-(t - t_goal) / tau) after the step
    after = t >= t_goal
    error = np.zeros((t.size, 2))
    error[after] = 0.3 * np.exp(-(t[after, None] - t_goal) / tau_c)
    tau = np.ones((t.size, 2)) * [2.0, -3.0]
    m = regulation_metrics(t, error, tau, t_goal)
    # |e| <= 1 mrad from t - t_goal = tau ln(300): the first sample at or after it
    expected = tau_c * np.log(300.0)
    np.testing.assert_allclose(m["settling_time"], expected, atol=1.1e-3)
    np.testing.assert_allclose(m["error_at"], 0.3 * np.exp(-1.9 / tau_c), rtol=1e-2)  # max over [1.9, 2.0]
    np.testing.assert_allclose(m["tau_rms"], [2.0, 3.0])
    error[-1, 1] = 0.01  # outside the band at the end: not settled
    assert np.isinf(regulation_metrics(t, error, tau, t_goal)["settling_time"][1])
    assert regulation_metrics(t, error, tau, t_goal=2.5)["error_at"] == "not measured (gap of 100 ms)"  # issue 31


def test_tracking_metrics_and_state_rows():
    t = np.linspace(0.0, 1.0, 1001)
    error = np.column_stack([np.full_like(t, 2e-3), 1e-3 * np.sin(2 * np.pi * 5 * t)])
    tau = np.column_stack([np.full_like(t, -1.0), np.zeros_like(t)])
    m = tracking_metrics(t, error, tau, 0.0, 1.0)
    np.testing.assert_allclose(m["rms_error"], [2e-3, 1e-3 / np.sqrt(2)], rtol=2e-3)
    np.testing.assert_allclose(m["max_error"], [2e-3, 1e-3], rtol=1e-4)
    np.testing.assert_allclose(m["tau_rms"], [1.0, 0.0])
    rows = np.r_[np.arange(20.0), np.full(5, 7.5)].reshape(1, 25)
    t5, q_d, q, e, tau5 = split_state(rows, 5)
    assert q_d.tolist() == [[0, 1, 2, 3, 4]] and tau5.tolist() == [[15, 16, 17, 18, 19]] and t5.tolist() == [7.5]
    with pytest.raises(ValueError, match="5 x 5"):
        split_state(np.zeros((3, 20)), 5)


def test_combine_timing_sums_windows_exactly():
    windows = [{"cycles": 1000.0, "missed_cycles": 2.0, "rate_hz": 1000.0, "latency_median_ms": 0.1,
                "latency_p99_ms": 0.3, "latency_max_ms": 1.0, "compute_median_us": 90.0},
               {"cycles": 500.0, "missed_cycles": 10.0, "rate_hz": 500.0, "latency_median_ms": 0.2,
                "latency_p99_ms": 0.9, "latency_max_ms": 4.0, "compute_median_us": 110.0},
               {"cycles": 0.0, "rate_hz": 0.0}]  # an empty window is skipped
    c = combine_timing(windows)
    assert c["cycles"] == 1500.0 and c["missed_cycles"] == 12.0
    assert c["missed_fraction"] == pytest.approx(12.0 / 1500.0)
    assert c["rate_hz"] == pytest.approx(1500.0 / 2.0)  # 1 s + 1 s
    assert c["latency_median_ms"] == 0.1  # 1000 of 1500 cycles in the 0.1 ms window
    assert c["latency_p99_ms"] == 0.9 and c["latency_max_ms"] == 4.0
    loop = combine_timing([{"cycles": 100.0, "missed_fraction": 0.05, "rate_hz": 1000.0}])
    assert loop["missed_cycles"] == pytest.approx(5.0) and "latency_p99_ms" not in loop
    with pytest.raises(ValueError):
        combine_timing([])


def test_run_timing_names_the_arms_longest_period():
    from youbot_dynamics.demo.runs import ControlRun, run_timing  # rclpy: only here

    run = ControlRun("computed torque", "computed_torque_controller", {})
    run.reports = [{"cycles": 1000.0, "missed_cycles": 1.0, "rate_hz": 1000.0}]
    run.arm_reports = [{"cycles": 1000.0, "missed_fraction": 0.001, "rate_hz": 1000.0, "period_max_ms": 31.9},
                       {"cycles": 1000.0, "missed_fraction": 0.0, "rate_hz": 1000.0, "period_max_ms": 2.5},
                       {"cycles": 0.0, "missed_fraction": 0.0, "rate_hz": 0.0, "period_max_ms": 90.0}]  # empty window
    timing = run_timing(run)
    assert timing["arm_period_max_ms"] == 31.9  # the stall of the first window, not the last's figure
    assert timing["arm_missed_fraction"] == pytest.approx(0.0005) and timing["missed_fraction"] == 0.001
    run.arm_reports = [{"cycles": 10.0, "missed_fraction": 0.0, "rate_hz": 1000.0}]  # an arm that reports no period
    assert "arm_period_max_ms" not in run_timing(run)


def test_format_table_and_plot(tmp_path):
    text = format_table([{"label": "a", "e": [1e-3, 2e-3]}, {"label": "bb"}],
                        [("label", "controller", 1.0, 0), ("e", "error [mrad]", 1e3, 1)])
    lines = text.splitlines()
    assert lines[0].split() == ["controller", "error", "[mrad]"]
    assert lines[2].split() == ["a", "1.0", "2.0"] and lines[3].split() == ["bb", "-"]
    t = np.linspace(0, 1, 50)
    path = plot_runs(tmp_path / "p.png", [{"label": "x", "t": t, "error": np.zeros((50, 2)), "tau": np.ones((50, 2))}],
                     ["j1", "j2"], "title")
    assert path.stat().st_size > 1000


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.main_job  # make demo-test: left out of make test (doc/main_job.md, "The end-to-end check")
@pytest.mark.timeout(420)
def test_main_job_end_to_end(tmp_path):
    env = dict(os.environ, ROS_DOMAIN_ID=DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    out = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "youbot_dynamics", "demo", "--skip-kinematics", "--out", str(out)],
                            env=env, capture_output=True, text=True, timeout=400)
    print(result.stdout[-6000:])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    ident = summary["identification"]
    # the simulator's true robot has friction beyond the fitted structures (issue 13): measured 4.07 %,
    # joints up to 6.5 %, moving rows 2.9 % on a later period of the same motion (the bounds were 2 % and
    # 5 % on the seed's robot); since issue 31 on the held-out validation trajectory, a different motion:
    # 5.1 %, joints up to 7.7 %, moving rows 4.14-4.23 % (three runs, stop 37)
    assert ident["errors_on"].startswith("held-out data: a different motion")
    assert ident["relative_error"] < 0.06 and max(ident["joint_relative_errors"]) < 0.10
    assert ident["moving_relative_error"] < 0.055
    assert ident["nominal_relative_error"] > 5 * ident["relative_error"]
    pd_gravity, pd_only = summary["regulation"]
    assert max(pd_gravity["error_at"]) < 2e-3  # goal 1 mrad; loose under load
    ct, nominal, pd = summary["tracking"]
    for run in (ct, nominal, pd):  # a recording with a gap is not measured (the machine stalled the recorder)
        assert not isinstance(run["rms_error"], str), f"{run['label']}: tracking error {run['rms_error']}"
    # goal 1 mrad, judged by the job; here a bound against gross breakage (what the model buys is the
    # two ratios below). The error grows with the real time the simulator loses on a busy machine
    # (it steps late and does not catch up, while the controller's reference runs on the wall clock):
    # offline, 2 % of the steps 1 ms late turned 0.3-1.1 mrad into 0.9-1.7 mrad; a CI run with the
    # arm missing 4.4 % of its cycles gave 2.1-5.4 mrad (stop 27), an earlier loaded run 9 mrad
    assert max(ct["rms_error"]) < 15e-3
    assert min(np.asarray(nominal["rms_error"]) / np.asarray(ct["rms_error"])) > 5.0
    assert np.mean(pd["rms_error"]) > 2.0 * np.mean(ct["rms_error"])
    for run in summary["regulation"] + summary["tracking"]:
        assert run["cycles"] > 0 and run["latency_median_ms"] > 0.0  # reported (the timing goals: make bench)
    assert all((out / name).stat().st_size > 1000 for name in ("regulation.png", "tracking.png", "external.png"))
    # issue 17's phase: its goals are judged by the job (a quiet run met all of them: README); here
    # bounds against gross breakage
    external = summary["external"]
    assert max(external["push"]["rms_error_nm"]) < 0.6  # goal 0.3 N m; measured 0.09-0.17
    assert max(external["push"]["peak_true_nm"]) > 1.5
    collision = external["collision"]
    if collision["delay_s"] is None:  # both detection strokes stopped by a collision before the push (seen
        # in two loaded CI runs: 1.01-1.02 N m on joint 2 against 0.94-1.01): the goals count it as missed
        assert collision["false_alarms"] and all("reaction stop" in s for s in collision["false_alarms"])
    else:
        assert 0.0 <= collision["delay_s"] < 0.1 and "reaction stop" in collision["status"]
    floating = external["float"]
    assert floating["moved_rad"][1] > 0.05 and max(floating["drift_rad_per_s"]) < 5e-3
    payload = external["payload"]
    assert abs(payload["mass_kg"] - 0.5) < 0.1  # measured 0.478-0.485 kg
    # tracking with the estimate applied: 1.35 x the run without payload; a run whose recording has a gap
    # (> MAX_GAP: seen once in a loaded fresh-clone run, stop 37) has no ratio and the job counts its goal
    # as missed
    assert max(payload["ratio"]) < 10.0 if is_measured(payload["ratio"]) else not external["goals"][
        "payload_tracking_within_2x"]
    assert "series" not in external["push"] and "series" not in payload  # plotted, not in the summary
