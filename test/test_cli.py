"""The command-line tool, run as a user runs it (``python -m youbot_dynamics``)."""
from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.cli import main
from youbot_dynamics.arm.kinematics import forward_kinematics
from youbot_dynamics.arm.transforms import rotation_to_quaternion

ARM = default_arm()
SEED_Q = ARM.q_from_theta([0.0, math.pi / 2, 0.0, math.pi / 2, 0.0])  # seed 002 (2.7)-(2.8)


def num(value: float) -> str:
    return repr(float(value))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fk_seed_oracle(capsys):
    code, out, _ = run(capsys, "fk", *map(num, SEED_Q))
    assert code == 0
    doc = json.loads(out)
    np.testing.assert_allclose(doc["position"], [0.033, 0.0, 0.655], atol=1e-12)
    np.testing.assert_allclose(doc["rotation"], np.diag([-1.0, -1.0, 1.0]), atol=1e-12)
    # R = diag(-1, -1, 1) is a half turn about z: quaternion [0, 0, +-1, 0]
    np.testing.assert_allclose(np.abs(doc["quaternion"]), [0, 0, 1, 0], atol=1e-12)


def test_ik_returns_generating_configuration_and_fk_closes(capsys):
    q0 = np.array([2.0, 0.9, -2.0, 1.8, 3.0])
    _, out, _ = run(capsys, "fk", *map(num, q0))
    pose = json.loads(out)
    code, out, _ = run(capsys, "ik", *map(num, pose["position"] + pose["quaternion"]))
    assert code == 0
    solutions = json.loads(out)["solutions"]
    assert 1 <= len(solutions) <= 4
    assert any(np.allclose(s["q"], q0, atol=1e-9) for s in solutions)
    for s in solutions:
        assert set(s) == {"q", "branch", "within_limits", "residual"}
        _, out, _ = run(capsys, "fk", *map(num, s["q"]))
        back = json.loads(out)
        np.testing.assert_allclose(back["position"], pose["position"], atol=1e-9)
        np.testing.assert_allclose(back["rotation"], pose["rotation"], atol=1e-9)


def test_ik_closest_to_picks_one_feasible(capsys):
    q0 = np.array([2.0, 0.9, -2.0, 1.8, 3.0])
    _, out, _ = run(capsys, "fk", *map(num, q0))
    pose = json.loads(out)
    code, out, _ = run(capsys, "ik", *map(num, pose["position"] + pose["quaternion"]),
                       "--closest-to", *map(num, q0 + 0.01))
    assert code == 0
    (only,) = json.loads(out)["solutions"]
    np.testing.assert_allclose(only["q"], q0, atol=1e-9)
    assert only["within_limits"] is True


def test_ik_failures_exit_nonzero_with_one_line_reason():
    for argv, word in ((["ik", "2", "0", "0.5", "0", "0", "0", "1"], "reach"),
                       (["ik", "0.2", "0", "0.3", "0.3826834", "0", "0", "0.9238795"], "orientation")):
        proc = subprocess.run([sys.executable, "-m", "youbot_dynamics", *argv], capture_output=True, text=True)
        assert proc.returncode == 1
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0]


def test_ik_project_orientation_reports_angle(capsys):
    # a reachable pose tilted by 0.2 rad about the radial axis (out of the arm plane)
    q0 = np.array([2.0, 0.9, -2.0, 1.8, 3.0])
    _, out, _ = run(capsys, "fk", *map(num, q0))
    pose = json.loads(out)
    r = np.array(pose["rotation"])
    p = np.array(pose["position"])
    radial = np.array([p[0], p[1], 0.0]) / np.hypot(p[0], p[1])
    tilt = 0.2
    k = np.array([[0, -radial[2], radial[1]], [radial[2], 0, -radial[0]], [-radial[1], radial[0], 0]])
    rot = np.eye(3) + math.sin(tilt) * k + (1 - math.cos(tilt)) * k @ k
    from youbot_dynamics.arm.transforms import rotation_to_quaternion

    quat = rotation_to_quaternion(rot @ r)
    code, _, err = run(capsys, "ik", *map(num, [*p, *quat]))
    assert code == 1 and "orientation" in err
    code, out, _ = run(capsys, "ik", *map(num, [*p, *quat]), "--project-orientation")
    assert code == 0
    doc = json.loads(out)
    # the approach axis z5 lies in the arm plane before the tilt: the tilt about the radial
    # axis moves it out of the plane by an angle whose sine is |sin(tilt) * (radial x z5) . n|
    z5 = r[:, 2]
    normal = np.cross([0, 0, 1.0], radial)
    expected = math.asin(abs(np.dot(rot @ z5, normal)))
    assert doc["projection_angle"] == pytest.approx(expected, abs=1e-9)
    assert doc["solutions"]


