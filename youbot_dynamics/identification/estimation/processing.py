"""From a recording to the overdetermined system ``W beta = T`` of seed 002 (3.10).

Steps (the standard practice of Gautier's identification method, which seed 002 §3.2 leaves out):

1. **Uniform sampling.** A jitter up to ``max_jitter`` of the median period is tolerated, larger
   jitter is resampled by linear interpolation onto a uniform grid, a gap longer than
   ``max_gap`` periods is an error (split the recording there).
2. **Period averaging** (periodic excitation with known ``period``): the K whole periods are
   averaged sample by sample, dividing the noise variance by K. The spread of the periods about
   their mean gives the noise of one torque sample, per joint:
   ``sigma_j^2 = sum_k sum_p (tau_kpj - mean_pj)^2 / (P (K - 1))`` (P samples per period).
   It includes any non-repeatability of the motion.
3. **Derivatives**: ``q`` is low-passed (zero-phase Butterworth, ``derivative_cutoff_hz``) and
   differentiated by second-order central differences, twice for ``q''`` (``velocity``
   ``"positions"``, or a recording without velocities); with ``velocity`` ``"recorded"`` the
   recording's own velocities are used and low-passed and differentiated for ``q''``. A drive's
   velocity estimate lags (the real youBot's by about 10 ms): its ``q'`` and ``q''`` then lag the
   torque, which costs more than the differentiation's noise (issue 31: on the foreign robot the
   held-out error fell from 4.5 % to 2.3 %). :data:`VELOCITY_SOURCES`; the pipeline chooses between
   them by validation (:func:`~.pipeline.identify`).
4. **Parallel filtering.** ``tau = Y_b(q, q', q'') beta`` holds sample by sample, so it also holds
   after any linear filter ``F`` applied to both sides: ``F tau = (F Y_b) beta``. The torques and
   every regressor column are low-passed with the same zero-phase Butterworth filter
   (``scipy.signal.sosfiltfilt``, ``cutoff_hz``, ``order``), which removes the torque noise
   above the bandwidth of the motion without biasing beta.
5. **Decimation** by ``k`` (default: the largest keeping at least 4 samples per period of the
   cutoff frequency), after dropping ``3 / cutoff`` seconds at both ends where the filters'
   transients would spoil the differentiated signals (periodic data are padded circularly instead).
6. **Coulomb exclusion.** Friction is not ``fc sign(q')`` near zero velocity (stiction, Stribeck),
   so the rows of joint j at samples with ``|q'_j| < coulomb_threshold`` are left out of the
   estimation (they are kept for validation).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ...dynamics.friction import FrictionModel
from ...dynamics.model import DynamicModel
from ..io.dataset import Dataset, IdentificationError

__all__ = ["MAX_FILTER_ORDER", "VELOCITY_SOURCES", "ProcessingOptions", "Observation", "lowpass", "differentiate",
           "make_uniform", "average_periods", "process", "process_frictions", "stack_rows"]

Array = NDArray[np.float64]
Progress = Callable[[float], None]

MIN_ROWS_PER_PARAMETER = 3
EDGE_PERIODS = 3  # periods of the lowest cutoff dropped at each end: filter transients decay to ~1e-6
# Highest Butterworth order: 4 (the default) already attenuates 80 dB a decade; the filter's design
# and its transient grow with the order (`identify --order 1000000` ran for minutes).
MAX_FILTER_ORDER = 20
#: where ``q'`` comes from: the recording's own velocities (from the positions when it has none), or
#: always the differentiated positions (step 3)
VELOCITY_SOURCES = ("recorded", "positions")


@dataclass(frozen=True)
class ProcessingOptions:
    """Options of :func:`process` (see the module docstring); frequencies in Hz, velocities in rad/s."""

    cutoff_hz: float = 10.0
    order: int = 4
    decimation: int | None = None
    derivative_cutoff_hz: float | None = None  # default: cutoff_hz
    coulomb_threshold: float = 0.05
    period: float | None = None
    max_jitter: float = 0.01
    max_gap: float = 5.0
    velocity: str = "recorded"

    def __post_init__(self) -> None:
        """:class:`IdentificationError` naming an option out of range: integers ``order``,
        ``decimation`` >= 1, ``order`` <= :data:`MAX_FILTER_ORDER`; frequencies, ``period``,
        ``max_jitter``, ``max_gap`` finite and > 0; ``coulomb_threshold`` finite and >= 0; ``velocity``
        one of :data:`VELOCITY_SOURCES`."""
        if self.velocity not in VELOCITY_SOURCES:
            raise IdentificationError(f"processing option velocity: expected one of {', '.join(VELOCITY_SOURCES)}, "
                                      f"got {self.velocity!r}")
        for name in ("order", "decimation"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise IdentificationError(f"processing option {name}: expected a positive integer, got {value!r}")
        if self.order > MAX_FILTER_ORDER:
            raise IdentificationError(f"processing option order: expected at most {MAX_FILTER_ORDER} (Butterworth "
                                      f"order), got {self.order!r}")
        for name in ("cutoff_hz", "derivative_cutoff_hz", "period", "max_jitter", "max_gap", "coulomb_threshold"):
            value = getattr(self, name)
            zero_ok = name == "coulomb_threshold"
            if value is not None and not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
                raise IdentificationError(f"processing option {name}: expected a finite "
                                          f"{'non-negative' if zero_ok else 'positive'} number, got {value!r}")


@dataclass(frozen=True)
class Observation:
    """A processed recording: filtered, decimated base regressor and torques.

    ``Y`` (M, n, b) and ``tau`` (M, n) satisfy ``tau ~ Y beta``; ``used`` (M, n) marks the rows
    that enter the estimation (Coulomb exclusion); ``dq`` (M, n) the velocities at those samples;
    ``torque_noise`` the per-joint noise of one raw torque sample from period averaging, if any.
    """

    t: Array
    Y: Array
    tau: Array
    dq: Array
    used: NDArray[np.bool_]
    sample_rate: float
    decimation: int
    torque_noise: Array | None
    source: str
    resampled: bool = False  # the recording's stamps were irregular: linearly resampled onto a uniform grid

    def describe(self) -> dict[str, object]:
        """What processing did to the recording (for ``report.json``)."""
        return {"source": self.source, "samples": self.n_samples, "sample_rate_hz": self.sample_rate,
                "decimation": self.decimation, "resampled_to_uniform_grid": self.resampled,
                "period_averaged": self.torque_noise is not None}

    @property
    def n_samples(self) -> int:
        return int(self.t.size)


def _check_cutoff(cutoff_hz: float, sample_rate: float) -> None:
    if not 0 < cutoff_hz < sample_rate / 2:
        raise IdentificationError(f"filter cutoff {cutoff_hz:g} Hz must lie between 0 and the Nyquist frequency "
                                  f"{sample_rate / 2:g} Hz of data sampled at {sample_rate:g} Hz")


def lowpass(x: Array, cutoff_hz: float, sample_rate: float, order: int = 4) -> Array:
    """Zero-phase Butterworth low-pass of ``x`` along axis 0 (forward-backward: gain ``|H|^2``, no delay)."""
    from scipy.signal import butter, sosfiltfilt  # imported here: scipy.signal takes 0.7 s to import

    _check_cutoff(cutoff_hz, sample_rate)
    sos = butter(order, cutoff_hz, fs=sample_rate, output="sos")
    return sosfiltfilt(sos, x, axis=0)


def differentiate(x: Array, dt: float) -> Array:
    """Time derivative along axis 0: second-order central differences (one-sided at the ends)."""
    return np.gradient(x, dt, axis=0, edge_order=2)


def make_uniform(data: Dataset, options: ProcessingOptions = ProcessingOptions()) -> Dataset:
    """``data`` on a uniform time grid (see step 1 of the module docstring)."""
    steps = np.diff(data.t)
    dt = float(np.median(steps))
    if np.max(np.abs(steps - dt)) <= options.max_jitter * dt:
        return data
    k = int(np.argmax(steps))
    if steps[k] > options.max_gap * dt:
        raise IdentificationError(f"{data.source}: gap of {steps[k]:.4g} s at t = {data.t[k]:.6g} s (sampling period "
                                  f"{dt:.4g} s): split the recording there")
    t = data.t[0] + dt * np.arange(int(math.floor((data.t[-1] - data.t[0]) / dt + 1e-9)) + 1)

    def resample(x: Array | None) -> Array | None:
        return None if x is None else np.column_stack([np.interp(t, data.t, col) for col in x.T])

    return Dataset(t, resample(data.q), resample(data.tau), resample(data.dq), resample(data.ddq), data.source)


def average_periods(data: Dataset, period: float) -> tuple[Dataset, Array]:
    """One period averaged over the K whole periods of uniform ``data``, and the per-joint noise
    std of one torque sample [N m] (step 2 of the module docstring)."""
    dt = data.sample_time
    p = int(round(period / dt))
    k = data.n_samples // p if p > 0 else 0
    if k < 2:
        raise IdentificationError(f"{data.source}: period averaging needs at least two periods of {period:g} s, the "
                                  f"recording lasts {data.duration + dt:.4g} s")
    if abs(p * dt - period) * k > 0.5 * dt:
        raise IdentificationError(f"{data.source}: the period {period:g} s is not a whole number of samples "
                                  f"(sampling period {dt:.6g} s): the periods would drift apart")

    def periods(x: Array) -> Array:
        return x[: k * p].reshape(k, p, -1)

    tau = periods(data.tau)
    mean = {name: None if getattr(data, name) is None else periods(getattr(data, name)).mean(axis=0)
            for name in ("q", "dq", "ddq")}
    noise = np.sqrt(((tau - tau.mean(axis=0)) ** 2).sum(axis=(0, 1)) / (p * (k - 1)))
    averaged = Dataset(data.t[:p], mean["q"], tau.mean(axis=0), mean["dq"], mean["ddq"],
                       f"{data.source} (averaged over {k} periods)")
    return averaged, noise


def _filter_columns(y: Array, cutoff: float, fs: float, order: int, progress: Progress | None) -> Array:
    """``lowpass`` of every column of ``y`` (N, m) that is not identically zero, in blocks."""
    out = np.zeros_like(y)
    columns = np.flatnonzero(np.any(y != 0.0, axis=0))
    blocks = np.array_split(columns, max(1, columns.size // 16))
    for i, block in enumerate(blocks):
        out[:, block] = lowpass(y[:, block], cutoff, fs, order)
        if progress is not None:
            progress((i + 1) / len(blocks))
    return out


@dataclass(frozen=True)
class _Prepared:
    """A recording after steps 1-3 of the module docstring, ready for its regressor: the states at
    the ``index`` samples (circularly padded when period averaged), the filtered torques and what
    the filters and the decimation need."""

    data: Dataset
    q: Array
    dq: Array
    ddq: Array
    tau: Array  # filtered and decimated
    keep: slice
    fs: float
    decimation: int
    noise: Array | None
    resampled: bool
    t: Array


def _prepare(data: Dataset, n: int, b: int, options: ProcessingOptions) -> _Prepared:
    """Steps 1-3 for a model of ``n`` joints and ``b`` parameters (refused when too short for them)."""
    data.check_joints(n)
    uniform = make_uniform(data, options)
    resampled, data = uniform is not data, uniform
    noise = None
    if options.period is not None:
        data, noise = average_periods(data, options.period)
    fs = 1.0 / data.sample_time
    cutoff = options.cutoff_hz
    d_cutoff = options.derivative_cutoff_hz or cutoff
    for frequency in (cutoff, d_cutoff):
        _check_cutoff(frequency, fs)
    k = options.decimation or max(1, int(math.floor(fs / (4 * cutoff) + 1e-6)))
    if fs / k < 2 * cutoff:
        raise IdentificationError(f"decimation by {k} leaves {fs / k:.4g} Hz, less than twice the filter "
                                  f"cutoff {cutoff:g} Hz: the decimated data would alias")
    edge = int(math.ceil(EDGE_PERIODS * fs / min(cutoff, d_cutoff)))
    # periodic data are padded circularly by `edge`; otherwise `edge` samples are dropped at both ends
    index = np.arange(-edge, data.n_samples + edge) % data.n_samples if noise is not None else np.arange(data.n_samples)
    keep = slice(edge, index.size - edge, k)
    rows = len(range(*keep.indices(index.size))) * n
    need = MIN_ROWS_PER_PARAMETER * b
    if rows < need:
        raise IdentificationError(
            f"{data.source}: too short: {data.duration:.3g} s ({data.n_samples} samples at {fs:.4g} Hz) gives {rows} "
            f"equations after filtering at {cutoff:g} Hz and decimation by {k}; {need} are needed for {b} base "
            f"parameters (record at least {(need / n * k + 2 * edge) / fs:.3g} s)")
    q = data.q[index]
    dt = 1.0 / fs
    recorded = data.dq is not None and options.velocity == "recorded"
    dq = data.dq[index] if recorded else differentiate(lowpass(q, d_cutoff, fs, options.order), dt)
    if recorded and data.ddq is not None:
        ddq = data.ddq[index]
    else:
        ddq = differentiate(lowpass(dq, d_cutoff, fs, options.order) if recorded else dq, dt)
    tau = lowpass(data.tau[index], cutoff, fs, options.order)[keep]
    return _Prepared(data, q, dq, ddq, tau, keep, fs, k, noise, resampled, data.t[index])


def _observation(prep: _Prepared, y: Array, options: ProcessingOptions, progress: Progress | None) -> Observation:
    """The :class:`Observation` of the prepared recording with its unfiltered regressor ``y`` (N, n, b)."""
    count, n, b = y.shape
    y = _filter_columns(y.reshape(count, n * b), options.cutoff_hz, prep.fs, options.order, progress)
    dq = prep.dq[prep.keep]
    return Observation(t=prep.t[prep.keep], Y=y[prep.keep].reshape(-1, n, b), tau=prep.tau, dq=dq,
                       used=np.abs(dq) >= options.coulomb_threshold, sample_rate=prep.fs / prep.decimation,
                       decimation=prep.decimation, torque_noise=prep.noise, source=prep.data.source,
                       resampled=prep.resampled)


def process(data: Dataset, model: DynamicModel, options: ProcessingOptions = ProcessingOptions(),
            progress: Progress | None = None, load_model: DynamicModel | None = None) -> Observation:
    """The :class:`Observation` of ``data`` for ``model``'s parameters (base parameters and the
    friction model's extra terms, :meth:`~..dynamics.model.DynamicModel.full_regressor`; module
    docstring). Load-dependent friction scales with the gravity torque of ``load_model`` (default
    ``model``): identification passes its previous estimate."""
    prep = _prepare(data, model.n_joints, model.parameters.size, options)
    gravity = (load_model or model).gravity(prep.q) if model.friction_model.uses_load else None
    return _observation(prep, model.full_regressor(prep.q, prep.dq, prep.ddq, gravity), options, progress)


def process_frictions(data: Dataset, model: DynamicModel, frictions: Sequence[FrictionModel],
                      options: ProcessingOptions = ProcessingOptions(),
                      load_model: DynamicModel | None = None) -> list[Observation]:
    """:func:`process` of ``data`` for ``model`` with each friction model of ``frictions`` in turn
    (full structure), sharing the work that does not depend on the friction: the rigid-body
    regressor is computed and filtered once, only the Coulomb columns (in each model's shape) and
    the extra terms' columns are filtered per friction model (the filter acts column by column)."""
    most = max(f.extra_count for f in frictions)
    prep = _prepare(data, model.n_joints, model.base.count + most, options)
    coulomb = [model.base.names.index(f"fc{j}") for j in range(1, model.n_joints + 1)]
    rigid = model.regressor(prep.q, prep.dq, prep.ddq)  # Coulomb columns replaced below
    rigid[..., np.arange(model.n_joints), coulomb] = 0.0
    base = _observation(prep, rigid, options, None)
    gravity = (load_model or model).gravity(prep.q) if any(f.uses_load for f in frictions) else None
    out = []
    for friction in frictions:
        own = np.zeros(rigid.shape[:2] + (model.n_joints + friction.extra_count,))
        own[:, np.arange(model.n_joints), np.arange(model.n_joints)] = friction.shape(prep.dq)
        own[..., model.n_joints :] = friction.columns(prep.dq, gravity)
        filtered = _observation(prep, own, options, None).Y
        y = np.concatenate([base.Y, filtered[..., model.n_joints :]], axis=-1)
        y[..., np.arange(model.n_joints), coulomb] = filtered[..., np.arange(model.n_joints), np.arange(model.n_joints)]
        out.append(dataclasses.replace(base, Y=y))
    return out


def stack_rows(observations: Sequence[Observation]) -> tuple[Array, Array, NDArray[np.int64]]:
    """The stacked system ``(A, y, joint)`` of the ``used`` rows of every observation: ``A`` (m, b),
    torques ``y`` (m,) and the joint index of each row (m,)."""
    blocks_a, blocks_y, blocks_j = [], [], []
    for obs in observations:
        m, n, b = obs.Y.shape
        mask = obs.used.reshape(-1)
        blocks_a.append(obs.Y.reshape(m * n, b)[mask])
        blocks_y.append(obs.tau.reshape(-1)[mask])
        blocks_j.append(np.tile(np.arange(n), m)[mask])
    return np.concatenate(blocks_a), np.concatenate(blocks_y), np.concatenate(blocks_j)
