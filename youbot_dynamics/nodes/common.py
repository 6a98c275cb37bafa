"""What every youbot_dynamics node needs around rclpy: parameter descriptors and the entry point."""
from __future__ import annotations

from typing import Callable

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.executors import ExternalShutdownException
from rclpy.logging import get_logger
from rclpy.node import Node

__all__ = ["parameter_descriptor", "run_node"]


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


def run_node(name: str, create: Callable[[], Node], start_up_errors: tuple[type[BaseException], ...],
             args: list[str] | None = None) -> int:
    """Entry point body: init rclpy, build the node, spin until Ctrl-C or an external shutdown.

    Returns 1 (the reason logged as fatal) if ``create`` raises one of ``start_up_errors``, else 0.
    A node with a ``start()`` method (e.g. a physics thread) is started before spinning.
    """
    rclpy.init(args=args)
    try:
        node = create()
    except start_up_errors as exc:
        get_logger(name).fatal(f"cannot start: {exc}")
        rclpy.try_shutdown()
        return 1
    except KeyboardInterrupt:
        rclpy.try_shutdown()
        return 0
    if hasattr(node, "start"):
        node.start()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
