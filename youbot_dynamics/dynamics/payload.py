"""A payload at the tool, and a dynamic model holding it (issue 17: payload at run time).

A payload of mass ``m_p`` with its centre of mass at ``p`` in the tool frame and inertia ``I_p``
about its centre of mass (tool-frame axes) adds to the last link, in its DH frame (the tool frame
is ``T_tool = (R, t)`` there), the standard parameters of a body at ``c = R p + t`` with inertia
``R I_p R^T`` (:func:`~.parameters.inertial_to_standard`: ``m, m c, I_O = I_C - m [c]x [c]x``).
The base parameters are linear in the standard ones (``beta = K chi``), so a model with the payload is
``beta + K dchi`` (:func:`with_payload`): exact for any model, identified or nominal, whatever its
regrouping; a payload replaces none, it adds to what the model holds (give :func:`with_payload` the
model without payload to set one).

**Bounds** (what the arm can carry; every path that takes a payload, the simulator's ``set_payload`` and
``sim_node``'s ``~/payload``, the controllers' ``~/payload``, the simulator's configured payload, goes through
:meth:`Payload.of`): mass at most :data:`PAYLOAD_MASS_MAX` (twice the youBot arm's rated payload of
0.5 kg), centre of mass at most :data:`PAYLOAD_REACH_MAX` from the tool frame origin, and an inertia
that a body whose mass lies within that distance of its centre of mass can have (principal moments
``0 <= I_k <= m R^2``, each no larger than the sum of the other two); and, given the arm, no more
gravity torque on any joint than :data:`PAYLOAD_TORQUE_FRACTION` of its rated torque
``min(effort_max, drive_torque_limit)``, over every pose (:func:`payload_levers`: 1 kg at the tool
frame takes 2.1 of joint 4's 2.7 N m). Beyond them a model holding the payload is not one the drives
can follow (1e6 kg made the simulator explode, issue 35).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription, LinkInertial
from .model import DynamicModel
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, inertial_to_standard

__all__ = ["PAYLOAD_MASS_MAX", "PAYLOAD_REACH_MAX", "PAYLOAD_TORQUE_FRACTION", "Payload", "payload_levers",
           "payload_parameters", "with_payload"]

Array = NDArray[np.float64]

PAYLOAD_MASS_MAX = 1.0  # [kg] largest payload: twice the youBot arm's rated 0.5 kg (KUKA)
PAYLOAD_REACH_MAX = 0.2  # [m] largest distance of its centre of mass from the tool frame origin, and its radius
PAYLOAD_TORQUE_FRACTION = 0.8  # largest share of a joint's rated torque the payload's gravity may take


@dataclass(frozen=True)
class Payload:
    """A payload held at the tool: ``mass`` [kg], centre of mass ``position`` [m] in the tool frame,
    ``inertia`` [kg m^2] about its centre of mass in tool-frame axes (zero: a point mass)."""

    mass: float
    position: Array
    inertia: Array

    @classmethod
    def of(cls, mass: float, position: Array | None = None, inertia: Array | None = None,
           arm: ArmDescription | None = None) -> "Payload":
        """Validated payload (``ValueError`` naming the problem, one line): finite ``0 <= mass <=``
        :data:`PAYLOAD_MASS_MAX`, 3 finite coordinates within :data:`PAYLOAD_REACH_MAX` of the tool
        frame origin, a symmetric positive semi-definite inertia obeying the triangle inequality whose
        principal moments are at most ``mass PAYLOAD_REACH_MAX^2``; with ``arm``, a gravity torque
        within :data:`PAYLOAD_TORQUE_FRACTION` of each joint's rated torque (module docstring)."""
        mass = float(mass)
        if not np.isfinite(mass) or mass < 0:
            raise ValueError(f"payload mass must be a finite number >= 0 kg, got {mass!r}")
        if mass > PAYLOAD_MASS_MAX:
            raise ValueError(f"payload mass {mass:g} kg is more than the arm can carry (at most {PAYLOAD_MASS_MAX:g} "
                             "kg, twice the youBot arm's rated 0.5 kg; doc/safety.md)")
        pos = np.zeros(3) if position is None else np.asarray(position, dtype=float)
        if pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise ValueError(f"payload position must be 3 finite coordinates [m], got {np.asarray(position).tolist()}")
        if np.linalg.norm(pos) > PAYLOAD_REACH_MAX:
            raise ValueError(f"payload centre of mass {pos.tolist()} m is {np.linalg.norm(pos):.4g} m from the tool "
                             f"frame (at most {PAYLOAD_REACH_MAX:g} m; doc/safety.md)")
        inertia_ = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if inertia_.shape != (3, 3) or not np.all(np.isfinite(inertia_)):
            raise ValueError("payload inertia must be a finite 3x3 matrix [kg m^2]")
        if np.abs(inertia_ - inertia_.T).max() > 1e-12 * max(1.0, np.abs(inertia_).max()):
            raise ValueError(f"payload inertia must be symmetric, got {inertia_.tolist()}")
        moments = np.linalg.eigvalsh(inertia_)
        tol = 1e-12 * max(1e-9, moments.max(initial=0.0))
        if moments[0] < -tol or moments[0] + moments[1] < moments[2] - tol:
            raise ValueError(f"payload inertia is not a physical body's (principal moments {moments.tolist()}: "
                             "each must be >= 0 and no larger than the sum of the other two)")
        if mass == 0.0 and np.any(inertia_ != 0):
            raise ValueError("a payload with an inertia needs a mass > 0")
        largest = mass * PAYLOAD_REACH_MAX**2
        if moments[-1] > largest * (1.0 + 1e-9):
            raise ValueError(f"payload inertia {moments[-1]:.4g} kg m^2 (largest principal moment) is more than a "
                             f"{mass:g} kg body within {PAYLOAD_REACH_MAX:g} m of its centre of mass can have "
                             f"({largest:.4g} kg m^2; doc/safety.md)")
        payload = cls(mass, pos, inertia_)
        if arm is not None:
            torque = mass * arm.gravity * payload_levers(payload, arm)
            rated = PAYLOAD_TORQUE_FRACTION * arm.torque_limit
            j = int(np.argmax(torque / rated))
            if torque[j] > rated[j]:
                raise ValueError(f"payload {mass:g} kg at {pos.tolist()} m would load {arm.joint_names[j]} with up to "
                                 f"{torque[j]:.3g} N m of gravity, more than {PAYLOAD_TORQUE_FRACTION:g} x its rated "
                                 f"{rated[j] / PAYLOAD_TORQUE_FRACTION:.3g} N m (doc/safety.md)")
        return payload


