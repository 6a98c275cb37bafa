"""``doc/parameters.md``: every node's parameters (name, type, default, range or choices,
description), read from the nodes' parameter schemas (``youbot_dynamics/nodes/parameters/``,
:mod:`youbot_dynamics.contract.parameter_schema`), which the nodes declare from: the table cannot drift from
the code. No rclpy needed.

    python -m youbot_dynamics.nodes.parameter_table > doc/parameters.md

``test/test_parameter_table.py`` checks that the shipped page is what this writes.
"""
from __future__ import annotations

import math
import sys
from typing import Any

from ..contract.controller_registry import CONTROLLERS
from ..contract.parameter_schema import ParameterSpec, load_schema

__all__ = ["NODES", "markdown", "main"]

#: the node executables, each declaring the schema of its name
NODES: list[str] = ["sim_node", "youbot_driver", "kinematics_node", "identification_node", "external_torque_observer",
                    *[entry.node for entry in CONTROLLERS]]


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "''" if value == "" else str(value).lower() if isinstance(value, bool) else str(value)


def _limits(spec: ParameterSpec) -> str:
    if spec.bounds is not None:
        return f"{_value(spec.bounds[0])} .. {_value(spec.bounds[1])}"
    choices = spec.one_of or spec.subset_of
    if choices is not None:
        return ("" if spec.one_of else "any of ") + ", ".join(f"`{_value(c)}`" for c in choices)
    parts = []
    if spec.lengths is not None:
        count, *others = spec.lengths
        parts.append(" or ".join([str(count), *(str(k) for k in others if k)]) + " values"
                     + (" or empty" if 0 in others else ""))
    if spec.element_bounds is not None:
        parts.append(f"each {_value(spec.element_bounds[0])} .. {_value(spec.element_bounds[1])}")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown() -> str:
    """The page: one table per node."""
    out = ["# Node parameters", "",
           "Generated from the nodes' parameter schemas, `youbot_dynamics/nodes/parameters/<node>.yaml` "
           "and, for a controller, its law's `Config` (`youbot_dynamics/control/laws.py`) "
           "(`python -m youbot_dynamics.nodes.parameter_table > doc/parameters.md`; a test checks it). A default "
           "the core owns (a config dataclass or constant) is named there and shown here with its value; the "
           "package's parameter files in `config/` state only deviations from these defaults, each with its "
           "reason. `unset`: declared without a value (the node derives one, see the description). Read-only "
           "parameters are read once at start-up.", ""]
    for node in NODES:
        out += [f"## `{node}`", "", "| parameter | type | default | range / choices | description |",
                "|---|---|---|---|---|"]
        for name, spec in load_schema(node).items():
            writable = "" if spec.read_only else " (changeable at run time)"
            out.append(f"| `{name}` | {spec.type.replace('_array', '[]')} | `{_cell(_value(spec.default))}` | "
                       f"{_limits(spec)} | {_cell(spec.description)}{writable} |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
