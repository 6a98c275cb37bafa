"""Pieces the launch files share, so that none copies another: the controllers of the registry
(:mod:`~youbot_dynamics.contract.controller_registry`: the arguments ``controller``, ``controller_params_file`` and
``controller_in_bus`` of a host's launch file (``sim.launch.py``, ``youbot_arm.launch.py``), where
the chosen controller runs (in the host's loop or as its own node through ``control.launch.py``),
the controller node itself), the kinematics node (``kinematics.launch.py``, included) and the
end of a launch with its arm (:class:`EndWithTheArm`).

Imports ``launch`` and ``launch_ros``: for launch files only (the rest of the package does not need them).
"""
from __future__ import annotations

from typing import Any

from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, Shutdown
from launch.launch_context import LaunchContext
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from ..contract.controller_registry import controller, controller_names

__all__ = ["ArmGone", "EndWithTheArm", "controller_arguments", "controller_node", "include", "params_file_argument",
           "place_controller"]

PACKAGE = "youbot_dynamics"


def controller_arguments(loop: str) -> list[DeclareLaunchArgument]:
    """A host's controller arguments; ``loop`` says where ``controller_in_bus`` runs it (e.g. "the
    driver's process, in its bus cycle")."""
    names = controller_names()
    return [
        DeclareLaunchArgument(
            'controller', default_value='none', choices=['none', *names],
            description=f"Also start a joint-torque controller: none, {', '.join(names)}"),
        DeclareLaunchArgument(
            'controller_params_file', default_value='',
            description="Parameter file of the controller; '' = the package file of the chosen controller "
                        "(config/<controller>_controller.yaml)"),
        DeclareLaunchArgument(
            'controller_in_bus', default_value='false', choices=['true', 'false'],
            description=f"Run the controller inside {loop} (no DDS between joint state and torque), instead of "
                        "as its own node"),
    ]


def place_controller(context: LaunchContext) -> tuple[dict, list]:
    """Where the chosen controller runs: ``(overrides, actions)``. In the host's loop
    (``controller_in_bus``): the host's parameters ``controller`` and ``controller_params_file`` in
    ``overrides``, no action; else its own node, ``control.launch.py`` included (scoped) in ``actions``."""
    name = LaunchConfiguration('controller').perform(context)
    params_file = LaunchConfiguration('controller_params_file').perform(context)
    if name == 'none':
        return {}, []
    if LaunchConfiguration('controller_in_bus').perform(context) == 'true':
        return {'controller': name, 'controller_params_file': params_file}, []
    return {}, [include('control.launch.py', controller=name, params_file=params_file)]


def include(launch_file: str, **arguments: Any) -> GroupAction:
    """The package's ``launch_file`` included with ``arguments``, scoped (its arguments do not leak
    into the including file's)."""
    path = PathJoinSubstitution([FindPackageShare(PACKAGE), 'launch', launch_file])
    return GroupAction(scoped=True, actions=[IncludeLaunchDescription(
        PythonLaunchDescriptionSource(path), launch_arguments=arguments.items())])


def controller_node(name: str, params_file: str, context: LaunchContext) -> Node:
    """The controller ``name`` as its own node on ``params_file`` ('' = its package file)."""
    entry = controller(name)
    path = params_file or f"{FindPackageShare(PACKAGE).perform(context)}/config/{entry.params_file}"
    return Node(package=PACKAGE, executable=entry.node, name=entry.node, parameters=[path], output='screen')


def params_file_argument(name: str, file_name: str, what: str) -> DeclareLaunchArgument:
    """The argument ``name``: a parameter file, by default the package's ``config/<file_name>``;
    ``what`` is the node it configures (for the description)."""
    return DeclareLaunchArgument(
        name, default_value=PathJoinSubstitution([FindPackageShare(PACKAGE), 'config', file_name]),
        description=f'Parameter file of {what}')


class ArmGone(RuntimeError):
    """The process a launch exists for (the arm) failed: raised by :class:`EndWithTheArm`."""


class EndWithTheArm:
    """The ``on_exit`` of the node a launch exists for (``youbot_driver``, ``sim_node``: the arm):
    the launch ends with it, and fails if it failed (issue 35: ``youbot_arm.launch.py`` returned 0
    after "no EtherCAT slaves found"). ``launch`` returns non-zero only when an action or an event
    handler raises (``LaunchService.run_async``); a ``Shutdown`` ends it with 0 whatever ended. So
    an exit status other than 0 outside a shutdown raises :class:`ArmGone`: launch logs it in one
    line ("Caught exception in launch (see debug for traceback): youbot_driver exited with code 1:
    ..."), shuts the other nodes down (SIGINT) and returns 1; exit 0, or any exit once the launch is
    shutting down (Ctrl-C), is a ``Shutdown`` (returns 0)."""

    def __init__(self, name: str, what: str) -> None:
        self.name, self.what = name, what

    def __call__(self, event: Any, context: LaunchContext) -> list[Shutdown]:
        """Handle ``event`` (``launch.events.process.ProcessExited``)."""
        if event.returncode != 0 and not context.is_shutdown:
            raise ArmGone(f"{self.name} exited with code {event.returncode}: {self.what}, the launch ends and fails")
        return [Shutdown(reason=f"{self.name} ended: {self.what}")]
