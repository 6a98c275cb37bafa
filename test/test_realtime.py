"""Real-time scheduling of the loop nodes (``nodes/common.py``): ``realtime_priority`` puts every
thread of the process under SCHED_FIFO, or warns and carries on when the system refuses, the loop
thread one priority above; ``cpu_affinity`` puts the Python threads on one CPU, ``cpu_dma_latency``
holds the CPUs' wake-up latency while the node runs; the executor the loop nodes spin (the events
executor, or the single-threaded one by choice); the controller executable's watchdog with either.

Each case runs in a subprocess (a SCHED_FIFO pytest would outrank everything else on the machine),
on the module's DDS domain (conftest), localhost only. Where the system refuses SCHED_FIFO (no root, no CAP_SYS_NICE),
the refusal path is what gets checked.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import yaml
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402

from youbot_dynamics.arm.description import load_arm  # noqa: E402
from youbot_dynamics.nodes.common import EXECUTOR_VARIABLE, create_executor  # noqa: E402
from conftest import ros_domain_id  # noqa: E402
from ros_harness import run_until_sigint  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]

ENV = dict(os.environ, ROS_DOMAIN_ID=ros_domain_id(__file__), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
           PYTHONUNBUFFERED="1")
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
    from youbot_dynamics.nodes.common import background_worker, set_realtime_priority
    rclpy.init()  # the middleware's threads exist from here on
    before = policies()
    reason = set_realtime_priority(17)
    after = policies()
    late = []
    t = threading.Thread(target=lambda: late.append(policies())); t.start(); t.join()
    # a helper thread (planning, reports) drops to the lowest real-time priority
    helper = background_worker("helper").submit(
        lambda: [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority]).result()
    print(json.dumps({"before": before, "after": after, "reason": reason, "late": late[0],
                      "helper": helper}))
    rclpy.shutdown()
    """)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert [os.SCHED_OTHER, 0] in result["before"]
    if result["reason"] is None:
        assert result["after"] == [[os.SCHED_FIFO, 17]]  # every thread, the middleware's too
        assert result["late"] == [[os.SCHED_FIFO, 17]]  # and threads started afterwards
        assert result["helper"] == [os.SCHED_FIFO, 1]  # BACKGROUND_PRIORITY
    else:
        assert not FIFO_ALLOWED, result["reason"]
        assert "permission" in result["reason"] and result["after"] == result["before"]
        assert result["helper"] == [os.SCHED_OTHER, 0]  # unchanged


