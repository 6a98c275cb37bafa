"""The compiled (numba) kernels of the package, made ready ahead of use.

``forward_kinematics`` (and through it the IK and the Cartesian line) and the generated regressor
behind :class:`~.dynamics.model.DynamicModel` are numba functions compiled at their first call and
cached on disk (``cache=True``: in ``__pycache__`` next to the module, or in ``NUMBA_CACHE_DIR``
when set, or numba's user-wide cache when the package folder is read-only). On a 2-core machine the
first call compiles for about 10 s (25 s measured on a busy one): a controller's first start after an
install would spend that before it is ready. :func:`compile_kernels` (``youbot-dynamics compile``)
does it once, ahead of time; every later process loads the cached code in well under a second.
:func:`compilations` tells the two apart (a busy machine can take seconds to load the cache too).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from .arm.description import ArmDescription
from .control.laws import ComputedTorqueController
from .control.safety import SafetyGuard
from .control.trajectory import cartesian_line
from .dynamics.model import PARALLEL_SAMPLES
from .dynamics.nominal import nominal_model
from .arm.ik import inverse_kinematics
from .arm.kinematics import PARALLEL_BATCH, forward_kinematics


def cache_location() -> str:
    """Where numba keeps the compiled code, in words."""
    import numba

    return (numba.config.CACHE_DIR or "__pycache__ next to the package's modules (numba's user-wide cache "
            "when that folder is read-only)")


@contextmanager
def compilations() -> Iterator[list[str]]:
    """The kernels numba compiles inside the block (cache misses: their names, in order), from
    numba's ``numba:compile`` events (a kernel loaded from the cache sends none)."""
    from numba.core import event

    compiled: list[str] = []

    class _Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            compiled.append(getattr(getattr(dispatcher, "py_func", None), "__name__", "kernel"))

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Listener()):
        yield compiled


def compile_kernels(arm: ArmDescription, batches: bool = True) -> dict[str, float]:
    """Call every compiled kernel the controllers use once (single samples: FK, IK, Cartesian line,
    inverse dynamics, ``M, C q', G``, the guard's stall bound)
    and with ``batches`` those of the CLI and the identification
    (stacked samples, serial and on all cores); the seconds each group took (compiling, or loading
    the cache)."""
    seconds: dict[str, float] = {}
    q = 0.5 * (arm.position_min + arm.position_max)

    def timed(name: str, work) -> None:
        began = time.perf_counter()
        work()
        seconds[name] = time.perf_counter() - began

    def kinematics() -> None:
        pose = forward_kinematics(arm, q)
        inverse_kinematics(arm, pose, q_current=q, include_outside_limits=False)
        if batches:
            forward_kinematics(arm, np.tile(q, (PARALLEL_BATCH, 1)))
        goal = pose.copy()
        goal[2, 3] += 0.01
        try:
            cartesian_line(arm, q, goal, 1.0)
        except ValueError:
            pass  # compiled either way

    def dynamics() -> None:
        model = nominal_model(arm)[0]
        zero = np.zeros(arm.n_joints)
        model.inverse_dynamics_single(q, zero, zero)
        # a computed-torque cycle inside the safety guard: the law's and the guard's kernels, the reference a
        # node publishes, the observer's terms and friction (levels and torque)
        law = ComputedTorqueController(model, arm)
        law.hold(q)
        guard = SafetyGuard(arm, model)
        guard.enable(-1.0)
        guard.command(0.0, 0.0, q, zero, law.torque)
        law.reference(0.0)
        law.terms.kinetic_levels(zero)
        law.terms.friction(zero, gravity=zero)
        model.momentum_terms(q, zero)
        if batches:
            many = np.tile(q, (PARALLEL_SAMPLES, 1))
            model.inverse_dynamics(many, np.zeros_like(many), np.zeros_like(many))

    timed("kinematics", kinematics)
    timed("dynamics", dynamics)
    return seconds


def warm_up(arm: ArmDescription, logger: Any) -> None:
    """Make the compiled kernels a controller uses ready before anything uses them
    (:func:`compile_kernels`): loaded from numba's cache in well under a second (a debug line on
    ``logger``), compiled in 6-25 s on the first start after an install (:func:`compilations`: then
    said at info, with how to do it ahead of time; issue 35: not called a compile when loading the
    cache took over 2 s)."""
    with compilations() as compiled:
        seconds = sum(compile_kernels(arm, batches=False).values())
    if compiled:
        logger.info(f"compiled the model kernels in {seconds:.1f} s (a first start; cached in {cache_location()} "
                    "for the next ones; `youbot-dynamics compile` does it ahead of time, e.g. after colcon build)")
    else:
        logger.debug(f"model kernels loaded from numba's cache in {seconds:.1f} s")
