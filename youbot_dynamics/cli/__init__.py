"""Command-line tool: ``python -m youbot_dynamics <command>`` (also installed as ``youbot-dynamics``).

Commands:
  fk Q1..Q5                      forward kinematics of the tool frame (JSON)
  ik X Y Z QX QY QZ QW           every inverse-kinematics solution (JSON)
  fk/ik --input IN.csv --output OUT.csv   batch forms
  urdf [--xacro] [--write | --output F]   the URDF (or ros2_control xacro) from the arm description
  import-upstream-inertials [--write]     youbot_description inertials in DH frames
  base-params [--structure S] [--json]    base parameters of the dynamic model
  predict --params M.yaml --input D.csv --output T.csv   predicted torques
  predict --params M.yaml --recording RUN.csv --output T.csv   ... of a raw recording, as identify validates
  nominal-model [--write]        the nominal model file
  line X Y Z QX QY QZ QW --from Q1..Q5 --duration T -o TRAJ.csv   straight tool line through IK
  excite ..., identify ..., calibrate ...   excitation design, identification, recalibration
                                 (payload and friction) of an identified model (youbot_dynamics.identification)
  demo [--robot sim|driver|emulated]   ``make demo``: kinematics, the simulator, and the main job
                                 (identify, regulate, track; youbot_dynamics.demo.job)

Exit status: 0 success, 1 no solution (a pose out of reach, no excitation within the limits),
2 bad input: a one-line reason on stderr naming the file, line, key or option, no traceback
(argparse's usage errors too). Output files are written atomically and never over an input
(:mod:`..files.fileio`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .argtypes import nonnegative_float, positive_float, positive_int, positive_int_at_most
from ..arm.description import ArmDescription, ArmDescriptionError, default_arm, load_arm
from ..contract.topics import JOINT_STATES
from ..files.dataio import DataFileError, csv_row_line, read_csv_columns, write_csv
from ..files.fileio import check_output
from ..files.paths import config_path
from ..identification.estimation.processing import MAX_FILTER_ORDER
from ..arm.ik import BRANCHES, IKError, IKStatus, closest_solution, inverse_kinematics, solve_ik_batch
from ..arm.kinematics import forward_kinematics
from ..arm.transforms import QUATERNION_TOLERANCE, quaternion_to_rotation, rotation_to_quaternion, transform
from .calibrate import add_parser as add_calibrate_parser
from .excite import add_parser as add_excite_parser
from .identify import add_parser as add_identify_parser
from .plausible import add_option as add_allow_implausible
from .plausible import check_model_plausible

__all__ = ["main", "build_parser"]

FK_COLUMNS = ("q1", "q2", "q3", "q4", "q5")
IK_COLUMNS = ("x", "y", "z", "qx", "qy", "qz", "qw")
STATUS_TEXT = {
    IKStatus.OK: "ok",
    IKStatus.OUT_OF_REACH: "out_of_reach",
    IKStatus.ORIENTATION_UNREACHABLE: "orientation_unreachable",
    IKStatus.OUTSIDE_LIMITS: "outside_limits",
}
MAX_LINE_ROWS = 1_000_000  # rows of the CSV `line` writes (memory and time bounded: about 0.3 GB, a minute)
EPILOG = ("exit status: 0 success; 1 no solution (pose out of reach, no excitation within the limits); "
          "2 bad input (one-line reason naming the file, key or option)")


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def _arm(args: argparse.Namespace) -> ArmDescription:
    return load_arm(args.arm) if args.arm else default_arm()


def _pose_json(t: np.ndarray) -> dict:
    return {
        "position": t[:3, 3].tolist(),
        "rotation": t[:3, :3].tolist(),
        "quaternion": rotation_to_quaternion(t[:3, :3]).tolist(),
    }


def _target(values: Sequence[float]) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return transform(quaternion_to_rotation(values[3:7]), values[:3])


def _batch_io(args: argparse.Namespace) -> bool:
    if (args.input is None) != (args.output is None):
        raise UsageError("--input and --output go together")
    return args.input is not None


def cmd_fk(args: argparse.Namespace) -> int:
    arm = _arm(args)
    if _batch_io(args):
        if args.q:
            raise UsageError("give joint angles either on the command line or with --input, not both")
        q = read_csv_columns(args.input, FK_COLUMNS[: arm.n_joints])
        t = forward_kinematics(arm, q)
        quat = rotation_to_quaternion(t[:, :3, :3])
        rows = (list(qi) + list(ti[:3, 3]) + list(qu) for qi, ti, qu in zip(q, t, quat))
        write_csv(args.output, list(FK_COLUMNS[: arm.n_joints]) + list(IK_COLUMNS), rows)
        return 0
    if len(args.q) != arm.n_joints:
        raise UsageError(f"fk needs {arm.n_joints} joint angles [rad], got {len(args.q)}")
    print(json.dumps(_pose_json(forward_kinematics(arm, arm.joint_positions(args.q, "Q"))), indent=2))
    return 0


def _solution_json(sol) -> dict:
    return {
        "q": sol.q.tolist(),
        "branch": sol.branch,
        "within_limits": sol.within_limits,
        "residual": {"position": sol.position_error, "orientation": sol.orientation_error},
    }


def cmd_ik(args: argparse.Namespace) -> int:
    arm = _arm(args)
    closest = None
    if args.closest_to is not None:
        closest = arm.check_q(args.closest_to, "--closest-to")
    if _batch_io(args):
        if args.pose:
            raise UsageError("give the pose either on the command line or with --input, not both")
        return _ik_batch(arm, args, closest)
    if len(args.pose) != 7:
        raise UsageError(f"ik needs X Y Z QX QY QZ QW, got {len(args.pose)} numbers")
    target = _target(args.pose)
    solutions = inverse_kinematics(arm, target, q_current=closest, project=args.project_orientation)
    if closest is not None:
        solutions = [closest_solution(solutions, closest)]
    out = {"solutions": [_solution_json(s) for s in solutions]}
    if args.project_orientation:
        out["projection_angle"] = solutions[0].projection_angle
    print(json.dumps(out, indent=2))
    return 0


def _ik_batch(arm: ArmDescription, args: argparse.Namespace, closest: np.ndarray | None) -> int:
    poses = read_csv_columns(args.input, IK_COLUMNS)
    try:
        targets = transform(quaternion_to_rotation(poses[:, 3:7]), poses[:, :3])
    except ValueError:  # a quaternion far from unit length: name the first such row's line
        deviation = np.abs(np.linalg.norm(poses[:, 3:7], axis=1) - 1.0)
        bad = np.flatnonzero(~(deviation <= QUATERNION_TOLERANCE))
        k = int(bad[0]) if bad.size else 0
        try:
            quaternion_to_rotation(poses[k, 3:7])
        except ValueError as exc:
            more = f" ({bad.size} such rows)" if bad.size > 1 else ""
            line = csv_row_line(args.input, k)
            raise UsageError(f"{args.input}:{line}: columns qx, qy, qz, qw: {exc}{more}") from None
        raise
    batch = solve_ik_batch(arm, targets, q_reference=closest, project=args.project_orientation)
    header = ["pose", "status", "branch", *FK_COLUMNS[: arm.n_joints], "within_limits", "position_error",
              "orientation_error"]
    rows = []
    for i in range(len(poses)):
        keep = batch.within_limits[i] if closest is not None else batch.real[i]
        ks = np.flatnonzero(keep)
        if closest is not None and ks.size:
            ks = ks[[np.argmin(np.max(np.abs(batch.q[i, ks] - closest), axis=1))]]
        if ks.size == 0:
            rows.append([i, STATUS_TEXT[int(batch.status[i])], ""] + [""] * (arm.n_joints + 3))
        for k in ks:  # a solution outside the joint limits is listed but not "ok"
            status = IKStatus.OK if batch.within_limits[i, k] else IKStatus.OUTSIDE_LIMITS
            rows.append([i, STATUS_TEXT[status], BRANCHES[k], *batch.q[i, k], int(batch.within_limits[i, k]),
                         batch.position_error[i, k], batch.orientation_error[i, k]])
    write_csv(args.output, header, rows)
    failed = int(np.sum(batch.status != IKStatus.OK))
    if failed:
        print(f"ik: {failed} of {len(poses)} poses have no solution inside the limits (see the status column)",
              file=sys.stderr)
        return 1
    return 0


def cmd_urdf(args: argparse.Namespace) -> int:
    from ..arm.ros2_control import generate_xacro, write_xacro
    from ..arm.urdf import generate_urdf, write_urdf

    arm = _arm(args)
    if args.write:  # both shipped files: the xacro includes the URDF
        print(f"wrote {write_urdf(arm)}")
        print(f"wrote {write_xacro(arm)}")
    elif args.output:
        print(f"wrote {(write_xacro if args.xacro else write_urdf)(arm, args.output)}")
    else:
        sys.stdout.write((generate_xacro if args.xacro else generate_urdf)(arm))
    return 0


def cmd_import_upstream(args: argparse.Namespace) -> int:
    from ..arm.upstream import convert_upstream_inertials, links_yaml_block, load_upstream, write_links_block

    arm = _arm(args)
    links = convert_upstream_inertials(arm, load_upstream(args.upstream))
    if args.write:
        write_links_block(arm.source, links)
        print(f"updated the links block of {arm.source}")
    else:
        sys.stdout.write(links_yaml_block(links))
    return 0


def cmd_base_params(args: argparse.Namespace) -> int:
    from ..dynamics.base_parameters import compute_base_parameters
    from ..dynamics.chain import DHChain

    arm = _arm(args)
    base = compute_base_parameters(DHChain.from_arm(arm), args.structure)
    if args.json:
        print(json.dumps({"structure": base.structure.value, "count": base.count,
                          "base_parameters": [{"name": n, "expression": e}
                                              for n, e in zip(base.names, base.expressions)]}, indent=2))
    else:
        width = max(len(n) for n in base.names)
        for i, (name, expr) in enumerate(zip(base.names, base.expressions), start=1):
            print(f"{i:3d}  {name:{width}s} = {expr}")
        print(f"{base.count} base parameters ({base.structure.value} model)")
    return 0


def _joint_columns(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


def cmd_predict(args: argparse.Namespace) -> int:
    """Torques of the model file for the recorded states; a model inconsistent with the arm
    (:mod:`.dynamics.consistency`) is refused unless ``--allow-inconsistent-model``, one outside the
    plausibility bounds (:mod:`.dynamics.plausibility`) unless ``--allow-implausible`` (then a warning)."""
    from ..dynamics.consistency import ModelConsistencyError, check_model
    from ..dynamics.paramfile import load_model

    arm = _arm(args)
    model = load_model(args.params, arm, allow_implausible=True)
    check_model_plausible(model, arm, args)
    try:
        check_model(model, arm)
    except ModelConsistencyError as exc:
        if not args.allow_inconsistent_model:
            raise
        print(f"youbot-dynamics predict: warning: {exc} (used anyway: --allow-inconsistent-model)", file=sys.stderr)
    if args.recording:
        return _predict_recording(args, model)
    n = model.n_joints
    columns = ["t", *_joint_columns("q", n), *_joint_columns("dq", n), *_joint_columns("ddq", n)]
    data = read_csv_columns(args.input, columns)
    t = data[:, 0]
    q, dq, ddq = data[:, 1 : n + 1], data[:, n + 1 : 2 * n + 1], data[:, 2 * n + 1 :]
    tau = model.inverse_dynamics(q, dq, ddq)
    write_csv(args.output, ["t", *_joint_columns("tau", n)], (np.concatenate([[ti], row]) for ti, row in zip(t, tau)))
    return 0


def _predict_recording(args: argparse.Namespace, model: Any) -> int:
    """``predict --recording``: identify's processing of a raw recording (the options the model file
    records, overridden by the command line), measured and predicted torques and the errors."""
    from ..dynamics.paramfile import identification_block
    from ..identification.estimation.pipeline import load_recordings, predict_recording, processing_options
    from ..identification.estimation.processing import Observation
    from ..identification.estimation.validation import torque_errors

    arm = _arm(args)
    options = processing_options(identification_block(args.params), cutoff_hz=args.cutoff, order=args.order,
                                 decimation=args.decimate, coulomb_threshold=args.coulomb_threshold)
    pieces, _ = load_recordings([args.recording], arm, args.topic)
    results = [predict_recording(model, data, arm, options) for data in pieces]
    obs = Observation(*(np.concatenate([getattr(r[0], k) for r in results]) for k in ("t", "Y", "tau", "dq", "used")),
                      sample_rate=results[0][0].sample_rate, decimation=results[0][0].decimation, torque_noise=None,
                      source=args.recording)
    tau_hat = np.concatenate([r[1] for r in results])
    errors = torque_errors(obs.tau, tau_hat, obs.used)
    n = model.n_joints
    header = ["t", *_joint_columns("tau", n), *_joint_columns("tau_hat", n), *_joint_columns("moving", n)]
    write_csv(args.output, header, np.column_stack([obs.t, obs.tau, tau_hat, obs.used.astype(float)]))
    print(f"{args.recording}: {obs.n_samples} samples after identify's processing (cutoff {options.cutoff_hz:g} Hz, "
          f"order {options.order}, {obs.sample_rate:.4g} Hz)")
    print("joint  rms [N m]  relative")
    for j, (rms, rel) in enumerate(zip(errors.rms, errors.relative_rms), start=1):
        print(f"{j:5d}  {rms:9.4g}  {100 * rel:7.3g}%")
    print(f"overall ||tau - tau_hat|| / ||tau||: {100 * errors.overall:.3g}%")
    print(f"moving rows (|q'_j| >= {options.coulomb_threshold:g} rad/s): {100 * errors.moving:.3g}%; rows at rest: "
          f"{100 * errors.rest:.3g}%")
    return 0


def cmd_line(args: argparse.Namespace) -> int:
    """The line's CSV (``duration x sample_rate`` rows, at most :data:`MAX_LINE_ROWS`; the IK knots
    are bounded by :func:`~.control.trajectory.cartesian_line`)."""
    from ..control.trajectory import cartesian_line

    arm = _arm(args)
    q_start = arm.check_q(args.start, "--from")
    if len(args.pose) != 7:
        raise UsageError(f"line needs X Y Z QX QY QZ QW of the goal, got {len(args.pose)} numbers")
    if args.duration * args.sample_rate > MAX_LINE_ROWS:
        raise UsageError(f"--duration {args.duration:g} s x --sample-rate {args.sample_rate:g}/s would write more than "
                         f"{MAX_LINE_ROWS} rows: shorten the line or lower the rate")
    trajectory = cartesian_line(arm, q_start, _target(args.pose), args.duration, rate=args.ik_rate)
    t = np.linspace(0.0, trajectory.duration, int(np.ceil(trajectory.duration * args.sample_rate)) + 1)
    samples = [trajectory.sample(ti) for ti in t]
    n = arm.n_joints
    write_csv(args.output, ["t", *_joint_columns("q", n), *_joint_columns("dq", n), *_joint_columns("ddq", n)],
              (np.concatenate([[ti], *sample]) for ti, sample in zip(t, samples)))
    peak = np.max(np.abs([sample[1] for sample in samples]), axis=0)
    print(json.dumps({"output": str(args.output), "samples": len(t), "duration": trajectory.duration,
                      "goal_q": trajectory.final.tolist(),
                      "peak_velocity_fraction": (peak / arm.velocity_max).tolist()}, indent=2))
    return 0


def cmd_nominal_model(args: argparse.Namespace) -> int:
    from ..dynamics.nominal import DESCRIPTION, NOMINAL_MODEL_FILE, nominal_model
    from ..dynamics.paramfile import model_to_dict, save_model

    arm = _arm(args)
    model, chi = nominal_model(arm)
    if args.write:
        path = config_path(NOMINAL_MODEL_FILE)
        save_model(path, model, DESCRIPTION, chi)
        print(f"wrote {path}")
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(model_to_dict(model, standard=chi), sort_keys=False, width=120))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo.kinematics_demo import run_demo

    arm = _arm(args)
    status = 0 if args.skip_kinematics else run_demo(arm)
    try:
        from ..demo.job import run_job
        from ..demo.simulation import run_sim_demo
    except ImportError as exc:  # no ROS 2 Python packages: the ROS part cannot run
        print(f"\n(ROS 2 part of the demo skipped: {exc})")
        return status
    if args.robot == "sim" and not args.skip_kinematics:
        status = max(status, run_sim_demo(arm))
    return max(status, run_job(arm, Path(args.out), args.robot))


def cmd_compile(args: argparse.Namespace) -> int:
    from ..compiled import cache_location, compile_kernels

    seconds = compile_kernels(_arm(args))
    print(f"compiled kernels ready ({', '.join(f'{k} {v:.1f} s' for k, v in seconds.items())}); cache: "
          f"{cache_location()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="youbot-dynamics", description="youBot arm kinematics and dynamics tools.",
                                     epilog=EPILOG)
    parser.add_argument("--arm", help="arm description YAML (default: the package's config/youbot_arm.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)

    fk = sub.add_parser("fk", help="forward kinematics: tool pose of joint angles [rad]")
    fk.add_argument("q", nargs="*", type=float, metavar="Q", help="joint angles q1..q5 [rad], driver convention")
    fk.add_argument("--input", help="CSV with columns q1..q5 (batch)")
    fk.add_argument("--output", help="CSV to write: q1..q5, x, y, z, qx, qy, qz, qw")
    fk.set_defaults(func=cmd_fk, inputs=("input",), outputs=("output",))

    ik = sub.add_parser("ik", help="inverse kinematics: every configuration reaching a tool pose")
    ik.add_argument("pose", nargs="*", type=float, metavar="V", help="X Y Z [m] QX QY QZ QW (unit quaternion)")
    ik.add_argument("--closest-to", nargs=5, type=float, metavar="Q", help="return only the feasible solution "
                    "closest to these joint angles (also used for joint 1 when it is undetermined)")
    ik.add_argument("--project-orientation", action="store_true",
                    help="replace an unreachable orientation by the nearest reachable one and report the angle")
    ik.add_argument("--input", help="CSV with columns x, y, z, qx, qy, qz, qw (batch)")
    ik.add_argument("--output", help="CSV to write: one row per solution (pose index, status, branch, q, ...)")
    ik.set_defaults(func=cmd_ik, inputs=("input",), outputs=("output",))

    urdf = sub.add_parser("urdf", help="print (or write) the URDF generated from the arm description")
    urdf.add_argument("--xacro", action="store_true",
                      help="the ros2_control / Gazebo xacro instead (it includes youbot_arm.urdf from its folder)")
    group = urdf.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true",
                       help="write the package's urdf/youbot_arm.urdf and urdf/youbot_arm.urdf.xacro")
    group.add_argument("--output", help="write to this file")
    urdf.set_defaults(func=cmd_urdf, outputs=("output",))

    upstream = sub.add_parser("import-upstream-inertials",
                              help="convert the youbot_description inertials into the DH link frames")
    upstream.add_argument("--upstream",
                          help="upstream description YAML (default config/youbot_description_upstream.yaml)")
    upstream.add_argument("--write", action="store_true", help="replace the links block of the arm description")
    upstream.set_defaults(func=cmd_import_upstream, inputs=("upstream",))

    base = sub.add_parser("base-params", help="the base (identifiable) parameters of the dynamic model")
    base.add_argument("--structure", choices=["inertial", "rotor", "full"], default="full",
                      help="inertial: links only; rotor: + rotor inertia; full: + viscous, Coulomb, offset friction")
    base.add_argument("--json", action="store_true", help="print JSON")
    base.set_defaults(func=cmd_base_params)

    predict = sub.add_parser("predict", help="torques predicted by a model file for recorded states")
    predict.add_argument("--params", required=True, help="model YAML (e.g. config/youbot_nominal_model.yaml)")
    source = predict.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="CSV with columns t, q1..q5, dq1..dq5, ddq1..ddq5 (states as they are)")
    source.add_argument("--recording", help="a raw recording as identify reads it (CSV t, q, tau, dq optional, or a "
                        "bag): processed exactly as identify processes its validation data, so the error printed is "
                        "identify's figure for that file")
    predict.add_argument("--output", required=True, help="CSV to write: t, tau1..tau5 (--input); t, tau1..tau5 "
                         "(measured, filtered), tau_hat1..tau_hat5, moving1..moving5 (--recording)")
    predict.add_argument("--cutoff", type=positive_float, metavar="HZ", help="--recording: filter cutoff (default: "
                         "the model file's identification, else 10)")
    predict.add_argument("--order", type=positive_int_at_most(MAX_FILTER_ORDER), help="--recording: Butterworth order")
    predict.add_argument("--decimate", type=positive_int, metavar="K", help="--recording: keep every K-th sample")
    predict.add_argument("--coulomb-threshold", type=nonnegative_float, metavar="RAD_S",
                         help="--recording: rows slower than this count as at rest")
    predict.add_argument("--topic", default=JOINT_STATES, help="--recording: JointState topic in bags")
    predict.add_argument("--allow-inconsistent-model", action="store_true",
                         help="use a model that fails the consistency check against the arm description (mass "
                         "matrix not positive definite, negative friction or mass, another chain or gravity) with "
                         "a warning instead of refusing it (exit 2)")
    add_allow_implausible(predict, "use a model")
    predict.set_defaults(func=cmd_predict, inputs=("params", "input", "recording"), outputs=("output",))

    nominal = sub.add_parser("nominal-model", help="print (or write) the nominal model file")
    nominal.add_argument("--write", action="store_true", help="write config/youbot_nominal_model.yaml")
    nominal.set_defaults(func=cmd_nominal_model)
    add_identify_parser(sub)
    add_calibrate_parser(sub)
    add_excite_parser(sub)

    line = sub.add_parser("line", help="joint trajectory moving the tool on a straight line (through IK), "
                          "checked for branch continuity and limits; CSV t, q, dq, ddq (the input of predict)")
    line.add_argument("pose", nargs="*", type=float, metavar="V", help="goal: X Y Z [m] QX QY QZ QW")
    line.add_argument("--from", dest="start", nargs=5, type=float, required=True, metavar="Q",
                      help="start joint angles [rad] (the line starts at their tool pose)")
    line.add_argument("--duration", type=positive_float, required=True, help="[s], rest to rest")
    line.add_argument("--output", "-o", required=True, help="CSV file to write")
    line.add_argument("--sample-rate", type=positive_float, default=100.0,
                      help="rows per second of the CSV (default 100)")
    line.add_argument("--ik-rate", type=positive_float, default=100.0, help="IK samples per second along the line "
                      "(the trajectory's knots; default 100)")
    line.set_defaults(func=cmd_line, outputs=("output",))

    compile_ = sub.add_parser("compile", help="compile the numba kernels ahead of time (the first start after an "
                              "install otherwise spends 6-25 s on it; later ones load the cache)")
    compile_.set_defaults(func=cmd_compile)

    demo = sub.add_parser("demo", help="demonstration (what `make demo` runs)")
    demo.add_argument("--robot", choices=("sim", "driver", "emulated"), default="sim",
                      help="the arm of the main job: sim_node (MuJoCo), youbot_driver on virtual drives, or "
                           "youbot_driver on real EtherCAT frames (pysoem, veth pair) to emulated drives (needs root)")
    demo.add_argument("--out", default="out/demo", help="folder of the main job's results (default out/demo)")
    demo.add_argument("--skip-kinematics", action="store_true",
                      help="only the main job (identification, regulation, tracking)")
    demo.set_defaults(func=cmd_demo)
    return parser


def _check_outputs(args: argparse.Namespace) -> None:
    """Before any work: every output of the command (its ``outputs`` defaults; ``folder_outputs``:
    folders) can be written and is none of its inputs (``inputs`` defaults and ``--arm``)."""
    inputs: list[str] = [args.arm] if args.arm else []
    for dest in getattr(args, "inputs", ()):
        value = getattr(args, dest, None)
        inputs += value if isinstance(value, list) else [value] if value else []
    for dest in (*getattr(args, "outputs", ()), *getattr(args, "folder_outputs", ())):
        path = getattr(args, dest, None)
        if path is not None:
            check_output(path, inputs, f"--{dest}", folder=dest in getattr(args, "folder_outputs", ()))


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command (module docstring); the package's input errors (``ValueError`` subclasses:
    arm description, data, model, trajectory and output files, bad values) and ``OSError`` are a
    one-line message and exit 2, any other exception propagates (a bug, with its traceback)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _check_outputs(args)
        return int(args.func(args))
    except IKError as exc:
        print(f"{parser.prog} {args.command}: {exc}", file=sys.stderr)
        return 1
    except (UsageError, ArmDescriptionError, DataFileError, ValueError, OSError) as exc:
        print(f"{parser.prog} {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