AFFINITY = """
    import os, threading
    def affinities():
        # Python's threads by name, the others (the middleware's) by thread id
        python = {t.native_id: t.name for t in threading.enumerate()}
        found = {}
        for t in os.listdir("/proc/self/task"):
            try:
                found[python.get(int(t), t)] = sorted(os.sched_getaffinity(int(t)))
            except ProcessLookupError:  # the thread ended meanwhile
                pass
        return found
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity on this system")
def test_pin_interpreter_puts_the_python_threads_on_one_cpu_and_leaves_the_middleware_alone():
    out = _run(AFFINITY + """
    import json, rclpy
    from youbot_dynamics.nodes.common import pin_interpreter
    rclpy.init()
    node = rclpy.create_node("pin_probe")  # the middleware's threads exist from here on
    allowed = sorted(os.sched_getaffinity(0))
    stop = threading.Event()
    early = threading.Thread(target=stop.wait, name="early"); early.start()
    refused = pin_interpreter(max(allowed) + 1)
    unchanged = affinities()
    cpu, reason = pin_interpreter(-1)
    after = affinities()
    late = []
    t = threading.Thread(target=lambda: late.append(sorted(os.sched_getaffinity(0))), name="late")
    t.start(); t.join()
    stop.set(); early.join()
    print(json.dumps({"allowed": allowed, "refused": refused, "unchanged": unchanged, "cpu": cpu,
                      "reason": reason, "after": after, "late": late[0]}))
    node.destroy_node()
    rclpy.shutdown()
    """)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    allowed = r["allowed"]
    assert r["refused"][0] is None and f"CPU {max(allowed) + 1} is not one this process may use" in r["refused"][1]
    assert all(cpus == allowed for cpus in r["unchanged"].values())  # a refusal changes nothing
    assert r["reason"] is None and r["cpu"] == max(allowed)
    python = {"MainThread", "early"}
    assert python <= set(r["after"])
    assert all(r["after"][name] == [max(allowed)] for name in python)
    assert r["late"] == [max(allowed)]  # threads started afterwards inherit it
    middleware = [cpus for name, cpus in r["after"].items() if name not in python]
    assert middleware and all(cpus == allowed for cpus in middleware)  # not pinned


def test_a_loop_thread_runs_one_priority_above_the_process():
    out = _run(POLICIES + """
    import json, threading
    from youbot_dynamics.nodes.common import set_realtime_priority
    from youbot_dynamics.timing import LoopThread, raise_above_process

    def policy_of(above):
        seen = []
        def target():
            seen.append([os.sched_getscheduler(0), os.sched_getparam(0).sched_priority])
            loop.running = False
        loop = LoopThread(target, "probe", above=above)
        loop.start(); loop.stop()
        return seen[0]

    normal = [policy_of(True), raise_above_process()]  # nothing to raise without SCHED_FIFO
    reason = set_realtime_priority(97)
    print(json.dumps({"normal": normal, "reason": reason, "above": policy_of(True), "plain": policy_of(False),
                      "main": policies()}))
    """)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["normal"] == [[os.SCHED_OTHER, 0], None]
    if r["reason"] is None:
        assert r["above"] == [os.SCHED_FIFO, 98] and r["plain"] == [os.SCHED_FIFO, 97]
        assert r["main"] == [[os.SCHED_FIFO, 97]]  # the process itself is not raised
    else:
        assert not FIFO_ALLOWED, r["reason"]
        assert r["above"] == r["plain"] == [os.SCHED_OTHER, 0]


def test_the_bus_thread_runs_above_the_driver_process():
    out = _run("""
    import json, os, threading
    from youbot_dynamics.driver import ArmDriver, CyclicLoop, VirtualBus
    from youbot_dynamics.nodes.common import set_realtime_priority
    reason = set_realtime_priority(20)
    driver = ArmDriver(VirtualBus(realism=False))
    driver.connect()
    loop = CyclicLoop(driver)
    loop.start()
    try:
        assert driver.wait_state(0, timeout=5.0) is not None
        tid = next(t.native_id for t in threading.enumerate() if t.name == "youbot_ethercat")  # CyclicLoop's
        print(json.dumps({"reason": reason, "bus": os.sched_getparam(tid).sched_priority,
                          "main": os.sched_getparam(0).sched_priority}))
    finally:
        loop.stop()
    """)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if r["reason"] is None:
        assert (r["bus"], r["main"]) == (21, 20)
    else:
        assert not FIFO_ALLOWED and (r["bus"], r["main"]) == (0, 0)


def _latency_limit() -> int | None:
    """The CPUs' wake-up latency limit [us] Linux applies now (None: the device is not readable)."""
    try:
        with open("/dev/cpu_dma_latency", "rb") as f:
            return int.from_bytes(f.read(4), sys.byteorder, signed=True)
    except OSError:
        return None


@pytest.mark.parametrize("settings", [(0, -1, 0), (23, -1, 0), (23, "first", 7), (23, 1023, -1)],
                         ids=["off", "defaults", "first_cpu_7us", "bad_cpu_no_latency"])
