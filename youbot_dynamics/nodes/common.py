"""What every youbot_dynamics node needs around rclpy: parameter descriptors and the entry point."""
from __future__ import annotations

import gc
import signal
import sys
from typing import Callable

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

__all__ = ["SWITCH_INTERVAL", "parameter_descriptor", "run_node"]

SWITCH_INTERVAL = 5e-4  # [s] Python thread switch interval of real-time nodes (default 5 ms)


def parameter_descriptor(description: str, type_: int, *, read_only: bool,
                         range_: tuple[float, float] | None = None,
                         int_range: tuple[int, int] | None = None) -> ParameterDescriptor:
    """A typed ``ParameterDescriptor`` with an optional floating-point or integer range."""
    d = ParameterDescriptor(description=description, type=type_, read_only=read_only)
    if range_ is not None:
        d.floating_point_range = [FloatingPointRange(from_value=range_[0], to_value=range_[1], step=0.0)]
    if int_range is not None:
        d.integer_range = [IntegerRange(from_value=int_range[0], to_value=int_range[1], step=1)]
    return d


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_node(name: str, create: Callable[[], Node], start_up_errors: tuple[type[BaseException], ...],
             args: list[str] | None = None, *, realtime: bool = False,
             before_spin: Callable[[Node], None] | None = None,
             after_spin: Callable[[Node], None] | None = None) -> int:
    """Entry point body: init rclpy, build the node, spin until Ctrl-C or an external shutdown.

    Returns 1 (the reason logged as fatal) if ``create`` raises one of ``start_up_errors``, else 0.
    ``before_spin(node)`` runs just before spinning (e.g. start a physics thread);
    ``after_spin(node)`` after it (stop the arm, close a recording), while the context is still
    valid: rclpy's signal handler is off, so SIGINT (and SIGTERM, mapped to it) raises
    ``KeyboardInterrupt`` in the spinning thread instead of shutting the context down first.

    ``realtime`` (the control loops): move the start-up heap (numpy, MuJoCo, the model) out of
    Python's garbage collector with ``gc.freeze()`` - a full collection of it stalls the process
    for 30-100 ms - and shorten the interpreter's thread switch interval to
    :data:`SWITCH_INTERVAL`, so that a helper thread cannot hold the interpreter for the default
    5 ms against the loop.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)  # ros2 launch escalates to SIGTERM
    try:
        node = create()
    except start_up_errors as exc:
        get_logger(name).fatal(f"cannot start: {exc}")
        rclpy.try_shutdown()
        return 1
    except KeyboardInterrupt:
        rclpy.try_shutdown()
        return 0
    executor = SingleThreadedExecutor()
    try:
        executor.add_node(node)
        if realtime:
            gc.collect()
            gc.freeze()
            sys.setswitchinterval(SWITCH_INTERVAL)
        if before_spin is not None:
            before_spin(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if after_spin is not None:
            try:
                after_spin(node)
            except Exception as exc:  # noqa: BLE001 - report, then still shut down cleanly
                get_logger(name).error(f"shutdown: {exc}")
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
