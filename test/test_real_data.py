"""Identification judged on a real youBot arm (issue 13): the five shared runs of
``../shared/data/youbot_real`` (point-to-point moves, ~300 Hz, current-based torques), leave one
run out. The targets were set from the measurement of stop 26 (moving rows, held out, identify
with its then default friction, smooth and load-dependent Coulomb: 25.2-30.7 %, mean 27.9 %; the
seed's friction by WLS: mean 40.9 %; the nominal model about 94 %) and are the same for every run:
nothing is tuned to a single run. Issue 31: the default ``identify`` chooses the friction structure
per joint from the four training runs (leave one of them out): 24.7, 25.2, 26.6, 30.6, 29.1 %,
mean 27.2 %; with the source of the velocities chosen too: 24.4, 24.7, 26.1, 30.5, 29.3 %, mean 27.0 %.
The mean target is the issue's 28 %."""
from __future__ import annotations

import re

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.cli import main
from youbot_dynamics.dynamics.consistency import check_model
from youbot_dynamics.dynamics.friction import FrictionModel
from youbot_dynamics.dynamics.paramfile import load_model
from youbot_dynamics.identification.estimation.friction_fit import EPS_CANDIDATES, TERM_CANDIDATES
from youbot_dynamics.identification.estimation.pipeline import identify, load_recordings, predict_recording
from youbot_dynamics.identification.estimation.processing import VELOCITY_SOURCES
from conftest import real_data_folder

ARM = default_arm()
FOLDER = real_data_folder()  # beside the repository (../shared/data/youbot_real), or where YOUBOT_REAL_DATA says
RUNS = sorted(FOLDER.glob("real_*.csv"))
# the five default identifications (friction chosen from the data) are made by the first test that needs them
pytestmark = [pytest.mark.skipif(len(RUNS) < 5, reason=f"the real youBot runs are not in {FOLDER}"),
              pytest.mark.timeout(1800)]

MOVING_TARGET_MEAN = 0.28  # held-out relative error on moving rows, mean over the five folds
MOVING_TARGET_EACH = 0.35  # ... and in every fold
NOMINAL_AT_LEAST = 0.8  # the nominal (CAD) model on the same rows: identification must be what gains


@pytest.fixture(scope="module")
def recordings():
    return {path.name: load_recordings([path], ARM)[0] for path in RUNS}


@pytest.fixture(scope="module")
def folds(recordings):
    """Leave one run out: the default identification (consistent; the friction structure chosen per
    joint by leaving one of the four training runs out, as ``identify``'s ``auto``) on four runs."""
    out = {}
    for held in recordings:
        train = [d for name, data in recordings.items() if name != held for d in data]
        out[held] = identify(train, recordings[held], ARM, method="consistent",
                             friction=FrictionModel.real_arm(ARM.n_joints), eps_candidates=EPS_CANDIDATES,
                             term_candidates=TERM_CANDIDATES, velocity_candidates=VELOCITY_SOURCES)
    return out


def test_leave_one_run_out_error_on_moving_rows(folds):
    moving = {name: run.identified.moving for name, run in folds.items()}
    print("\nheld-out moving-row errors: "
          + ", ".join(f"{k} {100 * v:.1f}% ({folds[k].options.velocity} velocities)" for k, v in moving.items()))
    assert np.mean(list(moving.values())) <= MOVING_TARGET_MEAN, moving
    assert max(moving.values()) <= MOVING_TARGET_EACH, moving
    for run in folds.values():
        assert run.baseline.moving >= NOMINAL_AT_LEAST  # the CAD model does not explain the real arm
        assert run.identified.rest < 0.7  # at rest: a stiction band, reported apart, not fitted


def test_every_identified_model_is_physically_consistent(folds):
    for name, run in folds.items():
        assert run.consistency.ok, (name, run.consistency.problems)
        check_model(run.model, ARM)  # what the controllers and predict run
        extra = zip(run.model.friction_model.extra_names(), run.model.friction_parameters)
        assert all(v >= 0 for k, v in extra if k[:2] in ("fs", "fl")), name  # Stribeck and load friction
        assert run.consistency.min_eigenvalue > 0


def test_load_dependent_friction_is_the_gain(recordings, folds):
    """The seed's friction (sign Coulomb, no load term), same data and estimator: clearly worse."""
    held = RUNS[0].name
    train = [d for name, data in recordings.items() if name != held for d in data]
    seed = identify(train, recordings[held], ARM, method="consistent", friction=FrictionModel.seed(ARM.n_joints))
    assert seed.identified.moving > folds[held].identified.moving + 0.05


def test_cli_identify_then_predict_reproduces_the_figure(tmp_path, capsys):
    """The default command line (friction chosen from the data) on four runs; predict --recording on the
    fifth prints the same moving-row figure to 0.1 point."""
    out = tmp_path / "model.yaml"
    train, held = [str(p) for p in RUNS[1:]], str(RUNS[0])
    assert main(["identify", *train, "--validate", held, "--out", str(out), "--report", str(tmp_path / "r")]) == 0
    identified = capsys.readouterr().out
    figure = float(re.search(r"moving rows \(.*\): ([\d.]+)%", identified)[1])
    assert figure <= 100 * MOVING_TARGET_EACH
    assert main(["predict", "--params", str(out), "--recording", held, "--output", str(tmp_path / "p.csv")]) == 0
    predicted = float(re.search(r"moving rows \(.*\): ([\d.]+)%", capsys.readouterr().out)[1])
    assert abs(predicted - figure) <= 0.1
    # the prediction file: measured and predicted torques and the moving marks, the same figure
    data = np.genfromtxt(tmp_path / "p.csv", delimiter=",", names=True)
    tau = np.column_stack([data[f"tau{j}"] for j in range(1, 6)])
    tau_hat = np.column_stack([data[f"tau_hat{j}"] for j in range(1, 6)])
    moving = np.column_stack([data[f"moving{j}"] for j in range(1, 6)]) > 0.5
    assert abs(100 * np.linalg.norm((tau - tau_hat)[moving]) / np.linalg.norm(tau[moving]) - figure) <= 0.1
    check_model(load_model(out), ARM)


def test_calibrate_on_one_run_keeps_a_consistent_model_that_predicts_other_runs(tmp_path, folds, recordings, capsys):
    """Identify on three runs, calibrate on a fourth, predict the fifth: within the target and
    consistent (these runs are of one session: calibration has little to gain here)."""
    train = [d for name in (RUNS[2].name, RUNS[3].name, RUNS[4].name) for d in recordings[name]]
    run = identify(train, [], ARM, method="consistent", friction=FrictionModel.real_arm(ARM.n_joints))
    from youbot_dynamics.dynamics.paramfile import save_model

    params, out = tmp_path / "m.yaml", tmp_path / "c.yaml"
    save_model(params, run.model, "three runs", identification=run.summary)
    assert main(["calibrate", "--params", str(params), str(RUNS[1]), "--out", str(out)]) == 0
    assert "payload change at link 5" in capsys.readouterr().out
    calibrated = load_model(out)
    check_model(calibrated, ARM)
    error = predict_recording(calibrated, recordings[RUNS[0].name][0], ARM)[2].moving
    assert error <= 0.33, error
