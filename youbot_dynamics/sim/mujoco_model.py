"""The MuJoCo model of the true robot: the generated URDF plus drive and contact settings.

* Bodies and inertials: :func:`~youbot_dynamics.arm.urdf.generate_urdf` of the true arm, so MuJoCo's
  joint positions are the driver angles ``q``; gravity ``[0, 0, -g]`` of the arm description.
* Reflected rotor inertia as ``dof_armature`` (``Ia = N^2 J``, added to the mass-matrix diagonal),
  viscous friction as ``dof_damping`` (integrated implicitly by MuJoCo's Euler integrator).
* Coulomb friction as ``dof_frictionloss`` ``fc``: a dry-friction constraint, ``|f| <= fc``, that
  makes a joint stick when the other torques are smaller and equals ``fc sign(q')`` while it
  slides. MuJoCo's soft constraints give it a linear zone around ``q' = 0``; with
  ``solref = (2 dt, 1)`` and ``solimp`` 0.99 (constants below) the force is saturated for speeds above
  about 0.01-0.05 rad/s, so identification data fits the model term ``fc sign(q')``.
* Joint limits of the URDF (the driver ranges) as hard stops: limit constraints with the same stiff
  ``solref``; a joint hitting a stop at full drive torque penetrates about 0.1 mrad at
  ``velocity_max`` (6 mrad at 7 rad/s) and comes to rest on the limit.
* Contacts are disabled: the collision shapes of the generated URDF are cosmetic, so
  self-collision is not simulated (as the youBot driver, which has no collision checks either).
"""
from __future__ import annotations

import mujoco
import numpy as np
from numpy.typing import NDArray

from ..arm.description import ArmDescription
from ..arm.urdf import generate_urdf

__all__ = ["STIFF_SOLIMP", "build_model"]

Array = NDArray[np.float64]

STIFF_SOLIMP = 0.99  # constraint impedance d(0) = d(width) of friction and limit constraints


def build_model(arm: ArmDescription, timestep: float, armature: Array, damping: Array,
                frictionloss: Array) -> mujoco.MjModel:
    """MuJoCo model of ``arm`` (the true arm) with the drive terms and settings of the module docstring."""
    model = mujoco.MjModel.from_xml_string(generate_urdf(arm))
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)]
    if names != list(arm.joint_names) or model.nv != arm.n_joints or not np.all(model.jnt_limited):
        raise RuntimeError(f"unexpected MuJoCo model of the URDF: joints {names}, nv {model.nv}")
    model.opt.timestep = timestep
    model.opt.gravity[:] = (0.0, 0.0, -arm.gravity)
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    model.dof_armature[:] = armature
    model.dof_damping[:] = damping
    model.dof_frictionloss[:] = frictionloss
    for solref, solimp in ((model.dof_solref, model.dof_solimp), (model.jnt_solref, model.jnt_solimp)):
        solref[:] = (2.0 * timestep, 1.0)
        solimp[:, :2] = STIFF_SOLIMP
    return model
