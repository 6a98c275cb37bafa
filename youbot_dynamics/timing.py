"""Timing statistics of periodic loops (simulator, controllers): achieved rate, jitter, overruns.

A loop calls :meth:`LoopStatistics.tick` once per cycle with a monotonic time stamp
(``time.perf_counter()``); :meth:`LoopStatistics.report` summarises the cycles since the previous
report and starts a new window. A cycle counts as *missed* when its period exceeds
``1.5 x nominal`` (the next deadline was passed by more than half a period).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable

import numpy as np

__all__ = ["IDLE_FRACTION_BEHIND", "IDLE_FRACTION_MIN", "LATE_STREAK", "LoopStatistics", "LoopThread", "MISSED_FACTOR",
           "RESYNC_PERIODS",
           "change_fifo_priority", "pace", "raise_above_process", "spread"]

MISSED_FACTOR = 1.5
#: a loop further behind its deadline than this many periods resynchronises instead of bursting
RESYNC_PERIODS = 10.0
#: the least a paced loop sleeps per cycle, as a fraction of its period, however late it is
IDLE_FRACTION_MIN = 0.1
#: a loop late this many cycles in a row cannot keep its rate (its cycle is longer than its period)
LATE_STREAK = 10
#: what such a loop sleeps per cycle, as a fraction of its period, until it is on time again
IDLE_FRACTION_BEHIND = 0.5
_STATISTICS = {"median": lambda v: float(np.percentile(v, 50.0)), "p99": lambda v: float(np.percentile(v, 99.0)),
               "max": lambda v: float(np.max(v))}


def spread(values: list[float], key: str, unit: str = "ms",
           statistics: tuple[str, ...] = ("median", "p99", "max")) -> dict[str, float]:
    """``{key}_{statistic}_{unit}`` of durations ``values`` [s] in ``unit`` ('ms' or 'us'): the median,
    the 99th percentile and the maximum of a report window (0 without values)."""
    scale = {"ms": 1e3, "us": 1e6}[unit]
    return {f"{key}_{name}_{unit}": scale * _STATISTICS[name](values) if len(values) else 0.0 for name in statistics}


def change_fifo_priority(change: Callable[[int], int]) -> int | None:
    """If the calling thread runs under ``SCHED_FIFO``: its priority becomes ``change(priority)``;
    the new priority, or None (and nothing changed) on the normal scheduler."""
    if not hasattr(os, "sched_getscheduler"):
        return None
    tid = threading.get_native_id()
    if os.sched_getscheduler(tid) != os.SCHED_FIFO:
        return None
    priority = change(os.sched_getparam(tid).sched_priority)
    os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
    return priority


def raise_above_process() -> int | None:
    """Put the calling thread one ``SCHED_FIFO`` priority above the one it inherited (the process's,
    :func:`youbot_dynamics.nodes.common.set_realtime_priority`; at most the system's maximum), so that
    it preempts the process's other threads on its CPU. Its new priority, or None (and nothing
    changed) when the thread does not run under ``SCHED_FIFO``."""
    return change_fifo_priority(lambda priority: min(priority + 1, os.sched_get_priority_max(os.SCHED_FIFO)))


def pace(deadline: float, period: float, statistics: "LoopStatistics") -> tuple[float, bool]:
    """Wait for the next cycle of a loop paced to wall time (``time.perf_counter``): its deadline
    advances by ``period`` and the thread sleeps until then, and always at least
    :data:`IDLE_FRACTION_MIN` of ``period``; late :data:`LATE_STREAK` cycles in a row (it cannot keep its
    rate) under ``SCHED_FIFO``, :data:`IDLE_FRACTION_BEHIND` of it until it is on time again (under the
    normal scheduler the kernel shares the CPU anyway: a late loop there catches up). A loop that runs one
    ``SCHED_FIFO`` priority above its process on the process's CPU (:func:`raise_above_process`, the
    nodes' ``cpu_affinity``) leaves the other threads of its process only the time it sleeps: never
    sleeping, a cycle longer than its period (a slow or busy machine, ``cycle_period`` too short) left
    the executor without the CPU, so no log, no service and no Ctrl-C (the main thread handles
    signals) until the process was killed; sleeping a tenth of a 0.2 ms period (with the real-time
    interpreter's 20 us thread switch interval the rest of the process runs only then) the driver
    took more than 120 s to start and never answered Ctrl-C (stop 42, this machine); half of it, 12 s
    from start to exit. Further behind than :data:`RESYNC_PERIODS` periods (the machine stalled) the
    loop resynchronises (counted by ``statistics``) instead of bursting. The new deadline, and whether
    it resynchronised."""
    now = time.perf_counter()
    deadline += period
    resync = now - deadline > RESYNC_PERIODS * period
    if resync:
        statistics.resync()
        deadline = now
    behind = statistics.late(deadline - now < IDLE_FRACTION_MIN * period) >= LATE_STREAK and _real_time()
    time.sleep(max(deadline - now, (IDLE_FRACTION_BEHIND if behind else IDLE_FRACTION_MIN) * period))
    return deadline, resync


def _real_time() -> bool:
    """The calling thread runs under ``SCHED_FIFO``."""
    return hasattr(os, "sched_getscheduler") and os.sched_getscheduler(0) == os.SCHED_FIFO


class LoopThread:
    """The daemon thread of a loop (the driver's bus cycle, the simulator's physics): ``target``
    runs while :attr:`running` is true; :meth:`start` is idempotent, :meth:`stop` clears the flag
    and joins (the loop ends its current pass). ``above``: the thread first calls
    :func:`raise_above_process` (the loop the process exists for, above its executor and helpers)."""

    def __init__(self, target: Callable[[], None], name: str, above: bool = False) -> None:
        self.running = False
        self._target, self._name, self._above = target, name, above
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is None:
            self.running = True
            self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self.running = False
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _main(self) -> None:
        if self._above:
            raise_above_process()
        self._target()


class LoopStatistics:
    """Periods between :meth:`tick` calls, summarised per report window (thread-safe)."""

    def __init__(self, nominal_period: float) -> None:
        if not nominal_period > 0.0:
            raise ValueError(f"nominal_period must be positive, got {nominal_period}")
        self.nominal_period = float(nominal_period)
        self._lock = threading.Lock()
        self._last: float | None = None
        self._periods: list[float] = []
        self._resyncs = 0
        self._late_streak = 0
        self.total_cycles = 0
        self.total_missed = 0

    def tick(self, now: float) -> None:
        """One cycle ended at ``now`` [s]."""
        with self._lock:
            if self._last is not None:
                period = now - self._last
                self._periods.append(period)
                self.total_missed += period > MISSED_FACTOR * self.nominal_period
            self._last = now
            self.total_cycles += 1

    def late(self, late: bool) -> int:
        """Whether the loop's last cycle was late (it could not sleep to its deadline); the cycles late in a row."""
        self._late_streak = self._late_streak + 1 if late else 0
        return self._late_streak

    def resync(self) -> None:
        """The loop gave up catching up (e.g. after a stall): counted, the next period is not measured."""
        with self._lock:
            self._resyncs += 1
            self._last = None

    def report(self) -> dict[str, float]:
        """``rate_hz``, ``period_mean_ms``, ``jitter_ms`` (standard deviation of the period),
        ``period_max_ms``, ``missed_fraction`` and ``resyncs`` of the window; starts a new window."""
        with self._lock:
            periods, self._periods = np.asarray(self._periods), []
            resyncs, self._resyncs = self._resyncs, 0
        if periods.size == 0:
            return {"cycles": 0.0, "rate_hz": 0.0, "period_mean_ms": 0.0, "jitter_ms": 0.0,
                    "period_max_ms": 0.0, "missed_fraction": 0.0, "resyncs": float(resyncs)}
        mean = float(periods.mean())
        return {
            "cycles": float(periods.size),
            "rate_hz": 1.0 / mean if mean > 0.0 else float("inf"),
            "period_mean_ms": 1e3 * mean,
            "jitter_ms": 1e3 * float(periods.std()),
            "period_max_ms": 1e3 * float(periods.max()),
            "missed_fraction": float(np.mean(periods > MISSED_FACTOR * self.nominal_period)),
            "resyncs": float(resyncs),
        }
