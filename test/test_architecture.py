"""The package's import graph, read from the source (every ``import``, in functions and under
``TYPE_CHECKING`` too): no module imports itself back through others, no import runs up the
layers, and the core has no ROS (issue 32; the rooms: README.md, "Layout")."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "youbot_dynamics"

#: the rooms of the package, bottom up: a module may import its own room and the rooms below
LAYERS = (
    ("files", "timing"),
    ("arm",),
    ("contract", "motion", "dynamics"),
    ("control", "sim"),
    ("identification", "driver", "compiled"),
    ("nodes",),
    ("demo",),
    ("cli", "__main__"),
)
#: rooms that run without ROS: no rclpy, no message package
CORE = ("files", "timing", "arm", "contract", "motion", "dynamics", "control", "sim", "identification", "driver",
        "compiled")
ROS_MODULES = ("rclpy", "launch_ros", "builtin_interfaces", "youbot_dynamics_interfaces", "control_msgs")


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = _modules()


def _imports(name: str) -> tuple[set[str], set[str]]:
    """The package's modules that ``name`` imports, and the top-level names of the others."""
    path, is_package = MODULES[name]
    here = name if is_package else name.rsplit(".", 1)[0]
    inside, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[:len(here.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("youbot_dynamics"):
                outside.add(target.split(".")[0])
                continue
            for alias in node.names:
                inside.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "youbot_dynamics":
                    inside.add(alias.name)
                else:
                    outside.add(alias.name.split(".")[0])
    return {m for m in inside if m in MODULES and m != name}, outside


GRAPH = {name: _imports(name) for name in MODULES}


def _room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(room: str) -> int:
    for level, rooms in enumerate(LAYERS):
        if room in rooms:
            return level
    raise AssertionError(f"room '{room}' is in no layer of test_architecture.LAYERS: place it")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    """The check below can fail: a three-module ring and a pair are found, a chain is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles():
    cycles = _cycles({name: inside for name, (inside, _) in GRAPH.items()})
    assert not cycles, f"modules importing each other (type-only imports included): {cycles}"


def test_no_import_runs_up_the_layers():
    upward = []
    for name, (inside, _) in GRAPH.items():
        if not _room(name):
            continue  # the package's own __init__
        for target in inside:
            if _room(target) and _layer(_room(target)) > _layer(_room(name)):
                upward.append(f"{name} -> {target}")
    assert not upward, f"imports from a lower room to a higher one: {sorted(upward)}"


def test_the_package_root_holds_rooms_not_loose_modules():
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert loose == ["compiled", "timing"], f"loose modules at the package root: {loose}"


def _ros(outside: set[str]) -> list[str]:
    return sorted(m for m in outside if m in ROS_MODULES or m.endswith(("_msgs", "_srvs")))


@pytest.mark.parametrize("room", CORE)
def test_the_core_runs_without_ros(room):
    with_ros = {name: _ros(outside) for name, (_, outside) in GRAPH.items() if _room(name) == room and _ros(outside)}
    assert not with_ros, f"ROS in the core: {with_ros}"
