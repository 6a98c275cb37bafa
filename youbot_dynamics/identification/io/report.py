"""The identification report: ``report.json`` with every metric, PNG plots, and a progress bar.

Plots (matplotlib, Agg backend, no display needed), on the validation data when given, else on
the identification data:

* ``torques.png``: measured and predicted (identified and baseline) torque per joint;
* ``residuals.png``: measured minus predicted torque per joint.

Every file is written atomically (:mod:`youbot_dynamics.files.fileio`).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence, TextIO

import numpy as np
from numpy.typing import NDArray

from ...files.fileio import atomic_write_text, atomic_writer
from ..estimation.processing import Observation

__all__ = ["ProgressBar", "write_json", "plot_torques"]

Array = NDArray[np.float64]
MAX_PLOT_POINTS = 4000


class ProgressBar:
    """``label [#####.....]  50% 1.2 s`` on ``stream`` (stderr), redrawn in place on a terminal,
    one line when done otherwise. Call with a fraction in [0, 1]; :meth:`done` ends the line."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label, self.width = label, width
        self.stream = stream if stream is not None else sys.stderr
        self._start = time.perf_counter()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._filled = -1

    def __call__(self, fraction: float) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(round(fraction * self.width))
        if self._tty and filled != self._filled:
            self._filled = filled
            self.stream.write("\r" + self._line(fraction, filled))
            self.stream.flush()

    def _line(self, fraction: float, filled: int) -> str:
        bar = "#" * filled + "." * (self.width - filled)
        return f"{self.label:<24s} [{bar}] {100 * fraction:3.0f}% {time.perf_counter() - self._start:6.1f} s"

    def done(self) -> float:
        """Finish the bar; returns the elapsed time [s]."""
        self.stream.write(("\r" if self._tty else "") + self._line(1.0, self.width) + "\n")
        self.stream.flush()
        return time.perf_counter() - self._start


def write_json(path: str | Path, report: dict[str, Any]) -> None:
    """Write ``report`` (plain data) as indented JSON, atomically; non-finite numbers become ``null``."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, float) and not np.isfinite(value):
            return None
        return value

    atomic_write_text(path, json.dumps(clean(report), indent=2) + "\n")


def plot_torques(directory: str | Path, observations: Sequence[Observation], predictions: dict[str, Array],
                 title: str) -> list[Path]:
    """``torques.png`` and ``residuals.png`` of measured vs ``predictions`` (label -> (M, n))."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    tau = np.concatenate([o.tau for o in observations])
    # time axis: each observation continues where the previous one ended
    t_parts, offset = [], 0.0
    for o in observations:
        t_parts.append(o.t - o.t[0] + offset)
        offset = t_parts[-1][-1] + 1.0 / o.sample_rate
    t = np.concatenate(t_parts)
    step = max(1, t.size // MAX_PLOT_POINTS)
    n = tau.shape[1]
    paths = []
    for name, residual in (("torques.png", False), ("residuals.png", True)):
        fig, axes = plt.subplots(n, 1, sharex=True, figsize=(10, 2.0 * n), squeeze=False)
        for j, ax in enumerate(axes[:, 0]):
            if not residual:
                ax.plot(t[::step], tau[::step, j], color="black", lw=1.0, label="measured")
            for label, tau_hat in predictions.items():
                y = tau - tau_hat if residual else tau_hat
                ax.plot(t[::step], y[::step, j], lw=0.8, label=label)
            ax.set_ylabel(f"{'residual' if residual else 'tau'}{j + 1} [N m]")
            ax.grid(True, alpha=0.3)
        axes[0, 0].legend(loc="upper right", fontsize="small")
        axes[-1, 0].set_xlabel("t [s] (filtered, decimated)")
        fig.suptitle(f"{title}: {'measured - predicted' if residual else 'measured vs predicted'} torque")
        fig.tight_layout()
        path = directory / name
        try:
            with atomic_writer(path, binary=True) as handle:
                fig.savefig(handle, format="png", dpi=100)
        finally:
            plt.close(fig)
        paths.append(path)
    return paths
