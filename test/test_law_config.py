"""The laws' typed configuration (youbot_dynamics/control/law_config.py, issue 32 item 2): each
registry law's ``Config`` holds the law's own defaults (a law built from a default ``Config`` is the
law built with its constructor's defaults), the node's parameter values become a ``Config`` (arrays
as tuples, unset as None), a field not declared as a parameter or a ``Config`` of another law is
refused, and the schema's record has one typed field per parameter."""
from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.contract.controller_registry import CONTROLLERS
from youbot_dynamics.contract.parameter_schema import load_schema, record, record_type
from youbot_dynamics.control.law_config import from_values, parameter, schema_entries
from youbot_dynamics.control.laws import ComputedTorqueConfig, FloatController, PDGravityConfig
from youbot_dynamics.control.terms import FRICTION_EPS
from youbot_dynamics.dynamics.nominal import nominal_model


def _law(entry):
    module, name = entry.law.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.fixture(scope="module")
def arm_and_model():
    arm = default_arm()
    return arm, nominal_model(arm)[0]


def _state(law) -> dict:
    """What a law holds after construction: its arrays and flags (not its model terms)."""
    return {k: v for k, v in vars(law).items() if isinstance(v, (np.ndarray, bool, int, float, str))}


@pytest.mark.parametrize("entry", CONTROLLERS, ids=[e.name for e in CONTROLLERS])
def test_a_default_config_builds_the_law_of_its_constructor_defaults(entry, arm_and_model):
    """The Config's defaults are the law's: compared with the law built by its constructor alone."""
    arm, model = arm_and_model
    law_type = _law(entry)
    from_config = law_type.from_config(model, arm, law_type.Config(), FRICTION_EPS)
    direct = law_type(model, arm)
    ours, theirs = _state(from_config), _state(direct)
    assert ours.keys() == theirs.keys() and ours, entry.name
    for key, value in theirs.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=f"{entry.name}.{key}")


def test_a_config_changes_what_the_law_does(arm_and_model):
    """A field reaches the law: a Config of another bandwidth designs other gains (with the damping
    ratio 1 of the designed computed-torque gains, Kp = bandwidth^2)."""
    arm, model = arm_and_model
    law_type = _law(next(e for e in CONTROLLERS if e.name == "computed_torque"))
    law = law_type.from_config(model, arm, ComputedTorqueConfig(bandwidth=20.0), FRICTION_EPS)
    np.testing.assert_allclose(law.kp, 400.0)
    np.testing.assert_allclose(law.kd, 40.0)
    float_law = FloatController.from_config(model, arm, FloatController.Config(kd=(0.5,)), 0.02)
    np.testing.assert_allclose(float_law.damping, 0.5)  # its kd parameter is the law's damping D
    assert float_law.terms.friction_eps == 0.02  # the node's friction_eps


def test_a_config_of_another_law_is_refused(arm_and_model):
    arm, model = arm_and_model
    with pytest.raises(TypeError, match="takes a ComputedTorqueConfig, got PDGravityConfig"):
        _law(CONTROLLERS[1]).from_config(model, arm, PDGravityConfig(), FRICTION_EPS)
    with pytest.raises(TypeError, match="FloatController takes a FloatConfig"):
        FloatController.from_config(model, arm, PDGravityConfig(), FRICTION_EPS)


def test_values_become_a_config():
    values = {field.name: None for field in dataclasses.fields(PDGravityConfig)}
    values.update(kp=[100.0, 90.0, 80.0, 70.0, 60.0], kd=[], damping=0.8, bandwidth=30.0, static_accuracy=1e-3,
                  friction_compensation=False, gravity_compensation=True, goal_velocity_fraction=0.5)
    config = from_values(PDGravityConfig, values)
    assert config.kp == (100.0, 90.0, 80.0, 70.0, 60.0) and config.kd is None  # empty array: unset
    assert config.damping == 0.8 and config.friction_compensation is False
    del values["bandwidth"]
    with pytest.raises(KeyError, match="bandwidth"):
        from_values(PDGravityConfig, values)


def test_a_field_not_made_by_parameter_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Config:
        gain: float = parameter(1.0, "A gain [1/s].", "double", bounds=(0.0, 2.0))
        plain: float = 2.0

    with pytest.raises(TypeError, match=r"fields \['plain'\] are not made by law_config.parameter"):
        schema_entries(Config)
    with pytest.raises(TypeError, match="a law's Config is a dataclass"):
        schema_entries(dict)


def test_schema_entries_carry_default_and_validation():
    entries = schema_entries(PDGravityConfig)
    assert list(entries) == [field.name for field in dataclasses.fields(PDGravityConfig)]
    assert entries["bandwidth"]["default_value"] == PDGravityConfig().bandwidth
    assert entries["bandwidth"]["validation"] == {"bounds<>": [0.1, 1000.0]}
    assert "default_value" not in entries["kp"]  # unset: the law designs it
    spec = load_schema("pd_gravity_controller")["kp"]
    assert spec.per_joint == (0, 1) and spec.element_bounds[0] == 0.0
    with pytest.raises(ValueError, match="kp: expected 5 values"):
        spec.check([1.0, 2.0])


def test_the_record_has_one_typed_field_per_parameter():
    schema = load_schema("float_controller")
    cls = record_type("float_controller")
    assert [f.name for f in dataclasses.fields(cls)] == list(schema)
    values = {name: spec.default for name, spec in schema.items()}
    values["torque_limit"] = []
    values["kd"] = [0.1, 0.2, 0.3, 0.4, 0.5]
    params = record("float_controller", values)
    assert params.rate == schema["rate"].default and params.torque_limit is None
    assert params.kd == (0.1, 0.2, 0.3, 0.4, 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.rate = 1.0
    with pytest.raises(AttributeError):
        params.no_such_parameter  # noqa: B018 - a name the schema does not have is no field
