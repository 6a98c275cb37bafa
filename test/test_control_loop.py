"""The control loop without ROS (issue 32): what a host gets from :class:`ControlLoop` cycle by cycle,
with a real law and guard on the nominal model and fake states. The node tests (test_controller_nodes.py)
check the same behaviour over DDS; these check the loop alone, as each host uses it."""
from __future__ import annotations

import numpy as np
import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.control import PDGravityController, SafetyConfig, SafetyGuard
from youbot_dynamics.control.loop import ZERO_CYCLES_ON_DISABLE, ControlLoop, LoopOptions
from youbot_dynamics.control.safety import GuardState
from youbot_dynamics.dynamics.nominal import nominal_model

HOME = np.array([2.9496, 1.1345, -2.5482, 1.7890, 2.9234])  # the candle (config/sim.yaml)
PERIOD = 0.001


@pytest.fixture(scope="module")
def arm():
    return default_arm()


@pytest.fixture(scope="module")
def model(arm):
    return nominal_model(arm)[0]


class Host:
    """What a host sees: the status lines and the releases."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, bool, bool]] = []
        self.releases: list[tuple[np.ndarray, ...]] = []
        self.refuse_release = False

    def report(self, text: str, refused: bool, error: bool) -> None:
        self.lines.append((text, refused, error))

    def release(self, times, q, dq, ddq) -> None:
        if self.refuse_release:
            raise ValueError("refused by the drives")
        self.releases.append((times, q, dq, ddq))


def _loop(arm, model, host, *, releases=True, law=None, observer=None, reaction="none"):
    law = law if law is not None else PDGravityController(model, arm)
    guard = SafetyGuard(arm, model, SafetyConfig(ramp_time=0.0))
    return ControlLoop(arm, model, law, guard, LoopOptions(releases=releases, collision_reaction=reaction),
                       report=host.report, release=host.release, observer=observer)


def _feed(loop, t, q=HOME, dq=None):
    loop.take_state(t, t, None, np.array(q, dtype=float), np.zeros(5) if dq is None else np.asarray(dq), None)


def test_enable_needs_a_fresh_finite_state(arm, model):
    loop = _loop(arm, model, Host())
    assert loop.enable(0.0, "no state") == (False, "no state")
    _feed(loop, 1.0)
    ok, message = loop.enable(1.2, "no state")
    assert not ok and "stale" in message
    _feed(loop, 2.0, q=np.full(5, np.nan))
    assert loop.enable(2.0, "")[1] == "joint state contains NaN or infinite values"
    _feed(loop, 3.0)
    assert loop.enable(3.0, "", publishers_problem="2 publishers") == (False, "2 publishers")
    ok, message = loop.enable(3.0, "")
    assert ok and message.startswith("enabled: holding") and loop.enabled and loop.reference_id == 1


def test_disable_sends_one_zero_then_the_release_within_the_limits(arm, model):
    host = Host()
    loop = _loop(arm, model, host)
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    tau, publish = loop.command(PERIOD)
    assert publish and np.any(tau)  # holding against gravity
    _feed(loop, 2 * PERIOD, dq=[0.3, -0.2, 0.1, 0.0, 0.5])  # moving when let go
    assert loop.disable() == "disabled: zero effort, then released to the drives"
    tau, publish = loop.command(3 * PERIOD)
    assert publish and tau is loop.zero
    assert loop.let_go(tau) and len(host.releases) == 1
    times, q, dq, ddq = host.releases[0]
    assert np.all(q >= arm.position_min) and np.all(q <= arm.position_max)
    assert np.all(np.abs(dq) <= arm.velocity_max + 1e-9) and not np.any(dq[-1])
    tau, publish = loop.command(4 * PERIOD)
    assert not publish and not loop.let_go(tau)  # nothing after the release: the drives hold the arm


def test_without_a_release_topic_zero_effort_goes_out_for_some_cycles(arm, model):
    host = Host()
    loop = _loop(arm, model, host, releases=False)
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    loop.disable()
    published = [loop.command((k + 1) * PERIOD)[1] for k in range(ZERO_CYCLES_ON_DISABLE + 3)]
    assert published == [True] * ZERO_CYCLES_ON_DISABLE + [False] * 3 and not host.releases


def test_a_failing_law_disables_and_lets_go(arm, model):
    class Broken(PDGravityController):
        def torque(self, t, q, dq):
            raise RuntimeError("bug")

    host = Host()
    loop = _loop(arm, model, host, law=Broken(model, arm))
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    tau, publish = loop.command(PERIOD)
    assert tau is loop.zero and publish and loop.guard.state is GuardState.DISABLED
    assert loop.let_go(tau) and any("the control law failed" in text and error for text, _, error in host.lines)


def test_a_refused_release_is_reported_and_not_retried(arm, model):
    host = Host()
    host.refuse_release = True
    loop = _loop(arm, model, host)
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    loop.disable()
    tau, _ = loop.command(PERIOD)
    assert not loop.let_go(tau) and not loop.holding_arm
    assert host.lines[-1] == ("not handed to the drives: refused by the drives", False, True)


def test_a_plan_is_installed_only_over_the_reference_it_was_planned_for(arm, model):
    host = Host()
    loop = _loop(arm, model, host)
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    goal = HOME + 0.1
    install = lambda: f"goal {loop.law.set_goal(goal, 0.0):.2f} s"  # noqa: E731
    done = []
    loop.planned.put(("goal", loop.reference_id, install, None, lambda ok, text: done.append(ok)))
    loop.planned.put(("stale goal", loop.reference_id, install, None, lambda ok, text: done.append(ok)))
    loop.command(PERIOD)
    assert done == [True, False] and loop.reference_id == 2
    assert "was planned (resend it)" in host.lines[-1][0] and host.lines[-1][1]
    np.testing.assert_allclose(loop.law.goal, goal)


def test_an_implausible_state_faults_and_the_release_starts_from_the_last_trusted_one(arm, model):
    host = Host()
    loop = _loop(arm, model, host)
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    loop.command(PERIOD)
    other = HOME + np.array([0.0, 0.0, -0.5, 0.0, 0.0])  # another arm's states, two in a row (a loaded machine
    _feed(loop, 2 * PERIOD, q=other)  # delivers them so): the second, judged against the first, was taken
    _feed(loop, 2.5 * PERIOD, q=other)  # for the arm's, and the release braked towards the other arm
    tau, publish = loop.command(3 * PERIOD)
    assert loop.guard.state is GuardState.FAULT and tau is loop.zero and publish
    assert loop.let_go(tau)
    np.testing.assert_allclose(host.releases[0][1][0], HOME, atol=1e-9)  # from the trusted state, not the jump
    loop.after(3 * PERIOD, loop.state, tau, publish)
    assert "fault: " in host.lines[-1][0] and host.lines[-1][2]
    _feed(loop, 4 * PERIOD, q=other)
    np.testing.assert_allclose(loop.trusted_state[1], HOME)  # the other arm's states never became trusted
    # enabled again where the states now say the arm is (a simulator reset there): judged on from there
    assert loop.enable(4 * PERIOD, "")[0]
    _feed(loop, 5 * PERIOD, q=other)
    assert loop.command(6 * PERIOD)[0] is not loop.zero and loop.enabled


def test_a_collision_with_reaction_stop_holds_where_the_arm_is(arm, model):
    class Observer:
        collisions = 0

        def update(self, *args, **kwargs):
            self.collisions += 1
            return True

        def describe_collision(self):
            return "collision"

        def reset_detection(self):
            pass

    host = Host()
    loop = _loop(arm, model, host, observer=Observer(), reaction="stop")
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    loop.law.set_goal(HOME + 0.2, 0.0)
    before = loop.reference_id
    tau, publish = loop.command(PERIOD)
    loop.after(PERIOD, loop.state, tau, publish)
    assert loop.reference_id == before + 1 and host.lines[-1] == ("collision; reaction stop", False, True)
    np.testing.assert_allclose(loop.law.goal, HOME)


def test_a_payload_is_built_off_the_cycle_and_installed_by_the_next_one(arm, model, monkeypatch):
    """``prepare_payload`` (the planning thread's job): a model that fails its check is refused with the
    reason and the loop keeps its model; a good one is queued and the next cycle installs it in the
    law and the guard (the base model stays the one a payload is built on)."""
    from types import SimpleNamespace

    from youbot_dynamics.control import loop as loop_module
    from youbot_dynamics.dynamics.consistency import ModelConsistencyError
    from youbot_dynamics.dynamics.payload import Payload

    host = Host()
    loop = _loop(arm, model, host)
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    payload = Payload.of(0.4, [0.0, 0.0, 0.05], arm=arm)

    def refused(candidate, _arm):
        raise ModelConsistencyError(SimpleNamespace(message="link 5: negative mass (made for the test)"))

    monkeypatch.setattr(loop_module, "check_model", refused)
    loop.prepare_payload(payload)
    assert host.lines[-1] == ("payload refused: link 5: negative mass (made for the test)", True, False)
    loop.command(PERIOD)
    assert loop.model is model and loop.payload.mass == 0.0
    monkeypatch.undo()
    bent = np.array([2.95, 1.0, -2.0, 1.8, 2.9])  # the forearm out: a payload's gravity acts on joints 2-4
    g_before = loop.law.gravity(bent)
    loop.prepare_payload(payload)
    assert loop.model is model  # queued, not yet installed
    loop.command(2 * PERIOD)
    assert loop.payload.mass == 0.4 and loop.model is not model and loop.base_model is model
    assert np.abs(loop.law.gravity(bent) - g_before).max() > 0.1  # the law holds the payload now
    assert host.lines[-1][0].startswith("payload 0.4 kg")


def test_a_plan_job_is_refused_at_once_while_disabled(arm, model):
    host = Host()
    loop = _loop(arm, model, host)
    assert loop.plan_job("goal", lambda: (lambda: "installed")) is None
    assert host.lines[-1][0].startswith("goal refused: the controller is disabled")
    _feed(loop, 0.0)
    loop.enable(0.0, "")
    job = loop.plan_job("goal", lambda: (lambda: "installed"))
    job()  # the planning thread's work: queued for the next cycle
    assert not loop.planned.empty()
