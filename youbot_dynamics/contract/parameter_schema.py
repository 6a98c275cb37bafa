"""The nodes' parameter schemas: one YAML file per node in ``youbot_dynamics/nodes/parameters/``, the
one declaration of each parameter (name, type, default, description, bounds, choices). The nodes
declare from it (:func:`youbot_dynamics.nodes.common.declare_parameters`), the static tests read it
to check the parameter files in ``config/``, and ``doc/parameters.md`` is generated from it.
Pure Python: no rclpy.

The layout follows ros2_controllers' generate_parameter_library::

    <node>:                            # the node's name: its parameters in declaration order
      <parameter>:
        type: double                   # bool, int, double, string, bool_array, int_array,
                                       # double_array, string_array
        default_value: 0.5             # absent: declared unset (the node derives a value)
        description: "..."
        read_only: false               # absent: true (read once at start-up)
        validation:
          bounds<>: [0.0, 1.0]         # closed range of an int/double (enforced by rclpy)
          element_bounds<>: [0.0, 9.0] # closed range of each element of an int/double array
          per_joint<>: [[0, 1]]        # an array of one value per joint (the arm description's joint
                                       # count), or of one of these other lengths (0: unset, 1: one for all)
          one_of<>: [[a, b]]           # the value is one of these (checked at declaration)
          subset_of<>: [[a, b]]        # every element of an array is one of these
      <parameter>:
        like: <schema>.<parameter>     # that schema's entry; keys given here replace its keys
    _extends:                          # optional: another schema's parameters, declared after the own
      schema: controller_common        # ones (a name declared above keeps its own entry)
      except: [kp, kd]

Where a default or a choice list belongs to the core (a config dataclass, a constant), the schema
names it instead of repeating it: ``default_value: {from: youbot_dynamics.control.safety:SafetyConfig.ramp_time}``
(``module:attribute.path``; a tuple becomes a list). Differences to generate_parameter_library:
``read_only`` defaults to true, ``like``, ``_extends``, ``from`` and ``per_joint<>``. Every array of one
value per joint declares ``per_joint<>``: a wrong length is refused at start-up in one line naming the
parameter and the lengths expected (not by an error deep in the node).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import math
from importlib import resources
from typing import Any

import yaml

__all__ = ["CONTROLLER_COMMON", "EXTENDS", "ParameterSpec", "SchemaError", "TYPES", "joint_count", "load_schema",
           "dataclass_of", "load_schema_file", "record", "record_type", "resolve", "schema_names"]

SCHEMA_PACKAGE = "youbot_dynamics.nodes"
SCHEMA_DIRECTORY = "parameters"
EXTENDS = "_extends"
#: schema type -> Python type of a value (of each element for arrays)
TYPES: dict[str, type] = {"bool": bool, "int": int, "double": float, "string": str, "bool_array": bool,
                          "int_array": int, "double_array": float, "string_array": str}
_ENTRY_KEYS = {"type", "default_value", "description", "read_only", "validation", "like"}
_VALIDATIONS = {"bounds<>", "element_bounds<>", "one_of<>", "subset_of<>", "per_joint<>"}


class SchemaError(ValueError):
    """A schema file that cannot be used (names the file and the entry)."""


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One parameter of a node: ``default`` None = declared unset."""

    name: str
    type: str
    description: str
    default: Any = None
    read_only: bool = True
    bounds: tuple[float, float] | None = None
    element_bounds: tuple[float, float] | None = None
    one_of: tuple | None = None
    subset_of: tuple | None = None
    per_joint: tuple[int, ...] | None = None  # an array of one value per joint, or of one of these lengths

    @property
    def lengths(self) -> tuple[int, ...] | None:
        """The lengths a ``per_joint`` array may have (the joint count first), else None."""
        return None if self.per_joint is None else (joint_count(), *self.per_joint)

    @property
    def is_array(self) -> bool:
        return self.type.endswith("_array")

    def check(self, value: Any) -> None:
        """ValueError unless ``value`` (of this parameter's type) is within its bounds and choices."""
        if self.bounds is not None and not self.is_array and not self.bounds[0] <= value <= self.bounds[1]:
            raise ValueError(f"{self.name} must be within [{self.bounds[0]}, {self.bounds[1]}], got {value!r}")
        if self.lengths is not None and len(value) not in self.lengths:
            others = {0: "none (unset)", 1: "1 (one for all)"}
            alternatives = "".join(f" or {others.get(k, k)}" for k in self.lengths[1:])
            raise ValueError(f"{self.name}: expected {self.lengths[0]} values (one per joint){alternatives}, got "
                             f"{len(value)}")
        if self.element_bounds is not None:
            low, high = self.element_bounds
            outside = [v for v in value if not low <= v <= high]
            if outside:
                raise ValueError(f"{self.name}: every value must be within [{low:g}, {high:g}], got {outside[0]:g}")
        if self.one_of is not None and value not in self.one_of:
            raise ValueError(f"{self.name} must be one of {self.one_of}, got {value!r}")
        if self.subset_of is not None:
            unknown = sorted(set(value) - set(self.subset_of))
            if unknown:
                raise ValueError(f"{self.name}: unknown {unknown}; known: {list(self.subset_of)}")


