"""ros2_control description of the arm for Gazebo (gz_ros2_control) and mock hardware.

Generates ``urdf/youbot_arm.urdf.xacro`` from the arm description. The xacro includes the
generated URDF (``youbot_arm.urdf``, by a path relative to the xacro, so both files must sit in
the same folder), which keeps one source for kinematics, limits and inertials, and adds:

* ``world`` and the fixed ``world_joint`` world -> ``arm_link_0`` (identity), which anchors the
  arm in Gazebo;
* ``arm_link_0_inertial``, a placeholder inertial fixed to ``arm_link_0``. Gazebo's URDF converter
  (sdformat) leaves out a massless link that it cannot lump into a parent, together with every
  link below it, and ``arm_link_0`` (the child of ``world``, so never lumped) has no inertial in
  the arm description. The base is welded to the world, so this mass has no effect on the arm's
  motion;
* ``<ros2_control>``: each joint with ``position``, ``velocity`` and ``effort`` command interfaces
  bounded by the arm's position range, ``velocity_max`` and ``effort_max``, and the same three
  state interfaces. The initial state is rest in :func:`home_position` (the upright "candle" pose):
  q = 0, the default, lies outside joint 3's range;
* with ``hardware:=gazebo`` the ``gz_ros2_control`` system plugin, which runs the controller
  manager with the parameter file ``controllers_file``.

xacro arguments: ``hardware`` (``gazebo``, the default, or ``mock`` for
``mock_components/GenericSystem``, i.e. RViz and controller tests without a simulator) and
``controllers_file`` (the ros2_control parameter file for Gazebo; default
``../config/ros2_controllers.yaml`` next to the xacro, made absolute when xacro is given an
absolute path, as the launch file does).

Regenerate the shipped file (and the URDF) with ``python -m youbot_dynamics urdf --write``.
"""
from __future__ import annotations

import math
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
from numpy.typing import NDArray

from .description import ArmDescription
from ..files.fileio import atomic_write_text
from .urdf import REGENERATE_COMMAND, URDF_FILE_NAME, _num, _origin, default_urdf_path

__all__ = [
    "XACRO_FILE_NAME",
    "WORLD_LINK",
    "WORLD_JOINT",
    "BASE_INERTIAL_LINK",
    "BASE_INERTIAL_MASS",
    "BASE_INERTIAL_INERTIA",
    "HARDWARE_PLUGINS",
    "GZ_SYSTEM_PLUGIN",
    "INTERFACES",
    "CANDLE_THETA",
    "home_position",
    "command_limits",
    "generate_xacro",
    "default_xacro_path",
    "write_xacro",
]

XACRO_FILE_NAME = "youbot_arm.urdf.xacro"
WORLD_LINK = "world"
WORLD_JOINT = "world_joint"
BASE_INERTIAL_LINK = "arm_link_0_inertial"
BASE_INERTIAL_MASS = 1.0  # [kg] placeholder, see the module docstring
BASE_INERTIAL_INERTIA = 1e-3  # [kg m^2] ixx = iyy = izz of the placeholder
# xacro value of ``hardware`` -> ros2_control hardware plugin
HARDWARE_PLUGINS = {"gazebo": "gz_ros2_control/GazeboSimSystem", "mock": "mock_components/GenericSystem"}
# Gazebo system plugin (file name, class) that runs the controller manager
GZ_SYSTEM_PLUGIN = ("gz_ros2_control-system", "gz_ros2_control::GazeboSimROS2ControlPlugin")
# Command and state interfaces of every joint.
INTERFACES = ("position", "velocity", "effort")
# DH angles theta of the upright "candle" pose (seed 002, eq. 2.7): the links stand vertically.
CANDLE_THETA = (0.0, math.pi / 2, 0.0, math.pi / 2, 0.0)
_DEFAULT_CONTROLLERS_FILE = "../config/ros2_controllers.yaml"  # relative to the xacro's folder


def home_position(arm: ArmDescription) -> NDArray[np.float64]:
    """Driver angles q of the candle pose: the initial state of the simulated and mock arm.

    Raises ``ValueError`` if the arm has another number of joints or the pose lies outside the limits.
    """
    if arm.n_joints != len(CANDLE_THETA):
        raise ValueError(f"the candle pose is defined for {len(CANDLE_THETA)} joints, the arm has {arm.n_joints}")
    q = arm.q_from_theta(CANDLE_THETA)
    if not arm.within_limits(q, tolerance=0.0):
        raise ValueError(f"the candle pose q = {q.tolist()} lies outside the joint limits")
    return q


def command_limits(arm: ArmDescription) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """``{interface: (min, max)}`` per joint of the command interfaces, from the arm description."""
    return {
        "position": (arm.position_min, arm.position_max),
        "velocity": (-arm.velocity_max, arm.velocity_max),
        "effort": (-arm.effort_max, arm.effort_max),
    }


def _param(name: str, value: float) -> str:
    return f"<param name={quoteattr(name)}>{_num(value)}</param>"


def _joint_lines(arm: ArmDescription, index: int, home: NDArray[np.float64]) -> list[str]:
    lines = [f"    <joint name={quoteattr(arm.joint_names[index])}>"]
    for interface, (low, high) in command_limits(arm).items():
        lines += [
            f"      <command_interface name={quoteattr(interface)}>",
            f"        {_param('min', low[index])}",
            f"        {_param('max', high[index])}",
            "      </command_interface>",
        ]
    initial = {"position": home[index], "velocity": 0.0, "effort": 0.0}
    for interface in INTERFACES:
        lines += [
            f"      <state_interface name={quoteattr(interface)}>",
            f"        {_param('initial_value', initial[interface])}",
            "      </state_interface>",
        ]
    lines.append("    </joint>")
    return lines


