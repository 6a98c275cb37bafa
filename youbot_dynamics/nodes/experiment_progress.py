"""The identification experiment's ``~/progress`` (:func:`progress_status`): phase, percent, elapsed
and remaining time, the reason of an end, the output folder and, when done, the figures of the
result (doc/identification.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

from ..identification.experiment.session import ExcitationSession, ExperimentPhase

__all__ = ["DONE_VALUES", "progress_status"]

LEVELS = {ExperimentPhase.ABORTED: DiagnosticStatus.WARN, ExperimentPhase.FAILED: DiagnosticStatus.ERROR}
# ~/progress values when done: identification; recalibration (held-out moving rows, new and old model)
# relative_error: on the held-out motion when held_out is "different motion" (doc/identification.md)
DONE_VALUES = ("relative_error", "held_out", "same_motion_relative_error", "nominal_relative_error",
               "previous_relative_error", "payload_mass_kg", "update")


def progress_status(name: str, hardware_id: str, now: float, session: ExcitationSession | None,
                    run_directory: Path | None, result_summary: dict[str, Any]) -> DiagnosticStatus:
    """The status of ``session`` (None: idle) at ``now`` [s, node time]: WARN when aborted, ERROR when
    failed, else OK."""
    phase = session.phase if session is not None else ExperimentPhase.IDLE
    percent = session.progress(now) if session is not None else 0.0
    values = {"phase": phase.value, "percent": f"{percent:.1f}",
              "elapsed_s": f"{now - session.start_time:.1f}" if session and session.start_time else "0.0",
              "remaining_s": f"{session.remaining(now):.1f}" if session else "0.0",
              "reason": session.reason if session else "",
              "output": str(run_directory) if run_directory else ""}
    if phase is ExperimentPhase.DONE:
        values.update({k: f"{v:.6g}" if isinstance(v, float) else str(v) for k, v in result_summary.items()
                       if k in DONE_VALUES})
    message = f"{phase.value}: {percent:.0f}%" + (f" ({session.reason})" if session and session.reason else "")
    return DiagnosticStatus(level=LEVELS.get(phase, DiagnosticStatus.OK), name=name, message=message,
                            hardware_id=hardware_id, values=[KeyValue(key=k, value=v) for k, v in values.items()])
