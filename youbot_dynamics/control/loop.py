"""The control loop of a joint-torque controller, without ROS: what a cycle decides and what a host
(the controller node over DDS, ``sim_node``'s physics loop, ``youbot_driver``'s bus cycle) delivers.

:class:`ControlLoop` owns the safety guard and the law (and the float law of the collision reaction
``float``), the newest joint state and its plausibility check, the velocity from positions, enable
and disable, the reference bookkeeping (every new reference, enable and disable changes
:attr:`~ControlLoop.reference_id`; references planned off the control thread are installed between
two cycles), the payload, the goal-arrival verdict, the collision reaction, and letting go of the
arm: after a zero effort, one braking trajectory to the drives (:func:`~.release.release_waypoints`).
A cycle is :meth:`~ControlLoop.command` (the torque, or nothing) then :meth:`~ControlLoop.after`
(the observer, the fault report, the verdicts); the host delivers the torque between them and the
release through the ``release`` function it gives. Status lines go to the host's ``report``.
Behaviour and figures: doc/control.md. Not thread-safe: the host calls it from one thread at a time
(the node's cycle lock).
"""
from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..arm.description import ArmDescription
from ..dynamics.model import DynamicModel
from ..dynamics.consistency import check_model
from ..dynamics.payload import Payload, with_payload
from .release import release_waypoints
from .safety import GuardState, SafetyGuard
from .state_check import JointStateMonitor
from .terms import all_finite
from .trajectory import GoalArrival, TrajectoryError
from .velocity import VelocityFromPositions

__all__ = ["ControlLoop", "Done", "JointSample", "LoopOptions", "ZERO_CYCLES_ON_DISABLE"]

Array = np.ndarray
#: told whether a new reference was installed, and the description or the reason
Done = Callable[[bool, str], None]
#: a joint state: (arrival [s, steady clock], q, q', effort or None)
JointSample = tuple[float, Array, Array, "Array | None"]
ZERO_CYCLES_ON_DISABLE = 10  # zero-effort commands after a disable, when nothing takes the arm over


@dataclass(frozen=True)
class LoopOptions:
    """The loop's choices (the controller's parameters of the same meaning)."""

    releases: bool  # letting go hands the arm to the drives (release_topic set), else zero effort only
    bumpless: bool = True  # bumpless_enable: the torque ramp starts from the measured effort
    collision_reaction: str = "none"  # none | stop | float
    observe_command: bool = False  # observer_torque 'command': the observer takes our torque, else the effort


