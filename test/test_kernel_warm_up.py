"""The model kernels' warm-up (youbot_dynamics.compiled): a compile is told from a cache load by
numba's own events, not by how long it took (issue 35, case 16: "compiled the model kernels in
2.0-4.7 s (a first start ...)" was logged on later starts too, loading the cache on a busy machine)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.compiled import compilations

PROBE = textwrap.dedent("""
    import toy
    from youbot_dynamics.compiled import compilations
    with compilations() as compiled:
        toy.twice(1.0)
    stats = toy.twice.stats
    print(compiled, sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
""")


def test_a_compile_is_seen_and_a_cache_load_is_not(tmp_path):
    """A kernel cached on disk (``cache=True``): compiled by the first process (numba counts a cache
    miss), loaded by the second (a cache hit); ``compilations`` names it only the first time."""
    (tmp_path / "toy.py").write_text("import numba\n\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2.0 * x\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # toy's cache: tmp_path/__pycache__
    env["PYTHONPATH"] = str(tmp_path)
    runs = [subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert [r.stdout.split() for r in runs] == [["['twice']", "0", "1"], ["[]", "1", "0"]], [r.stderr for r in runs]


@pytest.fixture
def warm_up(monkeypatch):
    """``compiled.warm_up`` (a controller node's start) with a logger that records ``(level, line)``
    and ``kernels`` standing in for compile_kernels; the lines it logged."""
    from youbot_dynamics import compiled

    lines: list[tuple[str, str]] = []
    logger = SimpleNamespace(info=lambda m: lines.append(("info", m)), debug=lambda m: lines.append(("debug", m)))

    def run(kernels) -> list[tuple[str, str]]:
        monkeypatch.setattr(compiled, "compile_kernels", kernels)
        compiled.warm_up(default_arm(), logger)
        return lines

    return run


def test_a_slow_cache_load_is_not_called_a_compile(warm_up):
    lines = warm_up(lambda arm, batches: {"kinematics": 1.5, "dynamics": 3.2})  # 4.7 s, nothing compiled
    assert [level for level, _ in lines] == ["debug"] and "loaded from numba's cache in 4.7 s" in lines[0][1]


def test_a_compile_is_said_in_the_log(warm_up):
    import numba

    def compiling(arm, batches):
        numba.njit(lambda x: x + 1.0)(1.0)  # a kernel compiled here (no cache)
        return {"kinematics": 0.1}

    lines = warm_up(compiling)
    assert [level for level, _ in lines] == ["info"] and lines[0][1].startswith("compiled the model kernels in 0.1 s")


def test_compilations_is_empty_without_work():
    with compilations() as compiled:
        pass
    assert compiled == []


CYCLES = textwrap.dedent("""
    import json
    import numpy as np
    from youbot_dynamics.arm.description import default_arm
    from youbot_dynamics.compiled import compile_kernels
    from youbot_dynamics.control import ComputedTorqueController, PDGravityController, SafetyGuard
    from youbot_dynamics.control.laws import computed_torque_kernel
    from youbot_dynamics.control.safety import SafetyConfig, bound_kernel
    from youbot_dynamics.control.trajectory import segment_state
    from youbot_dynamics.dynamics.friction import kinetic_levels, smooth_friction_torque
    from youbot_dynamics.dynamics.joint_space_terms import mass_coriolis_gravity, momentum_coriolis_gravity
    from youbot_dynamics.dynamics.shipped import shipped_module
    from youbot_dynamics.dynamics.chain import DHChain
    from youbot_dynamics.dynamics.nominal import nominal_model

    # what Python calls (the kernels they call are compiled into them: stall_kernel, _newton_euler, the friction)
    arm = default_arm()
    generated = shipped_module(DHChain.from_arm(arm))
    kernels = (bound_kernel, mass_coriolis_gravity, momentum_coriolis_gravity, computed_torque_kernel, segment_state,
               kinetic_levels, smooth_friction_torque, generated.regressor_single, generated.regressor_many)
    compile_kernels(arm, batches=False)
    warm = [len(k.signatures) for k in kernels]
    model = nominal_model(arm)[0]
    middle = 0.5 * (arm.position_min + arm.position_max)
    # states of the loop: at rest, moving fast, near a limit (every zone of the guard), read-only arrays
    states = [(middle, np.zeros(5)), (middle + 0.1, 0.95 * arm.velocity_max),
              (arm.position_max - 0.01, -0.5 * arm.velocity_max)]
    readonly = np.array(middle)
    readonly.flags.writeable = False
    states.append((readonly, np.zeros(5)))
    for law in (ComputedTorqueController(model, arm), PDGravityController(model, arm)):
        law.hold(middle)
        for config in (SafetyConfig(), SafetyConfig(stall_time=0.0)):
            guard = SafetyGuard(arm, model, config)
            guard.enable(-1.0)
            for q, dq in states:
                guard.command(0.0, 0.0, q, dq, law.torque)
                law.desired_position(0.0)  # a node's ~/state
                gravity = law.terms.gravity(q)
                law.terms.kinetic_levels(gravity)  # the observer's
                law.terms.friction(dq, gravity=gravity)
                model.momentum_terms(q, dq)
            guard.fault("test")
            guard.command(0.0, 0.0, middle, np.zeros(5), law.torque)  # the hold
    print(json.dumps([warm, [len(k.signatures) for k in kernels]]))
""")


def test_the_warm_up_compiles_every_kernel_a_control_cycle_calls():
    """A kernel first compiled inside the control loop stalls it for seconds (6-25 s measured): after
    ``compile_kernels`` (a controller node's start) each kernel of the guard and the model has its
    signature, and cycles of both laws, with and without the stall bound, moving, near a limit, on
    read-only states and in the hold, add none. In a new process (this one may have called them)."""
    run = subprocess.run([sys.executable, "-c", CYCLES], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    warm, after = json.loads(run.stdout.strip().splitlines()[-1])
    assert all(count >= 1 for count in warm) and after == warm, run.stdout
