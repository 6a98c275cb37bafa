"""``make bench``: throughput of the kinematics against Pinocchio, measured in the same run.

Timings on a shared machine are noisy, so every figure is reported next to a reference measured
in the same process (Pinocchio called per configuration from Python, which is how a Python node
would use it) and as a ratio. Results are printed and written to ``out/bench.json``.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable

import numba
import numpy as np

from youbot_dynamics.arm import default_arm
from youbot_dynamics.ik import IKStatus, solve_ik_batch
from youbot_dynamics.kinematics import forward_kinematics

N = 100_000
REPEATS = 3


def best_time(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Smallest wall time of ``repeats`` calls (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_kinematics() -> dict:
    import pinocchio as pin

    from youbot_dynamics.urdf import generate_urdf

    arm = default_arm()
    rng = np.random.default_rng(0)
    qs = rng.uniform(arm.position_min, arm.position_max, (N, arm.n_joints))
    model = pin.buildModelFromXML(generate_urdf(arm))
    data = model.createData()
    tool = model.getFrameId("arm_tool")
    n_pin = 20_000

    def pin_loop() -> None:
        for q in qs[:n_pin]:
            pin.forwardKinematics(model, data, q)
            pin.updateFramePlacement(model, data, tool)

    t_pin = best_time(pin_loop) / n_pin
    t_fk = best_time(lambda: forward_kinematics(arm, qs)) / N
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    t_fk_1 = best_time(lambda: forward_kinematics(arm, qs)) / N
    numba.set_num_threads(threads)
    poses = forward_kinematics(arm, qs)
    t_ik = best_time(lambda: solve_ik_batch(arm, poses, residuals=False)) / N
    t_ik_res = best_time(lambda: solve_ik_batch(arm, poses)) / N
    solved = float(np.mean(solve_ik_batch(arm, poses).status == IKStatus.OK))
    return {
        "pinocchio_fk_loop_per_config_s": t_pin,
        "pinocchio_fk_loop_configs_per_s": 1 / t_pin,
        "fk_vectorised_configs_per_s": 1 / t_fk,
        "fk_speedup_vs_pinocchio_loop": t_pin / t_fk,
        "fk_threads": threads,
        "fk_single_thread_speedup_vs_pinocchio_loop": t_pin / t_fk_1,
        "ik_poses_per_s": 1 / t_ik,
        "ik_with_fk_residuals_poses_per_s": 1 / t_ik_res,
        "ik_ratio_to_pinocchio_fk_loop": t_pin / t_ik,
        "ik_solved_fraction": solved,
    }


def main() -> int:
    results = {"kinematics": bench_kinematics()}
    goals = {
        "fk_speedup_vs_pinocchio_loop": (5.0, "vectorised FK at least 5x faster than the Pinocchio loop"),
        "ik_poses_per_s": (500_000.0, "IK above 500,000 poses/s (all branches, limits checked)"),
    }
    print(f"Kinematics, batches of {N:,} (best of {REPEATS}):")
    for key, value in results["kinematics"].items():
        print(f"  {key:40s} {value:14,.3f}" if value < 100 else f"  {key:40s} {value:14,.0f}")
    print("Goals:")
    ok = True
    for key, (goal, text) in goals.items():
        value = results["kinematics"][key]
        met = value >= goal
        ok &= met
        print(f"  [{'met' if met else 'MISSED'}] {text}: {value:,.1f}")
    out = Path("out")
    out.mkdir(exist_ok=True)
    (out / "bench.json").write_text(json.dumps(results, indent=2))
    print(f"written {out / 'bench.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
