"""Issue 19 item 1: impossible model files are refused by every consumer with the reason.

Each bad model file is derived from the shipped nominal model through the model-file API
(``load_model`` / ``save_model``) and must be refused, with the same one-line reason, by the
core check (:func:`check_model`), by the control laws (so notebook users are protected), by
``youbot-dynamics predict`` (exit 2, no traceback) and by both controller nodes at start-up
(in-process in the module's first ROS domain, the executable in its second). The nominal model and identified models
pass; ``identify`` says loudly when its estimate fails the check.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.cli import main
from youbot_dynamics.control import ComputedTorqueController, PDGravityController
from youbot_dynamics.files.dataio import write_csv
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.consistency import (ModelConsistencyError, assess_model, check_model,
                                                  sample_configurations)
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.paramfile import ModelFileError, load_model, save_model
from youbot_dynamics.identification.io.dataset import write_csv_dataset
from youbot_dynamics.files.paths import config_path

from conftest import local_ros_domain, ros_domain_id
from identification_benchmark import recordings
from synthetic import fourier_trajectory, synthetic_dataset

ARM = default_arm()
ROOT = Path(__file__).resolve().parent.parent
NOMINAL_FILE = config_path("youbot_nominal_model.yaml")
NOMINAL = load_model(NOMINAL_FILE)
ALL_BAD = "200 of 200 configurations inside the joint limits)"


def _with_base(name: str, value: float) -> DynamicModel:
    """The nominal model with one base parameter changed (no standard parameters: only the base values)."""
    beta = NOMINAL.beta.copy()
    beta[NOMINAL.base.names.index(name)] = value
    return DynamicModel(NOMINAL.chain, NOMINAL.base, beta)


def _with_chain(**changes) -> DynamicModel:
    """The nominal standard parameters on a changed chain (recomputed base parameters)."""
    return DynamicModel.from_standard(dataclasses.replace(NOMINAL.chain, **changes), NOMINAL.standard)


def _negative_mass() -> DynamicModel:
    chi = NOMINAL.standard.copy()
    chi[2 * 14] = -1.0  # m3
    return DynamicModel.from_standard(NOMINAL.chain, chi)


def _impossible_inertia() -> DynamicModel:
    chi = NOMINAL.standard.copy()
    chi[2 * 14 + 4] = 0.0  # Ixx3 about the frame origin, with mass off the x axis: no body has it
    return DynamicModel.from_standard(NOMINAL.chain, chi)


def _four_joints() -> DynamicModel:
    c = NOMINAL.chain
    chain = DHChain.create(c.a[:4], c.alpha[:4], c.d[:4], c.theta_offset[:4], c.direction[:4], c.gravity)
    return DynamicModel.from_standard(chain, NOMINAL.standard[: 4 * 14])


# name -> (bad model, the reason after "model file <path>: " as a regular expression)
BAD = {
    "indefinite_mass_matrix": (lambda: _with_base("Ia1", -10.0), re.escape(
        "mass matrix not positive definite at q = [") + r"[-0-9., e]+\] rad \(smallest eigenvalue -9\.9\d kg m\^2; "
        + re.escape(ALL_BAD) + "$"),
    "negative_coulomb_friction": (lambda: _with_base("fc4", -50.0),
                                  re.escape("fc4 = -50 N m: Coulomb friction must not be negative") + "$"),
    "negative_viscous_friction": (lambda: _with_base("fv2", -1.0),
                                  re.escape("fv2 = -1 N m s/rad: viscous friction must not be negative") + "$"),
    # (M stays positive definite: the reflected rotor inertia of joint 3 outweighs the mass)
    "negative_mass": (_negative_mass, re.escape("m3 = -1 kg: a mass must not be negative") + "$"),
    "impossible_link_inertia": (_impossible_inertia, re.escape(
        "link 3 inertials (m3, mx3..Iyz3) fit no body: pseudo-inertia not positive semidefinite (smallest eigenvalue "
        "-0.00438 kg m^2)") + "$"),
    "flipped_gravity": (lambda: _with_chain(gravity=-NOMINAL.chain.gravity), re.escape(
        "chain.gravity [0, 0, 9.81] m/s^2 differs from the arm description's [0, 0, -9.81]") + "$"),
    "changed_dh_length": (lambda: _with_chain(a=NOMINAL.chain.a + [0.0, 0.05, 0.0, 0.0, 0.0]),
                          re.escape("chain.a of joint 2 is 0.205 m, the arm description's 0.155") + "$"),
    "four_joints": (_four_joints, re.escape("chain has 4 joints, the arm description 5") + "$"),
    "edited_base_values": (lambda: dataclasses.replace(NOMINAL, beta=_with_base("Ia1", -10.0).beta), re.escape(
        "standard_parameters do not give the base parameters (Ia1 is -10, the standard parameters give 0.280425); "
        "mass matrix not positive definite")),
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad_models")
    files = {}
    for name, (build, _) in BAD.items():
        files[name] = folder / f"{name}.yaml"
        save_model(files[name], build(), f"test: {name}")
    return files


def expected(name: str, path: Path) -> str:
    """The whole message as a regular expression."""
    return "^" + re.escape(f"model file {path}: ") + BAD[name][1]


@pytest.fixture(scope="module")
def states_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("predict") / "states.csv"
    n = ARM.n_joints
    q = sample_configurations(ARM, 5)
    rows = [[0.01 * k, *qk, *np.full(n, 0.3), *np.full(n, -0.2)] for k, qk in enumerate(q)]
    write_csv(path, ["t", *(f"{p}{j}" for p in ("q", "dq", "ddq") for j in range(1, n + 1))], rows)
    return path


# -- the core check -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BAD))
def test_core_check_and_both_laws_refuse_with_the_reason(bad_files, name):
    model = load_model(bad_files[name])
    with pytest.raises(ModelConsistencyError) as info:
        check_model(model, ARM)
    assert re.match(expected(name, bad_files[name]), str(info.value)), str(info.value)
    assert isinstance(info.value, ModelFileError) and isinstance(info.value, ValueError)
    assert not info.value.report.ok
    for law in (PDGravityController, ComputedTorqueController):
        with pytest.raises(ModelConsistencyError) as info:
            law(model, ARM)
        assert re.match(expected(name, bad_files[name]), str(info.value)), str(info.value)


def test_nominal_and_identified_models_pass(tmp_path):
    report = check_model(NOMINAL, ARM)
    assert report.ok and report.samples == 200 and report.min_eigenvalue > 0
    assert report.message == f"model file {NOMINAL_FILE}: consistent with the arm description"
    # the simulator's true parameters (the tests' and the demo's stand-in for an identified model)
    from youbot_dynamics.sim.simulator import ArmSimulator

    sim_model = DynamicModel.from_standard(DHChain.from_arm(ARM), ArmSimulator(ARM).true_parameters)
    assert check_model(sim_model, ARM).ok
    # identified from synthetic recordings, by least squares and by the consistent estimator
    _, train, held = recordings(ARM, duration=10.0, rate=250.0)
    paths = tmp_path / "train.csv", tmp_path / "held.csv"
    for path, data in zip(paths, (train, held)):
        write_csv_dataset(path, data)
    for method in ("wls", "consistent"):
        out = tmp_path / f"{method}.yaml"
        assert main(["identify", str(paths[0]), "--validate", str(paths[1]), "--method", method,
                     "--out", str(out)]) == 0
        identified = load_model(out)
        assert check_model(identified, ARM).ok, method
        assert yaml.safe_load(out.read_text())["youbot_dynamics_model"]["identification"]["consistency"]["consistent"]
    assert identified.standard is not None  # the consistent estimate keeps its standard parameters (checked too)


def test_indefinite_at_some_configurations_only():
    """A regrouped link inertia too small: M(q) is positive definite at the centre of the limits
    (and the model evaluates there) but not everywhere inside them."""
    model = _with_base("Ixx5", -0.03)
    centre = sample_configurations(ARM)[0]
    np.testing.assert_allclose(centre, 0.5 * (ARM.position_min + ARM.position_max))
    model.check_consistency(centre)  # the one-configuration check of the model passes
    report = assess_model(model, ARM)
    assert not report.ok and report.min_eigenvalue < 0
    (problem,) = report.problems
    count = int(re.search(r"; (\d+) of 200 configurations", problem).group(1))
    assert 0 < count < 200, problem
    assert ARM.within_limits(np.array(report.min_eigenvalue_q))
    assert np.linalg.eigvalsh(model.mass_matrix(report.min_eigenvalue_q))[0] == pytest.approx(report.min_eigenvalue)


def test_model_file_keeps_its_source_and_standard_parameters(tmp_path):
    assert NOMINAL.source == str(NOMINAL_FILE) and NOMINAL.standard.shape == (70,)
    path = tmp_path / "copy.yaml"
    save_model(path, NOMINAL)  # the standard parameters are written by default
    copy = load_model(path)
    np.testing.assert_array_equal(copy.standard, NOMINAL.standard)
    doc = yaml.safe_load(path.read_text())
    doc["youbot_dynamics_model"]["standard_parameters"]["names"][0] = "mass1"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelFileError, match=re.escape(f"{path}: standard_parameters.names: expected the 70 names "
                                                       "m1, mx1, ..., f05")):
        load_model(path)


# -- predict ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BAD))
def test_predict_refuses_with_exit_2_and_one_line(bad_files, states_csv, tmp_path, capsys, name):
    out = tmp_path / "tau.csv"
    code = main(["predict", "--params", str(bad_files[name]), "--input", str(states_csv), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.match("^youbot-dynamics predict: " + expected(name, bad_files[name])[1:], err.strip()), err
    assert not out.exists()


def test_predict_may_use_an_inconsistent_model_with_a_warning(bad_files, states_csv, tmp_path, capsys):
    out = tmp_path / "tau.csv"
    code = main(["predict", "--params", str(bad_files["negative_coulomb_friction"]), "--input", str(states_csv),
                 "--output", str(out), "--allow-inconsistent-model"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.startswith("youbot-dynamics predict: warning: model file ") and "fc4 = -50 N m" in err
    assert "--allow-inconsistent-model" in err and out.is_file()
    assert main(["predict", "--params", str(NOMINAL_FILE), "--input", str(states_csv), "--output", str(out)]) == 0
    assert capsys.readouterr().err == ""


def test_predict_executable_refuses(bad_files, states_csv, tmp_path):
    path = bad_files["flipped_gravity"]
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "youbot-dynamics"), "predict", "--params", str(path),
                           "--input", str(states_csv), "--output", str(tmp_path / "tau.csv")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert re.match("^youbot-dynamics predict: " + expected("flipped_gravity", path)[1:], proc.stderr.strip())


# -- identify -----------------------------------------------------------------------------------


def test_identify_says_loudly_when_its_estimate_is_inconsistent(tmp_path, capsys):
    """Data of an arm whose joint 4 'friction' pushes in the direction of motion (fc4 = -0.5 N m):
    the unconstrained estimate (WLS) follows the data; identify writes it and warns on stderr and in the report."""
    truth = _with_base("fc4", -0.5)
    t, q, dq, ddq = fourier_trajectory(ARM, 10.0, 250.0, seed=3)
    data = synthetic_dataset(truth, t, q, dq, ddq, seed=4, source="synthetic")
    recording, out, report = tmp_path / "data.csv", tmp_path / "model.yaml", tmp_path / "report"
    write_csv_dataset(recording, data)
    assert main(["identify", str(recording), "--method", "wls", "--out", str(out), "--report", str(report)]) == 0
    captured = capsys.readouterr()
    warning = re.search(r"youbot-dynamics identify: .*model\.yaml: WARNING: the identified model is physically "
                        r"inconsistent, predict and the controllers will refuse it: fc4 = -0\.\d+ N m: Coulomb "
                        r"friction must not be negative", captured.err)
    assert warning, captured.err
    assert "WARNING: the identified model is physically inconsistent" in captured.out  # the summary table too
    consistency = json.loads((report / "report.json").read_text())["summary"]["consistency"]
    assert consistency["consistent"] is False and "fc4 = -0." in consistency["problems"][0]
    with pytest.raises(ModelConsistencyError, match="fc4 = -0"):
        check_model(load_model(out), ARM)


def test_identification_baseline_model_is_checked(bad_files):
    """The identification node drives the arm with its baseline model (parameter nominal_model)."""
    from youbot_dynamics.identification.estimation.pipeline import reference_models

    path = bad_files["indefinite_mass_matrix"]
    with pytest.raises(ModelConsistencyError) as info:
        reference_models(ARM, "full", path)
    assert re.match(expected("indefinite_mass_matrix", path), str(info.value)), str(info.value)
    assert reference_models(ARM, "full", NOMINAL_FILE)[3] == f"baseline model {NOMINAL_FILE}"


# -- the controller nodes -----------------------------------------------------------------------


@pytest.mark.ros
@pytest.mark.parametrize("name", ["indefinite_mass_matrix", "negative_coulomb_friction", "negative_mass",
                                  "flipped_gravity", "four_joints"])
def test_controller_nodes_refuse_to_start(bad_files, name):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from youbot_dynamics.nodes.computed_torque_controller import ComputedTorqueControllerNode
    from youbot_dynamics.nodes.pd_gravity_controller import PDGravityControllerNode

    with local_ros_domain(ros_domain_id(__file__)):
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        try:
            for node_class in (PDGravityControllerNode, ComputedTorqueControllerNode):
                with pytest.raises(ModelConsistencyError) as info:
                    node_class(context=context, parameter_overrides=[
                        Parameter("model_file", value=str(bad_files[name]))])
                assert re.match(expected(name, bad_files[name]), str(info.value)), str(info.value)
        finally:
            rclpy.shutdown(context=context)


@pytest.mark.ros
@pytest.mark.parametrize("module", ["pd_gravity_controller", "computed_torque_controller"])
def test_controller_executables_exit_1_with_the_reason(bad_files, module):
    pytest.importorskip("rclpy")
    path = bad_files["negative_coulomb_friction"]
    env = dict(os.environ, ROS_DOMAIN_ID=ros_domain_id(__file__, 1), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    params = ROOT / "config" / f"{module}.yaml"
    proc = subprocess.run([sys.executable, "-m", f"youbot_dynamics.nodes.{module}", "--ros-args", "--params-file",
                           str(params), "-p", f"model_file:={path}"], env=env, capture_output=True, text=True,
                          timeout=120)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert f"cannot start: model file {path}: fc4 = -50 N m: Coulomb friction must not be negative" in text, text
    assert "Traceback" not in text