@functools.lru_cache(maxsize=1)
def joint_count() -> int:
    """The joints of the package's arm description (``config/youbot_arm.yaml``): the length of a
    ``per_joint<>`` array."""
    from ..arm.description import default_arm

    return default_arm().n_joints


def resolve(reference: str) -> Any:
    """The core's value named ``module:attribute.path`` (a tuple as a list)."""
    module, _, path = reference.partition(":")
    if not module or not path:
        raise SchemaError(f"'from: {reference}' is not of the form module:attribute")
    try:
        value: Any = importlib.import_module(module)
        for attribute in path.split("."):
            value = getattr(value, attribute)
    except (ImportError, AttributeError) as exc:
        raise SchemaError(f"'from: {reference}': {exc}") from None
    return list(value) if isinstance(value, tuple) else value


def _value(raw: Any) -> Any:
    if isinstance(raw, dict):
        if set(raw) != {"from"}:
            raise SchemaError(f"a value given as a mapping must be {{from: module:attribute}}, got {raw}")
        return resolve(raw["from"])
    return raw


def _typed(value: Any, kind: str, what: str) -> Any:
    """``value`` as the parameter type ``kind`` (an int is a double), SchemaError if it is not one."""
    element = TYPES[kind]

    def one(v: Any) -> Any:
        if element is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if type(v) is not element or (element is float and not math.isfinite(v)):
            raise SchemaError(f"{what}: {v!r} is not a {kind}")
        return v

    if kind.endswith("_array"):
        if not isinstance(value, (list, tuple)):
            raise SchemaError(f"{what}: {value!r} is not a {kind}")
        return [one(v) for v in value]
    return one(value)


def _borrowed(entry: dict, what: str, depth: int = 0) -> dict:
    """``entry`` with its ``like`` resolved: the named entry (itself resolved), then ``entry``'s keys."""
    if "like" not in entry:
        return entry
    schema, _, other = str(entry["like"]).partition(".")
    base = _raw_entries(schema).get(other)
    if not isinstance(base, dict) or depth > 10:
        raise SchemaError(f"{what}: like {entry['like']}: no such parameter")
    return {**_borrowed(base, what, depth + 1), **{k: v for k, v in entry.items() if k != "like"}}


