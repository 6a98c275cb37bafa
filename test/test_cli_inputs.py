"""Issue 19 items 9-12: every bad input to the command line (and the identification core behind
it) is a one-line refusal naming the file, key or option, with exit status 2 and no traceback;
output files are written atomically and never over an input."""
from __future__ import annotations

import csv
import errno
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from identification_benchmark import recordings
from youbot_dynamics.arm.description import ArmDescriptionError, default_arm, load_arm
from youbot_dynamics.cli import main
from youbot_dynamics.dynamics.paramfile import ModelFileError, load_model
from youbot_dynamics.identification.estimation.pipeline import identify
from youbot_dynamics.identification.estimation.processing import ProcessingOptions
from youbot_dynamics.identification.excitation.trajectories import FourierTrajectory
from youbot_dynamics.identification.io.bagio import IncrementalBagWriter, joint_state_message
from youbot_dynamics.identification.io.dataset import Dataset, IdentificationError, write_csv_dataset
from youbot_dynamics.identification.io.trajfile import TrajectoryFileError, load_trajectory, save_trajectory
from youbot_dynamics.arm.kinematics import forward_kinematics
from youbot_dynamics.files.paths import config_path
from youbot_dynamics.arm.transforms import rotation_to_quaternion
from youbot_dynamics.arm.upstream import load_upstream
from conftest import real_data_folder

ARM = default_arm()
MID = 0.5 * (ARM.position_min + ARM.position_max)
CLI = [sys.executable, "-m", "youbot_dynamics"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv: str) -> str:
    """The one-line error of a command that must exit 2 through main (not argparse); progress
    bars may precede it on stderr."""
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    errors = [line for line in err.splitlines() if line.startswith("youbot-dynamics")]
    assert len(errors) == 1 and err.strip().endswith(errors[0]), err
    return errors[0]


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120)


def write_q_csv(path: Path, qs) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f"q{i}" for i in range(1, 6)])
        writer.writerows(np.atleast_2d(qs).tolist())
    return path


def leftovers(folder: Path) -> list[str]:
    """Temporary files of the atomic writer left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A short plausible recording (t, q, dq, tau), as CSV, and its dataset."""
    _, data, _ = recordings(ARM, duration=8.0, rate=250.0)
    path = tmp_path_factory.mktemp("rec") / "train.csv"
    write_csv_dataset(path, data)
    return path, data


# -- item 9: identify refuses nonsense -----------------------------------------------------------


def test_identify_refuses_positions_in_degrees(tmp_path, recording, capsys):
    _, data = recording
    degrees = Dataset(data.t, np.degrees(data.q), data.tau, np.degrees(data.dq), source=str(tmp_path / "deg.csv"))
    write_csv_dataset(tmp_path / "deg.csv", degrees)
    out = tmp_path / "model.yaml"
    err = refused(capsys, "identify", str(tmp_path / "deg.csv"), "--out", str(out))
    assert "deg.csv" in err and re.search(r"column q\d", err) and "degrees" in err, err
    assert not out.exists()
    with pytest.raises(IdentificationError, match="degrees"):  # the identification node's path: the pipeline
        identify([degrees], [], ARM)


def test_identify_refuses_velocities_far_beyond_the_limits(tmp_path, recording, capsys):
    _, data = recording
    fast = data.dq.copy()
    fast[:, 2] *= 60.0  # rad/s recorded as if in some other unit
    write_csv_dataset(tmp_path / "fast.csv", Dataset(data.t, data.q, data.tau, fast))
    err = refused(capsys, "identify", str(tmp_path / "fast.csv"), "--out", str(tmp_path / "m.yaml"))
    assert "fast.csv" in err and "column dq3" in err and "velocity limits" in err, err


# -- item 10: output files -----------------------------------------------------------------------


