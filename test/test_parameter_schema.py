"""The parameter schemas (youbot_dynamics/nodes/parameters/*.yaml): every node declares exactly its
schema (names, types, defaults, bounds, read-only, descriptions, as rclpy sees them), the defaults the
core owns are the core's, a bad override is refused with the parameter named, and a broken schema
file is refused with the file and entry named."""
from __future__ import annotations

import dataclasses
import math

import pytest

from youbot_dynamics.contract import parameter_schema
from youbot_dynamics.contract.parameter_schema import SchemaError, load_schema, schema_names

NOT_NODES = {"common", "controller_common"}  # schemas other schemas borrow from


def test_every_schema_loads_and_every_node_has_one():
    from youbot_dynamics.nodes.parameter_table import NODES

    assert set(schema_names()) == set(NODES) | NOT_NODES
    for name in schema_names():
        specs = load_schema(name)
        assert specs and all(spec.name == key for key, spec in specs.items())


def test_core_defaults_are_the_core_values():
    """A default named ``from`` the core is the core's value: the driver's, the experiment's and the
    safety guard's dataclasses, the laws' constants and the topic contract."""
    from youbot_dynamics.contract.topics import COMMAND_INTERFACES, JOINT_STATES, TRAJECTORY
    from youbot_dynamics.control.laws import CT_BANDWIDTH, PD_BANDWIDTH
    from youbot_dynamics.control.safety import SafetyConfig
    from youbot_dynamics.driver.driver import DriverConfig
    from youbot_dynamics.identification.experiment.session import SessionConfig

    driver = load_schema("youbot_driver")
    for field in dataclasses.fields(DriverConfig):  # the node builds DriverConfig from these parameters
        assert driver[field.name].default == getattr(DriverConfig(), field.name), field.name
    session = load_schema("identification_node")
    for name in ("periods", "validation_periods", "max_tracking_error", "stream_horizon", "stop_deceleration"):
        assert session[name].default == getattr(SessionConfig(), name), name
    assert session["state_timeout"].default == 0.5 != SessionConfig().state_timeout  # looser over ROS, on purpose
    common = load_schema("controller_common")
    for name in ("state_timeout", "state_loss_timeout", "fault_behaviour", "hold_bandwidth", "limit_margin",
                 "ramp_time"):
        assert common[name].default == getattr(SafetyConfig(), name), name
    assert load_schema("pd_gravity_controller")["bandwidth"].default == PD_BANDWIDTH
    assert load_schema("computed_torque_controller")["bandwidth"].default == CT_BANDWIDTH
    for node in ("sim_node", "youbot_driver"):
        spec = load_schema(node)["command_interfaces"]
        assert spec.default == list(COMMAND_INTERFACES) and spec.subset_of == COMMAND_INTERFACES
    assert common["joint_states_topic"].default == JOINT_STATES and common["release_topic"].default == TRAJECTORY


def test_extends_and_like():
    """A controller's schema is its own file's parameters (if it has one), then its law's Config's,
    then controller_common's; a borrowed entry is the lender's with the borrower's keys."""
    from youbot_dynamics.control.laws import ComputedTorqueConfig, FloatConfig

    common = load_schema("controller_common")
    float_schema = load_schema("float_controller")
    law_fields = [field.name for field in dataclasses.fields(FloatConfig)]
    assert list(float_schema)[:len(law_fields)] == law_fields
    assert list(float_schema)[len(law_fields):] == list(common)
    assert "kp" not in float_schema and "damping" not in float_schema  # a law declares only what it uses
    ct = load_schema("computed_torque_controller")
    assert list(ct)[:2] == ["line_duration", "feedback_period"]  # the node's own topics' parameters
    assert list(ct)[2:2 + len(dataclasses.fields(ComputedTorqueConfig))] == [
        field.name for field in dataclasses.fields(ComputedTorqueConfig)]
    assert set(load_schema("pd_gravity_controller")) >= set(common)
    shared = load_schema("common")["realtime_priority"]
    assert common["realtime_priority"] == shared
    sim = load_schema("sim_node")["realtime_priority"]
    assert sim.default == 0 != shared.default and dataclasses.replace(sim, default=shared.default) == shared
    assert load_schema("external_torque_observer")["observer_gain"] == common["observer_gain"]


def test_spec_check_names_the_parameter():
    spec = load_schema("controller_common")["collision_reaction"]
    spec.check("stop")
    with pytest.raises(ValueError, match=r"collision_reaction must be one of \('none', 'stop', 'float'\), got 'x'"):
        spec.check("x")
    spec = load_schema("sim_node")["realism_effects"]
    spec.check(["noise"])
    with pytest.raises(ValueError, match=r"realism_effects: unknown \['wind'\]"):
        spec.check(["noise", "wind"])
    with pytest.raises(ValueError, match=r"rate must be within \[1.0, 10000.0\], got 0.5"):
        load_schema("controller_common")["rate"].check(0.5)


