"""Launch the youbot_dynamics kinematics node with its parameter file.

Usage: ``ros2 launch youbot_dynamics kinematics.launch.py [params_file:=/path/to/kinematics.yaml]``
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    params_file = LaunchConfiguration('params_file')
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'config', 'kinematics.yaml']),
            description='Parameter file of the kinematics node'),
        Node(
            package='youbot_dynamics',
            executable='kinematics_node',
            name='kinematics_node',
            parameters=[params_file],
            output='screen'),
    ])
