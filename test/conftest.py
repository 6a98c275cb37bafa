"""Shared test helpers: a private, localhost-only ROS 2 domain per test module, and the arm's
limits kept by every test.

Every simulator a test starts, in this process or in a subprocess (which inherits the
environment), appends each limit excursion of its arm (a joint faster than 1.1 x its velocity
limit, beyond a position limit, or commanded a torque above the drives' limit:
:mod:`youbot_dynamics.sim.limits`) to the file named by ``YOUBOT_DYNAMICS_LIMIT_LOG``. The autouse
fixture :func:`arm_limits_kept` fails the test during which a line appeared. A test that drives
the simulated arm beyond a limit on purpose (to test the simulator's own stops or saturation)
says so with ``@pytest.mark.limits_exempt(reason)``.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from youbot_dynamics.sim.limits import LIMIT_LOG_VARIABLE

_ROS_VARIABLES = ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")


@contextmanager
def local_ros_domain(domain_id: str) -> Iterator[None]:
    """Set ``ROS_DOMAIN_ID`` and localhost-only discovery for the block, then restore both."""
    old = {k: os.environ.get(k) for k in _ROS_VARIABLES}
    os.environ["ROS_DOMAIN_ID"] = domain_id
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session", autouse=True)
def limit_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The file every simulator of the session reports its limit excursions to."""
    path = tmp_path_factory.mktemp("limits") / "excursions.jsonl"
    path.touch()
    old = os.environ.get(LIMIT_LOG_VARIABLE)
    os.environ[LIMIT_LOG_VARIABLE] = str(path)
    yield path
    if old is None:
        os.environ.pop(LIMIT_LOG_VARIABLE, None)
    else:
        os.environ[LIMIT_LOG_VARIABLE] = old


def read_excursions(path: Path, start: int) -> list[dict]:
    """The excursions appended to ``path`` after byte ``start`` (complete lines only)."""
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read().decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


@pytest.fixture(autouse=True)
def arm_limits_kept(request: pytest.FixtureRequest, limit_log: Path) -> Iterator[None]:
    """Fail the test if a simulated arm left its limits while it ran (see the module docstring)."""
    start = limit_log.stat().st_size
    yield
    excursions = read_excursions(limit_log, start)
    exempt = request.node.get_closest_marker("limits_exempt")
    if excursions and exempt is None:
        lines = "\n".join(f"  pid {e['pid']}{' (this test process)' if e['pid'] == os.getpid() else ''}: "
                          f"{e['message']}\n    in: {e.get('program', '?')}" for e in excursions[:10])
        pytest.fail(f"the simulated arm left its limits during this test ({len(excursions)} excursions):\n{lines}",
                    pytrace=False)
