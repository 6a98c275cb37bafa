"""The ROS side of the node tests: a private rclpy context, a tester node and one executor spun by
the test thread, with the nodes under test added to it (real DDS on the module's localhost domain,
see ``conftest.ros_domain``). Tests wait for conditions with deadlines, never for fixed times on a
machine that may be loaded.

rclpy is imported when a harness is made, not with this module: a test module whose other tests
need no ROS may subclass :class:`RosHarness` and still import without rclpy."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from rclpy.context import Context
    from rclpy.executors import Executor
    from rclpy.node import Node

__all__ = ["RosHarness"]


class RosHarness:
    """``tester_name``: the tester node's name; ``executor``: a factory ``context -> Executor``
    (default a ``SingleThreadedExecutor``); ``spin_period``: the longest wait of one spin [s];
    ``wait_timeout``: :meth:`spin_until`'s default timeout [s]; ``domain_id``: the context's DDS
    domain (default ``ROS_DOMAIN_ID``)."""

    def __init__(self, tester_name: str, *, executor: Callable[[Context], Executor] | None = None,
                 spin_period: float = 0.01, wait_timeout: float = 5.0, domain_id: int | None = None) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
        self.tester = rclpy.create_node(tester_name, context=self.context)
        self.executor = (executor or (lambda c: SingleThreadedExecutor(context=c)))(self.context)
        self.executor.add_node(self.tester)
        self.spin_period = spin_period
        self.wait_timeout = wait_timeout
        self._nodes: list[Node] = []
        self._threads: list[tuple[Executor, threading.Thread]] = []
        self._running = True

    def add_node(self, node: Node) -> Node:
        """Spin ``node`` with the tester; destroyed by :meth:`close`."""
        self.executor.add_node(node)
        self._nodes.append(node)
        return node

    def spin_in_thread(self, node: Node) -> Node:
        """Spin ``node`` on a ``SingleThreadedExecutor`` of its own in a thread (as if in a process of
        its own), from now until :meth:`close`, which destroys it."""
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)

        def spin() -> None:
            while self._running:
                executor.spin_once(timeout_sec=0.05)

        thread = threading.Thread(target=spin, daemon=True)
        self._threads.append((executor, thread))
        self._nodes.append(node)
        thread.start()
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
        """Stop the threads, shut the executors down, destroy the nodes and the context."""
        import rclpy

        self._running = False
        for _, thread in self._threads:
            thread.join()
        self.executor.shutdown()
        for executor, _ in self._threads:
            executor.shutdown()
        for node in self._nodes:
            node.destroy_node()
        self.tester.destroy_node()
        rclpy.shutdown(context=self.context)


def node_command(name: str) -> list[str]:
    """The command that starts the package's executable ``name`` (its console script when installed
    next to this interpreter, else ``python -m youbot_dynamics.nodes.<name>``)."""
    exe = Path(sys.executable).with_name(name)
    return [str(exe)] if exe.exists() else [sys.executable, "-m", f"youbot_dynamics.nodes.{name}"]


def run_until_sigint(command: list[str], cwd: Path, env: dict[str, str] | None = None, run_for: float = 4.0) -> str:
    """Run ``command`` for ``run_for`` seconds (it must still be running), send SIGINT as Ctrl-C does and
    return its output; asserts that it ended with exit status 0 within 20 s."""
    proc = subprocess.Popen(command, env=dict(env or os.environ, PYTHONUNBUFFERED="1"), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(run_for)
        assert proc.poll() is None, proc.stdout.read()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    return out
