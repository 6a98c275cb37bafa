"""Static checks of launch/*.launch.py and the parameter files in config/ (no launch install needed).

* every launch file starts some executable, and every ``executable='...'`` of this package is a
  console_scripts entry point of setup.py whose module exists and defines the named function;
* every ``.yaml``/``.urdf``/``.xacro`` file named in a launch file exists under config/ or urdf/;
* every ``ros__parameters`` file in config/ is for a node started by some launch file, and each of
  its parameters is declared (``declare_parameter('name', ...)``) in that node's module; except the
  ros2_control files (a ``controller_manager`` section), which configure the controller manager and
  its controllers: such a file is named by a launch file and each of its sections belongs to the
  controller manager or to a controller declared there with a type (the controllers themselves are
  checked in test_gazebo_description.py).

The test marked ``launch`` also builds each LaunchDescription; it needs launch_ros.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from youbot_dynamics.contract.controller_registry import CONTROLLERS
from youbot_dynamics.contract.parameter_schema import load_schema

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "youbot_dynamics"
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))
DATA_SUFFIXES = (".yaml", ".urdf", ".xacro")
IMPLICIT_PARAMETERS = {"use_sim_time", "start_type_description_service"}  # declared by rclpy itself
CONTROLLER_MANAGER = "controller_manager"  # node name of a ros2_control controller manager
REGISTRY = "youbot_dynamics.contract.controller_registry"
LAUNCH_PIECES = "youbot_dynamics.nodes.launch_pieces"  # the registry's controllers, for launch files


def console_scripts() -> dict[str, tuple[str, str]]:
    """``{script: (module, function)}`` from setup.py's console_scripts: its literal lines and the
    controllers' lines it takes from the registry."""
    text = (ROOT / "setup.py").read_text()
    pattern = re.compile(r"""['"]\s*([A-Za-z0-9_.\-]+)\s*=\s*([A-Za-z_][\w.]*)\s*:\s*([A-Za-z_]\w*)\s*['"]""")
    lines = [m.groups() for m in pattern.finditer(text)]
    if "entry.entry_point for entry in CONTROLLERS" in text:
        lines += [pattern.match(f"'{entry.entry_point}'").groups() for entry in CONTROLLERS]
    return {script: (module, function) for script, module, function in lines}


