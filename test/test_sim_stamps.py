"""The simulated arm's joint state stamps (youbot_dynamics.sim.stamps): the physics clock on the ROS
clock, monotonic whatever the load (issue 35, case 6: stamps up to 133 ms backwards under load)."""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.sim.stamps import StateStamps

MS = 1_000_000  # [ns]
T0 = 1_700_000_000 * 1_000_000_000  # [ns] a ROS clock reading


def test_stamps_are_the_simulated_time_from_the_anchor():
    """Anchored at the first state (the ROS clock when it was due), then the simulated time over the
    real-time factor, however late each state is published."""
    stamps = StateStamps(real_time_factor=2.0, timestep=1e-3)
    assert stamps.stamp(0.5, T0 + 3 * MS, late=3 * MS) == T0
    # 10 ms of physics = 5 ms on the ROS clock at x2, published in a burst 40 ms late
    assert stamps.stamp(0.51, T0 + 45 * MS, late=40 * MS) == T0 + 5 * MS
    assert stamps.stamp(0.511, T0 + 45 * MS + 1000, late=40 * MS) == T0 + 5 * MS + MS // 2


def test_a_late_anchor_never_puts_a_stamp_back():
    """A new anchor whose lateness was over-estimated by 133 ms (the thread lost the processor between
    the two clock readings): the stamps carry on from the previous one by the simulated time."""
    stamps = StateStamps(real_time_factor=1.0, timestep=1e-3)
    first = stamps.stamp(1.0, T0)
    second = stamps.stamp(1.001, T0 + MS)
    stamps.restart()  # a resynchronisation after a stall
    third = stamps.stamp(1.002, T0 + 20 * MS, late=153 * MS)  # really 20 ms late
    fourth = stamps.stamp(1.003, T0 + 21 * MS, late=153 * MS)
    assert [second - first, third - second, fourth - third] == [MS, MS, MS]


def test_a_reset_and_a_clock_set_back_keep_the_stamps_increasing():
    stamps = StateStamps(real_time_factor=1.0, timestep=1e-3)
    before = stamps.stamp(5.0, T0)
    after_reset = stamps.stamp(0.001, T0 - 2 * MS)  # simulated time back to 0, and the ROS clock set back 2 ms
    assert after_reset == before + MS  # one time step after the previous stamp
    assert stamps.stamp(0.002, T0 - MS) == before + 2 * MS  # on the physics clock until the ROS clock catches up
    assert stamps.stamp(0.003, T0 + 10 * MS) == before + 3 * MS  # the anchor holds: no jump towards now


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.0, 3.0])
def test_stamps_increase_whatever_the_clocks_do(factor):
    """10,000 states under random publication delays, stalls, re-anchorings, resets and ROS clock
    steps (forwards and back): every stamp is later than the one before it."""
    rng = np.random.default_rng(35)
    stamps = StateStamps(real_time_factor=factor, timestep=1e-3)
    sim_time, now, previous = 0.0, T0, None
    for _ in range(10_000):
        event = rng.random()
        if event < 0.02:
            stamps.restart()
        elif event < 0.03:
            sim_time = 0.0  # a reset
        elif event < 0.05:
            now += int(rng.integers(-200 * MS, 200 * MS))  # the ROS clock stepped
        sim_time += 1e-3 * int(rng.integers(1, 5))
        now += int(rng.integers(0, 3 * MS))
        stamp = stamps.stamp(sim_time, now, late=int(rng.integers(0, 300 * MS)))
        assert previous is None or stamp > previous, (stamp, previous)
        previous = stamp


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="real_time_factor"):
        StateStamps(-1.0, 1e-3)
    with pytest.raises(ValueError, match="timestep"):
        StateStamps(1.0, 0.0)
