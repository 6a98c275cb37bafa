"""The identification node's work on an experiment, without ROS: what it drives (:class:`ExcitationPlan`,
:func:`plan_excitation`, checked before the arm moves) and what it computes from the recording in
its worker thread (:func:`identify_recording` as ``youbot-dynamics identify``, :func:`identify_pilot`
for the effort interface's feedforward, :func:`recalibrate_recording` as ``youbot-dynamics
calibrate``), with the figures the node reports (:func:`identification_summary`,
:func:`calibration_summary`) and a recalibration's payload in the tool frame (:func:`payload_in_tool`).
doc/identification.md."""
from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ...arm.description import ArmDescription
from ...dynamics.model import DynamicModel
from ...dynamics.consistency import check_model
from ...dynamics.paramfile import identification_block, load_model
from ..estimation.calibration import Calibration, calibrate, consistency_problems, write_calibration
from ..estimation.friction_fit import EPS_CANDIDATES, TERM_CANDIDATES
from ..estimation.pipeline import excitation_delay, periodic_cut, processing_options, write_results
from ..estimation.processing import VELOCITY_SOURCES, ProcessingOptions
from ..excitation.trajectories import Trajectory
from ..io.dataset import IdentificationError
from ..io.recordings import load_dataset
from ..io.trajfile import load_trajectory
from .analysis import identify_experiment
from .effort import pilot_model, slowed
from .session import ExcitationSession, SessionConfig

__all__ = ["ExcitationPlan", "ModelToUpdate", "Settings", "calibration_summary", "identification_summary",
           "identify_pilot", "identify_recording", "new_run_directory", "payload_in_tool", "plan_excitation",
           "recalibrate_recording"]


class ExcitationPlan(NamedTuple):
    """What an identification drives: the excitation file, its trajectory and design, the session
    settings (its periods), the pilot pass's slowed excitation (effort interface; else None) and
    how long the arm takes to stop from any instant of the motion without new commands [s]."""

    path: Path
    trajectory: Trajectory
    design: dict[str, Any]
    config: SessionConfig
    pilot: Trajectory | None
    stop_time_bound: float


