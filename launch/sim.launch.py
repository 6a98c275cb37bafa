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
node name, services and topics). The launch ends when the simulator ends (it is the robot).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction, Shutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def _nodes(context):
    """The nodes, with ``publish_clock`` overriding the params file only when given, and the chosen
    controller: in the physics loop (``controller_in_bus``) or as its own node (``control.launch.py``)."""
    publish_clock = LaunchConfiguration('publish_clock').perform(context)
    overrides = {'publish_clock': publish_clock == 'true'} if publish_clock else {}
    controller = LaunchConfiguration('controller').perform(context)
    controller_params_file = LaunchConfiguration('controller_params_file').perform(context)
    in_bus = controller != 'none' and LaunchConfiguration('controller_in_bus').perform(context) == 'true'
    if in_bus:
        overrides.update(controller=controller, controller_params_file=controller_params_file)
    actions = []
    if controller != 'none' and not in_bus:
        control = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'launch', 'control.launch.py'])
        actions.append(GroupAction(scoped=True, actions=[IncludeLaunchDescription(
            PythonLaunchDescriptionSource(control),
            launch_arguments={'controller': controller, 'params_file': controller_params_file}.items())]))
    return [
        Node(
            package='youbot_dynamics',
            executable='sim_node',
            name='sim_node',
            parameters=[LaunchConfiguration('params_file'), *([overrides] if overrides else [])],
            on_exit=Shutdown(reason='sim_node ended: the simulated arm is gone'),
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='kinematics_node',
            name='kinematics_node',
            parameters=[LaunchConfiguration('kinematics_params_file')],
            output='screen'),
        *actions,
    ]


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'config'])
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([config, 'sim_node.yaml']),
            description='Parameter file of the simulator node'),
        DeclareLaunchArgument(
            'kinematics_params_file', default_value=PathJoinSubstitution([config, 'kinematics.yaml']),
            description='Parameter file of the kinematics node'),
        DeclareLaunchArgument(
            'publish_clock', default_value='', choices=['', 'true', 'false'],
            description="Publish the simulated time on /clock (for use_sim_time); '' = as in params_file"),
        DeclareLaunchArgument(
            'controller', default_value='none', choices=['none', 'pd_gravity', 'computed_torque', 'float'],
            description='Also start a joint-torque controller: none, pd_gravity, computed_torque or float'),
        DeclareLaunchArgument(
            'controller_params_file', default_value='',
            description="Parameter file of the controller; '' = the package file of the chosen controller "
                        "(config/<controller>_controller.yaml)"),
        DeclareLaunchArgument(
            'controller_in_bus', default_value='false', choices=['true', 'false'],
            description="Run the controller inside the simulator's process, in its physics loop (no DDS "
                        "between joint state and torque), instead of as its own node"),
        OpaqueFunction(function=_nodes),
    ])
