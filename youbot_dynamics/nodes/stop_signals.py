"""SIGINT and SIGTERM in a node's process, from its first import to its exit.

Python's own handling - SIGINT raises ``KeyboardInterrupt`` wherever the main thread is, SIGTERM
ends the process (exit -15) - made a node stopped during its start-up (importing numpy, rclpy,
MuJoCo and numba: 0.8-3.5 s measured; then loading or compiling the model kernels) end with a
traceback or by the signal (issue 35). So a node executable takes both signals over as soon as the
package :mod:`youbot_dynamics.nodes` is imported, before any heavy import (:func:`started_as_node`
tells a node executable from a program that merely imports a node module), with :data:`STOP`:

- while the modules are imported, a signal is only recorded (an exception raised there would come
  out of the executable's ``import`` line as a traceback); :func:`~.common.run_node` then ends the
  process (exit 0) without starting the node;
- while the node is built (``interrupt``), it also raises ``KeyboardInterrupt``, so that a start-up
  of several seconds ends at once; whatever that makes the constructor raise, ``run_node`` ends
  the process (exit 0, no traceback);
- while the node spins, it is only recorded, and the spin loop checks it (an exception raised by
  a handler lands in a subscription callback or inside pybind11's argument conversion);
- from shutdown on, both signals are ignored (:func:`ignore_stop_signals`).

So one signal or several, at any instant, end a node the same way: exit 0, no traceback.
"""
from __future__ import annotations

import os
import signal
import sys

__all__ = ["STOP", "STOP_SIGNALS", "StopRequest", "catch_stop_signals", "ignore_stop_signals", "node_executables",
           "started_as_node"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # end a node (exit 0), once or repeated


class StopRequest:
    """The handler of :data:`STOP_SIGNALS`: records the signal in ``signum``, and with ``interrupt``
    raises ``KeyboardInterrupt`` (module docstring)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.interrupt = False

    def __call__(self, signum: int, frame: object) -> None:
        self.signum = signum
        if self.interrupt:
            raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


STOP = StopRequest()  # the process's one request: a signal caught during the imports is still there for run_node


def catch_stop_signals() -> StopRequest:
    """Handle :data:`STOP_SIGNALS` with :data:`STOP` (a signal recorded before is kept)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, STOP)
    return STOP


def ignore_stop_signals() -> None:
    """From shutdown on, SIGINT and SIGTERM are ignored: ``ros2 launch`` re-sends SIGINT and then
    escalates to SIGTERM while a node shuts down, and the interpreter's finalisation would reset a
    Python handler to the default action (death by the signal, exit -15); ``SIG_IGN`` survives it."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def node_executables() -> set[str]:
    """The names a node's program may have: this folder's modules (``sim_node``, run by its console
    script or ``python -m youbot_dynamics.nodes.sim_node``) and the controllers' executables, which
    the controller registry names (``float_controller`` runs ``law_controller``: no module of its name)."""
    from ..contract.controller_registry import CONTROLLERS  # plain data: no heavy import

    folder = os.path.dirname(__file__)
    modules = {name[:-3] for name in os.listdir(folder) if name.endswith(".py") and name != "__init__.py"}
    return modules | {entry.node for entry in CONTROLLERS}


def started_as_node() -> bool:
    """Whether this process runs a node executable as its program (:func:`node_executables`), not a
    program that imports a node module (a test, the command line)."""
    program = sys.argv[0] if sys.argv else ""
    if program == "-m":  # python -m: the module is being located (the packages above it imported)
        argv = getattr(sys, "orig_argv", [])
        module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else ""
        name = module[len(__package__) + 1:] if module.startswith(f"{__package__}.") else ""
    else:
        name = os.path.basename(program)
    return name in node_executables()
