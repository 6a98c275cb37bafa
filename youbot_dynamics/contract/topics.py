"""The arm's topic contract: the names every node, launch file and test uses to reach the arm.

The five arm topics follow the ros2_control youBot convention (``youbot_hardware.md``): the arm
(``sim_node``, ``youbot_driver``, Gazebo's controllers) publishes ``sensor_msgs/JointState`` on
:data:`JOINT_STATES` and takes commands on one topic per command interface, ``Float64MultiArray``
for the streamed ones (:func:`command_topic`) and ``trajectory_msgs/JointTrajectory`` for
:data:`TRAJECTORY`. The joint names are the arm description's (``config/youbot_arm.yaml``,
``ArmDescription.joint_names``). Each node still takes the topic names as parameters (remapping);
these are the defaults. Pure Python: no rclpy.
"""
from __future__ import annotations

__all__ = ["COMMAND_INTERFACES", "EFFORT_COMMANDS", "JOINT_STATES", "POSITION_COMMANDS", "STREAMED_INTERFACES",
           "TRAJECTORY", "VELOCITY_COMMANDS", "command_topic"]

#: command interfaces of the arm (the simulator's and the driver's), in this order
COMMAND_INTERFACES = ("effort", "position", "velocity", "trajectory")
#: the interfaces streamed as ``Float64MultiArray`` (one value per joint)
STREAMED_INTERFACES = COMMAND_INTERFACES[:3]

JOINT_STATES = "/joint_states"
EFFORT_COMMANDS = "/arm_effort_controller/commands"
POSITION_COMMANDS = "/arm_position_controller/commands"
VELOCITY_COMMANDS = "/arm_velocity_controller/commands"
TRAJECTORY = "/arm_trajectory_controller/joint_trajectory"

_TOPICS = dict(zip(COMMAND_INTERFACES, (EFFORT_COMMANDS, POSITION_COMMANDS, VELOCITY_COMMANDS, TRAJECTORY)))


def command_topic(interface: str) -> str:
    """The default topic of command ``interface`` (one of :data:`COMMAND_INTERFACES`)."""
    try:
        return _TOPICS[interface]
    except KeyError:
        raise ValueError(f"unknown command interface '{interface}'; known: {list(COMMAND_INTERFACES)}") from None
