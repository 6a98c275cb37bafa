"""A controller node in the arm's own loop ("control inside the bus cycle", issue 18).

Over DDS the control loop crosses the middleware twice per cycle (arm -> ``/joint_states`` ->
controller -> ``/arm_effort_controller/commands`` -> arm); with the virtual drives the controllers
missed 0.13-1.5 % of their cycles (p99 latency up to 1.95 ms) and the driver 0.05-1.05 %.
ros2_control avoids both hops by running its controllers in the hardware's update loop. So can
``youbot_driver`` and ``sim_node``: with their parameter ``controller`` (``pd_gravity``,
``computed_torque`` or ``float``; ``''`` = none) they create that controller node in their own
process (:func:`create_hosted_controller`: the same class, node name, services, topics and
parameter file as the stand-alone node) and run its cycle in their loop thread on the state just
read; its torque goes into the same cycle's command (:class:`~.youbot_driver.DriverHost`,
:class:`~.sim_node.SimHost`). Its
parameters come from ``controller_params_file`` (``''`` = the package's
``config/<controller>_controller.yaml``), the section of its node name and ``/**``; the process's
own ``--ros-args`` (the host's ``-p`` overrides) do not reach it. Its ``rate`` must be the loop's
rate; its ``realtime_priority`` is the host's (one process).
"""
from __future__ import annotations

from pathlib import Path

import yaml
from rclpy.context import Context
from rclpy.parameter import Parameter, parameter_dict_from_yaml_file

from ..contract.controller_registry import CONTROLLERS as REGISTRY, ControllerEntry
from ..files.paths import config_path
from ..timing import spread
from .controller_host import ControllerHost
from .controller_node import ControllerNode

__all__ = ["CONTROLLERS", "controller_parameters", "create_hosted_controller", "latency_report"]

#: ``controller`` parameter value -> its entry in the registry (:mod:`youbot_dynamics.contract.controller_registry`)
CONTROLLERS: dict[str, ControllerEntry] = {entry.name: entry for entry in REGISTRY}


def controller_parameters(node_name: str, params_file: str, namespace: str = "/") -> list[Parameter]:
    """The parameters of node ``node_name`` (in ``namespace``) in ``params_file`` (its section and
    ``/**``; ``''`` = the package's ``config/<node_name>.yaml``); ``ValueError`` if it has none."""
    path = params_file or str(config_path(f"{node_name}.yaml"))
    full_name = f"{namespace.rstrip('/')}/{node_name}"
    try:
        messages = parameter_dict_from_yaml_file(path, use_wildcard=True, target_nodes=[full_name])
    except (OSError, RuntimeError, TypeError) as exc:  # TypeError: a section with no mapping in it
        if _sets_nothing(path, full_name):  # the package's files state deviations only: often none
            return []
        raise ValueError(f"controller_params_file {path}: {exc}") from None
    return [Parameter.from_parameter_msg(message) for message in messages.values()]


def _sets_nothing(path: str, full_name: str) -> bool:
    """``path`` is a parameter file whose sections for ``full_name`` (its own and ``/**``) are there
    and set no parameter (``ros__parameters: {}``, which rclpy's reader refuses and rcl reads)."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False
    keys = (full_name, full_name.lstrip("/"), "/**")
    sections = [doc[key] for key in keys if isinstance(doc, dict) and key in doc]
    return bool(sections) and all(isinstance(section, dict) and section.get("ros__parameters") == {}
                                  for section in sections)


def create_hosted_controller(kind: str, params_file: str, host: ControllerHost, context: Context,
                             namespace: str = "/") -> ControllerNode:
    """The controller node ``kind`` (a key of :data:`CONTROLLERS`) running in ``host``'s loop."""
    if kind not in CONTROLLERS:
        raise ValueError(f"controller must be '' or one of {sorted(CONTROLLERS)}, got '{kind}'")
    entry = CONTROLLERS[kind]
    return entry.node_type()(host=host, context=context, namespace=namespace, use_global_arguments=False,
                             parameter_overrides=controller_parameters(entry.node, params_file, namespace))


def latency_report(latencies: list[float]) -> dict[str, float]:
    """``controller_latency_{median,p99,max}_ms`` and ``controller_cycles`` of in-loop latencies [s]."""
    if not latencies:
        return {"controller_cycles": 0.0}
    return {"controller_cycles": float(len(latencies)), **spread(latencies, "controller_latency")}
