"""Shared test helpers: a private, localhost-only ROS 2 domain per test module (one table for the
suite: :func:`ros_domain_id`; the ``ros_domain`` fixture), the ``arm`` fixture (the package's arm), and
the arm's limits kept by every test, the real youBot recordings (:func:`real_data_folder`) and
:func:`has_failed` (for a shared fixture that must not outlive a failed test).
The nodes under test and the tester node run in :class:`ros_harness.RosHarness`.

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

from youbot_dynamics.arm.description import ArmDescription, default_arm
from youbot_dynamics.sim.limits import LIMIT_LOG_VARIABLE

_ROS_VARIABLES = ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")
_TEST_DIR = Path(__file__).resolve().parent
REAL_DATA_VARIABLE = "YOUBOT_REAL_DATA"
_REPORTS = pytest.StashKey[dict]()
#: the test modules that use ROS, in a fixed order: module i owns domains FIRST + i x PER .. + PER - 1
_ROS_MODULES = sorted(p.stem for p in _TEST_DIR.glob("test_*.py")
                      if any(word in p.read_text(encoding="utf-8") for word in ("rclpy", "ros_domain")))
_FIRST_DOMAIN, _DOMAINS_PER_MODULE = 1, 5


def ros_domain_id(module: str, k: int = 0) -> str:
    """DDS domain ``k`` (0 to 4) of the test module ``module`` (its ``__file__`` or name): no two
    modules share a domain, so nodes a module left behind (or runs in a subprocess) never meet
    another module's; a module uses its ``k`` for nodes of the same name that must not meet."""
    if not 0 <= k < _DOMAINS_PER_MODULE:
        raise ValueError(f"a test module has {_DOMAINS_PER_MODULE} domains, asked for number {k}")
    return str(_FIRST_DOMAIN + _DOMAINS_PER_MODULE * _ROS_MODULES.index(Path(module).stem) + k)


def real_data_folder() -> Path:
    """The folder of the real youBot recordings (``real_*.csv``): ``YOUBOT_REAL_DATA`` if set, else
    ``shared/data/youbot_real`` beside the repository (``../shared`` of the clone); the tests that
    need it skip, naming the folder, where it holds no recordings."""
    folder = os.environ.get(REAL_DATA_VARIABLE)
    return Path(folder) if folder else _TEST_DIR.parent.parent / "shared" / "data" / "youbot_real"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
    """Keep each phase's report on the test item (:func:`has_failed`)."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def has_failed(item: pytest.Item) -> bool:
    """Whether the set-up or the call of ``item`` (``request.node``) failed: asked by a fixture's
    teardown, which runs after both reports are made."""
    return any(report.failed for report in item.stash.get(_REPORTS, {}).values())


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


@pytest.fixture(scope="module")
def ros_domain(request: pytest.FixtureRequest) -> Iterator[str]:
    """The module's first domain (:func:`ros_domain_id`), localhost only, for the whole module."""
    domain = ros_domain_id(request.module.__file__)
    with local_ros_domain(domain):
        yield domain


@pytest.fixture(scope="module")
def arm() -> ArmDescription:
    """The youBot arm of the package (config/youbot_arm.yaml), once per module."""
    return default_arm()


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
