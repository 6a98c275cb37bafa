"""The dedicated bus thread: :meth:`ArmDriver.cycle` every ``cycle_period``, paced to wall time.

The thread is the only one that touches the bus; other threads use the driver's thread-safe calls.
Deadlines advance by one period per cycle; a cycle that ends late is counted by
:class:`~youbot_dynamics.timing.LoopStatistics` (missed when over 1.5 periods), and when the loop
falls more than ten periods behind (the machine stalled) it resynchronises instead of bursting.
An exception in a cycle stops the loop and is kept in ``error`` (the node reports it). Under
real-time scheduling the thread runs one priority above the rest of the process
(:func:`~youbot_dynamics.timing.raise_above_process`).
"""
from __future__ import annotations

import time

from ..timing import LoopStatistics, LoopThread
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
                now = time.perf_counter()
                self.timing.tick(now)
                deadline += self.period
                if now - deadline > 10.0 * self.period:
                    self.timing.resync()
                    deadline = now
                elif deadline > now:
                    time.sleep(deadline - now)
        except BaseException as exc:  # kept for the node; the thread must not die silently
            self.error = exc