BROKEN = {
    "no section": ("other:\n  a: {type: int, default_value: 1, description: d}\n", "one section 'x'"),
    "not YAML": ("x: [\n", "parameter schema x.yaml"),
    "unknown type": ("x:\n  a: {type: float, default_value: 1.0, description: d}\n", "a: type must be one of"),
    "no description": ("x:\n  a: {type: int, default_value: 1}\n", "a: no description"),
    "unknown key": ("x:\n  a: {type: int, default: 1, description: d}\n", "a: unknown keys \\['default'\\]"),
    "default of another type": ("x:\n  a: {type: int, default_value: 1.5, description: d}\n", "1.5 is not a int"),
    "default out of bounds": ("x:\n  a: {type: double, default_value: 3.0, description: d, validation: "
                              "{bounds<>: [0.0, 1.0]}}\n", "a must be within"),
    "default not a choice": ("x:\n  a: {type: string, default_value: c, description: d, validation: "
                             "{one_of<>: [[a, b]]}}\n", "a must be one of"),
    "unknown validation": ("x:\n  a: {type: int, default_value: 1, description: d, validation: {gt<>: [0]}}\n",
                           "unknown validation"),
    "bad from": ("x:\n  a: {type: int, default_value: {from: youbot_dynamics.contract.topics:NOPE}, description: d}\n",
                 "'from: youbot_dynamics.contract.topics:NOPE'"),
    "like nothing": ("x:\n  a: {like: common.nope}\n", "like common.nope: no such parameter"),
    "extends bad except": ("x:\n  a: {type: int, default_value: 1, description: d}\n_extends: "
                           "{schema: common, except: [nope]}\n", "excepts parameters common does not have"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_schema_is_refused_with_the_place(case, monkeypatch):
    text, message = BROKEN[case]
    real = parameter_schema._read
    monkeypatch.setattr(parameter_schema, "_read", lambda name: text if name == "x" else real(name))
    for cached in (parameter_schema._document, parameter_schema.load_schema):
        cached.cache_clear()
    try:
        with pytest.raises(SchemaError, match=message):
            load_schema("x")
    finally:
        for cached in (parameter_schema._document, parameter_schema.load_schema):
            cached.cache_clear()


def test_unknown_schema_is_refused():
    with pytest.raises(SchemaError, match="no parameter schema 'nope'; known: .*sim_node"):
        load_schema("nope")


# -- the nodes declare their schema ------------------------------------------------------------------

rclpy = pytest.importorskip("rclpy")
RCLPY_PARAMETERS = {"use_sim_time", "start_type_description_service"}  # rclpy's own


def _node_classes():
    from youbot_dynamics.contract.controller_registry import CONTROLLERS
    from youbot_dynamics.nodes.external_torque_observer import ExternalTorqueNode
    from youbot_dynamics.nodes.identification_node import IdentificationNode
    from youbot_dynamics.nodes.kinematics_node import KinematicsNode
    from youbot_dynamics.nodes.sim_node import SimNode
    from youbot_dynamics.nodes.youbot_driver import YoubotDriverNode

    return {"sim_node": (SimNode, {}), "youbot_driver": (YoubotDriverNode, {"backend": "virtual"}),
            "kinematics_node": (KinematicsNode, {}), "identification_node": (IdentificationNode, {}),
            "external_torque_observer": (ExternalTorqueNode, {}),
            **{entry.node: (entry.node_type(), {}) for entry in CONTROLLERS}}


@pytest.fixture(scope="module")
def context(ros_domain):
    from rclpy.context import Context

    ctx = Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.shutdown(context=ctx)


def _build(node: str, context, overrides: dict):
    from rclpy.parameter import Parameter

    node_class, needed = _node_classes()[node]
    return node_class(context=context, parameter_overrides=[Parameter(k, value=v)
                                                            for k, v in {**needed, **overrides}.items()])


@pytest.mark.parametrize("node", sorted(set(schema_names()) - NOT_NODES))
def test_node_declares_exactly_its_schema(node, context):
    from rcl_interfaces.msg import ParameterType

    built = _build(node, context, {})
    try:
        schema = load_schema(node)
        declared = [name for name in built._parameters if name not in RCLPY_PARAMETERS]
        assert declared == list(schema), "declared in the schema's order"
        for name, spec in schema.items():
            descriptor = built.describe_parameter(name)
            parameter = built.get_parameter_or(name, None)  # an unset one: its NOT_SET parameter
            expected = spec.default if node != "youbot_driver" or name != "backend" else "virtual"
            assert parameter.value == expected, name
            if expected is None:
                assert parameter.type_ == rclpy.parameter.Parameter.Type.NOT_SET
            assert descriptor.description == spec.description and descriptor.read_only == spec.read_only, name
            kind = {"double": ParameterType.PARAMETER_DOUBLE, "int": ParameterType.PARAMETER_INTEGER,
                    "string": ParameterType.PARAMETER_STRING, "bool": ParameterType.PARAMETER_BOOL,
                    "double_array": ParameterType.PARAMETER_DOUBLE_ARRAY,
                    "string_array": ParameterType.PARAMETER_STRING_ARRAY}[spec.type]
            assert descriptor.type == kind, name
            ranges = list(descriptor.floating_point_range) + list(descriptor.integer_range)
            if spec.bounds is None:
                assert not ranges, name
            else:
                assert math.isclose(ranges[0].from_value, spec.bounds[0]) and \
                    math.isclose(ranges[0].to_value, spec.bounds[1]), name
    finally:
        built.destroy_node()


@pytest.mark.parametrize("node, name, value, message", [
    ("sim_node", "realism_effects", ["noise", "wind"], r"realism_effects: unknown \['wind'\]"),
    ("youbot_driver", "trajectory_interpolation", "linear", "trajectory_interpolation must be one of"),
    ("identification_node", "structure", "all", r"structure must be one of \('inertial', 'rotor', 'full'\)"),
    ("computed_torque_controller", "cycle_trigger", "clock", "cycle_trigger must be one of"),
])
def test_override_outside_the_choices_is_refused(node, name, value, message, context):
    with pytest.raises(ValueError, match=message):
        _build(node, context, {name: value})


def test_override_outside_the_bounds_is_refused(context):
    from rclpy.exceptions import InvalidParameterValueException

    with pytest.raises(InvalidParameterValueException, match="rate"):
        _build("pd_gravity_controller", context, {"rate": 0.5})
