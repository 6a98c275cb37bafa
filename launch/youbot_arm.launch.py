"""Bring up the real youBot arm: the EtherCAT driver, the kinematics node, optionally a controller or identification.

    ros2 launch youbot_dynamics youbot_arm.launch.py [interface:=enp3s0] [backend:=pysoem|virtual]
        [params_file:=...] [kinematics_params_file:=...]
        [controller:=none|pd_gravity|computed_torque|float] [controller_params_file:=...]
        [controller_in_bus:=true|false] [identification:=true] [identification_params_file:=...]
    ros2 service call /youbot_driver/motors_on std_srvs/srv/Trigger    # commands accepted from now on

The driver offers the topic contract of sim_node (/joint_states, /arm_{effort,position,velocity}_
controller/commands, /arm_trajectory_controller/joint_trajectory), so the identification node
and the controllers run on the hardware unchanged. ``controller`` starts ``pd_gravity_controller``,
``computed_torque_controller`` or ``float_controller`` with its package parameter file (default ``none``); a controller
starts disabled (its ``enabled_on_start``), enable it with its ``~/enable`` service once the
driver's motors are on. ``controller_in_bus:=true`` runs the controller inside the driver's process, in
its bus cycle (the driver's parameters ``controller`` and ``controller_params_file``): the torque goes
out in the cycle that read its state, without the two DDS hops per cycle; the controller node keeps
its name, services, topics and parameter file. Do not run a controller and the identification node together: both
command the arm. ``backend:=virtual`` runs the same driver on the virtual drives (MuJoCo arm)
without hardware. ``interface`` and ``backend`` default to '' = the values in the driver's params
file (eth0 and pysoem in the package's). The launch ends when the driver ends (it is the robot),
with exit status 1 if the driver failed.
doc/driver.md has the first-run steps.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from youbot_dynamics.nodes.launch_pieces import (EndWithTheArm, controller_arguments, include, params_file_argument,
                                                 place_controller)
from youbot_dynamics.contract.parameter_schema import load_schema

# '' (as in the params file) or one of the driver's backends (its parameter schema)
BACKENDS = ['', *load_schema('youbot_driver')['backend'].one_of]


def _configured(context):
    """The driver (``interface``/``backend`` override its params file only when given) and the
    chosen controller on ``controller_params_file``: in the driver's bus cycle
    (``controller_in_bus``) or as its own node (``control.launch.py``, scoped)."""
    given = {name: LaunchConfiguration(name).perform(context) for name in ('interface', 'backend')}
    overrides, actions = place_controller(context)
    overrides.update({name: value for name, value in given.items() if value})
    return [Node(
        package='youbot_dynamics',
        executable='youbot_driver',
        name='youbot_driver',
        parameters=[LaunchConfiguration('params_file'), *([overrides] if overrides else [])],
        on_exit=EndWithTheArm('youbot_driver', 'no arm'),
        output='screen'), *actions]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'interface', default_value='',
            description="Network interface wired to the youBot's EtherCAT port (see `ip link`); '' = as in "
                        "params_file"),
        DeclareLaunchArgument(
            'backend', default_value='', choices=BACKENDS,
            description="'pysoem' (the real arm) or 'virtual' (no hardware); '' = as in params_file"),
        params_file_argument('params_file', 'youbot_driver.yaml', 'the driver node'),
        params_file_argument('kinematics_params_file', 'kinematics.yaml', 'the kinematics node'),
        *controller_arguments("the driver's process, in its bus cycle"),
        DeclareLaunchArgument(
            'identification', default_value='false', choices=['true', 'false'],
            description='Also start the identification node'),
        params_file_argument('identification_params_file', 'identification_node.yaml', 'the identification node'),
        OpaqueFunction(function=_configured),
        include('kinematics.launch.py', params_file=LaunchConfiguration('kinematics_params_file')),
        Node(
            package='youbot_dynamics',
            executable='identification_node',
            name='identification_node',
            parameters=[LaunchConfiguration('identification_params_file')],
            condition=IfCondition(LaunchConfiguration('identification')),
            output='screen'),
    ])
