"""The ROS side of the node tests: a private rclpy context, a tester node and one executor spun by
the test thread, with the nodes under test added to it (real DDS on the module's localhost domain,
see ``conftest.ros_domain``). Tests wait for conditions with deadlines, never for fixed times on a
machine that may be loaded.

A module that shares one harness between its tests keeps it in a :class:`SharedHarness`, which
makes a new one after a test that failed or left it unable to spin: one failure stays one failure
(a destroyed node or an executor that raises would otherwise fail every later test of the module).

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
from typing import TYPE_CHECKING, Any, Callable, Generic, Sequence, TypeVar

if TYPE_CHECKING:
    from rclpy.context import Context
    from rclpy.executors import Executor
    from rclpy.node import Node

__all__ = ["RosHarness", "SharedHarness", "shared_harness_fixture"]


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
        self._make_executor = executor or (lambda c: SingleThreadedExecutor(context=c))
        self.executor = self._make_executor(self.context)
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
        """Spin ``node`` on an executor of its own (the harness's kind) in a thread (as if in a
        process of its own), from now until :meth:`close`, which destroys it."""
        executor = self._make_executor(self.context)
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
        ``wait_timeout``) have passed (``False``). The predicate is asked once per ``spin_period`` of
        spinning, not after every event: asked after each of the ~3000 events a second of a 1 kHz
        simulator and controller, a predicate that reads the recorded messages (2 ms for 600 rows of
        ``~/state``) took the executor's thread from the control loop (the loop stopped, the arm
        fell with its motors timed out: the CI failures of stop 36)."""
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        while not predicate():
            if time.monotonic() > deadline:
                return False
            self.spin_for(self.spin_period)
        return True

    def request(self, client: Any, request: Any, timeout: float = 60.0) -> Any:
        """A service call answered within ``timeout`` s (asserted), its response."""
        assert client.wait_for_service(timeout_sec=5.0), f"service {client.srv_name} not available"
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout=timeout), f"no answer from {client.srv_name} in {timeout} s"
        return future.result()

    def problem(self) -> str | None:
        """What keeps this harness from serving another test (None: nothing): the executor must spin
        without an error (a callback of a node destroyed with events still queued raises in every
        later spin). Subclasses add their own checks (e.g. no node of the last test left)."""
        try:
            self.spin_for(0.05)
        except Exception as exc:  # noqa: BLE001 - any error makes the harness unusable
            return f"its executor raised {exc!r}"
        return None

    def close(self) -> None:
        """Stop the threads, shut the executors down, destroy the nodes and the context; every step
        is tried (a harness discarded after a failure may be half broken), the first error raised."""
        import rclpy

        self._running = False
        errors: list[BaseException] = []

        def attempt(step: Callable[[], Any]) -> None:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - kept, raised after the other steps
                errors.append(exc)

        for _, thread in self._threads:
            thread.join()
        attempt(self.executor.shutdown)
        for executor, _ in self._threads:
            attempt(executor.shutdown)
        for node in [*self._nodes, self.tester]:
            attempt(node.destroy_node)
        attempt(lambda: rclpy.shutdown(context=self.context))
        if errors:
            raise errors[0]


H = TypeVar("H", bound=RosHarness)


class SharedHarness(Generic[H]):
    """One harness for the node tests of a module, made at first use by ``make(domain_id)`` and made
    again for the next test after a test that failed (its nodes may be in any state: a paused
    simulator, a controller half closed, an executor interrupted by the test's timeout) or that left
    it with a :meth:`RosHarness.problem`. Each harness gets the next of ``domains`` (in turn), so a
    new one never meets what a discarded one may have left behind. A fixture of the module's scope
    holds it, a fixture of the test's scope calls :meth:`get` and then :meth:`after_test`."""

    def __init__(self, make: Callable[[str], H], domains: Sequence[str],
                 ready: Callable[[H], Any] | None = None) -> None:
        self._make = make
        self._ready = ready  # waits until a new harness can serve (its nodes discovered); raises if not
        self._domains = list(domains)
        self._harness: H | None = None
        self.made = 0  # harnesses made so far

    def get(self) -> H:
        """The current harness (made, then ``ready``, if there is none; closed again if not ready)."""
        if self._harness is None:
            domain = self._domains[self.made % len(self._domains)]
            self.made += 1
            harness = self._make(domain)
            if self._ready is not None:
                try:
                    self._ready(harness)
                except BaseException:
                    harness.close()
                    raise
            self._harness = harness
        return self._harness

    def after_test(self, test: str, failed: bool) -> None:
        """After ``test`` (its id): discard the harness if it failed or left a problem."""
        if self._harness is None:
            return
        reason = "the test failed" if failed else self._harness.problem()
        if reason is not None:
            print(f"\n{test}: a new harness for the next test ({reason})")
            harness, self._harness = self._harness, None
            try:
                harness.close()
            except Exception as exc:  # noqa: BLE001 - nothing of it is used again
                print(f"closing the discarded harness: {exc!r}")

    def close(self) -> None:
        """Close the current harness (at the end of the module)."""
        harness, self._harness = self._harness, None
        if harness is not None:
            harness.close()


def shared_harness_fixture(name: str, shared: str):
    """A fixture ``name`` of the test's scope: the harness of the :class:`SharedHarness` held by the
    module's fixture ``shared``, which after the test makes a new one if the test failed (or left
    a problem). Module level: ``harness = shared_harness_fixture("harness", "harnesses")``."""
    import pytest

    from conftest import has_failed

    @pytest.fixture(name=name)
    def fixture(request: pytest.FixtureRequest):
        harnesses: SharedHarness = request.getfixturevalue(shared)
        yield harnesses.get()
        harnesses.after_test(request.node.nodeid, has_failed(request.node))

    return fixture


def node_command(name: str) -> list[str]:
    """The command that starts the package's executable ``name`` (its console script when installed
    next to this interpreter, else ``python -m youbot_dynamics.nodes.<name>``)."""
    exe = Path(sys.executable).with_name(name)
    return [str(exe)] if exe.exists() else [sys.executable, "-m", f"youbot_dynamics.nodes.{name}"]


def run_until_sigint(command: list[str], cwd: Path, env: dict[str, str] | None = None, ready: str = "",
                     run_for: float = 4.0, start_timeout: float = 60.0) -> str:
    """Run ``command`` until its output shows ``ready`` (within ``start_timeout`` s: a process start
    takes tens of seconds on a loaded machine), then ``run_for`` s more (it must still be running),
    send SIGINT as Ctrl-C does and return its output; asserts that it ended with exit status 0
    within 20 s. A process that never shows ``ready`` is sent SIGABRT and its failure shows every
    thread's stack (``PYTHONFAULTHANDLER``) after what it printed."""
    proc = subprocess.Popen(command, env=dict(env or os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1"),
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + start_timeout
        while ready not in "".join(lines):
            assert proc.poll() is None, "".join(lines)
            if time.monotonic() > deadline:
                proc.send_signal(signal.SIGABRT)
                proc.wait(timeout=10)
                reader.join(timeout=5)
                raise AssertionError(f"no {ready!r} within {start_timeout:g} s (then SIGABRT): {''.join(lines)}")
            time.sleep(0.05)
        time.sleep(run_for)
        assert proc.poll() is None, "".join(lines)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    out = "".join(lines)
    assert proc.returncode == 0, out
    return out
