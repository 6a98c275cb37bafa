"""Build a rosidl package (youbot_dynamics_interfaces) against the PyPI ROS 2 wheels and install it into a venv.

Used by ``make setup`` when no ROS 2 is sourced (on a ROS 2 machine colcon builds the package), for
youbot_dynamics_interfaces and for the test-only ``control_msgs`` of ``test/interfaces/control_msgs``
(``--package DIR --unless-installed``: built only where no control_msgs is importable, a real one wins;
doc/control.md, "FollowJointTrajectory"). Steps:

1. a separate build environment (``--build-env``, default ``.venv-build``) with the build-time wheels of
   requirements-build.txt, pinned to the versions of the target venv's ROS wheels (the generated code is
   compiled against the build environment and runs against the target's libraries: they must match);
2. the message wheels' ``*__rosidl_generator_pyExport.cmake`` name the wheel build machine's Python and
   numpy include folders (``/opt/python/cp311-cp311/...``), which CMake refuses: they are pointed at this
   interpreter's (``sysconfig`` include, ``numpy.get_include()``), in the build environment only;
3. CMake configures, builds and installs the package with the target venv as prefix: the Python package
   lands in its site-packages, the libraries in ``<venv>/lib`` beside the wheels' own, found like theirs:
   the wheels' bootstrapper (a .pth file) puts ``<venv>/lib`` on ``LD_LIBRARY_PATH`` when Python starts, so
   nothing needs sourcing.

Usage: ``python tools/build_interfaces.py [--venv .venv] [--build-env .venv-build] [--package DIR]
[--build-dir DIR] [--unless-installed]``.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "youbot_dynamics_interfaces"
# in the description of a package.xml of this repository's test-only packages (test/interfaces/): an
# installed package without it is a real one, which --unless-installed leaves alone
TEST_ONLY = "youbot_dynamics test-only"
REQUIREMENTS = ROOT / "requirements-build.txt"


def run(*cmd: str | os.PathLike, env: dict | None = None, capture: bool = False) -> str:
    """Run a command; on failure exit with its output and one line naming it."""
    result = subprocess.run([str(c) for c in cmd], env=env, text=True,
                            stdout=subprocess.PIPE if capture else None)
    if result.returncode != 0:
        sys.exit(f"build_interfaces: '{' '.join(map(str, cmd))}' failed (exit {result.returncode})")
    return result.stdout or ""


def ros_pins(target_python: Path) -> str:
    """``name==version`` lines of the ROS wheels (and numpy) installed in the target venv."""
    frozen = run(target_python, "-m", "pip", "list", "--format=freeze", capture=True)
    return "".join(line + "\n" for line in frozen.splitlines() if re.match(r"(ros-|numpy==)", line, re.I))


def make_build_env(build_env: Path, pins: str) -> Path:
    """Create/refresh the build environment; re-install only when the requirements or the pins changed."""
    python = build_env / "bin" / "python"
    key = hashlib.sha256(REQUIREMENTS.read_bytes() + pins.encode()).hexdigest()
    stamp = build_env / ".requirements-sha256"
    if python.exists() and stamp.exists() and stamp.read_text() == key:
        return python
    if not python.exists():
        venv.create(build_env, with_pip=True)
    constraints = build_env / "constraints.txt"
    constraints.write_text(pins)
    run(python, "-m", "pip", "install", "-q", "-r", REQUIREMENTS, "-c", constraints)
    stamp.write_text(key)
    return python


def patch_python_includes(build_env: Path, python: Path) -> None:
    """Point the message wheels' Python/numpy include folders at this interpreter's (which must have Python.h)."""
    query = "import sysconfig, numpy; print(sysconfig.get_paths()['include']); print(numpy.get_include())"
    py_include, np_include = run(python, "-c", query, capture=True).split()
    if not (Path(py_include) / "Python.h").exists():
        sys.exit(f"build_interfaces: {py_include}/Python.h is missing: install the Python headers (python3-dev)")
    for path in build_env.glob("share/*/cmake/*__rosidl_generator_pyExport.cmake"):
        text = path.read_text()
        patched = re.sub(r"[^\";]*/include/python3\.\d+", py_include, text)
        patched = re.sub(r"[^\";]*/numpy/(_core|core)/include", np_include, patched)
        if patched != text:
            path.write_text(patched)


def installed_elsewhere(target_python: Path, name: str) -> str:
    """Where the target venv imports the package ``name`` from, if it is not one of this repository's
    test-only builds (the package.xml of its prefix, ``<prefix>/lib/python3.X/site-packages/<name>/``, without
    :data:`TEST_ONLY`); ``""`` where it imports none or a test-only one."""
    query = ("import importlib, pathlib, sys\n"
             "try:\n    init = pathlib.Path(importlib.import_module(sys.argv[1]).__file__)\n"
             "except ImportError:\n    sys.exit()\n"
             "xml = init.parents[4] / 'share' / sys.argv[1] / 'package.xml'\n"
             "print('' if xml.exists() and sys.argv[2] in xml.read_text() else init.parent)")
    return run(target_python, "-c", query, name, TEST_ONLY, capture=True).strip()


def build_and_install(python: Path, build_env: Path, source: Path, build_dir: Path, prefix: Path) -> None:
    """Configure, build and install the package of ``source`` into ``prefix`` with CMake."""
    env = dict(os.environ, PATH=f"{build_env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               AMENT_PREFIX_PATH=str(build_env), CMAKE_PREFIX_PATH=str(build_env),
               LD_LIBRARY_PATH=f"{build_env / 'lib'}{os.pathsep}{os.environ.get('LD_LIBRARY_PATH', '')}")
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)  # let the build env's bootstrapper set its own library path
    run("cmake", "-S", source, "-B", build_dir, f"-DCMAKE_INSTALL_PREFIX={prefix}",
        f"-DPython3_EXECUTABLE={python}", "-DBUILD_TESTING=OFF", "-DCMAKE_BUILD_TYPE=Release",
        "--log-level=WARNING", env=env)
    run("cmake", "--build", build_dir, "--parallel", str(os.cpu_count() or 1), env=env)
    run("cmake", "--install", build_dir, env=env, capture=True)


def main() -> None:
    """Build the interfaces into ``--venv``; print how long each part took."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv", help="target venv (with the ROS 2 wheels)")
    parser.add_argument("--build-env", type=Path, default=ROOT / ".venv-build", help="build environment")
    parser.add_argument("--package", type=Path, default=ROOT / PACKAGE, help="the package's source folder")
    parser.add_argument("--build-dir", type=Path, help="CMake build folder (default build/<package name>)")
    parser.add_argument("--unless-installed", action="store_true",
                        help="skip if the venv imports a package of that name other than a test-only build of it")
    args = parser.parse_args()
    prefix, build_env, source = args.venv.resolve(), args.build_env.resolve(), args.package.resolve()
    name = re.search(r"<name>\s*([^<\s]+)\s*</name>", (source / "package.xml").read_text()).group(1)
    build_dir = (args.build_dir or ROOT / "build" / name).resolve()
    target_python = prefix / "bin" / "python"
    if not target_python.exists():
        sys.exit(f"build_interfaces: no venv at {prefix} (run make setup)")
    if args.unless_installed:
        where = installed_elsewhere(target_python, name)
        if where:
            print(f"{name}: not built, {prefix} has one ({where}): that one is used")
            return
    start = time.monotonic()
    python = make_build_env(build_env, ros_pins(target_python))
    patch_python_includes(build_env, python)
    env_done = time.monotonic()
    build_and_install(python, build_env, source, build_dir, prefix)
    end = time.monotonic()
    print(f"{name}: installed into {prefix} in {end - start:.0f} s "
          f"(build environment {env_done - start:.0f} s, CMake {end - env_done:.0f} s)")


if __name__ == "__main__":
    main()
