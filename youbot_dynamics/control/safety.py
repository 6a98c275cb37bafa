"""The safety guard between a control law and the drives: enable ramp, state checks, limits, faults.

Each cycle the node calls ``tau = guard.command(now, stamp, q, dq, law)`` with its clock ``now``,
the time ``stamp`` of the newest joint state on the same clock (its receive time; ``None`` before
the first), that state and the law ``law(t, q, dq) -> tau`` (e.g. ``controller.torque``). In order:

1. **Disabled** (:meth:`SafetyGuard.disable`, the initial state): ``None``.
2. **State checks**: no joint state, NaN / infinity in ``q`` or ``q'`` (or in the law's torque) is
   a *fault*: latched with its reason in :attr:`SafetyGuard.fault_reason` until the next
   :meth:`SafetyGuard.enable`. A state older than ``state_timeout`` (default 50 ms) is not given
   to the law; the guard *coasts* on the gravity torque of the last good state,
   ``tau = G(q_last)`` (through the enable ramp and steps 5-7; :attr:`SafetyGuard.coasting`,
   :attr:`SafetyGuard.coast_cycles`), while the state is at most ``state_loss_timeout`` old
   (default 0.5 s; at least ``state_timeout``) and the arm, at the last state's speed, can have
   moved at most :data:`COAST_DISTANCE` (10 mrad) since; beyond either it is a fault. A fresh
   state ends the coast. Why, measured under ``ros2 launch`` (``sim.launch.py`` +
   ``control.launch.py``, both at SCHED_FIFO 50) holding a goal on a 2-core VM busy with two CPU
   hogs: the simulator stopped publishing for 50-93 ms 32 times in 180 s (its stamps show the
   same gaps: the publisher stalls, the simulated arm with it), and once for more than 250 ms in
   another run; 20-23 ms on an idle machine. A fault at 50 ms ended every such hold for
   nothing. A loss of the joint states (a driver gone) is still a fault within 0.5 s, and an arm
   in motion is never left without feedback for longer than it takes to move 10 mrad (at
   0.2 rad/s: 50 ms, the plain ``state_timeout``).
3. **Fault behaviour** ``"zero"``: ``None``. ``"hold"``: a low-gain PD + gravity hold at the last
   good position ``q_h``, ``tau = G(q) + Kp_h (q_h - q) - Kd_h q'`` with the current state while
   it is valid, else ``G(q_h)`` (no feedback; also after a fault of untrusted states,
   :meth:`SafetyGuard.fault`); gains from ``hold_bandwidth`` (default 10 rad/s,
   damping 1) on the model's reference inertia (:func:`~.terms.reference_inertia`). Without a good
   state since the last enable there is nothing to hold: ``None``.
4. **Enable ramp**: over ``ramp_time`` after :meth:`SafetyGuard.enable` the torque blends from the
   initial torque ``tau_0`` (default zero; pass the measured effort for a bumpless switch) to the
   law's, ``tau = tau_0 + s (tau_law - tau_0)`` with the C1 smoothstep ``s = 3 x^2 - 2 x^3``,
   ``x = (now - t_enable) / ramp_time``.
5. **Joint-limit guard**: in the zone of width ``limit_margin`` before a limit, with the depth
   ``w in [0, 1]`` (0 at the zone's edge, 1 at the limit and beyond), the torque towards the limit
   is bounded, for the upper limit ``tau_j <= (1 - w) tau_max_j + w G_j(q) - w d_j max(q'_j, 0)``
   (the lower limit mirrored): the allowed torque shrinks continuously from the saturation limit to
   the torque that just carries gravity (no net push at the limit), and motion towards the limit is
   damped (``d`` = ``limit_damping``, default ``tau_max / velocity_max``). Torques away from the
   limit are untouched.
6. **Velocity guard**: above the guard speed ``v_g`` towards the direction of motion, with the
   zone width ``b = (1 - velocity_guard) velocity_max / 2`` (``velocity_guard`` default 0.9), the
   depth ``w = clip((|q'_j| - v_g) / b, 0, 1)`` and the overshoot ``u = clip((|q'_j| - v_g - b) / b, 0, 1)``,
   the torque that accelerates the joint further is bounded, moving positive
   ``tau_j <= (1 - w) tau_max_j + w G_j(q) - w d_j (q'_j - v_g) - u tau_max_j`` (negative mirrored):
   at ``v_g + b`` no net push beyond gravity is left and the damping ``d`` pulls the joint back;
   beyond it the bound falls on to full reverse torque at ``v_g + 2 b`` (against what gravity's
   error or the other joints' motion push in), whatever the law commands (a wrong model, gains or
   goal). Torques that slow the joint are untouched. The guard speed is
   ``v_g = min(velocity_guard velocity_max, sqrt(2 a_b s))`` with ``s >= 0`` the distance to the
   position limit ahead and ``a_b = 2 acceleration_max`` (:data:`BRAKING_FACTOR`): far from the
   limits 0.9 x ``velocity_max`` (no net push at 0.95 x, full reverse at ``velocity_max``), near a
   limit the speed from which the joint can still stop before it (a reference within
   ``acceleration_max`` stopping there is at most ``sqrt(2 acceleration_max s)``, 1/sqrt(2) of
   ``v_g``: not touched). The guard ends at ``velocity_max`` so that the 10 % up to the bound the
   package promises (1.1 x ``velocity_max``, :mod:`youbot_dynamics.sim.limits`) is left for what
   it cannot see: it acts on the states the node receives, and while the controller stalls (a busy
   machine) the drives keep its last torque (in CI, with full reverse only at 1.1 x, three
   joints reached 1.10-1.12 x during the main job's control runs at 0.8 x ``velocity_max``, 37-44 %
   of the control cycles missed). Margin: in the simulator at 1 kHz a law commanding saturated
   torque on every joint for 3 s, into the stops, peaks at 0.96 x ``velocity_max`` and
   0.12 mrad beyond a limit (test/test_controller_safety.py; bounded there by 1.0 x and 1 mrad).
   **Stall bound** (``stall_time`` T, default 0.1 s; 0 turns it off): the guard cannot see what
   happens while the controller stalls or acts on late states, and the drives keep its last
   torque meanwhile. So every torque is one that the arm may receive for T without a joint passing
   ``velocity_max``: with ``p = C(q, q') q' + G(q) + t_f(q')`` the model's torque that keeps the
   state unaccelerated, the torque beyond it accelerates the arm, all joints together through
   ``M(q)``: ``a = M(q)^-1 e`` with ``e = tau - p``, and the bound is
   ``(-s velocity_max - q') / T <= a <= (s velocity_max - q') / T`` per joint (``s`` =
   :data:`STALL_VELOCITY`, 0.95); a torque that breaks it
   loses ``M(q) (a - a_b)``, ``a_b`` the accelerations clipped to the bound (the other joints'
   torques change only by what couples them to the clipped ones). With the model's Coulomb-like
   friction, its part in ``p`` is replaced by the kinetic level that acts while the joint moves
   towards the bound: ``e_j`` is the torque beyond ``p_j - part_j + up_j`` or below
   ``p_j - part_j - down_j``, up ``fc + fl |G| + fa``, down ``fc + fl |G| - fa``
   (:meth:`~.terms.ModelTerms.kinetic_levels`), zero between: a torque that breaks a joint away
   from static friction is allowed, as far as the model knows that friction. At rest one joint
   alone may take ``e_j = s velocity_max_j / (T (M^-1)_jj)``.
   **Breakaway credit** (:func:`breakaway_credit`): the model's friction may be short of the
   joint's (identification data that barely move the wrist leave ``fc ~ 0``; issue 46 item 5:
   computed torque then barely moved joints 4-5, 292 / 277 mrad RMS on a 0.5 rad stroke, and PD +
   gravity on the nominal model did not lift joint 4, issue 48), and the bound above then stops the
   torque that would break the joint away at the reach, ``M_eff s velocity_max / T`` (0.32 / 0.29
   N m on joints 4 / 5 at the candle). The credit rests on what each joint shows, not on the model's
   friction parameters: over windows of :data:`BREAKAWAY_WINDOW` (15 ms) of measured states the
   guard finds each joint's resistance from the momentum balance,
   ``H_j = integral(tau_prev - base) dt / w - (M a)_j``, ``a = (q'_end - q'_start) / w``
   (``tau_prev`` the torque it published, acting since the state before, ``base = C q' + G + fv q' + f0``
   of the model, ``w`` the window's length): the friction (with the model's errors in ``G``, ``f0``) that
   held the joint or resisted its sliding. On the side of ``H`` the Coulomb level of the bound becomes
   ``max(level, min(r H, level + B))``: the friction assumed to act over a stall is ``r`` times what
   the joint showed, capped at the model's level plus the **breakaway allowance** ``B`` (half the torque
   limit, :func:`~.terms.breakaway_allowance`). The argument (the bound's own, with ``r H`` for the
   model's level): a joint that held ``H`` at rest has static friction ``f_s >= H``; if the torque kept
   over the stall breaks it away, Stribeck's dip leaves at least ``r_s f_s`` (:data:`KINETIC_RATIO`,
   0.5; the simulated joints keep 70 %, the Coulomb level over the breakaway level ``fc / (fc + fs)``),
   so the torque beyond the friction is at most ``(tau - base - r_s H)``, which the bound keeps within
   ``M (s velocity_max - q') / T``: ``|q'_j| <= s velocity_max`` after ``T``, as without the credit. A
   joint sliding one way faster than :data:`SLIDING_VELOCITY` (0.1 rad/s, past the dip) through the
   window is credited ``r_k = 0.8`` (:data:`SLIDING_RATIO`) of its resistance: kinetic friction changes
   with speed, position and load by less over a stall. ``H`` counts only when two windows in a row find
   it on the same side (the smaller is kept, at the smaller ratio), when no joint accelerated faster than
   ``acceleration_max`` over the window (a loop out of control or on late states: its momentum balance
   is no evidence; computed torque on 30 ms old states reached 1.27-1.81 x ``velocity_max`` without
   both checks, 1.07 x with the acceleration check alone (25 ms windows), 0.93-0.96 x with both, as
   without the credit), when the joint did not move both ways faster than
   :data:`BREAKAWAY_REST_VELOCITY` and ``H`` resists its motion; it is dropped when the joint moves the
   other way, on enable and with a new model. What it allows: a ratchet at rest, ``e <= r_s H + M_eff
   reach`` each pair of windows, up to a static friction of ``min(level + B, M_eff reach / (1 - r_s))``
   beyond the model's (joints 4 / 5 at the candle: 0.65 / 0.58 N m; more holds the joint, and a goal's
   verdict names the stall bound). Measured (test/test_controller_safety.py, the model's fc4 = fc5 = 0):
   computed torque 28.4 / 9.8 mrad RMS on a simulated wrist with 0.45 / 0.4 N m of dry friction (11.2 /
   7.4 with the simulator's Stribeck and load-dependent friction), 6.9 / 1.2 on the issue's 0.7 rad
   stroke (409 / 44 before); a joint held at 90 % of its breakaway torque, then pushed by a law at the
   torque limit that stalls for ``T``, at most 0.63 x ``velocity_max`` (its friction dropping to 56 %;
   crediting ``r_s = 1``: 1.00 x). Beyond the premise: a resistance that vanishes over the stall (an
   obstacle that gives way) leaves up to ``r H <= level + B`` unbalanced. Tracking and regulation within
   ``acceleration_max`` stay inside it (one compiled model call, shared with computed torque:
   :meth:`~..dynamics.model.DynamicModel.dynamics_terms` keeps the last state's terms).
   (Before, per joint: ``|e_j| <= m_j (velocity_max_j -+ q'_j) / T`` with ``m_j`` the smallest
   ``1 / (M^-1)_jj`` over the workspace, which counts the torque that keeps a joint on its path
   while the others accelerate (``M_jk q''_k``) as its own excess: with 0.5 kg at the tool, computed
   torque on the demo's stroke was clipped by up to 0.65 N m on joint 4 and its tracking error
   doubled, 2.13 mrad RMS instead of 1.04.) Above ``velocity_max`` it pulls the joint back with
   the time constant T. Why,
   measured: a loaded CI run (two CPU hogs) failed the main job with three joints at 1.106-1.109 x
   ``velocity_max`` while computed torque tracked at 0.8 x ``velocity_max`` with a p99 latency of
   41 ms and errors of 0.2 rad; in the simulator computed torque at 40 rad/s on joint states 30 ms
   old reached 1.6-3.0 x ``velocity_max`` without the bound, 0.92-0.96 x with it, and a runaway
   law's torque held for 0.1 s from 0.85 x ``velocity_max`` 2.2-4.9 x without, at most 1.02 x with
   it (test/test_controller_safety.py; aimed at 1.0 x instead of :data:`STALL_VELOCITY`, up to
   1.07 x: ``M``, ``C q'`` and ``G`` change over the stall).
   :attr:`SafetyGuard.limited` says per joint which bound changed its torque in the last cycle
   (:meth:`SafetyGuard.limit_reason`: the bound with the numbers, for a goal's verdict).
7. **Saturation** per joint to ``+-tau_max`` (``torque_limit``; default
   ``min(effort_max, drive_torque_limit)``: the practical limits of the arm description, below the
   drives' peak torque; a larger value is refused with the joint and its limit: a limit the drives
   cannot give is a mistake, not a request to saturate later). :attr:`SafetyGuard.saturated` flags
   the joints clipped in the last cycle.

Steps 5-7 (:meth:`SafetyGuard._bounded`; the limit and velocity guards are evaluated only inside
their zones, the stall bound every cycle: one compiled model call) bound every torque that leaves:
the law's, the enable ramp's and the fault hold's.
:meth:`SafetyGuard.fault` latches a fault found elsewhere (e.g. an implausible joint state,
:mod:`.state_check`).

**What the node does with the result**: publish a returned array as the effort command; on
``None`` publish a zero-effort command every cycle (the drives then only brake through friction),
never the last torque. A fault stays until the operator (or the node's service) calls
:meth:`SafetyGuard.enable` again, which restarts the ramp.

Not thread-safe (its own state: enable, ramp, coast, fault; the model it evaluates is, with a
workspace per thread).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

import numba
import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, check_joint_values
from ..dynamics.friction import FRICTION_ROWS, kinetic_levels
from ..dynamics.model import DynamicModel
from .terms import ModelTerms, all_finite, bandwidth_gains, breakaway_allowance, per_joint, reference_inertia

__all__ = ["BRAKING_FACTOR", "BREAKAWAY_REST_VELOCITY", "BREAKAWAY_WINDOW", "COAST_DISTANCE", "FAULT_BEHAVIOURS",
           "KINETIC_RATIO", "SLIDING_RATIO", "SLIDING_VELOCITY", "STALL_BOUND", "STALL_VELOCITY", "TORQUE_LIMIT",
           "UNBOUNDED", "ZONE_BOUND", "GuardState", "SafetyConfig", "SafetyGuard", "breakaway_credit", "smoothstep",
           "stall_kernel", "unaccelerated"]

Array = NDArray[np.float64]
Law = Callable[[float, Array, Array], Array]

FAULT_BEHAVIOURS = ("zero", "hold")
BRAKING_FACTOR = 2.0  # braking deceleration of the velocity guard near a limit, x acceleration_max
COAST_DISTANCE = 0.01  # [rad] the most a joint may move at its last speed while the guard coasts
STALL_VELOCITY = 0.95  # x velocity_max: the stall bound's aim (the model's change over stall_time: the rest)
KINETIC_RATIO = 0.5  # r_s: a joint that breaks away from static friction f_s keeps at least r_s f_s while it slides
SLIDING_RATIO = 0.8  # r_k: a sliding joint keeps at least r_k of the friction it had over the last window
BREAKAWAY_REST_VELOCITY = 0.005  # [rad/s] v_r: slower is at rest, faster moves one way
SLIDING_VELOCITY = 0.1  # [rad/s] v_k: faster slides past the Stribeck dip (slower creeps: it may still break away)
BREAKAWAY_WINDOW = 0.015  # [s] the windows over which the guard measures each joint's resistance


class GuardState(str, Enum):
    """``disabled``: no torque; ``enabled``: the law's torque, bounded; ``fault``: latched, zero or hold."""

    DISABLED = "disabled"
    ENABLED = "enabled"
    FAULT = "fault"


