"""The controller nodes' parameters: the common table :data:`COMMON_PARAMETERS` (every controller
declares it, :class:`.controller_node.ControllerNode`) and the descriptor helpers their own
parameters use. Every controller parameter is read-only: read once at start-up.
"""
from __future__ import annotations

from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.parameter import Parameter

from ..contract import EFFORT_COMMANDS, JOINT_STATES, TRAJECTORY
from ..control.observer import COLLISION_FACTOR, OBSERVER_GAIN
from ..control.safety import SafetyConfig
from .common import REALTIME_PRIORITY, parameter_descriptor, realtime_priority_parameter

__all__ = ["BOOL", "COLLISION_REACTIONS", "COMMON_PARAMETERS", "CYCLE_TRIGGERS", "DOUBLE", "DOUBLE_ARRAY", "INTEGER",
           "OBSERVER_TORQUES", "STRING", "UNSET_ARRAY", "descriptor"]

CYCLE_TRIGGERS = ("joint_states", "timer")
SAFETY = SafetyConfig()  # the safety guard's defaults are the nodes' defaults


def descriptor(description: str, type_: int, **ranges: Any) -> ParameterDescriptor:
    """A read-only parameter descriptor (every controller parameter is read once at start-up)."""
    return parameter_descriptor(description, type_, read_only=True, **ranges)


STRING, DOUBLE, BOOL, INTEGER, DOUBLE_ARRAY = (ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_DOUBLE,
                                               ParameterType.PARAMETER_BOOL, ParameterType.PARAMETER_INTEGER,
                                               ParameterType.PARAMETER_DOUBLE_ARRAY)
UNSET_ARRAY = Parameter.Type.DOUBLE_ARRAY  # declared without a value: unset until overridden

