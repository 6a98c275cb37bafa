"""Issue 35: what a youBot can be (items 1, 11, 12). The plausibility bounds of dynamic models
(:mod:`youbot_dynamics.dynamics.plausibility`) checked against the arm's own data (the hardware
figures of ../shared/youbot_hardware.md, the arm description's masses), the models they must
accept and those they refuse; the gain bounds and the per-joint arrays of the parameter schemas;
unknown parameter names."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import local_ros_domain, ros_domain_id
from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.nominal import nominal_model
from youbot_dynamics.dynamics.paramfile import load_model, save_model
from youbot_dynamics.dynamics.parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT
from youbot_dynamics.dynamics.plausibility import (KD_MAX, KP_MAX, ModelPlausibilityError, PlausibilityBounds,
                                                   check_plausible, plausibility_problems)
from youbot_dynamics.contract.parameter_schema import load_schema, schema_names
from youbot_dynamics.files.paths import config_path

ARM = default_arm()
NOMINAL, CHI = nominal_model(ARM)
CAD_TOTAL = 2.412 + 1.155 + 0.934 + 0.877 + 0.251  # [kg] config/youbot_arm.yaml, links
# [N m] max_current kt N; youbot_hardware.md: "about 30 / 30 / 13 / 9.9 / 6.1 Nm"
PEAK = np.array([30.14, 30.14, 13.06, 9.94, 6.09])


def with_links_scaled(k: float) -> DynamicModel:
    """The nominal model with every link's inertials (m, m c, I_O) k times (a heavier arm of the
    same shape: masses, gravity and link inertias x k), drives unchanged."""
    chi = CHI.copy().reshape(-1, PARAMETERS_PER_JOINT)
    chi[:, : len(LINK_PARAMETERS)] *= k
    return DynamicModel.from_standard(DHChain.from_arm(ARM), chi.ravel())


def with_coulomb(joint: int, value: float) -> DynamicModel:
    chi = CHI.copy().reshape(-1, PARAMETERS_PER_JOINT)
    chi[joint, len(LINK_PARAMETERS) + 2] = value  # fc
    return DynamicModel.from_standard(DHChain.from_arm(ARM), chi.ravel())


# -- the bounds and the models ------------------------------------------------------------------


def test_bounds_come_from_the_hardware_data():
    bounds = PlausibilityBounds.of(ARM)
    np.testing.assert_allclose(bounds.peak_torque, PEAK, atol=0.01)
    assert bounds.mass == pytest.approx(4.0 * CAD_TOTAL)
    assert bounds.reach == pytest.approx(0.033 + 0.155 + 0.135 + 0.147 + 0.218)  # the DH a and d of seed 002


def test_the_shipped_nominal_model_is_plausible():
    assert plausibility_problems(load_model(config_path("youbot_nominal_model.yaml")), ARM) == []


def test_the_mass_bound_is_four_times_the_arm():
    """3.9 x every link: accepted; 4.1 x: the total mass named with its value and bound."""
    assert plausibility_problems(with_links_scaled(3.9), ARM) == []
    problems = plausibility_problems(with_links_scaled(4.1), ARM)
    total = 4.1 * CAD_TOTAL
    assert problems == [f"total mass m1 + ... + m5 = {total:.4g} kg, above {4 * CAD_TOTAL:.3g} kg (4 x the arm's "
                        f"nominal {CAD_TOTAL:.3g} kg)"], problems


@pytest.mark.parametrize("joint", range(5))
def test_friction_above_the_drives_peak_torque_is_refused(joint):
    assert plausibility_problems(with_coulomb(joint, 0.97 * PEAK[joint]), ARM) == []
    problems = plausibility_problems(with_coulomb(joint, 1.03 * PEAK[joint]), ARM)
    assert len(problems) == 1 and problems[0].startswith(f"friction torque of joint {joint + 1} at its velocity "
                                                         f"limit 1.57 rad/s {1.03 * PEAK[joint]:.4g} N m, above the "
                                                         f"drive's peak torque"), problems


def test_torques_in_millinewton_metres_give_a_model_refused_in_one_line(tmp_path):
    """The model of a recording in mN m is the arm x 1000: 2412 kg on link 1, refused by name."""
    path = tmp_path / "mNm.yaml"
    model = DynamicModel.from_standard(DHChain.from_arm(ARM), 1000.0 * CHI)
    save_model(path, model, "x1000", 1000.0 * CHI)
    with pytest.raises(ModelPlausibilityError) as info:
        load_model(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"model file {path}: not a plausible youBot model")
    assert f": m1 = 2412 kg, above {4 * CAD_TOTAL:.3g} kg" in message, message
    # base parameters only (ols, wls): the torque bounds alone refuse it
    base_only = DynamicModel(model.chain, model.base, model.beta)
    problems = plausibility_problems(base_only, ARM)
    assert any(p.startswith("gravity torque of joint 2 5002 N m") for p in problems), problems
    assert load_model(path, allow_implausible=True).beta == pytest.approx(model.beta)
    warning = check_plausible(base_only, ARM, source="that model", allow=True)
    assert warning.startswith("that model: not a plausible youBot model")


# -- the controllers refuse such a model at start ------------------------------------------------


@pytest.mark.ros
def test_a_controller_refuses_to_start_on_an_implausible_model(tmp_path):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode

    path = tmp_path / "heavy.yaml"
    save_model(path, with_links_scaled(10.0), "x10", None)
    with local_ros_domain(ros_domain_id(__file__)):
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        try:
            with pytest.raises(ModelPlausibilityError, match=f"model file {re.escape(str(path))}: not a plausible "
                               r"youBot model .*gravity torque of joint 2 "):
                PDGravityControllerNode(context=context, parameter_overrides=[Parameter("model_file", value=str(path))])
        finally:
            rclpy.shutdown(context=context)


def light_arm_file(tmp_path) -> str:
    """The arm description with every link a fifth as heavy (mass and inertia): the youBot's nominal
    model is 5 x that arm, beyond its 4 x mass bound."""
    text = config_path("youbot_arm.yaml").read_text()
    lines = []
    for line in text.splitlines():
        match = re.match(r"(\s*- \{mass: )([0-9.]+)(, com: \[[^]]*\], inertia: \[)([^]]*)(\]\})", line)
        if match:
            inertia = ", ".join(f"{0.2 * float(v):.9g}" for v in match.group(4).split(","))
            line = f"{match.group(1)}{0.2 * float(match.group(2)):.9g}{match.group(3)}{inertia}{match.group(5)}"
        lines.append(line)
    path = tmp_path / "light_arm.yaml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_model_is_judged_for_the_arm_it_drives(tmp_path):
    """The nodes and the identification's baseline check a model against their arm description,
    not the package's: the youBot's nominal model on an arm a fifth as heavy is refused."""
    from youbot_dynamics.arm.description import load_arm
    from youbot_dynamics.identification.estimation.pipeline import reference_models

    light = load_arm(light_arm_file(tmp_path))
    assert sum(link.mass for link in light.links) == pytest.approx(0.2 * CAD_TOTAL)
    nominal_file = config_path("youbot_nominal_model.yaml")
    load_model(nominal_file)  # plausible for the youBot
    with pytest.raises(ModelPlausibilityError, match="total mass"):
        load_model(nominal_file, light)
    with pytest.raises(ModelPlausibilityError, match="total mass"):
        reference_models(light, baseline=nominal_file)


@pytest.mark.ros
def test_a_controller_judges_its_model_for_its_arm_description(tmp_path):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode

    with local_ros_domain(ros_domain_id(__file__)):
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        try:
            with pytest.raises(ModelPlausibilityError, match=r"not a plausible youBot model .*total mass"):
                PDGravityControllerNode(context=context, parameter_overrides=[
                    Parameter("arm_description", value=light_arm_file(tmp_path))])
        finally:
            rclpy.shutdown(context=context)


# -- gains and per-joint arrays in the parameter schemas ----------------------------------------


def test_gain_bounds_are_one_encoder_count_and_one_rpm_at_the_peak_torque():
    assert KP_MAX == pytest.approx(30.14357 * 4000 * 156 / (2 * np.pi), rel=1e-5)  # ~3.0e6 N m/rad
    assert KD_MAX == pytest.approx(30.14357 * 60 * 156 / (2 * np.pi), rel=1e-5)  # ~4.5e4 N m s/rad
    for schema in ("pd_gravity_controller", "computed_torque_controller"):
        kp = load_schema(schema)["kp"]
        kp.check([1800.0, 1800.0, 600.0, 80.0, 60.0])
        with pytest.raises(ValueError, match=r"^kp: every value must be within \[0, 2\.99\d+e\+06\], got 1e\+09$"):
            kp.check([1e9])
        with pytest.raises(ValueError, match=r"^kd: every value must be within"):
            load_schema(schema)["kd"].check([10.0, 10.0, 10.0, 10.0, 1e6])


def test_torque_limit_of_six_values_is_named_with_the_lengths_expected():
    spec = load_schema("pd_gravity_controller")["torque_limit"]
    for ok in ([], [5.0], [17.0, 17.0, 8.0, 2.7, 1.0]):
        spec.check(ok)
    with pytest.raises(ValueError) as info:
        spec.check([1.0] * 6)
    assert str(info.value) == ("torque_limit: expected 5 values (one per joint) or none (unset) or 1 (one for all), "
                               "got 6")


NOT_PER_JOINT = {("identification_node", "sweep_speeds")}  # the friction sweep's levels: any number of speeds


def test_every_per_joint_array_declares_its_length():
    """Every number array of every node but :data:`NOT_PER_JOINT` is one value per joint (gains,
    limits, positions): each declares per_joint<>, so a wrong length is refused at declaration, naming it."""
    arrays = [(schema, name, spec) for schema in schema_names() for name, spec in load_schema(schema).items()
              if spec.type == "double_array" and (schema, name) not in NOT_PER_JOINT]
    assert len(arrays) >= 20
    assert all(load_schema(schema)[name].per_joint is None for schema, name in NOT_PER_JOINT)
    for schema, name, spec in arrays:
        assert spec.per_joint is not None, f"{schema}.{name}"
        with pytest.raises(ValueError, match=f"^{name}: expected 5 values"):
            spec.check([0.0] * 6)


@pytest.mark.ros
def test_a_node_refuses_a_bad_array_and_warns_about_unknown_names(capfd):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from youbot_dynamics.nodes.common import declare_parameters, unknown_parameters

    with local_ros_domain(ros_domain_id(__file__, 1)):
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        try:
            node = Node("pd_gravity_controller", context=context, parameter_overrides=[
                Parameter("torque_limit", value=[1.0] * 6)])
            with pytest.raises(ValueError, match=r"^torque_limit: expected 5 values \(one per joint\)"):
                declare_parameters(node, "pd_gravity_controller")
            node.destroy_node()
            node = Node("pd_gravity_controller", context=context, parameter_overrides=[
                Parameter("torque_limt", value=[1.0] * 5), Parameter("kp", value=[100.0])])
            capfd.readouterr()
            declare_parameters(node, "pd_gravity_controller")
            assert unknown_parameters(node) == ["torque_limt"]
            err = capfd.readouterr().err
            assert "unknown parameters ignored (not in doc/parameters.md, pd_gravity_controller): torque_limt (did " \
                   "you mean torque_limit?)" in err, err
            node.destroy_node()
        finally:
            rclpy.shutdown(context=context)
