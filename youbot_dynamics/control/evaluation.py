"""Figures of a closed-loop run, from what a controller node publishes (no ROS here).

A run is the controller's ``~/state`` stream - rows ``[q_d, q, e, tau, t]``, ``t`` [s] the
steady-clock time of each state (``~/state`` in doc/control.md) - and its timing
reports on ``/diagnostics``.

* **Gaps.** A window whose samples leave a gap longer than :data:`MAX_GAP` (between two samples, or
  between an end of the window and its nearest sample; a window without any sample is one gap)
  is not measured: its figures read ``"not measured (gap of N ms)"`` (:func:`is_measured`),
  never an error (``~/state`` arrives over DDS: a busy machine drops or delays some of it).
* :func:`regulation_metrics`: error ``e = q_d - q`` after a step of the goal at ``t_goal``:
  the largest ``|e|`` over ``[t_goal + at - window, t_goal + at]`` (default: the 100 ms before
  2 s, the issue's "settles within 1 mrad in 2 s"), the settling time (from ``t_goal`` to the
  first sample after the last one with ``|e|`` above ``band``, over the whole recording), and the
  torque RMS.
* :func:`tracking_metrics`: RMS and largest ``|e|`` per joint and the torque RMS over a window.
* :func:`combine_timing`: one figure per run from several timing windows of the node: cycles and
  missed cycles summed exactly, the rate as cycles over time, the latency median as the median of
  the window medians (weighted by cycles: an approximation) and the p99 as the largest window
  p99 (an upper bound of the run's p99).
* :func:`format_table`: the plain-text table ``make demo`` prints.
* :func:`plot_runs`: error and torque per joint of several runs, one PNG (matplotlib, Agg).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_GAP", "split_state", "window_gap", "is_measured", "regulation_metrics", "tracking_metrics",
           "combine_timing", "format_table", "plot_runs"]

Array = NDArray[np.float64]
Figure = list[float] | str  # per joint, or "not measured (gap of N ms)"

# [s] longest gap in a window still measured: ~/state comes every 2-10 ms in the main job, and on a
# busy 2-core machine its recording had single gaps of 22-36 ms in 10 s tracking runs (stop 37), which
# do not change an RMS over seconds of motion; a window of an instant figure (0.1 s) stays unmeasured
# when half of it is missing
MAX_GAP = 0.05


def split_state(rows: Any, n_joints: int) -> tuple[Array, Array, Array, Array, Array]:
    """``(t, q_d, q, e, tau)`` from ``~/state`` rows (k, 5 n): ``t`` (k,) [s], the others (k, n);
    ``ValueError`` on a wrong width."""
    rows = np.asarray(rows, dtype=float)
    if rows.ndim != 2 or rows.shape[1] != 5 * n_joints:
        raise ValueError(f"~/state rows must have 5 x {n_joints} values, got shape {rows.shape}")
    q_d, q, e, tau, t = (rows[:, k * n_joints:(k + 1) * n_joints] for k in range(5))
    return t[:, 0], q_d, q, e, tau


def window_gap(t: Array, start: float, end: float) -> float:
    """The longest interval [s] of ``[start, end]`` without a sample of ``t`` (sorted): between two
    samples, or between an end of the window and its nearest sample (``end - start`` if none)."""
    inside = np.sort(t[(t >= start) & (t <= end)])
    return float(np.max(np.diff(np.concatenate([[start], inside, [end]]))))


def _not_measured(gap: float) -> str:
    return f"not measured (gap of {1e3 * gap:.0f} ms)"


def is_measured(value: Figure) -> bool:
    """A figure that was measured (not a "not measured (gap ...)" text)."""
    return not isinstance(value, str)


def _window(t: Array, start: float, end: float, max_gap: float) -> tuple[NDArray[np.bool_], str | None]:
    """The samples in ``[start, end]``, and why the window is not measured (``None`` if it is)."""
    gap = window_gap(t, start, end)
    return (t >= start) & (t <= end), (_not_measured(gap) if gap > max_gap else None)


def regulation_metrics(t: Any, error: Any, tau: Any, t_goal: float, *, at: float = 2.0, window: float = 0.1,
                       band: float = 1e-3, max_gap: float = MAX_GAP) -> dict[str, Figure]:
    """Figures of a step response (see the module docstring); every value is per joint, or
    ``"not measured (gap of N ms)"`` when its window has a gap longer than ``max_gap``.

    ``error_at``: ``max |e|`` over ``[t_goal + at - window, t_goal + at]`` [rad];
    ``settling_time``: ``t - t_goal`` of the sample after the last one with ``|e| > band`` (0 if
    none; over the whole recording after ``t_goal``, which must have no gap) [s],
    ``inf`` if the last sample is still outside the band; ``tau_rms`` over ``[t_goal, t_goal + at]``.
    """
    t, error, tau = (np.asarray(x, dtype=float) for x in (t, error, tau))
    end, end_gap = _window(t, t_goal + at - window, t_goal + at, max_gap)
    run, run_gap = _window(t, t_goal, t_goal + at, max_gap)
    after = t >= t_goal
    _, settling_gap = _window(t, t_goal, max(float(t[-1]) if t.size else t_goal, t_goal + at), max_gap)
    settling: Figure = []
    for e in np.abs(error[after]).T:
        outside = np.flatnonzero(e > band)
        if outside.size == 0:
            settling.append(0.0)
        elif outside[-1] == e.size - 1:
            settling.append(float("inf"))
        else:
            settling.append(float(t[after][outside[-1] + 1] - t_goal))
    return {"error_at": end_gap or np.abs(error[end]).max(axis=0).tolist(),
            "settling_time": settling_gap or settling,
            "tau_rms": run_gap or np.sqrt(np.mean(tau[run] ** 2, axis=0)).tolist()}


def tracking_metrics(t: Any, error: Any, tau: Any, start: float, end: float, *,
                     max_gap: float = MAX_GAP) -> dict[str, Figure]:
    """``rms_error``, ``max_error`` [rad] and ``tau_rms`` [N m] per joint over ``[start, end]``, each
    ``"not measured (gap of N ms)"`` when the window has a gap longer than ``max_gap``."""
    t, error, tau = (np.asarray(x, dtype=float) for x in (t, error, tau))
    mask, gap = _window(t, start, end, max_gap)
    if gap is not None:
        return {"rms_error": gap, "max_error": gap, "tau_rms": gap}
    return {"rms_error": np.sqrt(np.mean(error[mask] ** 2, axis=0)).tolist(),
            "max_error": np.abs(error[mask]).max(axis=0).tolist(),
            "tau_rms": np.sqrt(np.mean(tau[mask] ** 2, axis=0)).tolist()}


def combine_timing(reports: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """One timing figure from a node's report windows (keys of
    :meth:`~youbot_dynamics.nodes.controller_node.ControllerNode.timing_report`, or of
    :class:`~youbot_dynamics.timing.LoopStatistics` without the latency keys)."""
    reports = [r for r in reports if r.get("cycles", 0) > 0]
    if not reports:
        raise ValueError("no timing report with cycles")
    cycles = np.array([r["cycles"] for r in reports], dtype=float)
    missed = float(sum(r["missed_cycles"] if "missed_cycles" in r else r["missed_fraction"] * r["cycles"]
                       for r in reports))
    duration = float(sum(r["cycles"] / r["rate_hz"] for r in reports if r["rate_hz"] > 0))
    combined = {"cycles": float(cycles.sum()), "missed_cycles": missed, "missed_fraction": missed / float(cycles.sum()),
                "rate_hz": float(cycles.sum()) / duration if duration > 0 else 0.0}
    if all("latency_median_ms" in r for r in reports):
        medians = np.array([r["latency_median_ms"] for r in reports])
        order = np.argsort(medians)
        cumulative = np.cumsum(cycles[order])
        combined.update({
            "latency_median_ms": float(medians[order][np.searchsorted(cumulative, 0.5 * cumulative[-1])]),
            "latency_p99_ms": float(max(r["latency_p99_ms"] for r in reports)),
            "latency_max_ms": float(max(r["latency_max_ms"] for r in reports)),
            "compute_median_us": float(np.median([r["compute_median_us"] for r in reports]))})
    return combined


def _cell(value: Any, scale: float, digits: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return " ".join(_cell(v, scale, digits) for v in value)
    value = float(value) * scale
    return "inf" if np.isinf(value) else f"{value:.{digits}f}"


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, float, int]]) -> str:
    """A fixed-width text table: ``columns`` are ``(key, header, scale, digits)``; a list value
    (per joint) is printed as space-separated numbers; a missing key as ``-``."""
    cells = [[header for _, header, _, _ in columns]]
    for row in rows:
        cells.append([_cell(row[key], scale, digits) if key in row else "-" for key, _, scale, digits in columns])
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def plot_runs(path: str | Path, runs: Sequence[Mapping[str, Any]], joint_names: Sequence[str], title: str) -> Path:
    """Error [mrad] and torque [N m] per joint against time of each run (``label``, ``t``,
    ``error``, ``tau``) into one PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(joint_names)
    fig, axes = plt.subplots(2, n, figsize=(3.2 * n, 5.5), sharex=True, squeeze=False)
    for run in runs:
        t = np.asarray(run["t"], dtype=float)
        for j in range(n):
            axes[0, j].plot(t, 1e3 * np.asarray(run["error"])[:, j], lw=0.8, label=run["label"])
            axes[1, j].plot(t, np.asarray(run["tau"])[:, j], lw=0.8, label=run["label"])
    for j, name in enumerate(joint_names):
        axes[0, j].set_title(name)
        axes[1, j].set_xlabel("t [s]")
    axes[0, 0].set_ylabel("error q_d - q [mrad]")
    axes[1, 0].set_ylabel("torque [N m]")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
