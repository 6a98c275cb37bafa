"""The joint-torque controllers of the package, in one table: what the launch files offer
(``controller:=<name>``), the executables ``setup.py`` installs, the controllers ``youbot_driver``
and ``sim_node`` can run in their loop (``controller`` parameter) and the tests' list all come from
:data:`CONTROLLERS`. Adding a controller: ``doc/adding_a_controller.md``.

Plain data without imports of the package at module level (``setup.py`` reads it before anything
is installed, launch files read it without numpy; :meth:`ControllerEntry.node_type` imports the
node when asked).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["CONTROLLERS", "ControllerEntry", "controller", "controller_names", "controller_of_node"]

#: the module of the common controller node, which runs a law without a node class of its own
GENERIC_MODULE = "law_controller"


@dataclass(frozen=True)
class ControllerEntry:
    """One controller. ``name``: the value of the launch argument and of the hosts' ``controller``
    parameter; ``node``: its node name, which is also its executable and its parameter file
    ``config/<node>.yaml`` (its deviations from the defaults, ``{}`` for none); ``law``: the control law it runs
    (``module:Class``: its ``Config`` declares the law's parameters); ``summary``: one line for launch
    descriptions and docs; ``module``, ``node_class``: ``youbot_dynamics.nodes.<module>`` with ``main()``
    and the node class, for a controller with topics of its own (goals, trajectories); empty: the
    common :class:`~youbot_dynamics.nodes.controller_node.ControllerNode` runs the law."""

    name: str
    node: str
    law: str
    summary: str
    module: str = ""
    node_class: str = ""

    @property
    def params_file(self) -> str:
        """Its parameter file in the package's ``config/``."""
        return f"{self.node}.yaml"

    def node_type(self) -> type:
        """Its node class (imports ``youbot_dynamics.nodes.<module>``, which needs rclpy)."""
        if not self.node_class:
            return importlib.import_module(f"youbot_dynamics.nodes.{GENERIC_MODULE}").law_node_class(self)
        return getattr(importlib.import_module(f"youbot_dynamics.nodes.{self.module}"), self.node_class)

    @property
    def entry_point(self) -> str:
        """Its ``console_scripts`` line."""
        if not self.node_class:
            return f"{self.node} = youbot_dynamics.nodes.{GENERIC_MODULE}:main_{self.name}"
        return f"{self.node} = youbot_dynamics.nodes.{self.module}:main"


CONTROLLERS: tuple[ControllerEntry, ...] = (
    ControllerEntry("pd_gravity", "pd_gravity_controller", "youbot_dynamics.control.laws:PDGravityController",
                    "PD + gravity regulation to goals", "pd_gravity_controller", "PDGravityControllerNode"),
    ControllerEntry("computed_torque", "computed_torque_controller",
                    "youbot_dynamics.control.laws:ComputedTorqueController",
                    "computed-torque tracking of trajectories and Cartesian lines", "computed_torque_controller",
                    "ComputedTorqueControllerNode"),
    ControllerEntry("float", "float_controller", "youbot_dynamics.control.laws:FloatController",
                    "gravity and friction compensation: hand-guiding"),
)


def controller_names() -> list[str]:
    """The names, in the table's order."""
    return [entry.name for entry in CONTROLLERS]


def controller(name: str) -> ControllerEntry:
    """The entry called ``name``; ``ValueError`` naming the known ones otherwise."""
    for entry in CONTROLLERS:
        if entry.name == name:
            return entry
    raise ValueError(f"unknown controller '{name}'; known: {controller_names()}")


def controller_of_node(node: str) -> ControllerEntry:
    """The entry whose node is called ``node``; ``ValueError`` naming the known ones otherwise."""
    for entry in CONTROLLERS:
        if entry.node == node:
            return entry
    raise ValueError(f"no controller runs as node '{node}'; known: {[entry.node for entry in CONTROLLERS]}")