def test_setup_py_runs_on_a_checkout():
    """setup.py itself runs (it reads the registry by path before anything is installed): a moved
    registry once broke every fresh `make setup` while installed checkouts kept passing."""
    out = subprocess.run([sys.executable, "setup.py", "--name"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "youbot_dynamics", out.stdout + out.stderr


def module_file(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    return base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"


def _const(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def launch_info(path: Path) -> dict:
    """Executables (with their package), Node names and data-file names used in a launch file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    executables: list[tuple[str | None, str]] = []
    nodes: list[dict[str, str | None]] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        kw = {k.arg: _const(k.value) for k in call.keywords if k.arg}
        if kw.get("executable"):
            executables.append((kw.get("package"), kw["executable"]))
        if _call_name(call) == "Node":
            nodes.append({"package": kw.get("package"), "executable": kw.get("executable"), "name": kw.get("name")})
    files = {s for s in (_const(n) for n in ast.walk(tree)) if s and s.endswith(DATA_SUFFIXES)}
    if any(isinstance(n, ast.ImportFrom) and n.module in (REGISTRY, LAUNCH_PIECES) for n in ast.walk(tree)):
        # a launch file that starts the controllers of the registry names them through it
        for entry in CONTROLLERS:
            executables.append((PACKAGE, entry.node))
            nodes.append({"package": PACKAGE, "executable": entry.node, "name": entry.node})
            files.add(entry.params_file)
    return {"executables": executables, "nodes": nodes, "files": sorted(files)}


def declared_parameters(executable: str) -> set[str]:
    """The parameters node ``executable`` declares: the names in its schema
    (youbot_dynamics/nodes/parameters/<executable>.yaml, with what it borrows or extends)."""
    return set(load_schema(executable))


def flatten(params: dict, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in params.items():
        name = f"{prefix}{key}"
        out |= flatten(value, name + ".") if isinstance(value, dict) else {name}
    return out


def parameter_files(*, controllers: bool) -> list[Path]:
    """``ros__parameters`` files in config/: the ros2_control ones (``controllers``) or the others."""
    found = []
    for path in sorted((ROOT / "config").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and any(isinstance(v, dict) and "ros__parameters" in v for v in doc.values()):
            if (CONTROLLER_MANAGER in doc) == controllers:
                found.append(path)
    return found


def declared_controllers(doc: dict) -> dict[str, str]:
    """``{controller: type}`` declared under the controller manager of a ros2_control parameter file."""
    manager = doc[CONTROLLER_MANAGER]["ros__parameters"]
    return {name: spec["type"] for name, spec in manager.items() if isinstance(spec, dict) and spec.get("type")}


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_there_are_launch_files():
    assert LAUNCH_FILES, "no launch/*.launch.py"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=_ids(LAUNCH_FILES))
def test_launch_file_executables_are_entry_points(path):
    scripts = console_scripts()
    info = launch_info(path)
    assert info["executables"], f"{path.name} starts no executable"
    ours = [exe for package, exe in info["executables"] if package in (None, PACKAGE)]
    for exe in ours:
        assert exe in scripts, f"{path.name}: executable '{exe}' is not a console_scripts entry point of setup.py"
        module, function = scripts[exe]
        source = module_file(module)
        assert source.is_file(), f"{exe}: module {module} not found ({source})"
        assert defines(source, function), f"{exe}: {module} has no top-level function {function}()"


ARM_NODES = ("youbot_driver", "sim_node")  # the nodes a launch exists for: it ends, and fails, with them


def _arm_nodes(path: Path) -> dict[str, ast.AST | None]:
    """``{executable: its on_exit expression}`` of the arm nodes a launch file starts."""
    found = {}
    for call in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)):
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if _call_name(call) == "Node" and _const(kw.get("executable")) in ARM_NODES:
            found[_const(kw["executable"])] = kw.get("on_exit")
    return found


def test_a_launch_ends_and_fails_with_its_arm():
    """Issue 35 case 14: ``youbot_arm.launch.py`` returned 0 when youbot_driver died with exit 1 (its
    ``on_exit`` was a ``Shutdown``, which ends a launch with 0): every launch file that starts the arm
    (driver or simulator) ends with it through launch_pieces.EndWithTheArm, which makes a failed arm
    fail the launch (its behaviour: test_end_with_the_arm_sets_the_launch_s_exit_status)."""
    starting = {path.name: _arm_nodes(path) for path in LAUNCH_FILES if _arm_nodes(path)}
    assert {"sim.launch.py", "youbot_arm.launch.py"} <= set(starting), starting
    for name, nodes in starting.items():
        for executable, on_exit in nodes.items():
            assert isinstance(on_exit, ast.Call) and _call_name(on_exit) == "EndWithTheArm" \
                and _const(on_exit.args[0]) == executable, f"{name}: {executable} does not end the launch with it"


@pytest.mark.launch
@pytest.mark.parametrize("code, status", [(0, 0), (1, 1), (-9, 1)])
def test_end_with_the_arm_sets_the_launch_s_exit_status(code, status):
    """A process ended by EndWithTheArm: the launch ends (the other process, a sleeper, is stopped)
    and returns 0 after exit 0, 1 after any other exit status."""
    pytest.importorskip("launch_ros")  # with launch ("launch" alone finds the launch/ folder of the checkout)
    import sys

    from launch import LaunchDescription, LaunchService
    from launch.actions import ExecuteProcess

    from youbot_dynamics.nodes.launch_pieces import EndWithTheArm

    script = "import os, signal, sys; os.kill(os.getpid(), signal.SIGKILL) if {0} < 0 else sys.exit({0})"
    service = LaunchService()
    service.include_launch_description(LaunchDescription([
        ExecuteProcess(cmd=[sys.executable, "-c", script.format(code)], on_exit=EndWithTheArm("arm", "gone")),
        ExecuteProcess(cmd=[sys.executable, "-c", "import time; time.sleep(120)"]),
    ]))
    assert service.run() == status


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=_ids(LAUNCH_FILES))
def test_launch_file_data_files_exist(path):
    for name in launch_info(path)["files"]:
        base = Path(name).name
        assert (ROOT / "config" / base).is_file() or (ROOT / "urdf" / base).is_file(), \
            f"{path.name} references {name}, which is neither in config/ nor urdf/"


def defines(source: Path, function: str) -> bool:
    """``source`` defines ``function`` at its top level; ``main_<controller>``: the common controller
    node's module answers it by its ``__getattr__`` (PEP 562; the registry test imports it)."""
    functions = {n.name for n in ast.parse(source.read_text()).body if isinstance(n, ast.FunctionDef)}
    return function in functions or (function.startswith("main_") and "__getattr__" in functions)


def test_entry_point_modules_exist():
    for exe, (module, function) in console_scripts().items():
        source = module_file(module)
        assert source.is_file(), f"{exe}: module {module} not found"
        assert defines(source, function), f"{exe}: {module} has no top-level function {function}()"


PARAMETER_FILES = parameter_files(controllers=False)
CONTROLLER_FILES = parameter_files(controllers=True)


@pytest.mark.parametrize("path", PARAMETER_FILES, ids=_ids(PARAMETER_FILES))
def test_parameter_file_matches_launched_nodes(path):
    scripts = console_scripts()
    launched = [node for p in LAUNCH_FILES for node in launch_info(p)["nodes"]
                if node["package"] in (None, PACKAGE) and node["executable"]]
    doc = yaml.safe_load(path.read_text())
    for key, section in doc.items():
        if key == "/**":
            continue
        node_name = key.rstrip("/").rsplit("/", 1)[-1]
        matches = [n for n in launched
                   if n["name"] == node_name or (n["name"] is None and n["executable"] == node_name)]
        if not matches and node_name in scripts:  # named like its executable
            matches = [{"executable": node_name}]
        assert matches, f"{path.name}: node '{key}' is not started by any launch file"
        params = flatten(section.get("ros__parameters") or {})
        for match in matches:
            declared = declared_parameters(match["executable"]) | IMPLICIT_PARAMETERS
            undeclared = sorted(params - declared)
            assert not undeclared, f"{path.name}: {key} sets parameters not declared by {match['executable']}: " \
                                   f"{undeclared}"


@pytest.mark.parametrize("path", CONTROLLER_FILES, ids=_ids(CONTROLLER_FILES))
def test_controller_file_is_launched_and_consistent(path):
    named = {Path(name).name for p in LAUNCH_FILES for name in launch_info(p)["files"]}
    assert path.name in named, f"{path.name} is not used by any launch file"
    doc = yaml.safe_load(path.read_text())
    declared = declared_controllers(doc)
    assert declared, f"{path.name}: the controller manager declares no controller"
    for key, section in doc.items():
        assert key == CONTROLLER_MANAGER or key in declared, \
            f"{path.name}: section '{key}' is no controller declared (with a type) under {CONTROLLER_MANAGER}"
        assert isinstance(section, dict) and set(section) == {"ros__parameters"}, f"{path.name}: {key}"


# node -> its parameter file in config/
NODE_PARAMETER_FILES = {
    "kinematics_node": "kinematics.yaml",
    "sim_node": "sim_node.yaml",
    **{entry.node: entry.params_file for entry in CONTROLLERS},  # each controller of the registry
    "external_torque_observer": "external_torque_observer.yaml",
    "identification_node": "identification_node.yaml",
    "youbot_driver": "youbot_driver.yaml",
}
CONTROLLER_FILE_LINES_MAX = 30  # issue 32: a controller's file holds its deviations, not a copy of the table


@pytest.mark.parametrize("node", sorted(NODE_PARAMETER_FILES))
def test_node_parameter_file_states_only_deviations_with_their_reason(node):
    """config/<file> sets only parameters the node declares, each to a value other than its default
    (the schema's, one home: doc/parameters.md shows them all), each under a comment saying why."""
    from youbot_dynamics.contract.parameter_schema import load_schema

    file_name = NODE_PARAMETER_FILES[node]
    assert node in console_scripts()
    text = (ROOT / "config" / file_name).read_text()
    section = yaml.safe_load(text)[node]["ros__parameters"]
    schema = load_schema(node)
    assert set(section) <= declared_parameters(node), f"{file_name}: undeclared {sorted(set(section) - set(schema))}"
    lines = text.split("\n")
    for name, value in section.items():
        assert value != schema[name].default, f"{file_name}: {name}: {value!r} is the default (say nothing, or why)"
        line = next(i for i, text_line in enumerate(lines) if re.match(rf"^\s+{name}:", text_line))
        assert lines[line - 1].strip().startswith("#"), f"{file_name}: {name} has no comment saying why it deviates"
    if node in {entry.node for entry in CONTROLLERS}:
        assert len(lines) <= CONTROLLER_FILE_LINES_MAX + 1, f"{file_name}: {len(lines)} lines"


@pytest.mark.launch
@pytest.mark.parametrize("path", LAUNCH_FILES, ids=_ids(LAUNCH_FILES))
def test_launch_description_builds(path):
    pytest.importorskip("launch_ros")
    from launch import LaunchDescription
    from launch.launch_description_sources import get_launch_description_from_python_launch_file

    description = get_launch_description_from_python_launch_file(str(path))
    assert isinstance(description, LaunchDescription)
    assert description.entities
    if path.name == "kinematics.launch.py":
        assert [a.name for a in description.get_launch_arguments()] == ["params_file"]
    if path.name == "youbot_arm.launch.py":
        assert [a.name for a in description.get_launch_arguments()] == [
            "interface", "backend", "params_file", "kinematics_params_file", "controller",
            "controller_params_file", "controller_in_bus", "identification", "identification_params_file"]
    if path.name == "sim.launch.py":
        assert [a.name for a in description.get_launch_arguments()] == [
            "params_file", "kinematics_params_file", "publish_clock", "controller", "controller_params_file",
            "controller_in_bus"]
    if path.name == "gazebo.launch.py":  # then those of ros_gz_sim's gz_sim.launch.py, if installed
        assert [a.name for a in description.get_launch_arguments()][:4] == [
            "active_controller", "controllers_file", "gz_args", "rviz"]


# -- what the launch files start, resolved without starting anything (needs launch_ros) -------------


@pytest.fixture
def package_prefix(tmp_path, monkeypatch):
    """An ament prefix holding this package's share (launch, config) as a colcon install would."""
    share = tmp_path / "share"
    (share / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (share / "ament_index" / "resource_index" / "packages" / PACKAGE).touch()
    (share / PACKAGE).mkdir()
    for folder in ("launch", "config"):
        (share / PACKAGE / folder).symlink_to(ROOT / folder)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    return share / PACKAGE


def started_nodes(name: str, **arguments: str) -> dict[str, dict]:
    """``{node name: {"parameters": [file names or dicts], "required": ends the launch}}`` of
    ``launch/<name>`` with the given ``name:=value`` arguments: the description is visited as
    ``ros2 launch`` would (arguments, conditions, opaque functions, scoped includes), the nodes
    are not started."""
    from launch import LaunchContext
    from launch.actions import Shutdown
    from launch.launch_description_sources import get_launch_description_from_python_launch_file
    from launch_ros.actions import Node
    from launch_ros.utilities import evaluate_parameters

    from youbot_dynamics.nodes.launch_pieces import EndWithTheArm

    context = LaunchContext()
    context.launch_configurations.update(arguments)
    nodes: dict[str, dict] = {}

    def walk(entity):
        if isinstance(entity, Node):
            if entity.condition is None or entity.condition.evaluate(context):
                parameters = evaluate_parameters(context, entity._Node__parameters)
                on_exit = entity._ExecuteLocal__on_exit or []
                nodes[entity.node_executable] = {
                    "parameters": [p if isinstance(p, dict) else Path(p).name for p in parameters],
                    "required": isinstance(on_exit, EndWithTheArm) or any(
                        isinstance(a, Shutdown) for a in (on_exit if isinstance(on_exit, list) else [on_exit]))}
            return
        for sub in entity.visit(context) or []:
            walk(sub)

    walk(get_launch_description_from_python_launch_file(str(ROOT / "launch" / name)))
    return nodes


@pytest.mark.launch
def test_identification_launch_gives_the_simulator_its_own_file_and_clock(package_prefix, tmp_path):
    pytest.importorskip("launch_ros")
    nodes = started_nodes("identification.launch.py")
    assert list(nodes) == ["identification_node"]
    assert nodes["identification_node"]["parameters"] == ["identification_node.yaml", {"use_sim_time": False}]
    mine = tmp_path / "my_identification.yaml"
    mine.write_text("identification_node:\n  ros__parameters:\n    periods: 2\n")
    nodes = started_nodes("identification.launch.py", with_sim="true", use_sim_time="true", params_file=str(mine))
    assert nodes["identification_node"]["parameters"] == ["my_identification.yaml", {"use_sim_time": True}]
    assert nodes["sim_node"]["parameters"] == ["sim_node.yaml", {"publish_clock": True}]
    assert nodes["sim_node"]["required"] and nodes["kinematics_node"]["parameters"] == ["kinematics.yaml"]
    # use_sim_time auto: on the simulator's /clock with the simulator (a stalled simulator falls
    # behind the wall clock), on the wall clock without it
    nodes = started_nodes("identification.launch.py", with_sim="true")
    assert nodes["identification_node"]["parameters"] == ["identification_node.yaml", {"use_sim_time": True}]
    assert nodes["sim_node"]["parameters"] == ["sim_node.yaml", {"publish_clock": True}]
    nodes = started_nodes("identification.launch.py", with_sim="true", use_sim_time="false")
    assert nodes["identification_node"]["parameters"] == ["identification_node.yaml", {"use_sim_time": False}]
    assert nodes["sim_node"]["parameters"] == ["sim_node.yaml"]  # publish_clock as in the file


@pytest.mark.launch
def test_launch_defaults_leave_the_parameter_files_alone(package_prefix):
    pytest.importorskip("launch_ros")
    nodes = started_nodes("youbot_arm.launch.py")
    assert nodes["youbot_driver"]["parameters"] == ["youbot_driver.yaml"] and nodes["youbot_driver"]["required"]
    assert set(nodes) == {"youbot_driver", "kinematics_node"}
    nodes = started_nodes("youbot_arm.launch.py", backend="virtual", controller="computed_torque")
    assert nodes["youbot_driver"]["parameters"] == ["youbot_driver.yaml", {"backend": "virtual"}]
    assert nodes["computed_torque_controller"]["parameters"] == ["computed_torque_controller.yaml"]
    for controller in ("pd_gravity", "computed_torque"):
        nodes = started_nodes("control.launch.py", controller=controller)
        assert nodes == {f"{controller}_controller": {"parameters": [f"{controller}_controller.yaml"],
                                                      "required": False}}
    assert started_nodes("sim.launch.py")["sim_node"]["parameters"] == ["sim_node.yaml"]


@pytest.mark.launch
def test_controller_in_bus_runs_it_in_the_arm_s_process(package_prefix, tmp_path):
    """``controller_in_bus:=true``: no controller node of its own, the driver or the simulator gets
    the controller and its parameter file ('' = the package file, resolved by the node)."""
    pytest.importorskip("launch_ros")
    nodes = started_nodes("youbot_arm.launch.py", backend="virtual", controller="computed_torque",
                          controller_in_bus="true")
    assert set(nodes) == {"youbot_driver", "kinematics_node"}
    assert nodes["youbot_driver"]["parameters"] == [
        "youbot_driver.yaml", {"backend": "virtual", "controller": "computed_torque", "controller_params_file": ""}]
    mine = tmp_path / "my_pd.yaml"
    mine.write_text("pd_gravity_controller:\n  ros__parameters:\n    bandwidth: 40.0\n")
    nodes = started_nodes("sim.launch.py", controller="pd_gravity", controller_in_bus="true",
                          controller_params_file=str(mine))
    assert set(nodes) == {"sim_node", "kinematics_node"}
    assert nodes["sim_node"]["parameters"] == [
        "sim_node.yaml", {"controller": "pd_gravity", "controller_params_file": str(mine)}]
    # over DDS (the default): the controller's own node on its file, the arm's parameters untouched
    nodes = started_nodes("sim.launch.py", controller="pd_gravity")
    assert nodes["sim_node"]["parameters"] == ["sim_node.yaml"]
    assert nodes["pd_gravity_controller"]["parameters"] == ["pd_gravity_controller.yaml"]
    nodes = started_nodes("youbot_arm.launch.py", controller_in_bus="true")  # no controller: nothing to host
    assert nodes["youbot_driver"]["parameters"] == ["youbot_driver.yaml"]


@pytest.mark.launch
@pytest.mark.parametrize("name, argument", [("youbot_arm.launch.py", {"backend": "ethercat"}),
                                            ("control.launch.py", {"controller": "pid"}),
                                            ("identification.launch.py", {"with_sim": "yes"}),
                                            ("sim.launch.py", {"publish_clock": "1"}),
                                            ("sim.launch.py", {"controller_in_bus": "yes"})])
def test_enumerated_launch_arguments_refuse_other_values(package_prefix, name, argument):
    pytest.importorskip("launch_ros")
    with pytest.raises(Exception, match="is not valid. Valid options are"):
        started_nodes(name, **argument)


@pytest.mark.launch
@pytest.mark.parametrize("path", LAUNCH_FILES, ids=_ids(LAUNCH_FILES))
def test_show_args_is_readable(path):
    """What ``ros2 launch --show-args`` prints for each default: text, never an object's repr."""
    pytest.importorskip("launch_ros")
    from launch.launch_description_sources import get_launch_description_from_python_launch_file

    for argument in get_launch_description_from_python_launch_file(str(path)).get_launch_arguments():
        shown = " + ".join(s.describe() for s in argument.default_value or [])
        assert "object at 0x" not in shown, f"{argument.name}: {shown}"
