"""The identification pipeline shared by ``identify`` (command line) and the identification node:
recordings -> processed observations -> estimate -> validation -> parameter file and report.

* :func:`identify` processes the identification datasets (period averaging when
  ``options.period`` is set) and the held-out datasets (never averaged), estimates the base
  parameters, and validates them and the baseline (the nominal model, or a model file's
  parameters) on the held-out data, else, marked as such, on the identification data.
* :func:`write_results` writes the model file (with the relative standard deviations and the
  ``identification`` summary) and, optionally, the report folder (``report.json``, plots).
* :func:`summary_lines` is the validation table that ``identify`` prints and the node logs, ending
  with :func:`consistency_warning` when the identified model fails the check that ``predict`` and
  the controllers apply (:mod:`..dynamics.consistency`; also in the summary as ``consistency``).
* :func:`excitation_delay` finds when the drives actually started a periodic excitation (the
  trajectory message arrives late on a busy machine).
* :func:`periodic_cut` takes whole periods out of a recording (the node's identification and
  validation segments), resampled by linear interpolation onto a grid of exactly
  ``round(period / dt)`` samples per period, so
  that period averaging (:func:`~.processing.average_periods`) applies to data stamped by a
  jittery clock (1 kHz joint states stamped with the publisher's wall clock have a median step
  of e.g. 0.9987 ms, which would make an 8 s period a fractional number of samples).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...contract.topics import JOINT_STATES
from ...dynamics.consistency import ModelReport, assess_model, check_model, plausibility
from ...dynamics.friction import FrictionModel
from ...dynamics.model import DynamicModel
from ..io.dataset import Dataset, IdentificationError, check_plausible
from .least_squares import PRIOR_WEIGHT, UNDETERMINED_RELATIVE_STD, IdentificationResult, estimate
from .processing import Observation, ProcessingOptions, process
from .validation import TorqueErrors, torque_errors, validate

__all__ = ["PipelineResult", "reference_models", "observations", "default_friction", "identify", "choose_prior_weight",
           "cross_validation", "load_recordings", "predict_recording", "processing_options", "excitation_delay",
           "write_results", "summary_lines", "undetermined_lines", "undetermined_friction",
           "undetermined_friction_lines", "friction_lines",
           "consistency_warning", "periodic_cut"]

Array = NDArray[np.float64]
# progress(label) -> a callable taking a fraction in [0, 1] and with a done() -> seconds (report.ProgressBar)
ProgressFactory = Callable[[str], Any]


class _Silent:
    """A progress bar that shows nothing (the default of :func:`identify`)."""

    def __init__(self, label: str) -> None:
        self._start = time.perf_counter()

    def __call__(self, fraction: float) -> None:
        pass

    def done(self) -> float:
        return time.perf_counter() - self._start


@dataclass(frozen=True)
class PipelineResult:
    """Everything :func:`identify` found: the estimate, the errors of the identified and the
    baseline model (``errors["identified"]``, ``errors["baseline"]``), on which data
    (``validated_on``), the observations, the identified model and its consistency check."""

    result: IdentificationResult
    errors: dict[str, TorqueErrors]
    held_out: bool
    validated_on: str
    train: list[Observation]
    checked: list[Observation]
    model: DynamicModel
    baseline_beta: Array
    baseline_label: str
    options: ProcessingOptions
    estimation_time: float
    consistency: ModelReport
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def identified(self) -> TorqueErrors:
        return self.errors["identified"]

    @property
    def baseline(self) -> TorqueErrors:
        return self.errors["baseline"]

    @property
    def gain_over_baseline(self) -> float:
        """Baseline over identified overall relative error (how much identification gained)."""
        return self.baseline.overall / self.identified.overall if self.identified.overall > 0 else math.inf


def reference_models(arm: ArmDescription, structure: str = "full",
                     baseline: str | Path | DynamicModel | None = None) -> tuple[DynamicModel, Any, Array, str]:
    """``(nominal, prior, baseline_beta, baseline_label)``: the nominal model (its regressor and
    base parameters are what gets identified), its standard vector (the prior of the consistent
    estimator), and the baseline's base parameters: the nominal model's, or those of a model file
    / model given as ``baseline``, which must have the same base parameters and pass the consistency
    check (:func:`~..dynamics.consistency.check_model`: the identification node drives the arm with it)."""
    from ...dynamics.nominal import nominal_model
    from ...dynamics.paramfile import load_model

    nominal, prior = nominal_model(arm, structure)
    if baseline is None or baseline == "":
        return nominal, prior, nominal.beta, "nominal model (arm description)"
    model = baseline if isinstance(baseline, DynamicModel) else load_model(baseline, arm)
    check_model(model, arm)
    if tuple(model.base.names) != tuple(nominal.base.names):
        raise IdentificationError(f"baseline model {baseline}: its base parameters ({model.base.count}, structure "
                                  f"{model.base.structure}) differ from those identified ({nominal.base.count}, "
                                  f"structure {structure})")
    label = "baseline model" if isinstance(baseline, DynamicModel) else f"baseline model {baseline}"
    return nominal, prior, model.beta, label


def observations(datasets: Sequence[Dataset], model: DynamicModel, options: ProcessingOptions,
                 progress: ProgressFactory = _Silent, load_model: DynamicModel | None = None) -> list[Observation]:
    """Each dataset processed on its own (:func:`~.processing.process`; ``load_model``: the gravity
    that load-dependent friction scales with)."""
    out = []
    for data in datasets:
        bar = progress(f"processing {Path(data.source).name}")
        out.append(process(data, model, options, progress=bar, load_model=load_model))
        bar.done()
    return out


def default_friction(arm: ArmDescription, structure: str) -> FrictionModel:
    """The friction :func:`identify` starts from (and fits when given no candidates to choose among):
    :meth:`~..dynamics.friction.FrictionModel.real_arm` (smooth and load-dependent Coulomb) for the
    full structure, nothing otherwise."""
    return FrictionModel.real_arm(arm.n_joints) if structure == "full" else FrictionModel.seed(arm.n_joints)


LOAD_ITERATIONS = 3  # estimates of load-dependent friction, each with the previous estimate's G(q)


def identify(train: Sequence[Dataset], held: Sequence[Dataset], arm: ArmDescription, *, method: str = "wls",
             structure: str = "full", options: ProcessingOptions = ProcessingOptions(),
             baseline: str | Path | DynamicModel | None = None, progress: ProgressFactory = _Silent,
             friction: FrictionModel | None = None, eps_candidates: Sequence[float] | None = None,
             term_candidates: Sequence[Sequence[str]] | None = None,
             prior_weights: Sequence[float] | None = None,
             velocity_candidates: Sequence[str] | None = None, probes: Sequence[Dataset] = ()) -> PipelineResult:
    """Identify from ``train`` and validate on ``held`` (module docstring). ``options.period``
    averages the identification data only; the held-out data are processed without it.
    ``friction``: the friction model to fit (default :func:`default_friction`). Load-dependent
    friction ``fl |G(q)| s(q')`` is bilinear in the parameters: it is estimated
    :data:`LOAD_ITERATIONS` times, the load of each pass from the previous estimate (the first from
    the nominal model), and the model is validated with its own ``G(q)``. With ``eps_candidates``
    (Coulomb shapes) and/or ``term_candidates`` (sets of extra terms) the friction structure is
    chosen per joint among them by validation on identification data left out
    (:func:`~.friction_fit.select_friction`: other recordings, or the other half of a single one;
    never the held-out data; after a first estimate with ``friction``, whose ``eps`` or terms are
    kept where no candidates are given; the summary's ``friction_selection``). With
    ``velocity_candidates`` too (:data:`~.processing.VELOCITY_SOURCES`) the friction structure is
    chosen under each source of ``q'`` and the source whose choice predicts the left-out data best is
    kept in the options (the summary's ``velocity_selection``, and ``processing``, which ``predict``
    follows). With ``prior_weights``
    (consistent method, at least two recordings) the weight ``rho`` of the pull towards the CAD
    inertials is chosen among them by leave one recording out (:func:`choose_prior_weight`; the
    summary's ``prior_weight``). ``probes``: identification recordings of another character than
    ``train`` (the experiment's friction sweep), fitted with it but never period-averaged, and the data
    the friction structure is chosen on (:func:`~.friction_fit.folds`)."""
    if not train:
        raise IdentificationError("no identification data")
    for data in (*train, *probes, *held):  # positions in degrees and the like: refused before any work
        check_plausible(data, arm)
    nominal, prior, baseline_beta, label = reference_models(arm, structure, baseline)
    friction = default_friction(arm, structure) if friction is None else friction
    fitted = DynamicModel(nominal.chain, nominal.base, nominal.beta, friction_model=friction,
                          friction_parameters=np.zeros(friction.extra_count))
    load_model = fitted
    estimation_time = 0.0
    selection: dict[str, Any] | None = None
    velocity_selection: dict[str, float] | None = None
    if (eps_candidates or term_candidates) and structure == "full":
        bar = progress("choosing the friction structure")
        sources = list(velocity_candidates or [options.velocity])
        if not any(d.dq is not None for d in train):
            sources = sources[:1]  # no recorded velocity: every source is the positions'
        choices = {source: _choose_friction(train, probes, nominal, prior, fitted, friction, dataclasses.replace(
            options, velocity=source), arm, eps_candidates, term_candidates, progress) for source in sources}
        if len(choices) > 1:
            velocity_selection = {source: c[1].get("chosen_moving_relative_error", math.inf)
                                  for source, c in choices.items()}
        source = min(velocity_selection, key=velocity_selection.get) if velocity_selection else sources[0]
        options = dataclasses.replace(options, velocity=source)  # the final fit processes as the choice did
        friction, selection, load_model = choices[source]
        estimation_time += bar.done()
        fitted = DynamicModel(nominal.chain, nominal.base, nominal.beta, friction_model=friction,
                              friction_parameters=np.zeros(friction.extra_count))
    rho = float(prior_weights[0]) if prior_weights and len(prior_weights) == 1 else PRIOR_WEIGHT
    weights: dict[str, float] | None = None
    for _ in range(LOAD_ITERATIONS if friction.uses_load else 1):
        train_obs = _train_observations(train, probes, fitted, options, progress, load_model)
        bar = progress(f"estimating ({method})")
        result = estimate(method, train_obs, nominal.base, prior, friction.extra_names(), rho)
        estimation_time += bar.done()
        load_model = fitted.with_parameters(result.beta)
    if prior_weights and len(prior_weights) > 1 and method == "consistent" and len(train_obs) >= 2:
        bar = progress("choosing the prior weight")
        rho, weights = choose_prior_weight(train_obs, nominal, prior, friction, prior_weights)
        result = estimate(method, train_obs, nominal.base, prior, friction.extra_names(), rho)
        estimation_time += bar.done()
    model = fitted.with_parameters(result.beta, standard=result.standard)
    baseline_beta = np.concatenate([baseline_beta, np.zeros(friction.extra_count)])
    held_obs = observations(held, fitted, dataclasses.replace(options, period=None), progress, model)
    if not held_obs and friction.uses_load:  # validate with the model's own load
        train_obs = _train_observations(train, probes, fitted, options, progress, model)
    checked = held_obs or train_obs
    errors = validate(checked, result.beta, baseline_beta)
    on = "validation data" if held_obs else "identification data (no held-out data: in-sample fit)"
    summary = {
        "method": result.method, "condition_number": result.condition_number, "n_samples": result.n_samples,
        "errors_on": on, "relative_error": errors["identified"].overall,
        "nominal_relative_error": errors["baseline"].overall,
        "joint_relative_errors": [float(v) for v in errors["identified"].relative_rms],
        "joint_rms_errors_nm": [float(v) for v in errors["identified"].rms],  # collision thresholds' scale
        "nominal_joint_relative_errors": [float(v) for v in errors["baseline"].relative_rms],
        "moving_relative_error": errors["identified"].moving, "rest_relative_error": errors["identified"].rest,
        "speed_band_relative_errors": errors["identified"].to_dict().get("speed_bands_relative"),
        "nominal_moving_relative_error": errors["baseline"].moving,
        "friction": {**friction.to_dict(), "description": friction.describe()},
        "processing": dataclasses.asdict(options),
        **({"prior_weight": {"chosen": rho, "cross_validated_moving_error": weights}} if weights else {}),
        **({"friction_selection": selection} if selection is not None else {}),
        **({"velocity_selection": {"chosen": options.velocity, "moving_relative_error": velocity_selection}}
           if velocity_selection is not None else {}),
        "baseline": label,
    }
    if len(train_obs) >= 2:
        summary["cross_validation"] = cross_validation(train_obs, method, nominal, prior, friction, rho)
    summary["friction_not_determined"] = undetermined_friction(result, np.concatenate([nominal.beta, np.zeros(
        friction.extra_count)]))
    consistency = assess_model(model, arm)  # reported, never refused: the estimate is what the data say
    summary["consistency"] = consistency.to_dict()
    if result.standard is not None:  # masses and centres of mass against the CAD model's
        summary["plausibility"] = plausibility(result.standard, prior)
    return PipelineResult(result, errors, bool(held_obs), on, train_obs, checked, model, np.asarray(baseline_beta),
                          label, options, estimation_time, consistency, summary)


def _train_observations(train: Sequence[Dataset], probes: Sequence[Dataset], model: DynamicModel,
                        options: ProcessingOptions, progress: ProgressFactory,
                        load_model: DynamicModel | None) -> list[Observation]:
    """The identification observations: ``train`` processed with ``options`` (period-averaged when
    it has a period), the ``probes`` without period averaging."""
    return (observations(train, model, options, progress, load_model)
            + observations(probes, model, dataclasses.replace(options, period=None), progress, load_model))


def _choose_friction(train: Sequence[Dataset], probes: Sequence[Dataset], nominal: DynamicModel, prior: Any,
                     fitted: DynamicModel,
                     friction: FrictionModel, options: ProcessingOptions, arm: ArmDescription,
                     eps_candidates: Sequence[float] | None, term_candidates: Sequence[Sequence[str]] | None,
                     progress: ProgressFactory) -> tuple[FrictionModel, dict[str, Any], DynamicModel]:
    """The friction structure :func:`identify` chooses with ``options`` (after a first WLS estimate with
    ``friction``, whose ``G(q)`` is the load of load-dependent friction), its selection record and
    that first estimate; ``friction`` kept, and why, when the data cannot be split for the choice."""
    from .friction_fit import STRIBECK_VELOCITY_CANDIDATES, select_friction

    first = estimate("wls", _train_observations(train, probes, fitted, options, progress, None), nominal.base,
                     prior, friction.extra_names())
    load_model = DynamicModel(nominal.chain, nominal.base, first.beta[: nominal.base.count])  # its G(q)
    shapes = [(float(e),) * arm.n_joints for e in eps_candidates] if eps_candidates else [friction.eps]
    try:
        chosen, selection = select_friction(train, load_model, options, shapes, term_candidates or [friction.terms],
                                            friction.stribeck_velocity, probes, STRIBECK_VELOCITY_CANDIDATES)
    except IdentificationError as exc:  # e.g. halves too short: keep the given structure, say why
        chosen, selection = friction, {"skipped": str(exc), "chosen": friction.describe()}
    return chosen, selection, load_model


def choose_prior_weight(observations: Sequence[Observation], nominal: DynamicModel, prior: Any,
                        friction: FrictionModel, candidates: Sequence[float]) -> tuple[float, dict[str, float]]:
    """The consistent estimator's prior weight among ``candidates`` with the smallest mean
    leave-one-recording-out error on moving rows (:func:`cross_validation`), and each one's error.
    On the real arm (issue 13) the CAD inertials are far from the arm: rho 1e-3, 1, 30 and 300 gave
    27.8, 25.6, 33.5 and 71.1 % (three folds)."""
    errors = {}
    for rho in candidates:
        errors[f"{rho:g}"] = cross_validation(observations, "consistent", nominal, prior, friction,
                                              rho)["mean_moving_relative_error"]
    best = min(errors, key=errors.get)
    return float(best), errors


def cross_validation(observations: Sequence[Observation], method: str, nominal: DynamicModel, prior: Any,
                     friction: FrictionModel, prior_weight: float = PRIOR_WEIGHT) -> dict[str, Any]:
    """Leave one recording out on the identification data: each observation predicted by the
    estimate of the others (same method and friction model; the load of load-dependent friction is
    the last pass's, as in the final estimate). Relative errors on moving and all rows."""
    folds = []
    for k, held in enumerate(observations):
        result = estimate(method, [o for i, o in enumerate(observations) if i != k], nominal.base, prior,
                          friction.extra_names(), prior_weight)
        errors = validate([held], result.beta)["identified"]
        folds.append({"held_out": held.source, "moving_relative_error": errors.moving,
                      "relative_error": errors.overall})
    return {"folds": folds, "mean_moving_relative_error": float(np.mean([f["moving_relative_error"] for f in folds])),
            "mean_relative_error": float(np.mean([f["relative_error"] for f in folds]))}


def load_recordings(paths: Sequence[str | Path], arm: ArmDescription, topic: str = JOINT_STATES
                    ) -> tuple[list[Dataset], list[dict[str, Any]]]:
    """Real logs as ``identify``, ``calibrate`` and ``predict --recording`` read them
    (:func:`~..io.recordings.load_recording`: CSV whatever its name, or a bag; repeated stamps and stale
    repeated rows dropped and counted, split at gaps): every piece of every file, and one log per
    file of what was done (for ``report.json``)."""
    from ..io.recordings import load_recording

    datasets, logs = [], []
    for path in paths:
        recording = load_recording(path, arm.n_joints, arm.joint_names, topic)
        datasets += recording.segments
        logs.append(recording.log)
    return datasets, logs


def predict_recording(model: DynamicModel, data: Dataset, arm: ArmDescription,
                      options: ProcessingOptions = ProcessingOptions()) -> tuple[Observation, Array, TorqueErrors]:
    """``(observation, predicted torques, errors)`` of ``model`` on a raw recording, processed exactly
    as :func:`identify` processes its held-out data (the same ``options`` without period
    averaging; load-dependent friction from the model's own ``G(q)``), so that the errors are the
    figure :func:`identify` reports for that recording."""
    check_plausible(data, arm)
    observation = process(data, model, dataclasses.replace(options, period=None), load_model=model)
    tau_hat = observation.Y @ model.parameters
    return observation, tau_hat, torque_errors(observation.tau, tau_hat, observation.used, observation.dq)


def processing_options(summary: Any, **overrides: Any) -> ProcessingOptions:
    """The processing options recorded in a model file's ``identification`` block (defaults where
    absent), with the ``overrides`` that are not ``None`` (a command line's options)."""
    recorded = summary.get("processing", {}) if isinstance(summary, dict) else {}
    fields = {f.name for f in dataclasses.fields(ProcessingOptions)}
    options = {k: v for k, v in recorded.items() if k in fields and k != "period"}
    options.update({k: v for k, v in overrides.items() if v is not None})
    return ProcessingOptions(**options)


def excitation_delay(data: Dataset, reference: Any, start: float, max_delay: float, *, min_delay: float = -0.05,
                     step: float = 0.001, spacing: float = 0.01) -> float:
    """The delay ``d`` [s] in ``[min_delay, max_delay]`` (grid ``step``) at which the recorded
    motion best matches one period of the excitation ``reference`` (anything with ``duration``
    and ``evaluate(t) -> (q, q', q'')``) commanded from ``start``: the smallest RMS of
    ``q(start + d + tau) - q_ref(tau)`` over ``tau`` in ``[0, T)`` (every ``spacing`` s). The
    drives start a trajectory message when it arrives, a little after the node sent it."""
    period = float(reference.duration)
    tau = np.arange(0.0, period, spacing)
    q_ref = reference.evaluate(tau)[0]  # (m, n)
    delays = np.arange(min_delay, max_delay + 0.5 * step, step)
    t = start + delays[:, None] + tau[None, :]  # (D, m)
    if t.min() < data.t[0] or t.max() > data.t[-1]:
        raise IdentificationError(f"{data.source}: the recording does not cover the excitation's first period "
                                  f"from {start:.6f} s (with delays up to {max_delay:g} s)")
    cost = np.zeros(delays.size)
    for j in range(q_ref.shape[1]):
        q = np.interp(t.ravel(), data.t, data.q[:, j]).reshape(t.shape)
        cost += ((q - q_ref[:, j]) ** 2).sum(axis=1)
    return float(delays[int(np.argmin(cost))])


def write_results(run: PipelineResult, out: str | Path, description: str, *, report: str | Path | None = None,
                  summary: dict[str, Any] | None = None, report_extra: dict[str, Any] | None = None,
                  title: str | None = None) -> list[Path]:
    """Write the model file ``out`` (module docstring; ``summary`` is added to its
    ``identification`` block) and, with ``report``, ``report.json`` (``report_extra`` added) and
    the plots into that folder. Returns the paths written."""
    from ...dynamics.paramfile import save_model
    from ..io.report import plot_torques, write_json

    result = run.result
    full_summary = {**run.summary, **(summary or {})}
    out = Path(out)
    save_model(out, run.model, description, standard=result.standard, relative_std=result.relative_std_percent,
               identification=full_summary)
    written = [out]
    if report is not None:
        directory = Path(report)
        directory.mkdir(parents=True, exist_ok=True)
        y = np.concatenate([o.Y for o in run.checked])
        heading = title or f"{result.method.upper()} on {'validation' if run.held_out else 'identification'} data"
        predictions = {"identified": y @ result.beta, "nominal": y @ run.baseline_beta}
        written += plot_torques(directory, run.checked, predictions, heading)
        doc = {
            "summary": full_summary,
            "processing": dataclasses.asdict(run.options),
            "processed": {"identification": [o.describe() for o in run.train],
                          "validation": [o.describe() for o in run.checked] if run.held_out else "identification data"},
            "estimation": result.to_dict() | {"time_s": run.estimation_time},
            "validation": {"on": run.validated_on, "identified": run.identified.to_dict(),
                           "nominal": run.baseline.to_dict(), "baseline": run.baseline_label},
            "torque_noise_from_period_averaging": [None if o.torque_noise is None else o.torque_noise.tolist()
                                                   for o in run.train],
            **(report_extra or {}),
        }
        write_json(directory / "report.json", doc)
        written.append(directory / "report.json")
    return written


def summary_lines(run: PipelineResult, parameters: bool = False) -> list[str]:
    """The validation table (per joint RMS and relative errors, identified and baseline, and the
    overall relative error); with ``parameters`` the table of estimated values first."""
    result, ident, base = run.result, run.identified, run.baseline
    lines = []
    if parameters:
        width = max(len(n) for n in result.names)
        lines.append(f"{'parameter':{width}s}  {'value':>14s}  {'rel. std':>9s}")
        for name, value, rel in zip(result.names, result.beta, result.relative_std_percent):
            lines.append(f"{name:{width}s}  {value:14.6g}  {rel:8.3g}%")
    lines.append(f"{result.method}: {result.n_rows} equations from {result.n_samples} samples, condition number "
                 f"{result.condition_number:.4g}")
    if result.unidentifiable:
        lines.append(f"not determined by the data (kept near the nominal values): {', '.join(result.unidentifiable)}")
    lines += undetermined_lines(result)
    lines += undetermined_friction_lines(run.summary.get("friction_not_determined", []))
    lines += friction_lines(run.summary.get("friction_selection"))
    velocity = run.summary.get("velocity_selection")
    if velocity:
        errors = ", ".join(f"{k} {100 * v:.3g}%" for k, v in velocity["moving_relative_error"].items())
        lines.append(f"joint velocities from: {velocity['chosen']} (chosen with the friction structure, left-out "
                     f"data, moving rows: {errors})")
    lines.append(f"torque errors on {run.validated_on}:")
    lines.append("joint  rms [N m]  relative  nominal relative")
    for j, (rms, rel, nrel) in enumerate(zip(ident.rms, ident.relative_rms, base.relative_rms), start=1):
        lines.append(f"{j:5d}  {rms:9.4g}  {100 * rel:7.3g}%  {100 * nrel:15.3g}%")
    lines.append(f"overall ||tau - tau_hat|| / ||tau||: {100 * ident.overall:.3g}% (nominal model "
                 f"{100 * base.overall:.3g}%)")
    cv = run.summary.get("cross_validation")
    if cv:
        folds = ", ".join(f"{100 * fold['moving_relative_error']:.3g}%" for fold in cv["folds"])
        lines.append(f"leave one recording out ({len(cv['folds'])} identification recordings): moving rows {folds} "
                     f"(mean {100 * cv['mean_moving_relative_error']:.3g}%)")
    if ident.bands is not None:
        lines.append("per speed band of |q'_j| [rad/s], relative error per joint: " + "; ".join(
            f"{label}: " + ", ".join("-" if not math.isfinite(v) else f"{100 * v:.3g}%" for v in values)
            for label, values in ident.bands.items()))
    if math.isfinite(ident.moving):
        lines.append(f"moving rows (|q'_j| >= {run.options.coulomb_threshold:g} rad/s): {100 * ident.moving:.3g}% "
                     f"(nominal model {100 * base.moving:.3g}%); rows at rest: {100 * ident.rest:.3g}%")
    implausible = [f"link {p['link']} (mass {p['mass_kg']:.3g} kg, CAD {p['cad_mass_kg']:.3g} kg; centre of mass "
                   f"{100 * p['com_distance_m']:.3g} cm from the CAD one)"
                   for p in run.summary.get("plausibility", []) if not p["plausible"]]
    if implausible:
        lines.append(f"masses or centres of mass far from the CAD model's (x0.5-x2, 10 cm): {'; '.join(implausible)} "
                     f"(physically consistent, but the data may not tell these links' masses apart)")
    warning = consistency_warning(run)
    return lines + [warning] if warning else lines


def undetermined_lines(result: IdentificationResult) -> list[str]:
    """The parameters the data leave undetermined (relative standard deviation above
    :data:`~.least_squares.UNDETERMINED_RELATIVE_STD`), or that every one is determined."""
    undetermined = result.undetermined
    criterion = (f"relative standard deviation (sigma from the least-squares covariance) above "
                 f"{UNDETERMINED_RELATIVE_STD:g}%")
    if not undetermined:
        return [f"every parameter is determined by the data (none has a {criterion})"]
    torque = dict(zip(result.names, result.torque_std)) if result.torque_std is not None else {}
    listed = ", ".join(f"{name} ({rel:.3g}%"
                       + (f", 1 sigma = {1000 * torque[name]:.2g} mN m" if name in torque else "") + ")"
                       for name, rel in undetermined.items())
    return [f"{len(undetermined)} of {len(result.names)} parameters not determined by the data ({criterion}; "
            f"or their value is within the noise of 0; 1 sigma: the torque change it makes, RMS): {listed}"]


FRICTION_SYMBOLS = ("fv", "fc", "f0", "fa", "fs", "fl")  # the friction parameters' symbols (dynamics.friction)
BOUNDED = ("fv", "fc", "fs", "fl")  # >= 0 in the consistent estimator


def undetermined_friction(result: IdentificationResult, prior: Array) -> list[dict[str, Any]]:
    """The friction parameters the data leave undetermined (:attr:`~.least_squares.IdentificationResult.undetermined`)
    with their value, their prior ``prior`` (base parameters and extra terms: the nominal
    model's friction is 0, no friction known) and where the estimate sits: nowhere the data show (a joint
    that never moved), at its bound 0 (``fv, fc, fs, fl >= 0``), within two sigma of its prior, or
    (weakly) away from it."""
    out = []
    for name in result.undetermined:
        symbol = name.rstrip("0123456789")
        if symbol not in FRICTION_SYMBOLS:
            continue
        k = result.names.index(name)
        value, std, start = float(result.beta[k]), float(result.std[k]), float(prior[k])
        at = ("no value from the data: they do not show it" if name in result.unidentifiable else
              "its bound 0" if symbol in BOUNDED and abs(value) <= max(1e-9, 1e-6 * std) else
              "its prior" if abs(value - start) <= 2.0 * std else "a weakly determined estimate")
        out.append({"name": name, "value": value, "prior": start, "std": std, "at": at,
                    "torque_of_one_std_nm": None if result.torque_std is None else float(result.torque_std[k])})
    return out


def undetermined_friction_lines(entries: Sequence[dict[str, Any]]) -> list[str]:
    """One line naming the friction parameters the data do not determine and what they hold instead."""
    if not entries:
        return []
    listed = ", ".join(f"{e['name']} = {e['value']:.3g} (at {e['at']}; prior {e['prior']:.3g}, 1 sigma {e['std']:.2g})"
                       for e in entries)
    return [f"friction the data do not determine (not measured; where it is lower than a joint's, the "
            f"controllers' stall bound credits the friction the joint shows; a friction sweep, sweep_speeds, "
            f"measures it): {listed}"]


def friction_lines(selection: dict[str, Any] | None) -> list[str]:
    """What the friction selection chose, on which data, and the runner-up (none without a selection)."""
    if not selection:
        return []
    if "skipped" in selection:
        return [f"friction structure not chosen from the data ({selection['skipped']}): {selection['chosen']}"]
    lines = [f"friction structure chosen by its error on left-out identification data, moving rows "
             f"({selection['on']}):", f"  chosen: {selection['chosen']}: "
             f"{100 * selection['chosen_moving_relative_error']:.3g}%"]
    if selection["runner_up"] is not None:
        lower = selection["runner_up_moving_relative_error"] < selection["chosen_moving_relative_error"]
        lines.append(f"  runner-up: {selection['runner_up']}: {100 * selection['runner_up_moving_relative_error']:.3g}%"
                     + (f" (within {100 * selection['tolerance']:g}% of the chosen, with more friction parameters: "
                        f"the simpler is kept)" if lower else ""))
    return lines


def consistency_warning(run: PipelineResult) -> str | None:
    """One line if the identified model fails the consistency check (else None)."""
    if run.consistency.ok:
        return None
    return (f"WARNING: the identified model is physically inconsistent, predict and the controllers will refuse it: "
            f"{'; '.join(run.consistency.problems)} (the consistent method gives a physically consistent estimate)")


# -- segments of a recording ---------------------------------------------------------------------


def _resampled(data: Dataset, t: Array, source: str) -> Dataset:
    def at(x: Array | None) -> Array | None:
        return None if x is None else np.column_stack([np.interp(t, data.t, col) for col in x.T])

    return Dataset(t, at(data.q), at(data.tau), at(data.dq), at(data.ddq), source)


def _check_window(data: Dataset, start: float, stop: float) -> float:
    """The median sampling period; :class:`IdentificationError` unless ``[start, stop]`` lies in the data."""
    dt = data.sample_time
    if not stop > start:
        raise IdentificationError(f"{data.source}: empty segment [{start:.6f}, {stop:.6f}] s")
    if start < data.t[0] - 0.5 * dt or stop > data.t[-1] + 0.5 * dt:
        raise IdentificationError(f"{data.source}: segment [{start:.6f}, {stop:.6f}] s is not inside the recording "
                                  f"[{data.t[0]:.6f}, {data.t[-1]:.6f}] s")
    return dt


def periodic_cut(data: Dataset, start: float, period: float, periods: int, name: str = "segment") -> Dataset:
    """``periods`` whole periods of ``data`` from ``start`` [s], resampled onto a grid of exactly
    ``P = round(period / dt)`` samples per period (step ``period / P``), time starting at 0."""
    if periods < 1:
        raise IdentificationError(f"need at least one period, got {periods}")
    stop = start + period * periods
    dt = _check_window(data, start, stop)
    per_period = max(2, int(round(period / dt)))
    step = period / per_period
    t = start + step * np.arange(per_period * periods)
    out = _resampled(data, np.clip(t, data.t[0], data.t[-1]), f"{data.source} ({name})")
    return Dataset(step * np.arange(per_period * periods), out.q, out.tau, out.dq, out.ddq, out.source)
