"""``doc/parameters.md``: every node's parameters (name, type, default, range, description), read from
the nodes' own declarations, so the table cannot drift from the code. Each node is built once,
in a private context, with a subclass that records its ``declare_parameter`` calls (the declared
default, before any override; ``youbot_driver`` is built on its virtual backend so that it needs
no arm: its ``backend`` default is still the declared one).

    python -m youbot_dynamics.nodes.parameter_table > doc/parameters.md

``test/test_parameter_table.py`` checks that the shipped page is what this writes.
"""
from __future__ import annotations

import importlib
import math
import sys
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..controller_registry import CONTROLLERS

__all__ = ["NODES", "declared_parameters", "markdown", "main"]

#: (executable, module, class, overrides needed to build it without hardware)
NODES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("sim_node", "sim_node", "SimNode", {}),
    ("youbot_driver", "youbot_driver", "YoubotDriverNode", {"backend": "virtual"}),
    ("kinematics_node", "kinematics_node", "KinematicsNode", {}),
    ("identification_node", "identification_node", "IdentificationNode", {}),
    ("external_torque_observer", "external_torque_observer", "ExternalTorqueNode", {}),
    *[(entry.node, entry.module, entry.node_class, {}) for entry in CONTROLLERS],
]
RCLPY_PARAMETERS = ("use_sim_time", "start_type_description_service")  # every node's, declared by rclpy
_TYPES = {ParameterType.PARAMETER_BOOL: "bool", ParameterType.PARAMETER_INTEGER: "int",
          ParameterType.PARAMETER_DOUBLE: "double", ParameterType.PARAMETER_STRING: "string",
          ParameterType.PARAMETER_DOUBLE_ARRAY: "double[]", ParameterType.PARAMETER_INTEGER_ARRAY: "int[]",
          ParameterType.PARAMETER_STRING_ARRAY: "string[]", ParameterType.PARAMETER_BOOL_ARRAY: "bool[]"}


def declared_parameters(module: str, class_name: str, overrides: dict[str, Any],
                        context: Context) -> list[tuple[str, Any, ParameterDescriptor]]:
    """``(name, declared default, descriptor)`` of each parameter node class ``class_name`` of
    ``youbot_dynamics.nodes.<module>`` declares, in its order (``Parameter.Type`` for one declared
    without a value), but rclpy's own (:data:`RCLPY_PARAMETERS`)."""
    node_class = getattr(importlib.import_module(f"youbot_dynamics.nodes.{module}"), class_name)
    declared: list[tuple[str, Any, ParameterDescriptor]] = []

    class Recording(node_class):  # type: ignore[misc, valid-type]
        def declare_parameter(self, name: str, value: Any = None, descriptor: ParameterDescriptor | None = None,
                              ignore_override: bool = False) -> Parameter:
            descriptor = descriptor or ParameterDescriptor()  # rclpy's default
            if name not in RCLPY_PARAMETERS:
                declared.append((name, value, descriptor))
            return super().declare_parameter(name, value, descriptor, ignore_override)

    node: Node = Recording(context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
    node.destroy_node()
    return declared


def _value(value: Any) -> str:
    if isinstance(value, Parameter.Type):
        return "unset"
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "''" if value == "" else str(value).lower() if isinstance(value, bool) else str(value)


def _range(descriptor: ParameterDescriptor) -> str:
    ranges = list(descriptor.floating_point_range) + list(descriptor.integer_range)
    return "" if not ranges else f"{_value(ranges[0].from_value)} .. {_value(ranges[0].to_value)}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown() -> str:
    """The page: one table per node."""
    context = Context()
    rclpy.init(context=context)
    try:
        out = ["# Node parameters", "",
               "Generated from the nodes' declarations (`python -m youbot_dynamics.nodes.parameter_table > "
               "doc/parameters.md`; a test checks it). Defaults as declared; the package's parameter files in "
               "`config/` state them too. `unset`: declared without a value (the node derives one, see the "
               "description). Read-only parameters are read once at start-up.", ""]
        for executable, module, class_name, overrides in NODES:
            out += [f"## `{executable}`", "", "| parameter | type | default | range | description |",
                    "|---|---|---|---|---|"]
            for name, value, descriptor in declared_parameters(module, class_name, overrides, context):
                kind = _TYPES.get(descriptor.type, "")
                writable = "" if descriptor.read_only else " (changeable at run time)"
                out.append(f"| `{name}` | {kind} | `{_cell(_value(value))}` | {_range(descriptor)} | "
                           f"{_cell(descriptor.description)}{writable} |")
            out.append("")
        return "\n".join(out)
    finally:
        rclpy.shutdown(context=context)


def main() -> int:
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
