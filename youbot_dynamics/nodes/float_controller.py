"""ROS 2 node: hand-guiding ("float") of the youBot arm: gravity and friction compensation with
light damping (issue 17 item 3).

``tau = G(q) + t_f(q, q') - D q'`` on the model of ``model_file``, plus a virtual stiction that keeps
a joint at rest where it was left (:class:`youbot_dynamics.control.FloatController`), inside the
safety guard of :mod:`.controller_node` (joint states, torque topic, ``~/enable``, ``~/state``,
``~/status``, ``~/external_torque``, ``~/payload``, diagnostics, faults, the joint-limit guard: see
there). Enabled by service like the other controllers; a person can then move the arm by hand, and
it stays where it is left. No reference: ``~/state``'s ``q_desired`` is the rest anchor. Give the
model of the arm as it is (an identified one, with ``~/payload`` for what it holds): an error in
``G`` beyond the virtual stiction makes the arm drift.

Parameters: the controllers' common ones, but ``kp`` (unset here: no position gain; see
``rest_stiffness``) and ``damping`` (no designed gains); ``kd`` is ``D``; and

* ``rest_torque`` [N m] per joint: the virtual stiction's limit (unset: half the model's Coulomb
  level, at least 0.05 N m);
* ``rest_velocity`` [rad/s]: below it a joint is held at its anchor.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..control import FloatController
from ..control.laws import FLOAT_DAMPING, FLOAT_REST_VELOCITY
from .controller_node import ControllerNode, run
from .controller_params import DOUBLE, DOUBLE_ARRAY, UNSET_ARRAY, descriptor

__all__ = ["FloatControllerNode", "main"]

NODE_NAME = "float_controller"


class FloatControllerNode(ControllerNode):
    """Hand-guiding; see the module docstring."""

    LAW_NAME = "float (hand-guiding)"
    #: common parameters this law has no use for (no reference to track, no designed PD gains)
    WITHOUT_COMMON = ("kp", "damping")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)

    def _declare_parameters(self) -> None:
        self.declare_parameter('kd', UNSET_ARRAY, descriptor(
            f"Damping D [N m s/rad], one per joint or one for all; unset = {FLOAT_DAMPING:g} / s x each joint's "
            "reference inertia (a pushed joint coasts to rest in about 0.2 s).", DOUBLE_ARRAY))
        self.declare_parameter('rest_torque', UNSET_ARRAY, descriptor(
            "Virtual stiction [N m] that holds a joint at rest where it was left, one per joint or one for all; "
            "unset = half the model's Coulomb level (at least 0.05 N m); 0 = none.", DOUBLE_ARRAY))
        self.declare_parameter('rest_velocity', FLOAT_REST_VELOCITY, descriptor(
            "Speed [rad/s] below which a joint is held at its rest anchor.", DOUBLE, range_=(1e-4, 1.0)))

    def _create_law(self) -> FloatController:
        return FloatController(self.model, self.arm, damping=self._optional_array('kd'),
                               rest_torque=self._optional_array('rest_torque'),
                               rest_velocity=self._param('rest_velocity'),
                               friction_compensation=self._param('friction_compensation'),
                               friction_eps=self._param('friction_eps'))

    def _hold(self, q: np.ndarray) -> None:
        self.law.hold(q)

    def desired_position(self, now: float) -> np.ndarray | None:
        return None if self.law.anchor is None else self.law.anchor.copy()


def main(args: list[str] | None = None) -> int:
    """Entry point ``float_controller``; 1 if start-up fails."""
    return run(FloatControllerNode, NODE_NAME, args)


if __name__ == '__main__':
    sys.exit(main())
