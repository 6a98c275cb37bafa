"""ROS 2 node: hand-guiding ("float") of the youBot arm: gravity and friction compensation with
light damping (issue 17 item 3).

Executable ``float_controller``: :class:`youbot_dynamics.control.FloatController` inside the common
:class:`~.controller_node.ControllerNode`.

Interface, behaviour and figures: doc/control.md; parameters:
youbot_dynamics/nodes/parameters/float_controller.yaml (table in doc/parameters.md).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..control import FloatController
from .controller_node import ControllerNode, run

__all__ = ["FloatControllerNode", "main"]

NODE_NAME = "float_controller"


class FloatControllerNode(ControllerNode):
    """Hand-guiding; see doc/control.md."""

    LAW_NAME = "float (hand-guiding)"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)

    def _create_law(self) -> FloatController:
        return FloatController(self.model, self.arm, damping=self._optional_array('kd'),
                               rest_torque=self._optional_array('rest_torque'),
                               rest_velocity=self._param('rest_velocity'),
                               friction_compensation=self._param('friction_compensation'),
                               friction_eps=self._param('friction_eps'))

    def desired_position(self, now: float) -> np.ndarray | None:
        return None if self.law.anchor is None else self.law.anchor.copy()


def main(args: list[str] | None = None) -> int:
    """Entry point ``float_controller``; 1 if start-up fails."""
    return run(FloatControllerNode, NODE_NAME, args)


if __name__ == '__main__':
    sys.exit(main())
