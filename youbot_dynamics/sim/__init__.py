"""Pure-Python core of the MuJoCo youBot arm simulator (no ROS): the true robot, drives and physics.

See :mod:`.simulator` for the step/command/measure semantics, :mod:`.true_robot` for how the true
parameters are made, and ``config/sim.yaml`` for every setting.
"""
from .config import SimConfig, SimConfigError, load_sim_config, sim_config_from_dict
from .simulator import INTERFACES, ArmSimulator, CommandError, JointMeasurement, Realism
from .true_robot import true_arm, true_standard_parameters

__all__ = [
    "INTERFACES",
    "ArmSimulator",
    "CommandError",
    "JointMeasurement",
    "Realism",
    "SimConfig",
    "SimConfigError",
    "load_sim_config",
    "sim_config_from_dict",
    "true_arm",
    "true_standard_parameters",
]