def _spec(name: str, entry: Any, where: str) -> ParameterSpec:
    what = f"{where}: {name}"
    if not isinstance(entry, dict):
        raise SchemaError(f"{what}: an entry is a mapping, got {entry!r}")
    entry = _borrowed(entry, what)
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise SchemaError(f"{what}: unknown keys {unknown}; known: {sorted(_ENTRY_KEYS)}")
    kind = entry.get("type")
    if kind not in TYPES:
        raise SchemaError(f"{what}: type must be one of {sorted(TYPES)}, got {kind!r}")
    description = entry.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SchemaError(f"{what}: no description")
    read_only = entry.get("read_only", True)
    if not isinstance(read_only, bool):
        raise SchemaError(f"{what}: read_only must be true or false")
    validation = entry.get("validation") or {}
    unknown = sorted(set(validation) - _VALIDATIONS)
    if unknown:
        raise SchemaError(f"{what}: unknown validation {unknown}; known: {sorted(_VALIDATIONS)}")
    fields: dict[str, Any] = {}
    if "bounds<>" in validation:
        bounds = [_value(b) for b in validation["bounds<>"]]
        if kind not in ("int", "double") or len(bounds) != 2:
            raise SchemaError(f"{what}: bounds<> are [low, high] of an int or double")
        low, high = (_typed(b, kind, f"{what}: bounds<>") for b in bounds)
        if not low <= high:
            raise SchemaError(f"{what}: bounds<> [{low}, {high}] are empty")
        fields["bounds"] = (low, high)
    if "element_bounds<>" in validation:
        bounds = [_value(b) for b in validation["element_bounds<>"]]
        if kind not in ("int_array", "double_array") or len(bounds) != 2:
            raise SchemaError(f"{what}: element_bounds<> are [low, high] of an int or double array")
        low, high = (_typed(b, kind[:-6], f"{what}: element_bounds<>") for b in bounds)
        if not low <= high:
            raise SchemaError(f"{what}: element_bounds<> [{low}, {high}] are empty")
        fields["element_bounds"] = (low, high)
    if "per_joint<>" in validation:
        arguments = validation["per_joint<>"]
        if not kind.endswith("_array") or not (isinstance(arguments, list) and len(arguments) == 1):
            raise SchemaError(f"{what}: per_joint<> is for arrays and takes one argument, the other lengths accepted")
        fields["per_joint"] = tuple(_typed(arguments[0], "int_array", f"{what}: per_joint<>"))
    for key, field, element_kind in (("one_of<>", "one_of", kind), ("subset_of<>", "subset_of", kind[:-6])):
        if key in validation:
            arguments = validation[key]
            if not (isinstance(arguments, list) and len(arguments) == 1):
                raise SchemaError(f"{what}: {key} takes one argument, the list of choices")
            if key == "subset_of<>" and not kind.endswith("_array"):
                raise SchemaError(f"{what}: subset_of<> is for arrays")
            choices = _value(arguments[0])
            fields[field] = tuple(_typed(choices, f"{element_kind}_array", f"{what}: {key}"))
    spec = ParameterSpec(name=name, type=kind, description=" ".join(description.split()), read_only=read_only,
                         **fields)
    if "default_value" in entry:
        default = _typed(_value(entry["default_value"]), kind, f"{what}: default_value")
        try:
            spec.check(default)
        except ValueError as exc:
            raise SchemaError(f"{where}: default_value: {exc}") from None
        spec = dataclasses.replace(spec, default=default)
    return spec


def _read(schema: str) -> str:
    """The text of the shipped schema file ``<schema>.yaml``."""
    try:
        return resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_DIRECTORY).joinpath(f"{schema}.yaml").read_text()
    except FileNotFoundError:
        raise SchemaError(f"no parameter schema '{schema}'; known: {schema_names()}") from None


