"""A payload at the tool, and a dynamic model holding it (issue 17: payload at run time).

A payload of mass ``m_p`` with its centre of mass at ``p`` in the tool frame and inertia ``I_p``
about its centre of mass (tool-frame axes) adds to the last link, in its DH frame (the tool frame
is ``T_tool = (R, t)`` there), the standard parameters of a body at ``c = R p + t`` with inertia
``R I_p R^T`` (:func:`~.parameters.inertial_to_standard`: ``m, m c, I_O = I_C - m [c]x [c]x``).
The base parameters are linear in the standard ones (``beta = K chi``), so a model with the payload is
``beta + K dchi`` (:func:`with_payload`): exact for any model, identified or nominal, whatever its
regrouping; a payload replaces none, it adds to what the model holds (give :func:`with_payload` the
model without payload to set one).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arm import LinkInertial
from .model import DynamicModel
from .parameters import LINK_PARAMETERS, PARAMETERS_PER_JOINT, inertial_to_standard

__all__ = ["Payload", "payload_parameters", "with_payload"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Payload:
    """A payload held at the tool: ``mass`` [kg], centre of mass ``position`` [m] in the tool frame,
    ``inertia`` [kg m^2] about its centre of mass in tool-frame axes (zero: a point mass)."""

    mass: float
    position: Array
    inertia: Array

    @classmethod
    def of(cls, mass: float, position: Array | None = None, inertia: Array | None = None) -> "Payload":
        """Validated payload (``ValueError`` naming the problem): finite ``mass >= 0``, 3 finite
        coordinates, a symmetric positive semi-definite inertia obeying the triangle inequality."""
        mass = float(mass)
        if not np.isfinite(mass) or mass < 0:
            raise ValueError(f"payload mass must be a finite number >= 0 kg, got {mass!r}")
        pos = np.zeros(3) if position is None else np.asarray(position, dtype=float)
        if pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise ValueError(f"payload position must be 3 finite coordinates [m], got {np.asarray(position).tolist()}")
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
        return cls(mass, pos, inertia_)


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
