"""Launch the identification node (optionally with the simulated arm).

    ros2 launch youbot_dynamics identification.launch.py [params_file:=...] [with_sim:=true]
        [sim_params_file:=...] [use_sim_time:=auto|true|false]
    ros2 service call /identification_node/start std_srvs/srv/Trigger   # unless start_on_launch
    ros2 service call /identification_node/abort std_srvs/srv/Trigger   # stop and hold

Only the identification node by default: it talks to whatever offers the topic contract
(/joint_states, the controllers' command topics), i.e. ``sim.launch.py`` started separately,
``gazebo.launch.py`` (activate the controller of ``command_interface``, by default
``arm_trajectory_controller``) or the real driver. ``with_sim:=true`` also includes
``sim.launch.py`` (simulator and kinematics node) with its own parameter file
``sim_params_file``; the launch then ends when the simulator ends. ``use_sim_time:=true`` runs the
node on ``/clock`` (for a simulator that cannot keep real time); with ``with_sim:=true`` the
simulator publishes it. The default ``auto`` is ``true`` with ``with_sim:=true`` and ``false``
without: a simulator on a busy machine stalls now and then (50-90 ms every few seconds on a 2-core
VM with two CPU hogs) and does not catch up, so its arm falls behind the wall clock; horizons
timed on the wall clock then no longer join the arm's reference (the simulator rejected them,
"arm_joint_4 would move at 4.8 rad/s", and 3 of 3 runs aborted that way with 1 s horizons, 1 of 3
with 0.5 s), while on its own clock the experiment and the arm stall together.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from youbot_dynamics.nodes.launch_pieces import include, params_file_argument


def _actions(context):
    """The node on its own params file, and the simulator (scoped: its ``params_file`` is
    ``sim_params_file``) publishing /clock when the node runs on it."""
    with_sim = LaunchConfiguration('with_sim').perform(context) == 'true'
    choice = LaunchConfiguration('use_sim_time').perform(context)
    use_sim_time = {'true': True, 'false': False, 'auto': with_sim}[choice]
    actions = [Node(
        package='youbot_dynamics',
        executable='identification_node',
        name='identification_node',
        parameters=[LaunchConfiguration('params_file').perform(context), {'use_sim_time': use_sim_time}],
        output='screen')]
    if with_sim:
        actions.append(include('sim.launch.py', params_file=LaunchConfiguration('sim_params_file').perform(context),
                               publish_clock='true' if use_sim_time else ''))
    return actions


def generate_launch_description():
    return LaunchDescription([
        params_file_argument('params_file', 'identification_node.yaml', 'the identification node'),
        DeclareLaunchArgument(
            'with_sim', default_value='false', choices=['true', 'false'],
            description='Also start the simulated arm (sim.launch.py)'),
        params_file_argument('sim_params_file', 'sim_node.yaml', 'the simulator node (with_sim:=true)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='auto', choices=['auto', 'true', 'false'],
            description='Run the identification node on /clock (with_sim:=true: the simulator publishes it); '
                        'auto: true with with_sim:=true, else false'),
        OpaqueFunction(function=_actions),
    ])
