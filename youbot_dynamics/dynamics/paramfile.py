"""The YAML file of a dynamic model (nominal or identified), read by ``predict`` and the controllers.

Format (``format_version: 1``)::

    youbot_dynamics_model:
      format_version: 1
      description: free text (where the values come from)
      chain:                      # the geometry the parameters belong to (DH, SI units)
        a: [...]; alpha: [...]; d: [...]; theta_offset: [...]; direction: [...]; gravity: [gx, gy, gz]
      structure: full             # inertial | rotor | full
      base_parameters:            # in the order of beta
        - {name: Ia1, expression: "Ia1 + Izz1 - ...", value: 0.123}
      friction:                   # optional (absent: the seed's fv q' + fc sign(q') + f0, :mod:`.friction`)
        eps: [...]                # Coulomb shape tanh(q'/eps) per joint [rad/s]; 0: sign
        terms: [load]             # extra terms among asymmetric, stribeck, load
        stribeck_velocity: [...]  # [rad/s] per joint (used by stribeck)
        parameters:               # the extra terms' values, joint-major (fa1, fs1, fl1, fa2, ...)
          - {name: fl1, value: 0.2}
      standard_parameters:        # optional: the 14 n standard vector the base values came from
        names: [m1, mx1, ...]
        values: [...]
      identification:             # optional: how an identified model was obtained (free mapping:
        method: wls               # method, condition number, noise, validation metrics, data files)

Identified models may also give each base parameter its ``relative_std_percent`` (100 sigma/|value|).
That key and ``identification`` are documentation: readers ignore them, so version 1 files with or
without them load the same way.

On reading, the base parameters are recomputed from ``chain`` and ``structure`` and their names
must match the file's (same regrouping), so a file can never be applied to the wrong model. The
loaded model keeps the file's path (``source``) and its ``standard_parameters`` (``standard``, names
and count checked) for :mod:`.consistency`, which ``predict`` and the controllers run on it (the
standard parameters must give the base values and be physical). :func:`load_model` itself refuses a
model outside the plausibility bounds of :mod:`.plausibility` (a model in the wrong units), unless
told to allow it: every reader of model files, each controller and in-loop host among them, gets
that check.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import yaml

from ..arm.description import ArmDescription, default_arm
from ..files.fileio import atomic_write_text, load_yaml, yaml_number
from .base_parameters import compute_base_parameters
from .chain import DHChain
from .errors import ModelFileError
from .friction import FrictionError, FrictionModel
from .model import DynamicModel
from .parameters import ModelStructure, parameter_names
from .plausibility import check_plausible

__all__ = ["ModelFileError", "model_to_dict", "save_model", "load_model", "identification_block"]

FORMAT_VERSION = 1
ROOT = "youbot_dynamics_model"


def model_to_dict(model: DynamicModel, description: str = "", standard: Any = None, relative_std: Any = None,
                  identification: Mapping[str, Any] | None = None) -> dict:
    """The YAML document of ``model`` (``standard``: the 14 n vector it came from, default
    ``model.standard``; ``relative_std``: percent per base parameter; ``identification``: plain data
    about the estimate)."""
    c = model.chain
    standard = model.standard if standard is None else standard
    doc: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "description": description,
        "chain": {
            "a": c.a.tolist(), "alpha": c.alpha.tolist(), "d": c.d.tolist(),
            "theta_offset": c.theta_offset.tolist(), "direction": [int(v) for v in c.direction],
            "gravity": c.gravity.tolist(),
        },
        "structure": model.base.structure.value,
        "base_parameters": [
            {"name": n, "expression": e, "value": float(v)}
            for n, e, v in zip(model.base.names, model.base.expressions, model.beta)
        ],
    }
    if not model.friction_model.is_seed:
        doc["friction"] = {**model.friction_model.to_dict(), "parameters": [
            {"name": n, "value": float(v)}
            for n, v in zip(model.friction_model.extra_names(), model.friction_parameters)]}
    if relative_std is not None:  # per entry of model.parameters: base parameters, then friction terms
        rel = np.asarray(relative_std, dtype=float)
        count = model.parameters.size
        if rel.shape != (count,):
            raise ValueError(f"relative_std: expected {count} values, got shape {rel.shape}")
        entries = doc["base_parameters"] + doc.get("friction", {}).get("parameters", [])
        for entry, value in zip(entries, rel):
            entry["relative_std_percent"] = float(value) if math.isfinite(value) else None
    if standard is not None:
        doc["standard_parameters"] = {"names": parameter_names(c.n_joints),
                                      "values": [float(v) for v in np.asarray(standard, dtype=float)]}
    if identification is not None:
        doc["identification"] = dict(identification)
    return {ROOT: doc}


def save_model(path: str | Path, model: DynamicModel, description: str = "", standard: Any = None,
               relative_std: Any = None, identification: Mapping[str, Any] | None = None) -> None:
    """Write ``model`` as YAML (full float precision, atomically: :func:`~youbot_dynamics.files.fileio.atomic_writer`);
    optional keys as in :func:`model_to_dict`."""
    text = yaml.safe_dump(model_to_dict(model, description, standard, relative_std, identification), sort_keys=False,
                          width=120, default_flow_style=None)
    atomic_write_text(path, text)


def _numbers(node: dict, key: str, where: str, n: int | None = None) -> list[float]:
    if not isinstance(node, dict) or key not in node:
        raise ModelFileError(f"{where}: missing key '{key}'")
    raw = node[key]
    if not isinstance(raw, list) or (n is not None and len(raw) != n):
        raise ModelFileError(f"{where}.{key}: expected a list of {n if n is not None else 'numbers'} values")
    values = []
    for i, v in enumerate(raw):
        try:
            values.append(yaml_number(v))
        except ValueError as exc:
            raise ModelFileError(f"{where}.{key}[{i}]: {exc}") from None
    return values


def load_model(path: str | Path, arm: ArmDescription | None = None, *, allow_implausible: bool = False) -> DynamicModel:
    """Read and check a model file; returns the :class:`DynamicModel` it describes. A model outside
    the plausibility bounds of ``arm`` (default: the package's arm description) is refused
    (:class:`~.plausibility.ModelPlausibilityError`) unless ``allow_implausible``."""
    model = _read_model(Path(path))
    if not allow_implausible:
        check_plausible(model, default_arm() if arm is None else arm)
    return model


def _read_model(path: Path) -> DynamicModel:
    """The model of the file ``path`` (format and names checked, :class:`ModelFileError`)."""
    doc = load_yaml(path, ModelFileError, "model file")
    if not isinstance(doc, dict) or ROOT not in doc or not isinstance(doc[ROOT], dict):
        raise ModelFileError(f"{path}: missing top-level key '{ROOT}'")
    doc = doc[ROOT]
    if doc.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(f"{path}: format_version: expected {FORMAT_VERSION}, got {doc.get('format_version')!r}")
    chain_doc = doc.get("chain")
    a = _numbers(chain_doc, "a", f"{path}: chain")
    n = len(a)
    where = f"{path}: chain"
    columns = [_numbers(chain_doc, key, where, n) for key in ("alpha", "d", "theta_offset", "direction")]
    gravity = _numbers(chain_doc, "gravity", where, 3)
    try:
        chain = DHChain.create(a, *columns, gravity)
    except ValueError as exc:
        raise ModelFileError(f"{path}: chain: {exc}") from None
    try:
        structure = ModelStructure(doc.get("structure"))
    except ValueError:
        raise ModelFileError(f"{path}: structure: expected inertial, rotor or full, "
                             f"got {doc.get('structure')!r}") from None
    base = compute_base_parameters(chain, structure)
    values = _named_values(doc.get("base_parameters"), f"{path}: base_parameters", base.names,
                           lambda names: f"the names do not match the {structure.value} model of this chain (expected "
                           f"{len(base.names)}: {', '.join(base.names)})")
    friction, friction_values = _friction(doc, n, path)
    if not friction.is_seed and structure is not ModelStructure.FULL:
        raise ModelFileError(f"{path}: friction: a {structure.value} model has no friction terms")
    return DynamicModel(chain, base, np.array(values), source=str(path), standard=_standard(doc, n, path),
                        friction_model=friction, friction_parameters=friction_values)


def identification_block(path: str | Path) -> dict:
    """The documentation block ``identification`` of a model file (``{}`` if absent), e.g. the
    processing options ``predict --recording`` reuses."""
    doc = load_yaml(Path(path), ModelFileError, "model file")
    block = (doc.get(ROOT, {}).get("identification") if isinstance(doc, dict) and isinstance(doc.get(ROOT), dict)
             else None)
    return block if isinstance(block, dict) else {}


def _friction(doc: dict, n: int, path: Path) -> tuple[FrictionModel, Any]:
    """The optional ``friction`` block: the friction model and its extra parameters' values."""
    node = doc.get("friction")
    try:
        friction = FrictionModel.from_dict(node, n)
    except FrictionError as exc:
        raise ModelFileError(f"{path}: {exc}") from None
    expected = friction.extra_names()
    values = _named_values(node.get("parameters", []) if isinstance(node, dict) else [],
                           f"{path}: friction.parameters", expected,
                           lambda names: f"expected the names {', '.join(expected) or '(none)'} for terms "
                           f"{friction.terms}, got {', '.join(names) or '(none)'}")
    return friction, values


def _named_values(entries: Any, where: str, expected: Sequence[str],
                  mismatch: Callable[[list[str]], str]) -> np.ndarray:
    """The values of a list of ``{name, value}`` entries whose names must be ``expected``;
    :class:`ModelFileError` at ``where`` (``mismatch(names)`` says how the names differ)."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e and "value" in e for e in entries):
        raise ModelFileError(f"{where}: expected a list of {{name, value}} entries")
    names = [str(e["name"]) for e in entries]
    if names != list(expected):
        raise ModelFileError(f"{where}: {mismatch(names)}")
    values = []
    for i, (name, entry) in enumerate(zip(names, entries)):
        try:
            values.append(yaml_number(entry["value"]))
        except ValueError as exc:
            raise ModelFileError(f"{where}[{i}] ({name}).value: {exc}") from None
    return np.array(values)


def _standard(doc: dict, n: int, path: Path) -> Any:
    """The optional ``standard_parameters`` values (14 n, in the documented order), else None."""
    if "standard_parameters" not in doc:
        return None
    node = doc["standard_parameters"]
    names = node.get("names") if isinstance(node, dict) else None
    expected = parameter_names(n)
    if names != expected:
        raise ModelFileError(f"{path}: standard_parameters.names: expected the {len(expected)} names "
                             f"{expected[0]}, {expected[1]}, ..., {expected[-1]}")
    return np.array(_numbers(node, "values", f"{path}: standard_parameters", len(expected)))
