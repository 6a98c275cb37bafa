"""``calibrate``: an identified model updated to a new session (payload and friction only).

    python -m youbot_dynamics calibrate --params MODEL.yaml RUN [RUN ...] --out NEW.yaml
        [--inertia] [--holdout F] [--report DIR] [processing options]

RUN: the recordings ``identify`` reads (CSV, bags). The steps are :mod:`.calibration`'s: the
payload at the last link (mass and centre of mass; ``--inertia`` its inertia too) and, as the
held-out part shows best, none, the offsets or all of the friction terms are re-estimated; the
rest of ``MODEL.yaml`` is kept. Printed: the payload change,
the friction terms before and after, and the torque errors of the old and the new model on the
last ``--holdout`` fraction of the recordings (fitted without it) and on all of them. The processing
options default to those the model file records (its ``identification.processing``). A model
that fails the consistency check of ``predict`` and the controllers (e.g. a negative mass left at
the tool) is not written: exit 1 with the reason. Exit 2 on bad input (files, options, a model
without standard parameters, an input or updated model outside the plausibility bounds of
:mod:`..dynamics.plausibility` unless ``--allow-implausible``).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from .argtypes import nonnegative_float_at_most, positive_float, positive_int, positive_int_at_most
from ..arm.description import default_arm, load_arm
from ..contract.topics import JOINT_STATES
from ..identification.estimation.processing import MAX_FILTER_ORDER
from .plausible import add_option, check_model_plausible

__all__ = ["add_parser", "cmd_calibrate"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``calibrate`` subcommand."""
    p = subparsers.add_parser("calibrate",
                              help="update an identified model's payload and friction from a new recording")
    p.add_argument("data", nargs="+", metavar="RUN", help="recordings of the new session (as identify reads them)")
    p.add_argument("--params", required=True, metavar="MODEL.yaml", help="the identified model to update")
    p.add_argument("--out", required=True, metavar="NEW.yaml", help="updated model file to write")
    p.add_argument("--inertia", action="store_true", help="estimate the payload's inertia too (default: a point mass)")
    p.add_argument("--holdout", type=nonnegative_float_at_most(0.9), default=0.3, metavar="F",
                   help="fraction at the end of each recording held out to show the gain (default 0.3; 0: none)")
    p.add_argument("--report", metavar="DIR", help="write report.json into this folder")
    p.add_argument("--cutoff", type=positive_float, metavar="HZ", help="filter cutoff (default: the model file's)")
    p.add_argument("--order", type=positive_int_at_most(MAX_FILTER_ORDER), help="Butterworth order")
    p.add_argument("--decimate", type=positive_int, metavar="K", help="keep every K-th sample")
    p.add_argument("--topic", default=JOINT_STATES, help="JointState topic in bags (default /joint_states)")
    add_option(p, "use or write a model")
    p.set_defaults(func=cmd_calibrate, inputs=("data", "params"), outputs=("out",), folder_outputs=("report",))
    return p


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Calibrate (module docstring); 0 on success, 1 if the updated model is inconsistent."""
    from ..dynamics.consistency import check_model
    from ..dynamics.paramfile import identification_block, load_model
    from ..identification.estimation.calibration import (calibrate, consistency_problems, summary_lines,
                                                         write_calibration)
    from ..identification.estimation.pipeline import load_recordings, processing_options

    start = time.perf_counter()
    arm = load_arm(args.arm) if args.arm else default_arm()
    model = load_model(args.params, arm, allow_implausible=True)
    check_model_plausible(model, arm, args)
    check_model(model, arm)
    block = identification_block(args.params)
    options = processing_options(block, cutoff_hz=args.cutoff, order=args.order, decimation=args.decimate)
    datasets, logs = load_recordings(args.data, arm, args.topic)
    result = calibrate(model, datasets, arm, options=options, inertia=args.inertia, holdout=args.holdout)
    print("\n".join(summary_lines(result, arm.n_joints, args.holdout)))
    problems = consistency_problems(result, arm)
    if problems:
        print(f"youbot-dynamics calibrate: the updated model is physically inconsistent and was not written: "
              f"{'; '.join(problems)}", file=sys.stderr)
        return 1
    check_model_plausible(result.model, arm, args, source=f"the updated model (for {args.out})")
    write_calibration(result, args.out, f"Calibrated by `youbot_dynamics calibrate` from {args.params} on "
                      f"{', '.join(map(str, args.data))}", block, args.params, args.data, report=args.report,
                      report_extra={"processing": dataclasses.asdict(options), "data_cleaning": logs,
                                    "total_time_s": time.perf_counter() - start})
    print(f"wrote {args.out}" + (f" and the report in {args.report}" if args.report else ""))
    return 0
