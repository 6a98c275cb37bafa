"""The identification experiment's supervision, without ROS (:class:`ExperimentRunner`): what to start
(an identification, first its pilot pass on the effort interface, or a recalibration), the start on a
fresh joint state, the session's cycle, the recording's end, the identification in a worker thread,
the abort, and what the user is told of each. The identification node hosts it, as the controller
nodes host :class:`~youbot_dynamics.control.loop.ControlLoop`: its parameters, topics, services and
action are the node's (nodes/identification_node.py); the commands the arm receives are the host's
:class:`CommandStream`. doc/identification.md."""
from __future__ import annotations

import concurrent.futures
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from ...arm.description import ArmDescription
from ...dynamics.model import DynamicModel
from ...dynamics.paramfile import ModelFileError
from ...files.dataio import DataFileError
from ..estimation.calibration import Calibration
from ..estimation.calibration import summary_lines as calibration_lines
from ..estimation.pipeline import summary_lines
from ..excitation.trajectories import Trajectory
from ..io.dataset import IdentificationError
from .analysis import experiment_lines
from .effort import EffortLoop
from .jobs import (ExcitationPlan, ModelToUpdate, Settings, calibration_summary, identification_summary,
                   identify_pilot, identify_recording, new_run_directory, plan_excitation, recalibrate_recording)
from .recording import RecordingThread
from .session import ExcitationSession, ExperimentPhase, JointSample, SessionConfig, SessionRefused

__all__ = ["CommandStream", "ExperimentHost", "ExperimentRunner", "ExperimentSetup", "START_STATE_LAG"]

# [s] an experiment begins once the newest joint state handled was measured at most this long ago: a
# start request takes 0.2-0.5 s to prepare (the model, the recorder's first bag) while joint states
# queue behind it; begun on the last state handled before it, the first cycles found the states
# stale (0.52 s) or the commands late (0.79 s) and aborted (the demo's recalibration, stop 37)
START_STATE_LAG = 0.05


class CommandStream(Protocol):
    """What the arm receives from the experiment (the node's :class:`~youbot_dynamics.nodes.
    experiment_commands.ExperimentCommands`)."""

    controller: EffortLoop | None  # the effort interface's loop (None on the others)

    def restart(self) -> None:
        """A new experiment's commands begin (the effort interface takes the arm again)."""

    def stream(self, now: float, session: ExcitationSession) -> None:
        """The streamed command of ``session`` at ``now``."""

    def phase_changed(self, now: float, session: ExcitationSession) -> None:
        """``session`` entered a new phase at ``now``."""

    def release(self, why: str) -> None:
        """Hand the arm to the drives (effort interface)."""


class Log(Protocol):
    """Where the user is told (a logger with these three severities)."""

    def info(self, message: str) -> Any:
        """An event."""

    def warning(self, message: str) -> Any:
        """An event the user should look at."""

    def error(self, message: str) -> Any:
        """A failure."""


class ExperimentHost(Protocol):
    """What the runner asks of the node that hosts it."""

    def phase_changed(self, now: float) -> None:
        """The experiment entered a new phase (after the runner logged it and told the commands)."""

    def payload_changed(self, run: Calibration) -> None:
        """A recalibration found the payload change of ``run``."""

    def recorder(self, directory: Path, name: str) -> RecordingThread:
        """A recording of the joint states into ``directory`` under the file name ``name``."""

    def started(self, session: ExcitationSession) -> None:
        """An experiment of ``session`` was prepared and begins at a later cycle."""

    def quiet_moment(self) -> None:
        """An experiment was prepared and nothing moves yet: the moment for housekeeping (the heap)."""

    def refusal_hint(self, refusal: SessionRefused) -> str:
        """What the user can do about ``refusal`` ('' for nothing)."""


