"""The out-and-back stroke of the main job as a closed loop with the MuJoCo arm (no ROS), shared by
the tests of external torques and payloads: computed torque at 80 % of the velocity limits, the
positions differentiated as the controller nodes do, inside the safety guard."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from youbot_dynamics.control import ComputedTorqueController, JointTrajectory, SafetyGuard
from youbot_dynamics.control.velocity import VelocityFromPositions

HOME = np.array([2.9496, 1.1345, -2.5482, 1.7890, 2.9234])  # sim.home: the candle
STROKE = np.array([0.7, -0.7, 0.7, -0.7, 0.7])  # the demo's out and back at 80 % of velocity_max
SEGMENT = 1.05
START = 0.6  # [s] the trajectory starts after the enable ramp


def stroke(sim, model, arm, hold_after: float) -> Iterator[tuple[float, np.ndarray, np.ndarray, np.ndarray,
                                                                 np.ndarray]]:
    """From a reset, the stroke on ``model`` and ``hold_after`` s of holding its end: each cycle yields
    ``(t, q, dq, tau, q_d)`` (the state, the torque about to go out, the reference) before the
    simulator steps; ``sim.external_torque`` is then that of the step up to the state, and a wrench
    the caller applies acts in the coming step."""
    sim.reset()
    law = ComputedTorqueController(model, arm)
    law.hold(HOME)
    law.follow(JointTrajectory.through(HOME, [SEGMENT, 2 * SEGMENT], [HOME + STROKE, HOME]), START)
    guard, velocity = SafetyGuard(arm, model), VelocityFromPositions(arm.n_joints)
    m = sim.measure()
    guard.enable(m.time, law.gravity(m.position))
    for _ in range(int(round((START + 2 * SEGMENT + hold_after) / sim.timestep))):
        m = sim.measure()
        dq = velocity.update(m.time, m.position, m.velocity)
        tau = guard.command(m.time, m.time, m.position, dq, law.torque)
        assert tau is not None, guard.fault_reason
        yield m.time, m.position, dq, tau, law.reference(m.time)[0]
        sim.command("effort", tau)
        sim.step()
