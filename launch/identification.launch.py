"""Launch the identification node (optionally with the simulated arm).

    ros2 launch youbot_dynamics identification.launch.py [params_file:=...] [with_sim:=true]
        [sim_params_file:=...] [use_sim_time:=true]
    ros2 service call /identification_node/start std_srvs/srv/Trigger   # unless start_on_launch
    ros2 service call /identification_node/abort std_srvs/srv/Trigger   # stop and hold

Only the identification node by default: it talks to whatever offers the topic contract
(/joint_states, the controllers' command topics), i.e. ``sim.launch.py`` started separately,
``gazebo.launch.py`` (activate the controller of ``command_interface``, by default
``arm_trajectory_controller``) or the real driver. ``with_sim:=true`` also includes
``sim.launch.py`` (simulator and kinematics node) with its own parameter file
``sim_params_file``; the launch then ends when the simulator ends. ``use_sim_time:=true`` runs the
node on ``/clock`` (for a simulator that cannot keep real time); with ``with_sim:=true`` the
simulator publishes it.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def _actions(context):
    """The node on its own params file, and the simulator (scoped: its ``params_file`` is
    ``sim_params_file``) publishing /clock when the node runs on it."""
    use_sim_time = LaunchConfiguration('use_sim_time').perform(context) == 'true'
    actions = [Node(
        package='youbot_dynamics',
        executable='identification_node',
        name='identification_node',
        parameters=[LaunchConfiguration('params_file').perform(context), {'use_sim_time': use_sim_time}],
        output='screen')]
    if LaunchConfiguration('with_sim').perform(context) == 'true':
        sim = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'launch', 'sim.launch.py'])
        actions.append(GroupAction(scoped=True, actions=[IncludeLaunchDescription(
            PythonLaunchDescriptionSource(sim),
            launch_arguments={'params_file': LaunchConfiguration('sim_params_file').perform(context),
                              'publish_clock': 'true' if use_sim_time else ''}.items())]))
    return actions


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare('youbot_dynamics'), 'config'])
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file', default_value=PathJoinSubstitution([config, 'identification_node.yaml']),
            description='Parameter file of the identification node'),
        DeclareLaunchArgument(
            'with_sim', default_value='false', choices=['true', 'false'],
            description='Also start the simulated arm (sim.launch.py)'),
        DeclareLaunchArgument(
            'sim_params_file', default_value=PathJoinSubstitution([config, 'sim_node.yaml']),
            description='Parameter file of the simulator node (with_sim:=true)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='false', choices=['true', 'false'],
            description='Run the identification node on /clock (with_sim:=true: the simulator publishes it)'),
        OpaqueFunction(function=_actions),
    ])
