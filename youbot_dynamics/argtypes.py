"""``argparse`` types of the command-line options that must be positive (or not negative) and
finite: ``--decimate 0``, ``--order -3``, ``--ik-rate nan`` are refused by argparse (exit 2,
``argument --ik-rate: expected a positive finite number, got 'nan'``) before any work."""
from __future__ import annotations

import argparse
import math

__all__ = ["positive_float", "nonnegative_float", "positive_int"]


def _finite(text: str, kind: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a {kind} finite number, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite float > 0."""
    value = _finite(text, "positive")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite float >= 0."""
    value = _finite(text, "non-negative")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value
