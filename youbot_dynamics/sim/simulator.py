"""MuJoCo simulation of the youBot arm with its drives, as a ros2_control hardware interface sees it.

Each :meth:`ArmSimulator.step` of ``dt`` (``sim.timestep``) runs the drives, then the physics:

1. the drives measure ``q`` (encoder ticks: resolution ``2 pi / (ticks N)``) and ``q'`` (integer
   motor rpm: ``2 pi / (60 N)``) when quantization is on;
2. the active mode gives the drive torque ``tau``: ``effort`` the commanded torque, ``velocity`` the
   velocity PI, ``position`` the position PID on a ramp towards the set-point, ``trajectory`` the
   position PID on the interpolated trajectory (:mod:`.drives`, :mod:`youbot_dynamics.motion.interpolation`);
   no mode (motors off) gives ``tau = 0``;
3. saturation ``|tau| <= max_current kt N`` (the drives' current limit, ``arm.drive_torque_limit``);
4. MuJoCo integrates ``M(q) q'' + c(q, q') + Ia q'' = tau - f0 - fv q' - friction + limits``
   (:mod:`.mujoco_model`; ``f0`` acts as a constant joint torque). The dry friction is MuJoCo's
   frictionloss constraint at the breakaway level ``fc + fs + fl |L|`` (re-set every step, ``L`` the
   link-side rigid-body torque ``M q'' + C q' + G`` from MuJoCo's inverse dynamics at the previous
   step's acceleration, bounded by twice the drive torque limit against impact spikes at the hard
   stops): the joint sticks inside that band; while it slides, applied torques
   ``- fa |tanh(q'/0.005)| + fs (1 - exp(-(q'/vs)^2)) sign(q')`` bring it to
   :class:`~.true_robot.TrueFriction`'s level. With ``fa = fs = fl = 0`` (or ``realism.extra_friction``
   off) the measured ``tau`` obeys seed 002's identification model ``tau = ... + fv q' + fc sign(q') + f0``;
   with them, no structure that identification fits.

**Commands.** :meth:`~ArmSimulator.command` and :meth:`~ArmSimulator.command_trajectory` validate
(length, finite, position inside the limits, ``|velocity| <= velocity_max``, interface enabled) and
raise :class:`CommandError` otherwise, leaving the active command untouched; except that a rejected
trajectory never leaves the arm unpowered or on zero effort (issue 35): unless a trajectory is
running (it goes on, held by the position PID), the drives brake the arm
from its measured state to rest and hold it there
(:func:`~youbot_dynamics.motion.commands.braking_waypoints`), and the error says so. A trajectory starts
from the running reference, or from the measured state clamped into the limits and
``velocity_max`` (:meth:`~youbot_dynamics.motion.commands.CommandChecker.start_state`: an arm pushed
beyond them is braked from there, not refused). Every valid command
sets the drives' mode (the youBot's process data carry the mode in every frame) and restarts the
timeout: ``command_timeout`` seconds (sim time) after the last command the motors stop (zero torque,
mode ``None``), like the drives' EtherCAT timeout. A trajectory is executed by a trajectory
controller in the loop (as ros2_control's joint_trajectory_controller): it never times out, and
after its last point the PID holds that point until the next command. Effort commands are not
range-checked: the drives saturate them.

**Measurements** (:meth:`~ArmSimulator.measure`, what ``/joint_states`` carries): quantized
position; velocity = the drive's estimate, a first-order lag of the true velocity with time
constant ``velocity_lag`` (discrete, backward Euler: group delay ``velocity_lag``), quantized to
integer motor rpm; effort = ``(1 + g) tau + o`` plus Gaussian noise (``torque_noise_std``), ``tau``
the drive torque of the last step (after saturation, before the offset ``f0``), ``g, o`` the
current measurement's gain error and offset (``effort_gain_error``, ``effort_offset``), as the
driver reports the current-derived torque. The drives' own loops use the quantized, unlagged
position and velocity (:meth:`~ArmSimulator.sense`).

**Payload**: :meth:`~ArmSimulator.set_payload` replaces the payload at the tool between steps
(the last link's inertial in the MuJoCo model and ``true_parameters``); :meth:`~ArmSimulator.reset`
keeps it.

**External wrench** (a push, a collision, a hand): :meth:`~ArmSimulator.apply_wrench` acts on a
link with a force and torque expressed in the link's frame (the DH frame the URDF and MuJoCo body
share), at a point of that frame, for a duration of simulated time or until
:meth:`~ArmSimulator.clear_wrench`. Each step MuJoCo maps it to joint torques
(``mj_applyFT``: ``tau_ext = J_p^T F + J_w^T T`` at the kinematics of the previous step, 1 ms
old), added to ``qfrc_applied``; :attr:`~ArmSimulator.external_torque` is the ``tau_ext`` of the last
step, the truth an external-torque estimate is judged against. :meth:`~ArmSimulator.reset` clears it.
A wrench beyond :data:`WRENCH_FORCE_MAX`, :data:`WRENCH_TORQUE_MAX` or acting further than
:data:`WRENCH_POINT_MAX` from the link frame is refused (a 1e6 N push is no push, issue 35); within
them it may well overpower the drives (at most 30 N m on joints 1-2) and drive joints into their
stops far faster than ``velocity_max`` (held by the drives, 0.3 s on the forearm: 100 N gave joint 3
1.8 x ``velocity_max``, 500 N 12-17 x on joints 2-4): the simulator does that, as a real arm would,
and the limit monitor reports it.

The noise generator is re-seeded from ``sim.seed`` on :meth:`~ArmSimulator.reset`, so the same
reset and command sequence gives the same measurements.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import mujoco
import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, default_arm
from ..motion.commands import CommandChecker, CommandError, braking_waypoints, path_from
from ..contract.topics import COMMAND_INTERFACES as INTERFACES
from ..dynamics.friction import coulomb_shape, term_feature
from .config import SimConfig, SimConfigError, load_sim_config
from .drives import PositionPid, Ramp, VelocityPi
from ..motion.interpolation import HermiteSpline
from .limits import LimitMonitor
from .mujoco_model import build_model
from .true_robot import (NOISE_STREAM, Payload, TrueFriction, armature, configured_payload,
                         rng_stream, true_arm, true_standard_parameters)
from ..arm.urdf import generate_urdf

__all__ = ["INTERFACES", "REALISM_EFFECTS", "WRENCH_FORCE_MAX", "WRENCH_TORQUE_MAX", "WRENCH_POINT_MAX",
           "CommandError", "JointMeasurement", "Realism", "ArmSimulator"]

Array = NDArray[np.float64]

WRENCH_FORCE_MAX = 500.0  # [N] largest external force (a hard shove or collision; the drives yield to ~100 N)
WRENCH_TORQUE_MAX = 100.0  # [N m] largest external torque
WRENCH_POINT_MAX = 1.0  # [m] farthest point of application from the link frame (the arm reaches 0.65 m)

_PID_MODES = ("position", "trajectory")


@dataclass
class JointMeasurement:
    """One sample of the joint states [s, rad, rad/s, N m]."""

    time: float
    position: Array
    velocity: Array
    effort: Array


@dataclass(frozen=True)
class Realism:
    """Which non-ideal effects are simulated. ``friction``: ``fv, fc, f0`` (in the physics and in
    ``true_parameters``); ``extra_friction``: the friction beyond the seed's, asymmetric, Stribeck
    and load-dependent (``fa, fs, vs, fl``; in the physics and ``true_friction``, never in
    ``true_parameters``); ``noise``: effort noise; ``quantization``: position/velocity resolution as
    enabled in the config; ``effort_calibration``: the effort's gain error and offset;
    ``velocity_lag``: the reported velocity's lag. The true inertials, rotor inertia, payload,
    saturation and hard stops always apply. Every field defaults to on: ``Realism.of(False)`` is the
    ideal rigid-body arm, and a test that needs one effect off names it, e.g.
    ``Realism(extra_friction=False)``."""

    friction: bool = True
    noise: bool = True
    quantization: bool = True
    extra_friction: bool = True
    effort_calibration: bool = True
    velocity_lag: bool = True

    @classmethod
    def of(cls, value: bool | Realism) -> Realism:
        """``value`` itself, or every effect on (``True``) or off (``False``)."""
        if isinstance(value, Realism):
            return value
        return cls(*(bool(value),) * len(dataclasses.fields(cls)))


#: the names of the effects (fields of :class:`Realism`), in their order
REALISM_EFFECTS = tuple(field.name for field in dataclasses.fields(Realism))


def _quantize(values: Array, resolution: Array | None) -> Array:
    """``values`` rounded to the nearest multiple of ``resolution`` (a copy; unchanged if ``None``)."""
    return values.copy() if resolution is None else np.round(values / resolution) * resolution


class ArmSimulator:
    """The simulated arm and drives; see the module docstring.

    ``arm`` defaults to the youBot (``config/youbot_arm.yaml``), ``config`` to ``config/sim.yaml``.
    Public attributes: ``arm``, ``config``, ``realism``, ``enabled_interfaces``, ``model`` and ``data``
    (MuJoCo), ``limits`` (the :class:`~.limits.LimitMonitor` of every step and effort command; its
    torque bound ``limit_torque``, default the controllers' limit),
    ``true_parameters`` (the 14 n standard parameters of the simulated physics, payload included:
    friction terms are zero when ``realism.friction`` is off), ``true_friction`` (the whole simulated
    friction, :class:`~.true_robot.TrueFriction`; what ``true_parameters`` cannot hold).
    Not thread-safe: one caller at a time.
    """

    def __init__(self, arm: ArmDescription | None = None, config: SimConfig | None = None, *,
                 enabled_interfaces: Iterable[str] = INTERFACES, realism: bool | Realism = True,
                 limit_torque: Any = None) -> None:
        self.arm = arm if arm is not None else default_arm()
        self._commands = CommandChecker(self.arm)
        self.config = config if config is not None else load_sim_config(arm=self.arm)
        n = self.arm.n_joints
        if self.config.n_joints != n or not self.arm.within_limits(self.config.home, tolerance=0.0):
            raise SimConfigError(f"sim.home: {self.config.home.tolist()} does not fit the {n} joints and limits "
                                 f"of {self.arm.name} ({self.arm.source})")
        self.enabled_interfaces = tuple(enabled_interfaces)
        unknown = sorted(set(self.enabled_interfaces) - set(INTERFACES))
        if unknown:
            raise ValueError(f"unknown interfaces {unknown}; known: {INTERFACES}")
        self.realism = realism = Realism.of(realism)
        cfg = self.config
        self.true_friction = friction = TrueFriction.of(cfg, realism.friction, realism.extra_friction)
        if not realism.friction:
            zero = np.zeros(n)
            cfg = dataclasses.replace(cfg, viscous_friction=zero, coulomb_friction=zero, friction_offset=zero)
        self._physics_config = cfg
        self._payload = configured_payload(cfg)

        self.true_parameters = true_standard_parameters(self.arm, cfg, self._payload)
        self.true_parameters.setflags(write=False)
        # breakaway level without load: fc + fs (MuJoCo's frictionloss, re-set every step with the load)
        self._static_friction = friction.coulomb + friction.stribeck
        self.model = build_model(true_arm(self.arm, cfg, self._payload), cfg.timestep, armature(self.arm, cfg),
                                 friction.viscous, self._static_friction)
        self.data = mujoco.MjData(self.model)
        self._last_body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, self.arm.link_names[-1])
        if self._last_body < 0:
            raise RuntimeError(f"the MuJoCo model has no body {self.arm.link_names[-1]!r} (the last link)")
        self.limits = LimitMonitor(self.arm, torque_limit=limit_torque)

        dt = cfg.timestep
        self._offset = cfg.friction_offset
        self._torque_limit = self.arm.drive_torque_limit
        self._extra_friction = friction.has_extra
        self._load = np.zeros(n)
        self._load_bound = 2.0 * self._torque_limit
        self._noise_std = cfg.torque_noise_std if realism.noise else None
        calibrated = realism.effort_calibration
        self._effort_gain = 1.0 + cfg.effort_gain_error if calibrated else np.ones(n)
        self._effort_offset = cfg.effort_offset.copy() if calibrated else np.zeros(n)
        # first-order lag, backward Euler: y <- y + a (v - y), a = dt / (T + dt) (group delay T)
        lag = cfg.velocity_lag if realism.velocity_lag else 0.0
        self._lag_gain = dt / (lag + dt) if lag > 0 else None
        self._velocity_estimate = np.zeros(n)
        quantize = realism.quantization
        self._q_resolution = (2 * np.pi / (self.arm.encoder_ticks * self.arm.gear_ratio)
                              if quantize and cfg.encoder_quantization else None)
        self._dq_resolution = (2 * np.pi / (60.0 * self.arm.gear_ratio)
                               if quantize and cfg.velocity_quantization else None)
        self._timeout_steps = self._steps_of(cfg.command_timeout)
        self._position_pid = PositionPid(cfg.position_controller, dt)
        self._velocity_pi = VelocityPi(cfg.velocity_controller, dt)
        self._ramp = Ramp(cfg.position_controller.ramp_velocity, dt)
        self._controllers: dict[str, Callable[[Array, Array], Array]] = {
            "effort": lambda q, dq: self._setpoint,
            "velocity": lambda q, dq: self._velocity_pi.torque(self._setpoint, dq),
            "position": self._position_torque,
            "trajectory": self._trajectory_torque,
        }
        self._setpoint = np.zeros(n)
        self._torque = np.zeros(n)
        self._reference = np.zeros(n)
        self._reference_velocity = np.zeros(n)
        self._mode: str | None = None
        self._spline: HermiteSpline | None = None
        self._steps = self._deadline = self._trajectory_start = 0
        self._wrench: tuple[int, Array, Array, Array, float] | None = None  # body, force, torque, point, end
        self._external = np.zeros(n)
        self.reset()

    # -- properties ------------------------------------------------------------------------------

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def n_joints(self) -> int:
        return self.arm.n_joints

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.arm.joint_names

    @property
    def mode(self) -> str | None:
        """The active interface, or ``None`` when the motors are off."""
        return self._mode

    @property
    def motors_on(self) -> bool:
        return self._mode is not None

    @property
    def external_torque(self) -> Array:
        """The joint torques [N m] of the external wrench in the last step (zero without one): a copy."""
        return self._external.copy()

    @property
    def payload(self) -> Payload:
        """The payload at the tool (the configured one until :meth:`set_payload`)."""
        return self._payload

    # -- state -----------------------------------------------------------------------------------

    def reset(self, q: Any = None, *, hold: bool = False) -> None:
        """Put the arm at rest at ``q`` (default: ``sim.home``), controllers and time cleared; motors
        off (the arm falls onto its stops, as a real arm without power), or with ``hold`` the drives'
        position PID holding ``q`` until the next command, without timeout (as ros2_control's
        joint_trajectory_controller holds the position it was activated at)."""
        q = self.config.home if q is None else self._commands.values(q, "reset position")
        self._commands.limits(q, "reset position")
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = q
        mujoco.mj_forward(self.model, self.data)
        self._steps = 0
        self._velocity_estimate[:] = self.data.qvel
        self.model.dof_frictionloss[:] = self._static_friction
        self._noise = rng_stream(self.config.seed, NOISE_STREAM)
        self.clear_wrench()
        self._motors_off()
        if hold:
            rest = np.zeros(self.n_joints)
            hold_here = (np.empty(0), None, None, None)  # no waypoint: path_from holds the start
            self._follow(path_from(q, rest, hold_here, self.timestep, self.config.trajectory_interpolation), q, rest)

    def measure(self) -> JointMeasurement:
        """What the driver reports: quantized position, lagged and quantized velocity, effort =
        ``(1 + g)`` drive torque ``+ o`` + noise (see the module docstring)."""
        q = _quantize(self.data.qpos, self._q_resolution)
        velocity = self._velocity_estimate if self._lag_gain is not None else self.data.qvel
        dq = _quantize(velocity, self._dq_resolution)
        effort = self._effort_gain * self._torque + self._effort_offset
        if self._noise_std is not None:
            effort += self._noise_std * self._noise.standard_normal(self.n_joints)
        return JointMeasurement(self.time, q, dq, effort)

    def sense(self) -> tuple[Array, Array]:
        """Position and velocity as the drives' own loops measure them: quantized, not lagged."""
        return self._sense()

    def set_payload(self, mass: float, position: Any = None, inertia: Any = None) -> None:
        """Hold a payload of ``mass`` [kg] (0: none) with its centre of mass at ``position`` [m] in
        the tool frame (default: the tool frame origin) and ``inertia`` [kg m^2] about its centre of
        mass in tool-frame axes (default: a point mass), from the next step on. Replaces the previous
        payload (the configured one included): the last link's inertial in the MuJoCo model and
        ``true_parameters`` change; the state and the drives do not. ``ValueError`` for a NaN or
        negative mass, a bad position, an unphysical inertia or a payload beyond what the arm carries
        (:meth:`~youbot_dynamics.dynamics.payload.Payload.of`; nothing changes then)."""
        payload = Payload.of(mass, position, inertia, arm=self.arm)
        arm = true_arm(self.arm, self._physics_config, payload)
        fresh = mujoco.MjModel.from_xml_string(generate_urdf(arm))  # the URDF's link frames, as build_model
        body = mujoco.mj_name2id(fresh, mujoco.mjtObj.mjOBJ_BODY, self.arm.link_names[-1])
        for name in ("body_mass", "body_ipos", "body_iquat", "body_inertia"):
            getattr(self.model, name)[self._last_body] = getattr(fresh, name)[body]
        mujoco.mj_setConst(self.model, mujoco.MjData(self.model))  # subtree masses, constraint weights
        parameters = true_standard_parameters(self.arm, self._physics_config, payload)
        parameters.setflags(write=False)
        self.true_parameters = parameters
        self._payload = payload

    def apply_wrench(self, link: str, force: Any, torque: Any = None, point: Any = None,
                     duration: float = float("inf")) -> None:
        """Push ``link`` (one of ``arm.link_names``) with ``force`` [N] and ``torque`` [N m] (default
        zero), both expressed in the link's frame, acting at ``point`` [m] of that frame (default: its
        origin), from the next step for ``duration`` [s] of simulated time (default: until
        :meth:`clear_wrench` or another wrench). Replaces the previous wrench. ``ValueError`` for an
        unknown link, a vector that is not 3 finite values or is longer than its bound
        (:data:`WRENCH_FORCE_MAX` [N], :data:`WRENCH_TORQUE_MAX` [N m], :data:`WRENCH_POINT_MAX` [m]),
        or a duration that is not positive."""
        if link not in self.arm.link_names:
            raise ValueError(f"unknown link {link!r}; links: {', '.join(self.arm.link_names)}")
        vectors = []
        for name, value, bound, unit in (("force", force, WRENCH_FORCE_MAX, "N"),
                                         ("torque", torque, WRENCH_TORQUE_MAX, "N m"),
                                         ("point", point, WRENCH_POINT_MAX, "m")):
            v = np.zeros(3) if value is None else np.asarray(value, dtype=float)
            if v.shape != (3,) or not np.all(np.isfinite(v)):
                raise ValueError(f"wrench {name} must be 3 finite values, got {np.asarray(value).tolist()}")
            if np.linalg.norm(v) > bound:
                raise ValueError(f"wrench {name} {v.tolist()} is {np.linalg.norm(v):.4g} {unit} long, more than "
                                 f"{bound:g} {unit} (doc/simulation.md)")
            vectors.append(v.copy())
        duration = float(duration)
        if not duration > 0.0:
            raise ValueError(f"wrench duration must be positive [s], got {duration}")
        body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, link)
        self._wrench = (body, *vectors, self.time + duration)

    def clear_wrench(self) -> None:
        """Remove the external wrench (from the next step)."""
        self._wrench = None
        self._external[:] = 0.0

    # -- commands --------------------------------------------------------------------------------

    def command(self, interface: str, values: Any) -> None:
        """Set-point of the ``effort`` [N m], ``position`` [rad] or ``velocity`` [rad/s] interface."""
        self._check_interface(interface)
        if interface == "trajectory":
            raise CommandError("trajectory commands go through command_trajectory(times, positions, ...)")
        values = self._commands.set_point(interface, values)
        if interface == "effort":
            self.limits.command(self.time, values, interface)
        if interface != self._mode:
            self._enter(interface)
        self._setpoint[:] = values
        self._deadline = self._steps + self._timeout_steps

    def command_trajectory(self, times: Any, positions: Any, velocities: Any = None, accelerations: Any = None) -> None:
        """Follow waypoints reached ``times`` [s] from now (strictly increasing, > 0; a first point at 0
        is the start state: :func:`~youbot_dynamics.motion.trajectory_start.drop_start_point`) with the position
        PID. A path faster than ``velocity_max`` anywhere is refused (:class:`CommandError`); then,
        unless a trajectory is running, the drives brake it to rest and hold it (module docstring; a
        streamed position command would time out and leave the motors off, as in the driver).

        The trajectory starts at the current reference (or the measured state, clamped into the limits
        and ``velocity_max``, when no PID mode is active) and is interpolated per
        ``sim.trajectory_interpolation``: cubic Hermite (positions, velocities; accelerations are
        ignored) or quintic Hermite (positions, velocities, accelerations; missing accelerations are 0).
        Missing velocities: see :func:`..motion.interpolation.waypoint_velocities`. The last point is held until
        the next command (no timeout in this mode).
        """
        self._check_interface("trajectory")
        try:
            self._execute(times, positions, velocities, accelerations)
        except CommandError as exc:
            if self._mode == "trajectory":  # refused: the running trajectory goes on, held by the PID
                raise
            self._execute(*braking_waypoints(self.arm, *self._sense()))
            raise CommandError(f"{exc}; the drives brake the arm from its measured state and hold it") from None

    # -- simulation ------------------------------------------------------------------------------

    def step(self, n: int = 1) -> None:
        """Advance ``n`` time steps: drives (mode, saturation, timeout), then MuJoCo physics."""
        model, data, mj_step, observe = self.model, self.data, mujoco.mj_step, self.limits.observe
        for _ in range(n):
            if self._mode is not None:
                q, dq = self._sense()
                np.clip(self._controllers[self._mode](q, dq), -self._torque_limit, self._torque_limit,
                        out=self._torque)
            np.subtract(self._torque, self._offset, out=data.qfrc_applied)
            if self._extra_friction:
                self._apply_extra_friction()
            if self._wrench is not None:
                self._apply_wrench()
            mj_step(model, data)
            if self._lag_gain is not None:
                self._velocity_estimate += self._lag_gain * (data.qvel - self._velocity_estimate)
            observe(data.time, data.qpos, data.qvel, self._mode)
            self._steps += 1
            if self._deadline is not None and self._mode is not None and self._steps >= self._deadline:
                self._motors_off()

    # -- internals -------------------------------------------------------------------------------

    def _steps_of(self, seconds: float) -> int:
        return int(round(seconds / self.config.timestep))

    def _apply_extra_friction(self) -> None:
        """Breakaway level ``fc + fs + fl |L|`` as frictionloss; sliding corrections as applied torque."""
        model, data, f = self.model, self.data, self.true_friction
        mujoco.mj_rne(model, data, 1, self._load)  # M q'' + C q' + G of the links (no rotor inertia)
        np.clip(self._load, -self._load_bound, self._load_bound, out=self._load)
        np.add(self._static_friction, f.load * np.abs(self._load), out=model.dof_frictionloss)
        dq = data.qvel
        sign = coulomb_shape(dq, 0.0)  # sliding: the Stribeck excess decays from the breakaway level
        data.qfrc_applied += (f.stribeck * (sign - term_feature("stribeck", dq, sign, f.stribeck_velocity))
                              - f.asymmetry * term_feature("asymmetric", dq, f.asymmetric_shape(dq)))

    def _apply_wrench(self) -> None:
        """The external wrench's joint torques into ``qfrc_applied`` and :attr:`external_torque`."""
        body, force, torque, point, end = self._wrench
        if self.data.time >= end - 0.5 * self.timestep:
            self.clear_wrench()
            return
        rotation = self.data.xmat[body].reshape(3, 3)
        self._external[:] = 0.0
        mujoco.mj_applyFT(self.model, self.data, rotation @ force, rotation @ torque,
                          self.data.xpos[body] + rotation @ point, body, self._external)
        self.data.qfrc_applied += self._external

    def _sense(self) -> tuple[Array, Array]:
        """Position and velocity as the drives measure them."""
        return _quantize(self.data.qpos, self._q_resolution), _quantize(self.data.qvel, self._dq_resolution)

    def _position_torque(self, q: Array, dq: Array) -> Array:
        self._ramp.advance(self._setpoint)
        return self._position_pid.torque(self._ramp.position, self._ramp.velocity, q, dq)

    def _trajectory_torque(self, q: Array, dq: Array) -> Array:
        t = (self._steps - self._trajectory_start) * self.config.timestep
        self._reference, self._reference_velocity = self._spline.evaluate(t)
        return self._position_pid.torque(self._reference, self._reference_velocity, q, dq)

    def _execute(self, times: Any, positions: Any, velocities: Any, accelerations: Any) -> None:
        """Validate the trajectory and its path from the current reference, then follow it
        (:class:`CommandError` if refused: nothing changes)."""
        start_q, start_dq = self._current_reference()
        times, positions, velocities, accelerations = self._commands.trajectory(times, positions, velocities,
                                                                                accelerations, start=start_q)
        spline = path_from(start_q, start_dq, (times, positions, velocities, accelerations), self.timestep,
                           self.config.trajectory_interpolation)
        self._commands.spline(spline)  # refused beyond velocity_max
        self._follow(spline, start_q, start_dq)

    def _follow(self, spline: HermiteSpline, start_q: Array, start_dq: Array) -> None:
        """Let the position PID follow ``spline`` from ``start_q``, ``start_dq`` (trajectory mode)."""
        self._spline = spline
        if self._mode not in _PID_MODES:
            self._position_pid.reset()
        self._reference, self._reference_velocity = start_q, start_dq
        self._mode = "trajectory"
        self._trajectory_start = self._steps
        self._deadline = None  # the trajectory controller keeps commanding: no timeout

    def _current_reference(self) -> tuple[Array, Array]:
        """The position PID's reference if it is active, otherwise the measured state clamped into the
        limits and ``velocity_max`` (:meth:`~youbot_dynamics.motion.commands.CommandChecker.start_state`)."""
        if self._mode == "position":
            return self._ramp.position.copy(), self._ramp.velocity.copy()
        if self._mode == "trajectory":
            return np.array(self._reference), np.array(self._reference_velocity)
        return self._commands.start_state(*self._sense())

    def _enter(self, mode: str) -> None:
        """Switch the drives to ``mode`` (effort, position or velocity) from another mode."""
        if mode == "position":
            self._ramp.start(self._current_reference()[0])
            if self._mode not in _PID_MODES:
                self._position_pid.reset()
        elif mode == "velocity":
            self._velocity_pi.reset()
        self._mode = mode

    def _motors_off(self) -> None:
        self._mode = None
        self._torque[:] = 0.0
        self._spline = None

    def _check_interface(self, interface: str) -> None:
        if interface not in INTERFACES:
            raise CommandError(f"unknown interface {interface!r}; known: {', '.join(INTERFACES)}")
        if interface not in self.enabled_interfaces:
            enabled = ", ".join(self.enabled_interfaces)
            raise CommandError(f"interface {interface!r} is not enabled (enabled: {enabled})")
