"""What a controller node reports on ``/diagnostics``: the timing of its cycles since the previous
report (:class:`CycleTimes`) and the status built from it and the guard (:func:`controller_status`)."""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

from ..control import GuardState
from ..timing import spread

__all__ = ["CycleTimes", "MISSED_WARNING", "controller_status"]

MISSED_WARNING = 0.01  # more missed cycles than this fraction of a report window: WARN


class CycleTimes:
    """Per cycle that commanded a torque: its latency (state arrival to torque), its compute time and
    the age of its state by the state's stamp (when the stamp is on the wall clock); thread-safe,
    taken by :meth:`report`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latencies: list[float] = []
        self._costs: list[float] = []
        self._ages: list[float] = []

    def add(self, latency: float, cost: float, age: float | None) -> None:
        with self._lock:
            self._latencies.append(latency)
            self._costs.append(cost)
            if age is not None:
                self._ages.append(age)

    def report(self) -> dict[str, float]:
        """``latency_*_ms``, ``state_age_*_ms`` (median, p99, max), ``compute_*_us`` (median, p99) of
        the cycles since the previous call."""
        with self._lock:
            latencies, self._latencies = self._latencies, []
            costs, self._costs = self._costs, []
            ages, self._ages = self._ages, []
        return {**spread(latencies, "latency"), **spread(ages, "state_age"),
                **spread(costs, "compute", "us", ("median", "p99"))}


def controller_status(name: str, hardware_id: str, report: dict[str, float], state: GuardState,
                      fault_reason: str | None, joint_names: Sequence[str], saturated: np.ndarray,
                      extra: dict[str, str], stall_limited: np.ndarray | None = None) -> DiagnosticStatus:
    """The controller's status: ERROR in a fault, WARN beyond :data:`MISSED_WARNING` missed cycles,
    else OK; the report's figures, the guard's state, fault reason, the joints saturated at the torque
    limit and those limited by the stall bound in the last cycle, and ``extra``."""
    values = {k: f"{v:.6g}" for k, v in report.items()}
    names = np.asarray(joint_names)
    values.update(state=state.value, fault_reason=fault_reason or "", saturated=",".join(names[saturated]),
                  stall_limited="" if stall_limited is None else ",".join(names[stall_limited]), **extra)
    level = (DiagnosticStatus.ERROR if state is GuardState.FAULT
             else DiagnosticStatus.WARN if report["missed_fraction"] > MISSED_WARNING else DiagnosticStatus.OK)
    message = f"fault: {fault_reason}" if state is GuardState.FAULT else state.value
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                            values=[KeyValue(key=k, value=v) for k, v in values.items()])
