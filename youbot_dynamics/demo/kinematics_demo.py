"""``make demo``: a kinematics demonstration on the youBot arm description.

It prints the seed oracle (seed 002, eq. 2.7-2.8), the four IK configurations of one pose, the
three distinct IK failure diagnoses, and a batch round trip FK(IK(T)) = T over random poses.
"""
from __future__ import annotations

import time

import numpy as np

from ..arm.description import ArmDescription
from ..arm.ik import IKError, IKStatus, inverse_kinematics, solve_ik_batch
from ..arm.kinematics import forward_kinematics
from ..arm.transforms import rot_x

__all__ = ["run_demo"]


def _fmt(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:+.4f}" for x in v) + "]"


def run_demo(arm: ArmDescription, n_random: int = 20000, seed: int = 7) -> int:
    print(f"youbot_dynamics kinematics demo: {arm.name}, {arm.n_joints} joints, description {arm.source}\n")

    theta = np.array([0.0, np.pi / 2, 0.0, np.pi / 2, 0.0])
    q = arm.q_from_theta(theta)
    t = forward_kinematics(arm, q)
    print("1. Seed 002 oracle (2.7)-(2.8): theta = [0, pi/2, 0, pi/2, 0]")
    print(f"   q = {_fmt(q)} rad")
    print(f"   p = {_fmt(t[:3, 3])} m   (seed: [0.033, 0, 0.655])")
    print(f"   diag(R) = {_fmt(np.diag(t[:3, :3]))}   (seed: [-1, -1, 1])\n")

    rng = np.random.default_rng(seed)
    q0 = np.array([2.95, 0.6, -1.8, 2.2, 2.9])
    target = forward_kinematics(arm, q0)
    print(f"2. Inverse kinematics of FK(q0), q0 = {_fmt(q0)}: target p = {_fmt(target[:3, 3])}")
    for sol in inverse_kinematics(arm, target):
        flag = "inside limits " if sol.within_limits else "OUTSIDE limits"
        print(f"   {sol.branch:17s} q = {_fmt(sol.q)}  {flag}  residual {sol.residual:.1e}")
    print()

    print("3. Honest failures:")
    far = target.copy()
    far[:3, 3] *= 3.0  # same direction from the base, three times as far
    tilted = target.copy()
    tilted[:3, :3] = tilted[:3, :3] @ rot_x(0.3)
    behind = forward_kinematics(arm, [2.01, 3.61, 0.85, 2.73, 4.01])  # joints 2, 3 beyond their stops
    for label, pose in (("three times as far", far), ("tilted out of the arm plane", tilted),
                        ("only reachable past the stops", behind)):
        try:
            inverse_kinematics(arm, pose)
        except IKError as exc:
            print(f"   {label:30s} -> {type(exc).__name__}: {exc}")
    projected = solve_ik_batch(arm, tilted[None], project=True)
    print(f"   with --project-orientation the tilted pose is solved after a change of "
          f"{np.degrees(projected.projection_angle[0]):.2f} deg\n")

    qs = rng.uniform(arm.position_min, arm.position_max, (n_random, arm.n_joints))
    poses = forward_kinematics(arm, qs)
    start = time.perf_counter()
    batch = solve_ik_batch(arm, poses)
    elapsed = time.perf_counter() - start
    found = np.min(np.max(np.abs(batch.q - qs[:, None, :]), axis=2), axis=1) < 1e-7
    print(f"4. Batch round trip over {n_random} random configurations inside the limits:")
    print(f"   solved {np.mean(batch.status == IKStatus.OK):.1%}, generating configuration found "
          f"{found.mean():.1%}, max position error {np.nanmax(batch.position_error):.1e} m, "
          f"max orientation error {np.nanmax(batch.orientation_error):.1e} rad")
    counts = np.bincount(batch.real.sum(axis=1), minlength=5)
    print(f"   real solutions per pose: 2 -> {counts[2]}, 4 -> {counts[4]}; "
          f"inside limits on average {batch.within_limits.sum(1).mean():.2f}")
    print(f"   {n_random / elapsed:,.0f} poses/s (all four branches, limits and FK residuals checked)")
    return 0 if found.all() else 1
