"""The identification experiment's recording -> identified model and its errors, named for what they are.

An experiment (:mod:`.session`) drives the excitation ``periods`` times, then the validation
trajectory ``validation_repeats`` times, from one start pose, all in one recording. Here
(:func:`identify_experiment`):

* the drives' delay is found on the excitation's first period (:func:`~..estimation.pipeline.excitation_delay`)
  and applies to the whole plan (one stream of commands);
* the first ``identification_periods`` periods identify (averaged when there are at least two), with
  the friction sweep (not averaged) when the experiment drove one: the probe of another character
  the friction structure is chosen on (:func:`~..estimation.friction_fit.folds`);
* **held-out error**: the model's error on the validation trajectory, a motion with other harmonics
  and phases that the fit never saw (:data:`HELD_OUT`);
* **same-motion error**: on the last ``validation_periods`` periods of the excitation. They were not
  fitted, but they repeat the fitted motion: on a robot unlike the model this error is several times
  smaller than the error on another motion (issue 31: 1.6 % same-motion, 8.6 % on a different motion).
  It is reported as :data:`SAME_MOTION`, never as held-out;
* without a validation trajectory the same-motion periods validate (labelled so), without either
  the fit is validated in-sample (labelled so by :func:`~..estimation.pipeline.identify`).

The summary (model file, ``report.json``) gets ``segments``, ``held_out`` (what the validation
figures are: ``different motion``, ``same motion`` or ``in-sample``) and ``same_motion`` (its errors).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ...arm.description import ArmDescription
from ..estimation.pipeline import PipelineResult, excitation_delay, identify, periodic_cut, predict_recording
from ..estimation.processing import ProcessingOptions
from ..io.dataset import Dataset

__all__ = ["HELD_OUT", "SAME_MOTION", "identify_experiment", "experiment_lines"]

#: what the validation figures are when the validation trajectory was recorded
HELD_OUT = "held-out data: a different motion (the validation trajectory, never fitted)"
#: what they are when only later periods of the excitation were (not fitted, but the fitted motion)
SAME_MOTION = "same-motion data (later periods of the fitted excitation: not held-out)"


def _plural(k: int) -> str:
    return f"{k} period{'s' if k > 1 else ''}"


def identify_experiment(data: Dataset, segments: dict[str, Any], arm: ArmDescription, *,
                        options: ProcessingOptions = ProcessingOptions(), excitation: Any, max_delay: float = 0.3,
                        **kwargs: Any) -> PipelineResult:
    """Identify and validate on an experiment's recording (module docstring). ``segments``:
    :meth:`.session.ExcitationSession.segments` (stamp clock); ``excitation`` the excitation
    (for the delay); ``kwargs`` go to :func:`~..estimation.pipeline.identify`."""
    delay = excitation_delay(data, excitation, segments["start"], max_delay)
    start, period = segments["start"] + delay, segments["period"]
    k, v, r = (int(segments[key]) for key in ("identification_periods", "validation_periods", "validation_repeats"))
    train = [periodic_cut(data, start, period, k, f"identification: {_plural(k)}")]
    same = periodic_cut(data, start + k * period, period, v, f"same motion: {_plural(v)}") if v else None
    other = (periodic_cut(data, segments["validation_start"] + delay, segments["validation_period"], r,
                          f"held out, a different motion: {_plural(r)}") if r else None)
    sweep_duration = float(segments.get("sweep_duration", 0.0))
    probes = [periodic_cut(data, segments["sweep_start"] + delay, sweep_duration, 1, "friction sweep")] \
        if sweep_duration > 0 else []
    options = dataclasses.replace(options, period=period if k >= 2 else None)
    held = [other] if other is not None else [same] if same is not None else []
    run = identify(train, held, arm, options=options, probes=probes, **kwargs)
    kind = "different motion" if other is not None else "same motion" if same is not None else "in-sample"
    if held:
        label = HELD_OUT if other is not None else SAME_MOTION
        run = dataclasses.replace(run, validated_on=label)
        run.summary["errors_on"] = label
    run.summary["held_out"] = kind
    run.summary["segments"] = {"start": start, "delay": delay, "period": period, "identification_periods": k,
                               "validation_periods": v, "validation_start": segments["validation_start"] + delay,
                               "validation_period": segments["validation_period"], "validation_repeats": r,
                               **({"sweep_start": segments["sweep_start"] + delay, "sweep_duration": sweep_duration}
                                  if probes else {})}
    if same is not None:
        errors = run.identified if other is None else predict_recording(run.model, same, arm, run.options)[2]
        run.summary["same_motion"] = {"what": SAME_MOTION, "relative_error": errors.overall,
                                      "joint_relative_errors": [float(e) for e in errors.relative_rms],
                                      "joint_rms_errors_nm": [float(e) for e in errors.rms],  # collision thresholds
                                      "moving_relative_error": errors.moving}
    return run


def experiment_lines(run: PipelineResult) -> list[str]:
    """What the figures of :func:`identify_experiment` are, in words (after the validation table)."""
    kind = run.summary.get("held_out")
    same = run.summary.get("same_motion")
    lines = []
    if kind == "different motion":
        lines.append(f"held-out error (the validation trajectory, a motion never fitted): "
                     f"{100 * run.identified.overall:.3g}%")
    elif kind == "same motion":
        lines.append("no validation trajectory: the errors above are on later periods of the fitted motion "
                     "(same-motion, not held-out)")
    if same is not None and kind == "different motion":
        joints = ", ".join(f"{100 * e:.3g}" for e in same["joint_relative_errors"])
        lines.append(f"same-motion error (later periods of the fitted excitation, not held-out): "
                     f"{100 * same['relative_error']:.3g}% (joints {joints} %)")
    return lines