@dataclass(frozen=True)
class SafetyConfig:
    """Settings of :class:`SafetyGuard` (SI units; per-joint values accept a scalar)."""

    state_timeout: float = 0.05  # [s] joint state older than this is not used (coast, then fault)
    state_loss_timeout: float = 0.5  # [s] joint state older than this is a fault (at least state_timeout)
    fault_behaviour: str = "zero"  # "zero" or "hold"
    torque_limit: Any = None  # [N m] per joint; default min(effort_max, drive_torque_limit)
    limit_margin: float = 0.05  # [rad] width of the guard zone before each joint limit
    limit_damping: Any = None  # [N m s/rad] per joint; default torque_limit / velocity_max
    velocity_guard: float = 0.9  # fraction of velocity_max where the velocity guard starts
    ramp_time: float = 0.5  # [s] torque ramp after enable (0: none)
    hold_bandwidth: float = 10.0  # [rad/s] of the PD hold on a fault (behaviour "hold")
    stall_time: float = 0.1  # [s] a stall the torque must survive within velocity_max (0: no stall bound)

    def __post_init__(self) -> None:
        for name in ("state_timeout", "state_loss_timeout"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.fault_behaviour not in FAULT_BEHAVIOURS:
            raise ValueError(f"fault_behaviour must be one of {FAULT_BEHAVIOURS}, got {self.fault_behaviour!r}")
        for name in ("limit_margin", "hold_bandwidth"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 < self.velocity_guard < 1.0:
            raise ValueError(f"velocity_guard must be in (0, 1), got {self.velocity_guard}")
        if not self.stall_time >= 0.0:
            raise ValueError(f"stall_time must be non-negative, got {self.stall_time}")
        if not self.ramp_time >= 0.0:
            raise ValueError(f"ramp_time must be non-negative, got {self.ramp_time}")


_LATE = "late"  # a joint state older than state_timeout: coast or fault (SafetyGuard.command)


def smoothstep(x: float) -> float:
    """``3 x^2 - 2 x^3`` of ``x`` clipped to ``[0, 1]``: 0 to 1 with zero slope at both ends."""
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


# rows of the friction rows the stall bound reads (FRICTION_ROWS of dynamics.friction)
_FV, _F0 = FRICTION_ROWS.index("fv"), FRICTION_ROWS.index("f0")
# rows of SafetyGuard's breakaway memory (breakaway_credit's ``memory``): the resistance H found by the last
# window (signed), the ratio it is credited at, the window's impulse integral(tau_prev - base) dt, the velocity at
# its start, its smallest and largest velocity, the torque published last
_HELD, _RATIO, _IMPULSE, _START_VELOCITY, _SLOWEST, _FASTEST, _PREVIOUS, _FOUND, _FOUND_RATIO = range(9)
# and of its clock: the window's start, the last observed time [s], 1 once a window runs
_SINCE, _LAST, _RUNNING = range(3)


@numba.njit(cache=True, nogil=True)
def unaccelerated(dq: Array, terms: Array, friction: Array) -> tuple[Array, Array]:
    """``(base, levels)``: the model's torque that keeps the state unaccelerated without its Coulomb-like
    part, ``base = C q' + G + fv q' + f0``, and its kinetic Coulomb levels (2, n), up ``fc + fl |G| + fa``,
    down ``fc + fl |G| - fa`` (:func:`~..dynamics.friction.kinetic_levels`); ``terms`` packed as in
    :func:`stall_kernel`."""
    n = dq.shape[0]
    coriolis, gravity = terms[n], terms[n + 1]
    base = np.empty(n)
    for j in range(n):
        base[j] = coriolis[j] + gravity[j] + friction[_FV, j] * dq[j] + friction[_F0, j]
    return base, kinetic_levels(friction, gravity)


@numba.njit(cache=True, nogil=True)
def _close_window(memory: Array, m: Array, dq: Array, duration: float, acceleration_max: Array) -> None:
    """The resistance of each joint over a window of ``duration`` [s] that ends at the velocity ``dq``:
    ``H = integral(tau - base) dt / duration - (M a)_j``, ``a = (q'_end - q'_start) / duration``, kept as
    ``memory[_HELD]`` with the ratio it is credited at (:data:`SLIDING_RATIO` if the joint slid one
    way faster than ``v_k`` = :data:`SLIDING_VELOCITY` through the window; :data:`KINETIC_RATIO` if it
    was slower for some of it: it may still break away; none if it moved both ways faster than ``v_r``
    or ``H`` does not resist its motion). A window in which
    some joint accelerated faster than ``acceleration_max`` (no reference does: a loop out of control, on
    late states) is no evidence: the last one's stays."""
    n = dq.shape[0]
    acceleration = np.empty(n)
    for j in range(n):
        acceleration[j] = (dq[j] - memory[_START_VELOCITY, j]) / duration
        if abs(acceleration[j]) > acceleration_max[j]:
            return
    for j in range(n):
        held = memory[_IMPULSE, j] / duration
        for k in range(n):
            held -= m[j, k] * acceleration[k]
        slowest, fastest = memory[_SLOWEST, j], memory[_FASTEST, j]
        up, down = fastest > BREAKAWAY_REST_VELOCITY, slowest < -BREAKAWAY_REST_VELOCITY
        if (up and down) or (up and held < 0.0) or (down and held > 0.0):
            held = 0.0
        sliding = slowest > SLIDING_VELOCITY or fastest < -SLIDING_VELOCITY
        ratio = SLIDING_RATIO if sliding else KINETIC_RATIO
        last, last_ratio = memory[_FOUND, j], memory[_FOUND_RATIO, j]
        memory[_FOUND, j], memory[_FOUND_RATIO, j] = held, ratio
        # credited: what two windows in a row found, the smaller (one window of misaligned states is no evidence)
        if held * last > 0.0:
            memory[_HELD, j] = held if abs(held) < abs(last) else last
            memory[_RATIO, j] = min(ratio, last_ratio)
        else:
            memory[_HELD, j] = 0.0


@numba.njit(cache=True, nogil=True)
def breakaway_credit(memory: Array, clock: Array, m: Array, dq: Array, base: Array, levels: Array,
                     allowance: Array, acceleration_max: Array, now: float, observed: bool) -> Array:
    """The friction (signed, per joint) the stall bound credits beyond the model's (module docstring,
    item 6, breakaway): ``min(r H_j, level_j + B_j)`` on the side of ``H_j`` (the resistance of the last
    window, :func:`_close_window`; ``r`` its ratio, ``B`` = ``allowance``), dropped as soon as the joint
    moves faster than ``v_r`` against it. Updates the window (``memory``, ``clock``) with the torque
    published last, acting since the last observed time, and the state ``dq`` measured at ``now`` [s];
    not ``observed`` (a coast on an old state): the window starts again at the next observed state."""
    n = dq.shape[0]
    if not observed:
        clock[_RUNNING] = 0.0
    elif clock[_RUNNING] > 0.0:
        step = now - clock[_LAST]
        if step > 0.0:
            clock[_LAST] = now
            for j in range(n):
                memory[_IMPULSE, j] += (memory[_PREVIOUS, j] - base[j]) * step
                memory[_SLOWEST, j] = min(memory[_SLOWEST, j], dq[j])
                memory[_FASTEST, j] = max(memory[_FASTEST, j], dq[j])
            if now - clock[_SINCE] >= BREAKAWAY_WINDOW:
                _close_window(memory, m, dq, now - clock[_SINCE], acceleration_max)
                clock[_RUNNING] = 0.0
    if observed and clock[_RUNNING] == 0.0:  # a window starts
        clock[_SINCE] = clock[_LAST] = now
        clock[_RUNNING] = 1.0
        for j in range(n):
            memory[_IMPULSE, j] = 0.0
            memory[_START_VELOCITY, j] = memory[_SLOWEST, j] = memory[_FASTEST, j] = dq[j]
    credit = np.zeros(n)
    for j in range(n):
        held = memory[_HELD, j]
        if abs(dq[j]) > BREAKAWAY_REST_VELOCITY and dq[j] * held < 0.0:
            memory[_HELD, j] = held = 0.0
        if held > 0.0:
            credit[j] = min(memory[_RATIO, j] * held, levels[0, j] + allowance[j])
        elif held < 0.0:
            credit[j] = -min(-memory[_RATIO, j] * held, levels[1, j] + allowance[j])
    return credit


@numba.njit(cache=True, nogil=True)
def stall_kernel(tau: Array, dq: Array, terms: Array, base: Array, levels: Array, credit: Array, reach: Array,
                 rate_scale: float) -> tuple[Array, Array]:
    """The stall bound's arithmetic (module docstring, item 6), compiled: ``terms`` the model's ``M``,
    ``C q'``, ``G`` packed (:meth:`~..dynamics.model.DynamicModel.packed_dynamics_terms`), ``base`` and
    ``levels`` of :func:`unaccelerated`, ``credit`` the friction credited beyond the model's
    (:func:`breakaway_credit`: it replaces the level on its side where it is larger), ``reach`` =
    ``s velocity_max / T``, ``rate_scale`` = ``1 / T``. Returns ``tau`` less ``M (a - a_b)`` and
    ``a - a_b`` (nonzero on the joints whose acceleration the bound clipped)."""
    n = tau.shape[0]
    m = terms[:n]
    excess = np.zeros(n)
    for j in range(n):
        up, down = max(levels[0, j], credit[j]), max(levels[1, j], -credit[j])
        if tau[j] > base[j] + up:
            excess[j] = tau[j] - base[j] - up
        elif tau[j] < base[j] - down:
            excess[j] = tau[j] - base[j] + down
    a = np.linalg.solve(np.ascontiguousarray(m), excess)
    beyond = np.zeros(n)
    for j in range(n):
        rate = dq[j] * rate_scale
        if a[j] > reach[j] - rate:
            beyond[j] = a[j] - reach[j] + rate
        elif a[j] < -reach[j] - rate:
            beyond[j] = a[j] + reach[j] + rate
    out = tau.copy()
    for i in range(n):
        for j in range(n):
            out[i] -= m[i, j] * beyond[j]
    return out, beyond


# rows of SafetyGuard's constant per-joint bounds (bound_kernel's ``rows``)
(_LIMIT, _DAMPING, _GUARD_VELOCITY, _GUARD_WIDTH, _UPPER_ZONE, _LOWER_ZONE, _UPPER_BRAKING, _LOWER_BRAKING,
 _POSITION_MAX, _POSITION_MIN, _BRAKING, _REACH, _ALLOWANCE, _ACCELERATION) = range(14)
# and its scalars (bound_kernel's ``constants``)
_MARGIN, _SLOWEST_GUARD, _RATE_SCALE, _STALL = range(4)
#: what limited a joint's torque in the last cycle (:attr:`SafetyGuard.limited`; the last bound that changed it)
UNBOUNDED, ZONE_BOUND, STALL_BOUND, TORQUE_LIMIT = range(4)


@numba.njit(cache=True, nogil=True)
def bound_kernel(tau: Array, terms: Array, rows: Array, friction: Array, constants: Array, memory: Array,
                 clock: Array, now: float, observed: bool) -> tuple[Array, Array]:
    """Steps 5-7 of the module docstring, compiled: the joint-limit zones (only where a joint is
    inside its braking zone), the velocity guard (only where one moves faster than the slowest guard
    speed), the stall bound (:func:`stall_kernel` with the breakaway credit of :func:`breakaway_credit`,
    if on) and the saturation of ``tau`` (a buffer: it ends as the zones' result). ``terms`` the model's
    packed ``M``, ``C q'``, ``G`` and the state ``q``, ``q'``; ``rows`` the guard's bounds (torque limit,
    limit damping, guard speed and width, zones, braking zones, position limits, ``2 a_b``, the stall
    bound's reach ``s velocity_max / T``, the breakaway allowance ``B``, ``acceleration_max``); ``constants``
    the zone width ``limit_margin``, the slowest guard speed, ``1 / T`` and 1 for the stall bound on; ``memory`` and
    ``clock`` the breakaway window (updated, with the torque returned as the last one published), ``now``
    [s] the time of the state if ``observed`` (else not a measured state). Returns ``(tau, limited)``: per
    joint the last bound that changed its torque (:data:`UNBOUNDED`, :data:`ZONE_BOUND`,
    :data:`STALL_BOUND`, :data:`TORQUE_LIMIT`)."""
    n = tau.shape[0]
    g, q, dq = terms[n + 1], terms[n + 2], terms[n + 3]
    margin, slowest_guard = constants[_MARGIN], constants[_SLOWEST_GUARD]
    limit, d = rows[_LIMIT], rows[_DAMPING]
    limited = np.zeros(n, dtype=np.int64)
    near = False
    fast = False
    for j in range(n):
        near = near or q[j] > rows[_UPPER_BRAKING, j] or q[j] < rows[_LOWER_BRAKING, j]
        fast = fast or abs(dq[j]) > slowest_guard
    if near or fast:
        for j in range(n):
            t = tau[j]
            v_up = v_low = rows[_GUARD_VELOCITY, j]
            if near:
                up = min(max((q[j] - rows[_UPPER_ZONE, j]) / margin, 0.0), 1.0)
                low = min(max((rows[_LOWER_ZONE, j] - q[j]) / margin, 0.0), 1.0)
                t = min(t, (1.0 - up) * limit[j] + up * g[j] - up * d[j] * max(dq[j], 0.0))
                t = max(t, -(1.0 - low) * limit[j] + low * g[j] - low * d[j] * min(dq[j], 0.0))
                v_up = min(v_up, math.sqrt(rows[_BRAKING, j] * max(rows[_POSITION_MAX, j] - q[j], 0.0)))
                v_low = min(v_low, math.sqrt(rows[_BRAKING, j] * max(q[j] - rows[_POSITION_MIN, j], 0.0)))
            width = rows[_GUARD_WIDTH, j]
            up = min(max((dq[j] - v_up) / width, 0.0), 2.0)  # depth w + overshoot u
            low = min(max((-dq[j] - v_low) / width, 0.0), 2.0)
            w_up, w_low = min(up, 1.0), min(low, 1.0)
            t = min(t, (1.0 - w_up) * limit[j] + w_up * g[j] - w_up * d[j] * max(dq[j] - v_up, 0.0)
                    - (up - w_up) * limit[j])
            t = max(t, -(1.0 - w_low) * limit[j] + w_low * g[j] - w_low * d[j] * min(dq[j] + v_low, 0.0)
                    + (low - w_low) * limit[j])
            if t != tau[j]:
                limited[j] = ZONE_BOUND
            tau[j] = t
    if constants[_STALL] > 0.0:
        base, levels = unaccelerated(dq, terms, friction)
        credit = breakaway_credit(memory, clock, terms[:n], dq, base, levels, rows[_ALLOWANCE], rows[_ACCELERATION],
                                  now, observed)
        out, beyond = stall_kernel(tau, dq, terms, base, levels, credit, rows[_REACH], constants[_RATE_SCALE])
        for j in range(n):
            if beyond[j] != 0.0:
                limited[j] = STALL_BOUND
    else:
        out = tau.copy()
    for j in range(n):
        if abs(out[j]) > limit[j]:
            limited[j] = TORQUE_LIMIT
        out[j] = min(max(out[j], -limit[j]), limit[j])
        memory[_PREVIOUS, j] = out[j]
    return out, limited


class SafetyGuard:
    """Filters every torque command of a control law; see the module docstring."""

    def __init__(self, arm: ArmDescription, model: DynamicModel, config: SafetyConfig = SafetyConfig()) -> None:
        if model.n_joints != arm.n_joints:
            raise ValueError(f"model has {model.n_joints} joints, the arm {arm.n_joints}")
        n = arm.n_joints
        self.arm, self.config = arm, config
        drives = arm.torque_limit
        self.torque_limit = per_joint(drives if config.torque_limit is None else config.torque_limit, n,
                                      "torque_limit")
        if np.any(self.torque_limit <= 0.0):
            raise ValueError(f"torque_limit must be positive, got {self.torque_limit.tolist()}")
        beyond = self.torque_limit > drives * (1.0 + 1e-9)
        if beyond.any():
            j = int(np.argmax(beyond))  # the first joint beyond its drive
            raise ValueError(f"torque_limit of {arm.joint_names[j]} = {self.torque_limit[j]:g} N m exceeds the drives' "
                             f"limit min(effort_max, drive_torque_limit) = {drives[j]:.4g} N m of the arm "
                             f"description {arm.source}: give at most that, or leave torque_limit unset")
        damping = self.torque_limit / arm.velocity_max if config.limit_damping is None else config.limit_damping
        self.limit_damping = per_joint(damping, n, "limit_damping")
        self.hold_kp, self.hold_kd = bandwidth_gains(config.hold_bandwidth, 1.0, reference_inertia(model, arm))
        self._guard_velocity = config.velocity_guard * arm.velocity_max
        self._guard_width = 0.5 * (arm.velocity_max - self._guard_velocity)
        self._slowest_guard = float(self._guard_velocity.min())  # one comparison per cycle outside the guard
        self._braking = 2.0 * BRAKING_FACTOR * arm.acceleration_max  # 2 a_b
        self._upper_zone = arm.position_max - config.limit_margin
        self._lower_zone = arm.position_min + config.limit_margin
        # inside these the braking speed sqrt(2 a_b s) is below the guard speed (or the limit zone starts)
        braking_zone = np.maximum(np.square(self._guard_velocity) / self._braking, config.limit_margin)
        self._upper_braking = arm.position_max - braking_zone
        self._lower_braking = arm.position_min + braking_zone
        self._stall = config.stall_time > 0.0
        #: B: the most static friction beyond the model's that the stall bound credits (module docstring, item 6)
        self.breakaway_allowance = breakaway_allowance(self.torque_limit)
        reach = STALL_VELOCITY * arm.velocity_max / config.stall_time if self._stall else np.zeros(n)
        # bound_kernel's arguments: fixed-type buffers (C-ordered, writable: no compilation for a new argument
        # type inside the control loop)
        self._rows = np.ascontiguousarray(np.stack([
            self.torque_limit, self.limit_damping, self._guard_velocity, np.broadcast_to(self._guard_width, (n,)),
            self._upper_zone, self._lower_zone, self._upper_braking, self._lower_braking, arm.position_max,
            arm.position_min, self._braking, reach, self.breakaway_allowance, arm.acceleration_max]), dtype=float)
        self._constants = np.array([config.limit_margin, self._slowest_guard,
                                    1.0 / config.stall_time if self._stall else 0.0, float(self._stall)])
        self._tau = np.zeros(n)
        self._memory = np.zeros((9, n))  # the breakaway window (breakaway_credit)
        self._clock = np.zeros(3)
        self._set_terms(model)
        self.state = GuardState.DISABLED
        self.fault_reason: str | None = None
        self.saturated = np.zeros(n, dtype=bool)
        #: per joint the last bound that changed its torque in the last cycle (UNBOUNDED, ZONE_BOUND, ...)
        self.limited = np.zeros(n, dtype=np.int64)
        self.requested = np.zeros(n)  # the torque the last cycle's bounds got (the law's, ramped) [N m]
        self.published = np.zeros(n)  # and what they let through [N m]
        self._enable_time = 0.0
        self._initial = np.zeros(n)
        self._last_q: Array | None = None
        self._last_dq = np.zeros(n)  # q' of the last good state
        self._hold_q: Array | None = None
        self._states_trusted = True
        self._loss_timeout = max(config.state_loss_timeout, config.state_timeout)
        self.coasting = False  # the last command was a coast on G(q_last) (a late joint state)
        self.coast_cycles = 0  # commands that coasted since construction

    # -- state changes --------------------------------------------------------------------------

    def enable(self, now: float, initial_torque: Any = None) -> None:
        """Start commanding at ``now`` [s]: clears a fault and ramps from ``initial_torque`` (n,)
        [N m, default zero] to the law's torque over ``ramp_time``."""
        n = self.arm.n_joints
        self._initial = (np.zeros(n) if initial_torque is None
                         else check_joint_values(initial_torque, n, "initial_torque"))
        self._enable_time = float(now)
        self._last_q = self._hold_q = None
        self._memory[:] = self._clock[:] = 0.0  # no friction measured yet
        self._states_trusted = True
        self.coasting = False
        self.fault_reason = None
        self.state = GuardState.ENABLED

    def disable(self) -> None:
        """Stop commanding (:meth:`command` returns ``None``); the fault reason, if any, stays readable."""
        self.state = GuardState.DISABLED

    def ramp_fraction(self, now: float) -> float:
        """The ramp ``s`` in ``[0, 1]`` at ``now`` (1 once ``ramp_time`` has passed since enable)."""
        if self.config.ramp_time == 0.0:
            return 1.0
        return smoothstep((now - self._enable_time) / self.config.ramp_time)

    # -- the cycle ------------------------------------------------------------------------------

    def command(self, now: float, stamp: float | None, q: Array | None, dq: Array | None, law: Law) -> Array | None:
        """The torque to publish this cycle, or ``None`` (publish zero effort); see the module docstring.
        ``law(stamp, q, dq)`` is evaluated at the state's time ``stamp`` (not ``now``), so that the
        reference matches the measurement however long the state waited for the cycle.
        Exceptions of ``law`` (programming errors, e.g. no goal set) propagate."""
        self.coasting = False
        if self.state is GuardState.DISABLED:
            return None
        problem = self._state_problem(now, stamp, q, dq)
        valid = problem is None
        if self.state is GuardState.ENABLED:
            if valid:
                tau = law(stamp, q, dq)
                if all_finite(tau):
                    self._last_q, self._last_dq = q.copy(), dq.copy()
                    return self._ramped(now, q, dq, tau, stamp)
                problem = "the control law returned NaN or infinite torques"
            elif problem == _LATE and self._last_q is not None:
                age = now - stamp
                if age <= self._loss_timeout and self._last_speed() * age <= COAST_DISTANCE:
                    self.coasting = True
                    self.coast_cycles += 1
                    return self._ramped(now, self._last_q, np.zeros_like(self._last_q),
                                        self._terms.gravity(self._last_q), None)
            if problem == _LATE:
                problem = self._stale_reason(now - stamp)
            self._fault(problem)
        return self._hold(stamp, q, dq, valid and self._states_trusted)

    def _ramped(self, now: float, q: Array, dq: Array, tau: Array, stamp: float | None) -> Array:
        """``tau`` through the enable ramp (step 4) and the guards (steps 5-7) at the state ``(q, dq)``
        measured at ``stamp`` (None: not a measured state)."""
        if now - self._enable_time >= self.config.ramp_time:  # the ramp is over (or there is none)
            return self._bounded(q, dq, tau, stamp)
        s = self.ramp_fraction(now)
        return self._bounded(q, dq, self._initial + s * (tau - self._initial), stamp)

    def _state_problem(self, now: float, stamp: float | None, q: Array | None, dq: Array | None) -> str | None:
        if stamp is None:
            return "no joint state received"
        if now - stamp > self.config.state_timeout:
            return _LATE
        if not (all_finite(q) and all_finite(dq)):
            return "joint state contains NaN or infinite values"
        return None

    def _last_speed(self) -> float:
        """max ``|q'|`` of the last good state (asked only when a state is late)."""
        return float(np.abs(self._last_dq).max())

    def _stale_reason(self, age: float) -> str:
        timeout, loss = self.config.state_timeout, self._loss_timeout
        if age > loss or self._last_q is None:
            why = f"no coasting beyond state_loss_timeout {1e3 * loss:.0f} ms" if self._last_q is not None else \
                "no good state since enable to coast on"
        else:
            why = (f"arm moving at {self._last_speed():.2f} rad/s: no coasting beyond "
                   f"{1e3 * COAST_DISTANCE:.0f} mrad of motion")
        return f"joint state stale: {1e3 * age:.1f} ms old (timeout {1e3 * timeout:.0f} ms; {why})"

    def set_model(self, model: DynamicModel) -> None:
        """The model's ``G``, ``C q'``, ``M`` and friction for the hold, the coast and the stall bound
        from the next command on (a payload at run time)."""
        if model.n_joints != self.arm.n_joints:
            raise ValueError(f"model has {model.n_joints} joints, the arm {self.arm.n_joints}")
        self._set_terms(model)

    def _set_terms(self, model: DynamicModel) -> None:
        self._terms = ModelTerms(model)
        self._memory[:] = self._clock[:] = 0.0  # the resistance was measured against the old model's base torque

    def fault(self, reason: str, trust_states: bool = True) -> None:
        """Latch a fault with ``reason`` if enabled (e.g. an implausible joint state); the next
        :meth:`command` gives the fault behaviour. ``trust_states=False``: the joint states are
        not the arm's (a second publisher): the hold gets no feedback (``G(q_h)``) until enable."""
        if self.state is GuardState.ENABLED:
            self._fault(reason)
            self._states_trusted = trust_states

    def _fault(self, reason: str) -> None:
        self.state = GuardState.FAULT
        self.fault_reason = reason
        self._hold_q = self._last_q

    def _hold(self, stamp: float | None, q: Array | None, dq: Array | None, valid: bool) -> Array | None:
        if self.config.fault_behaviour == "zero" or self._hold_q is None:
            return None
        q_h = self._hold_q
        if not valid:
            return self._bounded(q_h, np.zeros_like(q_h), self._terms.gravity(q_h), None)
        return self._bounded(q, dq, self._terms.gravity(q) + self.hold_kp * (q_h - q) - self.hold_kd * dq, stamp)

    def _bounded(self, q: Array, dq: Array, tau: Array, stamp: float | None) -> Array:
        """Joint-limit and velocity guards (only evaluated inside a zone), the stall bound, then
        saturation (:func:`bound_kernel`) of ``tau`` at the state ``(q, dq)`` measured at ``stamp`` [s]
        (None: not a measured state, no breakaway window). The stall bound needs ``M``,
        ``C q'``, ``G`` at the state: one compiled model call, which a computed-torque law has just made
        (the model keeps them); without it they are evaluated only inside a zone (for ``G``), and outside
        every zone the torque is only saturated. Sets :attr:`limited`, :attr:`saturated`,
        :attr:`requested` and :attr:`published`."""
        self.requested[:] = tau
        if not self._stall and not ((q > self._upper_braking).any() or (q < self._lower_braking).any()
                                    or np.abs(dq).max() > self._slowest_guard):  # the kernel's zone test
            self.saturated = np.abs(tau) > self.torque_limit
            self.limited = np.where(self.saturated, TORQUE_LIMIT, UNBOUNDED)
            tau = np.clip(tau, -self.torque_limit, self.torque_limit)
        else:
            terms = self._terms.model.packed_dynamics_terms(q, dq)
            self._tau[:] = tau  # one argument type, whatever array the law returned
            tau, self.limited = bound_kernel(self._tau, terms, self._rows, self._terms.friction_rows, self._constants,
                                             self._memory, self._clock, 0.0 if stamp is None else float(stamp),
                                             stamp is not None)
            self.saturated = self.limited == TORQUE_LIMIT
        self.published[:] = tau
        return tau

    def limit_reason(self, j: int) -> str | None:
        """What limited joint ``j``'s torque in the last cycle, with the numbers (None: nothing did)."""
        code, asked, got = int(self.limited[j]), self.requested[j], self.published[j]
        limit = self.torque_limit[j]
        if code == STALL_BOUND:
            return (f"the safety guard's stall bound (stall_time {self.config.stall_time:g} s): {got:.3g} N m of "
                    f"{asked:.3g} N m asked, torque limit {limit:.3g} N m, breakaway allowance "
                    f"{self.breakaway_allowance[j]:.3g} N m")
        if code == TORQUE_LIMIT:
            return f"the torque limit {limit:.3g} N m ({asked:.3g} N m asked)"
        if code == ZONE_BOUND:
            return f"the safety guard's joint-limit or velocity guard: {got:.3g} N m of {asked:.3g} N m asked"
        return None
