"""A controller node's side of each control cycle (:class:`ControllerCycle`), around the pure-Python
:class:`~youbot_dynamics.control.loop.ControlLoop`'s ``command`` and ``after``: a cycle the node
itself was too late for is deferred, the first state enables when asked at start, and after the
torque went out the cycle's timing, ``~/state``, ``/diagnostics`` and the publishers check follow
(doc/control.md). The node publishes the torque (over DDS) or hands it to its host (in the bus cycle)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..control import GuardState
from ..control.loop import ControlLoop, JointSample
from .controller_reports import ControllerReports
from .joint_state_publishers import JointStatePublishers

__all__ = ["ControllerCycle", "Step"]

Array = np.ndarray


@dataclass
class Step:
    """One cycle's decision, between the torque and the rest of the cycle."""

    start: float  # [s, perf_counter] the cycle's start
    state: JointSample | None  # the joint state used
    tau: Array
    publish: bool  # the torque goes out (else nothing is commanded)
    header: float | None  # [s] the state's stamp (None: unstamped)
    end: float = 0.0  # [s, perf_counter] the torque went out


class ControllerCycle:
    """The cycles of ``loop`` as a node runs them: ``reports`` for the timing and what is published,
    ``publishers`` checked after each cycle, ``params`` the node's (``enabled_on_start``,
    ``state_publish_decimation``, ``diagnostics_period``, ``log_throttle_period``), ``enable`` the
    node's enable (at the first state when ``enabled_on_start``), ``logger`` for the coasting lines,
    ``hardware_id`` the arm's name (diagnostics), ``lock`` held by every cycle."""

    def __init__(self, loop: ControlLoop, reports: ControllerReports, publishers: JointStatePublishers, params: Any,
                 enable: Callable[[], tuple[bool, str]], logger: Any, hardware_id: str, lock: threading.Lock) -> None:
        self.loop, self.reports, self.publishers, self.params = loop, reports, publishers, params
        self.lock = lock  # the node's cycle lock: held by every cycle
        self._step: Step | None = None  # hosted: the cycle between host_command and host_after_outputs
        self._enable, self._logger, self._hardware_id = enable, logger, hardware_id
        self.enable_pending = bool(params.enabled_on_start)
        self.last_cycle = time.perf_counter()  # [s, perf_counter] the last cycle's start
        self.stalls = 0  # cycles deferred because the node itself had stalled (see decide)
        self.last_torque = np.zeros(loop.arm.n_joints)  # the last command (zero when nothing is commanded)
        self._deferred = False
        self._count = 0
        self._diagnostics_due = time.perf_counter() + params.diagnostics_period

    def run(self, publish: Callable[[Array], None]) -> None:
        """One control cycle over DDS: ``publish(tau)`` if the cycle commands, then the rest of the cycle."""
        with self.lock:
            step = self.decide(time.perf_counter())
            if step is None:
                return
            if step.publish:
                publish(step.tau)
            self.let_go(step)
            step.end = time.perf_counter()
            self.finish(step)

    def host_command(self, arrival: float, stamp: float | None, q: Array | None, dq: Array | None,
                     effort: Array | None) -> Array | None:
        """In the bus cycle (doc/driver.md): the state the host just read (``arrival`` its read on
        the steady clock, ``stamp`` [s] its stamp as the host publishes it; ``stamp`` None: no fresh
        state this cycle, ``q``, ``dq``, ``effort`` are ignored) and a cycle on it; the torque for this
        cycle's outputs, or None (nothing commanded). :meth:`host_after_outputs` must follow."""
        with self.lock:
            if stamp is not None:
                self.loop.take_state(arrival, stamp, None, q, dq, effort)
            step = self.decide(time.perf_counter())
            if step is None:
                return None
            released = self.let_go(step)
            step.end = time.perf_counter()
            self._step = step
            # a release replaces the zero effort at once (doc/driver.md)
            return step.tau if step.publish and not released else None

    def host_after_outputs(self) -> None:
        """In the bus cycle, once the host's outputs are decided: the rest of the cycle."""
        with self.lock:
            step, self._step = self._step, None
            if step is not None:
                self.finish(step)

    def decide(self, start: float) -> Step | None:
        """The cycle up to its torque at ``start`` [s, perf_counter] (None: a stalled node's cycle,
        which commands nothing)."""
        self.reports.statistics.tick(start)
        loop = self.loop
        gap, self.last_cycle = start - self.last_cycle, start
        stalled = gap > loop.guard.config.state_timeout
        if stalled and not self._deferred and loop.guard.state is not GuardState.DISABLED:
            # This node itself did not run for longer than state_timeout: the joint states that
            # arrived meanwhile are still queued (the executor runs timers before subscriptions).
            # Let them in and judge the state at the next cycle (nothing published in this one).
            self._deferred = True
            self.stalls += 1
            return None
        self._deferred = False
        state = loop.state
        if self.enable_pending and state is not None:
            self.enable_pending = False
            ok, message = self._enable()
            self.reports.status(message if ok else f"enable at start refused: {message}", refused=not ok)
        tau, publish = loop.command(start)
        coasted = loop.coast_ended(start)
        if coasted is not None:
            self.reports.submit(self._log_coast, coasted)
        return Step(start, state, tau, publish, loop.stamp if loop.stamped else None)

    def let_go(self, step: Step) -> bool:
        """Right after a cycle's torque went out: the release if it let go of the arm
        (:meth:`~youbot_dynamics.control.loop.ControlLoop.let_go`); whether the arm was handed to the drives."""
        self.last_torque = step.tau
        return self.loop.let_go(step.tau)

    def finish(self, step: Step) -> None:
        """The cycle after its torque: timing, observer, fault report, ~/state, reports, publishers."""
        start, state, tau, end = step.start, step.state, step.tau, step.end
        stamp = None if state is None else state[0]
        reports = self.reports
        if step.publish and stamp is not None:  # the age: of the state by its stamp (wall clock) at the torque
            reports.times.add(end - stamp, end - start,
                              None if step.header is None else end + reports.wall_offset - step.header)
        self.loop.after(start, state, tau, step.publish)  # observer, fault report, verdicts
        self._count += 1
        decimation = self.params.state_publish_decimation
        if decimation and self._count % decimation == 0:
            now = start if stamp is None else stamp
            reports.publish_state(now, self.loop.law.desired_position(now), None if state is None else state[1], tau)
        period = self.params.diagnostics_period
        if period > 0.0 and end >= self._diagnostics_due:
            self._diagnostics_due = max(self._diagnostics_due + period, end)
            reports.submit(reports.publish_diagnostics, self.loop.law.LABEL, self._hardware_id, self.stalls)
        problem = self.publishers.check(end)
        if problem is not None:
            self.loop.guard.fault(problem, trust_states=False)  # acted on from the next cycle

    def _log_coast(self, duration: float) -> None:
        guard = self.loop.guard
        timeout = guard.config.state_timeout
        self._logger.warning(
            f"joint states late: no joint state for about {1e3 * (duration + timeout):.0f} ms, coasted on gravity "
            f"at the last good state for {1e3 * duration:.0f} ms (state_timeout {1e3 * timeout:.0f} ms), then the "
            f"law again; {guard.coast_cycles} coasted cycles so far",
            throttle_duration_sec=self.params.log_throttle_period)
