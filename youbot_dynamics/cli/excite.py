"""``excite``: design an excitation trajectory for identification and write it (:mod:`.trajfile`).

    python -m youbot_dynamics excite --duration T --harmonics K --out TRAJ.yaml [--seed S]
        [--start Q1..Q5] [--method fourier|random-points] [--points N] [--dwell S] [--json]

``fourier`` (default): the optimal periodic trajectory of :func:`.excitation.design_excitation`
(T = 10 s, K = 5 by default); ``random-points``: the seed's method,
:func:`.excitation.random_points_excitation`. Prints the condition number, the limits used and
the margins achieved (``--json``: the whole design report). Exit status 1 when no trajectory
within the limits is found, 2 on bad input (``--points`` below 2, a ``--out`` that cannot be
written: checked before the design).

The work is bounded before it starts (exit 2 naming the option and the limit): ``--duration`` and
the random-points schedule (``--dwell`` x (``--points`` + 2) plus the moves) at most
:data:`.limits.MAX_DURATION` (600 s), ``--harmonics`` at most :data:`.excitation.MAX_HARMONICS`
(20), ``--points`` at most :data:`.excitation.MAX_RANDOM_POINTS` (50), ``--max-iterations`` at
most :data:`.excitation.MAX_ITERATIONS` (1000), ``--max-time`` at most
:data:`.excitation.MAX_DESIGN_TIME` (3600 s, where every design stops).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from .argtypes import nonnegative_float_at_most, positive_float_at_most, positive_int_at_most
from ..arm.description import default_arm, load_arm

__all__ = ["add_parser", "cmd_excite", "summary_lines"]

DEFAULT_DURATION = 10.0
DEFAULT_HARMONICS = 5
DEFAULT_POINTS = 10
DEFAULT_DWELL = 1.0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``excite`` subcommand."""
    from ..identification.excitation.criterion import CRITERIA
    from ..identification.excitation.design import (MAX_DESIGN_TIME, MAX_HARMONICS, MAX_ITERATIONS, MAX_RANDOM_POINTS,
                                                    MIN_RANDOM_POINTS, OPTIMIZERS)
    from ..identification.excitation.limits import MAX_DURATION

    p = subparsers.add_parser("excite", help="design an excitation trajectory for identification")
    p.add_argument("--out", required=True, metavar="TRAJ.yaml", help="trajectory file to write")
    p.add_argument("--method", choices=("fourier", "random-points"), default="fourier",
                   help="fourier: optimised periodic trajectory (default); random-points: random configurations "
                   "visited point to point (the seed's method)")
    p.add_argument("--duration", type=positive_float_at_most(MAX_DURATION, " s"), metavar="T",
                   help=f"period [s] (fourier, default {DEFAULT_DURATION:g}, at most {MAX_DURATION:g})")
    p.add_argument("--harmonics", type=positive_int_at_most(MAX_HARMONICS), metavar="K",
                   help=f"harmonics (fourier, default {DEFAULT_HARMONICS}, at most {MAX_HARMONICS})")
    p.add_argument("--points", type=positive_int_at_most(MAX_RANDOM_POINTS), metavar="N",
                   help=f"configurations (random-points, {MIN_RANDOM_POINTS} to {MAX_RANDOM_POINTS}, default "
                   f"{DEFAULT_POINTS})")
    p.add_argument("--dwell", type=nonnegative_float_at_most(MAX_DURATION, " s"), metavar="S",
                   help=f"rest at each configuration [s] (random-points, default {DEFAULT_DWELL:g}; the whole "
                   f"schedule lasts at most {MAX_DURATION:g} s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--start", nargs="+", type=float, metavar="Q", help="start and end configuration q1..q5 [rad] "
                   "(default: the middle of the joint ranges)")
    p.add_argument("--structure", choices=("inertial", "rotor", "full"), default="full",
                   help="model whose base regressor is conditioned (default full)")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=OPTIMIZERS[0], help="fourier: SciPy method")
    p.add_argument("--criterion", choices=CRITERIA, default=CRITERIA[0],
                   help="fourier: minimise the condition number (default) or maximise log det")
    p.add_argument("--max-iterations", type=positive_int_at_most(MAX_ITERATIONS), default=100,
                   help=f"fourier: iterations per optimiser run (default 100, at most {MAX_ITERATIONS})")
    p.add_argument("--max-time", type=positive_float_at_most(MAX_DESIGN_TIME, " s"), metavar="S",
                   help=f"fourier: stop the optimiser after S seconds (every design stops after {MAX_DESIGN_TIME:g} s)")
    p.add_argument("--json", action="store_true", help="print the design report as JSON")
    p.set_defaults(func=cmd_excite, outputs=("out",))  # checked writable before the design
    return p