@dataclass(frozen=True)
class ExperimentSetup:
    """What the experiments are: the arm, the session and identification settings, the default
    excitation and the held-out motion, where the runs go, the command interface, the pilot
    pass's slowdown (effort interface), the recalibration's periods and the nominal feedforward."""

    arm: ArmDescription
    config: SessionConfig
    settings: Settings
    excitation_file: Path
    validation_file: Path
    validation: Trajectory | None
    output_root: Path
    interface: str
    pilot_slowdown: float
    calibration_periods: int
    nominal_feedforward: DynamicModel
    log_period: float  # [s] between progress lines in the log (0: none)

    @property
    def calibration_config(self) -> SessionConfig:
        """A recalibration's session: ``calibration_periods`` of the excitation, no validation."""
        return dataclasses.replace(self.config, periods=self.calibration_periods, validation_periods=0,
                                   validation_repeats=0, sweep_speeds=())

    @property
    def pilot_config(self) -> SessionConfig:
        """The effort interface's pilot pass: one period of the slowed excitation, no validation."""
        return dataclasses.replace(self.config, periods=1, validation_periods=0, validation_repeats=0, sweep_speeds=())


class ExperimentRunner:
    """One experiment at a time on the arm of ``setup``: :meth:`start`, :meth:`recalibrate`,
    :meth:`abort`, and :meth:`cycle` at the command rate; the newest joint state in :attr:`latest`
    (set by the host). The identification runs in ``worker``; the host is asked for what is its
    own (:class:`ExperimentHost`)."""

    def __init__(self, setup: ExperimentSetup, commands: CommandStream, host: ExperimentHost, log: Log,
                 worker: concurrent.futures.Executor, clock: Callable[[], float]) -> None:
        self.setup, self.commands, self.host, self.log, self._worker = setup, commands, host, log, worker
        self.clock = clock  # [s] the host's time, read where preparing took time (a model loaded, a bag opened)
        self.default_plan = self.plan("", 0)  # checked now, not at the start; a goal may name another
        self.running_plan = self.default_plan  # what the identification started last drives
        self.session: ExcitationSession | None = None
        self.recorder: RecordingThread | None = None  # the recording, written on a thread of its own
        self.latest: JointSample | None = None
        self.run_directory: Path | None = None
        self.result_summary: dict[str, Any] = {}
        self.last_model: Path | None = None  # the model file written last (what recalibrate updates)
        # that file loaded as a recalibration's target in the worker, with the file's stamp when it was asked
        self._preloaded: tuple[Path, tuple[int, int] | None, concurrent.futures.Future] | None = None
        self._calibrating: ModelToUpdate | None = None  # what the running experiment recalibrates (None: identifies)
        self._pilot = False  # the running experiment is the pilot pass
        self._starting = False  # an experiment was prepared by start(): a cycle begins it (_begin)
        self._start_requested = 0.0  # [s] when it was
        self._holding: ExcitationSession | None = None  # the session before it, commanding until then
        self._identification: concurrent.futures.Future | None = None
        self._next_log = 0.0  # time of the next progress line in the log

    def plan(self, excitation_file: str | Path, periods: int) -> ExcitationPlan:
        """The identification of ``excitation_file`` (empty: the setup's) for ``periods`` periods (0:
        the setup's), checked as :meth:`start` would run it with the held-out motion and the limits;
        ``ValueError`` (a ``TrajectoryFileError`` for the file) with the reason otherwise."""
        s = self.setup
        path = Path(excitation_file or s.excitation_file).expanduser()
        config = dataclasses.replace(s.config, periods=int(periods)) if periods else s.config
        slowdown = s.pilot_slowdown if s.interface == 'effort' else 0.0
        return plan_excitation(s.arm, path, config, s.validation, s.pilot_config, slowdown)

    @property
    def starting(self) -> bool:
        """An experiment was prepared by :meth:`start` and has not begun yet."""
        return self._starting

    @property
    def identifying(self) -> bool:
        """An identification runs in the worker, or its result has not been collected yet."""
        return self._identification is not None

    @property
    def experiment(self) -> str:
        """What runs (or ran last), in words."""
        return "recalibration" if self._calibrating is not None else "pilot pass" if self._pilot else "identification"

    def fresh_sample(self, now: float) -> JointSample | None:
        """The newest joint state if it arrived within the session's ``state_timeout``, else None."""
        sample = self.latest
        return sample if sample is not None and now - sample.receive <= self.setup.config.state_timeout else None

    # -- starting and stopping -------------------------------------------------------------------

    def _refused(self, message: str) -> tuple[bool, str]:
        self.log.error(message)
        return False, message

    def recalibrate(self, source: str | Path | None) -> tuple[bool, str]:
        """Start the short recalibration of the model file ``source`` (None or empty: the one written
        last) once it is loaded; ``(started, message)``. Refused, before the arm moves, without a model
        to update or with one the controllers would refuse."""
        source = source or self.last_model
        if not source:
            return self._refused("recalibrate refused: no model to update: set calibration_model to an identified "
                                 "model file, or identify first (~/start)")
        path = Path(source).expanduser()
        try:
            target = self.calibration_target(path)
        except (ModelFileError, IdentificationError, ValueError, OSError) as exc:
            return self._refused(f"recalibrate refused: model {path}: {exc}")
        return self.start(calibrate=target)

    def _preload(self, path: Path) -> None:
        """Load the model file just written as a recalibration's target, in the worker: the load takes
        0.5-1.8 s (measured in the main job), and in the host's callback it held up the joint states and
        the clock, whose backlog then made the recalibration's first commands late (stops 41-43)."""
        self._preloaded = (path, _file_stamp(path), self._worker.submit(ModelToUpdate.load, path, self.setup.arm))

    def calibration_target(self, path: Path) -> ModelToUpdate:
        """A recalibration's target, the model file ``path``: the one the worker loaded after this
        runner wrote it if the file is unchanged since (waiting for the worker if it still loads; its
        errors are the load's), else loaded now (:meth:`ModelToUpdate.load`)."""
        preloaded = self._preloaded
        if preloaded is not None and preloaded[0] == path and preloaded[1] is not None \
                and preloaded[1] == _file_stamp(path):
            return preloaded[2].result()
        return ModelToUpdate.load(path, self.setup.arm)

    def start(self, calibrate: ModelToUpdate | None = None, directory: Path | None = None,
              plan: ExcitationPlan | None = None) -> tuple[bool, str]:
        """Start an experiment now: the identification of ``plan`` (default: the setup's; first its
        pilot pass, if any), or with ``calibrate`` the recalibration of that model; ``(started,
        message)``. ``directory``: the identification after its pilot pass, in the pilot's folder.
        The motion begins in a later :meth:`cycle`, on a fresh joint state (:data:`START_STATE_LAG`).
        The host's time is read here, after what the caller prepared (a recalibration's model: 0.5-1.8 s
        measured), and again at the end."""
        s, now = self.setup, self.clock()
        if self._starting:
            return False, "busy: starting"
        if self.session is not None and (self.session.moving or self.session.phase is ExperimentPhase.IDENTIFY
                                         or self.recorder is not None):
            return False, f"busy: {self.session.phase.value}" + (" (closing the recording)" if not self.session.moving
                                                                 and self.recorder is not None else "")
        plan = self.running_plan if directory is not None else plan or self.default_plan
        pilot = calibrate is None and directory is None and plan.pilot is not None
        session = (ExcitationSession(s.arm, plan.pilot, s.pilot_config) if pilot
                   else ExcitationSession(s.arm, plan.trajectory, plan.config, s.validation) if calibrate is None
                   else ExcitationSession(s.arm, self.default_plan.trajectory, s.calibration_config))
        try:
            session.check_start(now, self.latest)
            directory = directory or new_run_directory(s.output_root)
            self.recorder = self.host.recorder(directory, "pilot_recording" if pilot else "recording")
        except SessionRefused as exc:
            return self._refused(f"start refused: {exc}" + self.host.refusal_hint(exc))
        except OSError as exc:
            return self._refused(f"start refused: cannot create the output in {s.output_root}: {exc}")
        # the session that commands the arm now (a pilot pass holding it) goes on until the new one begins:
        # a position or effort stream that stopped would time out the drives
        self._holding = self.session if self.session is not None and self.session.commanding else None
        self.session, self.run_directory, self.result_summary = session, directory, {}
        self._calibrating, self._pilot = calibrate, pilot
        if calibrate is None:
            self.running_plan = plan
        controller = self.commands.controller
        if controller is not None:
            controller.reset()
            if pilot:
                controller.use_model(s.nominal_feedforward)
        self.host.started(session)
        self.host.quiet_moment()
        # when the request was, after its preparation (the bag, the heap: 0.2-0.4 s): the start's wait for a
        # fresh state (cycle) gives up after state_timeout from then. Counted from before it, a preparation
        # longer than state_timeout began the motion at once, on the node's time and states of before the
        # preparation, whose backlog then moved the time on by the preparation's length: "commands late:
        # the last trajectory message was sent 1.2-2.3 s ago" (the main job's recalibration, stops 41-43)
        self._starting, self._start_requested = True, self.clock()
        approach = session.approach_time(session.q_start - self.latest.q)
        what = (f" recalibrating {calibrate.path}" if calibrate is not None else
                f" the pilot pass (the excitation {s.pilot_slowdown:g} x slower)" if pilot else "")
        message = (f"started{what}: approach {approach:.1f} s, excitation {session.config.periods} x "
                   f"{session.period:g} s" + (f", validation {session.config.validation_repeats} x "
                                              f"{session.validation_period:g} s" if session.validation is not None
                                              else "")
                   + f", about {session.motion_duration:.0f} s of motion; output {directory}")
        self.log.info(message)
        return True, message

    def _begin(self, now: float) -> None:
        """The start of the experiment :meth:`start` prepared: the approach from the newest state."""
        self._starting, self._holding = False, None
        self.commands.restart()
        self._next_log = now
        try:
            self.session.start(now, self.latest)
        except SessionRefused as exc:  # the arm moved or the states stopped since the request
            self.session.refuse(now, f"start refused: {exc}")
            self.close_recording()
        self._phase_changed(now)

    def refuse(self, now: float, message: str) -> None:
        """An experiment that could not start, shown as failed with ``message`` (nothing ran before)."""
        failed = ExcitationSession(self.setup.arm, self.default_plan.trajectory, self.setup.config,
                                   self.setup.validation)
        failed.refuse(now, message)
        self.session = failed
        self._phase_changed(now)

    def abort(self, now: float, reason: str) -> tuple[bool, str]:
        """Stop and hold the arm if an experiment is moving; ``(aborted, message)``."""
        session = self.session
        if self._starting:  # prepared, not yet moving: it does not begin (a session holding the arm goes on)
            self._starting = False
            self.close_recording()
            if self._holding is not None:
                self.session, self._holding = self._holding, None
                return True, "aborted before the arm moved: the previous experiment holds it"
            session.refuse(now, f"aborted before the start: {reason}")
            self._phase_changed(now)
            return True, "aborted before the arm moved"
        if session is None or not session.abort(now, reason):
            phase = session.phase.value if session is not None else ExperimentPhase.IDLE.value
            return False, f"nothing to abort: {phase}"
        self._phase_changed(now)
        return True, f"aborted: stopping in {session.stop.duration if session.stop else 0.0:.2f} s and holding"

    def stop(self, now: float | None, why: str) -> None:
        """Before the host goes: stop a moving arm (unless ``now`` is None: the host's time is gone),
        release it (effort interface), close the recording, wait for a running identification."""
        if now is not None and self.session is not None and self.session.moving:
            try:  # best effort: the host's publishers may be gone already (the ROS context shut down)
                self.abort(now, why)
            except Exception:  # noqa: BLE001
                pass
        if self.setup.interface == 'effort' and self.session is not None and self.session.commanding:
            try:
                self.commands.release(why)
            except Exception:  # noqa: BLE001
                pass
        self.close_recording()
        self._worker.shutdown(wait=True)

    def close(self) -> None:
        """The host is destroyed: close the recording, let a running identification go."""
        self.close_recording()
        self._worker.shutdown(wait=False)

    # -- the cycle -------------------------------------------------------------------------------

    def cycle(self, now: float) -> None:
        """At the command rate: begin a prepared experiment on a fresh joint state (the session before
        it commands until then), advance the session, end its recording, start and collect the
        identification, stream the commands, and log the progress every ``log_period``."""
        session = self.session
        if session is None:
            return
        if self._starting:
            if (now - session.measured_at(self.latest) <= START_STATE_LAG
                    or now - self._start_requested > session.config.state_timeout):  # else: refused as stale
                self._begin(now)
            elif self._holding is not None:
                self.commands.stream(now, self._holding)
            return
        if session.update(now, self.latest) is not None:
            self._phase_changed(now)
        if self.recorder is not None and session.recording_complete(now, None if self.latest is None
                                                                    else self.latest.stamp):
            self.close_recording()
            if session.phase is ExperimentPhase.IDENTIFY:
                self._identification = self._submit(session)
        if self._identification is not None and self._identification.done():
            self._identification_finished(now)
        if session.commanding:
            self.commands.stream(now, session)
        if self.setup.log_period > 0.0 and (session.moving or session.phase is ExperimentPhase.IDENTIFY) \
                and now >= self._next_log:
            self._next_log = now + self.setup.log_period
            self.log.info(f"{session.phase.value} {session.progress(now):.0f}%: {session.activity(now)}"
                          + (f"; {session.remaining(now):.0f} s of motion left" if session.moving else ""))

    def _submit(self, session: ExcitationSession) -> concurrent.futures.Future:
        """The recording's identification, in the worker thread."""
        s = self.setup
        arguments = (self.run_directory, session, s.arm, s.settings)
        if self._pilot:
            return self._worker.submit(identify_pilot, *arguments)
        if self._calibrating is None:
            return self._worker.submit(identify_recording, *arguments, self.running_plan, s.validation_file,
                                       s.interface)
        return self._worker.submit(recalibrate_recording, *arguments, self._calibrating,
                                   self.default_plan.trajectory)  # the setup's excitation

    def _phase_changed(self, now: float) -> None:
        session = self.session
        text = f"phase {session.phase.value}" + (f": {session.reason}" if session.reason else "")
        if session.phase is ExperimentPhase.ABORTED:
            self.log.warning(text)
        elif session.phase is ExperimentPhase.FAILED:
            self.log.error(text)
        else:
            self.log.info(text)
        self.commands.phase_changed(now, session)
        self.host.phase_changed(now)

    def close_recording(self) -> None:
        """Close the recording, if one is open, and say where it is."""
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return
        try:
            recorder.close()
        except OSError as exc:
            self.log.error(f"cannot close the recording: {exc}")
            return
        files = recorder.recorder
        self.log.info(f"recording closed: {files.bag.message_count} joint states in {files.bag.path} "
                      f"and {files.csv_path}")

    # -- the identification's end ------------------------------------------------------------------

    def _pilot_finished(self, now: float, future: concurrent.futures.Future) -> None:
        """Feed the pilot model forward (if it is usable) and start the identification's experiment."""
        try:
            model, line = future.result()
        except Exception as exc:  # noqa: BLE001 - a solver's or a bug's: the experiment goes on, nominal feedforward
            model, line = None, f"pilot pass not identified ({type(exc).__name__}: {exc}): nominal feedforward kept"
        if model is not None:  # one call site per severity (rclpy binds a call site to its first)
            self.log.info(line)
        else:
            self.log.warning(line)
        self.session.finish(now)
        if model is not None:
            self.commands.controller.use_model(model)
        started, message = self.start(directory=self.run_directory)
        if not started:
            self.session.fail(now, message)
            self._phase_changed(now)

    def _identification_finished(self, now: float) -> None:
        future, self._identification = self._identification, None
        if self._pilot:
            self._pilot_finished(now, future)
            return
        session = self.session
        try:
            run = future.result()
        except (IdentificationError, DataFileError, ModelFileError, ValueError, OSError) as exc:
            session.fail(now, f"{self.experiment} failed: {exc}")
            self._phase_changed(now)
            return
        except Exception as exc:  # noqa: BLE001 - a solver's or a bug's: report it, keep the host (and the hold)
            session.fail(now, f"{self.experiment} failed: {type(exc).__name__}: {exc}")
            self._phase_changed(now)
            return
        written = self.run_directory / "parameters.yaml"
        if isinstance(run, Calibration):
            for line in calibration_lines(run, self.setup.arm.n_joints, self.setup.settings.calibration_holdout):
                self.log.info(line)
            self.result_summary = calibration_summary(run, written, self._calibrating.path)
            self.host.payload_changed(run)
        else:
            for line in summary_lines(run) + experiment_lines(run):
                self.log.info(line)
            self.result_summary = identification_summary(run, written)
        self.last_model = written
        self._preload(written)
        self.log.info(f"wrote {written} and {self.run_directory / 'report'}")
        session.finish(now)
        self._phase_changed(now)


def _file_stamp(path: Path) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of ``path``, None if it cannot be read: a file changed since is loaded again."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
