"""The fields of the action goals and service requests the nodes serve, in one table: each with the
node parameter it overrides, whose schema entry (:mod:`.parameter_schema`) bounds it, or with none
and why. A goal field is checked as its parameter is (:meth:`RequestField.check`, the same
:meth:`~.parameter_schema.ParameterSpec.check`): the bound has one home, the schema.

Plain data without ROS: an interface is named as ROS names it (``package/action/Name``), and the
nodes pass the request (:func:`check_request`). The tests walk every goal and request the nodes serve
against this table, and send every bounded field out of its bounds.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .parameter_schema import ParameterSpec, load_schema

__all__ = ["IDENTIFY", "REQUEST_FIELDS", "RequestField", "check_request", "fields_of"]

IDENTIFY = "youbot_dynamics_interfaces/action/Identify"
FOLLOW_JOINT_TRAJECTORY = "control_msgs/action/FollowJointTrajectory"
_FJT_OWN = "FollowJointTrajectory's own semantics (control.tolerances), no parameter"


@dataclass(frozen=True)
class RequestField:
    """A field of a goal or request: ``interface`` (``package/action/Name`` or ``package/srv/Name``),
    ``field``; the parameter ``parameter`` of the node schema ``schema`` it overrides, its value ``unset``
    meaning "the node's parameter"; without a parameter (``parameter`` empty) ``note`` says why."""

    interface: str
    field: str
    schema: str = ""
    parameter: str = ""
    unset: Any = None
    note: str = ""

    @property
    def spec(self) -> ParameterSpec | None:
        """The schema entry of its parameter (named as the field), None without one."""
        if not self.parameter:
            return None
        return replace(load_schema(self.schema)[self.parameter], name=self.field)

    def check(self, value: Any) -> None:
        """ValueError unless ``value`` is ``unset`` or within its parameter's bounds and choices."""
        spec = self.spec
        if spec is None or value == self.unset:
            return
        try:
            spec.check(value)
        except ValueError as exc:
            raise ValueError(f"{exc} (the bounds of the parameter {self.parameter})") from None


REQUEST_FIELDS: tuple[RequestField, ...] = (
    RequestField(IDENTIFY, "excitation_file", "identification_node", "excitation_file", ""),
    RequestField(IDENTIFY, "periods", "identification_node", "periods", 0),
    RequestField(FOLLOW_JOINT_TRAJECTORY, "trajectory",
                 note="planned as ~/trajectory is: the arm's limits (arm description), no parameter"),
    RequestField(FOLLOW_JOINT_TRAJECTORY, "multi_dof_trajectory", note="refused unless empty: no multi-DOF joints"),
    *(RequestField(FOLLOW_JOINT_TRAJECTORY, name, note=_FJT_OWN)
      for name in ("path_tolerance", "component_path_tolerance", "goal_tolerance", "component_goal_tolerance",
                   "goal_time_tolerance")),
    RequestField("std_srvs/srv/SetBool", "data", note="~/enable of a controller: a switch, no parameter"),
    RequestField("youbot_dynamics_interfaces/srv/SolveIK", "pose", note="does not move the arm"),
    RequestField("youbot_dynamics_interfaces/srv/SolveIK", "all_branches", note="does not move the arm"),
    RequestField("youbot_dynamics_interfaces/srv/SolveIK", "seed", note="does not move the arm"),
    RequestField("youbot_dynamics_interfaces/srv/ComputeFK", "positions", note="does not move the arm"),
)


def fields_of(interface: str) -> tuple[RequestField, ...]:
    """The table's fields of ``interface``."""
    return tuple(f for f in REQUEST_FIELDS if f.interface == interface)


def check_request(interface: str, request: Any) -> None:
    """ValueError naming the first field of ``request`` (a goal or request of ``interface``) outside
    the bounds or choices of the parameter it overrides."""
    for field in fields_of(interface):
        field.check(getattr(request, field.field))
