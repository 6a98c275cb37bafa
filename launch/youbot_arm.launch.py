"""Bring up the real youBot arm: the EtherCAT driver, the kinematics node, optionally a controller or identification.

    ros2 launch youbot_dynamics youbot_arm.launch.py interface:=enp3s0 [backend:=pysoem|virtual]
        [params_file:=...] [kinematics_params_file:=...]
        [controller:=none|pd_gravity|computed_torque] [controller_params_file:=...]
        [identification:=true] [identification_params_file:=...]
    ros2 service call /youbot_driver/motors_on std_srvs/srv/Trigger    # commands accepted from now on

The driver offers the topic contract of sim_node (/joint_states, /arm_{effort,position,velocity}_
controller/commands, /arm_trajectory_controller/joint_trajectory), so the identification node
and the controllers run on the hardware unchanged. ``controller`` starts ``pd_gravity_controller``
or ``computed_torque_controller`` with its package parameter file (default ``none``); a controller
starts disabled (its ``enabled_on_start``), enable it with its ``~/enable`` service once the
driver's motors are on. Do not run a controller and the identification node together: both
command the arm. ``backend:=virtual`` runs the same driver on the virtual drives (MuJoCo arm)
without hardware. The README ("Real youBot") has the first-run steps.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import EqualsSubstitution, IfElseSubstitution, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

CONTROLLERS = ['none', 'pd_gravity', 'computed_torque']


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'config'])
    controller = LaunchConfiguration('controller')
    is_pd = EqualsSubstitution(controller, 'pd_gravity')
    is_ct = EqualsSubstitution(controller, 'computed_torque')
    controller_params = LaunchConfiguration('controller_params_file')
    return LaunchDescription([
        DeclareLaunchArgument(
            'interface', default_value='eth0',
            description="Network interface wired to the youBot's EtherCAT port (see `ip link`)"),
        DeclareLaunchArgument(
            'backend', default_value='pysoem', description="'pysoem' (the real arm) or 'virtual' (no hardware)"),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([config, 'youbot_driver.yaml']),
            description='Parameter file of the driver node'),
        DeclareLaunchArgument(
            'kinematics_params_file', default_value=PathJoinSubstitution([config, 'kinematics.yaml']),
            description='Parameter file of the kinematics node'),
        DeclareLaunchArgument(
            'controller', default_value='none', choices=CONTROLLERS,
            description='Also start a joint-torque controller: none, pd_gravity or computed_torque'),
        DeclareLaunchArgument(
            'controller_params_file',
            default_value=IfElseSubstitution(
                is_ct,
                if_value=PathJoinSubstitution([config, 'computed_torque_controller.yaml']),
                else_value=PathJoinSubstitution([config, 'pd_gravity_controller.yaml'])),
            description='Parameter file of the controller (default: the package file of the chosen controller)'),
        DeclareLaunchArgument(
            'identification', default_value='false', description='Also start the identification node'),
        DeclareLaunchArgument(
            'identification_params_file',
            default_value=PathJoinSubstitution([config, 'identification_node.yaml']),
            description='Parameter file of the identification node'),
        Node(
            package='youbot_dynamics',
            executable='youbot_driver',
            name='youbot_driver',
            parameters=[LaunchConfiguration('params_file'),
                        {'interface': LaunchConfiguration('interface'), 'backend': LaunchConfiguration('backend')}],
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='kinematics_node',
            name='kinematics_node',
            parameters=[LaunchConfiguration('kinematics_params_file')],
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='pd_gravity_controller',
            name='pd_gravity_controller',
            parameters=[controller_params],
            condition=IfCondition(is_pd),
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='computed_torque_controller',
            name='computed_torque_controller',
            parameters=[controller_params],
            condition=IfCondition(is_ct),
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='identification_node',
            name='identification_node',
            parameters=[LaunchConfiguration('identification_params_file')],
            condition=IfCondition(LaunchConfiguration('identification')),
            output='screen'),
    ])
