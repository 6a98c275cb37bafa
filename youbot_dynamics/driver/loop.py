"""The dedicated bus thread: :meth:`ArmDriver.cycle` every ``cycle_period``, paced to wall time.

The thread is the only one that touches the bus; other threads use the driver's thread-safe calls.
Deadlines advance by one period per cycle (:func:`~youbot_dynamics.timing.pace`: the thread sleeps
at least a tenth of a period per cycle however late, so the process's other threads always run; more
than ten periods behind, the machine stalled, it resynchronises instead of bursting); a cycle that
ends late is counted by :class:`~youbot_dynamics.timing.LoopStatistics` (missed when over 1.5 periods).
An exception in a cycle stops the loop and is kept in ``error`` (the node reports it). Under
real-time scheduling the thread runs one priority above the rest of the process
(:func:`~youbot_dynamics.timing.raise_above_process`).
"""
from __future__ import annotations

import time

from ..timing import LoopStatistics, LoopThread, pace
from .driver import ArmDriver

__all__ = ["CyclicLoop"]


class CyclicLoop:
    """Runs ``driver.cycle()`` in a daemon thread; :meth:`stop` stops the motors and closes the bus."""

    def __init__(self, driver: ArmDriver, name: str = "youbot_ethercat") -> None:
        self.driver = driver
        self.period = driver.config.cycle_period
        self.timing = LoopStatistics(self.period)
        self.error: BaseException | None = None
        self._thread = LoopThread(self._run, name, above=True)

    @property
    def running(self) -> bool:
        return self._thread.alive

    def start(self) -> None:
        """Start the thread (idempotent); the driver must be connected."""
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread, then stop the motors and close the bus."""
        self._thread.stop()
        self.driver.shutdown()

    def _run(self) -> None:
        deadline = time.perf_counter()
        try:
            while self._thread.running:
                self.driver.cycle()
                self.timing.tick(time.perf_counter())
                deadline, _ = pace(deadline, self.period, self.timing)
        except BaseException as exc:  # kept for the node; the thread must not die silently
            self.error = exc