def test_bad_input_is_usage_error(capsys):
    code, _, err = run(capsys, "fk", "1", "2")
    assert code == 2 and "5 joint angles" in err
    code, _, err = run(capsys, "ik", "0.2", "0", "0.3", "0", "0", "0", "2")
    assert code == 2 and "unit" in err
    code, _, err = run(capsys, "fk", "nan", "1", "1", "1", "1")
    assert code == 2 and "NaN" in err


def test_batch_round_trip(tmp_path, capsys):
    rng = np.random.default_rng(3)
    qs = rng.uniform(ARM.position_min, ARM.position_max, (50, 5))
    qfile, posefile, iksol = tmp_path / "q.csv", tmp_path / "poses.csv", tmp_path / "ik.csv"
    with qfile.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["q1", "q2", "q3", "q4", "q5"])
        w.writerows(qs.tolist())
    assert run(capsys, "fk", "--input", str(qfile), "--output", str(posefile))[0] == 0
    code, _, _ = run(capsys, "ik", "--input", str(posefile), "--output", str(iksol))
    assert code == 0
    with iksol.open() as fh:
        rows = list(csv.DictReader(fh))
    for i, q in enumerate(qs):
        mine = [r for r in rows if int(r["pose"]) == i]
        assert mine and all(r["status"] == ("ok" if r["within_limits"] == "1" else "outside_limits") for r in mine)
        found = [np.array([float(r[f"q{j}"]) for j in range(1, 6)]) for r in mine]
        assert min(np.max(np.abs(f - q)) for f in found) < 1e-7


