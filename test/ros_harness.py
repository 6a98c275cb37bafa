"""The ROS side of the node tests: a private rclpy context, a tester node and one executor spun by
the test thread, with the nodes under test added to it (real DDS on the module's localhost domain,
see ``conftest.ros_domain``). Tests wait for conditions with deadlines, never for fixed times on a
machine that may be loaded."""
from __future__ import annotations

import time
from typing import Any, Callable

import rclpy
from rclpy.context import Context
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

__all__ = ["RosHarness"]


class RosHarness:
    """``tester_name``: the tester node's name; ``executor``: a factory ``context -> Executor``
    (default a ``SingleThreadedExecutor``); ``spin_period``: the longest wait of one spin [s];
    ``wait_timeout``: :meth:`spin_until`'s default timeout [s]."""

    def __init__(self, tester_name: str, *, executor: Callable[[Context], Executor] | None = None,
                 spin_period: float = 0.01, wait_timeout: float = 5.0) -> None:
        self.context = Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.tester = rclpy.create_node(tester_name, context=self.context)
        self.executor = (executor or (lambda c: SingleThreadedExecutor(context=c)))(self.context)
        self.executor.add_node(self.tester)
        self.spin_period = spin_period
        self.wait_timeout = wait_timeout
        self._nodes: list[Node] = []

    def add_node(self, node: Node) -> Node:
        """Spin ``node`` with the tester; destroyed by :meth:`close`."""
        self.executor.add_node(node)
        self._nodes.append(node)
        return node

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=self.spin_period)

    def spin_until(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """Spin until ``predicate()`` holds (then ``True``) or ``timeout`` s (default
        ``wait_timeout``) have passed (``False``)."""
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        while not predicate():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=self.spin_period)
        return True

    def request(self, client: Any, request: Any, timeout: float = 60.0) -> Any:
        """A service call answered within ``timeout`` s (asserted), its response."""
        assert client.wait_for_service(timeout_sec=5.0), f"service {client.srv_name} not available"
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout=timeout), f"no answer from {client.srv_name} in {timeout} s"
        return future.result()

    def close(self) -> None:
        """Shut the executor down, destroy the nodes and the context."""
        self.executor.shutdown()
        for node in self._nodes:
            node.destroy_node()
        self.tester.destroy_node()
        rclpy.shutdown(context=self.context)