class ModelToUpdate(NamedTuple):
    """The model a recalibration updates: its file and the model checked when it was asked for."""

    path: Path
    model: DynamicModel

    @classmethod
    def load(cls, path: Path, arm: ArmDescription) -> "ModelToUpdate":
        """The model file ``path`` as a recalibration's target: loaded, checked as the controllers check
        it, with standard parameters (``ModelFileError``, ``IdentificationError``, ``ValueError`` with
        the reason otherwise)."""
        model = load_model(path, arm)
        check_model(model, arm)
        if model.standard is None:
            raise IdentificationError("it has no standard parameters (identify it with the consistent method)")
        return cls(path, model)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the recordings are identified (the node's parameters of these names)."""

    cutoff_hz: float
    max_command_delay: float  # [s]
    method: str
    structure: str
    nominal_model: str  # '' = the nominal model of the arm description
    calibration_holdout: float


def new_run_directory(root: Path) -> Path:
    """A new folder for an experiment's files in ``root``, named by the local time (``-1``, ``-2``, ...
    if taken); ``OSError`` if none can be made."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for k in range(100):
        directory = root / (stamp if k == 0 else f"{stamp}-{k}")
        try:
            directory.mkdir(parents=True)
            return directory
        except FileExistsError:
            continue
    raise OSError(f"cannot find a free folder name for {stamp} in {root}")


def plan_excitation(arm: ArmDescription, path: Path, config: SessionConfig, validation: Trajectory | None,
                    pilot_config: SessionConfig, pilot_slowdown: float) -> ExcitationPlan:
    """The identification of the excitation file ``path`` under ``config``, checked as a session would
    run it with the ``validation`` trajectory (and, for ``pilot_slowdown`` > 0, the pilot pass of
    the excitation that many times slower under ``pilot_config``); ``ValueError`` (a
    ``TrajectoryFileError`` for the file, ``SessionRefused`` for the limits) with the reason otherwise."""
    loaded = load_trajectory(path, arm.joint_names, arm)
    probe = ExcitationSession(arm, loaded.trajectory, config, validation)
    pilot = slowed(loaded.trajectory, pilot_slowdown) if pilot_slowdown > 0.0 else None
    if pilot is not None:
        ExcitationSession(arm, pilot, pilot_config)
    return ExcitationPlan(path, loaded.trajectory, loaded.design, config, pilot, probe.stop_time_bound())


def identify_recording(directory: Path, session: ExcitationSession, arm: ArmDescription, settings: Settings,
                       plan: ExcitationPlan, validation_file: Path | None, interface: str) -> Any:
    """Identify the recording in ``directory`` of ``session`` (driving ``plan``), validate on its
    held-out motion, write ``parameters.yaml`` and the report there (friction and velocity source
    chosen as ``identify``'s ``auto``); the experiment's run."""
    data = load_dataset(directory / "recording.csv", arm.n_joints)
    run = identify_experiment(data, session.segments(), arm, options=ProcessingOptions(cutoff_hz=settings.cutoff_hz),
                              excitation=plan.trajectory, max_delay=settings.max_command_delay,
                              method=settings.method, structure=settings.structure,
                              baseline=settings.nominal_model or None, progress=session.progress_bar,
                              eps_candidates=EPS_CANDIDATES, term_candidates=TERM_CANDIDATES,
                              velocity_candidates=VELOCITY_SOURCES)
    write_results(
        run, directory / "parameters.yaml",
        f"Identified by the identification node ({run.result.method}) from {directory / 'recording.csv'}",
        report=directory / "report",
        summary={"data": [str(directory / "recording.csv")], "excitation_file": str(plan.path),
                 "validation_file": str(validation_file) if session.validation is not None else None,
                 "command_interface": interface},
        report_extra={"session": session.describe()})
    return run


def identify_pilot(directory: Path, session: ExcitationSession, arm: ArmDescription,
                   settings: Settings) -> tuple[DynamicModel | None, str]:
    """The pilot pass's model from ``pilot_recording.csv`` (:func:`~.effort.pilot_model`) and its line."""
    data = load_dataset(directory / "pilot_recording.csv", arm.n_joints)
    return pilot_model(data, session.segments(), arm, settings.structure, settings.method,
                       ProcessingOptions(cutoff_hz=settings.cutoff_hz))


def recalibrate_recording(directory: Path, session: ExcitationSession, arm: ArmDescription, settings: Settings,
                          target: ModelToUpdate, excitation: Trajectory) -> Calibration:
    """Recalibrate ``target`` on the recorded ``excitation`` in ``directory`` (as ``youbot-dynamics
    calibrate``: the model file's processing), write the updated model and its report there. An
    update the controllers would refuse is not written (:class:`IdentificationError`)."""
    data = load_dataset(directory / "recording.csv", arm.n_joints)
    segments = session.segments()
    start = segments["start"] + excitation_delay(data, excitation, segments["start"], settings.max_command_delay)
    k = segments["identification_periods"]
    cut = periodic_cut(data, start, segments["period"], k, f"recalibration: {k} period{'s' if k > 1 else ''}")
    block = identification_block(target.path)
    options = processing_options(block)
    result = calibrate(target.model, [cut], arm, options=options, holdout=settings.calibration_holdout)
    problems = consistency_problems(result, arm)
    if problems:
        raise IdentificationError(f"the updated model is physically inconsistent and was not written: "
                                  f"{'; '.join(problems)}")
    write_calibration(result, directory / "parameters.yaml",
                      f"Recalibrated by the identification node from {target.path} on {directory / 'recording.csv'}",
                      block, str(target.path), [str(directory / "recording.csv")], report=directory / "report",
                      report_extra={"processing": dataclasses.asdict(options), "session": session.describe()})
    return result


def identification_summary(run: Any, written: Path) -> dict[str, Any]:
    """The figures of an identification the node reports (``~/progress`` when done, the action's
    result): relative errors on moving rows (held-out: a different motion), the nominal model's, per
    joint, the condition number, the samples, the model file."""
    same = run.summary.get("same_motion")
    return {"relative_error": run.identified.overall, "held_out": run.summary["held_out"],
            **({"same_motion_relative_error": same["relative_error"]} if same else {}),
            "nominal_relative_error": run.baseline.overall,
            "joint_relative_errors": run.identified.relative_rms.tolist(),
            "nominal_joint_relative_errors": run.baseline.relative_rms.tolist(),
            "condition_number": run.result.condition_number, "n_samples": run.result.n_samples,
            "parameters": str(written)}


def calibration_summary(run: Calibration, written: Path, source: Path) -> dict[str, Any]:
    """The figures of a recalibration (held-out moving rows where held out, new and old model)."""
    errors = run.held_out if run.held_out is not None else run.all_data
    return {"relative_error": errors["after"].moving, "previous_relative_error": errors["before"].moving,
            "payload_mass_kg": run.payload_mass, "update": run.update, "calibrated_model": str(source),
            "parameters": str(written)}


def payload_in_tool(run: Calibration, arm: ArmDescription) -> tuple[float, np.ndarray] | None:
    """A recalibration's payload change as a point mass [kg] and its centre of mass in the tool frame
    [m] (from the last DH frame), None unless it added mass."""
    if not run.payload_mass > 0.0:
        return None
    tool = arm.tool
    return float(run.payload_mass), tool[:3, :3].T @ (np.asarray(run.payload_com, dtype=float) - tool[:3, 3])
