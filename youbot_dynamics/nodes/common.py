"""What every youbot_dynamics node needs around rclpy: its parameters declared from its schema and the
entry point."""
from __future__ import annotations

import difflib
import gc
import os
import struct
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from typing import Any, Callable, Iterator, Sequence

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy._rclpy_pybind11 import RCLError
from rclpy.context import Context
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from ..contract.parameter_schema import ParameterSpec, load_schema
from ..timing import change_fifo_priority
from .stop_signals import STOP_SIGNALS, catch_stop_signals, ignore_stop_signals

__all__ = ["BACKGROUND_PRIORITY", "CPU_LATENCY_DEVICE", "EXECUTOR_VARIABLE", "GC_PERIOD", "REALTIME_PRIORITY",
           "STOP_SIGNALS", "SWITCH_INTERVAL", "background_priority", "background_worker", "create_executor",
           "declare_parameter", "declare_parameters", "freeze_heap", "hold_cpu_latency", "log_outcome",
           "parameter_descriptor", "params_file_problem", "pin_interpreter", "realtime_interpreter", "run_node",
           "set_realtime_priority", "unknown_parameters"]

SWITCH_INTERVAL = 2e-5  # [s] Python thread switch interval of real-time nodes (default 5 ms)
GC_PERIOD = 60.0  # [s] real-time nodes: one collection of the cyclic garbage per period (realtime_interpreter)
CPU_LATENCY_DEVICE = "/dev/cpu_dma_latency"  # Linux PM QoS: the CPUs' wake-up latency limit [us] (hold_cpu_latency)
SIGNAL_WAKEUP = 0.1  # [s] longest wait of the executor before a pending SIGINT/SIGTERM is handled
#: SCHED_FIFO priority of the control loops (ros2_control's controller manager: 50), the default of
#: ``realtime_priority`` in the controllers and the driver (parameters/common.yaml)
REALTIME_PRIORITY: int = load_schema("common")["realtime_priority"].default
BACKGROUND_PRIORITY = 1  # SCHED_FIFO priority of a real-time node's helper threads (background_priority)
EXECUTOR_VARIABLE = "YOUBOT_DYNAMICS_EXECUTOR"  # 'events' or 'single': overrides every node's executor
EXECUTORS = ("events", "single")
#: schema type -> rclpy's parameter type (of a parameter declared unset) and the descriptor's type
_PARAMETER_TYPES = {"bool": Parameter.Type.BOOL, "int": Parameter.Type.INTEGER, "double": Parameter.Type.DOUBLE,
                    "string": Parameter.Type.STRING, "bool_array": Parameter.Type.BOOL_ARRAY,
                    "int_array": Parameter.Type.INTEGER_ARRAY, "double_array": Parameter.Type.DOUBLE_ARRAY,
                    "string_array": Parameter.Type.STRING_ARRAY}


def parameter_descriptor(spec: ParameterSpec) -> ParameterDescriptor:
    """The typed ``ParameterDescriptor`` of a schema entry, with its bounds as the rclpy range."""
    d = ParameterDescriptor(description=spec.description, type=_PARAMETER_TYPES[spec.type].value,
                            read_only=spec.read_only)
    if spec.bounds is not None and spec.type == "double":
        d.floating_point_range = [FloatingPointRange(from_value=spec.bounds[0], to_value=spec.bounds[1], step=0.0)]
    elif spec.bounds is not None:
        d.integer_range = [IntegerRange(from_value=spec.bounds[0], to_value=spec.bounds[1], step=1)]
    return d


def declare_parameter(node: Node, spec: ParameterSpec) -> Any:
    """Declare one schema entry on ``node`` (unset if it has no default) and return its value, overrides
    included: ValueError if that is outside its choices (rclpy itself refuses one outside its bounds)."""
    value = spec.default if spec.default is not None else _PARAMETER_TYPES[spec.type]
    value = node.declare_parameter(spec.name, value, parameter_descriptor(spec)).value
    if value is not None:
        spec.check(value)
    return value


