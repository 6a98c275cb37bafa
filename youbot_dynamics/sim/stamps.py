"""The stamps of the simulated arm's joint states: the physics clock on the ROS clock.

The stamp of a state measured at simulated time ``s`` is (doc/simulation.md, "Joint state stamps")

    stamp = t_0 + (s - s_0) / real_time_factor

with an *anchor* ``(t_0, s_0)``: ``t_0`` the ROS clock at the instant the loop was due to publish
the state of simulated time ``s_0``. Two states 1 ms apart in the physics are stamped 1 ms apart
(divided by ``real_time_factor``), however late the loop publishes them. The anchor is taken at the
first state and again after :meth:`StateStamps.restart` (a reset, a pause, a resynchronisation after
a stall) and when the simulated time goes back (a reset).

Monotonic whatever the load: a stamp is always later than the previous one, by at least the
simulated time between the two states (one ``timestep`` when the simulated time went back). A new
anchor comes from two clock readings (the ROS clock, and how late the loop is), and a thread that
loses the processor between them (measured: stamps up to 133 ms backwards on a busy machine) would
put it, and the stamps after it, before the stamps already published: such an anchor is moved
forward onto the previous stamp plus the simulated time since, so the stamps carry on on the physics
clock. So they do after the ROS clock was set back: until it has caught up with them, the stamps
are later than the clock (never earlier than the ones published before). With ``real_time_factor``
0 (as fast as possible) the stamp is the ROS clock at the call, at least 1 ns after the previous one.
"""
from __future__ import annotations

__all__ = ["StateStamps"]


class StateStamps:
    """Joint state stamps [ns on the ROS clock] from the simulated time (module docstring)."""

    def __init__(self, real_time_factor: float, timestep: float) -> None:
        if not real_time_factor >= 0.0:
            raise ValueError(f"real_time_factor must be >= 0, got {real_time_factor}")
        if not timestep > 0.0:
            raise ValueError(f"timestep must be > 0 s, got {timestep}")
        self.real_time_factor = float(real_time_factor)
        self.timestep = float(timestep)
        self._anchor: tuple[int, float] | None = None  # (ROS clock [ns], simulated time [s])
        self._last: tuple[int, float] | None = None  # the previous stamp [ns] and its simulated time [s]

    def restart(self) -> None:
        """Take a new anchor at the next stamp (after a reset, a pause, a resynchronisation)."""
        self._anchor = None

    def _ros_interval(self, seconds: float) -> int:
        """``seconds`` of simulated time on the ROS clock [ns] (at least 1 ns)."""
        return max(1, int(round(1e9 * seconds / self.real_time_factor)))

    def stamp(self, sim_time: float, now: int, late: int = 0) -> int:
        """The stamp [ns] of the state at simulated time ``sim_time`` [s], published at ``now`` [ns,
        ROS clock], ``late`` [ns] after the loop was due to publish it (used for a new anchor)."""
        if self.real_time_factor == 0.0:
            stamp = now if self._last is None else max(now, self._last[0] + 1)
            self._last = (stamp, sim_time)
            return stamp
        if self._anchor is None or sim_time < self._anchor[1]:  # new anchor, or the simulated time went back
            self._anchor = (now - max(0, late), sim_time)
        wall, simulated = self._anchor
        stamp = wall + int(round(1e9 * (sim_time - simulated) / self.real_time_factor))
        if self._last is not None:
            previous, previous_time = self._last
            floor = previous + self._ros_interval(sim_time - previous_time if sim_time > previous_time
                                                  else self.timestep)
            if stamp < floor - 1 or stamp <= previous:  # an anchor taken late, or the clock set back (1 ns: roundings)
                self._anchor, stamp = (floor, sim_time), floor  # carry on on the physics clock
        self._last = (stamp, sim_time)
        return stamp
