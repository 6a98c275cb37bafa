"""Excitation trajectories optimised for the information they carry (Swevers et al. 1997).

**Objective**: the criterion of :mod:`.criterion` (by default ``log cond`` of the column-scaled
stacked base regressor) on ``samples_per_period`` :func:`~.criterion.sample_times` of one period,
with its analytic gradient.

**Variables and constraints.** The free Fourier coefficients ``P`` ((2 (K - 1)) x n, see
:meth:`~.trajectories.FourierTrajectory.at_rest`) give ``q - q_start = Phi_q P``,
``q' = Phi_dq P``, ``q'' = Phi_ddq P`` (:func:`rest_basis`), so the objective gradient is
``Phi_q^T df/dq + Phi_dq^T df/dq' + Phi_ddq^T df/dq''`` and the position, velocity and
acceleration bounds of :mod:`.limits` are linear constraints. The clearance constraint is its
smooth lower bound :func:`~.clearance.soft_clearance` (the hard minimum over points and obstacles
makes SLSQP zig-zag), with the Jacobian by central differences in ``q`` chained through
``Phi_q``. Constraints are imposed on :data:`CONSTRAINT_SAMPLES_PER_HARMONIC` samples per period
of the highest harmonic (a sinusoid overshoots such samples by at most ``1 - cos(pi / 16)`` = 2 %).

**Optimiser.** SciPy's SLSQP (default; gradients) or COBYLA (derivative-free, slower) starts from
a random feasible trajectory (``seed``), with box bounds ``|coefficient| <= coefficient_bound``,
and stops when ``log cond`` improves by less than :data:`CRITERION_TOLERANCE`. When it stops on an
infeasible iterate it is restarted from that iterate scaled back into the limits, at most
:data:`RESTARTS` times.

**Verification.** The result is checked at :func:`~.limits.verification_times` and, if a margin is
short between samples, scaled towards ``q_start`` (``q - q_start``, ``q'``, ``q''`` are
proportional to ``P``) until every margin holds (:func:`_fit_to_limits`). The same scaling turns
random coefficients into the random feasible trajectories used as starts and for comparison.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ...dynamics.model import DynamicModel
from .clearance import YOUBOT_OBSTACLES, Obstacles, clearance, soft_clearance
from .criterion import (check_criterion, criterion_state_gradient, criterion_value, regressor_model, sample_times,
                        trajectory_condition_number)
from .limits import (MAX_DURATION, AchievedMargins, ExcitationError, Margins, MotionLimits, achieved_margins,
                     check_duration, verification_times)
from .trajectories import FourierTrajectory, Trajectory
from .waypoints import random_configurations, start_configuration

__all__ = ["OPTIMIZERS", "MAX_HARMONICS", "MAX_ITERATIONS", "MAX_DESIGN_TIME", "MAX_RANDOM_POINTS", "MAX_DURATION",
           "ExcitationResult", "rest_basis", "random_feasible_trajectory", "design_excitation",
           "random_points_excitation", "excitation_condition_number"]

Array = NDArray[np.float64]
OPTIMIZERS = ("SLSQP", "COBYLA")
CONSTRAINT_SAMPLES_PER_HARMONIC = 16  # constraint samples per period of the highest harmonic
RESTARTS = 3  # restarts of the optimiser after it stopped on an infeasible iterate
CLEARANCE_STEP = 1e-6  # [rad] central-difference step of the clearance Jacobian
CLEARANCE_SMOOTHING = 0.01  # [m] soft minimum of the clearance constraint (clearance.soft_clearance)
CRITERION_TOLERANCE = 1e-3  # SLSQP ftol: stop when the criterion (log cond) improves less
COBYLA_EVALUATIONS_PER_ITERATION = 20  # COBYLA's budget: criterion evaluations per allowed iteration
WAYPOINT_SAMPLE_RATE = 20.0  # [1/s] regressor samples of a point-to-point schedule
SAMPLES_PER_PERIOD = 200  # regressor samples of one period of a Fourier design (default)
MIN_RANDOM_POINTS = 2  # one point is a move out and back along one line: rank-deficient regressor (cond inf)
# Bounds of the work of a design, checked before it starts (the trajectory's duration:
# limits.MAX_DURATION, 600 s). Harmonics: the linear constraints grow as K^2 (3 x 16 K samples x 5
# joints rows, 2 (K - 1) x 5 columns) and one SLSQP iteration takes ~1.4 s at K = 20. Iterations:
# per optimiser run (at most RESTARTS + 1 runs), and the whole design stops after MAX_DESIGN_TIME
# whatever max_time says. Points: ~5 s of moves each; the random search for them is bounded by
# the draws of random_configurations.
MAX_HARMONICS = 20
MAX_ITERATIONS = 1000
MAX_DESIGN_TIME = 3600.0  # [s]
MAX_RANDOM_POINTS = 50


@dataclass(frozen=True)
class ExcitationResult:
    """A designed excitation: the trajectory, its condition number and the margins it keeps."""

    trajectory: Trajectory
    condition_number: float  # of the column-scaled base regressor on `samples` sample_times
    start_condition_number: float | None  # of the random feasible start (Fourier design)
    limits: MotionLimits
    margins: AchievedMargins
    structure: str
    parameters: int  # number of base parameters b
    samples: int
    method: str  # "fourier" | "random-points"
    seed: int
    optimizer: str | None
    iterations: int
    elapsed: float  # [s] design time

    def report(self) -> dict[str, Any]:
        """Everything about the design as plain data (the ``design`` block of a trajectory file)."""
        return {
            "method": self.method,
            "condition_number": float(self.condition_number),
            "start_condition_number": self.start_condition_number,
            "structure": self.structure,
            "base_parameters": self.parameters,
            "samples": self.samples,
            "seed": self.seed,
            "optimizer": self.optimizer,
            "iterations": self.iterations,
            "elapsed_s": round(self.elapsed, 3),
            "duration_s": float(self.trajectory.duration),
            "limits": self.limits.as_dict(),
            "margins_achieved": self.margins.as_dict(),
        }


def rest_basis(period: float, harmonics: int, t: Array) -> tuple[Array, Array, Array]:
    """``(Phi_q, Phi_dq, Phi_ddq)``, each (len(t), 2 (K - 1)): column f is the motion of the f-th
    free coefficient alone (:meth:`FourierTrajectory.at_rest` from rest at 0), so that
    ``q - q_start = Phi_q P`` for every joint."""
    unit = np.eye(2 * (harmonics - 1))  # one "joint" per free coefficient
    return FourierTrajectory.at_rest(period, np.zeros(len(unit)), unit).evaluate(t)


def _fit_to_limits(limits: MotionLimits, period: float, q_start: Array, free: Array, *,
                   grow: bool) -> FourierTrajectory:
    """``at_rest(period, q_start, s free)`` with the largest ``s`` (at most 1 unless ``grow``) that
    keeps every margin at the verification times: the linear bounds give ``s`` directly, then
    ``s`` shrinks by 10 % steps until the clearance holds."""
    q, dq, ddq = FourierTrajectory.at_rest(period, q_start, free).evaluate(verification_times(period))
    dev = q - q_start
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.concatenate([
            np.where(dev > 0, (limits.position_upper - q_start) / dev, np.inf).ravel(),
            np.where(dev < 0, (limits.position_lower - q_start) / dev, np.inf).ravel(),
            (limits.velocity_bound / np.abs(dq)).ravel(),
            (limits.acceleration_bound / np.abs(ddq)).ravel(),
        ])
    s = float(ratios.min()) if grow else min(1.0, float(ratios.min()))
    for _ in range(100):
        if clearance(limits.arm, q_start + s * dev, limits.obstacles).min() >= limits.margins.clearance:
            return FourierTrajectory.at_rest(period, q_start, s * free)
        s *= 0.9
    raise ExcitationError("no scaling of the trajectory keeps the clearance margin")


def _random_free(rng: np.random.Generator, harmonics: int, n_joints: int) -> Array:
    """Normal random free coefficients, harmonic k scaled by 1/k (equal acceleration content)."""
    k = np.arange(2, harmonics + 1, dtype=float)
    return rng.standard_normal((2 * (harmonics - 1), n_joints)) / np.concatenate([k, k])[:, None]


def _check_design_arguments(duration: float, harmonics: int, samples: int) -> None:
    check_duration(duration, "excitation")
    if harmonics < 2:
        raise ValueError(f"need at least 2 harmonics (the first one is used by the rest conditions), got {harmonics}")
    if harmonics > MAX_HARMONICS:
        raise ValueError(f"at most {MAX_HARMONICS} harmonics (bounded design time and memory), got {harmonics}")
    if samples < 2 * harmonics:
        raise ValueError(f"samples per period must be at least 2 x harmonics = {2 * harmonics}, got {samples}")


def random_feasible_trajectory(arm: ArmDescription, duration: float = 10.0, harmonics: int = 5, *,
                               q_start: Any = None, seed: int = 0, margins: Margins = Margins(),
                               obstacles: Obstacles = YOUBOT_OBSTACLES) -> FourierTrajectory:
    """Random Fourier coefficients (seeded) scaled to the largest amplitude that keeps every margin:
    at least one limit is reached. What the optimiser starts from; for comparison."""
    _check_design_arguments(duration, harmonics, 2 * harmonics)
    limits = MotionLimits(arm, margins, obstacles)
    q0 = start_configuration(limits, q_start)
    free = _random_free(np.random.default_rng(seed), harmonics, arm.n_joints)
    return _fit_to_limits(limits, duration, q0, free, grow=True)


@dataclass
class _FourierProblem:
    """Objective and constraints of the Fourier design over the flattened free coefficients ``p``
    (``P = p.reshape(F, n)``, ``d q_i(t_s) / d P_fi = Phi_q[s, f]``): ``objective_phi`` on the
    objective samples, ``constraint_phi`` on the constraint samples."""

    limits: MotionLimits
    model: DynamicModel
    q_start: Array
    objective_phi: tuple[Array, Array, Array]
    constraint_phi: tuple[Array, Array, Array]
    criterion: str

    def _states(self, p: Array) -> tuple[Array, Array, Array]:
        p_mat = p.reshape(self.objective_phi[0].shape[1], self.q_start.size)
        q, dq, ddq = (phi @ p_mat for phi in self.objective_phi)
        return q + self.q_start, dq, ddq

    def objective(self, p: Array) -> float:
        return criterion_value(self.model.regressor(*self._states(p)), self.criterion)

    def gradient(self, p: Array) -> Array:
        grad = criterion_state_gradient(self.model, *self._states(p), self.criterion)
        return sum(phi.T @ g for phi, g in zip(self.objective_phi, grad)).ravel()

    def linear_constraint(self) -> Any:
        from scipy.optimize import LinearConstraint

        eye = np.eye(self.q_start.size)
        matrix = np.vstack([np.kron(phi, eye) for phi in self.constraint_phi])  # row s n + i, column f n + i
        samples = self.constraint_phi[0].shape[0]
        lim = self.limits
        bounds = [(lim.position_lower - self.q_start, lim.position_upper - self.q_start),
                  (-lim.velocity_bound, lim.velocity_bound), (-lim.acceleration_bound, lim.acceleration_bound)]
        return LinearConstraint(matrix, np.concatenate([np.tile(lo, samples) for lo, _ in bounds]),
                                np.concatenate([np.tile(hi, samples) for _, hi in bounds]))

    def _clearance(self, q: Array) -> Array:
        return soft_clearance(self.limits.arm, q, self.limits.obstacles, CLEARANCE_SMOOTHING)

    def _positions(self, p: Array) -> Array:
        return self.q_start + self.constraint_phi[0] @ p.reshape(self.constraint_phi[0].shape[1], -1)

    def clearance_values(self, p: Array) -> Array:
        return self._clearance(self._positions(p))

    def clearance_jacobian(self, p: Array) -> Array:
        q = self._positions(p)  # (N, n)
        step = np.eye(q.shape[1]) * CLEARANCE_STEP
        grad = (self._clearance(q[:, None, :] + step) - self._clearance(q[:, None, :] - step)) / (2 * CLEARANCE_STEP)
        return (self.constraint_phi[0][:, :, None] * grad[:, None, :]).reshape(q.shape[0], -1)

    def clearance_constraint(self) -> Any:
        from scipy.optimize import NonlinearConstraint

        return NonlinearConstraint(self.clearance_values, self.limits.margins.clearance, np.inf,
                                   jac=self.clearance_jacobian)


def _options(optimizer: str, max_iterations: int) -> dict[str, Any]:
    if optimizer == "SLSQP":
        return {"maxiter": max_iterations, "ftol": CRITERION_TOLERANCE}
    return {"maxiter": COBYLA_EVALUATIONS_PER_ITERATION * max_iterations}  # COBYLA counts evaluations


def design_excitation(arm: ArmDescription, duration: float = 10.0, harmonics: int = 5, *, q_start: Any = None,
                      structure: str = "full", seed: int = 0, optimizer: str = "SLSQP",
                      criterion: str = "condition", max_iterations: int = 100, max_time: float | None = None,
                      samples_per_period: int = SAMPLES_PER_PERIOD, coefficient_bound: float | None = None,
                      margins: Margins = Margins(), obstacles: Obstacles = YOUBOT_OBSTACLES) -> ExcitationResult:
    """An optimal periodic excitation (module docstring), at rest at ``q_start`` at 0 and ``duration``.

    ``max_iterations`` bounds each optimiser run; ``max_time`` [s] stops the design early;
    ``coefficient_bound`` [rad/s] bounds every free coefficient (default the largest velocity
    limit). Returns the better of the optimum and the random feasible start. ``ValueError`` before
    any work beyond the bounds :data:`MAX_HARMONICS`, :data:`MAX_ITERATIONS`, :data:`MAX_DURATION`;
    the design stops after :data:`MAX_DESIGN_TIME` at the latest.
    """
    from scipy.optimize import Bounds, minimize

    t0 = time.perf_counter()
    _check_design_arguments(duration, harmonics, samples_per_period)
    if not 1 <= max_iterations <= MAX_ITERATIONS:
        raise ValueError(f"max_iterations must lie in [1, {MAX_ITERATIONS}], got {max_iterations}")
    if max_time is not None and not (math.isfinite(max_time) and max_time >= 0):
        raise ValueError(f"max_time must be a non-negative number of seconds, got {max_time}")
    time_limit = min(max_time if max_time is not None else math.inf, MAX_DESIGN_TIME)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    check_criterion(criterion)
    limits = MotionLimits(arm, margins, obstacles)
    q0 = start_configuration(limits, q_start)
    model = regressor_model(arm, structure)
    start = random_feasible_trajectory(arm, duration, harmonics, q_start=q0, seed=seed, margins=margins,
                                       obstacles=obstacles)
    problem = _FourierProblem(
        limits, model, q0, rest_basis(duration, harmonics, sample_times(duration, samples_per_period)),
        rest_basis(duration, harmonics, sample_times(duration, CONSTRAINT_SAMPLES_PER_HARMONIC * harmonics)),
        criterion)
    bound = float(coefficient_bound if coefficient_bound is not None else arm.velocity_max.max())
    iterations = 0

    def out_of_time() -> bool:
        return time.perf_counter() - t0 > time_limit

    def count_and_check_time(intermediate_result: Any) -> None:
        nonlocal iterations
        iterations += 1
        if out_of_time():
            raise StopIteration

    current = start
    for _ in range(RESTARTS + 1):
        solution = minimize(problem.objective, current.free_coefficients().ravel(), method=optimizer,
                            jac=problem.gradient if optimizer == "SLSQP" else None,
                            bounds=Bounds(-bound, bound),
                            constraints=[problem.linear_constraint(), problem.clearance_constraint()],
                            options=_options(optimizer, max_iterations), callback=count_and_check_time)
        current = _fit_to_limits(limits, duration, q0, solution.x.reshape(2 * (harmonics - 1), -1), grow=False)
        if solution.success or out_of_time():
            break
    start_cond = trajectory_condition_number(model, start, samples_per_period)
    cond = trajectory_condition_number(model, current, samples_per_period)
    best, best_cond = (current, cond) if cond <= start_cond else (start, start_cond)
    return ExcitationResult(best, best_cond, start_cond, limits, achieved_margins(limits, best),
                            model.base.structure.value, model.base.count, samples_per_period, "fourier", seed,
                            optimizer, iterations, time.perf_counter() - t0)


def random_points_excitation(arm: ArmDescription, n_points: int = 10, *, q_start: Any = None,
                             structure: str = "full", seed: int = 0, dwell: float = 1.0,
                             margins: Margins = Margins(), obstacles: Obstacles = YOUBOT_OBSTACLES) -> ExcitationResult:
    """The seed's method (:func:`~.waypoints.random_configurations`) with its condition number on
    :data:`WAYPOINT_SAMPLE_RATE` samples per second. ``ValueError`` for fewer than
    :data:`MIN_RANDOM_POINTS` or more than :data:`MAX_RANDOM_POINTS` points, or a dwell making the
    schedule longer than :data:`MAX_DURATION` (checked before the search, and the schedule found
    after it); :class:`ExcitationError` if the schedule leaves a base parameter unexcited
    (infinite condition number)."""
    if n_points < MIN_RANDOM_POINTS:
        raise ValueError(f"random-points excitation needs at least {MIN_RANDOM_POINTS} configurations, got {n_points} "
                         f"(one is a move out and back along a single line, which cannot excite every base parameter: "
                         f"infinite condition number)")
    if n_points > MAX_RANDOM_POINTS:
        raise ValueError(f"random-points excitation takes at most {MAX_RANDOM_POINTS} configurations (bounded design "
                         f"time and memory), got {n_points}")
    if not (math.isfinite(dwell) and dwell >= 0):
        raise ValueError(f"dwell must be a non-negative number of seconds, got {dwell}")
    if dwell * (n_points + 2) > MAX_DURATION:
        raise ValueError(f"dwell {dwell:g} s at each of the {n_points + 2} rests makes the schedule longer than the "
                         f"maximum {MAX_DURATION:g} s")
    t0 = time.perf_counter()
    limits = MotionLimits(arm, margins, obstacles)
    trajectory = random_configurations(arm, n_points, seed, q_start=q_start, margins=margins, obstacles=obstacles,
                                       dwell=dwell)
    if trajectory.duration > MAX_DURATION:
        raise ValueError(f"the schedule of {n_points} configurations with {dwell:g} s dwell lasts "
                         f"{trajectory.duration:.1f} s, more than the maximum {MAX_DURATION:g} s: use fewer points "
                         f"or a shorter dwell")
    model = regressor_model(arm, structure)
    samples = math.ceil(WAYPOINT_SAMPLE_RATE * trajectory.duration)
    cond = trajectory_condition_number(model, trajectory, samples)
    if not math.isfinite(cond):
        raise ExcitationError(f"the {n_points} random configurations (seed {seed}) leave a base parameter unexcited "
                              f"(condition number {cond}): use more points or another seed")
    return ExcitationResult(trajectory, cond, None, limits, achieved_margins(limits, trajectory),
                            model.base.structure.value, model.base.count, samples, "random-points", seed, None, 0,
                            time.perf_counter() - t0)


def excitation_condition_number(trajectory: Trajectory, arm: ArmDescription,
                                structure: str = "full") -> tuple[float, int]:
    """``cond(W_s)`` of ``trajectory`` for ``structure``'s base regressor as a design computes it
    (:data:`SAMPLES_PER_PERIOD` samples of a Fourier period, :data:`WAYPOINT_SAMPLE_RATE` per second of
    a schedule), and the number of samples: what a trajectory file reports, whatever its ``design`` says."""
    samples = (SAMPLES_PER_PERIOD if isinstance(trajectory, FourierTrajectory)
               else math.ceil(WAYPOINT_SAMPLE_RATE * trajectory.duration))
    return trajectory_condition_number(regressor_model(arm, structure), trajectory, samples), samples
