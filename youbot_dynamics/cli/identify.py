"""``identify``: dynamic parameters from recorded data (seed 002 §3.2), validated on other data.

    python -m youbot_dynamics identify DATA... --out PARAMS.yaml [--validate DATA...]
        [--method ols|wls|consistent] [--friction auto|TERMS] [--eps auto|RAD_S] [--report DIR]
        [--velocity auto|recorded|positions] [processing options]

DATA: CSV files (``t, q1..q5, dq1..dq5, tau1..tau5``; ``dq``, ``ddq`` optional; any file name,
recognised by its header) or rosbag2 folders / ``.mcap`` files with ``sensor_msgs/JointState`` on
``/joint_states``. Real logs are cleaned first (:mod:`.cleaning`: repeated stamps and stale
repeated rows dropped and counted, split at gaps; the counts go to ``report.json``
``data_cleaning``). Each piece is processed on its own (:mod:`.processing`), the equations of all
files are stacked and solved (:mod:`.estimation`; default ``consistent``, with the friction model
``--friction`` and its Coulomb shape ``--eps``, both ``auto`` by default: chosen per joint by validation on
identification data left out, :mod:`.friction_fit`, :mod:`.pipeline`; with ``--velocity auto``, the
default, under the recorded joint velocities and under those of the differentiated positions, the
better of the two kept: a drive's velocity estimate lags, :mod:`.processing`).
``PARAMS.yaml`` is the model file ``predict`` and the controllers read,
with the relative standard deviations and a summary of the identification. Validation
(:mod:`.validation`) uses the ``--validate`` recordings, else (marked as such) the
identification data themselves; the nominal model is the baseline. ``--report DIR`` writes
``report.json`` and the plots (:mod:`.report`). An identified model that fails the consistency check
of ``predict`` and the controllers (:mod:`..dynamics.consistency`) is still written, with a warning
on stderr and under ``consistency`` in its ``identification`` block and the report. Recordings
that cannot come from the arm (positions in degrees, torques in mN m, :func:`.dataset.check_plausible`)
are refused before any work, and an identified model outside the plausibility bounds
(:mod:`..dynamics.plausibility`) is not written (exit 2) unless ``--allow-implausible``;
the model file and the report are written atomically and together (none if one fails), never over
an input. ``--order`` is at most :data:`.processing.MAX_FILTER_ORDER` (20), refused before any
work. The steps are those of :mod:`.pipeline`, which the identification node runs too.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .argtypes import nonnegative_float, positive_float, positive_int, positive_int_at_most
from ..arm.description import default_arm, load_arm
from ..contract.topics import JOINT_STATES
from ..dynamics.friction import DEFAULT_EPS, EXTRA_TERMS, FrictionModel
from ..files.fileio import output_group
from ..identification.estimation.friction_fit import EPS_CANDIDATES, TERM_CANDIDATES
from ..identification.estimation.least_squares import METHODS, PRIOR_WEIGHT, PRIOR_WEIGHTS
from ..identification.estimation.processing import MAX_FILTER_ORDER, VELOCITY_SOURCES, ProcessingOptions
from .plausible import add_option, check_model_plausible


def friction_terms(text: str) -> tuple[str, ...] | str:
    """``load,asymmetric`` -> the terms; ``none`` -> (); ``auto``."""
    if text == "auto":
        return text
    terms = tuple(t.strip() for t in text.split(",") if t.strip())
    if terms == ("none",):
        return ()
    unknown = [t for t in terms if t not in EXTRA_TERMS]
    if unknown or not terms:
        raise argparse.ArgumentTypeError(f"expected auto, a comma list of {', '.join(EXTRA_TERMS)} or none, "
                                         f"got {text!r}")
    return terms


def prior_weight_choice(text: str) -> float | str:
    """``auto`` or a finite non-negative weight."""
    return text if text == "auto" else nonnegative_float(text)


def eps_choice(text: str) -> float | str:
    """``auto`` or a finite non-negative velocity [rad/s]."""
    if text == "auto":
        return text
    value = nonnegative_float(text)
    if value > 10.0:
        raise argparse.ArgumentTypeError(f"expected at most 10 rad/s (the Coulomb shape's velocity scale), got {text}")
    return value


__all__ = ["add_parser", "cmd_identify"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``identify`` subcommand."""
    p = subparsers.add_parser("identify", help="identify the dynamic parameters from recorded joint data")
    p.add_argument("data", nargs="+", metavar="DATA", help="CSV (t, q1..q5, dq1..dq5, tau1..tau5; dq, ddq optional) "
                   "or rosbag2 folder / .mcap file with sensor_msgs/JointState")
    p.add_argument("--out", required=True, metavar="PARAMS.yaml", help="model file to write (read by predict and the "
                   "controllers)")
    p.add_argument("--validate", nargs="+", default=[], metavar="DATA",
                   help="held-out recordings: a different motion, never fitted (their error is the held-out error; "
                   "later periods of the fitted motion would flatter the model); without them the fit is validated "
                   "in-sample, and says so")
    p.add_argument("--method", choices=METHODS, default="consistent", help="ols; wls (per-joint noise); consistent "
                   "(physically consistent, semidefinite program; default)")
    p.add_argument("--report", metavar="DIR", help="write report.json and PNG plots into this folder")
    p.add_argument("--structure", choices=["inertial", "rotor", "full"], default="full",
                   help="model terms: links only; + rotor inertia; + viscous, Coulomb and offset friction (default)")
    p.add_argument("--friction", type=friction_terms, default="auto", metavar="TERMS",
                   help="extra friction terms beyond viscous, Coulomb and offset (full structure): a comma list of "
                   f"{', '.join(EXTRA_TERMS)}, none, or auto (default: per joint, none, each term or a combination, "
                   "whichever best predicts identification data left out)")
    p.add_argument("--eps", type=eps_choice, default="auto", metavar="RAD_S",
                   help="Coulomb shape tanh(v / eps) [rad/s]: a value for every joint (0: sign(v)), or auto (default: "
                   f"per joint by validation on left-out data among {', '.join(f'{e:g}' for e in EPS_CANDIDATES)})")
    p.add_argument("--prior-weight", type=prior_weight_choice, default=PRIOR_WEIGHT, metavar="RHO",
                   help=f"consistent method: weight of the pull towards the CAD inertials (default {PRIOR_WEIGHT:g}), "
                   f"or auto: among {', '.join(f'{w:g}' for w in PRIOR_WEIGHTS)} by leave one recording out (several "
                   "recordings; costs 16 more estimates)")
    defaults = ProcessingOptions()  # the defaults live there
    p.add_argument("--cutoff", type=positive_float, default=defaults.cutoff_hz, metavar="HZ",
                   help=f"low-pass cutoff of the parallel filter (default {defaults.cutoff_hz:g})")
    p.add_argument("--order", type=positive_int_at_most(MAX_FILTER_ORDER), default=defaults.order,
                   help=f"Butterworth order (default {defaults.order}, at most {MAX_FILTER_ORDER})")
    p.add_argument("--decimate", type=positive_int, metavar="K", help="keep every K-th sample (default: automatic)")
    p.add_argument("--coulomb-threshold", type=nonnegative_float, default=defaults.coulomb_threshold, metavar="RAD_S",
                   help=f"leave out rows of joints slower than this (default {defaults.coulomb_threshold:g} rad/s)")
    p.add_argument("--velocity", choices=("auto", *VELOCITY_SOURCES), default="auto",
                   help="joint velocities: the recording's (recorded), the differentiated positions' (positions), or "
                   "auto (default): the one under which the chosen friction structure predicts left-out "
                   "identification data best (with --friction or --eps auto)")
    p.add_argument("--period", type=positive_float, metavar="S",
                   help="average the identification data over periods of S s")
    p.add_argument("--topic", default=JOINT_STATES, help="JointState topic in bags (default /joint_states)")
    add_option(p, "write an identified model")
    p.set_defaults(func=cmd_identify, inputs=("data", "validate"), outputs=("out",),
                   folder_outputs=("report",))
    return p