def declare_parameters(node: Node, schema: str) -> dict[str, Any]:
    """Declare every parameter of the node's schema (``youbot_dynamics/nodes/parameters/<schema>.yaml``,
    :mod:`youbot_dynamics.contract.parameter_schema`) in its order; their values by name (None: unset). Values
    given for names the node does not have (:func:`unknown_parameters`, a typo in a parameter file)
    are warned about once, naming them: they are ignored, the schema's default holds (doc/safety.md)."""
    values = {name: declare_parameter(node, spec) for name, spec in load_schema(schema).items()}
    unknown = unknown_parameters(node)
    if unknown:
        hints = [f"{name} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(name, values, 1))
                 else name for name in unknown]
        node.get_logger().warning(f"unknown parameters ignored (not in doc/parameters.md, {schema}): "
                                  f"{', '.join(hints)}")
    return values


def unknown_parameters(node: Node) -> list[str]:
    """The names given to ``node`` (parameter files, ``-p``, ``parameter_overrides``) that it has not
    declared, sorted; rclpy's own ``qos_overrides.*`` (declared when a publisher is created) excepted."""
    overrides = getattr(node, "_parameter_overrides", {})  # rclpy keeps them there; no public accessor
    return sorted(name for name in overrides if not node.has_parameter(name) and not name.startswith("qos_overrides."))


def set_realtime_priority(priority: int) -> str | None:
    """Put every thread of this process (the executor, the middleware's threads and, inherited,
    threads started later) under ``SCHED_FIFO`` at ``priority``: a real-time thread runs as soon as
    it is ready instead of waiting for its time slice behind ordinary processes. None on success,
    else why not (no permission, not Linux)."""
    if not hasattr(os, "sched_setscheduler"):
        return "SCHED_FIFO is not available on this system"
    param = os.sched_param(priority)
    try:
        for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
            try:
                os.sched_setscheduler(tid, os.SCHED_FIFO, param)
            except ProcessLookupError:  # the thread has ended meanwhile
                continue
    except PermissionError:
        return ("no permission (run as root, give the interpreter CAP_SYS_NICE or set an rtprio limit in "
                "/etc/security/limits.conf)")
    except OSError as exc:
        return str(exc)
    return None


def pin_interpreter(cpu: int = -1) -> tuple[int | None, str | None]:
    """Run every Python thread of this process (and, inherited, the threads they start later) on one
    CPU: ``cpu``, or with -1 the last one the process may use (``taskset``, cgroups). ``(cpu, None)``
    on success, else ``(None, why not)`` and nothing changed.

    Why (with :func:`set_realtime_priority` and a loop thread raised by
    :func:`~youbot_dynamics.timing.raise_above_process`): Python threads share one interpreter lock. A
    thread on another CPU that wants it (the executor in a callback, a planner) takes it from the
    loop every switch interval, so a busy helper halves the loop's speed and the lock's hand-overs
    between the two CPUs' caches cost the rest (measured in ``youbot_driver``'s bus cycle: the late
    cycles blocked 13-146 times on the lock). On one CPU under the loop's higher priority no other
    Python thread runs while the loop does: it meets the lock only when it wakes up while another
    thread holds it (for at most one switch interval). The middleware's threads, which run without
    the lock, are not pinned."""
    if not hasattr(os, "sched_setaffinity"):
        return None, "CPU affinity is not available on this system"
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu == -1 else cpu
    if chosen not in allowed:
        return None, f"CPU {cpu} is not one this process may use ({', '.join(map(str, allowed))})"
    for thread in threading.enumerate():
        if thread.native_id is not None:
            try:
                os.sched_setaffinity(thread.native_id, {chosen})
            except ProcessLookupError:  # the thread has ended meanwhile
                continue
    return chosen, None


def hold_cpu_latency(microseconds: int, stack: ExitStack) -> str | None:
    """Ask Linux to keep every CPU's wake-up latency within ``microseconds`` until ``stack`` closes (a
    PM QoS request on :data:`CPU_LATENCY_DEVICE`, held while the file is open, as cyclictest does):
    the idle governor then skips the sleep states that take longer to leave; with 0 an idle CPU
    polls instead of halting (in a virtual machine a halted CPU is handed back to the host, and the
    loop wakes up on a cold one; figures in doc/driver.md, "Real-time set-up"). The price is power: an
    idle CPU keeps spinning while the node runs. The request ends with the process, however it ends.
    None on success, else why not (the device is root's)."""
    try:
        fd = os.open(CPU_LATENCY_DEVICE, os.O_WRONLY)
    except OSError as exc:
        return f"cannot open {CPU_LATENCY_DEVICE}: {exc.strerror}"
    stack.callback(os.close, fd)
    try:
        os.write(fd, struct.pack("i", microseconds))
    except OSError as exc:
        return f"{CPU_LATENCY_DEVICE} refused {microseconds}: {exc.strerror}"
    return None


