"""``--allow-implausible`` of ``identify``, ``calibrate`` and ``predict``: a model outside the
plausibility bounds (:mod:`..dynamics.plausibility`, doc/safety.md) is refused (exit 2, one line
naming each bound exceeded) unless the option is given; then it is used with a warning on stderr."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..arm.description import ArmDescription

__all__ = ["OPTION", "add_option", "check_model_plausible"]

OPTION = "--allow-implausible"


def add_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add :data:`OPTION` to a subcommand's ``parser``; ``what`` it allows (help text)."""
    parser.add_argument(OPTION, action="store_true",
                        help=f"{what} outside the plausibility bounds of the arm (masses, inertias, gravity and "
                        "friction torques; doc/safety.md) with a warning instead of refusing it (exit 2)")


def check_model_plausible(model: Any, arm: ArmDescription, args: argparse.Namespace, source: str | None = None) -> None:
    """:class:`~..dynamics.plausibility.ModelPlausibilityError` if ``model`` is outside the bounds
    and ``args.allow_implausible`` is not set; with it, a warning on stderr. ``source`` names the
    model (default its file)."""
    from ..dynamics.plausibility import check_plausible

    warning = check_plausible(model, arm, source=source, allow=args.allow_implausible,
                              override=f"{OPTION} uses it anyway")
    if warning:
        print(f"youbot-dynamics {args.command}: warning: {warning} (used anyway: {OPTION})", file=sys.stderr)
