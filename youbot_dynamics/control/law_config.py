"""Typed configuration of the control laws (issue 32 item 2): each law declares a frozen dataclass of
its parameters (its ``Config``), every field made by :func:`parameter` with its default, its unit (in
the description) and its bounds. That dataclass is the one declaration of the law's parameters: the
controller node's parameter schema takes its entries from it
(:func:`youbot_dynamics.contract.parameter_schema.load_schema` via :func:`schema_entries`), the
parameter page (doc/parameters.md) lists them, and the node builds the law from an instance
(:func:`from_values`): code reads fields, not parameter names. generate_parameter_library's typed
``Params``, with the Python class as the source instead of a YAML file.

A field's metadata is a schema entry in the vocabulary of :mod:`youbot_dynamics.contract.parameter_schema`
(``type``, ``description``, ``validation``); its default is the dataclass default (``None``: declared
unset, the law derives a value; an array default is a tuple). Pure Python: no rclpy.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, TypeVar

__all__ = ["parameter", "schema_entries", "from_values"]

ConfigT = TypeVar("ConfigT")


def parameter(default: Any, description: str, kind: str, *, bounds: tuple[float, float] | None = None,
              element_bounds: tuple[float, float] | None = None, per_joint: tuple[int, ...] | None = None,
              one_of: tuple | None = None) -> Any:
    """A config field: ``default`` (None: unset), ``description`` (with the unit), the schema type
    ``kind`` (``double``, ``double_array``, ``bool``, ...) and the validation of the parameter schema
    (``bounds<>``, ``element_bounds<>``, ``per_joint<>``: the other lengths an array of one value per
    joint may have, ``one_of<>``)."""
    validation: dict[str, Any] = {}
    if bounds is not None:
        validation["bounds<>"] = list(bounds)
    if element_bounds is not None:
        validation["element_bounds<>"] = list(element_bounds)
    if per_joint is not None:
        validation["per_joint<>"] = [list(per_joint)]
    if one_of is not None:
        validation["one_of<>"] = [list(one_of)]
    entry = {"type": kind, "description": description, **({"validation": validation} if validation else {})}
    return dataclasses.field(default=default, metadata={"parameter": entry})


def _fields(config: type) -> list[dataclasses.Field]:
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise TypeError(f"a law's Config is a dataclass, got {config!r}")
    missing = [f.name for f in dataclasses.fields(config) if "parameter" not in f.metadata]
    if missing:
        raise TypeError(f"{config.__name__}: fields {missing} are not made by law_config.parameter()")
    return list(dataclasses.fields(config))


def schema_entries(config: type) -> dict[str, dict[str, Any]]:
    """The parameter-schema entries of ``config``'s fields, in their order (``default_value`` from
    the field's default unless it is None; a tuple as a list)."""
    entries = {}
    for field in _fields(config):
        entry = dict(field.metadata["parameter"])
        if field.default is not None:
            entry["default_value"] = list(field.default) if isinstance(field.default, tuple) else field.default
        entries[field.name] = entry
    return entries


def from_values(config: type[ConfigT], values: Mapping[str, Any]) -> ConfigT:
    """An instance of ``config`` from the node's parameter ``values`` by name: an unset array (None or
    empty) is None, an array a tuple; ``KeyError`` naming a field ``values`` lack."""
    arguments = {}
    for field in _fields(config):
        value = values[field.name]
        if field.metadata["parameter"]["type"].endswith("_array"):
            value = tuple(value) if value is not None and len(value) else None
        arguments[field.name] = value
    return config(**arguments)
