"""Real-time scheduling of the loop nodes (``nodes/common.py``): ``realtime_priority`` puts every
thread of the process under SCHED_FIFO, or warns and carries on when the system refuses.

Each case runs in a subprocess (a SCHED_FIFO pytest would outrank everything else on the machine),
on DDS domain 64, localhost only. Where the system refuses SCHED_FIFO (no root, no CAP_SYS_NICE),
the refusal path is what gets checked.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("rclpy")
pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]

ENV = dict(os.environ, ROS_DOMAIN_ID="64", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
FIFO_ALLOWED = hasattr(os, "sched_setscheduler") and os.geteuid() == 0


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=ENV, capture_output=True,
                          text=True, timeout=90)


POLICIES = """
    import os
    def policies():
        found = set()
        for t in os.listdir("/proc/self/task"):
            try:
                found.add((os.sched_getscheduler(int(t)), os.sched_getparam(int(t)).sched_priority))
            except ProcessLookupError:  # the thread ended meanwhile
                pass
        return sorted(found)
"""


@pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="no sched_setscheduler on this system")
def test_set_realtime_priority_covers_every_thread_or_says_why_not():
    out = _run(POLICIES + """
    import json, threading, rclpy
    from youbot_dynamics.nodes.common import normal_priority, set_realtime_priority
    rclpy.init()  # the middleware's threads exist from here on
    before = policies()
    reason = set_realtime_priority(17)
    late = []
    t = threading.Thread(target=lambda: late.append(policies())); t.start(); t.join()
    helper = []  # a planning thread puts itself back on the normal scheduler
    t = threading.Thread(target=lambda: (normal_priority(), helper.append(os.sched_getscheduler(0))))
    t.start(); t.join()
    print(json.dumps({"before": before, "after": policies(), "reason": reason, "late": late[0],
                      "helper": helper[0]}))
    rclpy.shutdown()
    """)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert [os.SCHED_OTHER, 0] in result["before"]
    if result["reason"] is None:
        assert result["after"] == [[os.SCHED_FIFO, 17]]  # every thread, the middleware's too
        assert result["late"] == [[os.SCHED_FIFO, 17]]  # and threads started afterwards
        assert result["helper"] == os.SCHED_OTHER
    else:
        assert not FIFO_ALLOWED, result["reason"]
        assert "permission" in result["reason"] and result["after"] == result["before"]


@pytest.mark.parametrize("priority", [0, 23])
def test_run_node_applies_the_parameter_before_spinning(priority):
    out = _run(POLICIES + """
    import sys
    from rclpy.node import Node
    from youbot_dynamics.nodes.common import realtime_priority_parameter, run_node

    class Loop(Node):
        def __init__(self):
            super().__init__("rt_probe")
            self.declare_parameter("realtime_priority", *realtime_priority_parameter(0))

    def before_spin(node):
        print("policies", policies(), flush=True)
        raise KeyboardInterrupt  # stop instead of spinning

    sys.exit(run_node("rt_probe", Loop, (), ["--ros-args", "-p", f"realtime_priority:={sys.argv[1]}"],
                      realtime=True, before_spin=before_spin))
    """, str(priority))
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("policies"))
    policies = json.loads(line.split(" ", 1)[1].replace("(", "[").replace(")", "]"))
    log = out.stdout + out.stderr
    if priority == 0:
        assert policies == [[os.SCHED_OTHER, 0]] and "real-time scheduling" not in log
    elif FIFO_ALLOWED:
        assert policies == [[os.SCHED_FIFO, priority]]
        assert f"SCHED_FIFO priority {priority}" in log
    else:
        assert policies == [[os.SCHED_OTHER, 0]] and "real-time scheduling refused" in log


def test_sim_node_refuses_realtime_priority_when_running_as_fast_as_possible():
    out = subprocess.run([sys.executable, "-m", "youbot_dynamics.nodes.sim_node", "--ros-args", "-p",
                          "real_time_factor:=0.0", "-p", "realtime_priority:=10"],
                         env=ENV, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "realtime_priority needs real_time_factor > 0" in out.stdout + out.stderr


@pytest.mark.skipif(not FIFO_ALLOWED, reason="needs root to drop to an unprivileged user")
def test_set_realtime_priority_says_why_when_refused():
    out = _run(POLICIES + """
    import json, resource
    from youbot_dynamics.nodes.common import set_realtime_priority
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    os.setuid(65534)  # nobody: no CAP_SYS_NICE, no rtprio limit
    print(json.dumps({"reason": set_realtime_priority(17), "after": policies()}))
    """)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "no permission" in result["reason"] and result["after"] == [[os.SCHED_OTHER, 0]]