def test_run_node_applies_the_real_time_parameters_before_spinning(settings):
    priority, cpu, latency = settings
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[0] if cpu == "first" else cpu
    before = _latency_limit()  # None: no /dev/cpu_dma_latency to read (then none to write either)
    out = _run(POLICIES + AFFINITY + """
    import sys
    from rclpy.node import Node
    from youbot_dynamics.nodes.common import declare_parameter, run_node
    from youbot_dynamics.contract.parameter_schema import load_schema

    class Loop(Node):
        def __init__(self):
            super().__init__("rt_probe")
            for name in ("realtime_priority", "cpu_affinity", "cpu_dma_latency"):
                declare_parameter(self, load_schema("common")[name])

    def before_spin(node):
        print("policies", policies(), flush=True)
        print("main", sorted(os.sched_getaffinity(0)), flush=True)
        try:
            with open("/dev/cpu_dma_latency", "rb") as f:
                print("latency", int.from_bytes(f.read(4), sys.byteorder, signed=True), flush=True)
        except OSError:
            pass
        raise KeyboardInterrupt  # stop instead of spinning

    names = ("realtime_priority", "cpu_affinity", "cpu_dma_latency")
    overrides = [x for name, value in zip(names, sys.argv[1:]) for x in ("-p", f"{name}:={value}")]
    sys.exit(run_node("rt_probe", Loop, (), ["--ros-args", *overrides], realtime=True, before_spin=before_spin))
    """, str(priority), str(cpu), str(latency))
    assert out.returncode == 0, out.stderr
    lines = dict(x.split(" ", 1) for x in out.stdout.splitlines()
                 if x.split(" ", 1)[0] in ("policies", "main", "latency"))
    policies = json.loads(lines["policies"].replace("(", "[").replace(")", "]"))
    main_cpus = json.loads(lines["main"])
    log = out.stdout + out.stderr
    if priority == 0:  # nothing real-time: not pinned, no latency request
        assert policies == [[os.SCHED_OTHER, 0]] and "real-time scheduling" not in log
        assert main_cpus == allowed
        assert "latency" not in lines or int(lines["latency"]) == before
    elif FIFO_ALLOWED:
        assert policies == [[os.SCHED_FIFO, priority]]
        assert f"SCHED_FIFO priority {priority}" in log
        if cpu == 1023:  # (a machine with fewer CPUs)
            assert main_cpus == allowed and "cpu_affinity: CPU 1023 is not one this process may use" in log
        else:
            expected = max(allowed) if cpu == -1 else cpu
            assert main_cpus == [expected] and f"Python threads on CPU {expected}" in log
        if latency >= 0 and before is not None:
            # the limit Linux applies is the lowest request held (another process may hold one)
            assert int(lines["latency"]) == min(latency, before) and f"CPU wake-up latency held at {latency} us" in log
        elif latency >= 0:
            assert "cpu_dma_latency: cannot open /dev/cpu_dma_latency" in log
        else:
            assert "latency held" not in log
    else:
        assert policies == [[os.SCHED_OTHER, 0]] and "real-time scheduling refused" in log
        assert main_cpus == allowed
    assert _latency_limit() == before  # the request ended with the node


