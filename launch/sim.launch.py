"""Launch the simulated youBot arm (MuJoCo) and the kinematics node.

    ros2 launch youbot_dynamics sim.launch.py [params_file:=...] [kinematics_params_file:=...]

The simulator offers the ros2_control-style topics of the real driver and of the Gazebo
description (/joint_states, /arm_{effort,position,velocity}_controller/commands,
/arm_trajectory_controller/joint_trajectory); config/sim.yaml describes the simulated robot.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'config'])
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([config, 'sim_node.yaml']),
            description='Parameter file of the simulator node'),
        DeclareLaunchArgument(
            'kinematics_params_file', default_value=PathJoinSubstitution([config, 'kinematics.yaml']),
            description='Parameter file of the kinematics node'),
        Node(
            package='youbot_dynamics',
            executable='sim_node',
            name='sim_node',
            parameters=[LaunchConfiguration('params_file')],
            output='screen'),
        Node(
            package='youbot_dynamics',
            executable='kinematics_node',
            name='kinematics_node',
            parameters=[LaunchConfiguration('kinematics_params_file')],
            output='screen'),
    ])
