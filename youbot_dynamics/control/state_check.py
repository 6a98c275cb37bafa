"""Plausibility of a joint-state stream: is each state a physical successor of the previous one?

A controller closes its loop on whatever arrives on its joint-state topic. A second publisher (a
second simulator or driver in the same ROS domain, a replayed bag) or one wrong but finite state
would be taken for the arm's motion and answered with saturated torque. :class:`JointStateMonitor`
judges each state ``(t_k, q_k)`` against the previous one ``(t_{k-1}, q_{k-1})`` of the stream,
with ``t`` the state's *stamp* (the publisher's clock: a state delivered late, or a burst of
states delivered together by a loaded machine, still carries the time it was measured; so
delivery jitter is never judged):

* **stamps**: ``t_k <= t_{k-1}`` (equal or going backwards) is not one publisher measuring one
  arm: two publishers interleaving, or a restarted clock;
* **jump**: ``|q_k,j - q_{k-1},j| > speed_factor velocity_max_j (min(t_k - t_{k-1}, max_interval)
  + stamp_slack) + tolerance`` for some joint ``j``: no motion within ``speed_factor`` (default 2)
  times the velocity limit could make that change in that time. ``tolerance`` (default 0.01 rad)
  covers encoder quantization and noise; ``stamp_slack`` (default 10 ms) a publisher that stamps
  at publication rather than at measurement and catches up after a stall (``sim_node`` publishes
  up to 10 steps of 1 ms back to back; its stamps then understate the time between the states).
  At 1 kHz a state may differ from the previous one by at most 0.045 rad. Capping the interval at
  ``max_interval`` (default 0.05 s) makes it a bound on the change between consecutive states too
  (0.2 rad for the youBot): a state far from the last one (e.g. another arm's, after a gap in the
  stamps) is refused whatever its stamp says.

:meth:`JointStateMonitor.check` returns the reason (or ``None``); only an accepted state becomes the
previous one, so every state is judged against the arm's last plausible state. (Taking a refused
state as the previous one let a second arm in: under load two of its states arrived in a row, the
second was judged against the first, accepted, and the controller's release braked towards the
other arm's pose, 0.5 rad away.) A stream that really continues elsewhere (a simulator reset to
another pose) stays refused until :meth:`JointStateMonitor.anchor` takes a state as the arm's: the
controller does so when it is enabled, at the state it holds.
States with NaN or infinity are not judged (the safety guard faults on them) and not kept.
What the monitor cannot see: a second publisher whose states continue the first one's within these
bounds (the same arm, the same clock), e.g. two simulators started together at the same pose.

Pure Python, no ROS: the node passes the header stamp (or the arrival time if a publisher leaves
the stamp zero). Cost ~5 us per state.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from .terms import all_finite

__all__ = ["JointStateMonitor"]

Array = NDArray[np.float64]


class JointStateMonitor:
    """Judges consecutive joint states of one stream; see the module docstring."""

    def __init__(self, arm: ArmDescription, *, speed_factor: float = 2.0, tolerance: float = 0.01,
                 max_interval: float = 0.05, stamp_slack: float = 0.01) -> None:
        for name, value in (("speed_factor", speed_factor), ("tolerance", tolerance), ("max_interval", max_interval),
                            ("stamp_slack", stamp_slack)):
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be positive, got {value}")
        self.arm = arm
        self.speed = speed_factor * arm.velocity_max
        self.tolerance = float(tolerance)
        self.max_interval = float(max_interval)
        self.stamp_slack = float(stamp_slack)
        self._stamp: float | None = None
        self._q: Array | None = None

    def reset(self) -> None:
        """Forget the previous state (the next one is taken without judgement)."""
        self._stamp = self._q = None

    def anchor(self, stamp: float, q: Array) -> None:
        """Take the state ``q`` stamped ``stamp`` as the arm's, without judgement (the next one is
        judged against it)."""
        self._stamp, self._q = stamp, q.copy()

    def check(self, stamp: float, q: Array) -> str | None:
        """The reason why the state ``q`` (n,) [rad] stamped ``stamp`` [s] cannot follow the
        previous accepted one, or ``None``; an accepted state becomes the previous one."""
        if not all_finite(q):
            return None
        if self._q is None:
            self.anchor(stamp, q)
            return None
        problem = self._problem(stamp, q)
        if problem is None:
            self.anchor(stamp, q)
        return problem

    def _problem(self, stamp: float, q: Array) -> str | None:
        previous_stamp, previous_q = self._stamp, self._q
        dt = stamp - previous_stamp
        if not dt > 0.0:
            return (f"joint state stamps not increasing (a stamp {1e3 * dt:+.3f} ms from the previous one): a second "
                    f"publisher of joint states, or a clock jump")
        allowed = self.speed * (min(dt, self.max_interval) + self.stamp_slack) + self.tolerance
        step = np.abs(q - previous_q)
        excess = step - allowed
        j = int(np.argmax(excess))
        if excess[j] > 0.0:
            return (f"{self.arm.joint_names[j]} jumped {step[j]:.4f} rad in {1e3 * dt:.2f} ms between joint states "
                    f"(at most {allowed[j]:.4f} rad is physical): a second publisher of joint states, or a wrong "
                    f"state")
        return None
