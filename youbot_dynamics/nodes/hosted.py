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
``config/<controller>_controller.yaml``), every section matching its node (its name, ``/**``, ...),
read here as rcl reads the stand-alone node's ``--params-file`` (:func:`file_parameters`: the same on
Jazzy and Kilted, whose rclpy's ``parameter_dict_from_yaml_file`` differ); the process's own
``--ros-args`` (the host's ``-p`` overrides) do not reach it. Its ``rate`` must be the loop's
rate; its ``realtime_priority`` is the host's (one process).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import yaml
from rclpy.context import Context
from rclpy.parameter import Parameter

from ..contract.controller_registry import CONTROLLERS as REGISTRY, ControllerEntry
from ..files.paths import config_path
from ..timing import spread
from .controller_host import ControllerHost
from .controller_node import ControllerNode

__all__ = ["CONTROLLERS", "controller_parameters", "create_hosted_controller", "file_parameters", "latency_report"]

#: ``controller`` parameter value -> its entry in the registry (:mod:`youbot_dynamics.contract.controller_registry`)
CONTROLLERS: dict[str, ControllerEntry] = {entry.name: entry for entry in REGISTRY}
_PARAMS_KEY = "ros__parameters"


def controller_parameters(node_name: str, params_file: str, namespace: str = "/") -> list[Parameter]:
    """The parameters of node ``node_name`` (in ``namespace``) in ``params_file`` (``''`` = the
    package's ``config/<node_name>.yaml``): those of every section matching the node, as the
    stand-alone node reads its ``--params-file`` (:func:`file_parameters`); ``ValueError`` if the
    file cannot be read or no section matches the node."""
    path = params_file or str(config_path(f"{node_name}.yaml"))
    full_name = f"/{namespace.strip('/')}/{node_name}".replace("//", "/")
    try:
        doc = yaml.load(Path(path).read_text(), Loader=_ParameterLoader)  # a SafeLoader
        values = file_parameters(doc, full_name)
        if values is None:
            keys = list(doc) if isinstance(doc, dict) else []
            raise ValueError(f"no section for {full_name} (its sections: {keys})")
        return [Parameter(name, value=value) for name, value in values.items()]
    except (OSError, yaml.YAMLError, TypeError, ValueError) as exc:  # TypeError: a value rclpy refuses
        raise ValueError(f"controller_params_file {path}: {exc}") from None


def file_parameters(doc: Any, full_name: str) -> dict[str, Any] | None:
    """The parameters a ROS 2 parameter file (``doc``: the file as YAML loaded) sets for the node of
    fully qualified name ``full_name`` (``/ns/name``), None if no section of it matches the node.

    As an rclpy node reads its ``--params-file`` (rcl parses the file, the node's C++ matches the
    node names: the same code in Jazzy and Kilted, unlike
    ``rclpy.parameter.parameter_dict_from_yaml_file``, which matches differently in the two and not
    as the node does): a section is the mapping under a ``ros__parameters`` key, its node name the
    keys above it joined with ``/`` (``ns: {name: ...}`` is ``ns/name``), a leading ``/`` added
    (``name`` is ``/name``);
    ``/*`` in it stands for one name token, ``/**`` for any number (``/**`` matches every node,
    ``/**/name`` the node ``name`` in any namespace, ``*`` any node in ``/``). Nested parameter
    mappings are dotted names (``a: {b: 1}`` is ``a.b``). The sections of one node name merge (the
    later value wins); then the matching node names apply in the order of their first appearance,
    a later one's value overriding an earlier one's: a ``/**`` section at the top and the node's own
    below it give the node's own values where both set one, a ``/**`` below the node's own wins.
    ``ValueError`` for what the node refuses: a value outside a section, a ``ros__parameters`` or a
    parameter without a value, an empty list (no type)."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise ValueError("not a mapping of node names")
    sections: dict[str, dict[str, Any]] = {}
    for name, params in _sections(doc, ""):
        sections.setdefault(name, {}).update(_flat(params, ""))
    matching = [values for name, values in sections.items() if _matches(name, full_name)]
    if not matching:
        return None
    merged: dict[str, Any] = {}
    for values in matching:
        merged.update(values)
    return merged


def _sections(mapping: dict, prefix: str) -> Iterator[tuple[str, Any]]:
    """(node name, ``ros__parameters`` mapping) of the sections below ``mapping`` (at node name ``prefix``)."""
    for key, value in mapping.items():
        if key == _PARAMS_KEY:
            if not prefix:
                raise ValueError(f"{_PARAMS_KEY} without a node name")
            yield prefix, value
        elif isinstance(value, dict):
            yield from _sections(value, f"{prefix}/{key}" if prefix else str(key))
        else:
            raise ValueError(f"{prefix}/{key}: a value before {_PARAMS_KEY}" if prefix
                             else f"{key}: a value before {_PARAMS_KEY}")


def _flat(params: Any, prefix: str) -> dict[str, Any]:
    """The parameters of a ``ros__parameters`` mapping (``{}``: none), nested names dotted."""
    if not isinstance(params, dict):
        raise ValueError(f"{_PARAMS_KEY} of {prefix or 'a node'} is not a mapping")
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif value is None or value == []:
            raise ValueError(f"parameter {name} has no value")
        else:
            out[name] = value
    return out


def _matches(node_key: str, full_name: str) -> bool:
    """Whether the node name ``node_key`` of a parameter file matches the node ``full_name`` as an
    rclpy node matches it: a leading ``/`` added, the rest whole, its ``/*`` one name token
    (letters, digits, ``_``), its ``/**`` any number of them."""
    key = node_key if node_key.startswith("/") else f"/{node_key}"
    regex = "".join(r"(?:/\w+)*" if part == "/**" else r"/\w+" if part == "/*" else re.escape(part)
                    for part in re.split(r"(/\*\*|/\*)", key))
    return re.fullmatch(regex, full_name, flags=re.ASCII) is not None


class _ParameterLoader(yaml.SafeLoader):
    """PyYAML's safe loader typing scalars as rcl does where the two differ in parameter files: a
    float without a decimal point (``1e-06``) is a float, a date a string, ``~`` and ``null`` the
    strings (an empty value None: refused)."""


_ParameterLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_ParameterLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))
_ParameterLoader.add_constructor("tag:yaml.org,2002:null", lambda loader, node: node.value or None)


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