def cmd_identify(args: argparse.Namespace) -> int:
    """Run the identification (module docstring); 0 on success."""
    from ..identification.estimation.pipeline import (consistency_warning, identify, load_recordings, summary_lines,
                                                      write_results)
    from ..identification.io.report import ProgressBar

    start = time.perf_counter()
    arm = load_arm(args.arm) if args.arm else default_arm()
    options = ProcessingOptions(cutoff_hz=args.cutoff, order=args.order, decimation=args.decimate,
                                coulomb_threshold=args.coulomb_threshold, period=args.period,
                                **({} if args.velocity == "auto" else {"velocity": args.velocity}))

    train, train_logs = load_recordings(args.data, arm, args.topic)
    held, held_logs = load_recordings(args.validate, arm, args.topic)
    terms = ("load",) if args.friction == "auto" else args.friction  # auto: the first estimate's, then chosen
    friction = FrictionModel(arm.n_joints, DEFAULT_EPS if args.eps == "auto" else args.eps,
                             terms) if args.structure == "full" else None
    run = identify(train, held, arm, method=args.method, structure=args.structure,
                   options=options, progress=ProgressBar, friction=friction,
                   eps_candidates=EPS_CANDIDATES if args.eps == "auto" else None,
                   term_candidates=TERM_CANDIDATES if args.friction == "auto" else None,
                   prior_weights=PRIOR_WEIGHTS if args.prior_weight == "auto" else (args.prior_weight,),
                   velocity_candidates=VELOCITY_SOURCES if args.velocity == "auto" else None)
    check_model_plausible(run.model, arm, args, source=f"the identified model (for {args.out})")
    with output_group():  # the model file and the report appear together or not at all
        write_results(run, args.out, f"Identified by `youbot_dynamics identify --method {run.result.method}` from "
                      f"{', '.join(map(str, args.data))}",
                      report=args.report,
                      summary={"data": [str(p) for p in args.data], "validation_data": [str(p) for p in args.validate]},
                      report_extra={"total_time_s": time.perf_counter() - start,
                                    "data_cleaning": {"identification": train_logs, "validation": held_logs}})
    print("\n".join(summary_lines(run, parameters=True)))
    print(f"wrote {args.out}" + (f" and the report in {args.report}" if args.report else ""))
    sys.stdout.flush()
    warning = consistency_warning(run)
    if warning:
        print(f"youbot-dynamics identify: {args.out}: {warning}", file=sys.stderr)
    return 0
