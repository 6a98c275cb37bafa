"""``argparse`` types of the command-line options that must be positive (or not negative) and
finite: ``--decimate 0``, ``--order -3``, ``--ik-rate nan`` are refused by argparse (exit 2,
``argument --ik-rate: expected a positive finite number, got 'nan'``) before any work. Options
that scale the work (``excite --duration``, ``--harmonics``, ``--points``; ``identify --order``)
also have a documented maximum (:func:`positive_int_at_most`, :func:`positive_float_at_most`):
``argument --order: expected a positive integer of at most 20, got '1000000'``."""
from __future__ import annotations

import argparse
import math
from typing import Callable

__all__ = ["positive_float", "nonnegative_float", "positive_int", "positive_int_at_most",
           "positive_float_at_most", "nonnegative_float_at_most"]


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


def _at_most(parse: Callable[[str], float], kind: str, maximum: float, unit: str) -> Callable[[str], float]:
    def check(text: str) -> float:
        value = parse(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(f"expected a {kind} of at most {maximum:g}{unit}, got {text!r} "
                                             f"(the limit bounds the time and memory of the command)")
        return value

    check.__name__ = parse.__name__  # argparse names the type in "invalid <name> value" messages
    return check


def positive_int_at_most(maximum: int) -> Callable[[str], int]:
    """An integer in ``[1, maximum]``."""
    return _at_most(positive_int, "positive integer", maximum, "")  # type: ignore[return-value]


def positive_float_at_most(maximum: float, unit: str = "") -> Callable[[str], float]:
    """A finite float in ``(0, maximum]`` (``unit`` appended to the maximum in the message, e.g. " s")."""
    return _at_most(positive_float, "positive finite number", maximum, unit)


def nonnegative_float_at_most(maximum: float, unit: str = "") -> Callable[[str], float]:
    """A finite float in ``[0, maximum]``."""
    return _at_most(nonnegative_float, "non-negative finite number", maximum, unit)