def _check_options(args: argparse.Namespace) -> None:
    fourier_only = {"--duration": args.duration, "--harmonics": args.harmonics, "--max-time": args.max_time}
    points_only = {"--points": args.points, "--dwell": args.dwell}
    wrong = points_only if args.method == "fourier" else fourier_only
    given = [name for name, value in wrong.items() if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)} do(es) not apply to --method {args.method}")
    if args.method == "random-points":
        from ..identification.excitation.limits import MAX_DURATION

        points = args.points if args.points is not None else DEFAULT_POINTS
        dwell = args.dwell if args.dwell is not None else DEFAULT_DWELL
        if dwell * (points + 2) > MAX_DURATION:
            raise ValueError(f"--dwell {dwell:g} s at each of the {points + 2} rests (--points {points} and the start "
                             f"and end) makes the schedule longer than the maximum {MAX_DURATION:g} s")


def _joint_list(values: Any, digits: int = 3) -> str:
    return "[" + ", ".join(f"{v:.{digits}f}" for v in values) + "]"


def summary_lines(report: dict[str, Any]) -> list[str]:
    """Human-readable lines of a design report (:meth:`.excitation.ExcitationResult.report`)."""
    lim, got = report["limits"], report["margins_achieved"]
    m = lim["margins"]
    start = report["start_condition_number"]
    lines = [
        f"condition number {report['condition_number']:.1f} ({report['structure']} model, "
        f"{report['base_parameters']} base parameters, {report['samples']} samples"
        + (f"; random feasible start {start:.1f})" if start is not None else ")"),
        "limits used:",
        f"  position min [rad]        {_joint_list(lim['position_min'])}, margin {m['position']:g} rad",
        f"  position max [rad]        {_joint_list(lim['position_max'])}",
        f"  velocity max [rad/s]      {_joint_list(lim['velocity_max'])}, margin {m['velocity']:.0%}",
        f"  acceleration max [rad/s2] {_joint_list(lim['acceleration_max'])}, margin {m['acceleration']:.0%}",
        f"  clearance from floor, platform and base column: {m['clearance']:g} m",
        "margins achieved:",
        f"  position [rad]            {_joint_list(got['position'])}",
        f"  velocity (unused)         {_joint_list(got['velocity'], 2)}",
        f"  acceleration (unused)     {_joint_list(got['acceleration'], 2)}",
        f"  clearance                 {got['clearance']:.3f} m",
        f"{report['method']}: {report['duration_s']:.1f} s trajectory, designed in {report['elapsed_s']:.1f} s"
        + (f" ({report['optimizer']}, {report['iterations']} iterations, seed {report['seed']})"
           if report["optimizer"] else f" (seed {report['seed']})"),
    ]
    return lines


def cmd_excite(args: argparse.Namespace) -> int:
    """Design, write and summarise the trajectory (module docstring)."""
    from ..identification.excitation.design import design_excitation, random_points_excitation
    from ..identification.excitation.limits import ExcitationError
    from ..identification.io.trajfile import save_trajectory

    _check_options(args)
    arm = load_arm(args.arm) if args.arm else default_arm()
    start = None if args.start is None else np.array(args.start)
    if start is not None and start.size != arm.n_joints:
        raise ValueError(f"--start needs {arm.n_joints} joint angles [rad], got {start.size}")
    try:
        if args.method == "fourier":
            result = design_excitation(
                arm, args.duration if args.duration is not None else DEFAULT_DURATION,
                args.harmonics if args.harmonics is not None else DEFAULT_HARMONICS, q_start=start,
                structure=args.structure, seed=args.seed, optimizer=args.optimizer, criterion=args.criterion,
                max_iterations=args.max_iterations, max_time=args.max_time)
        else:
            result = random_points_excitation(
                arm, args.points if args.points is not None else DEFAULT_POINTS, q_start=start,
                structure=args.structure, seed=args.seed, dwell=args.dwell if args.dwell is not None else DEFAULT_DWELL)
    except ExcitationError as exc:
        print(f"excite: {exc}", file=sys.stderr)
        return 1
    report = result.report()
    save_trajectory(args.out, result.trajectory, arm.joint_names, report)
    if args.json:
        print(json.dumps({"out": str(args.out), **report}, indent=2))
    else:
        print("\n".join([f"wrote {args.out}", *summary_lines(report)]))
    return 0