def test_sim_node_refuses_realtime_priority_when_running_as_fast_as_possible():
    out = subprocess.run([sys.executable, "-m", "youbot_dynamics.nodes.sim_node", "--ros-args", "-p",
                          "real_time_factor:=0.0", "-p", "realtime_priority:=10"],
                         env=ENV, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "realtime_priority needs real_time_factor > 0" in out.stdout + out.stderr


@pytest.mark.skipif(not FIFO_ALLOWED, reason="needs root to drop to an unprivileged user")
def test_set_realtime_priority_and_the_latency_request_say_why_when_refused():
    out = _run(POLICIES + """
    import contextlib, json, resource
    from youbot_dynamics.nodes.common import hold_cpu_latency, set_realtime_priority
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    os.setuid(65534)  # nobody: no CAP_SYS_NICE, no rtprio limit
    with contextlib.ExitStack() as stack:
        latency = hold_cpu_latency(0, stack)
    print(json.dumps({"reason": set_realtime_priority(17), "after": policies(), "latency": latency}))
    """)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "no permission" in result["reason"] and result["after"] == [[os.SCHED_OTHER, 0]]
    assert result["latency"] == "cannot open /dev/cpu_dma_latency: Permission denied"


@pytest.fixture
def context(monkeypatch):
    for key in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE"):
        monkeypatch.setenv(key, ENV[key])
    ctx = Context()
    rclpy.init(context=ctx, signal_handler_options=SignalHandlerOptions.NO)
    yield ctx
    rclpy.shutdown(context=ctx)


def test_create_executor_events_when_asked_unless_told_otherwise(context, monkeypatch):
    monkeypatch.delenv(EXECUTOR_VARIABLE, raising=False)
    events = "EventsExecutor" if importlib.util.find_spec("rclpy.experimental") else "SingleThreadedExecutor"
    assert type(create_executor(True, context)).__name__ == events  # Jazzy's and Kilted's rclpy have it
    assert isinstance(create_executor(False, context), SingleThreadedExecutor)
    monkeypatch.setenv(EXECUTOR_VARIABLE, "single")
    assert isinstance(create_executor(True, context), SingleThreadedExecutor)
    monkeypatch.setenv(EXECUTOR_VARIABLE, "events")
    assert type(create_executor(False, context)).__name__ == events
    monkeypatch.setenv(EXECUTOR_VARIABLE, "multi")
    with pytest.raises(ValueError, match=f"{EXECUTOR_VARIABLE} must be one of"):
        create_executor(True, context)


def test_realtime_interpreter_collects_cycles_only_in_its_own_thread_and_restores_the_interpreter():
    """The automatic collector is off inside (it would pause whichever thread allocates), the start-up
    heap frozen, the switch interval short; reference cycles are still freed, by the collector
    thread, within a period; on exit everything is as before. Judged by the thread that freed the
    cycle (its finalizer runs in the collecting thread), not by when: on a busy machine the
    allocation below outlasted the collector's 50 ms period and the cycle was already freed, by the
    collector thread, which the test took for the automatic collector (a two-hog CI run)."""
    import gc
    import threading
    import weakref

    from youbot_dynamics.nodes.common import SWITCH_INTERVAL, realtime_interpreter

    class Node:
        pass

    before = (gc.isenabled(), sys.getswitchinterval(), gc.get_freeze_count())
    freed = threading.Event()
    freed_by: list[str] = []

    def finalized() -> None:
        freed_by.append(threading.current_thread().name)
        freed.set()

    with realtime_interpreter(gc_period=0.05):
        assert (not gc.isenabled() and sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
                and gc.get_freeze_count() > 0)
        cycle = Node()
        cycle.self = cycle  # garbage only a collection frees
        weakref.finalize(cycle, finalized)
        del cycle
        garbage = [[] for _ in range(5000)]  # far beyond the automatic threshold: nothing may run
        for a, b in zip(garbage, garbage[1:]):
            a.append(b)
            b.append(a)
        del garbage
        assert freed_by in ([], ["gc_collector"]), freed_by  # not by this thread, which allocated
        names = {t.name for t in threading.enumerate()}
        assert "gc_collector" in names
        assert freed.wait(5.0), "the collector thread did not free the cycle"
        assert freed_by == ["gc_collector"], freed_by
    assert (gc.isenabled(), sys.getswitchinterval(), gc.get_freeze_count()) == before
    assert "gc_collector" not in {t.name for t in threading.enumerate()}


def test_executable_refuses_an_unknown_executor():
    out = subprocess.run([sys.executable, "-m", "youbot_dynamics.nodes.pd_gravity_controller"],
                         env=dict(ENV, **{EXECUTOR_VARIABLE: "multi"}), capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert f"cannot start: {EXECUTOR_VARIABLE} must be one of" in out.stdout + out.stderr


@pytest.mark.parametrize("executor", ["events", "single"])
def test_controller_watchdog_faults_and_commands_zero_when_joint_states_stop(context, executor):
    """The executable fed by this test at 200 Hz: enabled at the first state, then the states stop:
    the watchdog timer (restarted by every state) detects it within the timeout and the node
    publishes zero effort every 1.5 periods; it never fires while states flow. (Without a
    release_topic: with one, the node lets go after 10 zero-effort commands, test_controller_safety.py.)"""
    arm = load_arm()
    rate, timeout = 200.0, 0.1
    args = ["-p", "joint_states_topic:=/wd/joint_states", "-p", "command_topic:=/wd/commands", "-p", f"rate:={rate}",
            "-p", f"state_timeout:={timeout}", "-p", f"state_loss_timeout:={timeout}",  # no coasting
            "-p", "enabled_on_start:=true", "-p", "ramp_time:=0.0",
            "-p", "realtime_priority:=0", "-p", "diagnostics_period:=0.0", "-p", "release_topic:=''"]
    node = rclpy.create_node("watchdog_tester", context=context)
    spinner = SingleThreadedExecutor(context=context)
    spinner.add_node(node)
    commands: list[tuple[float, list[float]]] = []
    status: list[str] = []
    node.create_subscription(Float64MultiArray, "/wd/commands", lambda m: commands.append((time.monotonic(), m.data)),
                             1000)
    node.create_subscription(String, "/pd_gravity_controller/status", lambda m: status.append(m.data), 100)
    states = node.create_publisher(JointState, "/wd/joint_states", 10)
    q = [2.95, 1.0, -2.0, 1.8, 2.9]
    msg = JointState(name=list(arm.joint_names), position=q, velocity=[0.0] * 5)

    sent = [0]

    def spin(seconds: float, feed: bool) -> None:
        """Spin; with ``feed`` publish a joint state every period."""
        now = time.monotonic()
        end, due = now + seconds, now
        while now < end:
            if feed and now >= due:
                states.publish(msg)
                sent[0] += 1
                due = max(due + 1.0 / rate, now)
            spinner.spin_once(timeout_sec=max(min(due, end) - now, 0.0))
            now = time.monotonic()

    proc = subprocess.Popen([sys.executable, "-m", "youbot_dynamics.nodes.pd_gravity_controller", "--ros-args", *args],
                            env=dict(ENV, **{EXECUTOR_VARIABLE: executor}), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        started = time.monotonic()
        while not (states.get_subscription_count() and node.count_publishers("/pd_gravity_controller/status")):
            assert proc.poll() is None and time.monotonic() - started < 60.0, "the controller did not come up"
            spin(0.05, feed=False)
        while not commands:  # enabled at the first joint state
            assert time.monotonic() - started < 60.0, "no torque commands"
            spin(0.05, feed=True)
        commands.clear()
        sent[0] = 0
        spin(1.0, feed=True)
        fed = [t for t, _ in commands]
        stopped = time.monotonic()
        spin(1.0, feed=False)
    finally:
        proc.send_signal(2)
        out = proc.communicate(timeout=20)[0]
    assert proc.returncode == 0, out
    assert not any("fault" in s for s in status if "stale" not in s), status
    # while fed, a torque per joint state and no more (the watchdog adds no cycles); fewer when the
    # machine is loaded: the subscription keeps the newest state only (172 of 200 with two CPU hogs)
    assert 0.5 * sent[0] <= len(fed) <= sent[0] + 2, (len(fed), sent[0])
    assert all(np.any(data) for t, data in commands if t < stopped)  # gravity torques
    fault = [s for s in status if s.startswith("fault")]
    assert fault and "stale" in fault[0], status
    after = [(t, data) for t, data in commands if t > stopped + timeout + 0.05]
    assert after and all(not np.any(data) for _, data in after)  # zero effort, every cycle
    rate_after = (len(after) - 1) / (after[-1][0] - after[0][0])
    print(f"\n{executor}: {len(fed)} commands for {sent[0]} joint states in 1 s; after the states stopped: {fault[0]}; "
          f"zero effort at {rate_after:.0f} Hz")
    assert 0.5 * rate / 1.5 < rate_after < 1.2 * rate / 1.5


@pytest.mark.skipif(not FIFO_ALLOWED, reason="SCHED_FIFO needs root here: under the normal scheduler a loop that "
                    "never sleeps does not starve its process")
def test_a_bus_cycle_longer_than_its_period_leaves_the_process_its_ctrl_c(tmp_path):
    """``youbot_driver`` real-time (its default) with a controller in a 0.2 ms bus cycle, longer than
    the cycle's work on this machine: the bus thread, one SCHED_FIFO priority above the executor on the
    same CPU, never had time to sleep, and the process took no Ctrl-C (the main thread, which handles
    signals, got no CPU) until it was killed; a CI run's driver never logged its start. With
    :func:`~youbot_dynamics.timing.pace` it sleeps a tenth of a period every cycle: the node starts,
    runs and exits 0 at SIGINT."""
    params = tmp_path / "pd.yaml"
    params.write_text(yaml.safe_dump({"pd_gravity_controller": {"ros__parameters": {"rate": 5000.0}}}))
    command = [sys.executable, "-m", "youbot_dynamics.nodes.youbot_driver", "--ros-args", "-p", "backend:=virtual",
               "-p", "cycle_period:=0.0002", "-p", "controller:=pd_gravity",
               "-p", f"controller_params_file:={params}"]
    out = run_until_sigint(command, cwd=tmp_path, env=ENV, ready="real-time scheduling: SCHED_FIFO", run_for=2.0)
    assert "cycle 0.2 ms" in out, out


def test_a_late_loop_still_sleeps_a_tenth_of_its_period(monkeypatch):
    """:func:`~youbot_dynamics.timing.pace` on time sleeps to the deadline; late (a cycle longer than
    its period) it sleeps :data:`~youbot_dynamics.timing.IDLE_FRACTION_MIN` of the period, and more
    than ten periods late it resynchronises (counted) and still sleeps."""
    from youbot_dynamics import timing

    slept: list[float] = []
    monkeypatch.setattr(timing.time, "sleep", slept.append)
    now = [100.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: now[0])
    statistics = timing.LoopStatistics(0.001)
    assert timing.pace(100.0, 0.001, statistics) == (pytest.approx(100.001), False)  # on time
    now[0] = 100.0025  # 1.5 periods late
    assert timing.pace(100.001, 0.001, statistics) == (pytest.approx(100.002), False)
    now[0] = 100.05  # 48 periods late
    assert timing.pace(100.002, 0.001, statistics) == (100.05, True)
    assert slept == pytest.approx([0.001, 0.1 * 0.001, 0.1 * 0.001])
    assert statistics.report()["resyncs"] == 1.0


def test_a_loop_that_cannot_keep_its_rate_sleeps_half_its_period(monkeypatch):
    """Late :data:`~youbot_dynamics.timing.LATE_STREAK` cycles in a row (each cycle's work 1.2 periods)
    under SCHED_FIFO, :func:`~youbot_dynamics.timing.pace` sleeps half a period per cycle, so that the
    rest of the process (its executor, Ctrl-C) runs; a single late cycle still sleeps a tenth, a cycle
    on time ends the streak, and under the normal scheduler a late loop keeps catching up."""
    from youbot_dynamics import timing

    slept: list[float] = []
    now = [0.0]
    monkeypatch.setattr(timing.time, "sleep", lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(timing, "_real_time", lambda: True)  # the loop runs under SCHED_FIFO
    statistics = timing.LoopStatistics(0.001)
    deadline = 0.0
    for _ in range(timing.LATE_STREAK + 2):
        now[0] += 0.0012  # the cycle's work
        deadline, _ = timing.pace(deadline, 0.001, statistics)
    fractions = [s / 0.001 for s in slept]
    assert fractions[:timing.LATE_STREAK - 1] == pytest.approx([0.1] * (timing.LATE_STREAK - 1))
    assert fractions[timing.LATE_STREAK - 1:] == pytest.approx([0.5] * 3)
    now[0] = deadline + 0.0002  # a short cycle: on time again
    deadline, _ = timing.pace(deadline, 0.001, statistics)
    now[0] = deadline + 0.0012  # late once more: a tenth
    deadline, _ = timing.pace(deadline, 0.001, statistics)
    assert slept[-1] == pytest.approx(0.1 * 0.001)
    monkeypatch.setattr(timing, "_real_time", lambda: False)
    for _ in range(timing.LATE_STREAK + 2):
        now[0] += 0.0012
        deadline, _ = timing.pace(deadline, 0.001, statistics)
    assert slept[-1] == pytest.approx(0.1 * 0.001)
