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
  config/<controller>_controller.yaml): its ROS parameters.

The controller needs a robot: the simulator (``ros2 launch youbot_dynamics sim.launch.py``), the
Gazebo description with ``active_controller:=arm_effort_controller``, or the real driver with its
effort group controller. It starts disabled (parameter ``enabled_on_start``); enable it with

    ros2 service call /pd_gravity_controller/enable std_srvs/srv/SetBool "{data: true}"

Node parameters (all read-only, read at start-up; each documented in the parameter files):
``arm_description`` (''), ``model_file`` ('' = nominal model; give an identified one),
``base_frame`` (arm_link_0), ``rate`` (1000.0 Hz), ``joint_states_topic`` (/joint_states),
``joint_state_publishers_max`` (1), ``command_topic`` (/arm_effort_controller/commands),
``release_topic`` (/arm_trajectory_controller/joint_trajectory), ``kp``, ``kd`` (unset = designed gains),
``bandwidth`` (60.0 rad/s PD, 40.0 rad/s computed torque), ``damping`` (1.0),
``static_accuracy`` (PD only, 5e-4 rad), ``friction_compensation`` (true), ``friction_eps``
(0.01 rad/s), ``velocity_source`` (positions | reported), ``velocity_filter_time`` (0.001 s),
``state_timeout`` (0.05 s), ``state_loss_timeout`` (0.5 s), ``fault_behaviour`` (zero | hold), ``hold_bandwidth``
(10.0 rad/s), ``torque_limit`` (unset = min(effort_max, drive limit)), ``limit_margin`` (0.05 rad),
``limit_damping`` (unset = torque_limit / velocity_max), ``ramp_time`` (0.5 s),
``bumpless_enable`` (true), ``enabled_on_start`` (false), ``state_publish_decimation`` (10),
``diagnostics_period`` (1.0 s), ``log_throttle_period`` (1.0 s), ``line_duration`` (computed
torque only, 2.0 s), ``observer_gain`` (100.0 1/s), ``collision_thresholds`` (unset = from the model
file), ``collision_factor`` (6.0), ``collision_reaction`` (none | stop | float); float only:
``rest_torque`` (unset = half the model's Coulomb level), ``rest_velocity`` (0.02 rad/s), and its
``kd`` is the damping D (unset = 5/s x the reference inertia); it has no ``kp`` or ``damping``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from youbot_dynamics.controller_registry import CONTROLLERS
from youbot_dynamics.launch_pieces import controller_node


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
