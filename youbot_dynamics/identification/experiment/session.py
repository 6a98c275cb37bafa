"""The identification experiment of the identification node, without ROS: phases, references,
safety checks, progress and the recording segments, all on the node's clock ``now`` [s].

**Phases**: ``idle -> approach -> settle -> excite -> sweep -> validate -> hold -> identify -> done``; ``aborted``
(from any motion phase: stop and hold) and ``failed`` (start-up or identification error).

* **Start** (:meth:`ExcitationSession.start`) is refused, with the reason, when there is no
  joint state or the newest is older than ``state_timeout``, when the arm is further than
  ``max_start_distance`` [rad, largest joint difference] from the excitation's start pose
  ``q_start``, outside the joint limits, or moving (faster than :data:`MAX_START_VELOCITY`).
  Within that distance the arm *moves slowly to the start*: a rest-to-rest quintic
  ``q + (q_start - q) s(tau)`` whose peak velocity is at most ``approach_velocity`` and peak
  acceleration at most ``approach_acceleration`` on every joint
  (:func:`~.trajectories.quintic_duration`, at least :data:`MIN_APPROACH_TIME`; from a hard
  stop, from the limit).
* **Settle** ``settle_time`` at ``q_start`` (the drives' transients decay), then **excite**:
  ``periods`` repetitions of the excitation (periodic: it starts and ends at rest at
  ``q_start``), then the **sweep**: the friction sweep of ``sweep_speeds`` from ``q_start``
  (:func:`~..excitation.sweep.speed_sweep`: every joint out and back at each peak speed, both
  directions, with holds; none for an empty ``sweep_speeds``), then **validate**:
  ``validation_repeats`` periods of the *validation trajectory*
  (another periodic motion, other harmonics and phases, within the same limits, at rest at the
  same ``q_start``; none without one), then **hold** ``hold_time`` at ``q_start`` (the recording
  ends after it).
  The timeline is fixed at the start: each phase begins exactly when the previous one's planned
  duration has passed (:meth:`ExcitationSession.planned`), whenever :meth:`~ExcitationSession.update`
  notices it.
* **Streamed to a trajectory controller** (:meth:`ExcitationSession.waypoints`,
  :mod:`.streaming`): every ``stream_period`` the node sends the planned reference over the next
  ``stream_horizon`` (waypoints every :data:`TRAJECTORY_STEP`) followed by a braking tail to rest
  within the deceleration limits, never the whole experiment: if the node dies, the arm stops by
  itself within ``stream_horizon`` plus the tail (:meth:`ExcitationSession.stop_time_bound`).
  The excitation and the validation trajectory are checked up front: a tail from any of their
  states stays within the joint limits.
* **Safety** (:meth:`ExcitationSession.update`, every command cycle of a motion phase): the
  session aborts when the newest joint state is older than ``state_timeout`` - since it arrived,
  or since it was measured by its own stamp (:meth:`ExcitationSession.staleness`: a node that
  falls behind its joint states) -, when a joint is
  within ``limit_margin`` of a position limit and moving towards it (faster than
  :data:`LIMIT_VELOCITY`; an arm resting on a stop may start and move away), or when the
  tracking error exceeds ``max_tracking_error``: ``max_j |q_j - q_ref,j(t_m - d)|`` at the state's
  measurement time ``t_m`` (its stamp on the node's clock: :meth:`ExcitationSession.measured_at`),
  for the command delay ``d`` in ``[0, max_command_delay]`` that fits best
  (:meth:`ExcitationSession.tracking_error`; a busy machine or a controller's queue delays the
  start of a trajectory message by tens of milliseconds); and, streaming, when the last message
  was sent more than ``stream_horizon`` ago (the node fell behind: the arm has begun to brake on
  that message's tail, and resuming the plan would jump). :meth:`ExcitationSession.abort` does
  the same on request.
* **Abort = stop and hold**: from the current reference state ``q, q', q''`` (what the arm is
  commanded to do - the plan, or the last message's tail once its horizon has passed - so the
  stop continues the command without a jump) all joints brake together
  to rest (:class:`~youbot_dynamics.motion.braking.BrakingTail`: peak deceleration of joint j at most
  ``min(stop_deceleration, acceleration_max_j)``, velocity and acceleration continuous), and hold
  there (positions clipped to the joint limits). The same tail ends every streamed message. The
  recording closes ``stop_settle`` after the stop; nothing is identified.
* **Segments**: the excitation starts at ``excite_start`` on the node's clock, i.e. at
  ``excite_start_stamp`` on the clock of the joint state stamps (the offset is the smallest
  ``receive - stamp`` seen). Periods ``1..periods - validation_periods`` identify (averaged);
  the last ``validation_periods`` of the excitation are left out of the fit, but they repeat the
  motion it was fitted on: their error is the *same-motion* error, never called held-out; the
  sweep identifies too (not averaged) and is the motion of another character the friction
  structure is chosen on; the validation trajectory's periods, a motion the fit never saw, give
  the *held-out* error
  (:meth:`ExcitationSession.segments`, :mod:`.analysis`).

A new :class:`ExcitationSession` per experiment; not thread-safe (the node calls it from one
thread). The node's own joint controller for the effort interface is
:class:`~youbot_dynamics.control.laws.PDFeedforward`.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...arm.description import ArmDescription
from ..excitation.limits import ExcitationError, Margins, MotionLimits, verification_times
from ..excitation.sweep import SWEEP_SPEEDS, speed_sweep
from ..excitation.trajectories import Trajectory, WaypointTrajectory, quintic_duration
from ...motion.braking import BrakingTail, braking_duration, sample_waypoints, tail_extremes
from .streaming import horizon_waypoints

__all__ = ["ExperimentPhase", "MOTION_PHASES", "SessionRefused", "TooFarFromStart", "SessionConfig", "JointSample",
           "ExcitationSession", "MIN_APPROACH_TIME", "MAX_START_VELOCITY", "LIMIT_VELOCITY", "TRAJECTORY_STEP"]

Array = NDArray[np.float64]
States = tuple[Array, Array, Array]

MIN_APPROACH_TIME = 0.5  # [s] shortest approach (also when already at the start)
DELAY_STEP = 0.005  # [s] grid of the command delays tried by the tracking check
STOP_PENETRATION = 0.01  # [rad] how far beyond a limit an arm resting on its hard stop may read
MAX_START_VELOCITY = 0.05  # [rad/s] the arm must be at rest to start
LIMIT_VELOCITY = 0.01  # [rad/s] a joint in the limit zone moving towards the limit faster than this aborts
TRAJECTORY_STEP = 0.1  # [s] spacing of the points sent to a trajectory controller (quintic Hermite between)
REST_TOLERANCE = 1e-6  # [rad/s], [rad] an excitation must start and end at rest at the same pose


class ExperimentPhase(str, Enum):
    """The phases of an experiment (module docstring)."""

    IDLE = "idle"
    APPROACH = "approach"
    SETTLE = "settle"
    EXCITE = "excite"
    SWEEP = "sweep"
    VALIDATE = "validate"
    HOLD = "hold"
    IDENTIFY = "identify"
    DONE = "done"
    ABORTED = "aborted"
    FAILED = "failed"


MOTION_PHASES = (ExperimentPhase.APPROACH, ExperimentPhase.SETTLE, ExperimentPhase.EXCITE, ExperimentPhase.SWEEP,
                 ExperimentPhase.VALIDATE, ExperimentPhase.HOLD)
RECORDING_WAIT = 5.0  # [s] after the motion, longest wait for the recording to hold the last requested sample
_PROGRESS_MOTION = 90.0  # [%] of the progress taken by the motion phases; identification the rest


class SessionRefused(RuntimeError):
    """The experiment cannot start (the message says why)."""


class TooFarFromStart(SessionRefused):
    """Refused: the arm is further than ``max_start_distance`` from the start pose ``q_start``;
    ``duration`` [s] moves it there within ``approach_velocity`` and ``approach_acceleration``."""

    def __init__(self, message: str, q_start: Array, duration: float) -> None:
        super().__init__(message)
        self.q_start, self.duration = q_start, duration


@dataclass(frozen=True)
class SessionConfig:
    """Settings of an experiment (module docstring); SI units, angles in rad."""

    periods: int = 4
    validation_periods: int = 1
    validation_repeats: int = 1
    max_start_distance: float = 1.0
    approach_velocity: float = 0.2
    approach_acceleration: float = 0.4
    settle_time: float = 1.0
    hold_time: float = 1.0
    limit_margin: float = 0.05
    max_tracking_error: float = 0.1
    max_command_delay: float = 0.3
    state_timeout: float = 0.1
    stop_deceleration: float = 10.0
    stop_settle: float = 0.5
    # 1 s: under a real launch the node stalled 0.55-0.72 s when `ros2 action send_goal` joined the graph
    # (3 of 3 runs aborted "commands late" with 0.5 s; 1 s completed); the demo and the tests used 1 s
    stream_horizon: float = 1.0
    stream_period: float = 0.1
    sweep_speeds: tuple[float, ...] = SWEEP_SPEEDS  # [rad/s] the friction sweep's peak speeds (empty: none)

    def __post_init__(self) -> None:
        if not (isinstance(self.periods, int) and self.periods >= 1):
            raise ValueError(f"periods must be a positive integer, got {self.periods!r}")
        if not (isinstance(self.validation_periods, int) and 0 <= self.validation_periods < self.periods):
            raise ValueError(f"validation_periods must be an integer in [0, periods = {self.periods}), got "
                             f"{self.validation_periods!r}: at least one period must remain for identification")
        if not (isinstance(self.validation_repeats, int) and self.validation_repeats >= 0):
            raise ValueError(f"validation_repeats must be a non-negative integer, got {self.validation_repeats!r}")
        for name in ("max_start_distance", "settle_time", "hold_time", "limit_margin", "stop_settle",
                     "max_command_delay"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) >= 0.0):
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("approach_velocity", "approach_acceleration", "max_tracking_error", "state_timeout",
                     "stop_deceleration", "stream_horizon", "stream_period"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0.0):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        # an empty ROS array parameter ([] from a parameter file or the command line) arrives as None
        object.__setattr__(self, "sweep_speeds", tuple(float(v) for v in self.sweep_speeds or ()))
        if not all(math.isfinite(v) and v > 0.0 for v in self.sweep_speeds):
            raise ValueError(f"sweep_speeds must be positive [rad/s], got {list(self.sweep_speeds)}")
        if self.stream_period >= self.stream_horizon:
            raise ValueError(f"stream_period ({self.stream_period:g} s) must be shorter than stream_horizon "
                             f"({self.stream_horizon:g} s): a message must arrive before the previous one brakes")

    @property
    def identification_periods(self) -> int:
        return self.periods - self.validation_periods


@dataclass(frozen=True)
class JointSample:
    """The newest joint state: receive time on the node's clock and header stamp [s], ``q``, ``q'``."""

    receive: float
    stamp: float
    q: Array
    dq: Array


class ExcitationSession:
    """One identification experiment; see the module docstring."""

    def __init__(self, arm: ArmDescription, excitation: Trajectory, config: SessionConfig = SessionConfig(),
                 validation: Trajectory | None = None) -> None:
        self.arm, self.excitation, self.config = arm, excitation, config
        self.period = float(excitation.duration)
        self.q_start = excitation.evaluate(0.0)[0]
        self.deceleration = np.minimum(config.stop_deceleration, arm.acceleration_max)
        self.max_tail = self._check_motion(excitation, "the excitation")
        # the validation trajectory: driven only with validation_repeats > 0
        self.validation = validation if config.validation_repeats > 0 else None
        self.validation_period = float(self.validation.duration) if self.validation is not None else 0.0
        if self.validation is not None:
            self.max_tail = max(self.max_tail, self._check_motion(self.validation, "the validation trajectory"))
        # the friction sweep from the start pose, within the position margin of the designs and limit_margin
        margins = Margins(position=max(Margins.position, config.limit_margin))
        try:
            self.sweep = speed_sweep(MotionLimits(arm, margins), self.q_start, config.sweep_speeds) \
                if config.sweep_speeds else None
        except (ExcitationError, ValueError) as exc:  # refused as the excitation's own checks are
            raise ValueError(f"the friction sweep (sweep_speeds {list(config.sweep_speeds)}): {exc}") from exc
        self.sweep_duration = float(self.sweep.duration) if self.sweep is not None else 0.0
        if self.sweep is not None:
            self.max_tail = max(self.max_tail, self._check_motion(self.sweep, "the friction sweep"))
        self.phase = ExperimentPhase.IDLE
        self.reason = ""
        self.phase_start = 0.0
        self.start_time: float | None = None
        self.excite_start: float | None = None
        self.excite_start_stamp: float | None = None
        self.stamp_offset: float | None = None  # smallest (receive - stamp) seen [s]
        self.approach: WaypointTrajectory | None = None
        self.approach_duration = 0.0
        self.stop: BrakingTail | None = None
        self.stop_time = 0.0
        self.sent: tuple[float, BrakingTail] | None = None  # last streamed message: when, its tail
        self.abort_progress = 0.0
        self.identify_fraction = 0.0  # written by the identification thread (a float: atomic); never decreases
        self.max_tracking = 0.0  # largest tracking error seen [rad]
        self.history: list[tuple[str, float]] = []  # (phase, start time)

    def _check_motion(self, motion: Trajectory, name: str) -> float:
        """``ValueError`` (naming the motion ``name``) unless ``motion`` moves this arm's joints,
        starts and ends at rest at ``q_start``, stays out of the ``limit_margin`` zones and within
        ``velocity_max``, and the arm can stop within its limits from any of its states; the
        longest braking tail [s]."""
        arm, config, period = self.arm, self.config, float(motion.duration)
        if motion.n_joints != arm.n_joints:
            raise ValueError(f"{name} moves {motion.n_joints} joints, the arm has {arm.n_joints}")
        q0, dq0, _ = motion.evaluate(0.0)
        q1, dq1, _ = motion.evaluate(period)
        if max(np.abs(dq0).max(), np.abs(dq1).max(), np.abs(q1 - q0).max(), np.abs(q0 - self.q_start).max()) \
                > REST_TOLERANCE:
            raise ValueError(f"{name} must start and end at rest at the same pose (one period of a periodic "
                             f"motion), the excitation's start pose {np.round(self.q_start, 6).tolist()} (design one "
                             f"with `youbot-dynamics excite --start` that pose)")
        q, dq, ddq = motion.evaluate(verification_times(period))
        lower, upper = arm.position_min + config.limit_margin, arm.position_max - config.limit_margin
        close = np.flatnonzero((q.min(axis=0) < lower) | (q.max(axis=0) > upper))
        if close.size:
            j = int(close[0])
            raise ValueError(f"{name} takes joint {j + 1} to [{q[:, j].min():.4f}, {q[:, j].max():.4f}] rad, "
                             f"within limit_margin {config.limit_margin} rad of its limits [{arm.position_min[j]:.4f}, "
                             f"{arm.position_max[j]:.4f}]: it would abort")
        fast = np.flatnonzero(np.abs(dq).max(axis=0) > arm.velocity_max)
        if fast.size:
            raise ValueError(f"{name} exceeds velocity_max on joint(s) {', '.join(str(j + 1) for j in fast)}")
        return self._check_tails(q, dq, ddq, period, name)

    def _check_tails(self, q: Array, dq: Array, ddq: Array, period: float, name: str) -> float:
        """``ValueError`` unless a braking tail from each state of the motion ``name`` (``q, q', q''``
        (m, n) at :func:`verification_times` of ``period``) stays within the joint limits and
        ``velocity_max``; the longest tail [s]."""
        arm = self.arm
        durations = braking_duration(dq, ddq, self.deceleration)
        lowest, highest, speed = tail_extremes(q, dq, ddq, durations)
        outside = (lowest < arm.position_min) | (highest > arm.position_max) | (speed > arm.velocity_max)
        if np.any(outside):
            k, j = (int(i[0]) for i in np.nonzero(outside))
            times = verification_times(period)
            raise ValueError(f"the arm could not stop within its limits from {name} at t = {times[k]:.3f} s: "
                             f"a braking tail at min(stop_deceleration, acceleration_max) takes joint {j + 1} to "
                             f"[{lowest[k, j]:.4f}, {highest[k, j]:.4f}] rad at up to {speed[k, j]:.3f} rad/s "
                             f"(limits [{arm.position_min[j]:.4f}, {arm.position_max[j]:.4f}] rad, "
                             f"{arm.velocity_max[j]:.3f} rad/s)")
        return float(durations.max())

    def stop_time_bound(self) -> float:
        """Longest time [s] the arm moves on after the last streamed message of the excitation
        arrived: the horizon plus the longest braking tail from an excitation (or validation) state."""
        return self.config.stream_horizon + self.max_tail

    # -- timeline -------------------------------------------------------------------------------

    def _phase_duration(self, phase: ExperimentPhase) -> float:
        c = self.config
        return {ExperimentPhase.APPROACH: self.approach_duration, ExperimentPhase.SETTLE: c.settle_time,
                ExperimentPhase.EXCITE: c.periods * self.period, ExperimentPhase.SWEEP: self.sweep_duration,
                ExperimentPhase.VALIDATE: self._validation_duration, ExperimentPhase.HOLD: c.hold_time}[phase]

    @property
    def _validation_duration(self) -> float:
        """The validation trajectory's periods [s] (0 without one)."""
        return self.config.validation_repeats * self.validation_period if self.validation is not None else 0.0

    @property
    def motion_duration(self) -> float:
        """Planned duration of the motion phases [s] (known once started)."""
        return sum(self._phase_duration(p) for p in MOTION_PHASES)

    def _enter(self, phase: ExperimentPhase, now: float, reason: str = "") -> ExperimentPhase:
        self.phase, self.phase_start, self.reason = phase, float(now), reason
        self.history.append((phase.value, float(now)))
        return phase

    @property
    def moving(self) -> bool:
        """A motion phase is running (the arm follows the session's reference)."""
        return self.phase in MOTION_PHASES

    @property
    def commanding(self) -> bool:
        """The session drives the arm (motion, or holding after it): commands must keep coming."""
        return self.phase is not ExperimentPhase.IDLE and not (self.phase is ExperimentPhase.FAILED
                                                               and self.start_time is None)

    # -- start, abort, finish -------------------------------------------------------------------

    def check_start(self, now: float, sample: JointSample | None) -> None:
        """:class:`SessionRefused` with the reason unless the experiment can start now (module docstring)."""
        c = self.config
        if self.phase is not ExperimentPhase.IDLE:
            raise SessionRefused(f"already {self.phase.value}: one experiment per session")
        if sample is None:
            raise SessionRefused("no joint state received yet")
        stale = self.staleness(now, sample)
        if stale is not None:
            raise SessionRefused(stale)
        if not (np.all(np.isfinite(sample.q)) and np.all(np.isfinite(sample.dq))):
            raise SessionRefused("the joint state contains NaN or infinite values")
        if np.max(np.abs(sample.dq)) > MAX_START_VELOCITY:
            raise SessionRefused(f"the arm is moving (|q'| up to {np.max(np.abs(sample.dq)):.3f} rad/s): it must be at "
                                 f"rest to start")
        if not np.all(self.arm.within_limits(sample.q, tolerance=STOP_PENETRATION)):
            raise SessionRefused(f"the arm is outside its joint limits: q = {np.round(sample.q, 4).tolist()}")
        distance = np.abs(sample.q - self.q_start)
        j = int(np.argmax(distance))
        if distance[j] > c.max_start_distance:
            raise TooFarFromStart(f"the arm is {distance[j]:.3f} rad from the excitation's start pose on joint {j + 1} "
                                  f"(max_start_distance {c.max_start_distance:g} rad): move it closer first "
                                  f"(start pose {np.round(self.q_start, 4).tolist()})", self.q_start,
                                  self.approach_time(self.q_start - sample.q))

    def start(self, now: float, sample: JointSample | None) -> float:
        """Start moving to the start pose (or raise :class:`SessionRefused`); returns the approach time [s]."""
        self.check_start(now, sample)
        assert sample is not None
        self._observe(sample)
        origin = np.clip(sample.q, self.arm.position_min, self.arm.position_max)  # from a hard stop: from the limit
        self.approach_duration = self.approach_time(self.q_start - origin)
        self.approach = WaypointTrajectory(np.vstack([origin, self.q_start]), np.array([self.approach_duration]), 0.0)
        self.start_time = float(now)
        self._enter(ExperimentPhase.APPROACH, now)
        return self.approach_duration

    def approach_time(self, delta: Array) -> float:
        """Duration [s] of the rest-to-rest quintic over ``delta`` (n,) within ``approach_velocity`` and
        ``approach_acceleration``, at least :data:`MIN_APPROACH_TIME`."""
        c, n = self.config, self.arm.n_joints
        return max(MIN_APPROACH_TIME, float(quintic_duration(delta, np.full(n, c.approach_velocity),
                                                             np.full(n, c.approach_acceleration))))

    def refuse(self, now: float, reason: str) -> None:
        """Record a refused start as ``failed`` (used for ``start_on_launch``); nothing moves."""
        self._enter(ExperimentPhase.FAILED, now, reason)

    def abort(self, now: float, reason: str) -> bool:
        """Stop and hold (module docstring): brake from the reference state at ``now``. False
        (nothing done) unless a motion phase is running."""
        if not self.moving:
            return False
        self.abort_progress = self.progress(now)
        self.stop = BrakingTail.from_state(*self.reference(now), self.deceleration)
        self.stop_time = float(now)
        self._enter(ExperimentPhase.ABORTED, now, reason)
        return True

    def fail(self, now: float, reason: str) -> None:
        """The identification failed (the arm holds the start pose)."""
        self._enter(ExperimentPhase.FAILED, now, reason)

    def finish(self, now: float) -> None:
        """The identification succeeded."""
        self._enter(ExperimentPhase.DONE, now)

    # -- each cycle -----------------------------------------------------------------------------

    def safety_problem(self, now: float, sample: JointSample | None) -> str | None:
        """Why the motion must stop now, or ``None`` (module docstring)."""
        c = self.config
        if sample is None:
            return "no joint state received"
        stale = self.staleness(now, sample)
        if stale is not None:
            return stale
        if self.sent is not None and now - self.sent[0] > c.stream_horizon:
            return (f"commands late: the last trajectory message was sent {now - self.sent[0]:.3f} s ago, more than "
                    f"stream_horizon {c.stream_horizon:g} s: the arm is braking")
        q, dq = sample.q, sample.dq
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
            return "joint state contains NaN or infinite values"
        upper = (q > self.arm.position_max - c.limit_margin) & (dq > LIMIT_VELOCITY)
        lower = (q < self.arm.position_min + c.limit_margin) & (dq < -LIMIT_VELOCITY)
        near = np.flatnonzero(upper | lower)
        if near.size:
            j = int(near[0])
            limit = self.arm.position_max[j] if upper[j] else self.arm.position_min[j]
            return (f"joint {j + 1} at {q[j]:.4f} rad is moving towards its limit {limit:.4f} rad "
                    f"(within limit_margin {c.limit_margin:g} rad)")
        error = self.tracking_error(sample)
        self.max_tracking = max(self.max_tracking, float(error.max()))
        j = int(np.argmax(error))
        if error[j] > c.max_tracking_error:
            return (f"tracking error {error[j]:.4f} rad on joint {j + 1} exceeds max_tracking_error "
                    f"{c.max_tracking_error:g} rad (allowing a command delay up to {c.max_command_delay:g} s)")
        return None

    def staleness(self, now: float, sample: JointSample) -> str | None:
        """Why ``sample`` is too old to act on, or ``None``. Judged twice against ``state_timeout``:
        ``now - receive`` (no new joint state arrived) and ``now - t_m``, its measurement time on the
        node's clock (:meth:`measured_at`, from its own stamp): a node that handles joint states
        late - a queue of them on a busy machine - receives each one "now" and would never notice
        that it acts on the past (measured: a node 1 s behind whose receive-time check passed)."""
        timeout = self.config.state_timeout
        silence = now - sample.receive
        if silence > timeout:
            return f"joint states stale: the newest arrived {silence:.3f} s ago (state_timeout {timeout:g} s)"
        behind = now - self.measured_at(sample)
        if behind > timeout:
            return (f"joint states stale: the newest was measured {behind:.3f} s ago, by its stamp (state_timeout "
                    f"{timeout:g} s): this node is falling behind the joint states (a busy machine; give it "
                    f"realtime_priority), or the publisher's clock drifts from this node's (use_sim_time?)")
        return None

    def tracking_error(self, sample: JointSample) -> Array:
        """Per-joint ``|q - q_ref(t_m - d)|`` at the delay ``d`` in ``[0, max_command_delay]`` (steps
        of :data:`DELAY_STEP`) that makes the largest joint error smallest; ``t_m`` the state's
        measurement time (:meth:`measured_at`). Commands reach the drives late (transport, the
        controller's own queue, a busy machine): a trajectory that the drives follow faithfully but
        a little late is no fault."""
        delays = np.arange(0.0, self.config.max_command_delay + 0.5 * DELAY_STEP, DELAY_STEP)
        error = np.abs(sample.q - self._positions(self.measured_at(sample) - delays))  # (delays, n)
        return error[int(np.argmin(error.max(axis=1)))]

    def _observe(self, sample: JointSample | None) -> None:
        if sample is not None:
            lag = sample.receive - sample.stamp
            self.stamp_offset = lag if self.stamp_offset is None else min(self.stamp_offset, lag)

    def measured_at(self, sample: JointSample) -> float:
        """When ``sample`` was measured, on the node's clock: its stamp plus the smallest
        ``receive - stamp`` seen (the clocks' offset plus the fastest transport). A state that
        waited in the node's queue is compared with the reference of its measurement time."""
        self._observe(sample)
        return sample.stamp + (self.stamp_offset if self.stamp_offset is not None else 0.0)

    def _positions(self, times: Array) -> Array:
        """Planned reference positions (m, n) at node times ``times`` (m,) (:meth:`planned`)."""
        return self.planned(times)[0]

    def update(self, now: float, sample: JointSample | None) -> ExperimentPhase | None:
        """Safety checks and phase changes of one cycle; the new phase when it changed, else ``None``.
        ``identify`` is entered when the recording is complete (the node then closes it and
        identifies); ``aborted`` by the safety checks."""
        if not self.moving:
            return None
        problem = self.safety_problem(now, sample)
        if problem is not None:
            self.abort(now, problem)
            return ExperimentPhase.ABORTED
        end = self.phase_start + self._phase_duration(self.phase)
        if now < end:
            return None
        following = MOTION_PHASES[MOTION_PHASES.index(self.phase) + 1] if self.phase is not ExperimentPhase.HOLD \
            else ExperimentPhase.IDENTIFY
        if following is ExperimentPhase.SWEEP and self.sweep is None:
            following = ExperimentPhase.VALIDATE
        if following is ExperimentPhase.VALIDATE and self.validation is None:
            following = ExperimentPhase.HOLD
        if following is ExperimentPhase.EXCITE:
            self.excite_start = end
            self._observe(sample)
            if self.stamp_offset is not None:
                self.excite_start_stamp = end - self.stamp_offset
        return self._enter(following, end)

    def recording_complete(self, now: float, last_stamp: float | None = None) -> bool:
        """The recording can be closed: the abort's stop has settled, or the motion ended
        (identify) and the recording holds the last requested sample: ``last_stamp``, the stamp of
        the newest recorded joint state, has reached the end of the last period on the arm's clock
        plus ``max_command_delay`` (the arm's delay the identification may find)
        (a node that handles joint states late, on a loaded machine, would otherwise close the
        recording before its end is in); after :data:`RECORDING_WAIT` it closes anyway."""
        if self.phase is ExperimentPhase.ABORTED:
            return now >= self.stop_time + (self.stop.duration if self.stop else 0.0) + self.config.stop_settle
        if self.start_time is None or self.moving:
            return False
        if self.excite_start_stamp is None or last_stamp is None or now >= self.phase_start + RECORDING_WAIT:
            return True
        # the identification looks for the arm's delay up to max_command_delay after the plan
        return last_stamp >= (self.excite_start_stamp + self.config.periods * self.period + self.sweep_duration
                              + self._validation_duration + self.config.max_command_delay)

    # -- references -----------------------------------------------------------------------------

    def planned(self, times: Any) -> States:
        """The planned reference ``(q, q', q'')`` (each (m, n)) at node times ``times`` (m,) of a
        started experiment: approach, settle, excitation, sweep, validation, hold (module docstring), the start pose
        after the motion; the approach's origin before the start."""
        t = np.atleast_1d(np.asarray(times, dtype=float)) - (self.start_time or 0.0)
        n = self.arm.n_joints
        q = np.broadcast_to(self.q_start, (t.size, n)).copy()
        dq, ddq = np.zeros_like(q), np.zeros_like(q)
        excite = self.approach_duration + self.config.settle_time
        sweep = excite + self.config.periods * self.period
        validate = sweep + self.sweep_duration
        in_approach = t < self.approach_duration
        if np.any(in_approach) and self.approach is not None:
            states = self.approach.evaluate(np.maximum(t[in_approach], 0.0))
            for x, y in zip((q, dq, ddq), states):
                x[in_approach] = y
        for motion, begin, end in ((self.excitation, excite, sweep), (self.sweep, sweep, validate),
                                   (self.validation, validate, validate + self._validation_duration)):
            inside = (t >= begin) & (t < end)
            if motion is not None and np.any(inside):
                states = motion.evaluate(np.fmod(t[inside] - begin, float(motion.duration)))
                for x, y in zip((q, dq, ddq), states):
                    x[inside] = y
        return q, dq, ddq

    def _plan(self, now: float) -> States:
        return tuple(x[0] for x in self.planned(now))  # type: ignore[return-value]

    def reference(self, now: float) -> States:
        """Commanded ``(q, q', q'')`` at ``now``: the plan (:meth:`planned`); the braking tail of
        the last streamed message once its horizon has passed (what a trajectory controller
        executes then); the stop after an abort; the start pose before the start."""
        if self.phase is ExperimentPhase.ABORTED and self.stop is not None:
            return self.stop.evaluate(now - self.stop_time)
        if self.start_time is None:
            zero = np.zeros(self.arm.n_joints)
            return self.q_start.copy(), zero, zero.copy()
        if self.sent is not None and now - self.sent[0] > self.config.stream_horizon:
            return self.sent[1].evaluate(now - self.sent[0] - self.config.stream_horizon)
        return self._plan(now)

    def waypoints(self, now: float, step: float = TRAJECTORY_STEP) -> tuple[Array, Array, Array, Array] | None:
        """The message for a trajectory controller at ``now``: waypoints ``(times from now, q, q',
        q'')``. While moving: the plan over the next ``stream_horizon`` and a braking tail
        (:func:`~.streaming.horizon_waypoints`), sent every ``stream_period``; after an abort: the
        rest of the stop (positions clipped to the joint limits: a controller rejects points beyond
        them); else ``None`` (the controller holds the last point of the previous message)."""
        if self.moving:
            message, tail = horizon_waypoints(self._plan, now, self.config.stream_horizon, step, self.deceleration)
            self.sent = (float(now), tail)
            return message
        if self.phase is ExperimentPhase.ABORTED and self.stop is not None:
            stop, start = self.stop, now - self.stop_time
            times, q, dq, ddq = sample_waypoints(lambda t: stop.evaluate(start + t), stop.duration - start, step)
            return times, np.clip(q, self.arm.position_min, self.arm.position_max), dq, ddq
        return None

    # -- progress and segments ------------------------------------------------------------------

    def progress(self, now: float) -> float:
        """Percent done: the motion phases take 0-90 % (by time), identification 90-100 %."""
        if self.phase is ExperimentPhase.IDLE or self.start_time is None:
            return 0.0
        if self.moving:
            elapsed = sum(self._phase_duration(p) for p in MOTION_PHASES[: MOTION_PHASES.index(self.phase)])
            elapsed += min(now - self.phase_start, self._phase_duration(self.phase))
            return _PROGRESS_MOTION * elapsed / max(self.motion_duration, 1e-9)
        if self.phase is ExperimentPhase.IDENTIFY:
            return _PROGRESS_MOTION + (100.0 - _PROGRESS_MOTION) * min(max(self.identify_fraction, 0.0), 1.0)
        if self.phase is ExperimentPhase.DONE:
            return 100.0
        if self.phase is ExperimentPhase.ABORTED:
            return self.abort_progress
        return _PROGRESS_MOTION + (100.0 - _PROGRESS_MOTION) * self.identify_fraction  # failed identification

    def progress_bar(self, label: str) -> "_StageBar":
        """A progress bar for :func:`~.pipeline.identify` (its ``progress`` factory). The pipeline
        opens a varying number of stages, some nested (processing inside the friction choice); each
        new stage covers half of what is left, so the identify fraction rises and never goes back."""
        return _StageBar(self)

    def remaining(self, now: float) -> float:
        """Seconds of motion left (0 outside the motion phases)."""
        if not self.moving:
            return 0.0
        left = self._phase_duration(self.phase) - (now - self.phase_start)
        after = MOTION_PHASES[MOTION_PHASES.index(self.phase) + 1 :]
        return max(left, 0.0) + sum(self._phase_duration(p) for p in after)

    def activity(self, now: float) -> str:
        """What the experiment is doing or waiting for now, in words (the node logs it every
        ``log_period``; nothing in the log for a while must never mean "stuck")."""
        c, phase = self.config, self.phase
        if phase is ExperimentPhase.APPROACH:
            return ("moving to the start pose "
                    f"({max(self.approach_duration - (now - self.phase_start), 0.0):.1f} s left)")
        if phase is ExperimentPhase.SETTLE:
            return f"holding the start pose while the arm settles ({c.settle_time:g} s)"
        if phase is ExperimentPhase.EXCITE:
            k = min(int((now - self.phase_start) // self.period), c.periods - 1)
            use = "identification" if k < c.identification_periods else "same-motion check; not fitted"
            return f"excitation period {k + 1} of {c.periods} ({use}), max tracking error {self.max_tracking:.4f} rad"
        if phase is ExperimentPhase.SWEEP:
            return (f"friction sweep at {len(c.sweep_speeds)} speeds up to {max(c.sweep_speeds):g} rad/s "
                    f"(identification), max tracking error {self.max_tracking:.4f} rad")
        if phase is ExperimentPhase.VALIDATE:
            k = min(int((now - self.phase_start) // self.validation_period), c.validation_repeats - 1)
            return (f"validation trajectory period {k + 1} of {c.validation_repeats} (held-out: a different motion), "
                    f"max tracking error {self.max_tracking:.4f} rad")
        if phase is ExperimentPhase.HOLD:
            return "holding the final pose; the recording closes after it"
        if phase is ExperimentPhase.IDENTIFY:
            return f"computing the parameters from the recording ({now - self.phase_start:.0f} s)"
        return phase.value + (f": {self.reason}" if self.reason else "")

    def segments(self) -> dict[str, Any]:
        """The motions in the recording (stamp clock): the excitation from ``start`` [s], ``period``
        [s], ``identification_periods`` (from ``start``) and ``validation_periods`` (after them: the
        same motion); the friction sweep from ``sweep_start`` [s] for ``sweep_duration`` [s] (0: none); the
        validation trajectory from ``validation_start`` [s], ``validation_period`` [s], ``validation_repeats``
        (0: none)."""
        if self.excite_start_stamp is None:
            raise RuntimeError("the excitation has not started")
        c = self.config
        return {"start": self.excite_start_stamp, "period": self.period,
                "identification_periods": c.identification_periods, "validation_periods": c.validation_periods,
                "sweep_start": self.excite_start_stamp + c.periods * self.period, "sweep_duration": self.sweep_duration,
                "validation_start": self.excite_start_stamp + c.periods * self.period + self.sweep_duration,
                "validation_period": self.validation_period,
                "validation_repeats": c.validation_repeats if self.validation is not None else 0}

    def describe(self) -> dict[str, Any]:
        """Plain data for the report: configuration, phase history, outcome."""
        return {
            "config": asdict(self.config),
            "q_start": self.q_start.tolist(),
            "period_s": self.period,
            "sweep_duration_s": self.sweep_duration,
            "validation_period_s": self.validation_period,
            "approach_duration_s": self.approach_duration,
            "phases": [{"phase": p, "t": t - (self.start_time or 0.0)} for p, t in self.history],
            "excite_start_stamp": self.excite_start_stamp,
            "max_tracking_error_rad": self.max_tracking,
            "outcome": self.phase.value,
            "reason": self.reason,
        }


class _StageBar:
    """A stage of the identification: from the session's identify fraction ``f0`` when it opens,
    it fills ``f0 + x (1 - f0) / 2`` for its fraction ``x`` (never below what is shown)."""

    def __init__(self, session: ExcitationSession) -> None:
        self.session = session
        self._from = session.identify_fraction
        self._span = 0.5 * (1.0 - self._from)
        self._start = time.perf_counter()

    def __call__(self, fraction: float) -> None:
        shown = self._from + self._span * min(max(fraction, 0.0), 1.0)
        self.session.identify_fraction = max(self.session.identify_fraction, shown)

    def done(self) -> float:
        self(1.0)
        return time.perf_counter() - self._start