class ControlLoop:
    """See the module docstring. ``report(text, refused, error)`` logs and publishes a status line;
    ``release(times, q, dq, ddq)`` hands the arm to the drives (``ValueError`` if refused);
    ``observer`` (optional) estimates external torques (``update(...) -> collision``,
    ``describe_collision()``, ``reset_detection()``, ``set_model(model)``, ``collisions``);
    ``after_cycle(now, q, dq)`` runs after every cycle with a state (e.g. an action's verdict)."""

    def __init__(self, arm: ArmDescription, model: DynamicModel, law: Any, guard: SafetyGuard, options: LoopOptions, *,
                 report: Callable[[str, bool, bool], None], release: Callable[[Array, Array, Array, Array], None],
                 float_law: Any = None, observer: Any = None, velocity: VelocityFromPositions | None = None,
                 release_target: str = "", after_cycle: Callable[[float, Array, Array], None] | None = None) -> None:
        self.arm, self.law, self.guard, self.options = arm, law, guard, options
        self.model = model  # the model in use (with the payload): the law's, the guard's, the observer's
        self.base_model = model  # the model without a payload (a payload's model is built on it)
        self.float_law, self.observer, self.velocity = float_law, observer, velocity
        self._report, self._release_to, self._release_target = report, release, release_target
        self.after_cycle = after_cycle
        self.monitor = JointStateMonitor(arm)
        self.state: JointSample | None = None  # the newest joint state
        # the newest state the monitor accepted: the release starts there (not from another arm's state)
        self.trusted_state: JointSample | None = None
        self.stamp = 0.0  # header stamp of the newest joint state (its arrival time if unstamped)
        self.stamped = False
        self.header_stamp: Any = None  # the same as its message (None: not from a message, or unstamped)
        self.floating = False  # the collision reaction 'float' is active (until enable)
        self.holding_arm = False  # enabled since the last release: the arm is ours to let go
        self.zero_cycles = 0
        self.ramp_end = 0.0  # [s, steady clock] end of the current enable ramp
        self.reference_id = 0  # changes with every new reference, enable and disable
        self._arrival: tuple[GoalArrival, int] | None = None  # the goal being watched, with its reference id
        self._last_guard_state = guard.state
        self.coast_began: float | None = None  # start of the current coast over late joint states
        self.zero = np.zeros(arm.n_joints)
        self.planned: queue.SimpleQueue = queue.SimpleQueue()  # (what, reference id, install, error, done)
        self.payload_updates: queue.SimpleQueue = queue.SimpleQueue()  # (payload, model), checked
        self.payload = Payload.of(0.0)

    @property
    def enabled(self) -> bool:
        return self.guard.state is GuardState.ENABLED

    # -- joint states -----------------------------------------------------------------------------

    def take_state(self, arrival: float, stamp: float, header_stamp: Any, q: Array, dq: Array,
                   effort: Array | None) -> None:
        """A new joint state (``arrival`` on the steady clock, ``stamp`` [s] its measurement instant,
        zero if unknown; ``header_stamp`` the same as its message): judged by the plausibility check,
        its velocity estimated, kept as the newest state."""
        self.stamped = stamp > 0.0
        self.stamp = stamp if self.stamped else arrival
        self.header_stamp = header_stamp if self.stamped else None
        problem = self.monitor.check(self.stamp, q)
        if problem is not None:
            self.guard.fault(problem, trust_states=False)  # only while enabled; reported by the next cycle
            if self.velocity is not None:  # nothing differentiated against a state that is not the arm's
                self.velocity.reset()
        elif self.velocity is not None and all_finite(q) and all_finite(dq):
            dq = self.velocity.update(self.stamp, q, dq)
        self.state = (arrival, q, dq, effort)
        if problem is None:
            self.trusted_state = self.state

    # -- enable / disable -------------------------------------------------------------------------

    def enable(self, now: float, no_state: str, publishers_problem: str | None = None) -> tuple[bool, str]:
        """Hold the current position and ramp the torque in; ``(success, message)``. ``no_state``:
        what to say without a joint state; ``publishers_problem``: the host's check of who publishes
        the joint states (None: fine)."""
        if self.state is None:
            return False, no_state
        stamp, q, dq, effort = self.state
        timeout = self.guard.config.state_timeout
        if now - stamp > timeout:
            return False, f"joint state stale: {1e3 * (now - stamp):.1f} ms old (timeout {1e3 * timeout:.0f} ms)"
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
            return False, "joint state contains NaN or infinite values"
        if publishers_problem is not None:
            return False, publishers_problem
        if self.enabled:
            return True, "already enabled"
        try:
            self.law.hold(q)
        except TrajectoryError as exc:
            return False, (f"cannot hold the current position: {exc} (bring the arm inside its limits first, e.g. "
                           f"by the drives' own position control; after calibration the joints sit at their "
                           f"stops, q = 0)")
        initial = effort if self.options.bumpless and effort is not None and np.all(np.isfinite(effort)) else None
        self.guard.enable(now, initial)
        self.monitor.anchor(self.stamp, q)  # the state it holds is the arm's: judged on from there
        self.trusted_state = self.state
        self.floating = False
        if self.observer is not None:
            self.observer.reset_detection()
        self.holding_arm = True
        self.reference_id += 1
        self._last_guard_state = self.guard.state
        self.ramp_end = now + self.guard.config.ramp_time
        self.zero_cycles = 0
        source = 'the measured effort' if initial is not None else 'zero'
        return True, (f"enabled: holding {np.round(q, 4).tolist()}, torque ramp over "
                      f"{self.guard.config.ramp_time:g} s from {source}")

    def disable(self) -> str:
        was = self.guard.state
        self.guard.disable()
        self.reference_id += 1
        self._last_guard_state = self.guard.state
        if was is not GuardState.DISABLED:
            self.zero_cycles = self._zero_cycles_on_letting_go()
            if self.zero_cycles and self.options.releases:
                return "disabled: zero effort, then released to the drives"
            return "disabled: zero effort, then no commands"
        return "already disabled"

    # -- references -------------------------------------------------------------------------------

    def apply(self, what: str, install: Callable[[], str], done: Done | None = None) -> None:
        """Install a new reference now: ``install()`` sets it and returns a description; a
        ``ValueError`` (e.g. :class:`~.trajectory.TrajectoryError`) refuses it with the reason.
        ``done(accepted, text)`` is told either way (the reference installed is :attr:`reference_id`)."""
        if self.refused_unless_enabled(what, done):
            return
        try:
            description = install()
        except ValueError as exc:
            self.refuse_reference(what, exc, done)
            return
        self.reference_id += 1
        self._report(f"{what} accepted: {description}", False, False)
        if done is not None:
            done(True, description)

    def refused_unless_enabled(self, what: str, done: Done | None = None) -> bool:
        """Refuse the reference ``what`` (and tell ``done``) unless enabled; whether it did."""
        if self.enabled:
            return False
        self.refuse_reference(what, f"the controller is {self.guard.state.value} (call ~/enable first)", done)
        return True

    def refuse_reference(self, what: str, reason: Any, done: Done | None) -> None:
        self._report(f"{what} refused: {reason}", True, False)
        if done is not None:
            done(False, f"{what} refused: {reason}")

    def watch_arrival(self, goal: Array, start: float, duration: float) -> None:
        """From an ``install`` function of :meth:`apply`: report whether the arm gets to ``goal``,
        planned ``duration`` [s] after ``start`` [s, steady clock] (:class:`~.trajectory.GoalArrival`),
        unless another reference, a disable or a fault comes first."""
        arrival = GoalArrival(goal, start, duration, self.law.kp, self.guard.torque_limit, self.arm.joint_names)
        self._arrival = (arrival, self.reference_id + 1)  # apply() gives the reference it installs the next id

    def _judge_arrival(self, now: float, q: Array, dq: Array) -> None:
        arrival, reference_id = self._arrival
        if reference_id != self.reference_id or not self.enabled or self.floating:
            self._arrival = None
            return
        verdict = arrival.verdict(now, q, dq, self.guard.limit_reason)
        if verdict is not None:
            self._arrival = None
            self._report(verdict[1], False, not verdict[0])

    def _install_planned(self) -> None:
        while True:
            try:
                what, reference_id, install, error, done = self.planned.get_nowait()
            except queue.Empty:
                return
            if error is not None:
                self.refuse_reference(what, error if isinstance(error, ValueError) else f"planning failed: {error!r}",
                                      done)
            elif reference_id != self.reference_id:
                self.refuse_reference(what, "the controller was enabled, disabled or got another reference while "
                                            "it was planned (resend it)", done)
            else:
                self.apply(what, install, done)

    def prepare_payload(self, payload: Payload) -> None:
        """Build and check the model of the arm holding ``payload`` at the tool (~3 ms: call it off the
        control thread) and queue it: the next cycle installs it (:meth:`command`); a model that fails
        its check (:class:`~..dynamics.consistency.ModelConsistencyError`) is refused with the reason."""
        try:
            model = with_payload(self.base_model, payload, self.arm.tool)
            check_model(model, self.arm)
        except ValueError as exc:
            self.refuse_reference("payload", exc, None)
            return
        self.payload_updates.put((payload, model))

    def plan_job(self, what: str, compute: Callable[[], Callable[[], str]], done: Done | None = None
                 ) -> Callable[[], None] | None:
        """A reference computed off the control thread (IK, lines, limit checks: 1-40 ms): the job that
        runs ``compute()`` (no model, no law: it runs concurrently with the loop), which returns the
        ``install`` function of :meth:`apply` (run by the control thread at its next cycle) or raises
        ``ValueError`` (refused with the reason); None if refused at once (not enabled). A plan is also
        refused if the controller was disabled or got another reference while it was computed (resend
        it then). ``done`` as in :meth:`apply`, from the control thread."""
        if self.refused_unless_enabled(what, done):
            return None
        reference_id, planned = self.reference_id, self.planned

        def job() -> None:
            try:
                planned.put((what, reference_id, compute(), None, done))
            except Exception as exc:  # noqa: BLE001 - ValueError: refused; anything else: reported too
                planned.put((what, reference_id, None, exc, done))

        return job

    def _install_payload(self) -> None:
        """The newest checked payload's model into the law, the float law, the guard and the observer."""
        while not self.payload_updates.empty():
            payload, model = self.payload_updates.get_nowait()
        self.set_model(model)
        self.payload = payload
        self._report(f"payload {payload.mass:g} kg at {np.round(payload.position, 4).tolist()} m in the tool frame "
                     "applied (the model's gravity, inertia and load friction hold it from now on)", False, False)

    def set_model(self, model: DynamicModel) -> None:
        """A checked model (e.g. with a payload) for the law, the float law, the guard and the observer."""
        self.law.set_model(model, checked=True)
        self.model = model
        if self.float_law is not None:
            self.float_law.set_model(model, checked=True)
        self.guard.set_model(model)
        if self.observer is not None:
            self.observer.set_model(model)

    # -- the cycle --------------------------------------------------------------------------------

    def command(self, start: float) -> tuple[Array, bool]:
        """The cycle up to its torque, at ``start`` [s, steady clock]: ``(tau, publish)`` (``publish``
        False: nothing is commanded this cycle; ``tau is`` :attr:`zero`: zero effort)."""
        if not self.planned.empty():
            self._install_planned()
        if not self.payload_updates.empty():
            self._install_payload()
        stamp = q = dq = None
        if self.state is not None:
            stamp, q, dq, _ = self.state
        publish = True
        try:
            law = self.float_law if self.floating else self.law
            tau = self.guard.command(start, stamp, q, dq, law.torque)
        except Exception as exc:  # noqa: BLE001 - a bug in a law must not leave the last torque active
            self.guard.disable()
            self.zero_cycles = self._zero_cycles_on_letting_go()
            self._report(f"disabled: the control law failed: {exc!r}", False, True)
            tau = None
        if tau is None:
            tau = self.zero
            if self.guard.state is GuardState.DISABLED:
                publish = self.zero_cycles > 0
                self.zero_cycles = max(self.zero_cycles - 1, 0)
            elif self.options.releases:  # a fault with zero effort: let go as a disable does
                publish = self.holding_arm
        return tau, publish

    def coast_ended(self, start: float) -> float | None:
        """How long the guard coasted over late joint states, once, at the first cycle after a coast
        that ended with the controller still enabled (else None)."""
        if self.guard.coasting:
            if self.coast_began is None:
                self.coast_began = start
            return None
        began, self.coast_began = self.coast_began, None
        return None if began is None or self.guard.state is not GuardState.ENABLED else start - began

    def let_go(self, tau: Array) -> bool:
        """Right after the torque ``tau`` went out: if it was the zero effort that ends our hold, the
        release (the arm falls until the drives hold it); whether the arm was handed to the drives."""
        return tau is self.zero and self.holding_arm and self.options.releases and self.release()

    def after(self, start: float, state: JointSample | None, tau: Array, published: bool) -> None:
        """The cycle after its torque: the observer on the state used (and our torque if ``published``),
        the fault report, the arrival verdict, the host's ``after_cycle``."""
        if self.observer is not None and state is not None:  # after the torque: not in the latency
            self._observe(state, tau if published and tau is not self.zero else None)
        if self.guard.state is not self._last_guard_state:
            self._last_guard_state = self.guard.state
            if self.guard.state is GuardState.FAULT:
                if self.guard.config.fault_behaviour == 'hold':
                    then = "holding"
                else:
                    then = ("zero effort" if not self.options.releases
                            else "zero effort, then released to the drives,")
                self._report(f"fault: {self.guard.fault_reason}; {then} until ~/enable", False, True)
        if self._arrival is not None and state is not None:
            self._judge_arrival(start, state[1], state[2])
        if state is not None and self.after_cycle is not None:
            self.after_cycle(start, state[1], state[2])

    def _observe(self, state: JointSample, tau: Array | None) -> None:
        """The external-torque estimate on the state just used and the torque it got (``None``: none of
        ours acts), or its measured effort (``observer_torque``); a collision gets its reaction."""
        _, q, dq, effort = state
        command = self.options.observe_command and tau is not None
        if not self.observer.update(self.stamp, q, dq, tau if command else effort, measured=not command,
                                    header_stamp=self.header_stamp):
            return
        reaction = self.options.collision_reaction if self.enabled and not self.floating else 'none'
        try:
            if reaction == 'stop':
                self.law.hold(q)
                self.reference_id += 1  # a reference planned meanwhile is not installed over the stop
            elif reaction == 'float':
                self.float_law.hold(q)
                self.floating = True
        except TrajectoryError as exc:  # q a hair beyond a limit: the law keeps its reference
            reaction = f"{reaction} impossible ({exc})"
        self._report(f"{self.observer.describe_collision()}; reaction {reaction}", False, True)

    # -- letting go -------------------------------------------------------------------------------

    def _zero_cycles_on_letting_go(self) -> int:
        """Zero-effort commands after a disable: with a release, one before it (the release follows in
        the same cycle) and none after it (a zero effort would take the arm back from the drives)."""
        if not self.options.releases:
            return ZERO_CYCLES_ON_DISABLE
        return 1 if self.holding_arm else 0

    def release(self) -> bool:
        """Once after letting go of the arm (after a zero effort, which the drives must get first:
        they take the mode of the last command): hand it to the drives' position control with a
        braking trajectory from the newest trusted state (:mod:`.release`); whether it went out."""
        if not self.holding_arm:
            return False
        self.holding_arm = False
        if not self.options.releases:
            return False
        state = self.trusted_state
        if state is None:
            self._report("not handed to the drives: no joint state", False, True)
            return False
        try:
            times, q, dq, ddq = release_waypoints(self.arm, state[1], state[2])
            self._release_to(times, q, dq, ddq)
        except ValueError as exc:
            self._report(f"not handed to the drives: {exc}", False, True)
            return False
        self._report(f"released to the drives {self._release_target}: braking to rest in "
                     f"{times[-1]:.2f} s at {np.round(q[-1], 4).tolist()}, held there", False, False)
        return True

    def stop(self) -> bool:
        """Before shutdown: disable; whether the arm was being commanded (then the host sends one zero
        effort, unless the arm is no longer ours, and calls :meth:`release`)."""
        commanding = self.guard.state is not GuardState.DISABLED or self.zero_cycles > 0
        self.guard.disable()
        self.zero_cycles = 0
        return commanding and (self.holding_arm or not self.options.releases)