def test_batch_errors_name_the_problem(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("q1,q2,q3,q4\n1,1,1,1\n")
    code, _, err = run(capsys, "fk", "--input", str(bad), "--output", str(tmp_path / "o.csv"))
    assert code == 2 and "q5" in err
    bad.write_text("q1,q2,q3,q4,q5\n1,1,nan,1,1\n")
    code, _, err = run(capsys, "fk", "--input", str(bad), "--output", str(tmp_path / "o.csv"))
    assert code == 2 and "q3" in err and ":2" in err
    code, _, err = run(capsys, "fk", "--input", str(tmp_path / "missing.csv"), "--output", str(tmp_path / "o.csv"))
    assert code == 2 and "missing.csv" in err
    code, _, err = run(capsys, "fk", "--input", str(bad))
    assert code == 2 and "--output" in err


def test_batch_ik_marks_unsolvable_rows(tmp_path, capsys):
    poses = tmp_path / "p.csv"
    poses.write_text("x,y,z,qx,qy,qz,qw\n2,0,0.5,0,0,0,1\n")
    out = tmp_path / "o.csv"
    code, _, err = run(capsys, "ik", "--input", str(poses), "--output", str(out))
    assert code == 1 and "1 of 1" in err
    with out.open() as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["status"] in ("out_of_reach", "orientation_unreachable")


def test_line_writes_a_straight_tool_line(capsys, tmp_path):
    """The CSV's rows, put through FK, lie on the segment from the start's tool pose to the goal,
    with the orientation fixed; q' is the finite difference of q; the goal is reached at rest."""
    q0 = np.array([2.9496, 1.4, -2.3, 1.9, 2.9234])
    start = forward_kinematics(ARM, q0)
    goal = start.copy()
    goal[:3, 3] += [0.05, 0.0, -0.08]  # 9.4 cm, orientation kept
    quat = rotation_to_quaternion(goal[:3, :3])
    out = tmp_path / "line.csv"
    code, text, err = run(capsys, "line", *map(num, [*goal[:3, 3], *quat]), "--from", *map(num, q0),
                          "--duration", "2.0", "-o", str(out), "--sample-rate", "200")
    assert code == 0, err
    rows = np.array([[float(v) for v in r] for r in list(csv.reader(out.open()))[1:]])
    assert rows.shape == (401, 16) and json.loads(text)["samples"] == 401
    t, q, dq = rows[:, 0], rows[:, 1:6], rows[:, 6:11]
    tips = np.array([forward_kinematics(ARM, qi) for qi in q])
    direction = (goal[:3, 3] - start[:3, 3]) / np.linalg.norm(goal[:3, 3] - start[:3, 3])
    offsets = tips[:, :3, 3] - start[:3, 3]
    off_line = offsets - np.outer(offsets @ direction, direction)
    assert np.max(np.linalg.norm(off_line, axis=1)) < 1e-4  # on the line (between knots: quintic in q)
    np.testing.assert_allclose(tips[-1], goal, atol=1e-5)  # orientation projected onto the 5-DOF set (~1e-6)
    assert np.max(np.abs(tips[:, :3, :3] - start[:3, :3])) < 1e-3
    np.testing.assert_allclose(dq[[0, -1]], 0.0, atol=1e-12)
    np.testing.assert_allclose(np.gradient(q, t, axis=0)[5:-5], dq[5:-5], atol=2e-3)
    # too fast for the velocity limits: refused with the reason, nothing written
    code, _, err = run(capsys, "line", *map(num, [*goal[:3, 3], *quat]), "--from", *map(num, q0),
                       "--duration", "0.2", "-o", str(tmp_path / "fast.csv"))
    assert code == 2 and "velocity_max" in err and not (tmp_path / "fast.csv").exists()
    code, _, err = run(capsys, "line", "0.3", "0", "0.2", "--from", *map(num, q0), "--duration", "1",
                       "-o", str(tmp_path / "x.csv"))
    assert code == 2 and "X Y Z QX QY QZ QW" in err


def test_compile_makes_every_kernel_of_a_controller_start_ready(capsys):
    """After ``youbot-dynamics compile`` a controller's start-up (its law's model check, one cycle's
    inverse dynamics and M, C, G, an IK goal, a Cartesian line) compiles nothing new."""
    import numpy as np

    from youbot_dynamics.arm.description import default_arm
    from youbot_dynamics.control import PDGravityController
    from youbot_dynamics.dynamics import generated_youbot
    from youbot_dynamics.dynamics.nominal import nominal_model
    from youbot_dynamics.arm.ik import inverse_kinematics
    from youbot_dynamics.arm.kinematics import _tool_pose_parallel, _tool_pose_serial, forward_kinematics

    code, out, _ = run(capsys, "compile")
    assert code == 0 and out.startswith("compiled kernels ready (kinematics ") and "cache: " in out
    kernels = (generated_youbot.regressor_single, generated_youbot.regressor_many,
               generated_youbot.regressor_many_parallel, _tool_pose_serial, _tool_pose_parallel)
    before = [len(k.signatures) for k in kernels]
    assert all(before)
    arm = default_arm()
    model = nominal_model(arm)[0]
    law = PDGravityController(model, arm)
    q = arm.position_min + 0.3 * (arm.position_max - arm.position_min)
    law.hold(q)
    law.torque(0.0, q, np.zeros(5))
    model.dynamics_terms(q, np.ones(5))
    inverse_kinematics(arm, forward_kinematics(arm, q), q_current=q, include_outside_limits=False)
    assert [len(k.signatures) for k in kernels] == before