def test_predict_output_equal_to_the_model_is_refused(tmp_path, capsys):
    model = tmp_path / "M.yaml"
    model.write_bytes(config_path("youbot_nominal_model.yaml").read_bytes())
    before = model.read_bytes()
    states = tmp_path / "states.csv"
    states.write_text("t,q1,q2,q3,q4,q5,dq1,dq2,dq3,dq4,dq5,ddq1,ddq2,ddq3,ddq4,ddq5\n"
                      + "0.0," + ",".join(map(str, map(float, MID))) + ",0,0,0,0,0,0,0,0,0,0\n")
    err = refused(capsys, "predict", "--params", str(model), "--input", str(states), "--output", str(model))
    assert "M.yaml" in err and "input" in err
    assert model.read_bytes() == before


def test_identify_out_equal_to_the_recording_is_refused(tmp_path, recording, capsys):
    source, _ = recording
    rec = tmp_path / "rec.csv"
    rec.write_bytes(source.read_bytes())
    err = refused(capsys, "identify", str(rec), "--out", str(rec))
    assert "rec.csv" in err and "refusing to overwrite an input" in err
    assert rec.read_bytes() == source.read_bytes()
    err = refused(capsys, "fk", "--input", str(rec), "--output", str(tmp_path / "." / "rec.csv"))
    assert rec.read_bytes() == source.read_bytes()


