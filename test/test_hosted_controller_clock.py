"""The controller in ``youbot_driver``'s bus cycle on a simulated clock (issue 34): the coast over
lost frames, the fault at ``state_loss_timeout`` and the release to the drives, judged cycle by
cycle while the clock advances exactly one bus period per cycle, so that no verdict depends on how
late the machine runs a thread. test_hosted_controller.py runs the same over the real bus thread and
DDS, with margins for a late thread.

The driver node (virtual drives, the arm on the bus' time) is built as in test_hosted_controller.py,
but its bus thread is not started: the test runs :meth:`ArmDriver.cycle` itself, and the modules of
the cycle (driver, hosted controller, host) read ``time.perf_counter`` from :class:`SimulatedClock`.
No other node runs in this process meanwhile (a module of its own: the patched clock is the
module's, not the process's).
"""
from __future__ import annotations

import time
import types

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.context import Context  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402

from youbot_dynamics.control import GuardState  # noqa: E402
from youbot_dynamics.driver import ERROR_FLAGS, driver as driver_module  # noqa: E402
from youbot_dynamics.nodes import controller_cycle, controller_node, youbot_driver as driver_node  # noqa: E402
from youbot_dynamics.nodes.youbot_driver import YoubotDriverNode  # noqa: E402
from test_hosted_controller import CT, Q_START, true_model_file, write_params  # noqa: E402

pytestmark = pytest.mark.ros

STATE_TIMEOUT = 0.02  # [s] as test_hosted_controller.py's driver
STATE_LOSS_TIMEOUT = 0.06  # [s] shorter than the drives' 100 ms timeout (100 cycles without a frame)


class SimulatedClock:
    """``time`` for the modules of the cycle: ``perf_counter`` is :attr:`now`, the rest the real ``time``."""

    def __init__(self) -> None:
        self.now = time.perf_counter()
        self.module = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time)
                                               if not name.startswith("_")})
        self.module.perf_counter = lambda: self.now


class Bus:
    """The driver node with its hosted controller, cycled by the test on :class:`SimulatedClock`."""

    def __init__(self, node: YoubotDriverNode, clock: SimulatedClock) -> None:
        self.node, self.driver, self.controller, self.clock = node, node.driver, node.controller, clock
        self.period = self.driver.config.cycle_period

    def cycle(self) -> None:
        """One bus cycle, one period after the previous one."""
        self.clock.now += self.period
        self.driver.cycle()

    def cycles(self, count: int) -> list[tuple[GuardState, bool, int]]:
        """``count`` cycles; after each: the guard's state, whether it coasted, its coast cycles."""
        out = []
        for _ in range(count):
            self.cycle()
            guard = self.controller.guard
            out.append((guard.state, guard.coasting, guard.coast_cycles))
        return out

    def until(self, predicate, seconds: float, what: str) -> None:
        """Cycle until ``predicate()`` holds, within ``seconds`` of the bus' time."""
        for _ in range(int(round(seconds / self.period))):
            if predicate():
                return
            self.cycle()
        assert predicate(), f"{what}: not within {seconds:g} s of bus time"

    def set_enabled(self, value: bool) -> SetBool.Response:
        """What ``~/enable`` does (the service's callback, called here)."""
        return self.controller._on_enable(SetBool.Request(data=value), SetBool.Response())


@pytest.fixture
def bus(monkeypatch, tmp_path, ros_domain):
    clock = SimulatedClock()
    for module in (driver_module, controller_node, controller_cycle, driver_node):
        monkeypatch.setattr(module, "time", clock.module)
    params = write_params(tmp_path / "ct.yaml", CT, true_model_file(tmp_path / "true_model.yaml"),
                          diagnostics_period=0.0, state_timeout=STATE_TIMEOUT, state_loss_timeout=STATE_LOSS_TIMEOUT)
    context = Context()
    rclpy.init(context=context, domain_id=int(ros_domain), signal_handler_options=SignalHandlerOptions.NO)
    overrides = {"backend": "virtual", "enable_on_start": True, "publish_clock": True, "diagnostics_period": 0.0,
                 "virtual_initial_positions": Q_START.tolist(), "controller": "computed_torque",
                 "controller_params_file": str(params)}
    node = YoubotDriverNode(context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
    try:
        b = Bus(node, clock)
        b.until(lambda: b.driver.state() is not None and b.driver.state().phase.value == "running", 30.0,
                "the driver's start-up")
        for _ in range(25):  # the drives hold the arm where the controller takes over (commands every 20 ms)
            b.driver.command("position", Q_START)
            b.cycles(20)
        assert np.abs(b.node.bus.sim.data.qvel).max() < 0.01, "the drives did not bring the arm to rest"
        response = b.set_enabled(True)
        assert response.success, response.message
        b.until(lambda: b.clock.now > b.controller.ramp_end, 1.0, "the enable ramp")
        assert b.controller.guard.state is GuardState.ENABLED, b.controller.guard.fault_reason
        yield b
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def test_lost_frames_within_state_loss_timeout_are_coasted_over(bus):
    """40 frames lost: the states of the cycles 21-40 are older than state_timeout (20 ms), the
    guard coasts on them and takes the law again at the next frame; no fault (60 ms)."""
    coasts = bus.controller.guard.coast_cycles
    bus.node.bus.drop_frames(40)
    trace = bus.cycles(45)
    coasting = [k + 1 for k, (_, coast, _) in enumerate(trace) if coast]  # cycles since the last frame
    print(f"\n40 frames lost: coasting in the cycles {coasting} after the last frame")
    assert all(state is GuardState.ENABLED for state, _, _ in trace), bus.controller.guard.fault_reason
    # the state of cycle k is k periods old: coasting while that exceeds state_timeout
    assert coasting == list(range(20, 41)) or coasting == list(range(21, 41)), coasting
    assert bus.controller.guard.coast_cycles - coasts == len(coasting)
    assert not bus.controller.guard.coasting and bus.driver.state().interface == "effort"


def test_lost_frames_beyond_state_loss_timeout_fault_and_release_before_the_drives_time_out(bus):
    """90 frames lost: the fault comes in the cycle whose state is older than state_loss_timeout
    (60 ms), the release goes to the driver's trajectory interface and reaches the drives when the
    frames come back after 90 cycles, before the drives' own 100-cycle timeout (no drive fault)."""
    bus.node.bus.drop_frames(90)
    trace = bus.cycles(95)
    fault = next((k + 1 for k, (state, _, _) in enumerate(trace) if state is GuardState.FAULT), None)
    reason = bus.controller.guard.fault_reason
    print(f"\n90 frames lost: fault in cycle {fault} after the last frame: {reason}")
    assert fault in (60, 61), f"fault in cycle {fault} after the last frame (None: no fault in 95 cycles)"
    assert "state_loss_timeout 60 ms" in reason, reason
    assert all(state is GuardState.FAULT for state, _, _ in trace[fault - 1:])  # latched
    bus.until(lambda: bus.driver.state().interface == "trajectory", 0.1, "the release")
    state = bus.driver.state()
    assert state.fresh and state.phase.value == "running" and not state.faults, (state.phase, state.faults)
    assert not any(flags & int(ERROR_FLAGS) for flags in state.flags), \
        [state.flag_names(j) for j in range(len(state.flags))]  # no TIMEOUT: the drives got the release
