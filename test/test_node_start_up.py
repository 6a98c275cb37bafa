"""A node executable's start-up (issue 35, cases 10 and 15): SIGINT or SIGTERM while it imports numpy,
rclpy and numba, or builds the node, ends it cleanly (exit 0, no traceback), and a ``--params-file``
that cannot be used is one line naming it (exit 1), not rcl's traceback.

The signals are sent when the process has reached a phase, seen from outside (``/proc/<pid>/maps``:
which libraries it has loaded), so the tests do not depend on how fast a busy machine starts Python.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ros_domain_id

pytest.importorskip("rclpy")

from ros_harness import node_command  # noqa: E402

from youbot_dynamics.contract.controller_registry import CONTROLLERS  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(240),
              pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")]

NODE = "kinematics_node"
PHASE_TIMEOUT = 120.0  # [s] for a process to reach a phase of its start-up on a busy machine
NUMPY = "_multiarray_umath"  # numpy's core library: loaded while the node module's imports run
RCLPY = "_rclpy_pybind11"  # rclpy's: loaded later in the imports


def _executables() -> list[str]:
    """Every node executable setup.py installs: its console scripts of youbot_dynamics.nodes and the
    controller registry's (not a list of this test's own)."""
    text = (Path(__file__).resolve().parent.parent / "setup.py").read_text()
    listed = re.findall(r"'(\w+) = youbot_dynamics\.nodes\.", text)
    return listed + [entry.entry_point.split(" = ")[0] for entry in CONTROLLERS]


EXECUTABLES = _executables()


def _start(tmp_path: Path, *args: str, node: str = NODE) -> subprocess.Popen:
    env = dict(os.environ, ROS_DOMAIN_ID=ros_domain_id(__file__), PYTHONUNBUFFERED="1")
    return subprocess.Popen(node_command(node) + list(args), env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _loaded(proc: subprocess.Popen, library: str) -> bool:
    try:
        return library in Path(f"/proc/{proc.pid}/maps").read_text()
    except OSError:  # ended
        return False


def _when_loaded(proc: subprocess.Popen, library: str) -> None:
    """Wait until ``proc`` has loaded ``library`` (polled every 2 ms)."""
    deadline = time.monotonic() + PHASE_TIMEOUT
    while not _loaded(proc, library):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, f"{library} not loaded in {PHASE_TIMEOUT} s"
        time.sleep(0.002)


def _stopped(proc: subprocess.Popen, signum: int) -> str:
    """Send ``signum``; the output, once the process ended with exit status 0 and no traceback."""
    try:
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    return out


@pytest.mark.parametrize("library, signum", [(NUMPY, signal.SIGINT), (RCLPY, signal.SIGTERM)],
                         ids=["SIGINT-importing-numpy", "SIGTERM-importing-rclpy"])
def test_a_signal_during_the_imports_ends_the_node_cleanly(tmp_path, library, signum):
    """Before: a KeyboardInterrupt traceback out of the import line (SIGINT), death by the signal (-15)."""
    proc = _start(tmp_path)
    _when_loaded(proc, library)
    out = _stopped(proc, signum)
    assert "arm 'youbot_arm'" not in out  # stopped before the node was built


def test_every_executable_is_known_as_a_node(monkeypatch):
    """started_as_node() for each installed executable's program name (before: float_controller, which
    runs law_controller, was not: its signal handler was never installed)."""
    from youbot_dynamics.nodes.stop_signals import started_as_node

    assert len(EXECUTABLES) >= 8 and "float_controller" in EXECUTABLES, EXECUTABLES
    for name in EXECUTABLES:
        monkeypatch.setattr(sys, "argv", [f"/opt/bin/{name}"])
        assert started_as_node(), name
    monkeypatch.setattr(sys, "argv", ["/opt/bin/pytest"])
    assert not started_as_node()


@pytest.mark.parametrize("node", EXECUTABLES)
def test_sigint_while_importing_ends_every_executable_cleanly(tmp_path, node):
    """Before: float_controller printed a KeyboardInterrupt traceback (exit -2) on a SIGINT in its imports."""
    proc = _start(tmp_path, node=node)
    _when_loaded(proc, NUMPY)
    _stopped(proc, signal.SIGINT)


@pytest.mark.parametrize("delay", [0.2, 1.0])
def test_sigint_early_in_the_start_up_ends_the_node_cleanly(tmp_path, delay):
    """``delay`` after the process caught SIGTERM (the stop signals handled), wherever the start-up is."""
    proc = _start(tmp_path)
    deadline = time.monotonic() + PHASE_TIMEOUT
    while not _caught(proc.pid, signal.SIGTERM):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.002)
    time.sleep(delay)
    _stopped(proc, signal.SIGINT)


def _caught(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (``SigCgt`` of /proc/<pid>/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.parametrize("kind", ["missing", "folder", "not YAML"])
def test_an_unusable_params_file_is_one_line(tmp_path, kind):
    path = {"missing": tmp_path / "nowhere.yaml", "folder": tmp_path, "not YAML": tmp_path / "bad.yaml"}[kind]
    if kind == "not YAML":
        path.write_text("kinematics_node: {ros__parameters: [1,\n")
    proc = _start(tmp_path, "--ros-args", "--params-file", str(path))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and f"--params-file {path}" in lines[0] and "cannot start" in lines[0], out


def test_a_program_importing_the_nodes_keeps_python_s_signal_handling():
    """Only a node executable takes SIGINT and SIGTERM over (youbot_dynamics.nodes.stop_signals)."""
    script = ("import signal\n"
              "handlers = lambda: [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]\n"
              "before = handlers()\n"
              "import youbot_dynamics.nodes.common\n"
              "print(handlers() == before)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True"], out.stderr
