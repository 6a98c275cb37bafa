"""Launch one joint-torque controller of the youBot arm with its parameter file.

    ros2 launch youbot_dynamics control.launch.py [controller:=pd_gravity|computed_torque|float]
        [params_file:=/path/to/params.yaml]

Its launch arguments:

* ``controller`` (default ``pd_gravity``; anything else is refused by launch):
  ``pd_gravity`` starts ``pd_gravity_controller`` (PD + gravity regulation to goals on
  ``~/goal`` (JointState) and ``~/goal_pose`` (PoseStamped, IK)); ``computed_torque`` starts
  ``computed_torque_controller`` (tracking of ``~/trajectory`` (JointTrajectory) and Cartesian
  straight lines on ``~/line`` (PoseStamped)); ``float`` starts ``float_controller`` (hand-guiding:
  gravity and friction compensation with light damping, no goals).
* ``params_file`` (default ``''``: the controller's file in the package,
  config/<controller>_controller.yaml, which sets no parameter today: the defaults hold): its ROS parameters.

The controller needs a robot: the simulator (``ros2 launch youbot_dynamics sim.launch.py``), the
Gazebo description with ``active_controller:=arm_effort_controller``, or the real driver with its
effort group controller. It starts disabled (parameter ``enabled_on_start``); enable it with

    ros2 service call /pd_gravity_controller/enable std_srvs/srv/SetBool "{data: true}"

Node parameters (all read-only, read at start-up): every one, with its default, range and meaning,
in doc/parameters.md (generated from the nodes' schemas, youbot_dynamics/nodes/parameters/); the
package's parameter files state only deviations from those defaults, each with its reason.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from youbot_dynamics.contract.controller_registry import CONTROLLERS
from youbot_dynamics.nodes.launch_pieces import controller_node


def _controller(context):
    """The chosen controller node on ``params_file`` or, if '', its package file."""
    return [controller_node(LaunchConfiguration('controller').perform(context),
                            LaunchConfiguration('params_file').perform(context), context)]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'controller', default_value=CONTROLLERS[0].name, choices=[entry.name for entry in CONTROLLERS],
            description='The control law: ' + ', '.join(f'{entry.name} ({entry.summary})' for entry in CONTROLLERS)),
        DeclareLaunchArgument(
            'params_file', default_value='',
            description="Parameter file of the controller node; '' = the package file of the chosen controller "
                        "(config/<controller>_controller.yaml)"),
        OpaqueFunction(function=_controller),
    ])
