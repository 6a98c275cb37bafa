"""MuJoCo's own inverse dynamics of the simulated arm: the independent side of the tests that compare
the project's dynamics with the simulator's physics (test_sim_core, test_sim_realism)."""
from __future__ import annotations

import mujoco
import numpy as np

from youbot_dynamics.sim import ArmSimulator


def mujoco_inverse_dynamics(sim: ArmSimulator, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """``mj_inverse`` at each of the (N, n) samples: the joint torques MuJoCo needs for ``ddq`` at
    ``(q, dq)`` (its data is overwritten)."""
    got = np.empty(np.shape(q))
    for k in range(len(q)):
        sim.data.qpos[:], sim.data.qvel[:], sim.data.qacc[:] = q[k], dq[k], ddq[k]
        mujoco.mj_inverse(sim.model, sim.data)
        got[k] = sim.data.qfrc_inverse
    return got
