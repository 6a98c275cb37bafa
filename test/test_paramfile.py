"""Model files: round trip, the shipped nominal model, malformed files, and the base-params / predict CLI."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml

from youbot_dynamics.cli import main
from youbot_dynamics.dynamics.chain import DHChain
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.nominal import NOMINAL_MODEL_FILE, nominal_model
from youbot_dynamics.dynamics.paramfile import ModelFileError, load_model, save_model
from youbot_dynamics.dynamics.parameters import standard_parameters
from youbot_dynamics.files.paths import config_path
from youbot_dynamics.arm.urdf import generate_urdf


@pytest.fixture(scope="module")
def nominal(arm):
    return nominal_model(arm)


@pytest.fixture(scope="module")
def identified_like(arm):
    """A model with every kind of term non-zero (drive terms, rotor inertia)."""
    chi = standard_parameters(arm, rotor_inertia=[0.13, 0.11, 0.045, 0.021, 0.012], viscous=[0.5, 0.4, 0.3, 0.2, 0.1],
                              coulomb=[0.8, 0.7, 0.6, 0.5, 0.4], offset=[0.05, -0.04, 0.03, -0.02, 0.01])
    return DynamicModel.from_standard(DHChain.from_arm(arm), chi, "full"), chi


@pytest.fixture()
def saved(tmp_path, identified_like):
    model, chi = identified_like
    path = tmp_path / "model.yaml"
    save_model(path, model, "test model", chi)
    return path


def states(count=20, seed=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (count, 5)), rng.uniform(-2, 2, (count, 5)), rng.uniform(-5, 5, (count, 5))


def test_round_trip(saved, identified_like):
    model, chi = identified_like
    loaded = load_model(saved)
    assert loaded.base.names == model.base.names
    assert loaded.base.structure == model.base.structure
    np.testing.assert_array_equal(loaded.beta, model.beta)
    np.testing.assert_array_equal(loaded.chain.a, model.chain.a)
    np.testing.assert_array_equal(loaded.chain.theta_offset, model.chain.theta_offset)
    q, dq, ddq = states()
    np.testing.assert_array_equal(loaded.inverse_dynamics(q, dq, ddq), model.inverse_dynamics(q, dq, ddq))
    doc = yaml.safe_load(saved.read_text())["youbot_dynamics_model"]
    assert doc["standard_parameters"]["values"] == [float(v) for v in chi]
    assert doc["description"] == "test model"


def test_shipped_nominal_model_is_current(nominal):
    model, _ = nominal
    regen = ("config/youbot_nominal_model.yaml is stale: regenerate with "
             "`python -m youbot_dynamics nominal-model --write`")
    shipped = load_model(config_path(NOMINAL_MODEL_FILE))
    assert shipped.base.names == model.base.names, regen
    np.testing.assert_allclose(shipped.beta, model.beta, rtol=0, atol=1e-12, err_msg=regen)
    for attr in ("a", "alpha", "d", "theta_offset", "direction", "gravity"):
        np.testing.assert_allclose(getattr(shipped.chain, attr), getattr(model.chain, attr), rtol=0, atol=1e-12,
                                   err_msg=regen)
    doc = yaml.safe_load(config_path(NOMINAL_MODEL_FILE).read_text())["youbot_dynamics_model"]
    # expressions are documentation: compare them up to whitespace
    squash = lambda text: " ".join(str(text).split())  # noqa: E731
    expressions = [squash(e["expression"]) for e in doc["base_parameters"]]
    assert expressions == [squash(e) for e in model.base.expressions], regen


# -- malformed files ----------------------------------------------------------------------------


def _edit(path, change):
    doc = yaml.safe_load(path.read_text())
    change(doc["youbot_dynamics_model"])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _swap_names(d):
    e = d["base_parameters"]
    e[0]["name"], e[1]["name"] = e[1]["name"], e[0]["name"]


def _set_value(d, v):
    d["base_parameters"][3]["value"] = v


@pytest.mark.parametrize("change, pattern", [
    (lambda d: d.pop("structure"), r"structure"),
    (lambda d: d.update(structure="everything"), r"structure: expected inertial, rotor or full"),
    (lambda d: d.pop("chain"), r"chain"),
    (lambda d: d["chain"].pop("alpha"), r"chain: missing key 'alpha'"),
    (lambda d: d["chain"].update(alpha=[0.0, 1.0]), r"chain\.alpha: expected a list of 5"),
    (lambda d: d["chain"].update(gravity="down"), r"chain\.gravity"),
    (lambda d: d["chain"].update(direction=[1, 1, 1, 1, 2]), r"direction"),
    (lambda d: d.pop("base_parameters"), r"base_parameters"),
    (lambda d: d.update(base_parameters={"Ia1": 1.0}), r"base_parameters: expected a list"),
    (lambda d: d["base_parameters"][0].pop("value"), r"base_parameters"),
    (_swap_names, r"names do not match"),
    (lambda d: d["base_parameters"].pop(), r"base_parameters.*expected 47"),
    (lambda d: _set_value(d, float("nan")), r"base_parameters\[3\] \(\w+\)\.value: expected a finite number, got nan"),
    (lambda d: _set_value(d, "abc"), r"base_parameters\[3\] \(\w+\)\.value: expected a finite number, got 'abc'"),
    (lambda d: d["chain"]["d"].__setitem__(2, "x"), r"chain\.d\[2\]: expected a finite number, got 'x'"),
    (lambda d: d.update(format_version=2), r"format_version"),
    (lambda d: d.update(structure="rotor"), r"names do not match the rotor model"),
])
def test_malformed_model_files(saved, change, pattern):
    _edit(saved, change)
    with pytest.raises(ModelFileError, match=pattern):
        load_model(saved)


def test_bad_yaml_missing_root_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("youbot_dynamics_model: [unclosed\n  - : :\n")
    with pytest.raises(ModelFileError, match="malformed YAML"):
        load_model(bad)
    bad.write_text("something_else: 1\n")
    with pytest.raises(ModelFileError, match="missing top-level key 'youbot_dynamics_model'"):
        load_model(bad)
    with pytest.raises(ModelFileError, match="cannot read model file"):
        load_model(tmp_path / "nope.yaml")
    assert issubclass(ModelFileError, ValueError)


# -- CLI -------------------------------------------------------------------------------------------


def test_cli_base_params_json(capsys):
    assert main(["base-params", "--structure", "rotor", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["structure"] == "rotor"
    assert out["count"] == 32 == len(out["base_parameters"])
    assert all(e["name"] and e["expression"] for e in out["base_parameters"])


def _write_states_csv(path, q, dq, ddq, t=None):
    t = np.arange(len(q)) * 0.01 if t is None else t
    header = ["t"] + [f"{p}{i}" for p in ("q", "dq", "ddq") for i in range(1, 6)]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in zip(t, q, dq, ddq):
            w.writerow([repr(float(row[0]))] + [repr(float(v)) for v in np.concatenate(row[1:])])
    return header


def test_cli_predict_matches_pinocchio(tmp_path, arm, capsys):
    pin = pytest.importorskip("pinocchio")
    q, dq, ddq = states(25, seed=17)
    src = tmp_path / "states.csv"
    out = tmp_path / "tau.csv"
    _write_states_csv(src, q, dq, ddq)
    assert main(["predict", "--params", str(config_path(NOMINAL_MODEL_FILE)), "--input", str(src),
                 "--output", str(out)]) == 0
    with out.open() as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["t", "tau1", "tau2", "tau3", "tau4", "tau5"]
    data = np.array(rows[1:], dtype=float)
    np.testing.assert_array_equal(data[:, 0], np.arange(25) * 0.01)
    model = pin.buildModelFromXML(generate_urdf(arm))
    model.gravity.linear = np.array([0.0, 0.0, -arm.gravity])
    model.armature = arm.armature  # the nominal model's drive term Ia q'' (Ia = N^2 J of the description)
    pdata = model.createData()
    expected = np.array([pin.rnea(model, pdata, a, b, c) for a, b, c in zip(q, dq, ddq)])
    np.testing.assert_allclose(data[:, 1:], expected, rtol=0, atol=1e-9)


def test_cli_predict_bad_csv_exits_2(tmp_path, capsys):
    q, dq, ddq = states(3, seed=18)
    params = str(config_path(NOMINAL_MODEL_FILE))
    src = tmp_path / "states.csv"
    header = _write_states_csv(src, q, dq, ddq)
    # missing column ddq4
    lines = src.read_text().splitlines()
    k = header.index("ddq4")
    src.write_text("\n".join(",".join(c for j, c in enumerate(line.split(",")) if j != k) for line in lines) + "\n")
    assert main(["predict", "--params", params, "--input", str(src), "--output", str(tmp_path / "o.csv")]) == 2
    assert "ddq4" in capsys.readouterr().err
    # a NaN in dq2
    _write_states_csv(src, q, dq, ddq)
    lines = src.read_text().splitlines()
    cells = lines[2].split(",")
    cells[header.index("dq2")] = "nan"
    lines[2] = ",".join(cells)
    src.write_text("\n".join(lines) + "\n")
    assert main(["predict", "--params", params, "--input", str(src), "--output", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "dq2" in err and "non-finite" in err
    # a broken model file is exit 2 too
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: 1\n")
    _write_states_csv(src, q, dq, ddq)
    assert main(["predict", "--params", str(bad), "--input", str(src), "--output", str(tmp_path / "o.csv")]) == 2
    assert "youbot_dynamics_model" in capsys.readouterr().err


def test_identified_model_extras_are_optional_documentation(tmp_path, identified_like):
    """Relative standard deviations and the identification summary are stored but not needed to load."""
    model, chi = identified_like
    path = tmp_path / "identified.yaml"
    rel = np.linspace(0.1, 50.0, model.base.count)
    rel[3] = np.inf  # a parameter estimated as exactly zero
    save_model(path, model, "identified", chi, relative_std=rel,
               identification={"method": "wls", "condition_number": 42.0, "data": ["a.csv"]})
    doc = yaml.safe_load(path.read_text())["youbot_dynamics_model"]
    assert doc["format_version"] == 1
    assert [e["relative_std_percent"] for e in doc["base_parameters"]][:3] == list(rel[:3])
    assert doc["base_parameters"][3]["relative_std_percent"] is None
    assert doc["identification"] == {"method": "wls", "condition_number": 42.0, "data": ["a.csv"]}
    np.testing.assert_array_equal(load_model(path).beta, model.beta)
    with pytest.raises(ValueError, match="relative_std: expected 47 values"):
        save_model(path, model, relative_std=rel[:5])
