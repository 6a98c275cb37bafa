"""The nominal dynamic model: the arm description's inertials and its drives' reflected rotor
inertia ``N^2 J`` (:attr:`~..arm.description.ArmDescription.armature`), friction zero (unknown until identified).
Shipped as ``config/youbot_nominal_model.yaml``; regenerate with
``python -m youbot_dynamics nominal-model --write``."""
from __future__ import annotations

from ..arm.description import ArmDescription
from .chain import DHChain
from .model import DynamicModel
from .parameters import ModelStructure, standard_parameters

__all__ = ["DESCRIPTION", "NOMINAL_MODEL_FILE", "nominal_model"]

NOMINAL_MODEL_FILE = "youbot_nominal_model.yaml"
DESCRIPTION = ("Nominal model: inertials of the arm description (youbot_description URDF converted to DH "
               "frames) and its drives' reflected rotor inertia N^2 J (assumed motor data); friction zero "
               "(unknown before identification).")


def nominal_model(arm: ArmDescription,
                  structure: ModelStructure | str = ModelStructure.FULL) -> tuple[DynamicModel, object]:
    """The nominal model and the standard vector it comes from."""
    chi = standard_parameters(arm, rotor_inertia=arm.armature)
    return DynamicModel.from_standard(DHChain.from_arm(arm), chi, structure), chi