@functools.lru_cache(maxsize=None)
def _document(schema: str) -> dict:
    text = _read(schema)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SchemaError(f"parameter schema {schema}.yaml: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get(schema), dict) \
            or set(document) - {schema, EXTENDS}:
        raise SchemaError(f"parameter schema {schema}.yaml: one section '{schema}' (and optionally {EXTENDS})")
    return document


def _raw_entries(schema: str) -> dict:
    return _document(schema)[schema]


@functools.lru_cache(maxsize=None)
def record_type(schema: str) -> type:
    """A frozen dataclass with one field per parameter of node ``schema``, in declaration order,
    typed from the schema (an array as a tuple, ``None`` when unset or empty): the schema generates
    it, the node reads fields of it (:func:`record`) instead of looking values up by name."""
    fields = []
    for name, spec in load_schema(schema).items():
        kind = TYPES[spec.type]
        annotation: Any = tuple[kind, ...] if spec.is_array else kind
        fields.append((name, annotation | None if spec.default is None or spec.is_array else annotation))
    title = "".join(part.title() for part in schema.split("_"))
    return dataclasses.make_dataclass(f"{title}Parameters", fields, frozen=True)


def record(schema: str, values: dict[str, Any]) -> Any:
    """The parameter ``values`` of node ``schema`` by name as its :func:`record_type`."""
    specs = load_schema(schema)
    return record_type(schema)(**{name: (tuple(value) if value is not None and len(value) else None)
                                  if specs[name].is_array else value for name, value in values.items()})


#: the schema every controller node extends (after its own parameters and its law's)
CONTROLLER_COMMON = "controller_common"


def _law_entries(schema: str) -> dict | None:
    """The parameter entries of the law of the controller node ``schema`` (its ``Config``,
    :mod:`youbot_dynamics.control.law_config`; the registry names the law), None if ``schema`` is not
    a controller node."""
    from .controller_registry import controller_of_node

    try:
        entry = controller_of_node(schema)
    except ValueError:
        return None
    return resolve(entry.law).parameter_entries()


def dataclass_of(cls: type, values: dict[str, Any]) -> Any:
    """An instance of the dataclass ``cls`` from the parameter ``values`` of its fields' names (a field
    without a parameter keeps its default): a core config built from a node's parameters."""
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values})


def _has_file(schema: str) -> bool:
    return resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_DIRECTORY).joinpath(f"{schema}.yaml").is_file()


@functools.lru_cache(maxsize=None)
def load_schema(schema: str) -> dict[str, ParameterSpec]:
    """Node ``schema``'s parameters by name, in declaration order (:class:`SchemaError` if the file is
    not a usable schema). A controller node of the registry (:mod:`.controller_registry`) declares its
    own parameters (``<node>.yaml``, only if it has topics of its own), then its law's (the law's
    ``Config``), then :data:`CONTROLLER_COMMON`'s."""
    law = _law_entries(schema)
    if law is not None:
        where = f"the law of {schema}"
        specs = load_schema_file(schema) if _has_file(schema) else {}
        specs.update({name: _spec(name, entry, where) for name, entry in law.items() if name not in specs})
        specs.update({name: spec for name, spec in load_schema(CONTROLLER_COMMON).items() if name not in specs})
        return specs
    return load_schema_file(schema)


def load_schema_file(schema: str) -> dict[str, ParameterSpec]:
    """The parameters declared by the schema file ``<schema>.yaml`` (and the schema it ``_extends``)."""
    document = _document(schema)
    where = f"parameter schema {schema}.yaml"
    specs = {name: _spec(name, entry, where) for name, entry in document[schema].items()}
    extends = document.get(EXTENDS)
    if extends is not None:
        if not isinstance(extends, dict) or set(extends) - {"schema", "except"} or "schema" not in extends:
            raise SchemaError(f"{where}: {EXTENDS} is {{schema: <name>, except: [<parameter>, ...]}}")
        base = load_schema(extends["schema"])
        excluded = set(extends.get("except") or ())
        if excluded - set(base):
            raise SchemaError(f"{where}: {EXTENDS} excepts parameters {extends['schema']} does not have: "
                              f"{sorted(excluded - set(base))}")
        specs.update({name: spec for name, spec in base.items() if name not in excluded and name not in specs})
    return specs


def schema_names() -> list[str]:
    """The shipped schemas (the files and the registry's controller nodes), sorted."""
    from .controller_registry import CONTROLLERS

    folder = resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_DIRECTORY)
    files = {entry.name[:-5] for entry in folder.iterdir() if entry.name.endswith(".yaml")}
    return sorted(files | {entry.node for entry in CONTROLLERS})
