"""Bring up the real youBot arm: the EtherCAT driver, the kinematics node, optionally a controller or identification.

    ros2 launch youbot_dynamics youbot_arm.launch.py [interface:=enp3s0] [backend:=pysoem|virtual]
        [params_file:=...] [kinematics_params_file:=...]
        [controller:=none|pd_gravity|computed_torque|float] [controller_params_file:=...]
        [identification:=true] [identification_params_file:=...]
    ros2 service call /youbot_driver/motors_on std_srvs/srv/Trigger    # commands accepted from now on

The driver offers the topic contract of sim_node (/joint_states, /arm_{effort,position,velocity}_
controller/commands, /arm_trajectory_controller/joint_trajectory), so the identification node
and the controllers run on the hardware unchanged. ``controller`` starts ``pd_gravity_controller``,
``computed_torque_controller`` or ``float_controller`` with its package parameter file (default ``none``); a controller
starts disabled (its ``enabled_on_start``), enable it with its ``~/enable`` service once the
driver's motors are on. Do not run a controller and the identification node together: both
command the arm. ``backend:=virtual`` runs the same driver on the virtual drives (MuJoCo arm)
without hardware. ``interface`` and ``backend`` default to '' = the values in the driver's params
file (eth0 and pysoem in the package's). The launch ends when the driver ends (it is the robot).
The README ("Real youBot") has the first-run steps.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction, Shutdown
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

CONTROLLERS = ['none', 'pd_gravity', 'computed_torque', 'float']
BACKENDS = ['', 'pysoem', 'virtual']


def _configured(context):
    """The driver (``interface``/``backend`` override its params file only when given) and the
    chosen controller (``control.launch.py``, scoped, on ``controller_params_file``)."""
    given = {name: LaunchConfiguration(name).perform(context) for name in ('interface', 'backend')}
    overrides = {name: value for name, value in given.items() if value}
    actions = [Node(
        package='youbot_dynamics',
        executable='youbot_driver',
        name='youbot_driver',
        parameters=[LaunchConfiguration('params_file'), *([overrides] if overrides else [])],
        on_exit=Shutdown(reason='youbot_driver ended: no arm'),
        output='screen')]
    controller = LaunchConfiguration('controller').perform(context)
    if controller != 'none':
        control = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'launch', 'control.launch.py'])
        actions.append(GroupAction(scoped=True, actions=[IncludeLaunchDescription(
            PythonLaunchDescriptionSource(control),
            launch_arguments={'controller': controller,
                              'params_file': LaunchConfiguration('controller_params_file').perform(context)}.items())]))
    return actions


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'config'])
    return LaunchDescription([
        DeclareLaunchArgument(
            'interface', default_value='',
            description="Network interface wired to the youBot's EtherCAT port (see `ip link`); '' = as in "
                        "params_file"),
        DeclareLaunchArgument(
            'backend', default_value='', choices=BACKENDS,
            description="'pysoem' (the real arm) or 'virtual' (no hardware); '' = as in params_file"),
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([config, 'youbot_driver.yaml']),
            description='Parameter file of the driver node'),
        DeclareLaunchArgument(
            'kinematics_params_file', default_value=PathJoinSubstitution([config, 'kinematics.yaml']),
            description='Parameter file of the kinematics node'),
        DeclareLaunchArgument(
            'controller', default_value='none', choices=CONTROLLERS,
            description='Also start a joint-torque controller: none, pd_gravity, computed_torque or float'),
        DeclareLaunchArgument(
            'controller_params_file', default_value='',
            description="Parameter file of the controller; '' = the package file of the chosen controller "
                        "(config/<controller>_controller.yaml)"),
        DeclareLaunchArgument(
            'identification', default_value='false', choices=['true', 'false'],
            description='Also start the identification node'),
        DeclareLaunchArgument(
            'identification_params_file',
            default_value=PathJoinSubstitution([config, 'identification_node.yaml']),
            description='Parameter file of the identification node'),
        OpaqueFunction(function=_configured),
        Node(
            package='youbot_dynamics',
            executable='kinematics_node',
            name='kinematics_node',
            parameters=[LaunchConfiguration('kinematics_params_file')],
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='identification_node',
            name='identification_node',
            parameters=[LaunchConfiguration('identification_params_file')],
            condition=IfCondition(LaunchConfiguration('identification')),
            output='screen'),
    ])