def _if_hardware(value: str) -> str:
    return f"<xacro:if value=\"${{'$(arg hardware)' == '{value}'}}\">"


def _header_lines(arm: ArmDescription) -> list[str]:
    # An XML comment cannot contain "--" (see urdf._header_lines).
    lines = [
        ("GENERATED FILE - do not edit. ros2_control / Gazebo (gz sim) description of "
         f"'{arm.name.replace('--', '- -')}'"),
        "generated from the arm description (config/youbot_arm.yaml) by youbot_dynamics/arm/ros2_control.py.",
        f"To regenerate it (and {URDF_FILE_NAME}), run",
        f"  {REGENERATE_COMMAND.replace(' --write', '')}",
        "with the write option (double dash + write; an XML comment cannot hold a double dash).",
        f"Kinematics, limits and inertials come from {URDF_FILE_NAME} (included from this folder).",
        "Expand: xacro youbot_arm.urdf.xacro [hardware:=gazebo|mock] [controllers_file:=/abs/path.yaml]",
        "  hardware: gazebo (gz_ros2_control, the default) or mock (mock_components/GenericSystem);",
        f"  controllers_file: ros2_control parameters for Gazebo (default {_DEFAULT_CONTROLLERS_FILE}",
        "  next to this file).",
        "Initial state: at rest in the upright candle pose (q = 0 lies outside joint 3's range).",
    ]
    assert not any("--" in line for line in lines)
    return lines


def generate_xacro(arm: ArmDescription) -> str:
    """xacro XML of the ros2_control / Gazebo description of ``arm`` (deterministic text)."""
    home = home_position(arm)
    known = " or ".join(HARDWARE_PLUGINS)
    inertia = _num(BASE_INERTIAL_INERTIA)
    out = [
        '<?xml version="1.0"?>',
        "<!--",
        *(f"  {line}" for line in _header_lines(arm)),
        "-->",
        f'<robot name={quoteattr(arm.name)} xmlns:xacro="http://www.ros.org/wiki/xacro">',
        '  <xacro:arg name="hardware" default="gazebo"/>',
        f"  <xacro:arg name=\"controllers_file\" default=\"${{xacro.abs_filename('{_DEFAULT_CONTROLLERS_FILE}')}}\"/>",
        f"  <xacro:unless value=\"${{'$(arg hardware)' in {tuple(HARDWARE_PLUGINS)!r}}}\">",
        f"    ${{xacro.fatal('hardware must be {known}, not: $(arg hardware)')}}",
        "  </xacro:unless>",
        "",
        f"  <xacro:include filename={quoteattr(URDF_FILE_NAME)}/>",
        "",
        "  <!-- Anchors the arm in Gazebo. -->",
        f"  <link name={quoteattr(WORLD_LINK)}/>",
        f"  <joint name={quoteattr(WORLD_JOINT)} type=\"fixed\">",
        f"    <parent link={quoteattr(WORLD_LINK)}/>",
        f"    <child link={quoteattr(arm.link_names[0])}/>",
        f"    {_origin((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))}",
        "  </joint>",
        "  <!-- Placeholder inertial of the base: Gazebo drops a massless link that is not lumped into a",
        "       parent, with all links below it. Welded to the world, it does not affect the arm. -->",
        f"  <joint name={quoteattr(BASE_INERTIAL_LINK + '_joint')} type=\"fixed\">",
        f"    <parent link={quoteattr(arm.link_names[0])}/>",
        f"    <child link={quoteattr(BASE_INERTIAL_LINK)}/>",
        f"    {_origin((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))}",
        "  </joint>",
        f"  <link name={quoteattr(BASE_INERTIAL_LINK)}>",
        "    <inertial>",
        f"      {_origin((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))}",
        f'      <mass value="{_num(BASE_INERTIAL_MASS)}"/>',
        f'      <inertia ixx="{inertia}" ixy="0.0" ixz="0.0" iyy="{inertia}" iyz="0.0" izz="{inertia}"/>',
        "    </inertial>",
        "  </link>",
        "",
        "  <!-- Command limits: position range, velocity_max, effort_max of the arm description. -->",
        f"  <ros2_control name={quoteattr(arm.name)} type=\"system\">",
        "    <hardware>",
    ]
    for value, plugin in HARDWARE_PLUGINS.items():
        out += [f"      {_if_hardware(value)}", f"        <plugin>{plugin}</plugin>", "      </xacro:if>"]
    out.append("    </hardware>")
    for i in range(arm.n_joints):
        out += _joint_lines(arm, i, home)
    out += [
        "  </ros2_control>",
        "",
        f"  {_if_hardware('gazebo')}",
        "    <gazebo>",
        f"      <plugin filename={quoteattr(GZ_SYSTEM_PLUGIN[0])} name={quoteattr(GZ_SYSTEM_PLUGIN[1])}>",
        "        <parameters>$(arg controllers_file)</parameters>",
        "      </plugin>",
        "    </gazebo>",
        "  </xacro:if>",
        "</robot>",
        "",
    ]
    return "\n".join(out)


def default_xacro_path() -> Path:
    """Path of the shipped xacro: ``<share>/urdf/youbot_arm.urdf.xacro`` (next to the URDF)."""
    return default_urdf_path().with_name(XACRO_FILE_NAME)


def write_xacro(arm: ArmDescription, path: str | Path | None = None) -> Path:
    """Write :func:`generate_xacro` of ``arm`` to ``path`` (default :func:`default_xacro_path`); returns the path."""
    path = Path(path) if path is not None else default_xacro_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, generate_xacro(arm))
    return path
