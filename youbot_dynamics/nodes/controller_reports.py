"""What a controller node tells (:class:`ControllerReports`): its status lines (the log and
``~/status``, in order, from a reporting thread: a log line costs the control thread 0.3-0.6 ms),
``~/state`` (desired, measured, error, torque) and ``/diagnostics`` with the timing of its cycles
(:mod:`.controller_diagnostics`); doc/control.md."""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout, String

from ..control.loop import ControlLoop
from ..control.safety import STALL_BOUND
from ..timing import LoopStatistics
from .common import background_worker
from .controller_diagnostics import CycleTimes, controller_status

__all__ = ["ControllerReports", "STATE_QUANTITIES"]

QOS_DEPTH = 10
STATE_QUANTITIES = ("q_desired", "q", "error", "tau", "time")

Array = np.ndarray


class ControllerReports:
    """The reporting side of controller ``node`` (joint names ``joint_names``, control ``rate`` [Hz]):
    :meth:`status` lines, :meth:`publish_state`, the cycle timing (:attr:`statistics`, :attr:`times`)
    and :meth:`publish_diagnostics` of ``loop`` (set once it exists), all but the timing's
    bookkeeping done by its reporting thread."""

    def __init__(self, node: Node, joint_names: tuple[str, ...], rate: float) -> None:
        self._node = node
        self._worker = background_worker(f"{node.get_name()}_status")
        self.loop: ControlLoop | None = None
        self.last_refusal: str | None = None  # kept at once (not by the thread)
        self.last_status = ""
        self.last_report: dict[str, float] = {}
        #: timing: per-cycle latency and compute time, swapped out by :meth:`timing_report`
        self.statistics = LoopStatistics(1.0 / rate)
        self.times = CycleTimes()
        self.wall_offset = time.time() - time.perf_counter()  # wall clock = steady clock + this
        self._joint_names = joint_names
        n = len(joint_names)
        self._state_msg = Float64MultiArray(layout=MultiArrayLayout(dim=[
            MultiArrayDimension(label="quantity:" + "|".join(STATE_QUANTITIES), size=len(STATE_QUANTITIES),
                                stride=len(STATE_QUANTITIES) * n),
            MultiArrayDimension(label="joint:" + "|".join(joint_names), size=n, stride=n)]))
        self.state_pub = node.create_publisher(Float64MultiArray, '~/state', QOS_DEPTH)
        self.status_pub = node.create_publisher(String, '~/status', QOS_DEPTH)
        self.diagnostics_pub = node.create_publisher(DiagnosticArray, '/diagnostics', QOS_DEPTH)

    def status(self, text: str, *, refused: bool = False, error: bool = False) -> None:
        """Log ``text`` and publish it on ``~/status``, in order, from the reporting thread; a refusal is
        kept in :attr:`last_refusal` at once."""
        if refused:
            self.last_refusal = text
        self.last_status = text
        self._worker.submit(self._emit_status, text, refused, error)

    def _emit_status(self, text: str, refused: bool, error: bool) -> None:
        logger = self._node.get_logger()  # one call site per severity (rclpy keys its log filters by caller)
        if error:
            logger.error(text)
        elif refused:
            logger.warning(text)
        else:
            logger.info(text)
        self.status_pub.publish(String(data=text))

    def submit(self, job: Callable[..., None], *args: Any) -> None:
        """Run ``job(*args)`` in the reporting thread, in order with the status lines (publishing from
        the control thread costs it 0.1-0.5 ms)."""
        self._worker.submit(job, *args)

    def publish_state(self, now: float, desired: Array | None, q: Array | None, tau: Array) -> None:
        """``~/state`` at ``now``: ``desired`` and measured ``q`` (NaN where absent), their error, ``tau``."""
        n = len(self._joint_names)
        q_d = np.full(n, np.nan) if desired is None else desired
        q_m = np.full(n, np.nan) if q is None else q
        self._state_msg.data = np.concatenate([q_d, q_m, q_d - q_m, tau, np.full(n, now)]).tolist()
        self.state_pub.publish(self._state_msg)

    def timing_report(self, stalls: int) -> dict[str, float]:
        """Rate, jitter and missed cycles of the control timer, latency (joint state arrival to
        torque publication), state age at the torque's publication (doc/control.md) and compute time
        per cycle since the previous report; ``stalls`` the node's deferred cycles."""
        report = self.statistics.report()
        report.update({
            "missed_cycles": round(report["missed_fraction"] * report["cycles"]),
            "total_cycles": float(self.statistics.total_cycles),
            "total_missed": float(self.statistics.total_missed),
            "stalls": float(stalls),
            "coast_cycles": float(self.loop.guard.coast_cycles),
            **self.times.report(),
        })
        return report

    def publish_diagnostics(self, label: str, hardware_id: str, stalls: int) -> None:
        """``/diagnostics``: the timing report and the guard's state (:func:`.controller_status`)."""
        report = self.timing_report(stalls)
        self.last_report = report
        loop = self.loop
        collisions = 0 if loop.observer is None else loop.observer.collisions
        status = controller_status(
            f"{self._node.get_name()}: {label}", hardware_id, report, loop.guard.state, loop.guard.fault_reason,
            self._joint_names, loop.guard.saturated,
            {"last_refusal": self.last_refusal or "", "collisions": str(collisions),
             "floating": str(loop.floating).lower()}, loop.guard.limited == STALL_BOUND)
        array = DiagnosticArray(status=[status])
        array.header.stamp = self._node.get_clock().now().to_msg()
        self.diagnostics_pub.publish(array)

    def shutdown(self) -> None:
        """Flush the reports not yet sent and end the thread."""
        self._worker.shutdown(wait=True, cancel_futures=False)