def payload_levers(payload: Payload, arm: ArmDescription) -> Array:
    """Per joint, the largest distance [m] from its axis to the payload's centre of mass over all poses
    (its gravity torque is at most ``m g`` times it): joint 1's axis is vertical (zero); the last
    joint's is exact (its axis ``z_{n-1}`` turns the point ``Tz(d_n) Tx(a_n) Rx(alpha_n) c`` about itself:
    the distance is that point's ``x, y``); for joint ``j`` in between at most
    ``|a_j| + sum_{i > j} (|a_i| + |d_i|) + |c|`` (``d_j`` runs along the axis), ``c`` the centre
    of mass in the last DH frame."""
    tool = np.asarray(arm.tool, dtype=float)
    c = tool[:3, :3] @ payload.position + tool[:3, 3]
    a, d = np.abs(arm.dh_a), np.abs(arm.dh_d)
    after = np.concatenate([np.cumsum((a + d)[::-1])[::-1][1:], [0.0]])  # sum over i > j of |a_i| + |d_i|
    levers = a + after + np.linalg.norm(c)
    alpha = arm.dh_alpha[-1]
    levers[-1] = np.hypot(c[0] + arm.dh_a[-1], np.cos(alpha) * c[1] - np.sin(alpha) * c[2])
    levers[0] = 0.0
    return levers


def payload_parameters(payload: Payload, tool: Any) -> Array:
    """The payload's 10 standard parameters ``[m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz]`` in the
    last link's frame, ``tool`` the 4x4 tool frame in it (module docstring)."""
    tool = np.asarray(tool, dtype=float)
    rotation = tool[:3, :3]
    body = LinkInertial(mass=payload.mass, com=rotation @ payload.position + tool[:3, 3],
                        inertia=rotation @ payload.inertia @ rotation.T)
    return inertial_to_standard(body)


def with_payload(model: DynamicModel, payload: Payload, tool: Any) -> DynamicModel:
    """``model`` holding ``payload`` at the tool (``tool``: the 4x4 tool frame in the last link's DH
    frame, ``arm.tool``): base parameters ``beta + K dchi``, friction unchanged, the standard vector
    (if known) updated too. The source names the payload."""
    n = model.n_joints
    dchi = np.zeros(n * PARAMETERS_PER_JOINT)
    last = (n - 1) * PARAMETERS_PER_JOINT
    dchi[last:last + len(LINK_PARAMETERS)] = payload_parameters(payload, tool)
    beta = model.beta + model.base.from_standard(dchi)
    standard = None if model.standard is None else model.standard + dchi
    return model.with_parameters(np.concatenate([beta, model.friction_parameters]), standard=standard,
                                 source=f"{model.source} with a payload of {payload.mass:g} kg")