def test_full_disk_leaves_the_old_output_and_no_temporary(tmp_path, capsys, monkeypatch):
    qfile = write_q_csv(tmp_path / "q.csv", MID)
    out = tmp_path / "poses.csv"
    out.write_text("previous contents\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("youbot_dynamics.files.fileio.os.fsync", full)
    err = refused(capsys, "fk", "--input", str(qfile), "--output", str(out))
    assert "poses.csv" in err and "No space left on device" in err
    assert out.read_text() == "previous contents\n"  # not half-written
    assert leftovers(tmp_path) == []
    assert qfile.read_text().startswith("q1,q2")  # the input is intact


def test_a_failed_report_leaves_no_model(tmp_path, recording, capsys, monkeypatch):
    import matplotlib.figure

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    source, _ = recording
    out, report = tmp_path / "model.yaml", tmp_path / "report"
    err = refused(capsys, "identify", str(source), "--out", str(out), "--report", str(report))
    assert "torques.png" in err and "No space left on device" in err
    assert not out.exists() and not (report / "report.json").exists()
    assert leftovers(tmp_path) == [] and leftovers(report) == []


def test_excite_unwritable_out_fails_before_the_design(tmp_path, capsys, monkeypatch):
    def no_design(*args, **kwargs):
        raise AssertionError("the optimisation ran")

    monkeypatch.setattr("youbot_dynamics.identification.excitation.design.design_excitation", no_design)
    err = refused(capsys, "excite", "--out", str(tmp_path / "no such folder" / "traj.yaml"))
    assert "traj.yaml" in err and "cannot write" in err
    err = refused(capsys, "excite", "--out", str(tmp_path))
    assert "folder" in err


# -- item 11: tracebacks and exit codes ----------------------------------------------------------


def corrupted_bag(folder: Path) -> Path:
    """A valid MCAP bag whose first message record claims a length of 2^63 bytes."""
    names = list(ARM.joint_names)
    with IncrementalBagWriter(folder / "bag") as writer:
        for k in range(50):
            writer.write(k * 1_000_000, joint_state_message(writer.store, k * 1_000_000, names, MID, np.zeros(5),
                                                            np.zeros(5)))
    mcap = next((folder / "bag").glob("*.mcap"))
    data = bytearray(mcap.read_bytes())
    # MCAP message record: opcode 0x05, uint64 length (little endian), channel id 1 (uint16)
    record = re.search(rb"\x05[\x00-\xff]{2}\x00{6}\x01\x00", bytes(data)).start()
    data[record + 8] = 0x83  # most significant byte of the length
    bad = folder / "corrupt.mcap"
    bad.write_bytes(bytes(data))
    return bad


def test_corrupted_mcap_is_exit_2_naming_the_file(tmp_path, capsys):
    bad = corrupted_bag(tmp_path)
    err = refused(capsys, "identify", str(bad), "--out", str(tmp_path / "m.yaml"))
    assert "corrupt.mcap" in err
    proc = run_cli("identify", str(bad), "--out", str(tmp_path / "m.yaml"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "corrupt.mcap" in proc.stderr


def test_empty_upstream_yaml_is_a_clear_refusal(tmp_path):
    empty = tmp_path / "upstream.yaml"
    empty.write_text("")
    proc = run_cli("import-upstream-inertials", "--upstream", str(empty))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "upstream.yaml" in proc.stderr and "upstream" in proc.stderr.split("upstream.yaml", 1)[1]


def test_help_documents_the_exit_codes_and_bugs_still_propagate(capsys, monkeypatch):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "exit status: 0 success; 1 no solution" in capsys.readouterr().out

    def bug(*args, **kwargs):
        raise RuntimeError("a programming error")

    monkeypatch.setattr("youbot_dynamics.cli.forward_kinematics", bug)
    with pytest.raises(RuntimeError):  # not turned into a "bad input" exit 2
        main(["fk", *map(str, map(float, MID))])


# -- item 12: messages ---------------------------------------------------------------------------


def test_binary_garbage_names_the_file(tmp_path, capsys):
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(b"q1,q2\xff\xfe\x00\x81 binary \xc3\x28\n")
    err = refused(capsys, "fk", "--input", str(garbage), "--output", str(tmp_path / "o.csv"))
    assert "garbage.csv" in err and "UTF-8" in err
    model = tmp_path / "garbage.yaml"
    model.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")
    err = refused(capsys, "predict", "--params", str(model), "--input", str(garbage), "--output",
                  str(tmp_path / "o.csv"))
    assert "garbage.yaml" in err
    proc = run_cli("fk", "--input", str(garbage), "--output", str(tmp_path / "o.csv"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "garbage.csv" in proc.stderr


def test_utf8_byte_order_mark_is_accepted(tmp_path, capsys):
    bom = tmp_path / "bom.csv"
    bom.write_text("q1,q2,q3,q4,q5\n" + ",".join(map(str, map(float, MID))) + "\n", encoding="utf-8-sig")
    code, _, err = run(capsys, "fk", "--input", str(bom), "--output", str(tmp_path / "o.csv"))
    assert code == 0, err


def test_booleans_are_not_numbers(tmp_path):
    text = config_path("youbot_arm.yaml").read_text()
    arm_file = tmp_path / "arm.yaml"
    arm_file.write_text(re.sub(r"mass: [0-9.]+", "mass: true", text, count=1))
    with pytest.raises(ArmDescriptionError, match=r"arm\.yaml: links\[0\]\.mass: expected a finite number, got True"):
        load_arm(arm_file)
    doc = yaml.safe_load(config_path("youbot_nominal_model.yaml").read_text())
    doc["youbot_dynamics_model"]["base_parameters"][0]["value"] = True
    name = doc["youbot_dynamics_model"]["base_parameters"][0]["name"]
    model_file = tmp_path / "model.yaml"
    model_file.write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelFileError, match=rf"model\.yaml: base_parameters\[0\] \({name}\)\.value: .*True"):
        load_model(model_file)
    upstream = tmp_path / "upstream.yaml"
    upstream.write_text(re.sub(r"mass: [0-9.]+", "mass: true", config_path("youbot_description_upstream.yaml")
                               .read_text(), count=1))
    with pytest.raises(ArmDescriptionError, match=r"upstream\.yaml: upstream\.links\[0\]\.mass: .*True"):
        load_upstream(upstream)


def test_excite_refuses_too_few_points_and_the_node_a_degenerate_design(tmp_path, capsys):
    out = tmp_path / "traj.yaml"
    err = refused(capsys, "excite", "--method", "random-points", "--points", "1", "--out", str(out))
    assert "at least 2 configurations" in err and not out.exists()
    # a design file with an infinite condition number (as the old `excite --points 1` wrote) is refused on loading
    trajectory = FourierTrajectory.at_rest(10.0, MID, 0.1 * np.ones((4, 5)))
    save_trajectory(out, trajectory, ARM.joint_names, {"condition_number": float("inf")})
    with pytest.raises(TrajectoryFileError, match=r"traj\.yaml: design\.condition_number: .*inf"):
        load_trajectory(out, ARM.joint_names)


@pytest.mark.parametrize("argv, option", [
    (["identify", "x.csv", "--out", "m.yaml", "--decimate", "0"], "--decimate"),
    (["identify", "x.csv", "--out", "m.yaml", "--decimate", "-3"], "--decimate"),
    (["identify", "x.csv", "--out", "m.yaml", "--order", "0"], "--order"),
    (["line", *["0"] * 7, "--from", *["1"] * 5, "--duration", "2", "-o", "l.csv", "--ik-rate", "nan"], "--ik-rate"),
    (["line", *["0"] * 7, "--from", *["1"] * 5, "--duration", "2", "-o", "l.csv", "--ik-rate", "0"], "--ik-rate"),
    (["line", *["0"] * 7, "--from", *["1"] * 5, "--duration", "2", "-o", "l.csv", "--ik-rate", "-5"], "--ik-rate"),
    (["line", *["0"] * 7, "--from", *["1"] * 5, "--duration", "nan", "-o", "l.csv"], "--duration"),
    (["line", *["0"] * 7, "--from", *["1"] * 5, "--duration", "-1", "-o", "l.csv"], "--duration"),
    (["excite", "--out", "t.yaml", "--harmonics", "0"], "--harmonics"),
])
def test_option_values_are_refused_by_argparse(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"argument {option}" in err and "expected a positive" in err, err


def test_processing_options_are_checked_in_the_core():
    for bad in (dict(decimation=0), dict(order=0), dict(cutoff_hz=float("nan")), dict(coulomb_threshold=-1.0)):
        with pytest.raises(IdentificationError, match="processing option"):
            ProcessingOptions(**bad)


def test_batch_ik_does_not_mark_solutions_outside_the_limits_ok(tmp_path, capsys):
    rng = np.random.default_rng(5)
    qs = rng.uniform(ARM.position_min, ARM.position_max, (20, 5))
    t = forward_kinematics(ARM, qs)
    poses = np.column_stack([t[:, :3, 3], rotation_to_quaternion(t[:, :3, :3])])
    posefile, out = tmp_path / "poses.csv", tmp_path / "ik.csv"
    with posefile.open("w", newline="") as handle:
        csv.writer(handle).writerows([["x", "y", "z", "qx", "qy", "qz", "qw"], *poses.tolist()])
    code, _, err = run(capsys, "ik", "--input", str(posefile), "--output", str(out))
    assert code == 0, err
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert any(r["within_limits"] == "0" for r in rows)  # the batch lists those solutions too
    for r in rows:
        assert r["status"] == ("ok" if r["within_limits"] == "1" else "outside_limits"), r


def test_readme_ik_example_is_reachable(capsys):
    code, out, err = run(capsys, "ik", "0.2", "0.0", "0.05", "1.0", "0.0", "0.0", "0.0")
    assert code == 0, err
    assert sum(s["within_limits"] for s in yaml.safe_load(out)["solutions"]) >= 1


def test_line_with_a_huge_duration_is_refused_quickly(tmp_path, capsys):
    start = MID
    goal = forward_kinematics(ARM, start + 0.1)
    pose = [*goal[:3, 3], *rotation_to_quaternion(goal[:3, :3])]
    err = refused(capsys, "line", *map(str, map(float, pose)), "--from", *map(str, map(float, start)),
                  "--duration", "1e6", "-o", str(tmp_path / "l.csv"))
    assert "duration" in err
    assert not (tmp_path / "l.csv").exists()


# -- bounded work (item 6 for excite and identify) ------------------------------------------------
# The documented maxima: excitation duration / schedule 600 s, 20 harmonics, 50 random points, 1000
# iterations per optimiser run, Butterworth order 20.


def _limited_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # the old code grew to 24 GB


@pytest.mark.parametrize("argv, option", [
    (["excite", "--duration", "1e6", "--max-time", "5"], "--duration"),
    (["excite", "--method", "random-points", "--points", "2", "--dwell", "1e6"], "--dwell"),
])
def test_excite_with_unbounded_work_is_refused_before_it_starts(tmp_path, argv, option):
    out = tmp_path / "traj.yaml"
    proc = subprocess.run([*CLI, *argv, "--out", str(out)], capture_output=True, text=True, timeout=120,
                          preexec_fn=_limited_memory)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    reason = proc.stderr.strip().splitlines()[-1]
    assert option in reason and "600" in reason, proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("argv, option, limit", [
    (["excite", "--out", "t.yaml", "--duration", "601"], "--duration", "600"),
    (["excite", "--out", "t.yaml", "--harmonics", "1000"], "--harmonics", "20"),
    (["excite", "--out", "t.yaml", "--method", "random-points", "--points", "1000"], "--points", "50"),
    (["excite", "--out", "t.yaml", "--method", "random-points", "--dwell", "1e6"], "--dwell", "600"),
    (["excite", "--out", "t.yaml", "--max-iterations", "100000"], "--max-iterations", "1000"),
    (["identify", "x.csv", "--out", "m.yaml", "--order", "1000000"], "--order", "20"),
])
def test_options_that_scale_the_work_have_a_maximum(tmp_path, monkeypatch, capsys, argv, option, limit):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"argument {option}" in err and f"at most {limit}" in err, err


def test_random_points_schedule_longer_than_the_maximum_is_refused(tmp_path, capsys, monkeypatch):
    def no_search(*args, **kwargs):
        raise AssertionError("the random configurations were searched")

    monkeypatch.setattr("youbot_dynamics.identification.excitation.design.random_configurations", no_search)
    out = tmp_path / "traj.yaml"
    # 12 rests (10 points, the start and the end) of 60 s: 720 s of dwell alone
    err = refused(capsys, "excite", "--method", "random-points", "--points", "10", "--dwell", "60", "--out", str(out))
    assert "--dwell" in err and "600" in err and not out.exists()


def test_the_excitation_core_bounds_its_work():
    from youbot_dynamics.identification.excitation.design import design_excitation, random_points_excitation

    with pytest.raises(ValueError, match="600"):
        design_excitation(ARM, 1e6, 5)
    with pytest.raises(ValueError, match="harmonics"):
        design_excitation(ARM, 10.0, 1000)
    with pytest.raises(ValueError, match="max_iterations"):
        design_excitation(ARM, 10.0, 5, max_iterations=10**6)
    with pytest.raises(ValueError, match="600"):
        random_points_excitation(ARM, 2, dwell=1e6)
    with pytest.raises(ValueError, match="at most 50"):
        random_points_excitation(ARM, 10**6)
    # the schedule found may still be too long: 50 points of ~5 s moves plus 52 x 9.5 s of dwell
    with pytest.raises(ValueError, match=r"lasts .* more than the maximum 600 s"):
        random_points_excitation(ARM, 50, dwell=9.5)
    with pytest.raises(IdentificationError, match="processing option order"):
        ProcessingOptions(order=10**6)


def test_trajectory_file_longer_than_the_maximum_is_refused(tmp_path):
    out = tmp_path / "long.yaml"
    save_trajectory(out, FourierTrajectory.at_rest(1e6, MID, 0.1 * np.ones((4, 5))), ARM.joint_names, {})
    with pytest.raises(TrajectoryFileError, match=r"long\.yaml: period: .*600"):
        load_trajectory(out, ARM.joint_names)


# -- identify on the real arm's recordings --------------------------------------------------------

REAL_DATA = real_data_folder()


def test_speeds_of_the_real_arm_are_plausible_degrees_are_not(recording):
    """The real youBot's joint 5 reaches 2.5 x the package's velocity_max (3.7-4.0 rad/s vs 1.57):
    such a recording is accepted; the same motion in degrees is refused."""
    from youbot_dynamics.identification.io.dataset import check_plausible

    _, data = recording
    fast = data.dq.copy()
    fast[:, 4] *= 2.5 * ARM.velocity_max[4] / np.abs(fast[:, 4]).max()  # peak 2.5 x velocity_max
    assert np.sum(np.abs(fast[:, 4]) > 2.0 * ARM.velocity_max[4]) > 5  # more than a few glitches
    check_plausible(Dataset(data.t, data.q, data.tau, fast, source="real-like"), ARM)
    with pytest.raises(IdentificationError, match="degrees"):
        check_plausible(Dataset(data.t, np.degrees(data.q), data.tau, np.degrees(fast), source="deg"), ARM)


@pytest.mark.skipif(not (REAL_DATA / "real_01.csv").exists(), reason=f"no real youBot recordings in {REAL_DATA}")
def test_identify_accepts_a_real_recording(tmp_path, capsys):
    """12 s of real_01.csv (from the start at the stops), with joint 5 up to 2.5 x velocity_max."""
    lines = (REAL_DATA / "real_01.csv").read_text().splitlines()
    header = lines[0].split(",")
    t0 = float(lines[1].split(",")[0])
    rows = [line for line in lines[1:] if float(line.split(",")[0]) - t0 <= 12.0]
    piece = tmp_path / "real_01_piece.csv"
    piece.write_text("\n".join([lines[0], *rows]) + "\n")
    dq5 = np.array([float(row.split(",")[header.index("dq5")]) for row in rows])
    assert np.sum(np.abs(dq5) > 2.0 * ARM.velocity_max[4]) > 5  # what the old check refused
    out = tmp_path / "model.yaml"
    code, stdout, err = run(capsys, "identify", str(piece), "--out", str(out))
    assert code == 0, err
    assert out.exists() and "wrote" in stdout


# -- IK of rounded poses (issue 19 item 12) -------------------------------------------------------


def _pose_of(capsys, q) -> list[float]:
    code, out, err = run(capsys, "fk", *map(repr, map(float, q)))
    assert code == 0, err
    doc = yaml.safe_load(out)
    return [*doc["position"], *doc["quaternion"]]


def test_ik_accepts_fk_poses_rounded_to_5_decimals(capsys):
    """``fk`` output rounded to 5 decimals -> ``ik`` finds the configuration again (within 1e-3 rad).

    Configurations where the pose fixes the joints worse than that are left out: the elbow within
    |sin theta3| < 0.1 of stretched (a 1e-5 m error of the wrist point moves q3 by ~1e-4 / |sin
    theta3|; at the stretch the rounded point may even lie out of reach) and the last 0.01 rad of
    each joint range (rounding can take the solution outside). Configurations whose tool point
    lies within 3 mm of the joint-1 axis are included on purpose: there the plane through the
    rounded point alone is off by up to 0.03 rad."""
    rng = np.random.default_rng(19)
    qs = rng.uniform(ARM.position_min + 0.01, ARM.position_max - 0.01, (40000, 5))
    theta3 = ARM.theta(qs)[:, 2]
    qs = qs[np.abs(np.sin(theta3)) >= 0.1]
    tool_xy = np.hypot(*forward_kinematics(ARM, qs)[:, :2, 3].T)
    near_axis = qs[tool_xy < 0.003][:20]
    assert len(near_axis) == 20
    for q in [*qs[:200], *near_axis]:
        pose = [f"{v:.5f}" for v in _pose_of(capsys, q)]  # as a user would copy them
        code, out, err = run(capsys, "ik", *pose)
        assert code == 0, (q.tolist(), pose, err)
        found = np.array([s["q"] for s in yaml.safe_load(out)["solutions"]])
        assert np.max(np.abs(found - q), axis=1).min() < 1e-3, (q.tolist(), found)


def test_ik_refuses_a_pose_0_01_rad_out_of_the_arm_plane(capsys):
    from youbot_dynamics.arm.transforms import quaternion_to_rotation

    q = MID + np.array([0.3, -0.4, 0.5, 0.2, -0.6])
    pose = np.array(_pose_of(capsys, q))
    p, rotation = pose[:3], quaternion_to_rotation(pose[3:])
    normal = np.cross([0.0, 0.0, 1.0], p / np.hypot(p[0], p[1]))  # of the vertical plane through the point
    axis = np.cross(normal, rotation[:, 2])
    axis /= np.linalg.norm(axis)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    tilt = np.eye(3) + np.sin(0.01) * k + (1 - np.cos(0.01)) * (k @ k)  # 0.01 rad about normal x z5
    tilted = tilt @ rotation
    assert abs(tilted[:, 2] @ normal) == pytest.approx(np.sin(0.01), rel=1e-9)
    code, _, err = run(capsys, "ik", *map(repr, map(float, [*p, *rotation_to_quaternion(tilted)])))
    assert code == 1 and "orientation unreachable" in err, err
    code, _, err = run(capsys, "ik", *[f"{v:.5f}" for v in pose])  # the untilted pose, rounded
    assert code == 0, err


# -- messages (issue 19 item 12) ------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--arm", "{bad}", "fk", "0", "0", "0", "0", "0"],
    ["predict", "--params", "{bad}", "--input", "x.csv", "--output", "o.csv"],
    ["import-upstream-inertials", "--upstream", "{bad}"],
])
def test_malformed_yaml_is_one_line_naming_file_line_and_column(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("[1,2")
    err = refused(capsys, *[a.format(bad=bad) for a in argv])
    assert f"{bad}:1:5: malformed YAML" in err, err
    bad.write_text("a: 1\nb: [1, 2\nc: 3\n")
    err = refused(capsys, *[a.format(bad=bad) for a in argv])
    assert f"{bad}:3:2: malformed YAML" in err and "line 2, column 4" in err, err


def test_batch_ik_names_the_line_of_a_zero_quaternion(tmp_path, capsys):
    poses = tmp_path / "poses.csv"
    good = ",".join(f"{v:.5f}" for v in _pose_of(capsys, MID))
    # line 1 header, 2 a good pose, 3 blank (skipped), 4 another good pose, 5 the zero quaternion
    poses.write_text(f"x,y,z,qx,qy,qz,qw\n{good}\n\n{good}\n0.2,0.0,0.3,0,0,0,0\n{good}\n")
    err = refused(capsys, "ik", "--input", str(poses), "--output", str(tmp_path / "out.csv"))
    assert f"{poses}:5:" in err and "norm 0" in err, err


def test_a_bad_base_parameter_value_is_named(tmp_path, capsys):
    doc = yaml.safe_load(config_path("youbot_nominal_model.yaml").read_text())
    entry = doc["youbot_dynamics_model"]["base_parameters"][7]
    entry["value"] = "abc"
    model = tmp_path / "model.yaml"
    model.write_text(yaml.safe_dump(doc))
    err = refused(capsys, "predict", "--params", str(model), "--input", str(tmp_path / "x.csv"), "--output",
                  str(tmp_path / "o.csv"))
    assert f"base_parameters[7] ({entry['name']}).value" in err and "'abc'" in err, err
    entry["value"] = float("inf")
    model.write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelFileError, match=rf"base_parameters\[7\] \({entry['name']}\)\.value: .*inf"):
        load_model(model)


# -- issue 35 items 1, 8, 9, 11: implausible models, flat excitations, outputs, empty files ----------


def _mNm_model(tmp_path: Path) -> Path:
    """The nominal model x 1000 (what a recording in mN m identifies): 2412 kg on link 1."""
    from youbot_dynamics.dynamics.model import DynamicModel
    from youbot_dynamics.dynamics.nominal import nominal_model
    from youbot_dynamics.dynamics.paramfile import save_model

    nominal, chi = nominal_model(ARM)
    path = tmp_path / "mNm.yaml"
    save_model(path, DynamicModel.from_standard(nominal.chain, 1000.0 * chi), "x1000", 1000.0 * chi)
    return path


def test_identify_refuses_torques_in_millinewton_metres_before_fitting(tmp_path, recording, capsys):
    _, data = recording
    write_csv_dataset(tmp_path / "mNm.csv", Dataset(data.t, data.q, 1000.0 * data.tau, data.dq))
    out = tmp_path / "m.yaml"
    err = refused(capsys, "identify", str(tmp_path / "mNm.csv"), "--out", str(out))
    assert "mNm.csv: column tau" in err and "above 2 x the drives' peak torques" in err and "mN m" in err, err
    assert not out.exists()


def test_identify_does_not_write_an_implausible_model(tmp_path, recording, capsys, monkeypatch):
    """The bound on the identified model itself (here made tight: 0.5 x the arm's mass, which the
    synthetic arm's ~5.6 kg exceeds): exit 2 naming the total mass, nothing written."""
    monkeypatch.setattr("youbot_dynamics.dynamics.plausibility.MASS_FACTOR", 0.5)
    source, _ = recording
    out, report = tmp_path / "m.yaml", tmp_path / "report"
    err = refused(capsys, "identify", str(source), "--out", str(out), "--report", str(report))
    assert err.startswith(f"youbot-dynamics identify: the identified model (for {out}): not a plausible youBot "
                          "model") and "total mass m1 + ... + m5 = " in err and "(0.5 x the arm's nominal" in err, err
    assert "--allow-implausible uses it anyway" in err
    assert not out.exists() and not report.exists()


def test_predict_and_calibrate_refuse_an_implausible_model_unless_allowed(tmp_path, recording, capsys, monkeypatch):
    def no_calibration(*args, **kwargs):
        raise AssertionError("the calibration ran")

    monkeypatch.setattr("youbot_dynamics.identification.estimation.calibration.calibrate", no_calibration)
    source, _ = recording
    params = _mNm_model(tmp_path)
    err = refused(capsys, "calibrate", "--params", str(params), str(source), "--out", str(tmp_path / "new.yaml"))
    assert err.startswith(f"youbot-dynamics calibrate: model file {params}: not a plausible youBot model"), err
    assert "m1 = 2412 kg, above 22.5 kg" in err
    err = refused(capsys, "predict", "--params", str(params), "--recording", str(source), "--output",
                  str(tmp_path / "p.csv"))
    assert "m1 = 2412 kg, above 22.5 kg" in err and "--allow-implausible uses it anyway" in err
    code, _, err = run(capsys, "predict", "--params", str(params), "--recording", str(source), "--output",
                       str(tmp_path / "p.csv"), "--allow-implausible")
    assert code == 0 and "warning: model file" in err and "(used anyway: --allow-implausible)" in err, err


def test_identify_unwritable_report_fails_before_the_fit(tmp_path, recording, capsys, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("the identification ran")

    monkeypatch.setattr("youbot_dynamics.identification.estimation.pipeline.identify", no_fit)
    source, _ = recording
    afile = tmp_path / "a file"
    afile.write_text("")
    err = refused(capsys, "identify", str(source), "--out", str(tmp_path / "m.yaml"), "--report",
                  str(afile / "report"))
    assert err == f"youbot-dynamics identify: cannot create the --report {afile / 'report'}: {afile} is a file, not " \
                  "a folder", err
    assert not (tmp_path / "m.yaml").exists()


def test_header_only_csv_is_one_line_without_numpy_warnings(tmp_path, capsys):
    import warnings

    empty = tmp_path / "empty.csv"
    empty.write_text("t,q1,q2,q3,q4,q5,dq1,dq2,dq3,dq4,dq5,tau1,tau2,tau3,tau4,tau5\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run(capsys, "identify", str(empty), "--out", str(tmp_path / "m.yaml"))
    assert code == 2 and err == f"youbot-dynamics identify: {empty}: no data rows\n", err
    assert [str(w.message) for w in caught] == []


def test_a_flat_excitation_is_refused_and_the_condition_number_computed(tmp_path):
    flat = tmp_path / "flat.yaml"
    save_trajectory(flat, FourierTrajectory.at_rest(10.0, MID, np.zeros((4, 5))), ARM.joint_names,
                    {"condition_number": 11.6, "structure": "full"})
    with pytest.raises(TrajectoryFileError) as info:
        load_trajectory(flat, ARM.joint_names)
    assert str(info.value) == (f"{flat}: a, b: the trajectory excites too little to identify the full model: "
                               "condition number inf computed from it on 200 samples (the file says 11.6); design "
                               "it with more points or harmonics")
    # the shipped excitation with a wrong figure in its design block: the figure reported is the trajectory's
    shipped = load_trajectory(config_path("excitation_default.yaml"), ARM.joint_names)
    lying = tmp_path / "lying.yaml"
    save_trajectory(lying, shipped.trajectory, ARM.joint_names, {**shipped.design, "condition_number": 1.0})
    designed = yaml.safe_load(config_path("excitation_default.yaml").read_text())
    expected = designed["youbot_excitation_trajectory"]["design"]["condition_number"]  # excite's, 11.59
    assert load_trajectory(lying, ARM.joint_names).design["condition_number"] == pytest.approx(expected, rel=1e-9)