def background_priority() -> None:
    """For the helper threads of a real-time node (planning, status reports): a thread that runs
    under SCHED_FIFO (inherited from the loop) drops to :data:`BACKGROUND_PRIORITY`, the lowest
    real-time priority (always allowed). The loops of every process preempt it, so its 1-40 ms of
    planning cannot hold a core against them; ordinary processes cannot preempt it, so it is never
    descheduled for a time slice while it holds the interpreter lock the loop is waiting for (the
    priority inversion a helper on the normal scheduler suffers on a busy machine). Without
    real-time scheduling nothing changes."""
    change_fifo_priority(lambda _: BACKGROUND_PRIORITY)


def background_worker(name: str) -> ThreadPoolExecutor:
    """A single helper thread (started at the first job, after the node went real-time) running
    jobs in order at :func:`background_priority`."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name, initializer=background_priority)


_REALTIME_INTERPRETER = threading.Event()  # set inside realtime_interpreter


def freeze_heap() -> bool:
    """Inside :func:`realtime_interpreter`: collect now and move what survives out of the collector's
    way (``gc.freeze()``), as its start does with the start-up heap; for a node's quiet moment before
    a phase with deadlines, after it built a large heap (the identification node after an
    identification: the periodic collection of that heap paused it 0.35-0.5 s mid-recalibration).
    What is frozen is not scanned again (a reference cycle of it dropped later is not freed) until
    the interpreter is restored. Outside it (the automatic collector runs) nothing; whether it froze."""
    if not _REALTIME_INTERPRETER.is_set():
        return False
    gc.collect()
    gc.freeze()
    return True


@contextmanager
def realtime_interpreter(gc_period: float = GC_PERIOD) -> Iterator[None]:
    """The interpreter set up for a loop that must not stall (the executables' ``realtime``; restored
    on exit): the start-up heap (numpy, MuJoCo, the model) moved out of the garbage collector with
    ``gc.freeze()`` (a full collection of it stalls the process for 30-100 ms); the thread switch
    interval shortened to :data:`SWITCH_INTERVAL`, so that a helper thread cannot hold the
    interpreter for the default 5 ms against the loop; and the automatic collector off: it ran a
    young collection (50-500 us) about 18 times a second and a middle one (0.3-2 ms, whoever holds
    the interpreter waits) once a second, on whichever thread allocated, the bus cycle included,
    and found no garbage (the nodes' steady state makes almost no reference cycles: 7 objects in
    10 s of computed torque in the bus cycle). Instead a helper thread collects every ``gc_period``
    seconds (one pause of about 1 ms), so cycles made by a long run are still freed."""
    switch_interval = sys.getswitchinterval()
    done = threading.Event()

    def collect() -> None:
        while not done.wait(gc_period):
            background_priority()  # the process may have gone real-time after this thread started
            gc.collect()

    gc.collect()
    gc.freeze()
    gc.disable()
    sys.setswitchinterval(SWITCH_INTERVAL)
    collector = threading.Thread(target=collect, name="gc_collector", daemon=True)
    collector.start()
    _REALTIME_INTERPRETER.set()
    try:
        yield
    finally:
        _REALTIME_INTERPRETER.clear()
        done.set()
        collector.join()
        sys.setswitchinterval(switch_interval)
        gc.enable()
        gc.unfreeze()


def log_outcome(logger: Any, ok: bool, message: str) -> None:
    """``message`` at INFO if ``ok``, else at WARN. rclpy binds a call site to the severity of its
    first call and raises ``ValueError`` at a later call with another ("Logger severity cannot be
    changed between calls"): ``(log.info if ok else log.warning)(...)`` failed the second time its
    outcome changed (the identify action's result, the driver's services), so each severity has
    its own call site here."""
    if ok:
        logger.info(message)
    else:
        logger.warning(message)


def goal_label(goal_handle: Any) -> str:
    """The first 8 hex digits of an action goal's id, for the log (``ros2 action send_goal`` prints the id)."""
    return bytes(goal_handle.goal_id.uuid).hex()[:8]


def create_executor(events: bool, context: Context | None = None) -> Executor:
    """The executor of a node: with ``events`` rclpy's ``EventsExecutor`` (``rclpy.experimental``,
    ROS 2 Jazzy and Kilted have it), else - and where it is missing - the ``SingleThreadedExecutor``. The
    events executor dispatches from C++ (waiting, timers, taking messages): a 1 kHz controller
    spends about 0.3 ms of CPU per cycle in the Python executor and 0.1 ms in this one, which on a
    2-core machine is the difference between the loops fitting side by side or queueing behind each
    other. The controllers, the simulator and the driver use it (with the virtual driver and a
    controller at 1 kHz, the driver's loop missed 0.1-0.2 % of its cycles with it and 8-15 %
    without); the other nodes keep the long-proven executor (the events executor is still
    experimental). The environment variable :data:`EXECUTOR_VARIABLE` (``events``
    or ``single``) overrides the choice (``ValueError`` for anything else). ``context``: rclpy's
    default context if None."""
    choice = os.environ.get(EXECUTOR_VARIABLE, "events" if events else "single")
    if choice not in EXECUTORS:
        raise ValueError(f"{EXECUTOR_VARIABLE} must be one of {EXECUTORS}, got '{choice}'")
    if choice == "events":
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:  # an rclpy without it
            return SingleThreadedExecutor(context=context)
        return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


def params_file_problem(args: Sequence[str]) -> str | None:
    """Why a ``--params-file`` of the command line ``args`` cannot be used (missing, not a file,
    unreadable, not YAML), in one line naming it; None if each is usable. rcl itself answers
    these with a traceback (``RCLError``) after an error line of its own."""
    import yaml

    files = [args[k + 1] for k, arg in enumerate(args[:-1]) if arg == "--params-file"]
    for path in files:
        if not os.path.exists(path):
            return f"--params-file {path}: no such file"
        if not os.path.isfile(path):
            return f"--params-file {path}: not a file"
        try:
            with open(path, encoding="utf-8") as stream:
                yaml.safe_load(stream)
        except OSError as exc:
            return f"--params-file {path}: cannot read it ({exc.strerror})"
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            return f"--params-file {path}: not YAML ({' '.join(str(exc).split())})"
    return None


def run_node(name: str, create: Callable[[], Node], start_up_errors: tuple[type[BaseException], ...],
             args: list[str] | None = None, *, realtime: bool = False, events_executor: bool = False,
             before_spin: Callable[[Node], None] | None = None,
             after_spin: Callable[[Node], None] | None = None,
             hosted: Callable[[Node], Sequence[Node]] | None = None) -> int:
    """Entry point body: init rclpy, build the node, spin until Ctrl-C or an external shutdown.

    Returns 1 (the reason logged as fatal) if ``create`` raises one of ``start_up_errors`` or a
    ``ValueError`` (so does an unknown :data:`EXECUTOR_VARIABLE`), else 0.
    ``before_spin(node)`` runs just before spinning (e.g. start a physics thread);
    ``after_spin(node)`` after it (stop the arm, close a recording), while the context is still
    valid: rclpy's signal handler is off (it would shut the context down first).
    ``hosted(node)``: the nodes ``node`` created in this process (a controller in the bus cycle),
    spun by the same executor (``node.destroy_node()`` destroys them). SIGINT and
    SIGTERM (``ros2 launch`` escalates to it) are handled by :data:`.stop_signals.STOP` (from the
    package's import on in a node executable): a signal during the imports ends the process
    before rclpy starts, one while ``create`` runs interrupts it, one while spinning sets a flag
    that the spin loop checks at least every :data:`SIGNAL_WAKEUP`; once the loop has ended, both
    signals are ignored. So one signal or several, at any instant, end the node the same way:
    (``after_spin``, destroy,) exit 0, no traceback. A ``--params-file`` that is missing,
    unreadable or not YAML is refused before rclpy starts (:func:`params_file_problem`): one line,
    exit 1.

    ``events_executor``: spin :func:`create_executor`'s events executor. ``realtime`` (the loops):
    spin inside :func:`realtime_interpreter` and, if the node has a ``realtime_priority`` parameter
    above 0 (``realtime_priority`` of parameters/common.yaml), :func:`set_realtime_priority` (a warning if
    refused) and then, if it has a ``cpu_affinity`` parameter, :func:`pin_interpreter`, and if it has
    a ``cpu_dma_latency`` parameter of 0 or more, :func:`hold_cpu_latency` until after ``after_spin``
    (each a warning if refused).
    """
    stop = catch_stop_signals()
    if stop.signum is not None:  # during the imports: nothing started yet
        ignore_stop_signals()
        return 0
    problem = params_file_problem(sys.argv if args is None else args)
    if problem is None:
        try:
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        except RCLError as exc:  # what the file check does not see (rcl's own rules)
            problem = str(exc).splitlines()[0]
    if problem is not None:
        ignore_stop_signals()
        get_logger(name).fatal(f"cannot start: {problem}")
        return 1
    try:
        stop.interrupt = True  # a start-up of seconds ends at once: the handler raises KeyboardInterrupt
        if stop.signum is not None:  # since the imports
            raise KeyboardInterrupt
        executor = create_executor(events_executor)
        node = create()
        stop.interrupt = False
    except BaseException as exc:  # noqa: B036 - whatever a stop signal made the constructor raise
        stop.interrupt = False
        ignore_stop_signals()
        rclpy.try_shutdown()
        if stop.signum is not None or isinstance(exc, KeyboardInterrupt):  # a signal, or raised by code (a test)
            return 0
        if not isinstance(exc, (ValueError, *start_up_errors)):
            raise
        get_logger(name).fatal(f"cannot start: {exc}")
        return 1
    held = ExitStack()  # the real-time requests that outlast the spin (the shutdown's release is a loop's work too)
    try:
        executor.add_node(node)
        for other in hosted(node) if hosted is not None else ():
            executor.add_node(other)
        with realtime_interpreter() if realtime else nullcontext():
            if realtime:
                _apply_realtime_setup(node, held)
            if before_spin is not None:
                before_spin(node)
            while executor.context.ok() and stop.signum is None:
                # a signal is handled when this thread is back in Python: wake up now and then even
                # if the node has no timer (rclpy's own handler is off; see above)
                executor.spin_once(timeout_sec=SIGNAL_WAKEUP)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_stop_signals()
        if after_spin is not None:
            try:
                after_spin(node)
            except Exception as exc:  # noqa: BLE001 - report, then still shut down cleanly
                get_logger(name).error(f"shutdown: {exc}")
        held.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def _pin(node: Node) -> str:
    """:func:`pin_interpreter` as the node's ``cpu_affinity`` asks (if it has one); for the log line."""
    if not node.has_parameter('cpu_affinity'):
        return ""
    cpu, reason = pin_interpreter(node.get_parameter('cpu_affinity').value)
    if reason is not None:
        node.get_logger().warning(f"cpu_affinity: {reason}; the Python threads are not pinned")
        return ""
    return f", Python threads on CPU {cpu}"


def _hold_latency(node: Node, stack: ExitStack) -> str:
    """:func:`hold_cpu_latency` as the node's ``cpu_dma_latency`` asks (if it has one); for the log line."""
    limit = node.get_parameter('cpu_dma_latency').value if node.has_parameter('cpu_dma_latency') else -1
    if limit < 0:
        return ""
    reason = hold_cpu_latency(limit, stack)
    if reason is not None:
        node.get_logger().warning(f"cpu_dma_latency: {reason}; the CPUs may sleep deeper between cycles "
                                  "(cpu_dma_latency:=-1 silences this)")
        return ""
    return f", CPU wake-up latency held at {limit} us"


def _apply_realtime_setup(node: Node, stack: ExitStack) -> None:
    priority = node.get_parameter('realtime_priority').value if node.has_parameter('realtime_priority') else 0
    if priority <= 0:
        return
    reason = set_realtime_priority(priority)
    if reason is None:
        node.get_logger().info(f"real-time scheduling: SCHED_FIFO priority {priority}{_pin(node)}"
                               f"{_hold_latency(node, stack)}")
    else:
        node.get_logger().warning(f"real-time scheduling refused ({reason}): running on the normal scheduler, "
                                  "expect late cycles on a loaded machine; realtime_priority:=0 silences this")
