"""Launch the identification node (optionally with the simulated arm).

    ros2 launch youbot_dynamics identification.launch.py [params_file:=...] [with_sim:=true]
        [use_sim_time:=true]
    ros2 service call /identification_node/start std_srvs/srv/Trigger   # unless start_on_launch
    ros2 service call /identification_node/abort std_srvs/srv/Trigger   # stop and hold

Only the identification node by default: it talks to whatever offers the topic contract
(/joint_states, the controllers' command topics), i.e. ``sim.launch.py`` started separately,
``gazebo.launch.py`` (activate the controller of ``command_interface``, by default
``arm_trajectory_controller``) or the real driver. ``with_sim:=true`` also includes
``sim.launch.py`` (simulator and kinematics node). ``use_sim_time:=true`` runs the node on
``/clock`` (for a simulator that publishes it and cannot keep real time).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare('youbot_dynamics')
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([share, 'config', 'identification_node.yaml']),
            description='Parameter file of the identification node'),
        DeclareLaunchArgument(
            'with_sim', default_value='false', description='Also start the simulated arm (sim.launch.py)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', description='Run the identification node on /clock'),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, 'launch', 'sim.launch.py'])),
            condition=IfCondition(LaunchConfiguration('with_sim'))),
        Node(
            package='youbot_dynamics',
            executable='identification_node',
            name='identification_node',
            parameters=[LaunchConfiguration('params_file'), {'use_sim_time': LaunchConfiguration('use_sim_time')}],
            output='screen'),
    ])