#: Parameters of every controller node: name -> (default, descriptor). :class:`.controller_node.ControllerNode`
#: declares them after the node's own parameters (a node declares a name itself to give it another
#: default; it lists in ``WITHOUT_COMMON`` those its law has no use for).
COMMON_PARAMETERS: dict[str, tuple[Any, ParameterDescriptor]] = {
    'arm_description': ('', descriptor(
        "Path of the arm description YAML (joint names, limits, drives); '' = config/youbot_arm.yaml.", STRING)),
    'model_file': ('', descriptor(
        "Dynamic model file (format of youbot_dynamics.dynamics.paramfile, e.g. an identified model); "
        "'' = the nominal model config/youbot_nominal_model.yaml.", STRING)),
    'base_frame': ('arm_link_0', descriptor(
        "Frame of Cartesian targets (DH frame 0); a PoseStamped in another frame is refused (no tf2); "
        "an empty frame_id is taken as this frame.", STRING)),
    'rate': (1000.0, descriptor(
        "Control rate [Hz] (steady clock): of the timer with cycle_trigger 'timer'; with 'joint_states' the "
        "nominal rate (set it to the joint-state rate): cycles closer than half a period are skipped, and the "
        "watchdog timer runs a cycle when no joint state came for 1.5 periods (then every 1.5 periods).", DOUBLE,
        range_=(1.0, 10000.0))),
    'cycle_trigger': ('joint_states', descriptor(
        "What starts a control cycle: 'joint_states' = the arrival of a joint state (latency joint state -> "
        "torque = the compute time; the timer is the watchdog) or 'timer' = the timer alone (the state used "
        "is up to one period old).", STRING)),
    'joint_states_topic': (JOINT_STATES, descriptor(
        "sensor_msgs/JointState input (arm joints by name; position and velocity required).", STRING)),
    'joint_state_publishers_max': (1, descriptor(
        "At most this many nodes may publish on joint_states_topic (checked on the ROS graph at ~/enable and "
        "every 0.2 s): more (a second simulator or driver in the domain, whose states would be taken for the "
        "arm's) refuses ~/enable and is a fault while enabled, naming the publishers; raise it where other "
        "nodes share the topic (e.g. a base driver), 0 = not checked.", INTEGER, int_range=(0, 1000))),
    'command_topic': (EFFORT_COMMANDS, descriptor(
        "std_msgs/Float64MultiArray output: joint torques [N m] in the arm's joint order "
        "(ros2_control effort group controller).", STRING)),
    'kp': (UNSET_ARRAY, descriptor(
        "Proportional gains, one per joint or one for all; unset = designed from bandwidth and damping.",
        DOUBLE_ARRAY)),
    'kd': (UNSET_ARRAY, descriptor(
        "Derivative gains, one per joint or one for all; unset = designed from bandwidth and damping.", DOUBLE_ARRAY)),
    'damping': (1.0, descriptor("Damping ratio of the designed gains.", DOUBLE, range_=(0.0, 10.0))),
    'friction_compensation': (True, descriptor(
        "Add the model's friction (viscous, smoothed Coulomb, offset) to the torque.", BOOL)),
    'friction_eps': (0.01, descriptor(
        "Velocity scale [rad/s] of the smoothed Coulomb sign tanh(v / eps).", DOUBLE, range_=(1e-6, 10.0))),
    'velocity_source': ('positions', descriptor(
        "Joint velocity the law and the guard use: 'positions' = the joint positions differentiated over their "
        "stamps and low-passed (velocity_filter_time; youbot_dynamics.control.velocity), 'reported' = the joint "
        "state's velocity (the youBot's drives report integer motor rpm lagging ~10 ms: computed torque tracked "
        "at 1.4-2.3 mrad RMS on it in the simulator, 0.34-1.26 mrad on positions).", STRING)),
    'velocity_filter_time': (0.001, descriptor(
        "Time constant [s] of the low-pass on differentiated positions (velocity_source 'positions').", DOUBLE,
        range_=(1e-5, 1.0))),
    'state_timeout': (SAFETY.state_timeout, descriptor(
        "A joint state older than this [s] (time since arrival) is not given to the law: the guard coasts on the "
        "gravity torque of the last good state, then faults (state_loss_timeout). 50 ms: half the drives' 100 ms "
        "timeout; single joint states 20-23 ms late were measured on an idle 2-core machine (a 20 ms default "
        "faulted in 3 of 5 logged demo runs).", DOUBLE, range_=(1e-4, 10.0))),
    'state_loss_timeout': (SAFETY.state_loss_timeout, descriptor(
        "A joint state older than this [s] (at least state_timeout) is a fault: the joint states are lost. Up to "
        "it, a late state is coasted over on gravity while the arm, at the last state's speed, can have moved at "
        "most 10 mrad (an arm in motion faults at state_timeout). 0.5 s: holding under ros2 launch on a "
        "2-core VM with two CPU hogs, the simulator's joint states stopped 32 times in 180 s for 50-93 ms, once for "
        "more than 250 ms.", DOUBLE, range_=(1e-4, 10.0))),
    'release_topic': (TRAJECTORY, descriptor(
        "trajectory_msgs/JointTrajectory input of the drives' position control (the trajectory interface of the "
        "simulator and the driver, which holds its last point). When the controller lets go of the arm (disable, "
        "shutdown, a fault with fault_behaviour 'zero'), one zero-effort command and 2 ms later it sends there a "
        "braking trajectory from the last measured state to rest within acceleration_max, which the drives then "
        "hold: the arm does not fall. '' = zero effort only (the arm then falls wherever gravity loads it).", STRING)),
    'fault_behaviour': (SAFETY.fault_behaviour, descriptor(
        "On a fault: 'zero' = zero effort, then the release to the drives (release_topic; without one, zero "
        "effort every cycle); 'hold' = low-gain PD + gravity hold of the last good position.", STRING)),
    'hold_bandwidth': (SAFETY.hold_bandwidth, descriptor(
        "Bandwidth [rad/s] of the fault hold (fault_behaviour 'hold').", DOUBLE, range_=(0.1, 1000.0))),
    'torque_limit': (UNSET_ARRAY, descriptor(
        "Saturation [N m], one per joint or one for all; unset = min(effort_max, drive torque limit) of "
        "the arm description.", DOUBLE_ARRAY)),
    'limit_margin': (SAFETY.limit_margin, descriptor(
        "Width [rad] of the joint-limit guard zone before each limit.", DOUBLE, range_=(1e-4, 1.0))),
    'limit_damping': (UNSET_ARRAY, descriptor(
        "Damping [N m s/rad] of motion towards a limit inside the zone, one per joint or one for all; "
        "unset = torque_limit / velocity_max.", DOUBLE_ARRAY)),
    'ramp_time': (SAFETY.ramp_time, descriptor(
        "Torque ramp [s] after enable (smoothstep); references start after it.", DOUBLE, range_=(0.0, 10.0))),
    'bumpless_enable': (True, descriptor(
        "Ramp from the measured effort of the joint state (if it has one) instead of from zero.", BOOL)),
    'enabled_on_start': (False, descriptor(
        "Enable at the first joint state (else wait for ~/enable).", BOOL)),
    'state_publish_decimation': (10, descriptor(
        "Publish ~/state every N control cycles; 0 = never.", INTEGER, int_range=(0, 1000000))),
    'diagnostics_period': (1.0, descriptor(
        "Period [s] of the timing report on /diagnostics; 0 = none.", DOUBLE, range_=(0.0, 3600.0))),
    'log_throttle_period': (1.0, descriptor(
        "Minimum period [s] between repeated warnings (rejected joint states).", DOUBLE, range_=(0.0, 3600.0))),
    'observer_gain': (OBSERVER_GAIN, descriptor(
        "Bandwidth K [1/s] of the momentum observer of the external joint torques, published on "
        "~/external_torque (youbot_dynamics.control.observer); 0 = no observer, no ~/external_torque and no "
        "collision detection.", DOUBLE, range_=(0.0, 10000.0))),
    'observer_torque': ('measured', descriptor(
        "The motor torque the observer integrates: 'measured' = the joint state's effort (what the model was "
        "identified on, the drives' gain and offset errors included; a state without effort restarts the "
        "observer: no estimate, no detection); 'command' = this node's own command while it commands (sent "
        "torque, not the drives' measurement), the measured effort otherwise.", STRING)),
    'collision_thresholds': (UNSET_ARRAY, descriptor(
        "Collision thresholds [N m] on the external torque estimate, one per joint or one for all; unset = "
        "collision_factor x the model's held-out RMS torque error per joint (joint_rms_errors_nm of the model "
        "file's identification block), at least 0.3 N m; no detection if the model file has none.", DOUBLE_ARRAY)),
    'collision_factor': (COLLISION_FACTOR, descriptor(
        "Thresholds from the model file: this many times its held-out RMS torque error per joint.", DOUBLE,
        range_=(0.1, 1000.0))),
    'collision_reaction': ('none', descriptor(
        "On a detected collision while enabled: 'none' = report it only (~/status, /diagnostics); 'stop' = hold "
        "the position where it was detected; 'float' = gravity and friction compensation with light damping "
        "(hand-guiding) until the next ~/enable.", STRING)),
    'realtime_priority': realtime_priority_parameter(REALTIME_PRIORITY),
}

COLLISION_REACTIONS = ("none", "stop", "float")
OBSERVER_TORQUES = ("measured", "command")
