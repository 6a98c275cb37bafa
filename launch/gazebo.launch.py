"""Simulate the youBot arm in Gazebo (gz sim) with ros2_control; optionally show it in RViz.

    ros2 launch youbot_dynamics gazebo.launch.py [active_controller:=arm_position_controller]
        [gz_args:='-r -s -v 3 empty.sdf'] [rviz:=true] [controllers_file:=/path/to/controllers.yaml]

Starts Gazebo (ros_gz_sim gz_sim.launch.py), robot_state_publisher with
urdf/youbot_arm.urdf.xacro (hardware:=gazebo), a /clock bridge, and spawns the arm from the
robot_description topic; the arm's gz_ros2_control plugin runs the controller manager with
``controllers_file``. Once the arm exists, spawners load joint_state_broadcaster and every arm
controller of that file: ``active_controller`` is activated, the others are configured but left
inactive, because only one controller can claim the joints' command interfaces. Switch with

    ros2 control switch_controllers --deactivate arm_effort_controller --activate arm_position_controller

Topics are those of the MuJoCo simulation node: /joint_states, /arm_effort_controller/commands,
/arm_position_controller/commands, /arm_velocity_controller/commands (std_msgs/Float64MultiArray)
and /arm_trajectory_controller/joint_trajectory (trajectory_msgs/JointTrajectory).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction, RegisterEventHandler
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'youbot_dynamics'
MODEL_NAME = 'youbot_arm'
BROADCASTER = 'joint_state_broadcaster'
# Controllers of config/ros2_controllers.yaml that command the arm; one is active at a time.
ARM_CONTROLLERS = ('arm_effort_controller', 'arm_position_controller', 'arm_velocity_controller',
                   'arm_trajectory_controller')
DEFAULT_ACTIVE_CONTROLLER = 'arm_effort_controller'


def _spawner(controller: str, controllers_file: LaunchConfiguration, inactive: bool) -> Node:
    """controller_manager spawner that loads ``controller`` and configures it (and activates it unless ``inactive``)."""
    arguments = [controller, '--controller-manager', '/controller_manager', '--param-file', controllers_file]
    if inactive:
        arguments.append('--inactive')
    return Node(package='controller_manager', executable='spawner', arguments=arguments, output='screen')


def _controller_spawners(context, controllers_file: LaunchConfiguration) -> list[Node]:
    """Spawners of the broadcaster and every arm controller; only ``active_controller`` is activated."""
    active = LaunchConfiguration('active_controller').perform(context)
    return [_spawner(BROADCASTER, controllers_file, inactive=False)] + [
        _spawner(name, controllers_file, inactive=name != active) for name in ARM_CONTROLLERS]


def generate_launch_description():
    controllers_file = LaunchConfiguration('controllers_file')
    robot_description = ParameterValue(Command([
        FindExecutable(name='xacro'), ' ',
        PathJoinSubstitution([FindPackageShare(PACKAGE), 'urdf', 'youbot_arm.urdf.xacro']),
        ' hardware:=gazebo', ' controllers_file:="', controllers_file, '"',  # quoted: paths with spaces
    ]), value_type=str)

    spawn_arm = Node(
        package='ros_gz_sim',
        executable='create',
        arguments=['-topic', 'robot_description', '-name', MODEL_NAME],
        output='screen')

    return LaunchDescription([
        DeclareLaunchArgument(
            'active_controller',
            default_value=DEFAULT_ACTIVE_CONTROLLER,
            choices=list(ARM_CONTROLLERS),
            description='Arm controller to activate; the other arm controllers are loaded inactive'),
        DeclareLaunchArgument(
            'controllers_file',
            default_value=PathJoinSubstitution([FindPackageShare(PACKAGE), 'config', 'ros2_controllers.yaml']),
            description='ros2_control parameter file (controller manager and controllers)'),
        DeclareLaunchArgument(
            'gz_args',
            default_value='-r -v 3 empty.sdf',
            description="Arguments of 'gz sim': -r runs at once, -s omits the GUI, the last one is the world"),
        DeclareLaunchArgument(
            'rviz',
            default_value='false',
            choices=['true', 'false'],
            description='Also start RViz (fixed frame world; add a RobotModel display of /robot_description)'),

        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py'])),
            launch_arguments={'gz_args': LaunchConfiguration('gz_args'), 'on_exit_shutdown': 'true'}.items()),
        Node(
            package='ros_gz_bridge',
            executable='parameter_bridge',
            arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
            output='screen'),
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            parameters=[{'robot_description': robot_description, 'use_sim_time': True}],
            output='screen'),
        spawn_arm,
        RegisterEventHandler(OnProcessExit(
            target_action=spawn_arm,
            on_exit=[OpaqueFunction(function=_controller_spawners, args=[controllers_file])])),
        Node(
            package='rviz2',
            executable='rviz2',
            arguments=['-f', 'world'],
            parameters=[{'use_sim_time': True}],
            condition=IfCondition(LaunchConfiguration('rviz')),
            output='screen'),
    ])
