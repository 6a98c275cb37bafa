"""Launch the simulated youBot arm (MuJoCo) and the kinematics node.

    ros2 launch youbot_dynamics sim.launch.py [params_file:=...] [kinematics_params_file:=...]
        [publish_clock:=true|false] [controller:=none|pd_gravity|computed_torque|float]
        [controller_params_file:=...] [controller_in_bus:=true|false]

The simulator offers the ros2_control-style topics of the real driver and of the Gazebo
description (/joint_states, /arm_{effort,position,velocity}_controller/commands,
/arm_trajectory_controller/joint_trajectory); config/sim.yaml describes the simulated robot.
``publish_clock`` ('' = the value in the params file; false in the package's) publishes the
simulated time on /clock, for nodes run with ``use_sim_time:=true``. ``controller`` (default
``none``) also starts a joint-torque controller on ``controller_params_file`` ('' = its package
file): as its own node (``control.launch.py``) or, with ``controller_in_bus:=true``, inside the
simulator's process, in its physics loop (the simulator's parameters ``controller`` and
``controller_params_file``: the torque is commanded on the state just measured, without DDS; same
node name, services and topics). The launch ends when the simulator ends (it is the robot),
with exit status 1 if it failed.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from youbot_dynamics.nodes.launch_pieces import (EndWithTheArm, controller_arguments, include, params_file_argument,
                                                 place_controller)


def _nodes(context):
    """The nodes, with ``publish_clock`` overriding the params file only when given, and the chosen
    controller: in the physics loop (``controller_in_bus``) or as its own node (``control.launch.py``)."""
    publish_clock = LaunchConfiguration('publish_clock').perform(context)
    overrides, actions = place_controller(context)
    if publish_clock:
        overrides['publish_clock'] = publish_clock == 'true'
    return [
        Node(
            package='youbot_dynamics',
            executable='sim_node',
            name='sim_node',
            parameters=[LaunchConfiguration('params_file'), *([overrides] if overrides else [])],
            on_exit=EndWithTheArm('sim_node', 'the simulated arm is gone'),
            output='screen'),
        include('kinematics.launch.py', params_file=LaunchConfiguration('kinematics_params_file')),
        *actions,
    ]


def generate_launch_description():
    return LaunchDescription([
        params_file_argument('params_file', 'sim_node.yaml', 'the simulator node'),
        params_file_argument('kinematics_params_file', 'kinematics.yaml', 'the kinematics node'),
        DeclareLaunchArgument(
            'publish_clock', default_value='', choices=['', 'true', 'false'],
            description="Publish the simulated time on /clock (for use_sim_time); '' = as in params_file"),
        *controller_arguments("the simulator's process, in its physics loop"),
        OpaqueFunction(function=_nodes),
    ])
